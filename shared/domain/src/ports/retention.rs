//! R-1 (decision 0052): what the purge needs of the conversation store — the tenant's
//! conversations with their last activity, page by page from a resumable cursor, and the
//! removal of every item of one conversation.

use super::store::StoreError;
use crate::ids::{CaseId, TenantId, UserId};
use crate::proposal::ProposalState;
use crate::time::Timestamp;
use async_trait::async_trait;

/// A conversation as the purge sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retained {
    /// Its case.
    pub case: CaseId,
    /// Its person.
    pub user: UserId,
    /// Its last activity: its newest message, or its creation if it has none.
    pub last_activity: Timestamp,
    /// N-4: how many writes the conversation has taken (messages, links) when it was
    /// listed. The purge's delete is conditioned on it: a conversation written to since
    /// it was listed is kept ([`PurgeOutcome::Active`]).
    pub writes: u64,
}

/// One page of a tenant's conversations.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RetainedPage {
    /// The conversations.
    pub items: Vec<Retained>,
    /// Where the next page starts; `None` after the last page.
    pub next: Option<String>,
}

/// What purging a conversation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PurgeOutcome {
    /// Every item of it is gone (this many were removed).
    Purged {
        /// Items removed.
        items: usize,
    },
    /// Kept: its proposal is pending, executing or unknown (P-3); purged once resolved.
    Unresolved(ProposalState),
    /// Kept: a legal hold covers it, its person's or its own.
    Held,
    /// Nothing was there (already purged).
    Gone,
    /// N-4: kept: written to since it was listed (its `writes` moved), so the activity the
    /// purge decided on is stale. The next run looks again.
    Active,
}

/// The store's side of retention.
#[async_trait]
pub trait Retention: Send + Sync {
    /// A page of at most about `limit` of `tenant`'s conversations, from `cursor` (the
    /// previous page's `next`; `None` starts over). An unreadable cursor is
    /// [`StoreError::Corrupt`].
    async fn retained(
        &self,
        tenant: &TenantId,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<RetainedPage, StoreError>;

    /// Removes every item of `tenant`'s conversation `case` — case, proposals, messages —
    /// unless its proposal is pending, executing or unknown at that moment, or a legal hold
    /// covers it — both decided atomically with the removal of the case item, so a
    /// proposal prepared or a hold placed meanwhile is never lost with it. With `seen`
    /// (N-4: the [`Retained::writes`] the purge decided on), a conversation written to
    /// since is kept ([`PurgeOutcome::Active`]); without it (an erasure), activity does
    /// not matter. Once its case item is gone, no write lands in the conversation
    /// ([`StoreError::Gone`]).
    async fn purge(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        seen: Option<u64>,
    ) -> Result<PurgeOutcome, StoreError>;
}
