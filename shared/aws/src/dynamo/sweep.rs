//! C-8's sweep after an action-settings change (decision 0042).

use super::*;

impl DynamoStore {
    /// C-8's sweep (issue 27): bounded and honest. The settings already in force are what
    /// stops an old proposal from running (the execution reads them after the confirm
    /// write); the sweep tells each person, cancelling their pending proposal with a
    /// notice, [`SWEEP_CONCURRENCY`] at a time, for at most its budget ([`SWEEP_BUDGET`]). A
    /// registration is deleted only once its proposal is no longer pending; whatever is
    /// left is reported (`Unavailable`, the API's `SAVED_UNFINISHED`) and finished by the
    /// next save, or ends by itself when the proposal expires (within 5 minutes, A-14).
    pub(super) async fn sweep(
        &self,
        tenant: &TenantId,
        keep: Option<(u64, &str)>,
        notice: &(dyn for<'c> Fn(&'c CaseId, Language) -> NewMessage + Send + Sync),
    ) -> Result<usize, StoreError> {
        use futures::StreamExt as _;
        let started = std::time::Instant::now();
        let live = self.live_registrations(tenant, keep).await?;
        let mut ended = Vec::new();
        let outcomes: Vec<_> = futures::stream::iter(live)
            .map(|r| async move {
                if started.elapsed() >= self.sweep_budget {
                    return (r, None);
                }
                let message = notice(&r.case, r.lang);
                let (from, to) = (ProposalState::PendingConfirmation, ProposalState::Cancelled);
                let outcome = self
                    .transition(tenant, &r.case, &r.action, from, to, Some(&message))
                    .await;
                (r, Some(outcome))
            })
            .buffer_unordered(SWEEP_CONCURRENCY)
            .collect()
            .await;
        let (mut cancelled, mut left, mut cause) = (0, 0, None);
        for (r, outcome) in outcomes {
            match outcome {
                Some(Ok(TransitionOutcome::Applied)) => {
                    cancelled += 1;
                    ended.push((r.pk, r.action));
                }
                // Already past pending: nothing left to cancel.
                Some(Ok(TransitionOutcome::Conflict { current: Some(st) }))
                    if st != ProposalState::PendingConfirmation =>
                {
                    ended.push((r.pk, r.action));
                }
                // Still pending, or not known (every race lost): its registration stays.
                Some(Ok(TransitionOutcome::Conflict { .. })) => left += 1,
                Some(Err(e)) => {
                    left += 1;
                    cause.get_or_insert(e);
                }
                None => left += 1,
            }
        }
        // The deletions are bounded too (a few seconds past the cancellations' budget, well
        // inside the API's 29 s): a registration left behind belongs to a proposal that is
        // no longer pending, which the next sweep finds settled and deletes.
        let deadline = self.sweep_budget + DELETE_GRACE;
        self.delete_registrations(&ended, started, deadline).await?;
        if left > 0 {
            let why = cause.map_or_else(|| "out of time".to_owned(), |e| e.to_string());
            return Err(StoreError::Unavailable(
                format!("{left} pending proposals not cancelled yet ({why}); {cancelled} were")
                    .into(),
            ));
        }
        Ok(cancelled)
    }
}

impl DynamoStore {
    /// The registrations of proposals prepared under other settings than `keep` and not
    /// yet expired, read within [`READ_BUDGET`].
    async fn live_registrations(
        &self,
        tenant: &TenantId,
        keep: Option<(u64, &str)>,
    ) -> Result<Vec<Registration>, StoreError> {
        // Consistent: every proposal whose creation committed before this call is here
        // (a proposal created after it was fenced by its own condition on the settings).
        let now = epoch_now();
        // The read is inside the budget too: a tenant with more registrations than one
        // pass can read gets the same honest answer, never a gateway timeout.
        let read = tokio::time::timeout(READ_BUDGET, self.index_items(tenant, PENDING_PREFIX));
        let Ok(items) = read.await else {
            return Err(StoreError::Unavailable(
                "the pending proposals could not all be read within the sweep's budget".into(),
            ));
        };
        let mut live = Vec::new();
        for item in items? {
            let r = registration_from(&item)?;
            if keep.is_some_and(|(v, sv)| r.config_version == v && r.secret_version == sv) {
                continue;
            }
            // An expired proposal has nothing to cancel and its registration carries a
            // TTL: it is skipped, not deleted (issue 27 measured 10,000 of them: deleting
            // each cost more than the pass's whole budget on the emulator).
            if r.expires > now {
                live.push(r);
            }
        }
        Ok(live)
    }

    /// Deletes the registrations of `actions` (each with the partition it was read from),
    /// [`SWEEP_CONCURRENCY`] at a time, until `deadline` after `started`.
    async fn delete_registrations(
        &self,
        actions: &[(String, ActionId)],
        started: std::time::Instant,
        deadline: std::time::Duration,
    ) -> Result<(), StoreError> {
        use futures::{StreamExt as _, TryStreamExt as _};
        futures::stream::iter(actions.iter().cloned())
            .map(|(pk, action)| async move {
                if started.elapsed() >= deadline {
                    return Ok(());
                }
                let sk = format!("{PENDING_PREFIX}{action}");
                self.client
                    .delete_item()
                    .table_name(&self.table)
                    .set_key(Some(key(pk, sk)))
                    .send()
                    .await
                    .map(drop)
                    .map_err(unavailable)
            })
            .buffer_unordered(SWEEP_CONCURRENCY)
            .try_collect()
            .await
    }
}

/// How many cancellations (or deletions) of one C-8 sweep run at once: each is one write
/// to its own conversation, so they never contend with each other.
pub(super) const SWEEP_CONCURRENCY: usize = 16;
/// How long a C-8 sweep cancels before it reports what is left: well inside the admin
/// API's 29 s.
pub(super) const SWEEP_BUDGET: std::time::Duration = std::time::Duration::from_secs(15);
/// How long a C-8 sweep may spend reading the registrations (inside [`SWEEP_BUDGET`]: on
/// DynamoDB 10,000 registrations are about 3 MB, one or two pages per partition).
const READ_BUDGET: std::time::Duration = std::time::Duration::from_secs(10);
/// How long past [`SWEEP_BUDGET`] a sweep may go on deleting the registrations of the
/// proposals it settled.
const DELETE_GRACE: std::time::Duration = std::time::Duration::from_secs(5);
