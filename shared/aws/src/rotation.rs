//! Signing key rotation with overlap (K-2), for the operator CLI: announce a next key
//! (published, not signing), activate it (the alias moves to it; the old key stays
//! published), retire the old one once its proofs have expired. The order rules are the
//! domain's [`KeyRing`]; this module reads KMS, moves the alias and stores the ring.

use crate::dynamo::DynamoStore;
use crate::key_setup::{BootstrapError, KeyUsers, create_signing_key};
use crate::kms::{KeyCheckError, KmsKey, read_key};
use countersign_domain::keyring::{KeyRing, KeyStatus, NewKey, RingError};
use countersign_domain::ports::StoreError;
use countersign_domain::time::Timestamp;

/// Why a rotation step did nothing (or, for [`RotationError::AliasMovedRingStale`], only
/// half of it).
#[derive(Debug, thiserror::Error)]
pub enum RotationError {
    /// The key ring's rules refuse this order.
    #[error(transparent)]
    Ring(#[from] RingError),
    /// The KMS key cannot sign proofs, or does not exist.
    #[error(transparent)]
    Key(#[from] KeyCheckError),
    /// The table could not be read or written.
    #[error("the key ring could not be read or stored")]
    Store(#[from] StoreError),
    /// KMS refused to move the alias.
    #[error("KMS could not move {alias}")]
    Alias {
        /// The alias.
        alias: String,
        /// Why.
        #[source]
        cause: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Creating a key failed.
    #[error(transparent)]
    Create(#[from] BootstrapError),
    /// The configured signing key is not an alias: nothing can be moved.
    #[error("COUNTERSIGN_SIGNING_KEY must be an alias (alias/…) to rotate; it is {0}")]
    NotAnAlias(String),
    /// The key left the JWKS but KMS could not disable it (V-5): it could still sign.
    #[error(
        "key {kid} is retired from the JWKS, but KMS could not disable it; run `keys retire --kid {kid}` again"
    )]
    Disable {
        /// The retired key.
        kid: String,
        /// Why.
        #[source]
        cause: Box<dyn std::error::Error + Send + Sync>,
    },
    /// Others kept changing the ring.
    #[error("the key ring kept changing; run the command again")]
    Busy,
    /// V-5: the key's policy lets others than the signer role sign.
    #[error("the key's policy lets {} sign: only the signer role may (create the key with `keys announce --create --signer-role-arn …`, or fix its policy)", principals.join(", "))]
    PolicyTooWide {
        /// Every other principal allowed `kms:Sign`.
        principals: Vec<String>,
    },
    /// The key's policy could not be read.
    #[error("the key's policy could not be read")]
    Policy(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The alias moved to the new key but the ring could not record it: the new key is
    /// published (announced) and signs; run `keys activate` again to record it.
    #[error(
        "the alias now names key {kid}, but the key ring could not record it; run `keys activate --kid {kid}` again"
    )]
    AliasMovedRingStale {
        /// The key now signing.
        kid: String,
    },
}

/// Seconds since the epoch, now.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The operator's rotation steps over one deployment's KMS, table and alias.
#[derive(Debug)]
pub struct Rotation<'a> {
    kms: &'a aws_sdk_kms::Client,
    store: &'a DynamoStore,
    alias: &'a str,
}

/// What `keys list` shows: the ring, and which key the alias names now.
#[derive(Debug, Clone)]
pub struct RingView {
    /// The stored ring.
    pub ring: KeyRing,
    /// The `kid` of the key the alias names (the one that signs), if it exists.
    pub alias_kid: Option<String>,
}

const ATTEMPTS: usize = 4;

fn new_key(k: KmsKey) -> NewKey {
    NewKey {
        kid: k.public.kid,
        arn: k.arn,
    }
}

impl<'a> Rotation<'a> {
    /// Steps for the key behind `alias` (the functions' `COUNTERSIGN_SIGNING_KEY`).
    pub fn new(kms: &'a aws_sdk_kms::Client, store: &'a DynamoStore, alias: &'a str) -> Self {
        Self { kms, store, alias }
    }

    /// Reads the ring, applies `change`, stores it if nobody changed it meanwhile
    /// (retried on a fresh read otherwise: the rules are checked again).
    async fn change<T>(
        &self,
        mut change: impl FnMut(&mut KeyRing) -> Result<T, RingError>,
    ) -> Result<(T, KeyRing), RotationError> {
        for _ in 0..ATTEMPTS {
            let stored = self.store.key_ring().await?;
            let mut ring = stored.ring;
            let out = change(&mut ring)?;
            if self.store.put_key_ring(&ring, stored.version).await? {
                return Ok((out, ring));
            }
        }
        Err(RotationError::Busy)
    }

    /// The ring and the alias's key.
    pub async fn list(&self) -> Result<RingView, RotationError> {
        let ring = self.store.key_ring().await?.ring;
        let alias_kid = match read_key(self.kms, self.alias).await {
            Ok(k) => Some(k.public.kid),
            Err(KeyCheckError::NotFound(_)) => None,
            Err(e) => return Err(e.into()),
        };
        Ok(RingView { ring, alias_kid })
    }

    /// An empty ring gets the alias's key as its active key (a new deployment, or one
    /// from before the ring existed). `true` when it was added.
    pub async fn adopt_alias_key(&self, now: Timestamp) -> Result<bool, RotationError> {
        if !self.store.key_ring().await?.ring.keys.is_empty() {
            return Ok(false);
        }
        let key = new_key(read_key(self.kms, self.alias).await?);
        let added = self
            .change(|ring| {
                if ring.keys.is_empty() {
                    ring.install_first(key.clone(), now)?;
                    Ok(true)
                } else {
                    Ok(false)
                }
            })
            .await?;
        Ok(added.0)
    }

    /// Creates a new KMS key for proofs (with the deployment's key policy when `users`
    /// are given) and returns its id. It is not announced.
    pub async fn create(&self, users: Option<&KeyUsers>) -> Result<String, RotationError> {
        Ok(create_signing_key(self.kms, users).await?)
    }

    /// Publishes KMS key `key_id` as the next key. Returns its `kid`. With `signers` (the
    /// messages and stream functions' role ARNs), V-5: a key whose policy lets any other
    /// principal sign is refused, and N-8: one that lets anyone grant its use, or lets the
    /// account itself change its policy or move its alias. Empty: not checked.
    pub async fn announce(
        &self,
        key_id: &str,
        now: Timestamp,
        signers: &[&str],
    ) -> Result<String, RotationError> {
        if !signers.is_empty() {
            self.check_policy(key_id, signers).await?;
        }
        self.adopt_alias_key(now).await?;
        let key = new_key(read_key(self.kms, key_id).await?);
        let kid = key.kid.clone();
        self.change(|ring| ring.announce(key.clone(), now)).await?;
        Ok(kid)
    }

    /// V-5: only `signers` may sign with `key_id`, and (N-8) no one may grant its use,
    /// nor the account change its policy or move its alias (a key administrator must be
    /// named: else any principal of the account allowed `kms:PutKeyPolicy` by IAM could
    /// give itself signing).
    async fn check_policy(&self, key_id: &str, signers: &[&str]) -> Result<(), RotationError> {
        let policy = self
            .kms
            .get_key_policy()
            .key_id(key_id)
            .policy_name("default")
            .send()
            .await
            .map_err(|e| RotationError::Policy(Box::new(e)))?;
        let text = policy.policy().unwrap_or_default();
        let principals = countersign_domain::key_policy::sign_principals(text)
            .map_err(|e| RotationError::Policy(Box::new(e)))?;
        let mut others: Vec<String> = principals
            .into_iter()
            .filter(|p| !signers.contains(&p.as_str()))
            .collect();
        for action in &countersign_domain::key_policy::ESCALATING[1..] {
            let granted = countersign_domain::key_policy::principals_granted(text, action)
                .map_err(|e| RotationError::Policy(Box::new(e)))?;
            others.extend(
                granted
                    .into_iter()
                    .filter(|p| countersign_domain::key_policy::is_account(p))
                    .map(|p| format!("{p} ({action}: name a key administrator)")),
            );
        }
        // N-8: and no one may grant its use (a grant is a signer the policy does not name).
        let granting = countersign_domain::key_policy::principals_granted(text, "kms:CreateGrant")
            .map_err(|e| RotationError::Policy(Box::new(e)))?;
        others.extend(
            granting
                .into_iter()
                .map(|p| format!("{p} (kms:CreateGrant)")),
        );
        if others.is_empty() {
            Ok(())
        } else {
            Err(RotationError::PolicyTooWide { principals: others })
        }
    }

    /// The announced key `kid` starts signing: the alias moves to it, the active key
    /// becomes previous (still published).
    pub async fn activate(&self, kid: &str, now: Timestamp) -> Result<(), RotationError> {
        if !self.alias.starts_with("alias/") {
            return Err(RotationError::NotAnAlias(self.alias.to_owned()));
        }
        // Check the order first: nothing moves if the ring refuses it.
        let mut ring = self.store.key_ring().await?.ring;
        ring.activate(kid, now)?;
        let arn = ring.get(kid).map(|k| k.arn.clone()).unwrap_or_default();
        // The alias first: the key it moves to is already published, so a process that
        // picks it up at once signs proofs every JWKS-following provider can verify.
        self.kms
            .update_alias()
            .alias_name(self.alias)
            .target_key_id(&arn)
            .send()
            .await
            .map_err(|e| RotationError::Alias {
                alias: self.alias.to_owned(),
                cause: Box::new(e),
            })?;
        match self.change(|ring| ring.activate(kid, now)).await {
            Ok(_) => Ok(()),
            Err(RotationError::Store(_) | RotationError::Busy | RotationError::Ring(_)) => {
                Err(RotationError::AliasMovedRingStale {
                    kid: kid.to_owned(),
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Withdraws `kid` from the JWKS (a previous key whose proofs have all expired, or an
    /// announced key that never signed).
    pub async fn retire(&self, kid: &str, now: Timestamp) -> Result<(), RotationError> {
        if let Ok(current) = read_key(self.kms, self.alias).await
            && current.public.kid == kid
        {
            // The alias still names it (a half-finished activation): it signs.
            return Err(RingError::WrongState {
                kid: kid.to_owned(),
                status: "named by the alias",
                need: "activate another key first; only an announced or previous key can be retired",
            }
            .into());
        }
        let ring = self.store.key_ring().await?.ring;
        // Retired already (a retire whose disabling failed, run again): disable only.
        if !ring
            .get(kid)
            .is_some_and(|k| k.status == KeyStatus::Retired)
        {
            self.change(|ring| ring.retire(kid, now)).await?;
        }
        let arn = self
            .store
            .key_ring()
            .await?
            .ring
            .get(kid)
            .map(|k| k.arn.clone())
            .unwrap_or_default();
        // V-5: a retired key can no longer sign. Disabled, never deleted (a deletion cannot
        // be undone, and an operator may need the key to check an old proof).
        // By key id (the ARN's last part): KMS takes either, the emulator only the id.
        let id = arn.rsplit_once(":key/").map_or(arn.as_str(), |(_, id)| id);
        self.kms
            .disable_key()
            .key_id(id)
            .send()
            .await
            .map_err(|e| RotationError::Disable {
                kid: kid.to_owned(),
                cause: Box::new(e),
            })?;
        Ok(())
    }

    /// Sets the JWKS cache time (seconds).
    pub async fn set_cache_seconds(&self, seconds: i64) -> Result<(), RotationError> {
        self.change(|ring| ring.set_cache_seconds(seconds)).await?;
        Ok(())
    }
}
