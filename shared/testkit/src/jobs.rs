//! N-3 in memory: the erasure jobs and their queue, as the DynamoDB store keeps them.

use crate::MemoryStore;
use async_trait::async_trait;
use countersign_domain::ids::{TenantId, UserId};
use countersign_domain::ports::{Enqueued, ErasureJob, ErasureJobs, JobStatus, StoreError};
use std::collections::BTreeMap;
use std::sync::PoisonError;

/// The jobs, and the queue: (tenant, person) → job id.
#[derive(Debug, Default)]
pub(crate) struct Jobs {
    jobs: BTreeMap<(TenantId, String), ErasureJob>,
    queue: BTreeMap<(TenantId, UserId), String>,
}

#[async_trait]
impl ErasureJobs for MemoryStore {
    async fn enqueue(&self, job: &ErasureJob, cap: usize) -> Result<Enqueued, StoreError> {
        let mut j = self.jobs.lock().unwrap_or_else(PoisonError::into_inner);
        let k = (job.tenant.clone(), job.person.clone());
        if let Some(id) = j.queue.get(&k) {
            return Ok(Enqueued::Already(id.clone()));
        }
        if j.queue.keys().filter(|(t, _)| t == &job.tenant).count() >= cap {
            return Ok(Enqueued::Full);
        }
        j.queue.insert(k, job.id.clone());
        j.jobs
            .insert((job.tenant.clone(), job.id.clone()), job.clone());
        Ok(Enqueued::Queued)
    }

    async fn job(&self, tenant: &TenantId, id: &str) -> Result<Option<ErasureJob>, StoreError> {
        let j = self.jobs.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(j.jobs.get(&(tenant.clone(), id.to_owned())).cloned())
    }

    async fn queued(&self, limit: usize) -> Result<Vec<(TenantId, String)>, StoreError> {
        let j = self.jobs.lock().unwrap_or_else(PoisonError::into_inner);
        let mut q: Vec<_> = j
            .queue
            .iter()
            .map(|((t, _), id)| (id.clone(), t.clone()))
            .collect();
        q.sort();
        Ok(q.into_iter().take(limit).map(|(id, t)| (t, id)).collect())
    }

    async fn save_progress(&self, job: &ErasureJob) -> Result<(), StoreError> {
        let mut j = self.jobs.lock().unwrap_or_else(PoisonError::into_inner);
        j.jobs
            .insert((job.tenant.clone(), job.id.clone()), job.clone());
        Ok(())
    }

    async fn finish(&self, job: &ErasureJob) -> Result<(), StoreError> {
        let mut j = self.jobs.lock().unwrap_or_else(PoisonError::into_inner);
        let mut done = job.clone();
        done.status = JobStatus::Done;
        j.jobs.insert((job.tenant.clone(), job.id.clone()), done);
        j.queue.remove(&(job.tenant.clone(), job.person.clone()));
        Ok(())
    }
}
