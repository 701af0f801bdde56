//! The provider kit's tests, in one test binary (decision 0054): as one binary
//! per file, each was linked against the whole dependency graph. nextest still runs every
//! test in its own process.

mod jwks;
mod proof;
mod stepup;
mod vectors;

/// The action the test proofs are bound to (tenant `ten_1`, `u_alice`, `case_1`, `act_1`).
fn expected() -> countersign_provider_kit::ExpectedAction<'static> {
    countersign_provider_kit::ExpectedAction {
        tenant_id: "ten_1",
        user_id: "u_alice",
        conversation_id: "case_1",
        action_id: "act_1",
        operation: "reassign_session_car",
        arguments_hash: Box::leak("a".repeat(64).into_boxed_str()),
        summary_hash: Box::leak("b".repeat(64).into_boxed_str()),
        expires_at: None,
    }
}
