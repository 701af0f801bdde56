//! Audit records (issue 5): who changed what. The actor is the admin key's fingerprint
//! (the first 16 hex digits of its SHA-256, which is already all the store keeps) or the
//! operator; the changes name fields and carry non-secret values only.

use countersign_domain::hash::Sha256Hex;
use countersign_domain::ports::{AuditEntry, Clock, Ids};
use serde_json::Value;

/// The operator CLI as an actor.
pub const OPERATOR: &str = "operator";

/// `adminKey:<16 hex digits>`: identifies a key without revealing it (2^-256 of it is
/// known from a 64-bit prefix of a hash of 256 random bits: nothing usable).
pub fn admin_key_actor(hash: &Sha256Hex) -> String {
    let fingerprint: String = hash.as_str().chars().take(16).collect();
    format!("adminKey:{fingerprint}")
}

/// A new record, stamped now.
pub fn entry(
    ids: &dyn Ids,
    clock: &dyn Clock,
    actor: impl Into<String>,
    action: &str,
    changes: Value,
) -> AuditEntry {
    AuditEntry {
        id: ids.audit_id(),
        at: clock.now(),
        actor: actor.into(),
        action: action.to_owned(),
        changes,
    }
}

/// A record of a change made with this tenant's current admin key.
pub fn by_admin(
    state: &crate::AdminState,
    tenant: &countersign_domain::ports::Tenant,
    action: &str,
    changes: Value,
) -> AuditEntry {
    entry(
        state.ids.as_ref(),
        state.clock.as_ref(),
        admin_key_actor(&tenant.admin_key_hash),
        action,
        changes,
    )
}
