//! `countersign purge`: R-1's purge, run by the operator (decision 0052): every tenant's
//! conversations idle past its `retentionDays` (or the deployment's default,
//! `COUNTERSIGN_RETENTION_DAYS`) are removed, except those whose proposal is still
//! pending, executing or unknown. Prints one JSON line per tenant.

use countersign_admin::retention::{self, PurgeReport};
use countersign_aws::AwsSettings;
use countersign_domain::ids::TenantId;
use countersign_domain::ports::{Clock as _, Tenants as _};
use countersign_domain::retention::RetentionDays;
use std::io::Write as _;

/// Runs the purge for `tenant` (or every tenant) to the end of their conversations.
pub(crate) async fn run(
    tenant: Option<String>,
    backfill: bool,
    sdk: &aws_config::SdkConfig,
    settings: &AwsSettings,
) -> anyhow::Result<()> {
    let store = settings.store(sdk);
    if backfill {
        use countersign_domain::ports::PersonIndex as _;
        let n = store.backfill_retention_index().await?;
        // N-3, N-8: the per-person index (and the legacy unsettled entries moved into
        // their shards), to the end; run before deploying this release.
        let indexed = store.backfill_person_index(usize::MAX).await?;
        writeln!(
            std::io::stdout().lock(),
            "{}",
            serde_json::json!({"backfilled": n, "personIndex": indexed})
        )?;
    }
    let default = settings
        .retention_days
        .and_then(|d| RetentionDays::new(i64::from(d)).ok());
    let tenants = match tenant {
        Some(id) => {
            let id = TenantId::parse(id)?;
            vec![
                store
                    .get_tenant(&id)
                    .await?
                    .ok_or_else(|| anyhow::anyhow!("no tenant {id}"))?,
            ]
        }
        None => store.list_tenants().await?,
    };
    let now = countersign_aws::system::SystemClock.now();
    let mut out = std::io::stdout().lock();
    for t in tenants {
        let report = match retention::effective(&t, default) {
            Some(days) => {
                retention::purge_tenant(&store, &t.id, days, now, None, usize::MAX).await?
            }
            None => PurgeReport::default(),
        };
        let line = serde_json::json!({
            "tenant": t.id.as_str(),
            "retentionDays": retention::effective(&t, default).map(RetentionDays::days),
            "report": report,
        });
        writeln!(out, "{line}")?;
    }
    Ok(())
}
