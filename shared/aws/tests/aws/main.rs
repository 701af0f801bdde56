//! Tests of the AWS adapters against the local AWS emulator (moto), over the real wire
//! protocols. Run them through the test command (`infra/scripts/test.sh`), which starts the
//! emulator; run alone, they stop at once with a message saying so.

// Test helpers outside #[test] functions may unwrap: a failed setup is a failed test.
#![allow(
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

mod audit;
mod common;
mod contract;
mod dynamo;
mod faulty;
mod kms;
mod leases;
mod real_rules;
mod retention;
mod secrets;
mod shards;
mod sweep;
mod tenants;
mod timeouts;
