//! Panel sessions (U-1).

use super::store::StoreError;
use crate::ids::TenantId;
use crate::time::Timestamp;
use async_trait::async_trait;

/// A signed-in administrator's panel session (U-1). Stored under the SHA-256 of its
/// random id, never the id itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PanelSession {
    /// The tenant whose admin key opened it.
    pub tenant: TenantId,
    /// The hash of that admin key: after a rotation the session no longer holds.
    pub key_hash: crate::hash::Sha256Hex,
    /// It ends then, whatever happens (no sliding renewal).
    pub expires_at: Timestamp,
}

/// Panel sessions (U-1).
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// Records a new session under `id_hash`.
    async fn put_session(
        &self,
        id_hash: &crate::hash::Sha256Hex,
        session: &PanelSession,
    ) -> Result<(), StoreError>;
    /// The session, if it exists (expired ones may still be returned: check the time).
    async fn get_session(
        &self,
        id_hash: &crate::hash::Sha256Hex,
    ) -> Result<Option<PanelSession>, StoreError>;
    /// Ends the session (nothing when absent).
    async fn delete_session(&self, id_hash: &crate::hash::Sha256Hex) -> Result<(), StoreError>;
}
