//! The proposal state machine (A-15 … … A-45, P-3).
//!
//! States are the seven of A-40 plus `unknown` (the outcome of an execution is uncertain,
//! A-43) and `superseded` (replaced by a newer proposal, A-15, A-16). Transitions are a
//! pure function of (state, event); anything not listed is refused.

use crate::hash::Sha256Hex;
use crate::ids::{ActionId, CaseId, MessageId, OperationName, TenantId, UserId};
use crate::text::SafeText;
use crate::time::Timestamp;
use std::fmt;

/// The status a provider reports in an `execute_action` / `get_action_status` answer
///
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RemoteStatus {
    /// Prepared, not executed.
    PendingConfirmation,
    /// Running at the provider.
    Executing,
    /// Done.
    Completed,
    /// Ran and failed.
    Failed,
    /// Not executed: something relevant changed since preparation.
    Conflict,
    /// Not executed: the proposal expired.
    Expired,
    /// Not executed: cancelled.
    Cancelled,
}

impl RemoteStatus {
    /// All seven, in A-40's order.
    pub const ALL: [Self; 7] = [
        Self::PendingConfirmation,
        Self::Executing,
        Self::Completed,
        Self::Failed,
        Self::Conflict,
        Self::Expired,
        Self::Cancelled,
    ];

    /// The wire spelling: the local state's of the same name.
    pub fn as_str(self) -> &'static str {
        ProposalState::named(self).as_str()
    }

    /// Parses the wire spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// Whether the provider says the action is finished one way or the other.
    pub fn is_terminal(self) -> bool {
        !matches!(self, Self::PendingConfirmation | Self::Executing)
    }
}

/// The local state of a proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProposalState {
    /// Presented; waiting for the person's reply.
    PendingConfirmation,
    /// Confirmed; recorded before the provider call.
    Executing,
    /// The provider reported completion.
    Completed,
    /// The provider reported failure (or answered `isError: true`, A-41).
    Failed,
    /// The provider refused: something changed.
    Conflict,
    /// Expired before confirmation (or the provider reported expiry).
    Expired,
    /// Cancelled by the person, invalidated by other text or by a configuration
    /// change (C-8), or reported cancelled by the provider.
    Cancelled,
    /// The outcome of an execution is uncertain.
    Unknown,
    /// Replaced by a newer proposal in the same conversation.
    Superseded,
}

impl ProposalState {
    /// Every state.
    pub const ALL: [Self; 9] = [
        Self::PendingConfirmation,
        Self::Executing,
        Self::Completed,
        Self::Failed,
        Self::Conflict,
        Self::Expired,
        Self::Cancelled,
        Self::Unknown,
        Self::Superseded,
    ];

    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PendingConfirmation => "pending_confirmation",
            Self::Executing => "executing",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Conflict => "conflict",
            Self::Expired => "expired",
            Self::Cancelled => "cancelled",
            Self::Unknown => "unknown",
            Self::Superseded => "superseded",
        }
    }

    /// Parses the stored spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// Terminal states never change again.
    pub fn is_terminal(self) -> bool {
        !matches!(
            self,
            Self::PendingConfirmation | Self::Executing | Self::Unknown
        )
    }

    /// while a conversation holds a proposal in one of these states, no new proposal
    /// may be prepared there (it must be reconciled first).
    pub fn blocks_preparation(self) -> bool {
        matches!(self, Self::Executing | Self::Unknown)
    }

    /// N-6: a new proposal stored while the conversation's slot holds one in these states
    /// replaced it (pending: superseded in the same write; superseded: just ended by the
    /// gateway's `make_room`).
    pub fn is_replaced_by_a_new_proposal(self) -> bool {
        matches!(self, Self::PendingConfirmation | Self::Superseded)
    }

    /// P-3: a conversation holding a proposal in one of these states is never purged.
    pub fn blocks_purge(self) -> bool {
        !self.is_terminal()
    }

    /// in these states the next user message only triggers a status query.
    pub fn needs_reconciliation(self) -> bool {
        matches!(self, Self::Executing | Self::Unknown)
    }

    /// The local state of the same name as provider status `s`: every provider status
    /// is one (the local states add `unknown` and `superseded`).
    fn named(s: RemoteStatus) -> Self {
        match s {
            RemoteStatus::PendingConfirmation => Self::PendingConfirmation,
            RemoteStatus::Executing => Self::Executing,
            RemoteStatus::Completed => Self::Completed,
            RemoteStatus::Failed => Self::Failed,
            RemoteStatus::Conflict => Self::Conflict,
            RemoteStatus::Expired => Self::Expired,
            RemoteStatus::Cancelled => Self::Cancelled,
        }
    }

    /// The provider status a terminal outcome state stands for (its result prefix, A-41).
    pub fn as_remote(self) -> Option<RemoteStatus> {
        RemoteStatus::ALL
            .into_iter()
            .find(|r| r.is_terminal() && Self::named(*r) == self)
    }

    fn from_remote_terminal(s: RemoteStatus) -> Option<Self> {
        s.is_terminal().then(|| Self::named(s))
    }
}

impl fmt::Display for ProposalState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Something that happens to a proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProposalEvent {
    /// An authorised confirmation, recorded before the provider call.
    Confirm,
    /// The person replied `cancel`.
    Cancel,
    /// Other user text, a refused confirmation or a configuration change (C-8).
    Invalidate,
    /// A newer proposal replaced this one.
    Supersede,
    /// `expiresAt` passed before confirmation.
    Expire,
    /// The provider answered `execute_action` with this status.
    ExecutionAnswered(RemoteStatus),
    /// `execute_action` timed out, the connection dropped, the answer was invalid, or the
    /// process restarted mid-call.
    ExecutionUncertain,
    /// The provider answered `get_action_status` with this status.
    StatusAnswered(RemoteStatus),
    /// `get_action_status` could not be answered (provider down, invalid answer).
    StatusUnavailable,
}

/// A refused transition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a proposal in state {from} cannot take event {event:?}")]
pub struct TransitionError {
    /// The state it was in.
    pub from: ProposalState,
    /// The refused event.
    pub event: ProposalEvent,
}

/// The transition function. The only way into `executing` is `Confirm` from
/// `pending_confirmation`, so superseded, cancelled and expired proposals never execute
/// and no event re-sends an execution: from `unknown` only status answers
/// move on.
pub fn transition(
    from: ProposalState,
    event: ProposalEvent,
) -> Result<ProposalState, TransitionError> {
    use ProposalEvent as E;
    use ProposalState as S;
    let to = match (from, event) {
        (S::PendingConfirmation, E::Confirm) => Some(S::Executing),
        (S::PendingConfirmation, E::Cancel | E::Invalidate) => Some(S::Cancelled),
        (S::PendingConfirmation, E::Supersede) => Some(S::Superseded),
        (S::PendingConfirmation, E::Expire) => Some(S::Expired),
        // A non-terminal answer to an execution is as uncertain as no answer: the platform
        // never sends `execute_action` again, so it records `unknown`.
        (S::Executing, E::ExecutionAnswered(r) | E::StatusAnswered(r)) => {
            Some(S::from_remote_terminal(r).unwrap_or(S::Unknown))
        }
        (S::Executing, E::ExecutionUncertain | E::StatusUnavailable) => Some(S::Unknown),
        (S::Unknown, E::StatusAnswered(r)) => {
            Some(S::from_remote_terminal(r).unwrap_or(S::Unknown))
        }
        (S::Unknown, E::StatusUnavailable) => Some(S::Unknown),
        _ => None,
    };
    to.ok_or(TransitionError { from, event })
}

/// Whether some event moves `from` to `to` (stores use it to refuse illegal writes).
pub fn is_legal(from: ProposalState, to: ProposalState) -> bool {
    let mut events = vec![
        ProposalEvent::Confirm,
        ProposalEvent::Cancel,
        ProposalEvent::Invalidate,
        ProposalEvent::Supersede,
        ProposalEvent::Expire,
        ProposalEvent::ExecutionUncertain,
        ProposalEvent::StatusUnavailable,
    ];
    for r in RemoteStatus::ALL {
        events.push(ProposalEvent::ExecutionAnswered(r));
        events.push(ProposalEvent::StatusAnswered(r));
    }
    events.into_iter().any(|e| transition(from, e) == Ok(to))
}

/// Where and when a proposal was presented.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Presentation {
    /// The assistant message holding the literal summary: `presentedMessageId`.
    pub message_id: MessageId,
    /// N-6: the proposal this one replaced (the conversation's slot held it pending, or
    /// had just superseded it, when this one was stored), set by the store.
    pub replaced: Option<ActionId>,
    /// N-6: when the platform first served the presentation to the person (server time,
    /// recorded once): a replacing proposal confirms only 5 s after it.
    pub first_served_at: Option<Timestamp>,
}

/// A proposal as the platform stores it (P-1). Never holds a proof or a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    /// The provider's action id (unique per tenant, A-14).
    pub action_id: ActionId,
    /// Owner tenant.
    pub tenant: TenantId,
    /// Owner user.
    pub user: UserId,
    /// The conversation.
    pub case: CaseId,
    /// The operation.
    pub operation: OperationName,
    /// The checked summary, presented literally.
    pub summary: SafeText,
    /// `sha256(summary)` as the provider sent it (equal to ours, A-14).
    pub summary_hash: Sha256Hex,
    /// The provider's opaque arguments hash.
    pub arguments_hash: Sha256Hex,
    /// When the provider will stop accepting it.
    pub expires_at: Timestamp,
    /// When the platform validated it.
    pub prepared_at: Timestamp,
    /// Current state.
    pub state: ProposalState,
    /// The presentation message.
    pub presented: Presentation,
    /// The user message that confirmed it, once confirmed.
    pub confirmation_message_id: Option<MessageId>,
    /// N-1: the attempt value of the confirm request whose write committed.
    pub confirm_attempt: Option<String>,
    /// The tenant configuration's `actions_version` it was prepared with (C-8).
    pub config_version: u64,
    /// The service-token secret version it was prepared with, to reconcile `unknown`
    /// proposals against the integration they executed with (C-8).
    pub secret_version: Option<String>,
    /// The provider URL it was prepared against: execution and reconciliation go to this
    /// integration and no other (C-8: "the original integration").
    pub server_url: Option<String>,
    /// The proof audience in force at preparation.
    pub audience: Option<String>,
    /// F-1: its operation needed the person's passkey under the settings it was prepared
    /// with (a change of them voids it, C-8): a typed confirm cannot countersign it.
    pub needs_passkey: bool,
    /// Issue 50: an app the person connected (an MCP client through the gateway) prepared
    /// it, not the chat's assistant: its card says so.
    pub prepared_outside: bool,
}

impl Proposal {
    /// Applies `event`, returning the refused transition unchanged on error.
    pub fn apply(&mut self, event: ProposalEvent) -> Result<ProposalState, TransitionError> {
        let next = transition(self.state, event)?;
        self.state = next;
        Ok(next)
    }

    /// Whether `expires_at` has passed at `now` (expiry is exclusive: at `expires_at` the
    /// proposal is expired).
    pub fn is_expired_at(&self, now: Timestamp) -> bool {
        now >= self.expires_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ProposalEvent as E;
    use ProposalState as S;

    fn all_events() -> Vec<ProposalEvent> {
        let mut v = vec![
            E::Confirm,
            E::Cancel,
            E::Invalidate,
            E::Supersede,
            E::Expire,
            E::ExecutionUncertain,
            E::StatusUnavailable,
        ];
        for r in RemoteStatus::ALL {
            v.push(E::ExecutionAnswered(r));
            v.push(E::StatusAnswered(r));
        }
        v
    }

    /// The complete table of legal transitions; every other (state, event) pair must be
    /// refused.
    fn expected(from: S, e: E) -> Option<S> {
        let terminal = |r: RemoteStatus| match r {
            RemoteStatus::Completed => S::Completed,
            RemoteStatus::Failed => S::Failed,
            RemoteStatus::Conflict => S::Conflict,
            RemoteStatus::Expired => S::Expired,
            RemoteStatus::Cancelled => S::Cancelled,
            RemoteStatus::PendingConfirmation | RemoteStatus::Executing => S::Unknown,
        };
        match (from, e) {
            (S::PendingConfirmation, E::Confirm) => Some(S::Executing),
            (S::PendingConfirmation, E::Cancel) => Some(S::Cancelled),
            (S::PendingConfirmation, E::Invalidate) => Some(S::Cancelled),
            (S::PendingConfirmation, E::Supersede) => Some(S::Superseded),
            (S::PendingConfirmation, E::Expire) => Some(S::Expired),
            (S::Executing, E::ExecutionAnswered(r)) => Some(terminal(r)),
            (S::Executing, E::StatusAnswered(r)) => Some(terminal(r)),
            (S::Executing, E::ExecutionUncertain) => Some(S::Unknown),
            (S::Executing, E::StatusUnavailable) => Some(S::Unknown),
            (S::Unknown, E::StatusAnswered(r)) => Some(terminal(r)),
            (S::Unknown, E::StatusUnavailable) => Some(S::Unknown),
            _ => None,
        }
    }

    /// every legal and every illegal transition.
    #[test]
    fn a43_every_transition_matches_the_table() {
        let mut legal = 0;
        let mut illegal = 0;
        for from in S::ALL {
            for e in all_events() {
                match (transition(from, e), expected(from, e)) {
                    (Ok(to), Some(want)) => {
                        assert_eq!(to, want, "{from} + {e:?}");
                        legal += 1;
                    }
                    (Err(err), None) => {
                        assert_eq!(err, TransitionError { from, event: e });
                        illegal += 1;
                    }
                    (got, want) => panic!("{from} + {e:?}: got {got:?}, want {want:?}"),
                }
            }
        }
        assert_eq!(legal + illegal, 9 * 21);
        assert_eq!(legal, 5 + 7 + 7 + 2 + 7 + 1);
    }

    /// `execute_action` is never re-sent: no state other than pending confirmation
    /// accepts `Confirm`, so nothing can move back into `executing`.
    #[test]
    fn a43_only_pending_confirmation_enters_executing() {
        for from in S::ALL {
            for e in all_events() {
                if transition(from, e) == Ok(S::Executing) {
                    assert_eq!((from, e), (S::PendingConfirmation, E::Confirm));
                }
            }
        }
    }

    #[test]
    fn is_legal_agrees_with_the_table() {
        assert!(is_legal(S::PendingConfirmation, S::Executing));
        assert!(is_legal(S::Unknown, S::Unknown));
        assert!(is_legal(S::Executing, S::Completed));
        assert!(!is_legal(S::Superseded, S::Executing));
        assert!(!is_legal(S::Unknown, S::Executing));
        assert!(!is_legal(S::PendingConfirmation, S::Completed));
    }

    /// Terminal states have no outgoing transition.
    #[test]
    fn terminal_states_are_final() {
        for from in S::ALL.into_iter().filter(|s| s.is_terminal()) {
            for e in all_events() {
                assert!(transition(from, e).is_err(), "{from} + {e:?}");
            }
        }
    }

    /// A-17 and P-3: which states block preparation and purge.
    #[test]
    fn a17_p3_blocking_states() {
        let blocks_prep: Vec<S> = S::ALL
            .into_iter()
            .filter(|s| s.blocks_preparation())
            .collect();
        assert_eq!(blocks_prep, vec![S::Executing, S::Unknown]);
        let blocks_purge: Vec<S> = S::ALL.into_iter().filter(|s| s.blocks_purge()).collect();
        assert_eq!(
            blocks_purge,
            vec![S::PendingConfirmation, S::Executing, S::Unknown]
        );
        let terminal: Vec<S> = S::ALL.into_iter().filter(|s| s.is_terminal()).collect();
        assert_eq!(
            terminal,
            vec![
                S::Completed,
                S::Failed,
                S::Conflict,
                S::Expired,
                S::Cancelled,
                S::Superseded
            ]
        );
    }

    #[test]
    fn spellings_round_trip() {
        for s in S::ALL {
            assert_eq!(S::parse(s.as_str()), Some(s));
            assert_eq!(
                serde_json::to_string(&s).ok(),
                Some(format!("\"{}\"", s.as_str()))
            );
        }
        for r in RemoteStatus::ALL {
            assert_eq!(RemoteStatus::parse(r.as_str()), Some(r));
            // The wire spelling is serde's, not only the local state's.
            assert_eq!(
                serde_json::to_string(&r).ok(),
                Some(format!("\"{}\"", r.as_str()))
            );
        }
        assert_eq!(S::parse("done"), None);
    }
}
