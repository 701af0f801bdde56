//! `countersign audit verify --tenant …`: walks the tenant's audit chains (L-2) and names
//! the first broken link. Exit status 1 when a chain is broken.

use countersign_aws::AwsSettings;
use countersign_domain::ids::TenantId;
use countersign_domain::ports::TenantStore as _;
use std::io::Write as _;

pub(crate) async fn verify(
    tenant: String,
    sdk: &aws_config::SdkConfig,
    settings: &AwsSettings,
) -> anyhow::Result<bool> {
    let tenant = TenantId::parse(tenant)?;
    let store = settings.store(sdk);
    anyhow::ensure!(
        store.get_tenant(&tenant).await?.is_some(),
        "no tenant {tenant}"
    );
    let trail = store.audit_trail(&tenant).await?;
    let report = countersign_domain::audit_chain::verify(
        tenant.as_str(),
        &trail.records,
        &trail.heads,
        trail.unchained,
    );
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{} records in {} chains ({} from before the chain, not covered)",
        report.records, report.chains, report.unchained
    )?;
    writeln!(out, "digest {}", report.digest)?;
    match &report.broken {
        None => writeln!(out, "verified: every chain is intact")?,
        Some(b) => writeln!(
            out,
            "BROKEN: chain {} at seq {}{}: {}",
            b.chain,
            b.seq,
            b.id.as_deref()
                .map(|id| format!(" (record {id})"))
                .unwrap_or_default(),
            b.reason
        )?,
    }
    Ok(report.broken.is_none())
}
