//! R-2, R-3 (seed 001 §6, decision 0053): legal holds, and the erasure of a person on
//! the tenant's request — N-3 (decision 0062): recorded and queued by the request,
//! carried out by the worker (`run_queued`) off the request path, resumably.
//!
//! An erasure purges every conversation of the person now (an unresolved proposal's or a
//! held conversation is reported and kept: the person is marked as erasing and the purge
//! finishes them once they can go), writes a `subject.erased` record, and — once nothing
//! of theirs is left — destroys their key, after which the personal fields of their audit
//! records can no longer be opened while every chain and checkpoint still verifies. The
//! tenant gets a receipt signed with the checkpoint key. A held person is not erased.

use crate::state::{AdminError, store_down};
use countersign_domain::audit_chain::{ERASURE_RECEIPT_TYPE, sign_jws};
use countersign_domain::ids::{TenantId, UserId};
use countersign_domain::ports::{
    Clock, ConversationStore, Destroyed, Enqueued, ErasureJob, ErasureJobs, Ids, JobStatus,
    PersonPage, ProofSigner, PurgeOutcome, StoreError, SubjectKeys, Tenant, Tenants,
    TransitionOutcome,
};
use countersign_domain::retention::Hold;
use countersign_domain::time::Timestamp;
use serde::Serialize;
use std::sync::Arc;
use std::time::Instant;

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

/// N-3: at most this many erasures queued per tenant; more are refused (429) until the
/// worker catches up.
pub const QUEUED_PER_TENANT: usize = 20;
/// A person's conversations read per page.
const PERSON_PAGE: usize = 25;
/// Queue entries a worker run reads.
const QUEUE_READ: usize = 100;
/// Backfill pages between checks of the deadline.
const BACKFILL_PAGES: usize = 4;

/// What happened to a person's conversations (counts: the stored outcome names none of
/// them, N-2).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErasedConversations {
    /// Purged, every item of each (over every run of the job).
    pub purged: u64,
    /// Kept for now: a proposal in them is pending, executing or unknown. They are purged
    /// (and the erasure finished) once it is resolved; no reconciliation is started.
    pub unresolved: u64,
    /// Kept: a legal hold is on the conversation. Purged once it is lifted.
    pub held: u64,
}

/// An erasure's outcome (and the receipt's claims, with `iss` and `typ` added).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Erasure {
    /// The erasure's id (its job's id).
    pub erasure_id: String,
    /// The tenant.
    pub tenant_id: String,
    /// The person, as a commitment: the hex SHA-256 of `countersign erasure`, the tenant
    /// id and the person's id as the tenant names them, one per line (see
    /// [`person_digest`]). The receipt never names them in clear, so nothing kept after
    /// the erasure does; the tenant recomputes it to match the receipt to the person.
    pub person_digest: String,
    /// RFC 3339: when the erasure was done.
    pub erased_at: String,
    /// The person's conversations.
    pub conversations: ErasedConversations,
    /// Items removed from the table.
    pub items_removed: u64,
    /// The personal fields of the person's audit records: `unreadable` (their key is
    /// destroyed; the records and the chain stay and verify), `unreadable except
    /// legacyRecords` (those stay in clear), `pending` (the key is destroyed once the
    /// kept conversations are purged), or `kept: legal hold` (a hold on the person was
    /// placed while the erasure ran: their key stays while it stands).
    pub audit_personal_data: String,
    /// Audit records written before people's keys existed (decision 0053) that name the
    /// person in clear: they stay as they were chained (rewriting them would break the
    /// chain and every checkpoint over it).
    pub legacy_records: usize,
    /// What backups may still hold, and until when.
    pub backups: Backups,
    /// Compact RS256 JWS of these claims (`typ: countersign-erasure-receipt+jwt`), signed
    /// with the audit checkpoint key, verifiable with the audit keys set. Keep it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub receipt: String,
}

/// the backups' part of a receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Backups {
    /// What they may hold.
    pub note: String,
    /// RFC 3339: after this, no backup holds anything removed by this erasure.
    pub until: String,
}

/// N-3: an erasure job as the tenant reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErasureJobView {
    /// The job's id (also the erasure's id).
    pub job_id: String,
    /// `queued`, `running` (a run stopped part-way; the next resumes it) or `done`.
    pub status: String,
    /// RFC 3339.
    pub requested_at: String,
    /// Conversations purged so far.
    pub purged: u64,
    /// Items removed so far.
    pub items_removed: u64,
    /// Worker runs that worked on it.
    pub runs: u32,
    /// Once done: `true` when nothing was stored of the person (unknown here, or erased
    /// already): nothing was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nothing_stored: Option<bool>,
    /// Once done: why it was refused (`LEGAL_HOLD`: a hold on the person).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// Once done: the erasure, its receipt included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub erasure: Option<Erasure>,
}

impl From<&ErasureJob> for ErasureJobView {
    fn from(job: &ErasureJob) -> Self {
        let outcome: Option<serde_json::Value> = job
            .outcome
            .as_deref()
            .and_then(|o| serde_json::from_str(o).ok());
        let field = |k: &str| outcome.as_ref().and_then(|o| o.get(k).cloned());
        Self {
            job_id: job.id.clone(),
            status: job.status.as_str().to_owned(),
            requested_at: job.requested_at.to_rfc3339(),
            purged: job.purged,
            items_removed: job.items,
            runs: job.runs,
            nothing_stored: field("nothingStored").and_then(|v| v.as_bool()),
            refused: field("refused").and_then(|v| v.as_str().map(str::to_owned)),
            erasure: outcome
                .filter(|o| o.get("erasureId").is_some())
                .and_then(|o| serde_json::from_value(o).ok()),
        }
    }
}

/// Why an erasure was refused.
#[derive(Debug, thiserror::Error)]
pub enum ErasureError {
    /// A legal hold is on the person.
    #[error("a legal hold is on this person; lift it before erasing them")]
    Held,
    /// Anything else.
    #[error(transparent)]
    Admin(#[from] AdminError),
}

/// N-3: records and queues the erasure of `user`; the worker carries it out. A job
/// for the same person already queued or running is answered instead of a second.
pub async fn request(
    state: &crate::AdminState,
    tenant: &Tenant,
    user: &UserId,
) -> Result<ErasureJob, ErasureError> {
    if tenant.holds.people.contains(user) {
        return Err(ErasureError::Held);
    }
    let job = ErasureJob {
        id: state.ids.audit_id().to_string(),
        tenant: tenant.id.clone(),
        person: user.clone(),
        requested_by: crate::audit::admin_key_actor(&tenant.admin_key_hash),
        requested_at: state.clock.now(),
        status: JobStatus::Queued,
        purged: 0,
        items: 0,
        runs: 0,
        outcome: None,
        receipt: None,
    };
    let jobs = &state.stores.jobs;
    match jobs
        .enqueue(&job, QUEUED_PER_TENANT)
        .await
        .map_err(store_down)?
    {
        Enqueued::Queued => Ok(job),
        Enqueued::Already(id) => jobs
            .job(&tenant.id, &id)
            .await
            .map_err(store_down)?
            .ok_or_else(|| store_down(StoreError::Unavailable("the job moved".into())).into()),
        Enqueued::Full => Err(AdminError::QueueFull {
            what: "erasure",
            retry_after_secs: 60,
        }
        .into()),
    }
}

/// N-3: a job of `tenant`, by id.
pub async fn status(
    state: &crate::AdminState,
    tenant: &Tenant,
    id: &str,
) -> Result<Option<ErasureJobView>, AdminError> {
    let job = state.stores.jobs.job(&tenant.id, id).await?;
    Ok(job.as_ref().map(ErasureJobView::from))
}

/// N-2, N-3: how a receipt names the person it erased (hex SHA-256 of
/// `countersign erasure\n<tenant>\n<person>`).
#[must_use]
pub fn person_digest(tenant: &TenantId, user: &UserId) -> String {
    countersign_domain::hash::Sha256Hex::digest(format!("countersign erasure\n{tenant}\n{user}"))
        .as_str()
        .to_owned()
}

mod worker;
pub use worker::{Budget, Worker, WorkerRun, finish_pending, run_queued};

#[cfg(test)]
mod tests;
