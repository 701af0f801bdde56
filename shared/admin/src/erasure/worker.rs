//! N-3: the erasure worker — carries out queued erasures off the request path, within a
//! budget, resumably.

use super::*;

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

countersign_domain::debug_showing!(Worker {});

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
    // F-2: the person's passkeys for this tenant go with them, whatever else is kept (a
    // passkey is a way in, never evidence).
    let passkeys = w.conversations.forget_passkeys(&tenant.id, user).await?;
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
            "passkeysRemoved": passkeys,
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
