//! G-8 in the messages function (issue 17): how proposals end, and how long a confirmation
//! takes, as metrics (the function writes them as CloudWatch EMF). The tool calls of a turn
//! are measured where every tool call is, in the registry and the proxy
//! (`mcp_tool_duration_seconds`).
//!
//! - `proposals_total{outcome}`: one per proposal that enters an outcome state, written
//!   where the transition is applied (so a lost race counts nothing). An action that became
//!   `unknown` and was later settled counts once as `unknown` and once as its final outcome.
//! - `confirm_duration_seconds{outcome}`: from the person's confirmation reaching the
//!   function to the outcome stored (the confirm transaction, the proof, `execute_action`).

use countersign_domain::proposal::ProposalState;
use std::time::Instant;

/// The `outcome` label of a state a proposal ends in (or waits in, for `unknown`); `None`
/// for the states that are not an outcome.
pub fn outcome_label(state: ProposalState) -> Option<&'static str> {
    match state {
        ProposalState::Completed => Some("executed"),
        ProposalState::Failed => Some("failed"),
        ProposalState::Conflict => Some("conflict"),
        ProposalState::Expired => Some("expired"),
        ProposalState::Cancelled => Some("cancelled"),
        ProposalState::Unknown => Some("unknown"),
        ProposalState::Superseded => Some("superseded"),
        ProposalState::PendingConfirmation | ProposalState::Executing => None,
    }
}

/// One proposal entered `state`.
pub(crate) fn proposal_outcome(state: ProposalState) {
    if let Some(outcome) = outcome_label(state) {
        metrics::counter!("proposals_total", "outcome" => outcome).increment(1);
    }
}

/// A confirmation that started at `started` ended in `state`.
pub(crate) fn confirm_latency(started: Instant, state: ProposalState) {
    let outcome = outcome_label(state).unwrap_or("executing");
    metrics::histogram!("confirm_duration_seconds", "outcome" => outcome)
        .record(started.elapsed().as_secs_f64());
}
