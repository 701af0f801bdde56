//! `countersign audit verify --tenant … [--since CHECKPOINT.json]`: walks the tenant's
//! audit chains (L-2, L-3) and names the first broken link, and proves the trail extends a
//! checkpoint the tenant kept. Exit status 1 when a chain is broken or the trail does not
//! extend the checkpoint. `countersign audit export --tenant …` prints the trail with its
//! chain fields.

use countersign_aws::AwsSettings;
use countersign_domain::ids::TenantId;
use countersign_domain::ports::AuditRecords;
use countersign_domain::ports::Tenants;
use std::io::Write as _;

pub(crate) async fn verify(
    tenant: String,
    since: Option<&std::path::Path>,
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
    let report = countersign_domain::audit_chain::verify_trail(tenant.as_str(), &trail);
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{} records in {} chains ({} without chain fields)",
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
    let Some(path) = since else {
        return Ok(report.broken.is_none());
    };
    let extended = extends_kept(&tenant, &trail.records, path, sdk, settings, &mut out).await?;
    Ok(report.broken.is_none() && extended)
}

/// L-3: whether `records` still hold every head of the checkpoint kept in `path` (its
/// signature and its heads checked first); says which way on `out`.
async fn extends_kept(
    tenant: &TenantId,
    records: &[countersign_domain::audit_chain::ChainedRecord],
    path: &std::path::Path,
    sdk: &aws_config::SdkConfig,
    settings: &AwsSettings,
    out: &mut impl std::io::Write,
) -> anyhow::Result<bool> {
    let kept: Kept = serde_json::from_slice(&std::fs::read(path)?)
        .map_err(|e| anyhow::anyhow!("{} is not a checkpoint answer: {e}", path.display()))?;
    let claims = signed_claims(&kept.checkpoint, sdk, settings).await?;
    anyhow::ensure!(
        claims.tenant_id == tenant.as_str(),
        "the checkpoint is another tenant's"
    );
    let heads: std::collections::BTreeMap<String, countersign_domain::audit_chain::Head> = kept
        .heads
        .into_iter()
        .map(|h| {
            (
                h.chain,
                countersign_domain::audit_chain::Head {
                    seq: h.seq,
                    hash: h.hash,
                },
            )
        })
        .collect();
    anyhow::ensure!(
        countersign_domain::audit_chain::digest(&heads) == claims.digest,
        "the heads in {} are not the ones the checkpoint signed",
        path.display()
    );
    match countersign_domain::audit_chain::extends(tenant.as_str(), records, &heads) {
        None => {
            writeln!(
                out,
                "extends the checkpoint of {} (iat {}): nothing it covered was removed or rewritten",
                path.display(),
                claims.iat
            )?;
            Ok(true)
        }
        Some(b) => {
            writeln!(
                out,
                "NOT EXTENDED: chain {} at seq {}: {}",
                b.chain, b.seq, b.reason
            )?;
            Ok(false)
        }
    }
}

/// What `verify --since` reads of a kept checkpoint answer.
#[derive(serde::Deserialize)]
struct Kept {
    checkpoint: String,
    heads: Vec<countersign_admin::audit::CheckpointHead>,
}

/// The claims of `jws` once its RS256 signature verifies with one of the checkpoint key's
/// published versions.
async fn signed_claims(
    jws: &str,
    sdk: &aws_config::SdkConfig,
    settings: &AwsSettings,
) -> anyhow::Result<countersign_domain::audit_chain::CheckpointClaims> {
    use countersign_domain::ports::ProofSigner as _;
    let header = jsonwebtoken::decode_header(jws)?;
    anyhow::ensure!(
        header.typ.as_deref() == Some(countersign_domain::audit_chain::CHECKPOINT_TYPE),
        "not a checkpoint"
    );
    let keys = settings.checkpoint_signer(sdk).published_keys().await?;
    let key = keys
        .keys
        .iter()
        .find(|k| Some(k.key.key_id.as_str()) == header.kid.as_deref())
        .ok_or_else(|| anyhow::anyhow!("the checkpoint's key is not one of the checkpoint keys"))?;
    let decoding = jsonwebtoken::DecodingKey::from_rsa_pem(key.key.public_key_pem.as_bytes())?;
    let mut rules = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
    rules.validate_exp = false;
    rules.required_spec_claims.clear();
    Ok(jsonwebtoken::decode(jws, &decoding, &rules)?.claims)
}

/// Prints the trail with its chain fields (the recipe's input).
pub(crate) async fn export(
    tenant: String,
    sdk: &aws_config::SdkConfig,
    settings: &AwsSettings,
) -> anyhow::Result<()> {
    let tenant = TenantId::parse(tenant)?;
    let store = settings.store(sdk);
    anyhow::ensure!(
        store.get_tenant(&tenant).await?.is_some(),
        "no tenant {tenant}"
    );
    let keys: std::sync::Arc<dyn countersign_domain::ports::SubjectKeys> = settings
        .subject_keys(sdk)
        .unwrap_or_else(|| std::sync::Arc::new(countersign_domain::ports::NoSubjectKeys));
    let export = countersign_admin::audit::export(&store, keys.as_ref(), &tenant).await?;
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &export)?;
    writeln!(out)?;
    Ok(())
}
