//! Audit records (issue 5): who changed what. The actor is the admin key's fingerprint
//! (the first 16 hex digits of its SHA-256, which is already all the store keeps) or the
//! operator; the changes name fields and carry non-secret values only.

use countersign_domain::hash::Sha256Hex;
use countersign_domain::ports::{AuditEntry, Clock, Ids};
use serde_json::Value;

/// The operator CLI as an actor.
pub const OPERATOR: &str = "operator";

/// `adminKey:<16 hex digits>`: identifies a key without revealing it (2^-256 of it is
/// known from a 64-bit prefix of a hash of 256 random bits: nothing usable).
pub fn admin_key_actor(hash: &Sha256Hex) -> String {
    let fingerprint: String = hash.as_str().chars().take(16).collect();
    format!("adminKey:{fingerprint}")
}

/// A new record, stamped now.
pub fn entry(
    ids: &dyn Ids,
    clock: &dyn Clock,
    actor: impl Into<String>,
    action: &str,
    changes: Value,
) -> AuditEntry {
    AuditEntry {
        id: ids.audit_id(),
        at: clock.now(),
        actor: actor.into(),
        action: action.to_owned(),
        changes,
    }
}

/// A record of a change made with this tenant's current admin key.
pub fn by_admin(
    state: &crate::AdminState,
    tenant: &countersign_domain::ports::Tenant,
    action: &str,
    changes: Value,
) -> AuditEntry {
    entry(
        state.ids.as_ref(),
        state.clock.as_ref(),
        admin_key_actor(&tenant.admin_key_hash),
        action,
        changes,
    )
}

/// a record's `changes` as a reader sees it, when it has sealed fields: its
/// personal fields opened under its person's key, or marked erased once the key is
/// destroyed; its conversation's ids opened under the conversation's key, or marked purged
/// once the conversation is (decision 0055). `None` when nothing is sealed, or the key
/// service cannot answer now (the stored form, which holds no plaintext, is all there is
/// to show then).
pub async fn opened(
    keys: &dyn countersign_domain::ports::SubjectKeys,
    tenant: &countersign_domain::ids::TenantId,
    changes: &Value,
) -> Option<Value> {
    use countersign_domain::audit_chain::{
        SEALED, SEALED_CONVERSATION, reveal, reveal_conversation,
    };
    let personal = changes.get(SEALED).and_then(Value::as_str);
    let conversation = changes.get(SEALED_CONVERSATION).and_then(Value::as_str);
    if personal.is_none() && conversation.is_none() {
        return None;
    }
    let open = |sealed: &str| {
        let sealed = sealed.to_owned();
        async move {
            keys.open(tenant, &sealed)
                .await
                .inspect_err(
                    |e| tracing::warn!(error = %e, "a sealed audit value could not be opened"),
                )
                .ok()
        }
    };
    let mut out = changes.clone();
    if let Some(sealed) = conversation {
        out = reveal_conversation(&out, open(sealed).await?.as_ref());
    }
    if let Some(sealed) = personal {
        out = reveal(&out, open(sealed).await?.as_ref());
    }
    Some(out)
}

/// The verifier's answer (L-2), as the API and the CLI show it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Verification {
    /// Every chain verifies.
    pub verified: bool,
    /// Chained records checked.
    pub records: usize,
    /// Chains checked (the configuration's and one per conversation with proposals).
    pub chains: usize,
    /// Records without chain fields (L-3: any breaks verification).
    pub unchained: usize,
    /// The first broken link, or `null`.
    pub first_broken: Option<BrokenLink>,
    /// SHA-256 over every chain's head: keep it; a later run over the same records gives
    /// the same value, and any change to a record covered by it changes it.
    pub digest: String,
}

/// Where a chain breaks.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrokenLink {
    /// `tenant` (configuration) or `conv:<digest>` (one conversation; `case:<caseId>` before decision 0055).
    pub chain: String,
    /// The sequence number of the first record that does not verify.
    pub seq: u64,
    /// Its record id, when it exists.
    pub record_id: Option<String>,
    /// What is wrong.
    pub reason: String,
}

/// The longest a verification or a checkpoint may hold its tenant's lease (V-7): a
/// function's timeout, with room.
const HOLD_SECS: i64 = 60;

/// Walks every chain of `tenant`'s audit trail (L-2); one verification in flight per
/// tenant (V-7).
pub async fn verify(
    state: &crate::AdminState,
    tenant: &countersign_domain::ids::TenantId,
) -> Result<Verification, crate::AdminError> {
    crate::lease::one_at_a_time(state, tenant, "verification", HOLD_SECS, async {
        Ok(verified_heads(state, tenant).await?.0)
    })
    .await
}

/// The verification and the heads it read.
async fn verified_heads(
    state: &crate::AdminState,
    tenant: &countersign_domain::ids::TenantId,
) -> Result<(Verification, Vec<CheckpointHead>), crate::AdminError> {
    let trail = state.stores.audit.audit_trail(tenant).await?;
    let report = countersign_domain::audit_chain::verify_trail(tenant.as_str(), &trail);
    let heads = heads_of(&trail);
    let verification = Verification {
        verified: report.broken.is_none(),
        records: report.records,
        chains: report.chains,
        unchained: report.unchained,
        first_broken: report.broken.map(|b| BrokenLink {
            chain: b.chain,
            seq: b.seq,
            record_id: b.id,
            reason: b.reason.to_owned(),
        }),
        digest: report.digest,
    };
    Ok((verification, heads))
}

/// The trail's chain heads, as a checkpoint names them.
fn heads_of(trail: &countersign_domain::audit_chain::AuditTrail) -> Vec<CheckpointHead> {
    (trail.heads.iter())
        .map(|(chain, h)| CheckpointHead {
            chain: chain.clone(),
            seq: h.seq,
            hash: h.hash.clone(),
        })
        .collect()
}

/// One chain's head as a checkpoint covered it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointHead {
    /// `tenant`, `conv:<digest>` or (before decision 0055) `case:<caseId>`.
    pub chain: String,
    /// The last record's sequence number.
    pub seq: u64,
    /// The last record's hash.
    pub hash: String,
}

/// A signed checkpoint of the trail (L-2), as the API returns it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignedCheckpoint {
    /// Compact RS256 JWS (`typ: countersign-audit-checkpoint+jwt`, `kid` in the JWKS) of
    /// `{iss, tenantId, iat, records, chains, digest}`. Keep it: it proves what the trail
    /// held at `iat`.
    pub checkpoint: String,
    /// The digest of every chain's head it signs.
    pub digest: String,
    /// Chained records covered.
    pub records: usize,
    /// Chains covered.
    pub chains: usize,
    /// The heads the digest covers (L-3): keep them with the checkpoint. The signed digest
    /// binds them, and `countersign audit verify --since` (or the offline recipe) checks
    /// the trail still holds each of them.
    pub heads: Vec<CheckpointHead>,
    /// RFC 3339.
    pub signed_at: String,
}

/// Verifies the trail and, when every chain is intact, signs a checkpoint of its heads
/// with the platform's checkpoint key (V-6; the messages function's, decision 0026),
/// published at [`crate::jwks::AUDIT_KEYS_PATH`].
pub async fn checkpoint(
    state: &crate::AdminState,
    tenant: &countersign_domain::ids::TenantId,
) -> Result<SignedCheckpoint, crate::AdminError> {
    // V-7: one checkpoint in flight per tenant (its verification runs under this lease).
    crate::lease::one_at_a_time(state, tenant, "checkpoint", HOLD_SECS, async {
        checkpoint_held(state, tenant).await
    })
    .await
}

async fn checkpoint_held(
    state: &crate::AdminState,
    tenant: &countersign_domain::ids::TenantId,
) -> Result<SignedCheckpoint, crate::AdminError> {
    use countersign_domain::ports::SignerError;
    let (v, heads) = verified_heads(state, tenant).await?;
    if let Some(b) = v.first_broken {
        return Err(crate::AdminError::AuditBroken {
            chain: b.chain,
            seq: b.seq,
        });
    }
    let now = state.clock.now();
    let claims = countersign_domain::audit_chain::CheckpointClaims {
        iss: state.issuer.clone(),
        tenant_id: tenant.to_string(),
        iat: now.unix_seconds(),
        records: v.records,
        chains: v.chains,
        digest: v.digest.clone(),
    };
    // V-6: the checkpoint key, never the action key.
    let checkpoint = match countersign_domain::audit_chain::sign_checkpoint(
        state.checkpoint_signer.as_ref(),
        &claims,
    )
    .await
    {
        Ok(c) => c,
        Err(SignerError::NotConfigured) => return Err(crate::AdminError::SigningUnavailable),
        Err(e) => {
            return Err(crate::AdminError::unavailable("the signing service")(
                Box::new(e),
            ));
        }
    };
    Ok(SignedCheckpoint {
        checkpoint,
        digest: v.digest,
        records: v.records,
        chains: v.chains,
        heads,
        signed_at: now.to_rfc3339(),
    })
}

/// L-3: the tenant's whole trail with its chain fields, as `countersign audit export`
/// prints it and `docs/recipes/verify_audit_export.py` reads it: every record (any order)
/// and every chain's head, read as the verifier reads them (decision 0041).
pub async fn export(
    tenants: &dyn countersign_domain::ports::AuditRecords,
    keys: &dyn countersign_domain::ports::SubjectKeys,
    tenant: &countersign_domain::ids::TenantId,
) -> Result<serde_json::Value, countersign_domain::ports::StoreError> {
    let trail = tenants.audit_trail(tenant).await?;
    let mut records: Vec<Value> = Vec::with_capacity(trail.records.len());
    for r in &trail.records {
        let mut record = serde_json::json!({
            "id": r.id, "chain": r.chain, "seq": r.seq, "prev": r.prev, "at": r.at,
            "actor": r.actor, "action": r.action, "changes": r.changes,
        });
        // `changes` stays as chained (the hash covers it); `opened` shows it read.
        if let Ok(stored) = serde_json::from_str::<Value>(&r.changes)
            && let Some(opened) = opened(keys, tenant, &stored).await
        {
            record["opened"] = opened;
        }
        records.push(record);
    }
    let heads = heads_of(&trail);
    Ok(serde_json::json!({
        "tenantId": tenant.as_str(),
        "heads": heads,
        "records": records,
        "unchained": trail.unchained,
    }))
}
