//! N-3 (decision 0062): erasure as a bounded job. The tenant's request is recorded and
//! queued; a scheduled worker carries it out off the request path, resumably; its status
//! and, once done, its receipt are read back by id. A person's conversations and the
//! audit records that name them in clear are found through a per-person index, so a job
//! for someone never seen costs a fixed handful of reads.

use super::store::StoreError;
use crate::ids::{CaseId, TenantId, UserId};
use crate::time::Timestamp;
use async_trait::async_trait;

/// Where a job stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobStatus {
    /// Recorded and queued; no run has started it.
    Queued,
    /// A run started it and stopped before the end (out of time, or the store failed):
    /// the next run resumes it. What it purged so far is in its progress.
    Running,
    /// Done: its outcome and receipt are kept (the person's id no longer is, but in them).
    Done,
}

impl JobStatus {
    /// The stored and published form.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Running => "running",
            Self::Done => "done",
        }
    }

    /// The stored form read back.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "queued" => Some(Self::Queued),
            "running" => Some(Self::Running),
            "done" => Some(Self::Done),
            _ => None,
        }
    }
}

/// An erasure job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErasureJob {
    /// Its id (a ULID).
    pub id: String,
    /// The tenant.
    pub tenant: TenantId,
    /// The person, as the tenant names them.
    pub person: UserId,
    /// Who asked (the audit actor: the admin key's name).
    pub requested_by: String,
    /// When.
    pub requested_at: Timestamp,
    /// Where it stands.
    pub status: JobStatus,
    /// Conversations purged so far, over every run.
    pub purged: u64,
    /// Items removed with them.
    pub items: u64,
    /// Runs that worked on it.
    pub runs: u32,
    /// Once done: the outcome (JSON, the receipt's claims).
    pub outcome: Option<String>,
    /// Once done: the signed receipt (compact JWS), when one was made.
    pub receipt: Option<String>,
}

/// What queuing a job did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Enqueued {
    /// Queued as asked.
    Queued,
    /// A job for this person is queued or running already: this is its id.
    Already(String),
    /// The tenant has `cap` jobs queued already; nothing was recorded.
    Full,
}

/// One page of a person's conversations (from the per-person index).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PersonPage {
    /// Their conversations.
    pub cases: Vec<CaseId>,
    /// Where the next page starts; `None` after the last.
    pub next: Option<String>,
}

/// The per-person index (N-3): written with each conversation, and for the audit records
/// that named a person in clear before people's keys existed (decision 0053) by a
/// resumable backfill.
#[async_trait]
pub trait PersonIndex: Send + Sync {
    /// A page of at most about `limit` of `user`'s conversations of `tenant`.
    async fn person_conversations(
        &self,
        tenant: &TenantId,
        user: &UserId,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<PersonPage, StoreError>;

    /// How many audit records of `tenant` name `user` in clear (a query over the person's
    /// own index entries).
    async fn legacy_records(&self, tenant: &TenantId, user: &UserId) -> Result<usize, StoreError>;

    /// Removes `user`'s remaining index entries (after their erasure: what they pointed to
    /// is gone or unreadable).
    async fn forget_person(&self, tenant: &TenantId, user: &UserId) -> Result<(), StoreError>;

    /// Carries the backfill on for about `pages` pages from where it stopped; `true` once
    /// it is complete (and from then on at once). An erasure relies on the index only
    /// then.
    async fn backfill_person_index(&self, pages: usize) -> Result<bool, StoreError>;
}

/// The jobs' store.
#[async_trait]
pub trait ErasureJobs: Send + Sync {
    /// Records and queues `job`, unless one for the same person is queued or running, or
    /// the tenant has `cap` queued.
    async fn enqueue(&self, job: &ErasureJob, cap: usize) -> Result<Enqueued, StoreError>;

    /// A job of `tenant`, by id.
    async fn job(&self, tenant: &TenantId, id: &str) -> Result<Option<ErasureJob>, StoreError>;

    /// The queue, oldest first: at most `limit` (tenant, job id).
    async fn queued(&self, limit: usize) -> Result<Vec<(TenantId, String)>, StoreError>;

    /// Stores the job's status and progress (a run's record as it goes).
    async fn save_progress(&self, job: &ErasureJob) -> Result<(), StoreError>;

    /// Stores the job as done with its outcome and receipt, forgets the person's id in it
    /// (the outcome and receipt name them, as the tenant asked) and takes it off the queue.
    async fn finish(&self, job: &ErasureJob) -> Result<(), StoreError>;
}
