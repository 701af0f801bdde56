//! How a store call fails.

use crate::proposal::ProposalState;

/// A boxed error cause, kept for logs only (never shown to users).
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

/// A store failure: the operation did not happen, or its outcome is not known.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store could not be reached or refused the request.
    #[error("the store is unavailable")]
    Unavailable(#[source] Cause),
    /// A stored item could not be read back into domain types.
    #[error("a stored item is corrupt: {0}")]
    Corrupt(String),
    /// N-4: the conversation written into does not exist (any more): purged, or never
    /// opened. Nothing was written.
    #[error("the conversation is gone")]
    Gone,
    /// The caller asked for a transition the state machine forbids (a bug, not a race).
    #[error("illegal proposal transition {from} -> {to}")]
    IllegalTransition {
        /// From.
        from: ProposalState,
        /// To.
        to: ProposalState,
    },
}

/// Outcome of a conditional proposal transition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransitionOutcome {
    /// The condition held and the new state is stored.
    Applied,
    /// The condition failed: the proposal was not in the expected state, is no longer the
    /// active one, or (for confirm) its `presentedMessageId` differs. `current` is its state
    /// now, when known.
    Conflict {
        /// The state found, if the proposal exists.
        current: Option<ProposalState>,
    },
}
