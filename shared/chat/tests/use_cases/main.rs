//! The messages use cases on in-memory ports (countersign-testkit): every branch of
//! posting a message, confirming, executing, reconciling and preparing, each named for the
//! rule it holds. No emulator, no network: the whole file runs in milliseconds.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    unreachable_pub,
    dead_code
)]

mod harness;

mod model_rules;

mod cases;
mod confirm;
mod execute;
mod mcp_token;
mod metrics;
mod page;
mod post;
mod prepare;
mod reconcile;
mod stepup;
mod stream_route;
mod turn;
