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
    let job = state
        .stores
        .jobs
        .job(&tenant.id, id)
        .await
        .map_err(store_down)?;
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

/// What the erasure worker needs: the stores, the receipt's key and its issuer.
#[derive(Clone)]
pub struct Worker {
    /// The jobs and their queue.
    pub jobs: Arc<dyn ErasureJobs>,
    /// The conversations and the per-person index.
    pub conversations: Arc<dyn ConversationStore>,
    /// The tenants (holds, the erasing mark and its records).
    pub tenants: Arc<dyn Tenants>,
    /// The people's keys.
    pub subjects: Arc<dyn SubjectKeys>,
    /// The audit checkpoint key (V-6): receipts.
    pub checkpoint_signer: Arc<dyn ProofSigner>,
    /// The receipts' `iss`.
    pub issuer: String,
    /// Record ids.
    pub ids: Arc<dyn Ids>,
    /// The clock.
    pub clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker").finish_non_exhaustive()
    }
}

impl Worker {
    /// The worker over an admin state's stores and keys.
    #[must_use]
    pub fn of(state: &crate::AdminState) -> Self {
        Self {
            jobs: state.stores.jobs.clone(),
            conversations: state.stores.retention.clone(),
            tenants: state.stores.tenants.clone(),
            subjects: state.stores.subjects.clone(),
            checkpoint_signer: state.checkpoint_signer.clone(),
            issuer: state.issuer.clone(),
            ids: state.ids.clone(),
            clock: state.clock.clone(),
        }
    }
}

/// How much one worker run may do: until `until`, and at most `purges` purges.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// When to stop (a conversation in flight finishes).
    pub until: Instant,
    /// Purges left.
    pub purges: usize,
}

impl Budget {
    /// A budget of `for_` from now, with no count of purges.
    #[must_use]
    pub fn lasting(for_: std::time::Duration) -> Self {
        Self {
            until: Instant::now() + for_,
            purges: usize::MAX,
        }
    }

    fn spent(&self) -> bool {
        self.purges == 0 || Instant::now() >= self.until
    }
}

/// What one worker run did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerRun {
    /// The per-person index is complete (jobs run only then).
    pub index_ready: bool,
    /// Jobs done in this run.
    pub finished: usize,
    /// Jobs stopped part-way (the next run resumes them).
    pub stopped: usize,
    /// Jobs whose run failed (logged; they stay queued).
    pub failed: usize,
}

/// N-3: one run of the erasure worker: the per-person index's backfill first (until it
/// is complete no job runs: the index would miss conversations), then the queue, oldest
/// first, one job at a time, within `budget`.
pub async fn run_queued(w: &Worker, mut budget: Budget) -> Result<WorkerRun, StoreError> {
    let mut run = WorkerRun::default();
    loop {
        run.index_ready = w
            .conversations
            .backfill_person_index(BACKFILL_PAGES)
            .await?;
        if run.index_ready || budget.spent() {
            break;
        }
    }
    if !run.index_ready {
        return Ok(run);
    }
    for (tenant, id) in w.jobs.queued(QUEUE_READ).await? {
        if budget.spent() {
            break;
        }
        match run_job(w, &tenant, &id, &mut budget).await {
            Ok(true) => run.finished += 1,
            Ok(false) => run.stopped += 1,
            Err(e) => {
                tracing::warn!(error = %e, %tenant, job = %id, "an erasure job failed; it stays queued");
                run.failed += 1;
            }
        }
    }
    Ok(run)
}

/// Runs one job within `budget`: `true` once it is done.
async fn run_job(
    w: &Worker,
    tenant: &TenantId,
    id: &str,
    budget: &mut Budget,
) -> Result<bool, StoreError> {
    let Some(mut job) = w.jobs.job(tenant, id).await? else {
        return Ok(false);
    };
    let Some(tenant) = w.tenants.get_tenant(tenant).await? else {
        return end(w, job, serde_json::json!({"nothingStored": true})).await;
    };
    if job.status == JobStatus::Done {
        w.jobs.finish(&job).await?;
        return Ok(true);
    }
    if tenant.holds.people.contains(&job.person) {
        return end(w, job, serde_json::json!({"refused": "LEGAL_HOLD"})).await;
    }
    job.runs += 1;
    let first = w
        .conversations
        .person_conversations(&tenant.id, &job.person, None, PERSON_PAGE)
        .await?;
    let known = !first.cases.is_empty()
        || tenant.erasing.contains(&job.person)
        || w.subjects.has_key(&tenant.id, &job.person).await?;
    if !known {
        return end(w, job, serde_json::json!({"nothingStored": true})).await;
    }
    if !tenant.erasing.contains(&job.person) {
        // The record that the erasure began, before anything is removed: a run cut short
        // leaves it, and the purge's `finish_pending` knows the person is being erased.
        let record = entry(
            w,
            &job.requested_by,
            "subject.erasure_started",
            serde_json::json!({"person": job.person.as_str(), "jobId": job.id}),
        );
        saved(
            w.tenants
                .set_erasing(&tenant.id, &job.person, true, &record)
                .await,
        )?;
    }
    let Some(kept) = purge_within(w, &tenant.id, &mut job, first, budget).await? else {
        job.status = JobStatus::Running;
        w.jobs.save_progress(&job).await?;
        return Ok(false);
    };
    let erasure = erase_rest(w, &tenant, &job, &kept).await?;
    let outcome = serde_json::to_value(&erasure).unwrap_or_default();
    job.receipt = Some(erasure.receipt.clone()).filter(|r| !r.is_empty());
    end(w, job, outcome).await
}

/// The person's conversations, purged from the first page on within `budget`: what was
/// kept, or `None` when the budget ran out first (the progress is in `job`).
async fn purge_within(
    w: &Worker,
    tenant: &TenantId,
    job: &mut ErasureJob,
    mut page: PersonPage,
    budget: &mut Budget,
) -> Result<Option<ErasedConversations>, StoreError> {
    let mut kept = ErasedConversations::default();
    let now = w.clock.now();
    loop {
        for case in &page.cases {
            if budget.spent() {
                return Ok(None);
            }
            budget.purges = budget.purges.saturating_sub(1);
            let store = w.conversations.as_ref();
            match crate::retention::purge_one(store, tenant, case, None, now).await? {
                PurgeOutcome::Purged { items } => {
                    job.purged += 1;
                    job.items += items as u64;
                }
                PurgeOutcome::Unresolved(_) => kept.unresolved += 1,
                PurgeOutcome::Held => kept.held += 1,
                // Not asked for (an erasure purges whatever the activity).
                PurgeOutcome::Gone | PurgeOutcome::Active => {}
            }
        }
        let Some(next) = page.next else {
            break;
        };
        page = w
            .conversations
            .person_conversations(tenant, &job.person, Some(&next), PERSON_PAGE)
            .await?;
    }
    kept.purged = job.purged;
    Ok(Some(kept))
}

/// The end of an erasure whose conversations are purged (or kept for a reason): its
/// record, the erasing mark, the person's key and index, and the signed receipt.
async fn erase_rest(
    w: &Worker,
    tenant: &Tenant,
    job: &ErasureJob,
    kept: &ErasedConversations,
) -> Result<Erasure, StoreError> {
    let user = &job.person;
    let pending = kept.unresolved + kept.held > 0;
    let legacy_records = w.conversations.legacy_records(&tenant.id, user).await?;
    let record = entry(
        w,
        &job.requested_by,
        "subject.erased",
        serde_json::json!({
            "person": user.as_str(),
            "jobId": job.id,
            "purged": job.purged,
            "itemsRemoved": job.items,
            "unresolved": kept.unresolved,
            "held": kept.held,
            "pending": pending,
        }),
    );
    saved(
        w.tenants
            .set_erasing(&tenant.id, user, pending, &record)
            .await,
    )?;
    let audit_personal_data = if pending {
        "pending"
    } else {
        match w.subjects.destroy(&tenant.id, user).await? {
            // A hold placed on the person meanwhile: their key stays while it stands.
            Destroyed::Held => "kept: legal hold",
            Destroyed::Destroyed | Destroyed::NoKey if legacy_records > 0 => {
                "unreadable except legacyRecords"
            }
            Destroyed::Destroyed | Destroyed::NoKey => "unreadable",
        }
    };
    if !pending {
        w.conversations.forget_person(&tenant.id, user).await?;
    }
    let now = w.clock.now();
    let mut erasure = Erasure {
        erasure_id: job.id.clone(),
        tenant_id: tenant.id.to_string(),
        person_digest: person_digest(&tenant.id, user),
        erased_at: now.to_rfc3339(),
        conversations: kept.clone(),
        items_removed: job.items,
        legacy_records,
        audit_personal_data: audit_personal_data.to_owned(),
        backups: Backups {
            note: "DynamoDB point-in-time recovery may hold the removed items and the person's wrapped key until this time; a restore is an operator's act, never automatic. Processes that cached the person's key forget it within 5 minutes".into(),
            until: now.plus_seconds(BACKUP_DAYS * 86_400).to_rfc3339(),
        },
        receipt: String::new(),
    };
    erasure.receipt = sign_receipt(w, &erasure).await?;
    Ok(erasure)
}

/// Records `job` as done with `outcome` (and takes it off the queue): `Ok(true)`.
async fn end(
    w: &Worker,
    mut job: ErasureJob,
    outcome: serde_json::Value,
) -> Result<bool, StoreError> {
    job.status = JobStatus::Done;
    job.outcome = Some(outcome.to_string());
    w.jobs.finish(&job).await?;
    Ok(true)
}

fn entry(
    w: &Worker,
    actor: &str,
    action: &str,
    changes: serde_json::Value,
) -> countersign_domain::ports::AuditEntry {
    crate::audit::entry(w.ids.as_ref(), w.clock.as_ref(), actor, action, changes)
}

fn saved(outcome: Result<TransitionOutcome, StoreError>) -> Result<(), StoreError> {
    match outcome? {
        TransitionOutcome::Applied => Ok(()),
        TransitionOutcome::Conflict { .. } => Err(StoreError::Unavailable(
            "the tenant was not found while recording the erasure".into(),
        )),
    }
}

async fn sign_receipt(w: &Worker, erasure: &Erasure) -> Result<String, StoreError> {
    use countersign_domain::ports::SignerError;
    let mut claims =
        serde_json::to_value(erasure).map_err(|e| StoreError::Unavailable(Box::new(e)))?;
    claims["iss"] = serde_json::Value::String(w.issuer.clone());
    // V-6: the checkpoint key, never the action key.
    match sign_jws(w.checkpoint_signer.as_ref(), ERASURE_RECEIPT_TYPE, &claims).await {
        Ok(jws) => Ok(jws),
        // A deployment without a checkpoint key: the erasure stands, unsigned.
        Err(SignerError::NotConfigured) => Ok(String::new()),
        Err(e) => Err(StoreError::Unavailable(Box::new(e))),
    }
}

/// finishes the erasures of `tenant` that waited (the purge calls it), until
/// `until`: each person's conversations that can go now are purged; once none is left
/// their key is destroyed and the erasure recorded as finished
/// (`subject.erasure_finished`). The people are taken from a place that turns daily (the
/// run's cursor), so a person who keeps waiting never starves those after them. Returns
/// how many finished.
pub async fn finish_pending(
    conversations: &dyn ConversationStore,
    tenants: &dyn Tenants,
    keys: &dyn SubjectKeys,
    tenant: &Tenant,
    entry: impl Fn(&str, serde_json::Value) -> countersign_domain::ports::AuditEntry,
    now: Timestamp,
    until: Instant,
) -> Result<usize, StoreError> {
    let mut finished = 0;
    let mut people: Vec<&UserId> = tenant.erasing.iter().collect();
    if !people.is_empty() {
        let day = usize::try_from(now.unix_seconds().div_euclid(86_400)).unwrap_or(0);
        let first = day % people.len();
        people.rotate_left(first);
    }
    for user in people {
        if Instant::now() >= until {
            break;
        }
        if tenant.holds.people.contains(user) {
            continue;
        }
        let (left, items) = purge_person(conversations, &tenant.id, user, now).await?;
        if left.unresolved + left.held > 0 {
            continue;
        }
        if keys.destroy(&tenant.id, user).await? == Destroyed::Held {
            continue;
        }
        conversations.forget_person(&tenant.id, user).await?;
        // The person's id is not written again: their key is gone.
        let record = entry(
            "subject.erasure_finished",
            serde_json::json!({"purged": left.purged, "itemsRemoved": items}),
        );
        tenants
            .set_erasing(&tenant.id, user, false, &record)
            .await?;
        finished += 1;
    }
    Ok(finished)
}

/// Purges every conversation of `user` that can go now (through the per-person index).
async fn purge_person(
    store: &dyn ConversationStore,
    tenant: &TenantId,
    user: &UserId,
    now: Timestamp,
) -> Result<(ErasedConversations, u64), StoreError> {
    let mut out = ErasedConversations::default();
    let mut items = 0;
    let mut cursor: Option<String> = None;
    loop {
        let page = store
            .person_conversations(tenant, user, cursor.as_deref(), PERSON_PAGE)
            .await?;
        for case in &page.cases {
            match crate::retention::purge_one(store, tenant, case, None, now).await? {
                PurgeOutcome::Purged { items: n } => {
                    items += n as u64;
                    out.purged += 1;
                }
                PurgeOutcome::Unresolved(_) => out.unresolved += 1,
                PurgeOutcome::Held => out.held += 1,
                PurgeOutcome::Gone | PurgeOutcome::Active => {}
            }
        }
        match page.next {
            Some(n) => cursor = Some(n),
            None => return Ok((out, items)),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    /// These tests resolve no host.
    struct NoLookups;

    #[async_trait::async_trait]
    impl countersign_domain::ports::Resolver for NoLookups {
        async fn resolve(&self, _: &str, _: u16) -> std::io::Result<Vec<std::net::IpAddr>> {
            Err(std::io::Error::other("no host is resolved in these tests"))
        }
    }
    use countersign_domain::ports::{AuditRecords as _, Conversations as _, ProposalLock as _};
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
            resolver: Arc::new(NoLookups),
            provider: Arc::new(countersign_testkit::ScriptedProvider::default()),
            ids,
            clock,
        };
        (state, store, t.tenant)
    }

    /// A settled conversation of `tenant`'s person `user`.
    async fn settled(store: &MemoryStore, f: &Fixture, tenant: &TenantId, user: &str) {
        use countersign_domain::conversation::{Case, CaseStatus};
        let ulid = ulid::Ulid::new().to_string();
        let case = Case {
            id: countersign_domain::ids::CaseId::from_ulid_text(&ulid).unwrap(),
            tenant: tenant.clone(),
            user: UserId::parse(user).unwrap(),
            status: CaseStatus::Open,
            created_at: f.now(),
        };
        let lang = countersign_domain::texts::Language::En;
        store.create_case(&case, lang).await.unwrap();
        let (p, m) = f.proposal(&case, &format!("act_{}", ulid.to_lowercase()));
        store.create_proposal(&p, &m).await.unwrap();
        let (from, to) = (S::PendingConfirmation, S::Cancelled);
        store
            .transition(tenant, &case.id, &p.action_id, from, to, None)
            .await
            .unwrap();
    }

    fn worker(state: &crate::AdminState) -> Worker {
        Worker::of(state)
    }

    async fn view(state: &crate::AdminState, tenant: &Tenant, id: &str) -> ErasureJobView {
        status(state, tenant, id).await.unwrap().unwrap()
    }

    /// R-2, N-3: the request only records and queues (nothing is purged until the worker
    /// runs); asking again answers the same job; the worker purges the person's
    /// conversations, counts their legacy records and signs the receipt; a person never
    /// seen is a job done with `nothingStored` that wrote nothing; a held person is
    /// refused.
    #[tokio::test]
    async fn n3_r2_an_erasure_is_queued_then_carried_out_off_the_request() {
        use countersign_domain::ports::Retention as _;
        let (state, store, tenant) = state().await;
        let f = Fixture::default();
        settled(&store, &f, &tenant.id, "alice").await;
        let alice = UserId::parse("alice").unwrap();
        let job = request(&state, &tenant, &alice).await.unwrap();
        assert_eq!(job.status, JobStatus::Queued);
        let listed = store.retained(&tenant.id, None, 10).await.unwrap();
        assert_eq!(listed.items.len(), 1, "nothing purged on the request path");
        let again = request(&state, &tenant, &alice).await.unwrap();
        assert_eq!(again.id, job.id, "one job per person while it is queued");
        let run = run_queued(
            &worker(&state),
            Budget::lasting(std::time::Duration::from_secs(60)),
        )
        .await
        .unwrap();
        assert_eq!((run.index_ready, run.finished, run.stopped), (true, 1, 0));
        let done = view(&state, &tenant, &job.id).await;
        assert_eq!(done.status, "done");
        let e = done.erasure.expect("the erasure");
        assert_eq!(e.conversations.purged, 1);
        // The memory store seals nothing: `proposal.prepared` and the erasure's own
        // `subject.erasure_started` name the person in clear there.
        assert_eq!(e.legacy_records, 2);
        assert_eq!(e.audit_personal_data, "unreadable except legacyRecords");
        assert!(!e.receipt.is_empty());
        assert!(
            store
                .retained(&tenant.id, None, 10)
                .await
                .unwrap()
                .items
                .is_empty()
        );
        let nobody = UserId::parse("nobody").unwrap();
        let records = store.audit_trail(&tenant.id).await.unwrap().records.len();
        let unknown = request(&state, &tenant, &nobody).await.unwrap();
        run_queued(
            &worker(&state),
            Budget::lasting(std::time::Duration::from_secs(60)),
        )
        .await
        .unwrap();
        let unknown = view(&state, &tenant, &unknown.id).await;
        assert_eq!(unknown.nothing_stored, Some(true));
        assert_eq!(
            store.audit_trail(&tenant.id).await.unwrap().records.len(),
            records,
            "nothing written for someone never seen"
        );
        let mut held = tenant.clone();
        held.holds.set(&Hold::Person(alice.clone()), true);
        assert!(matches!(
            request(&state, &held, &alice).await,
            Err(ErasureError::Held)
        ));
    }

    /// N-3: a run out of budget stops part-way with a record (`subject.erasure_started`,
    /// the person marked as erasing, the job `running` with its progress) and the next
    /// run resumes where it stopped and finishes.
    #[tokio::test]
    async fn n3_a_partial_run_leaves_a_record_and_the_next_resumes() {
        let (state, store, tenant) = state().await;
        let f = Fixture::default();
        for _ in 0..3 {
            settled(&store, &f, &tenant.id, "bob").await;
        }
        let bob = UserId::parse("bob").unwrap();
        let job = request(&state, &tenant, &bob).await.unwrap();
        let short = Budget {
            purges: 1,
            ..Budget::lasting(std::time::Duration::from_secs(60))
        };
        let run = run_queued(&worker(&state), short).await.unwrap();
        assert_eq!((run.finished, run.stopped), (0, 1));
        let part = view(&state, &tenant, &job.id).await;
        assert_eq!(
            (part.status.as_str(), part.purged, part.runs),
            ("running", 1, 1)
        );
        let now = store.get_tenant(&tenant.id).await.unwrap().unwrap();
        assert!(now.erasing.contains(&bob), "marked as erasing");
        let trail = store.audit_trail(&tenant.id).await.unwrap();
        assert!(
            trail
                .records
                .iter()
                .any(|r| r.action == "subject.erasure_started")
        );
        let run = run_queued(
            &worker(&state),
            Budget::lasting(std::time::Duration::from_secs(60)),
        )
        .await
        .unwrap();
        assert_eq!(run.finished, 1);
        let done = view(&state, &tenant, &job.id).await;
        assert_eq!(
            (done.status.as_str(), done.purged, done.runs),
            ("done", 3, 2)
        );
        assert_eq!(done.erasure.unwrap().conversations.purged, 3);
        let now = store.get_tenant(&tenant.id).await.unwrap().unwrap();
        assert!(!now.erasing.contains(&bob));
    }

    /// N-3: a tenant may queue only so many erasures; more are refused (429 `BUSY`) and
    /// another tenant's are not.
    #[tokio::test]
    async fn n3_erasures_are_capped_per_tenant() {
        let (state, store, tenant) = state().await;
        for i in 0..QUEUED_PER_TENANT {
            let who = UserId::parse(format!("p{i}")).unwrap();
            request(&state, &tenant, &who).await.unwrap();
        }
        let one_more = UserId::parse("one-more").unwrap();
        assert!(matches!(
            request(&state, &tenant, &one_more).await,
            Err(ErasureError::Admin(AdminError::QueueFull {
                what: "erasure",
                ..
            }))
        ));
        let lang = countersign_domain::texts::Language::En;
        let other = crate::tenants::register(&*store, &*state.ids, &*state.clock, "O", lang)
            .await
            .unwrap();
        assert!(request(&state, &other.tenant, &one_more).await.is_ok());
    }
}
