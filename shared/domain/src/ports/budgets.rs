//! Per-tenant budgets (decision 0021) and one-at-a-time leases (V-7).

use super::store::StoreError;
use crate::ids::TenantId;
use crate::time::Timestamp;
use async_trait::async_trait;

/// Whether a tenant may spend one more unit of a budget now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Yes; the unit is spent.
    Admitted,
    /// No: the budget is spent until the window ends, in this many seconds.
    Limited {
        /// Seconds until the next window.
        retry_after_secs: u64,
    },
}

/// Per-tenant request budgets (decision 0021): one tenant cannot spend the capacity that
/// every tenant shares.
#[async_trait]
pub trait RateLimiter: Send + Sync {
    /// Spends one unit of `tenant`'s budget `bucket` (at most `per_minute` a minute).
    async fn take(
        &self,
        tenant: &TenantId,
        bucket: &str,
        per_minute: u32,
        now: Timestamp,
    ) -> Result<Admission, StoreError>;
}

/// Whether a tenant's one-at-a-time job may start now (V-7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    /// Yes: the lease is held until released, or until it expires.
    Held,
    /// Another job of that kind is in flight for the tenant; its lease ends at the latest
    /// in this many seconds.
    Busy {
        /// Seconds until the lease expires.
        retry_after_secs: u64,
    },
}

/// V-7: per-tenant leases, so that one tenant has at most one job of a kind in flight (a
/// certification run, an audit verification, a checkpoint) whatever it sends. A lease
/// expires on its own, so a holder that crashed frees it.
#[async_trait]
pub trait Leases: Send + Sync {
    /// Takes `tenant`'s lease `kind` for `owner` until `until`, unless another owner holds
    /// it unexpired at `now`.
    async fn acquire(
        &self,
        tenant: &TenantId,
        kind: &str,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<Lease, StoreError>;
    /// Gives the lease back, if `owner` still holds it.
    async fn release(&self, tenant: &TenantId, kind: &str, owner: &str) -> Result<(), StoreError>;
}
