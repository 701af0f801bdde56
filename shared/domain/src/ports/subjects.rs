//! R-2 (decision 0053): per-person keys for the personal data of audit records. A record's
//! personal fields ([`crate::audit_chain::PERSONAL_FIELDS`]) are sealed under their
//! person's data key before the record enters its chain, so the chain hashes cover
//! ciphertext; erasing the person destroys the key, the fields become unreadable, and
//! every chain and earlier checkpoint still verifies.

use super::store::StoreError;
use crate::ids::{CaseId, TenantId, UserId};
use async_trait::async_trait;

/// What destroying a person's key did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destroyed {
    /// The key is gone: what was sealed under it can no longer be read.
    Destroyed,
    /// There was no key (nothing of theirs was ever sealed, or it is gone already).
    NoKey,
    /// Kept: a legal hold on the person stands, checked atomically with the removal.
    Held,
}

/// The keys that seal people's personal data in audit records.
#[async_trait]
pub trait SubjectKeys: Send + Sync {
    /// Seals `personal` (a JSON object of the record's personal fields) under `user`'s
    /// key, made on first use. The answer holds no plaintext.
    async fn seal(
        &self,
        tenant: &TenantId,
        user: &UserId,
        personal: &serde_json::Value,
    ) -> Result<String, StoreError>;

    /// Opens what [`SubjectKeys::seal`] made: `None` once the key is destroyed. A text
    /// that is not a sealed value, or does not open, is [`StoreError::Corrupt`].
    async fn open(
        &self,
        tenant: &TenantId,
        sealed: &str,
    ) -> Result<Option<serde_json::Value>, StoreError>;

    /// R-1 (decision 0055): seals `fields` (a record's conversation fields, an object)
    /// under `case`'s key, made on first use, and only while the conversation exists.
    /// `None` when it does not (a hold placed on a conversation that never was): nothing
    /// is sealed then. The purge destroys the key with the conversation.
    async fn seal_conversation(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        fields: &serde_json::Value,
    ) -> Result<Option<String>, StoreError>;

    /// Forgets any copy of `case`'s key this process keeps: the purge has destroyed the
    /// stored one (other processes forget theirs within their cache's lifetime).
    fn forget_conversation(&self, _tenant: &TenantId, _case: &CaseId) {}

    /// Whether `user` has a key.
    async fn has_key(&self, tenant: &TenantId, user: &UserId) -> Result<bool, StoreError>;

    /// Destroys `user`'s key unless a legal hold on them stands.
    async fn destroy(&self, tenant: &TenantId, user: &UserId) -> Result<Destroyed, StoreError>;
}

/// No people's keys (a deployment or test without them): nothing is sealed, nothing to
/// destroy; a sealed value cannot be opened here.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSubjectKeys;

#[async_trait]
impl SubjectKeys for NoSubjectKeys {
    async fn seal(
        &self,
        _: &TenantId,
        _: &UserId,
        _: &serde_json::Value,
    ) -> Result<String, StoreError> {
        Err(StoreError::Unavailable(
            "no people's keys are configured".into(),
        ))
    }

    async fn seal_conversation(
        &self,
        _: &TenantId,
        _: &CaseId,
        _: &serde_json::Value,
    ) -> Result<Option<String>, StoreError> {
        Err(StoreError::Unavailable(
            "no people's keys are configured".into(),
        ))
    }

    async fn open(&self, _: &TenantId, _: &str) -> Result<Option<serde_json::Value>, StoreError> {
        Err(StoreError::Unavailable(
            "no people's keys are configured".into(),
        ))
    }

    async fn has_key(&self, _: &TenantId, _: &UserId) -> Result<bool, StoreError> {
        Ok(false)
    }

    async fn destroy(&self, _: &TenantId, _: &UserId) -> Result<Destroyed, StoreError> {
        Ok(Destroyed::NoKey)
    }
}
