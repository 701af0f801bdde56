//! V-7: a tenant's long jobs run one at a time (a certification run, an audit
//! verification, a checkpoint), and at most [`PLATFORM_SLOTS`] of each kind run at once
//! across every tenant, so that no administrator — nor many of them together — can take
//! the capacity every tenant's chat shares, whatever they send.

use crate::state::{AdminError, AdminState};
use countersign_domain::ids::TenantId;
use countersign_domain::ports::Lease;
use std::future::Future;

/// Jobs of one kind that may run at once across all tenants: the messages function's
/// reserved concurrency (which serves certification runs and checkpoints too) keeps the
/// rest for chat.
pub const PLATFORM_SLOTS: usize = 4;

/// The pseudo-tenant holding the cross-tenant slots (a ULID of time zero: never a
/// registered tenant's).
pub fn platform() -> Option<TenantId> {
    TenantId::from_ulid_text("00000000000000000000000000").ok()
}

/// The name of cross-tenant slot `i` for jobs `what`.
pub fn slot(what: &str, i: usize) -> String {
    format!("{what} slot {i}")
}

/// Runs `job` holding `tenant`'s lease `what` for at most `hold_secs` (longer than the
/// job can take: the lease frees itself then if the process died). Another job of the
/// same kind for the same tenant meanwhile is [`AdminError::Busy`].
pub(crate) async fn one_at_a_time<T>(
    state: &AdminState,
    tenant: &TenantId,
    what: &'static str,
    hold_secs: i64,
    job: impl Future<Output = Result<T, AdminError>>,
) -> Result<T, AdminError> {
    let owner = state.ids.audit_id().to_string();
    let now = state.clock.now();
    let lease = state
        .leases
        .acquire(tenant, what, &owner, now, now.plus_seconds(hold_secs))
        .await?;
    if let Lease::Busy { retry_after_secs } = lease {
        return Err(AdminError::Busy {
            what,
            retry_after_secs,
        });
    }
    let slot = match platform_slot(state, what, &owner, hold_secs).await {
        Ok(slot) => slot,
        Err(e) => {
            give_back(state, tenant, what, &owner).await;
            return Err(e);
        }
    };
    let out = job.await;
    if let (Some(platform), Some(slot)) = (platform(), slot) {
        give_back(state, &platform, &slot, &owner).await;
    }
    give_back(state, tenant, what, &owner).await;
    out
}

/// One of the [`PLATFORM_SLOTS`] cross-tenant slots for `what`, or `Busy` with the
/// shortest wait when all are held.
async fn platform_slot(
    state: &AdminState,
    what: &'static str,
    owner: &str,
    hold_secs: i64,
) -> Result<Option<String>, AdminError> {
    let Some(platform) = platform() else {
        return Ok(None);
    };
    let now = state.clock.now();
    let mut wait = u64::MAX;
    for i in 0..PLATFORM_SLOTS {
        let name = slot(what, i);
        match state
            .leases
            .acquire(&platform, &name, owner, now, now.plus_seconds(hold_secs))
            .await?
        {
            Lease::Held => return Ok(Some(name)),
            Lease::Busy { retry_after_secs } => wait = wait.min(retry_after_secs),
        }
    }
    tracing::info!(what, "V-7: every platform slot is busy");
    Err(AdminError::PlatformBusy {
        what,
        retry_after_secs: wait,
    })
}

async fn give_back(state: &AdminState, tenant: &TenantId, what: &str, owner: &str) {
    if let Err(e) = state.leases.release(tenant, what, owner).await {
        // It expires on its own; the next job waits at most until then.
        tracing::warn!(error = %e, what, "could not give a lease back");
    }
}
