//! B-3, B-4: what the bridge remembers of its actions, behind one port, so the same
//! contract holds on SQLite (the default, [`sqlite`]) and on DynamoDB (the Lambda form).
//!
//! The two invariants live in the store, not in the engine's good manners:
//! - one pending action per tenant/person/conversation: [`Store::prepare`] cancels the
//!   previous one in the same transaction that records the new one;
//! - a proof and an action are consumed once: [`Store::claim`] records the proof's `jti`
//!   and moves the action to `executing` in one transaction, so two executions of the
//!   same action — or one proof used twice — cannot both reach the upstream.

pub mod dynamo;
pub mod sqlite;

use async_trait::async_trait;
use countersign_provider_kit::ActionStatus;
use serde_json::{Map, Value};

/// One action as the bridge keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Action {
    /// Its id (a ULID, never reused).
    pub action_id: String,
    /// `X-MCP-Tenant-Id` at preparation.
    pub tenant_id: String,
    /// `X-MCP-User-Id` at preparation: the person.
    pub person: String,
    /// `X-MCP-Conversation-Id` at preparation.
    pub conversation_id: String,
    /// The operation's name.
    pub operation: String,
    /// The arguments as the model gave them and as they will run (canonical JSON is
    /// hashed over these).
    pub arguments: Map<String, Value>,
    /// `argumentsHash`.
    pub arguments_hash: String,
    /// The summary exactly as presented.
    pub summary: String,
    /// `summaryHash`.
    pub summary_hash: String,
    /// The summary's language (`en` or `pt`), so execution re-renders the same text.
    pub language: String,
    /// The configuration's digest at preparation: a change answers `conflict`.
    pub config_digest: String,
    /// Where it stands.
    pub status: ActionStatus,
    /// Why it ended so (safe text), or that its answer was lost.
    pub message: Option<String>,
    /// Unix seconds.
    pub prepared_at: i64,
    /// Unix seconds.
    pub expires_at: i64,
}

impl Action {
    /// The status as of `now`: a pending action past its expiry is `expired`.
    pub fn status_at(&self, now: i64) -> ActionStatus {
        if self.status == ActionStatus::PendingConfirmation && now >= self.expires_at {
            ActionStatus::Expired
        } else {
            self.status
        }
    }

    /// Where a claim at `now` moves this pending action: `executing`, or `expired` when
    /// its proof came after its expiry.
    pub(crate) fn claimed_status(&self, now: i64) -> ActionStatus {
        if now >= self.expires_at {
            ActionStatus::Expired
        } else {
            ActionStatus::Executing
        }
    }

    /// [`Store::claim`]'s answer once the store has moved this action to `status` (what
    /// [`Action::claimed_status`] chose).
    pub(crate) fn into_claim(self, status: ActionStatus) -> Claim {
        let action = Action { status, ..self };
        match status {
            ActionStatus::Expired => Claim::Expired(action),
            _ => Claim::Claimed(action),
        }
    }
}

/// What [`Store::claim`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The action is now `executing`; the proof is consumed. Run it once.
    Claimed(Action),
    /// This proof's `jti` was used before: nothing changes.
    Replayed,
    /// The action is not pending (already executing, ended, or cancelled): its record.
    NotPending(Action),
    /// The action expired before its proof arrived; now recorded as `expired`.
    Expired(Action),
    /// No such action for this tenant.
    Missing,
}

/// The store could not answer (the action is then neither prepared nor executed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the bridge's store failed: {0}")]
pub struct StoreError(pub String);

/// The bridge's memory.
#[async_trait]
pub trait Store: Send + Sync {
    /// Records `action` (pending) and cancels any other pending action of the same
    /// tenant, person and conversation, in one transaction. Returns the cancelled id.
    async fn prepare(&self, action: &Action) -> Result<Option<String>, StoreError>;

    /// The action `action_id` of `tenant_id`.
    async fn get(&self, tenant_id: &str, action_id: &str) -> Result<Option<Action>, StoreError>;

    /// In one transaction: consume `jti` (kept until `jti_exp`), and move the pending
    /// action to `executing` (or to `expired` when `now` is past its expiry).
    async fn claim(
        &self,
        tenant_id: &str,
        action_id: &str,
        jti: &str,
        jti_exp: i64,
        now: i64,
    ) -> Result<Claim, StoreError>;

    /// Ends an `executing` action with `status` (and `message`). `false` if it was not
    /// executing (nothing changed).
    async fn finish(
        &self,
        tenant_id: &str,
        action_id: &str,
        status: ActionStatus,
        message: Option<&str>,
    ) -> Result<bool, StoreError>;

    /// Notes on an `executing` action that its answer was lost (it stays `executing`).
    async fn mark_in_doubt(
        &self,
        tenant_id: &str,
        action_id: &str,
        message: &str,
    ) -> Result<(), StoreError>;

    /// Every action still `executing` (what `countersign-bridge settle check` lists).
    async fn in_doubt(&self) -> Result<Vec<Action>, StoreError>;
}

/// The status's wire spelling, for storage.
pub(crate) fn status_str(s: ActionStatus) -> &'static str {
    s.as_str()
}

/// The status from its wire spelling.
pub(crate) fn status_parse(s: &str) -> Option<ActionStatus> {
    ActionStatus::ALL.into_iter().find(|x| x.as_str() == s)
}
