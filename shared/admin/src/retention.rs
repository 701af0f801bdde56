//! R-1 (seed 001 §6, decision 0052): retention. A tenant's `retentionDays` (self-service,
//! audited; set by [`crate::tenants::save_settings`]) and the purge of its conversations idle that long: every item of a
//! conversation whose last activity is older than the retention goes, except while its
//! proposal is pending, executing or unknown (P-3) — such a conversation is purged once
//! resolved, the resolution being its last activity. The purge starts no reconciliation.

use countersign_domain::ids::{CaseId, TenantId};
use countersign_domain::ports::{ConversationStore, PurgeOutcome, StoreError, Tenant};
use countersign_domain::proposal::ProposalState;
use countersign_domain::retention::RetentionDays;
use countersign_domain::time::Timestamp;

/// Conversations read per page.
pub const PAGE: usize = 100;

/// What one purge run did for one tenant.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PurgeReport {
    /// Conversations looked at.
    pub examined: usize,
    /// Conversations purged.
    pub purged: usize,
    /// Items removed with them.
    pub items: usize,
    /// Conversations due but kept: their proposal is pending, executing or unknown.
    pub unresolved: usize,
    /// Conversations due but kept under a legal hold.
    pub held: usize,
    /// N-4: conversations due when listed but written to since (kept; the next run
    /// looks again).
    pub active: usize,
    /// Where the next run resumes (`None`: this run reached the end).
    pub next: Option<String>,
}

/// The retention that applies to `tenant`: its own, or the deployment's default.
#[must_use]
pub fn effective(tenant: &Tenant, default: Option<RetentionDays>) -> Option<RetentionDays> {
    tenant.retention_days.or(default)
}

/// Purges `tenant`'s conversations idle for `retention` at `now`, reading at most `pages`
/// pages from `cursor` (a previous report's `next`). A failure stops the run with the
/// report so far lost: the next run repeats the pages (a purge is idempotent).
pub async fn purge_tenant(
    store: &dyn ConversationStore,
    tenant: &TenantId,
    retention: RetentionDays,
    now: Timestamp,
    cursor: Option<&str>,
    pages: usize,
) -> Result<PurgeReport, StoreError> {
    let mut report = PurgeReport {
        next: cursor.map(str::to_owned),
        ..PurgeReport::default()
    };
    for _ in 0..pages.max(1) {
        let page = store.retained(tenant, report.next.as_deref(), PAGE).await?;
        for item in page.items {
            report.examined += 1;
            if !retention.is_due(item.last_activity, now) {
                continue;
            }
            match purge_one(store, tenant, &item.case, Some(item.writes), now).await? {
                PurgeOutcome::Purged { items } => {
                    report.purged += 1;
                    report.items += items;
                }
                PurgeOutcome::Unresolved(_) => report.unresolved += 1,
                PurgeOutcome::Held => report.held += 1,
                PurgeOutcome::Active => report.active += 1,
                PurgeOutcome::Gone => {}
            }
        }
        report.next = page.next;
        if report.next.is_none() {
            break;
        }
    }
    Ok(report)
}

/// Purges one due conversation (`seen`: the writes it was listed with, N-4; `None` for an
/// erasure). A proposal still stored as pending but past its expiry (expiry is applied
/// lazily, when someone next looks) is expired first: it can no longer be confirmed, so
/// it holds nothing (the expiry writes no message: the writes it was listed with stand).
pub(crate) async fn purge_one(
    store: &dyn ConversationStore,
    tenant: &TenantId,
    case: &CaseId,
    seen: Option<u64>,
    now: Timestamp,
) -> Result<PurgeOutcome, StoreError> {
    let first = store.purge(tenant, case, seen).await?;
    if first != PurgeOutcome::Unresolved(ProposalState::PendingConfirmation) {
        return Ok(first);
    }
    let stale = store
        .load(tenant, case)
        .await?
        .and_then(|v| v.active)
        .filter(|p| p.state == ProposalState::PendingConfirmation && p.expires_at <= now);
    let Some(p) = stale else {
        return Ok(first);
    };
    let (from, to) = (ProposalState::PendingConfirmation, ProposalState::Expired);
    store
        .transition(tenant, case, &p.action_id, from, to, None)
        .await?;
    store.purge(tenant, case, seen).await
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use countersign_domain::conversation::{MessageKind, Role};
    use countersign_domain::ports::Conversations as _;
    use countersign_testkit::MemoryStore;
    use countersign_testkit::contract::Fixture;

    const DAY: i64 = 86_400;

    fn thirty() -> RetentionDays {
        RetentionDays::new(30).unwrap()
    }

    /// a conversation idle past the retention is purged; one whose last message is
    /// newer is kept, then purged once idle that long after its last message.
    #[tokio::test]
    async fn r1_a_conversation_is_purged_a_retention_after_its_last_activity() {
        let (store, f) = (MemoryStore::default(), Fixture::default());
        let tenant = f.tenant();
        let idle = f.open_case(&store, &tenant).await;
        let active = f.open_case(&store, &tenant).await;
        let mut late = f.message(&active.id, Role::User, MessageKind::Text, "still here");
        late.created_at = f.now().plus_seconds(20 * DAY);
        store.append_message(&tenant, &late).await.unwrap();
        let at = f.now().plus_seconds(31 * DAY);
        let report = purge_tenant(&store, &tenant, thirty(), at, None, 10)
            .await
            .unwrap();
        assert_eq!(
            (report.examined, report.purged, report.unresolved),
            (2, 1, 0)
        );
        assert!(store.load(&tenant, &idle.id).await.unwrap().is_none());
        assert!(store.load(&tenant, &active.id).await.unwrap().is_some());
        let at = f.now().plus_seconds(51 * DAY);
        let report = purge_tenant(&store, &tenant, thirty(), at, None, 10)
            .await
            .unwrap();
        assert_eq!((report.examined, report.purged), (1, 1));
        assert!(store.load(&tenant, &active.id).await.unwrap().is_none());
    }

    /// R-1, P-3: an executing proposal keeps its conversation (no reconciliation is
    /// started); a proposal still stored as pending but long expired is expired, and its
    /// conversation purged.
    #[tokio::test]
    async fn r1_p3_unresolved_conversations_are_kept_and_expired_proposals_are_not() {
        use countersign_domain::ports::ProposalLock as _;
        let (store, f) = (MemoryStore::default(), Fixture::default());
        let tenant = f.tenant();
        let stale = f.open_case(&store, &tenant).await;
        let (p, m) = f.proposal(&stale, "act_stale");
        store.create_proposal(&p, &m).await.unwrap();
        let running = f.open_case(&store, &tenant).await;
        let (q, m) = f.proposal(&running, "act_running");
        store.create_proposal(&q, &m).await.unwrap();
        let (from, to) = (ProposalState::PendingConfirmation, ProposalState::Executing);
        store
            .transition(&tenant, &running.id, &q.action_id, from, to, None)
            .await
            .unwrap();
        let at = f.now().plus_seconds(31 * DAY);
        let report = purge_tenant(&store, &tenant, thirty(), at, None, 10)
            .await
            .unwrap();
        assert_eq!((report.purged, report.unresolved), (1, 1), "{report:?}");
        assert!(store.load(&tenant, &stale.id).await.unwrap().is_none());
        let kept = store.load(&tenant, &running.id).await.unwrap().unwrap();
        assert_eq!(kept.active.map(|a| a.state), Some(ProposalState::Executing));
    }

    /// a run reads at most its pages and says where the next one resumes; the next
    /// run from there finishes, and every conversation is examined once.
    #[tokio::test]
    async fn r1_the_purge_resumes_from_its_cursor() {
        let (store, f) = (MemoryStore::default(), Fixture::default());
        let tenant = f.tenant();
        for _ in 0..(PAGE + 20) {
            f.open_case(&store, &tenant).await;
        }
        let at = f.now().plus_seconds(31 * DAY);
        let first = purge_tenant(&store, &tenant, thirty(), at, None, 1)
            .await
            .unwrap();
        assert_eq!(first.examined, PAGE);
        assert!(first.next.is_some());
        let second = purge_tenant(&store, &tenant, thirty(), at, first.next.as_deref(), 1)
            .await
            .unwrap();
        assert_eq!((second.examined, second.next), (20, None));
        assert_eq!(first.purged + second.purged, PAGE + 20);
    }
}
