//! The conversation / proposal store (P-2, A-14 …, C-8).

use super::store::{StoreError, TransitionOutcome};
use crate::audit_chain::AuditEntry;
use crate::conversation::{Case, Message};
use crate::ids::{ActionId, CaseId, MessageId, TenantId};
use crate::language::Language;
use crate::proposal::{Proposal, ProposalState};
use crate::time::Timestamp;
use async_trait::async_trait;

/// Everything about one conversation that decisions need, read in one query (P-2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationView {
    /// The case.
    pub case: Case,
    /// The proposal in the conversation's active slot, if any (at most one is
    /// non-terminal, P-2).
    pub active: Option<Proposal>,
    /// The language of the tenant's fixed texts.
    pub language: Language,
}

/// A case as an open widget checks it (S-2, S-3): whether it is still open, its language,
/// and its newest message, so the widget reads the messages only when there are new ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseSummary {
    /// The case.
    pub case: Case,
    /// The language of its fixed texts.
    pub language: Language,
    /// Its newest message, if any.
    pub last_message: Option<MessageId>,
}

/// Where one proposal of a case stands, by the message that presented it (S-3: each
/// proposal card shows its outcome and its expiry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProposalOutcome {
    /// The proposal.
    pub action_id: ActionId,
    /// Its operation.
    pub operation: crate::ids::OperationName,
    /// The presentation (the summary's message).
    pub presented: MessageId,
    /// Its state now.
    pub state: ProposalState,
    /// When it expires (or expired).
    pub expires_at: Timestamp,
    /// N-6: it replaced an earlier proposal (the widget labels its card so).
    pub replaced: bool,
    /// F-1: it needs the person's passkey (the widget says so on its card before the person
    /// types anything).
    pub needs_passkey: bool,
    /// Issue 50: an app the person connected prepared it (see [`crate::proposal::Proposal`]).
    pub prepared_outside: bool,
}

/// A message to append: a [`Message`] not yet stored. Its id (a ULID) gives its place in
/// the case's total order.
pub type NewMessage = Message;

/// Outcome of creating a proposal (A-14 … A-17).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateProposalOutcome {
    /// Stored with its presentation messages; a pending predecessor, if any, was moved to
    /// `superseded` in the same transaction.
    Applied {
        /// The superseded predecessor.
        superseded: Option<ActionId>,
    },
    /// The slot holds a proposal that is `executing` or `unknown`.
    Blocked {
        /// Its id.
        action_id: ActionId,
        /// Its state.
        state: ProposalState,
    },
    /// The action id was already used in this tenant.
    ActionIdReused,
    /// The case is closed or does not exist.
    CaseNotOpen,
    /// The slot changed between read and write (another request won); re-read and decide
    /// again.
    Conflict,
    /// C-8: the tenant's action settings are no longer the ones the proposal was prepared
    /// with (its `config_version` / `secret_version`); nothing was stored.
    SettingsChanged,
}

/// What a confirmation writes in one transaction (A-23, A-35; ARCHITECTURE "confirm path").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfirmWrite {
    /// Tenant scope.
    pub tenant: TenantId,
    /// The conversation.
    pub case: CaseId,
    /// The proposal.
    pub action_id: ActionId,
    /// Condition: the proposal's `presentedMessageId` equals this.
    pub presented_message_id: MessageId,
    /// The confirming user message, stored in the same transaction.
    pub message: NewMessage,
    /// N-1: a random value of this confirm request alone, recorded with the confirmation:
    /// after an unknown outcome, "did my write commit?" is "is my attempt recorded?".
    pub attempt: String,
}

/// An action whose outcome is not settled, as the tenant's index lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsettledAction {
    /// Its conversation.
    pub case: CaseId,
    /// The action.
    pub action_id: ActionId,
    /// When it was confirmed (it has been unsettled since).
    pub since: Timestamp,
    /// The provider's last answer to `get_action_status` that settled nothing (a
    /// non-final status, `isError`, or "no valid answer"), and when.
    pub last_status: Option<(String, Timestamp)>,
}

/// An administrator's settlement of an unsettled action.
#[derive(Debug, Clone)]
pub struct SettleByAdmin<'a> {
    /// Tenant scope.
    pub tenant: &'a TenantId,
    /// The conversation.
    pub case: &'a CaseId,
    /// The action.
    pub action_id: &'a ActionId,
    /// Its state as read (`executing` or `unknown`).
    pub from: ProposalState,
    /// `completed` or `failed`.
    pub to: ProposalState,
    /// The fixed notice to the person.
    pub notice: &'a NewMessage,
    /// The audit record.
    pub audit: &'a AuditEntry,
}

/// A case and its messages (D-1): what the chat reads and appends. Every method is scoped
/// by tenant: an id of another tenant behaves as absent.
#[async_trait]
pub trait Conversations: Send + Sync {
    /// Creates an open case whose fixed texts use `language` (the tenant's, copied so that
    /// one query serves every decision).
    async fn create_case(&self, case: &Case, language: Language) -> Result<(), StoreError>;

    /// One read: the case, its active proposal and the tenant's language. `None` when the
    /// case does not exist in this tenant.
    async fn load(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<Option<ConversationView>, StoreError>;

    /// Appends a message to an existing case of this tenant.
    async fn append_message(
        &self,
        tenant: &TenantId,
        message: &NewMessage,
    ) -> Result<(), StoreError>;

    /// Messages of a case in order, those after `after` (exclusive), at most `limit`.
    async fn list_messages(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        after: Option<&MessageId>,
        limit: usize,
    ) -> Result<Vec<Message>, StoreError>;

    /// The `limit` most recent messages of a case, oldest first (the model's history).
    async fn recent_messages(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        limit: usize,
    ) -> Result<Vec<Message>, StoreError>;

    /// Closes a case (A-26: a closed case never executes); a pending proposal is cancelled
    /// with it. `Conflict { current }` while the slot holds an `executing` or `unknown`
    /// proposal: its outcome must be reconciled first. Closing a closed or missing case is
    /// `Applied`.
    async fn close_case(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<TransitionOutcome, StoreError>;

    /// The case, its language and its newest message (S-2): what a widget polls, without
    /// reading its proposals or its messages. `None` when the case does not exist in this
    /// tenant.
    async fn summary(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<Option<CaseSummary>, StoreError>;

    /// Every proposal of the case, terminal ones included, by presentation, oldest first
    /// (S-3).
    async fn proposal_outcomes(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<Vec<ProposalOutcome>, StoreError>;

    /// Appends `entry` to the case's audit chain, if the case is open (X-5: a gateway
    /// token minted for it). `Conflict` when it is closed or absent: nothing is written.
    async fn record_in_case(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        entry: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError>;
}

/// The proposal's lock and state machine (P-2, A-14 … ): preparation, the
/// confirmation, and each later move, each one conditional write.
#[async_trait]
pub trait ProposalLock: Send + Sync {
    /// Stores a new pending proposal and its presentation messages atomically, guarded by
    /// the slot (A-15 … A-17) and by the tenant-wide action-id guard. The
    /// proposal's `presented` must be the first of `presentation`. When the proposal
    /// carries a `secret_version`, the tenant's action settings must still be the ones it
    /// was prepared with (C-8, `SettingsChanged` otherwise; read just before the write) and
    /// registers the proposal so that [`SettingsFence::invalidate_pending`] finds it.
    async fn create_proposal(
        &self,
        proposal: &Proposal,
        presentation: &[NewMessage],
    ) -> Result<CreateProposalOutcome, StoreError>;

    /// `pending_confirmation → executing`, only while the case is open and the slot still
    /// points at this proposal with the given `presentedMessageId`; stores the confirming
    /// message and the confirmation id in the same transaction. Of any number of concurrent
    /// calls at most one is `Applied` (P-2). On `Conflict` nothing is written, not even the
    /// message: the caller stores it as an ordinary message. `Conflict { current: None }`
    /// when retries ran out. No item shared by the tenant's conversations is read or
    /// written here (C-8 is held by [`Self::create_proposal`] and
    /// [`SettingsFence::invalidate_pending`]). When the store cannot tell whether its write
    /// committed, it reads the proposal back and reports `Applied` if this write's message
    /// is the recorded confirmation.
    async fn confirm(&self, write: &ConfirmWrite) -> Result<TransitionOutcome, StoreError>;

    /// Moves a proposal `from → to` (a legal transition of [`crate::proposal`]) only while
    /// it is in `from`. Terminal states get the conversation's retention; `notice` is an
    /// assistant message stored in the same write.
    async fn transition(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        action_id: &ActionId,
        from: ProposalState,
        to: ProposalState,
        notice: Option<&NewMessage>,
    ) -> Result<TransitionOutcome, StoreError>;

    /// N-6: records `at` as when `action_id`'s presentation was first served to the person;
    /// once recorded it never moves (later calls, and a proposal that is gone, change
    /// nothing).
    async fn mark_served(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        action_id: &ActionId,
        at: Timestamp,
    ) -> Result<(), StoreError>;
}

/// The tenant's index of actions whose outcome is not settled (decision 0028): what an
/// administrator may have to settle by hand.
#[async_trait]
pub trait UnsettledIndex: Send + Sync {
    /// The tenant's actions whose outcome is not settled (`executing` or `unknown`),
    /// oldest first: what the administrator may have to settle by hand.
    async fn list_unsettled(&self, tenant: &TenantId) -> Result<Vec<UnsettledAction>, StoreError>;

    /// Records on an unsettled action's index entry the provider's last status answer
    /// that settled nothing (nothing when the entry is gone).
    async fn note_status(
        &self,
        tenant: &TenantId,
        action_id: &ActionId,
        answer: &str,
        at: Timestamp,
    ) -> Result<(), StoreError>;

    /// An administrator records the outcome of an unsettled action: like
    /// [`ProposalLock::transition`] (`from` is `executing` or `unknown`, `to` is `completed` or
    /// `failed`), with the person's notice and the audit record in the same write.
    async fn settle_by_admin(
        &self,
        settle: &SettleByAdmin<'_>,
    ) -> Result<TransitionOutcome, StoreError>;
}

/// C-8 after a settings change: the proposals prepared under the old settings.
#[async_trait]
pub trait SettingsFence: Send + Sync {
    /// C-8: cancels every `pending_confirmation` proposal of the tenant whose action
    /// settings (`config_version`, `secret_version`) differ from `keep` (all of them when
    /// `keep` is `None`: the connector was removed), each with the notice `notice(case,
    /// language)` in its conversation. Finds every proposal registered before the call
    /// (a consistent read); returns how many were cancelled.
    async fn invalidate_pending(
        &self,
        tenant: &TenantId,
        keep: Option<(u64, &str)>,
        notice: &(dyn for<'c> Fn(&'c CaseId, Language) -> NewMessage + Send + Sync),
    ) -> Result<usize, StoreError>;
}

/// Every conversation port at once, for the adapters' wiring and the store contract; a use
/// case holds only the narrow ports it calls.
pub trait ConversationStore:
    Conversations
    + ProposalLock
    + UnsettledIndex
    + SettingsFence
    + super::Retention
    + super::PersonIndex
    + super::Passkeys
{
}

impl<
    T: Conversations
        + ProposalLock
        + UnsettledIndex
        + SettingsFence
        + super::Retention
        + super::PersonIndex
        + super::Passkeys
        + ?Sized,
> ConversationStore for T
{
}
