//! R-2 (decision 0053): envelope encryption of the personal data in audit records. Each
//! person of a tenant has a 256-bit data key, made by KMS `GenerateDataKey` and stored
//! only wrapped (KMS-encrypted, with the tenant as encryption context); their personal
//! fields are sealed with AES-256-GCM under it before a record is chained. Erasure deletes
//! the wrapped key: the sealed fields can no longer be opened, the records (and so the
//! chain hashes over them) stay as they were.
//!
//! Items: `SUBJECT#<tenant>#<user>` / `KEY` names the person's key id; `SUBJECTKEY#<tenant>#
//! <keyId>` / `KEY` holds the wrapped key. Sealed values name the key id only, never the
//! person.
//!
//! R-1 (decision 0055): each conversation has a key of the same kind for its ids in audit
//! records, named by `CONV#<tenant>#<case>` / `KEY` (in the conversation's partition, so
//! the purge removes it with the conversation, and the wrapped key with it).
//!
//! Plain keys are kept in the process for [`CACHE_TTL`] at most, so a key destroyed
//! elsewhere stops opening here within that time.

use super::items::*;
use super::{DynamoStore, Tx, failed, unavailable, values};
use async_trait::async_trait;
use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_domain::ids::{CaseId, TenantId, UserId};
use countersign_domain::ports::{Destroyed, StoreError, SubjectKeys};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a plain data key is kept in the process.
pub const CACHE_TTL: Duration = Duration::from_secs(300);
/// Keys kept at most before the cache is emptied.
const MAX_CACHED: usize = 10_000;
/// The version prefix of a sealed value.
const VERSION: &str = "v1";
const KEY_SK: &str = "KEY";

/// A plain data key (zeroed when dropped).
#[derive(Clone)]
pub struct DataKey([u8; 32]);

impl Drop for DataKey {
    fn drop(&mut self) {
        self.0 = [0; 32];
    }
}

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DataKey(..)")
    }
}

/// Who makes and unwraps data keys: KMS in deployments ([`KmsWrap`]).
#[async_trait]
pub trait KeyWrap: Send + Sync {
    /// A new data key and its wrapped form, bound to `context`.
    async fn generate(&self, context: &str) -> Result<(DataKey, Vec<u8>), StoreError>;
    /// The data key inside `wrapped`, if it was bound to `context`.
    async fn unwrap(&self, context: &str, wrapped: &[u8]) -> Result<DataKey, StoreError>;
}

/// Data keys from a KMS symmetric key (`GenerateDataKey` / `Decrypt`), with the tenant as
/// encryption context: a wrapped key copied to another tenant does not unwrap.
#[derive(Debug, Clone)]
pub struct KmsWrap {
    client: aws_sdk_kms::Client,
    key: String,
}

impl KmsWrap {
    /// Wraps with KMS key `key` (id, ARN or alias).
    pub fn new(client: aws_sdk_kms::Client, key: impl Into<String>) -> Self {
        Self {
            client,
            key: key.into(),
        }
    }
}

fn to_key(bytes: &[u8]) -> Result<DataKey, StoreError> {
    let key: [u8; 32] = bytes
        .try_into()
        .map_err(|_| StoreError::Corrupt("a data key is not 256 bits".into()))?;
    Ok(DataKey(key))
}

#[async_trait]
impl KeyWrap for KmsWrap {
    async fn generate(&self, context: &str) -> Result<(DataKey, Vec<u8>), StoreError> {
        let out = self
            .client
            .generate_data_key()
            .key_id(&self.key)
            .key_spec(aws_sdk_kms::types::DataKeySpec::Aes256)
            .encryption_context("tenant", context)
            .send()
            .await
            .map_err(unavailable)?;
        let plain = out
            .plaintext()
            .ok_or_else(|| StoreError::Unavailable("KMS gave no data key".into()))?;
        let wrapped = out
            .ciphertext_blob()
            .ok_or_else(|| StoreError::Unavailable("KMS gave no wrapped key".into()))?;
        Ok((to_key(plain.as_ref())?, wrapped.as_ref().to_vec()))
    }

    async fn unwrap(&self, context: &str, wrapped: &[u8]) -> Result<DataKey, StoreError> {
        let out = self
            .client
            .decrypt()
            .key_id(&self.key)
            .ciphertext_blob(aws_sdk_kms::primitives::Blob::new(wrapped))
            .encryption_context("tenant", context)
            .send()
            .await
            .map_err(unavailable)?;
        let plain = out
            .plaintext()
            .ok_or_else(|| StoreError::Unavailable("KMS gave no data key".into()))?;
        to_key(plain.as_ref())
    }
}

/// The people's keys of one table.
#[derive(Clone)]
pub struct EnvelopeKeys {
    store: DynamoStore,
    wrap: Arc<dyn KeyWrap>,
    /// `tenant/user` and `tenant/#keyId` → the key.
    cache: Arc<Mutex<HashMap<String, Cached>>>,
}

/// A plain key in the process: its id, the key, when it was read.
type Cached = (String, DataKey, Instant);

countersign_domain::debug_showing!(EnvelopeKeys {});

pub(super) fn subject_pk(tenant: &TenantId, user: &UserId) -> String {
    format!("SUBJECT#{tenant}#{user}")
}

/// Where a wrapped key lives (the purge deletes a conversation's).
pub(crate) fn key_pk(tenant: &TenantId, key_id: &str) -> String {
    format!("SUBJECTKEY#{tenant}#{key_id}")
}

/// The sort key of a key's pointer (a person's, and a conversation's in its partition).
pub(crate) const KEY_POINTER_SK: &str = KEY_SK;

/// Whose key: where its pointer lives, its name in the cache, and the item that must
/// exist for one to be made.
struct Owner {
    cache: String,
    pointer: String,
    requires: Option<Item>,
}

/// A person's key in the process cache. The kinds of entry have distinct prefixes after
/// the tenant (`person/`, `case/`, `#` for a key id), so no id can name another's.
fn person_cache(tenant: &TenantId, user: &UserId) -> String {
    format!("{tenant}/person/{user}")
}

fn corrupt_sealed() -> StoreError {
    StoreError::Corrupt("a sealed audit value does not open".into())
}

/// AES-256-GCM of `plain` under `key`, bound to the tenant and key id.
fn seal_with(key: &DataKey, aad: &str, plain: &[u8]) -> Result<Vec<u8>, StoreError> {
    let unbound = UnboundKey::new(&AES_256_GCM, &key.0).map_err(|_| corrupt_sealed())?;
    let sealing = LessSafeKey::new(unbound);
    let mut nonce = [0u8; NONCE_LEN];
    aws_lc_rs::rand::fill(&mut nonce)
        .map_err(|_| StoreError::Unavailable("no randomness".into()))?;
    let mut data = plain.to_vec();
    sealing
        .seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad.as_bytes()),
            &mut data,
        )
        .map_err(|_| corrupt_sealed())?;
    let mut out = nonce.to_vec();
    out.extend(data);
    Ok(out)
}

fn open_with(key: &DataKey, aad: &str, sealed: &[u8]) -> Result<Vec<u8>, StoreError> {
    if sealed.len() < NONCE_LEN {
        return Err(corrupt_sealed());
    }
    let (nonce, data) = sealed.split_at(NONCE_LEN);
    let unbound = UnboundKey::new(&AES_256_GCM, &key.0).map_err(|_| corrupt_sealed())?;
    let opening = LessSafeKey::new(unbound);
    let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| corrupt_sealed())?;
    let mut data = data.to_vec();
    let plain = opening
        .open_in_place(nonce, Aad::from(aad.as_bytes()), &mut data)
        .map_err(|_| corrupt_sealed())?;
    Ok(plain.to_vec())
}

impl EnvelopeKeys {
    /// Keys stored in `store`'s table, wrapped by `wrap`.
    pub fn new(store: DynamoStore, wrap: Arc<dyn KeyWrap>) -> Self {
        Self {
            store,
            wrap,
            cache: Arc::default(),
        }
    }

    fn cached(&self, k: &str) -> Option<(String, DataKey)> {
        let cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        cache
            .get(k)
            .filter(|(_, _, at)| at.elapsed() < CACHE_TTL)
            .map(|(id, key, _)| (id.clone(), key.clone()))
    }

    fn remember(&self, tenant: &TenantId, owner: Option<&str>, id: &str, key: &DataKey) {
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        let now = Instant::now();
        if let Some(owner) = owner {
            cache.insert(owner.to_owned(), (id.to_owned(), key.clone(), now));
        }
        cache.insert(format!("{tenant}/#{id}"), (id.to_owned(), key.clone(), now));
    }

    fn forget(&self, tenant: &TenantId, user: &UserId, id: Option<&str>) {
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        cache.remove(&person_cache(tenant, user));
        if let Some(id) = id {
            cache.remove(&format!("{tenant}/#{id}"));
        }
    }

    /// The key `id` of `tenant` from the table, unwrapped; `None` once destroyed.
    async fn read_key(&self, tenant: &TenantId, id: &str) -> Result<Option<DataKey>, StoreError> {
        let Some(item) = self.store.get(key_pk(tenant, id), KEY_SK).await? else {
            return Ok(None);
        };
        let wrapped = match item.get("wrapped") {
            Some(aws_sdk_dynamodb::types::AttributeValue::B(b)) => b.as_ref().to_vec(),
            _ => return Err(corrupt("wrapped")),
        };
        Ok(Some(self.wrap.unwrap(tenant.as_str(), &wrapped).await?))
    }

    /// The owner's key, made on first use (two writers at once: one key stands, the other
    /// reads it back). `None` when the item the owner requires does not exist.
    async fn key_of(
        &self,
        tenant: &TenantId,
        owner: &Owner,
    ) -> Result<Option<(String, DataKey)>, StoreError> {
        if let Some(found) = self.cached(&owner.cache) {
            return Ok(Some(found));
        }
        for _ in 0..3 {
            if let Some(item) = self.store.get(owner.pointer.as_str(), KEY_SK).await? {
                let id = get_s(&item, "key_id")?.to_owned();
                if let Some(key) = self.read_key(tenant, &id).await? {
                    self.remember(tenant, Some(&owner.cache), &id, &key);
                    return Ok(Some((id, key)));
                }
            }
            let id = format!("sk_{}", ulid::Ulid::new());
            let (key, wrapped) = self.wrap.generate(tenant.as_str()).await?;
            let mut pointer = super::items::key(owner.pointer.as_str(), KEY_SK);
            pointer.insert("key_id".into(), s(id.as_str()));
            let mut stored = super::items::key(key_pk(tenant, &id), KEY_SK);
            stored.insert(
                "wrapped".into(),
                aws_sdk_dynamodb::types::AttributeValue::B(wrapped.into()),
            );
            let mut tx = vec![self.store.put_new(pointer)?, self.store.put_new(stored)?];
            if let Some(required) = &owner.requires {
                tx.push(self.store.present(required.clone())?);
            }
            match self.store.transact(tx).await? {
                Tx::Committed => {
                    self.remember(tenant, Some(&owner.cache), &id, &key);
                    return Ok(Some((id, key)));
                }
                Tx::Cancelled(reasons) if owner.requires.is_some() && failed(reasons.get(2)) => {
                    return Ok(None);
                }
                Tx::Cancelled(_) => {}
            }
        }
        Err(StoreError::Unavailable("a data key kept changing".into()))
    }

    /// `user`'s key, made on first use.
    async fn key_for(
        &self,
        tenant: &TenantId,
        user: &UserId,
    ) -> Result<(String, DataKey), StoreError> {
        let owner = Owner {
            cache: person_cache(tenant, user),
            pointer: subject_pk(tenant, user),
            requires: None,
        };
        self.key_of(tenant, &owner)
            .await?
            .ok_or_else(|| StoreError::Unavailable("a person's key could not be made".into()))
    }

    /// `case`'s key, made on first use while its case item exists.
    async fn conversation_key(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<Option<(String, DataKey)>, StoreError> {
        let owner = Owner {
            cache: format!("{tenant}/case/{case}"),
            pointer: conv_pk(tenant, case),
            requires: Some(super::items::key(conv_pk(tenant, case), CASE_SK)),
        };
        self.key_of(tenant, &owner).await
    }
}

#[async_trait]
impl SubjectKeys for EnvelopeKeys {
    async fn seal(
        &self,
        tenant: &TenantId,
        user: &UserId,
        personal: &serde_json::Value,
    ) -> Result<String, StoreError> {
        let (id, key) = self.key_for(tenant, user).await?;
        let aad = format!("{tenant}/{id}");
        let sealed = seal_with(&key, &aad, personal.to_string().as_bytes())?;
        Ok(format!("{VERSION}.{id}.{}", URL_SAFE_NO_PAD.encode(sealed)))
    }

    async fn seal_conversation(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        fields: &serde_json::Value,
    ) -> Result<Option<String>, StoreError> {
        let Some((id, key)) = self.conversation_key(tenant, case).await? else {
            return Ok(None);
        };
        let aad = format!("{tenant}/{id}");
        let sealed = seal_with(&key, &aad, fields.to_string().as_bytes())?;
        Ok(Some(format!(
            "{VERSION}.{id}.{}",
            URL_SAFE_NO_PAD.encode(sealed)
        )))
    }

    fn forget_conversation(&self, tenant: &TenantId, case: &CaseId) {
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((id, _, _)) = cache.remove(&format!("{tenant}/case/{case}")) {
            cache.remove(&format!("{tenant}/#{id}"));
        }
    }

    async fn open(
        &self,
        tenant: &TenantId,
        sealed: &str,
    ) -> Result<Option<serde_json::Value>, StoreError> {
        let mut parts = sealed.splitn(3, '.');
        let (Some(VERSION), Some(id), Some(data)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(corrupt_sealed());
        };
        if !id.starts_with("sk_") || id.len() > 40 {
            return Err(corrupt_sealed());
        }
        let data = URL_SAFE_NO_PAD.decode(data).map_err(|_| corrupt_sealed())?;
        let key = match self.cached(&format!("{tenant}/#{id}")) {
            Some((_, key)) => key,
            None => match self.read_key(tenant, id).await? {
                Some(key) => {
                    self.remember(tenant, None, id, &key);
                    key
                }
                None => return Ok(None),
            },
        };
        let plain = open_with(&key, &format!("{tenant}/{id}"), &data)?;
        serde_json::from_slice(&plain)
            .map(Some)
            .map_err(|_| corrupt_sealed())
    }

    async fn has_key(&self, tenant: &TenantId, user: &UserId) -> Result<bool, StoreError> {
        Ok(self
            .store
            .get(subject_pk(tenant, user), KEY_SK)
            .await?
            .is_some())
    }

    async fn destroy(&self, tenant: &TenantId, user: &UserId) -> Result<Destroyed, StoreError> {
        let Some(item) = self.store.get(subject_pk(tenant, user), KEY_SK).await? else {
            self.forget(tenant, user, None);
            return Ok(Destroyed::NoKey);
        };
        let id = get_s(&item, "key_id")?.to_owned();
        // the hold is checked in the same transaction as the removal.
        let not_held = format!("NOT contains({HELD_PEOPLE}, :user)");
        let vals = values([(":user", s(user.as_str()))]);
        let tenant_key = super::items::key(tenant_pk(tenant), super::tenants::TENANT_SK);
        let tx = vec![
            self.store.check_where(tenant_key, &not_held, Some(vals))?,
            self.store
                .delete(super::items::key(subject_pk(tenant, user), KEY_SK))?,
            self.store
                .delete(super::items::key(key_pk(tenant, &id), KEY_SK))?,
        ];
        match self.store.transact(tx).await? {
            Tx::Committed => {
                self.forget(tenant, user, Some(&id));
                Ok(Destroyed::Destroyed)
            }
            Tx::Cancelled(reasons) if failed(reasons.first()) => Ok(Destroyed::Held),
            Tx::Cancelled(_) => Err(StoreError::Unavailable(
                "the key's removal met another write; erase again".into(),
            )),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// a sealed value opens under its key and binding only; a flipped bit, another
    /// key or another binding does not open.
    #[test]
    fn r2_a_sealed_value_opens_only_with_its_key_and_binding() {
        let (k, other) = (DataKey([7; 32]), DataKey([8; 32]));
        let sealed = seal_with(&k, "t/sk_1", b"{\"userId\":\"ana\"}").unwrap();
        assert!(!String::from_utf8_lossy(&sealed).contains("ana"));
        assert_eq!(
            open_with(&k, "t/sk_1", &sealed).unwrap(),
            b"{\"userId\":\"ana\"}"
        );
        assert!(open_with(&other, "t/sk_1", &sealed).is_err());
        assert!(open_with(&k, "u/sk_1", &sealed).is_err());
        let mut flipped = sealed.clone();
        if let Some(b) = flipped.last_mut() {
            *b ^= 1;
        }
        assert!(open_with(&k, "t/sk_1", &flipped).is_err());
        assert!(open_with(&k, "t/sk_1", &sealed[..5]).is_err());
    }
}
