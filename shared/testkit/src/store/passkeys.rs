//! `Passkeys` (F-2): each person's passkeys, with the adapter's conditions.

use super::*;
use countersign_domain::ids::UserId;
use countersign_domain::ports::{Passkey, Passkeys};

impl MemoryStore {
    /// A person's passkeys as stored now (tests).
    pub fn passkeys_of(&self, who: &countersign_domain::conversation::Principal) -> Vec<Passkey> {
        self.lock()
            .passkeys
            .get(&(who.tenant.clone(), who.user.clone()))
            .cloned()
            .unwrap_or_default()
    }
}

#[async_trait]
impl Passkeys for MemoryStore {
    async fn add_passkey(
        &self,
        tenant: &TenantId,
        user: &UserId,
        passkey: &Passkey,
        audit: &AuditEntry,
    ) -> Result<bool, StoreError> {
        yield_now().await;
        self.run(
            "add_passkey",
            || false,
            |s| {
                let mine = s
                    .passkeys
                    .entry((tenant.clone(), user.clone()))
                    .or_default();
                if mine.iter().any(|p| p.id == passkey.id) {
                    return Ok(false);
                }
                mine.push(passkey.clone());
                s.audit(tenant, audit);
                Ok(true)
            },
        )
    }

    async fn passkeys(&self, tenant: &TenantId, user: &UserId) -> Result<Vec<Passkey>, StoreError> {
        yield_now().await;
        self.read("passkeys", |s| {
            s.passkeys
                .get(&(tenant.clone(), user.clone()))
                .cloned()
                .unwrap_or_default()
        })
    }

    async fn record_passkey_use(
        &self,
        tenant: &TenantId,
        user: &UserId,
        id: &str,
        from: u32,
        to: u32,
        at: Timestamp,
    ) -> Result<bool, StoreError> {
        yield_now().await;
        self.run(
            "record_passkey_use",
            || false,
            |s| {
                let found = s
                    .passkeys
                    .get_mut(&(tenant.clone(), user.clone()))
                    .and_then(|mine| mine.iter_mut().find(|p| p.id == id))
                    .filter(|p| p.sign_count == from);
                Ok(found.is_some_and(|p| {
                    p.sign_count = to;
                    p.last_used_at = Some(at);
                    true
                }))
            },
        )
    }

    async fn revoke_passkey(
        &self,
        tenant: &TenantId,
        user: &UserId,
        id: &str,
        audit: &AuditEntry,
    ) -> Result<bool, StoreError> {
        yield_now().await;
        self.run(
            "revoke_passkey",
            || false,
            |s| {
                let Some(mine) = s.passkeys.get_mut(&(tenant.clone(), user.clone())) else {
                    return Ok(false);
                };
                let before = mine.len();
                mine.retain(|p| p.id != id);
                let revoked = mine.len() < before;
                if revoked {
                    s.audit(tenant, audit);
                }
                Ok(revoked)
            },
        )
    }

    async fn passkey_holders(&self, tenant: &TenantId) -> Result<usize, StoreError> {
        yield_now().await;
        self.read("passkey_holders", |s| {
            s.passkeys
                .iter()
                .filter(|((t, _), keys)| t == tenant && !keys.is_empty())
                .count()
        })
    }

    async fn forget_passkeys(&self, tenant: &TenantId, user: &UserId) -> Result<usize, StoreError> {
        yield_now().await;
        self.run(
            "forget_passkeys",
            || 0,
            |s| {
                Ok(s.passkeys
                    .remove(&(tenant.clone(), user.clone()))
                    .map_or(0, |v| v.len()))
            },
        )
    }
}
