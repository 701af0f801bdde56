//! R-2, R-3 (seed 001 §6, decision 0053): legal holds, and the erasure of a person on
//! the tenant's request.
//!
//! An erasure purges every conversation of the person now (an unresolved proposal's or a
//! held conversation is reported and kept: the person is marked as erasing and the purge
//! finishes them once they can go), writes a `subject.erased` record, and — once nothing
//! of theirs is left — destroys their key, after which the personal fields of their audit
//! records can no longer be opened while every chain and checkpoint still verifies. The
//! tenant gets a receipt signed with the checkpoint key. A held person is not erased.

use crate::state::{AdminError, store_down};
use countersign_domain::audit_chain::{ERASURE_RECEIPT_TYPE, sign_jws};
use countersign_domain::ids::{CaseId, TenantId, UserId};
use countersign_domain::ports::{
    ConversationStore, Destroyed, PurgeOutcome, StoreError, SubjectKeys, Tenant, Tenants,
};
use countersign_domain::retention::Hold;
use countersign_domain::time::Timestamp;
use serde::Serialize;

/// How long DynamoDB point-in-time recovery keeps what was removed (the template's table
/// has it on; its window is at most 35 days).
pub const BACKUP_DAYS: i64 = 35;

/// places (`on`) or lifts `hold`, audited as `hold.placed` / `hold.lifted` (a
/// person's id is a personal field: sealed under their key). Setting what already stands
/// writes nothing.
pub async fn set_hold(
    state: &crate::AdminState,
    tenant: &Tenant,
    hold: &Hold,
    on: bool,
) -> Result<(), AdminError> {
    if tenant.holds.contains(hold) == on {
        return Ok(());
    }
    let changes = match hold {
        Hold::Person(u) => serde_json::json!({"kind": "person", "person": u.as_str()}),
        Hold::Conversation(c) => {
            serde_json::json!({"kind": "conversation", "conversation": c.as_str()})
        }
    };
    let action = if on { "hold.placed" } else { "hold.lifted" };
    let record = crate::audit::by_admin(state, tenant, action, changes);
    let outcome = state
        .stores
        .tenants
        .set_hold(&tenant.id, hold, on, &record)
        .await;
    crate::tenants::setting_saved(outcome)
}

/// What happened to a person's conversations.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErasedConversations {
    /// Purged now, every item of each.
    pub purged: Vec<String>,
    /// Kept for now: a proposal in them is pending, executing or unknown. They are purged
    /// (and the erasure finished) once it is resolved; no reconciliation is started.
    pub unresolved: Vec<String>,
    /// Kept: a legal hold is on the conversation. Purged once it is lifted.
    pub held: Vec<String>,
}

/// An erasure's answer (and the receipt's claims, with `iss` and `typ` added).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Erasure {
    /// The erasure's id (its `subject.erased` record's id).
    pub erasure_id: String,
    /// The tenant.
    pub tenant_id: String,
    /// The person, as the tenant names them.
    pub person: String,
    /// RFC 3339.
    pub erased_at: String,
    /// The person's conversations.
    pub conversations: ErasedConversations,
    /// Items removed from the table.
    pub items_removed: usize,
    /// The personal fields of the person's audit records: `unreadable` (their key is
    /// destroyed; the records and the chain stay and verify), `unreadable except
    /// legacyRecords` (those stay in clear), or `pending` (the key is destroyed once the
    /// kept conversations are purged).
    pub audit_personal_data: String,
    /// Audit records written before people's keys existed (decision 0053) that name the
    /// person in clear: they stay as they were chained (rewriting them would break the
    /// chain and every checkpoint over it).
    pub legacy_records: usize,
    /// What backups may still hold, and until when.
    pub backups: Backups,
    /// Compact RS256 JWS of these claims (`typ: countersign-erasure-receipt+jwt`), signed
    /// with the audit checkpoint key, verifiable with the audit keys set. Keep it.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub receipt: String,
}

/// the backups' part of a receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Backups {
    /// What they may hold.
    pub note: String,
    /// RFC 3339: after this, no backup holds anything removed by this erasure.
    pub until: String,
}

/// Why an erasure was refused.
#[derive(Debug, thiserror::Error)]
pub enum ErasureError {
    /// Nothing is stored of this person (never seen, or erased already).
    #[error("nothing is stored for this person: unknown here, or erased already")]
    Unknown,
    /// A legal hold is on the person.
    #[error("a legal hold is on this person; lift it before erasing them")]
    Held,
    /// Anything else.
    #[error(transparent)]
    Admin(#[from] AdminError),
}

/// Every conversation of `user`, by the retention index (one pass over the tenant's).
async fn conversations_of(
    store: &dyn ConversationStore,
    tenant: &TenantId,
    user: &UserId,
) -> Result<Vec<CaseId>, StoreError> {
    let mut found = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = store
            .retained(tenant, cursor.as_deref(), crate::retention::PAGE)
            .await?;
        found.extend(
            page.items
                .into_iter()
                .filter(|r| &r.user == user)
                .map(|r| r.case),
        );
        match page.next {
            Some(n) => cursor = Some(n),
            None => return Ok(found),
        }
    }
}

/// Purges every conversation of `user` now: what went, what stays and why.
async fn purge_person(
    store: &dyn ConversationStore,
    tenant: &TenantId,
    user: &UserId,
    now: Timestamp,
) -> Result<(ErasedConversations, usize), StoreError> {
    let mut out = ErasedConversations::default();
    let mut items = 0;
    for case in conversations_of(store, tenant, user).await? {
        match crate::retention::purge_one(store, tenant, &case, None, now).await? {
            PurgeOutcome::Purged { items: n } => {
                items += n;
                out.purged.push(case.to_string());
            }
            PurgeOutcome::Unresolved(_) => out.unresolved.push(case.to_string()),
            PurgeOutcome::Held => out.held.push(case.to_string()),
            // Not asked for (an erasure purges whatever the activity).
            PurgeOutcome::Gone | PurgeOutcome::Active => {}
        }
    }
    Ok((out, items))
}

/// erases `user` of `tenant` (see the module's comment). Replaying an erasure that
/// is complete is [`ErasureError::Unknown`]: nothing of them is left.
pub async fn erase(
    state: &crate::AdminState,
    tenant: &Tenant,
    user: &UserId,
) -> Result<Erasure, ErasureError> {
    if tenant.holds.people.contains(user) {
        return Err(ErasureError::Held);
    }
    let stores = &state.stores;
    let now = state.clock.now();
    let (conversations, items) = purge_person(stores.retention.as_ref(), &tenant.id, user, now)
        .await
        .map_err(store_down)?;
    let has_key = stores
        .subjects
        .has_key(&tenant.id, user)
        .await
        .map_err(store_down)?;
    let nothing = conversations.purged.is_empty()
        && conversations.unresolved.is_empty()
        && conversations.held.is_empty();
    if nothing && !has_key && !tenant.erasing.contains(user) {
        return Err(ErasureError::Unknown);
    }
    let pending = !(conversations.unresolved.is_empty() && conversations.held.is_empty());
    let legacy_records = legacy(stores.audit.as_ref(), &tenant.id, user)
        .await
        .map_err(store_down)?;
    let record = crate::audit::by_admin(
        state,
        tenant,
        "subject.erased",
        serde_json::json!({
            "person": user.as_str(),
            "purged": conversations.purged.len(),
            "itemsRemoved": items,
            "unresolved": conversations.unresolved,
            "held": conversations.held,
            "pending": pending,
        }),
    );
    let erasure_id = record.id.to_string();
    crate::tenants::setting_saved(
        stores
            .tenants
            .set_erasing(&tenant.id, user, pending, &record)
            .await,
    )?;
    let audit_personal_data =
        destroy_key(stores, &tenant.id, user, pending, legacy_records).await?;
    let mut erasure = Erasure {
        erasure_id,
        tenant_id: tenant.id.to_string(),
        person: user.to_string(),
        erased_at: now.to_rfc3339(),
        conversations,
        items_removed: items,
        legacy_records,
        audit_personal_data: audit_personal_data.to_owned(),
        backups: Backups {
            note: "DynamoDB point-in-time recovery may hold the removed items and the person's wrapped key until this time; a restore is an operator's act, never automatic".into(),
            until: now.plus_seconds(BACKUP_DAYS * 86_400).to_rfc3339(),
        },
        receipt: String::new(),
    };
    erasure.receipt = sign_receipt(state, &erasure).await?;
    Ok(erasure)
}

/// What becomes of the person's key: kept while conversations of theirs wait (`pending`),
/// else destroyed (unless a hold on them was placed meanwhile: then nothing more is done).
async fn destroy_key(
    stores: &crate::state::AdminStores,
    tenant: &TenantId,
    user: &UserId,
    pending: bool,
    legacy_records: usize,
) -> Result<&'static str, ErasureError> {
    if pending {
        return Ok("pending");
    }
    match stores
        .subjects
        .destroy(tenant, user)
        .await
        .map_err(store_down)?
    {
        // A hold placed on the person meanwhile: their key stays while it stands.
        Destroyed::Held => Err(ErasureError::Held),
        Destroyed::Destroyed | Destroyed::NoKey if legacy_records > 0 => {
            Ok("unreadable except legacyRecords")
        }
        Destroyed::Destroyed | Destroyed::NoKey => Ok("unreadable"),
    }
}

/// How many of the tenant's audit records name `user` in a personal field in clear (written
/// before people's keys existed).
async fn legacy(
    audit: &dyn countersign_domain::ports::AuditRecords,
    tenant: &TenantId,
    user: &UserId,
) -> Result<usize, StoreError> {
    use countersign_domain::audit_chain::PERSONAL_FIELDS;
    let trail = audit.audit_trail(tenant).await?;
    Ok(trail
        .records
        .iter()
        .filter_map(|r| serde_json::from_str::<serde_json::Value>(&r.changes).ok())
        .filter(|c| {
            PERSONAL_FIELDS
                .iter()
                .any(|f| c.get(*f).and_then(|v| v.as_str()) == Some(user.as_str()))
        })
        .count())
}

async fn sign_receipt(state: &crate::AdminState, erasure: &Erasure) -> Result<String, AdminError> {
    use countersign_domain::ports::SignerError;
    let mut claims = serde_json::to_value(erasure)
        .map_err(|e| AdminError::unavailable("the signing service")(Box::new(e)))?;
    claims["iss"] = serde_json::Value::String(state.issuer.clone());
    // V-6: the checkpoint key, never the action key.
    match sign_jws(
        state.checkpoint_signer.as_ref(),
        ERASURE_RECEIPT_TYPE,
        &claims,
    )
    .await
    {
        Ok(jws) => Ok(jws),
        Err(SignerError::NotConfigured) => Err(AdminError::SigningUnavailable),
        Err(e) => Err(AdminError::unavailable("the signing service")(Box::new(e))),
    }
}

/// finishes the erasures of `tenant` that waited (the purge calls it): each person's
/// conversations that can go now are purged; once none is left their key is destroyed
/// and the erasure recorded as finished (`subject.erasure_finished`). Returns how many
/// finished.
pub async fn finish_pending(
    conversations: &dyn ConversationStore,
    tenants: &dyn Tenants,
    keys: &dyn SubjectKeys,
    tenant: &Tenant,
    entry: impl Fn(&str, serde_json::Value) -> countersign_domain::ports::AuditEntry,
    now: Timestamp,
) -> Result<usize, StoreError> {
    let mut finished = 0;
    for user in &tenant.erasing {
        if tenant.holds.people.contains(user) {
            continue;
        }
        let (left, items) = purge_person(conversations, &tenant.id, user, now).await?;
        if !(left.unresolved.is_empty() && left.held.is_empty()) {
            continue;
        }
        if keys.destroy(&tenant.id, user).await? == Destroyed::Held {
            continue;
        }
        // The person's id is not written again: their key is gone.
        let record = entry(
            "subject.erasure_finished",
            serde_json::json!({"purged": left.purged.len(), "itemsRemoved": items}),
        );
        tenants
            .set_erasing(&tenant.id, user, false, &record)
            .await?;
        finished += 1;
    }
    Ok(finished)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use countersign_domain::ports::{Conversations as _, ProposalLock as _};
    use countersign_domain::proposal::ProposalState as S;
    use countersign_testkit::contract::Fixture;
    use countersign_testkit::{FakeSigner, MemorySecrets, MemoryStore, SeqIds, TestClock};
    use std::sync::Arc;

    async fn state() -> (crate::AdminState, Arc<MemoryStore>, Tenant) {
        let clock = Arc::new(TestClock::default());
        let ids = Arc::new(SeqIds::new(clock.clone()));
        let store = Arc::new(MemoryStore::default());
        let lang = countersign_domain::texts::Language::En;
        let t = crate::tenants::register(&*store, &*ids, &*clock, "E", lang)
            .await
            .unwrap();
        let state = crate::AdminState {
            stores: crate::state::AdminStores::split(store.clone(), store.clone())
                .with_subjects(Some(store.clone())),
            leases: store.clone(),
            sessions: store.clone(),
            secrets: Arc::new(MemorySecrets::default()),
            signer: Arc::new(FakeSigner::default()),
            checkpoint_signer: Arc::new(FakeSigner::default()),
            issuer: "https://support.example.com/mcp-actions".into(),
            url_policy: countersign_domain::config::UrlPolicy::default(),
            resolver: Arc::new(crate::resolve::SystemResolver),
            provider: Arc::new(countersign_testkit::ScriptedProvider::default()),
            ids,
            clock,
        };
        (state, store, t.tenant)
    }

    /// R-2 (bad input): an unknown person is a typed refusal that writes nothing; a held
    /// one is refused and keeps everything; a settled conversation is purged, its records
    /// written before people's keys are counted as legacy, and a replay finds nothing.
    #[tokio::test]
    async fn r2_erasure_refuses_the_unknown_and_the_held_and_counts_legacy_records() {
        let (state, store, tenant) = state().await;
        let f = Fixture::default();
        let case = f.open_case(&*store, &tenant.id).await;
        let (p, m) = f.proposal(&case, "act_e1");
        store.create_proposal(&p, &m).await.unwrap();
        let (from, to) = (S::PendingConfirmation, S::Cancelled);
        store
            .transition(&tenant.id, &case.id, &p.action_id, from, to, None)
            .await
            .unwrap();
        let nobody = UserId::parse("nobody").unwrap();
        assert!(matches!(
            erase(&state, &tenant, &nobody).await,
            Err(ErasureError::Unknown)
        ));
        let mut held = tenant.clone();
        held.holds.set(&Hold::Person(case.user.clone()), true);
        assert!(matches!(
            erase(&state, &held, &case.user).await,
            Err(ErasureError::Held)
        ));
        assert!(store.load(&tenant.id, &case.id).await.unwrap().is_some());
        let done = erase(&state, &tenant, &case.user).await.unwrap();
        assert_eq!(done.conversations.purged, vec![case.id.to_string()]);
        assert_eq!(done.legacy_records, 1, "the memory store seals nothing");
        assert_eq!(done.audit_personal_data, "unreadable except legacyRecords");
        assert!(!done.receipt.is_empty());
        assert!(store.load(&tenant.id, &case.id).await.unwrap().is_none());
        assert!(matches!(
            erase(&state, &tenant, &case.user).await,
            Err(ErasureError::Unknown)
        ));
    }
}
