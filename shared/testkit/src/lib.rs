//! In-memory implementations of every port of `countersign-domain` (ARCHITECTURE
//! "Hexagon"), with fault switches, so the use cases above the domain run in microseconds
//! without the local AWS emulator.
//!
//! - [`MemoryStore`]: the conversation and tenant stores, with the same conditions as the
//!   DynamoDB adapter (the slot lock, the action-id guard, C-8 at confirm).
//! - [`MemorySecrets`], [`FakeSigner`]: secrets by version; a signer that can be down or
//!   absent.
//! - [`ScriptedProvider`]: a tenant MCP server with queued answers, a call log and a hook
//!   that runs at the moment of each call (to observe what was stored before it).
//! - [`QueuedModel`]: a model with queued replies and a log of what it was shown.
//! - [`TestClock`], [`SeqIds`]: a settable clock and time-ordered ids from it.
//!
//! Faults are planned per operation name (see [`Faults`]): the next call of that
//! operation fails as planned, so a test reads as "the confirm write's answer is lost".
//! The adapters' own tests against the emulator hold that the real stores behave the same.

/// F-2, F-3: the software authenticator (the domain's, which the certification uses too).
pub use countersign_domain::authenticator;
pub mod contract;
mod faults;
mod jobs;
mod model;
pub mod model_server;
mod provider;
mod secrets;
mod signer;
mod store;
mod system;

pub use faults::{Fault, Faults};
pub use model::QueuedModel;
pub use provider::{
    ProviderCall, Reply, ScriptedProvider, action_answer, described, prepare_answer, tool,
    unannotated_tool,
};
pub use secrets::MemorySecrets;
pub use signer::FakeSigner;
pub use store::MemoryStore;
pub use system::{SeqIds, TestClock};

/// The local AWS emulator's endpoint, for tests that create and delete real resources.
/// Anywhere else (a plain `cargo test` on a fresh clone, or a non-loopback endpoint) it
/// stops the test binary with one line saying how to run these tests, instead of a wall
/// of connection errors; the binary fails, so nothing is counted as passing.
pub fn local_aws_endpoint() -> String {
    match std::env::var("AWS_ENDPOINT_URL") {
        Ok(endpoint) if endpoint.starts_with("http://127.0.0.1:") => endpoint,
        _ => {
            // Once: tests run in parallel threads, and the first one ends the process.
            static STOP: std::sync::Once = std::sync::Once::new();
            STOP.call_once(stop_without_emulator);
            std::process::exit(2)
        }
    }
}

fn stop_without_emulator() {
    // Written to the real stderr: the test harness captures `eprintln!`, and its capture
    // is never printed once the process exits.
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        b"these tests need the local AWS emulator: run `infra/scripts/with-local-aws.sh cargo test` (or `infra/scripts/test.sh`)\n",
    );
    std::process::exit(2)
}

/// Takes `tenant`'s lease `what` for `secs` from `now` as another job would (owner
/// `another-job`), as V-7's tests do before asking for the same job; panics unless the
/// lease was free. Give it back with `release(tenant, what, HELD_BY)`.
#[allow(clippy::expect_used, clippy::panic)] // a test helper: a failure is the test's
pub async fn hold_lease(
    leases: &dyn countersign_domain::ports::Leases,
    tenant: &countersign_domain::ids::TenantId,
    what: &str,
    now: countersign_domain::time::Timestamp,
    secs: i64,
) {
    let held = leases
        .acquire(tenant, what, HELD_BY, now, now.plus_seconds(secs))
        .await
        .expect("the lease store answers");
    assert_eq!(
        held,
        countersign_domain::ports::Lease::Held,
        "{what} was free"
    );
}

/// The owner [`hold_lease`] takes leases as.
pub const HELD_BY: &str = "another-job";
