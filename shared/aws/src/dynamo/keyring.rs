//! The platform's signing key rings (K-1, K-2): one item each, `PLATFORM` /
//! `SIGNING_KEYS` (the action key's) and `PLATFORM` / `CHECKPOINT_KEYS` (the audit
//! checkpoint key's, N-8), holding the ring as JSON and a version. Every change is a read, a pure
//! [`KeyRing`] rule, and a put conditioned on the version read, so two operators
//! rotating at once cannot lose each other's change.

use super::items::*;
use super::{DynamoStore, unavailable};
use countersign_domain::keyring::KeyRing;
use countersign_domain::ports::StoreError;

const RING_PK: &str = "PLATFORM";
/// The action key's ring.
pub(crate) const SIGNING_RING: &str = "SIGNING_KEYS";
/// The audit checkpoint key's ring (N-8).
pub(crate) const CHECKPOINT_RING: &str = "CHECKPOINT_KEYS";

/// The ring and the version it was read at (`0`: no ring stored yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRing {
    /// The ring.
    pub ring: KeyRing,
    /// Pass to [`DynamoStore::put_key_ring`].
    pub version: u64,
}

impl DynamoStore {
    /// The key ring (an empty default one when none is stored). A consistent read: the
    /// CLI decides on it.
    pub async fn key_ring(&self) -> Result<StoredRing, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key(RING_PK, self.ring_item)))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable)?;
        let Some(item) = out.item else {
            return Ok(StoredRing {
                ring: KeyRing::default(),
                version: 0,
            });
        };
        let ring = serde_json::from_str(get_s(&item, "ring")?).map_err(|_| corrupt("ring"))?;
        let version = item
            .get("version")
            .and_then(|v| v.as_n().ok())
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| corrupt("version"))?;
        Ok(StoredRing { ring, version })
    }

    /// Stores `ring` if the stored one is still at `read_version`. `false` when another
    /// change came first (nothing written: read again and redo the change).
    pub async fn put_key_ring(
        &self,
        ring: &KeyRing,
        read_version: u64,
    ) -> Result<bool, StoreError> {
        let text = serde_json::to_string(ring).map_err(|_| corrupt("ring"))?;
        let mut item = key(RING_PK, self.ring_item);
        item.insert("ring".into(), s(text));
        item.insert("version".into(), n(read_version + 1));
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item));
        let put = if read_version == 0 {
            put.condition_expression("attribute_not_exists(pk)")
        } else {
            put.condition_expression("version = :v")
                .expression_attribute_values(":v", n(read_version))
        };
        DynamoStore::put_if(put).await
    }
}
