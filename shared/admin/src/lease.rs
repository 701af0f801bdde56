//! V-7: a tenant's long jobs run one at a time (a certification run, an audit
//! verification, a checkpoint), so that one tenant's administrator cannot take the
//! capacity every tenant's chat shares, whatever they send.

use crate::state::{AdminError, AdminState, store_down};
use countersign_domain::ids::TenantId;
use countersign_domain::ports::Lease;
use std::future::Future;

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
        .await
        .map_err(store_down)?;
    if let Lease::Busy { retry_after_secs } = lease {
        return Err(AdminError::Busy {
            what,
            retry_after_secs,
        });
    }
    let out = job.await;
    if let Err(e) = state.leases.release(tenant, what, &owner).await {
        // It expires on its own; the next job waits at most until then.
        tracing::warn!(error = %e, what, "could not give a lease back");
    }
    out
}
