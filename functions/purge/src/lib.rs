//! The purge function (R-1, decision 0052): started once a day by its schedule, it purges
//! every tenant's conversations idle past the tenant's retention (or the deployment's
//! default), within a time budget. A tenant's run follows its resumable cursor to the end;
//! a run out of time stops, and the next day's run starts with the tenants this one did
//! not reach (the order turns by one tenant a day), so no tenant waits for ever behind
//! large ones. A failure for one tenant is logged and the others go on.

use countersign_admin::retention::{self, PurgeReport};
use countersign_domain::ports::{ConversationStore, Tenants};
use countersign_domain::retention::RetentionDays;
use countersign_domain::time::Timestamp;
use std::time::{Duration, Instant};

/// Environment variables the deployed function reads besides
/// [`countersign_aws::AwsSettings::ENV`].
pub const ENV: [&str; 1] = ["COUNTERSIGN_ISSUER"];

/// The receipts' `iss` when `COUNTERSIGN_ISSUER` is unset (every function's default).
pub use countersign_aws::settings::DEFAULT_ISSUER;

/// N-3: how long one run of the erasure worker works (its schedule starts one a minute;
/// the function runs one at a time, so a run that overlaps the next waits its turn).
pub const WORKER_BUDGET: Duration = Duration::from_secs(50);

/// Which job a scheduled event asks for: its `job` field (`"erasures"`: the erasure
/// worker, N-3); anything else is the daily purge.
#[must_use]
pub fn wants_erasures(event: &serde_json::Value) -> bool {
    event.get("job").and_then(|j| j.as_str()) == Some("erasures")
}

/// How long one run purges before it stops: well inside the function's 900-second
/// timeout (a page in flight finishes).
pub const RUN_BUDGET: Duration = Duration::from_secs(780);

/// One tenant's run.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantRun {
    /// The tenant.
    pub tenant: String,
    /// The retention applied (`None`: none set, nothing purged).
    pub retention_days: Option<u32>,
    /// What was done.
    pub report: PurgeReport,
    /// erasures that waited and finished in this run.
    pub erasures_finished: usize,
    /// Why it stopped early, if it did (the store failed; out of time).
    pub stopped: Option<String>,
}

/// One scheduled run over every tenant, from the `day`-th (the order turns daily).
pub async fn run<S: ConversationStore + Tenants>(
    store: &S,
    keys: &dyn countersign_domain::ports::SubjectKeys,
    default: Option<RetentionDays>,
    now: Timestamp,
    budget: Duration,
) -> anyhow::Result<Vec<TenantRun>> {
    let started = Instant::now();
    let until = started + budget;
    let mut tenants = store.list_tenants().await?;
    if !tenants.is_empty() {
        let day = usize::try_from(now.unix_seconds().div_euclid(86_400)).unwrap_or(0);
        let first = day % tenants.len();
        tenants.rotate_left(first);
    }
    let mut runs = Vec::new();
    for t in tenants {
        if started.elapsed() >= budget {
            break;
        }
        let days = retention::effective(&t, default);
        let mut run = TenantRun {
            tenant: t.id.to_string(),
            retention_days: days.map(RetentionDays::days),
            report: PurgeReport::default(),
            erasures_finished: 0,
            stopped: None,
        };
        // erasures waiting for conversations that can go now are finished first.
        if !t.erasing.is_empty() {
            let entry = |action: &str, changes: serde_json::Value| {
                use countersign_domain::ports::Ids as _;
                countersign_domain::ports::AuditEntry {
                    id: countersign_aws::system::UlidIds::default().audit_id(),
                    at: now,
                    actor: "platform".into(),
                    action: action.to_owned(),
                    changes,
                }
            };
            let finishing = countersign_admin::erasure::finish_pending(
                store, store, keys, &t, entry, now, until,
            );
            match finishing.await {
                Ok(n) => run.erasures_finished = n,
                Err(e) => tracing::warn!(error = %e, tenant = %t.id, "finishing erasures failed"),
            }
        }
        if let Some(days) = days {
            purge_until(store, &t, days, now, started, budget, &mut run).await;
        }
        runs.push(run);
    }
    Ok(runs)
}

/// Pages of `t`'s conversations until the end or the budget, into `run`: from where the
/// last run stopped, if it ran out of time; where this one stops is kept for the next.
async fn purge_until<S: ConversationStore + Tenants>(
    store: &S,
    t: &countersign_domain::ports::Tenant,
    days: RetentionDays,
    now: Timestamp,
    started: Instant,
    budget: Duration,
    run: &mut TenantRun,
) {
    let tenant = &t.id;
    let mut cursor: Option<String> = t.purge_cursor.clone();
    loop {
        match retention::purge_tenant(store, tenant, days, now, cursor.as_deref(), 1).await {
            Ok(page) => {
                let r = &mut run.report;
                r.examined += page.examined;
                r.purged += page.purged;
                r.items += page.items;
                r.unresolved += page.unresolved;
                r.held += page.held;
                r.active += page.active;
                cursor = page.next;
            }
            Err(e) => {
                tracing::warn!(error = %e, %tenant, "purge stopped for this tenant");
                run.stopped = Some("the store was unavailable".into());
                break;
            }
        }
        if cursor.is_none() {
            break;
        }
        if started.elapsed() >= budget {
            run.stopped = Some("out of time".into());
            break;
        }
    }
    run.report.next = cursor;
    let resume = run.report.next.as_deref().filter(|_| run.stopped.is_some());
    if resume != t.purge_cursor.as_deref()
        && let Err(e) = store.set_purge_cursor(tenant, resume).await
    {
        tracing::warn!(error = %e, %tenant, "the purge's cursor was not kept");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use countersign_domain::hash::Sha256Hex;
    use countersign_domain::ports::Tenant;
    use countersign_domain::texts::Language;
    use countersign_testkit::MemoryStore;
    use countersign_testkit::contract::Fixture;

    /// a run purges each tenant by its own retention (or the default), leaves a
    /// tenant without one alone, and reports each.
    #[tokio::test]
    async fn r1_each_tenant_is_purged_by_its_own_retention() {
        let (store, f) = (MemoryStore::default(), Fixture::default());
        let mut ids = Vec::new();
        for (name, days) in [("short", Some(10)), ("long", Some(90)), ("unset", None)] {
            let t = Tenant {
                retention_days: days.map(|d| RetentionDays::new(d).unwrap()),
                ..Tenant::new(
                    f.tenant(),
                    name,
                    Sha256Hex::digest(name),
                    Language::En,
                    f.now(),
                )
            };
            store.create_tenant(&t).await.unwrap();
            f.open_case(&store, &t.id).await;
            ids.push(t.id);
        }
        let at = f.now().plus_seconds(31 * 86_400);
        let runs = run(&store, &store, None, at, RUN_BUDGET).await.unwrap();
        let purged = |id: &countersign_domain::ids::TenantId| {
            runs.iter()
                .find(|r| r.tenant == id.as_str())
                .map(|r| r.report.purged)
        };
        assert_eq!(runs.len(), 3);
        assert_eq!(purged(&ids[0]), Some(1), "10 days: due");
        assert_eq!(purged(&ids[1]), Some(0), "90 days: kept");
        assert_eq!(purged(&ids[2]), Some(0), "no retention: kept");
        let thirty = RetentionDays::new(30).unwrap();
        let runs = run(&store, &store, Some(thirty), at, RUN_BUDGET)
            .await
            .unwrap();
        let unset = runs.iter().find(|r| r.tenant == ids[2].as_str()).unwrap();
        assert_eq!((unset.retention_days, unset.report.purged), (Some(30), 1));
    }

    /// out of time, a run stops and says so; nothing is half-done.
    #[tokio::test]
    async fn r1_a_run_out_of_time_stops() {
        let (store, f) = (MemoryStore::default(), Fixture::default());
        let t = Tenant {
            retention_days: Some(RetentionDays::new(1).unwrap()),
            ..f.tenant_named("t")
        };
        store.create_tenant(&t).await.unwrap();
        for _ in 0..(retention::PAGE + 1) {
            f.open_case(&store, &t.id).await;
        }
        let at = f.now().plus_seconds(2 * 86_400);
        let runs = run(&store, &store, None, at, Duration::ZERO).await.unwrap();
        assert!(runs.is_empty(), "no time: no tenant started");
        let runs = run(&store, &store, None, at, Duration::from_nanos(1))
            .await
            .unwrap();
        assert!(runs.len() <= 1);
    }

    /// a tenant's run out of time keeps where it stopped; the next run resumes there
    /// (it does not start the tenant over), and once it reaches the end the cursor is gone.
    #[tokio::test]
    async fn r1_a_run_out_of_time_resumes_where_it_stopped() {
        let (store, f) = (MemoryStore::default(), Fixture::default());
        let t = Tenant {
            retention_days: Some(RetentionDays::new(1).unwrap()),
            ..f.tenant_named("t")
        };
        store.create_tenant(&t).await.unwrap();
        for _ in 0..(retention::PAGE + 5) {
            f.open_case(&store, &t.id).await;
        }
        let at = f.now().plus_seconds(2 * 86_400);
        let days = RetentionDays::new(1).unwrap();
        let mut first = TenantRun {
            tenant: t.id.to_string(),
            retention_days: Some(1),
            report: PurgeReport::default(),
            erasures_finished: 0,
            stopped: None,
        };
        purge_until(
            &store,
            &t,
            days,
            at,
            Instant::now(),
            Duration::ZERO,
            &mut first,
        )
        .await;
        assert_eq!(first.stopped.as_deref(), Some("out of time"));
        assert_eq!(first.report.examined, retention::PAGE);
        let kept = store.get_tenant(&t.id).await.unwrap().unwrap();
        assert!(kept.purge_cursor.is_some(), "where it stopped is kept");
        let mut second = TenantRun {
            stopped: None,
            ..first.clone()
        };
        second.report = PurgeReport::default();
        purge_until(
            &store,
            &kept,
            days,
            at,
            Instant::now(),
            RUN_BUDGET,
            &mut second,
        )
        .await;
        assert_eq!(
            (second.report.examined, second.stopped),
            (5, None),
            "resumed, not restarted"
        );
        let done = store.get_tenant(&t.id).await.unwrap().unwrap();
        assert_eq!(done.purge_cursor, None);
    }
}
