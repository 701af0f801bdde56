//! Cases (conversations, D-1), their messages, and the authenticated principal.
//!
//! Messages of a case are totally ordered by their ids: a message id is a ULID (48 bits of
//! milliseconds, then randomness, generated monotonically per process), so "written after
//! the presentation" (A-23) is `message.id > presented_message_id`. A process mints every
//! id after the presentation it read (`Ids::observe_message`, a hybrid logical clock), so
//! the order is the conversation's, not the clocks' of the instances serving it. See
//! decision 0002.

use crate::ids::{CaseId, MessageId, TenantId, UserId};
use crate::time::Timestamp;

/// The authenticated person behind a request: tenant and user from a verified widget JWT
/// (D-2). Never taken from a message body or tool arguments.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal {
    /// The tenant (the JWT's `tid`).
    pub tenant: TenantId,
    /// The tenant's user (the JWT's `sub`).
    pub user: UserId,
}

/// Whether a case still accepts messages and executions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseStatus {
    /// Open: messages and actions are possible.
    Open,
    /// Closed: nothing executes any more.
    Closed,
}

/// A support case: the conversation of the protocol. Belongs to one tenant and one user,
/// fixed at creation (D-1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// The case id.
    pub id: CaseId,
    /// Owner tenant.
    pub tenant: TenantId,
    /// Owner user.
    pub user: UserId,
    /// Open or closed.
    pub status: CaseStatus,
    /// Creation time.
    pub created_at: Timestamp,
}

impl Case {
    /// Whether `principal` owns this case (same tenant and same user, A-26).
    pub fn is_owned_by(&self, principal: &Principal) -> bool {
        self.tenant == principal.tenant && self.user == principal.user
    }
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The authenticated end user.
    User,
    /// The platform or the model speaking in the chat.
    Assistant,
}

/// What an assistant message is, so a widget can render it (and so the binding check can
/// tell a presentation from ordinary text).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// Ordinary text (any user message; model text).
    Text,
    /// A proposal's literal summary.
    Proposal,
    /// The fixed confirm / cancel instructions shown under a proposal.
    Instructions,
    /// An execution result with its fixed prefix.
    Result,
    /// A platform notice: uncertainty, refusal, cancellation.
    Notice,
}

/// A stored chat message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The message id.
    pub id: MessageId,
    /// Its case.
    pub case: CaseId,
    /// Author.
    pub role: Role,
    /// Kind.
    pub kind: MessageKind,
    /// Text, exactly as shown.
    pub content: String,
    /// For user messages: the last assistant message the widget rendered.
    pub reply_to: Option<MessageId>,
    /// When it was stored.
    pub created_at: Timestamp,
}
