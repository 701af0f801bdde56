//! F-2: the passkeys people enrolled, per tenant and person. A credential's public key is
//! public; what is kept private is only whose it is (the adapter keys it by a digest of
//! the person, as the person index does).

use super::store::StoreError;
use crate::ids::{TenantId, UserId};
use crate::stepup::CredentialKey;
use crate::time::Timestamp;
use async_trait::async_trait;

/// One enrolled passkey.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passkey {
    /// The credential's id (base64url, no padding), as WebAuthn names it.
    pub id: String,
    /// Its public key.
    pub key: CredentialKey,
    /// The authenticator's counter as last seen (0 for synced passkeys, always).
    pub sign_count: u32,
    /// How the browser said it can reach the authenticator (`internal`, `hybrid`, …).
    pub transports: Vec<String>,
    /// When it was enrolled.
    pub created_at: Timestamp,
    /// When it last countersigned an action.
    pub last_used_at: Option<Timestamp>,
}

/// The passkeys store.
#[async_trait]
pub trait Passkeys: Send + Sync {
    /// Adds `passkey` to `user`'s passkeys for `tenant`, with its audit record, in one
    /// write; `false` (nothing written) when a credential with its id is already there
    /// (nothing is replaced: a key once enrolled never changes).
    async fn add_passkey(
        &self,
        tenant: &TenantId,
        user: &UserId,
        passkey: &Passkey,
        audit: &crate::audit_chain::AuditEntry,
    ) -> Result<bool, StoreError>;

    /// `user`'s passkeys for `tenant`, oldest first.
    async fn passkeys(&self, tenant: &TenantId, user: &UserId) -> Result<Vec<Passkey>, StoreError>;

    /// F-3: records a use that moved the counter from `from` to `to`, only if the stored
    /// counter is still `from` and the passkey still exists: `false` otherwise (a
    /// concurrent use or a revocation won; the use must be refused).
    async fn record_passkey_use(
        &self,
        tenant: &TenantId,
        user: &UserId,
        id: &str,
        from: u32,
        to: u32,
        at: Timestamp,
    ) -> Result<bool, StoreError>;

    /// Removes one passkey, with its audit record, in one write; `false` (nothing written)
    /// when there was none with that id.
    async fn revoke_passkey(
        &self,
        tenant: &TenantId,
        user: &UserId,
        id: &str,
        audit: &crate::audit_chain::AuditEntry,
    ) -> Result<bool, StoreError>;

    /// F-1: how many of `tenant`'s people have at least one passkey (the panel shows it
    /// before an operation starts to need one).
    async fn passkey_holders(&self, tenant: &TenantId) -> Result<usize, StoreError>;

    /// removes every passkey of `user` for `tenant` (their erasure); how many.
    async fn forget_passkeys(&self, tenant: &TenantId, user: &UserId) -> Result<usize, StoreError>;
}
