//! The KMS adapter of the proof signer: `Sign` with `RSASSA_PKCS1_V1_5_SHA_256` and
//! `MessageType: RAW` (KMS hashes the signing input itself; the JWS signing input is far
//! below the 4,096-byte RAW limit). `kid` is the key's RFC 7638 JWK thumbprint. The key
//! is followed through its alias across rotations (K-2).

use crate::calls::CallLog;
use crate::dynamo::DynamoStore;
use async_trait::async_trait;
use aws_sdk_kms::Client;
use aws_sdk_kms::error::ProvideErrorMetadata as _;
use aws_sdk_kms::primitives::Blob;
use aws_sdk_kms::types::{MessageType, SigningAlgorithmSpec};
use countersign_domain::jwk::{JwkError, rsa_public_key, spki_pem};
use countersign_domain::keyring::{KeyRing, KeyStatus, RingKey};
use countersign_domain::ports::{
    ProofSigner, PublishedKey, PublishedKeys, SignerError, VerificationKey,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// RFC 7638 thumbprint of an RSA JWK from its base64url `n` and `e` (the domain's).
pub use countersign_domain::jwk::rsa_jwk_thumbprint;

/// The public half of the signing key, in the forms tenants install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKeyInfo {
    /// JWK `n` (base64url).
    pub n: String,
    /// JWK `e` (base64url).
    pub e: String,
    /// RFC 7638 thumbprint (the proofs' `kid`).
    pub kid: String,
    /// SPKI PEM.
    pub pem: String,
    /// The JWK (`kty`, `n`, `e`, `alg`, `use`, `kid`).
    pub jwk: serde_json::Value,
}

/// Why a DER public key could not be read.
#[derive(Debug, thiserror::Error)]
#[error("the KMS public key is not an RSA SubjectPublicKeyInfo")]
pub struct KeyFormatError(#[source] pub JwkError);

/// Reads a DER SubjectPublicKeyInfo (what KMS `GetPublicKey` returns).
pub fn public_key_info(der: &[u8]) -> Result<PublicKeyInfo, KeyFormatError> {
    let key = rsa_public_key(der).map_err(KeyFormatError)?;
    let n = key.n_b64url();
    let e = key.e_b64url();
    let kid = rsa_jwk_thumbprint(&n, &e);
    // The parser accepts DER only, so these bytes are already the key's one encoding.
    let pem = spki_pem(der);
    let jwk =
        serde_json::json!({"kty": "RSA", "n": n, "e": e, "alg": "RS256", "use": "sig", "kid": kid});
    Ok(PublicKeyInfo {
        n,
        e,
        kid,
        pem,
        jwk,
    })
}

/// Signs proofs with a KMS asymmetric key. The private key never leaves KMS.
///
/// The configured key is usually an alias, which a rotation moves (K-2). The signer
/// resolves it to the key's ARN and thumbprint, signs with that ARN (never with the
/// alias, which could move between reading the public key and signing), and looks again
/// in the background once its answer is older than the refresh interval, so a process that
/// cached the old key notices the switch without a call on the confirm path.
#[derive(Debug, Clone)]
pub struct KmsProofSigner {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    client: Client,
    key: Option<String>,
    refresh: Duration,
    /// The key the alias named when last looked at.
    current: RwLock<Option<Resolved>>,
    /// Every key this process has resolved, by thumbprint: `sign_rs256` signs with the
    /// one the header names.
    arns: RwLock<HashMap<String, String>>,
    refreshing: AtomicBool,
    /// Serialises the first resolution (no thundering herd on a cold start).
    first: tokio::sync::Mutex<()>,
    ring: Option<DynamoStore>,
    /// V-5: the public key KMS returned for each ring ARN (an ARN's key never changes, so
    /// an answer is kept for the life of the process).
    vouched: RwLock<HashMap<String, PublicKeyInfo>>,
}

#[derive(Debug, Clone)]
struct Resolved {
    info: PublicKeyInfo,
    at: Instant,
}

fn unavailable<E: std::error::Error + Send + Sync + 'static>(e: E) -> SignerError {
    SignerError::Unavailable(Box::new(e))
}

/// The default interval after which a process looks at its signing key's alias again.
pub const DEFAULT_REFRESH: Duration =
    Duration::from_secs(countersign_domain::keyring::SIGNER_REFRESH_MAX_SECONDS.unsigned_abs());

/// A key resolved from KMS: its ARN and public forms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KmsKey {
    /// The key's ARN (what `GetPublicKey` names, even when asked through an alias).
    pub arn: String,
    /// Its public forms.
    pub public: PublicKeyInfo,
}

/// Why a key cannot sign proofs.
#[derive(Debug, thiserror::Error)]
pub enum KeyCheckError {
    /// KMS could not be asked.
    #[error("KMS: {0}")]
    Kms(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// No such key.
    #[error("no such KMS key: {0}")]
    NotFound(String),
    /// KMS refused to give this key's public key (its error code).
    #[error("KMS refused the key: {0}")]
    Refused(String),
    /// The key is not an RSA_2048 SIGN_VERIFY key that signs RSASSA_PKCS1_V1_5_SHA_256.
    #[error("the KMS key is not an RSA_2048 SIGN_VERIFY key for RSASSA_PKCS1_V1_5_SHA_256")]
    Unsuitable,
    /// Its public key could not be read.
    #[error(transparent)]
    Format(#[from] KeyFormatError),
}

/// Reads key `id` (an id, ARN or alias) from KMS and checks that it can sign proofs.
pub async fn read_key(client: &Client, id: &str) -> Result<KmsKey, KeyCheckError> {
    use aws_sdk_kms::types::{KeySpec, KeyUsageType};
    let out = match client.get_public_key().key_id(id).send().await {
        Ok(out) => out,
        Err(e)
            if e.as_service_error()
                .is_some_and(|s| s.is_not_found_exception()) =>
        {
            return Err(KeyCheckError::NotFound(id.to_owned()));
        }
        Err(e) => {
            // KMS answered about this key (disabled, not a signing key, a malformed ARN,
            // no access…) unless the answer is one of its transient ones.
            let refusal = e.as_service_error().and_then(|s| {
                let transient = s.is_kms_internal_exception()
                    || s.is_dependency_timeout_exception()
                    || s.code() == Some("ThrottlingException");
                (!transient).then(|| s.code().unwrap_or("unknown").to_owned())
            });
            return Err(match refusal {
                Some(code) => KeyCheckError::Refused(code),
                None => KeyCheckError::Kms(Box::new(e)),
            });
        }
    };
    // KMS names all three; the emulator leaves some out, so only what is named is held
    // against the key (the DER below must be an RSA key in any case).
    let algorithms = out.signing_algorithms();
    let suitable = out.key_spec.as_ref().is_none_or(|k| *k == KeySpec::Rsa2048)
        && out
            .key_usage
            .as_ref()
            .is_none_or(|u| *u == KeyUsageType::SignVerify)
        && (algorithms.is_empty()
            || algorithms.contains(&SigningAlgorithmSpec::RsassaPkcs1V15Sha256));
    let (Some(arn), Some(der), true) = (out.key_id, out.public_key, suitable) else {
        return Err(KeyCheckError::Unsuitable);
    };
    Ok(KmsKey {
        arn,
        public: public_key_info(der.as_ref())?,
    })
}

impl KmsProofSigner {
    /// A signer for `key` (id, ARN or `alias/…`); `None` means no key is installed.
    pub fn new(client: Client, key: Option<String>) -> Self {
        Self {
            inner: Arc::new(Inner {
                client,
                key,
                refresh: DEFAULT_REFRESH,
                current: RwLock::new(None),
                arns: RwLock::new(HashMap::new()),
                refreshing: AtomicBool::new(false),
                first: tokio::sync::Mutex::new(()),
                ring: None,
                vouched: RwLock::new(HashMap::new()),
            }),
        }
    }

    /// Looks at the alias again after `refresh` (at most
    /// [`countersign_domain::keyring::SIGNER_REFRESH_MAX_SECONDS`], which the retirement
    /// rule counts on). Call before sharing the signer.
    pub fn with_refresh(mut self, refresh: Duration) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.refresh = refresh.min(DEFAULT_REFRESH);
        }
        self
    }

    /// Publishes the key ring stored in `store` (K-1) next to the signing key. Call
    /// before sharing the signer.
    pub fn with_ring(mut self, store: DynamoStore) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.ring = Some(store);
        }
        self
    }

    /// Builds the SDK client from the shared AWS configuration, optionally counting calls.
    pub fn client(sdk: &aws_config::SdkConfig, calls: Option<&CallLog>) -> Client {
        let mut b = aws_sdk_kms::config::Builder::from(sdk);
        if let Some(c) = calls {
            b = b.interceptor(c.clone());
        }
        Client::from_conf(b.build())
    }

    fn key(&self) -> Result<&str, SignerError> {
        self.inner.key.as_deref().ok_or(SignerError::NotConfigured)
    }

    /// Asks KMS which key the configured id names now, and remembers it. N-8: with a
    /// ring, a key the ring does not name is refused (an alias moved outside the ring, by
    /// anyone who could move it, signs nothing).
    async fn resolve(&self) -> Result<PublicKeyInfo, SignerError> {
        let key = match read_key(&self.inner.client, self.key()?).await {
            Ok(k) => k,
            Err(KeyCheckError::NotFound(_)) => return Err(SignerError::NotConfigured),
            Err(e) => return Err(unavailable(e)),
        };
        if let Some(store) = &self.inner.ring {
            let ring = store.key_ring().await.map_err(unavailable)?.ring;
            let named = ring
                .keys
                .iter()
                .any(|k| k.arn == key.arn && k.kid == key.public.kid);
            if !ring.keys.is_empty() && !named {
                tracing::error!(arn = %key.arn, kid = %key.public.kid, "N-8: the alias names a key outside the key ring; it neither signs nor is published");
                return Err(SignerError::Unavailable(
                    "the signing alias names a key outside the key ring".into(),
                ));
            }
        }
        write(&self.inner.arns).insert(key.public.kid.clone(), key.arn);
        *write(&self.inner.current) = Some(Resolved {
            info: key.public.clone(),
            at: Instant::now(),
        });
        Ok(key.public)
    }

    /// The public key that signs now: resolved on first use, then cached and looked at
    /// again in the background once older than the refresh interval.
    pub async fn public_key(&self) -> Result<PublicKeyInfo, SignerError> {
        let cached = read(&self.inner.current).clone();
        if let Some(r) = cached {
            if r.at.elapsed() >= self.inner.refresh {
                self.refresh_in_background();
            }
            return Ok(r.info);
        }
        let _first = self.inner.first.lock().await;
        if let Some(r) = read(&self.inner.current).clone() {
            return Ok(r.info);
        }
        self.resolve().await
    }

    fn refresh_in_background(&self) {
        if self.inner.refreshing.swap(true, Ordering::AcqRel) {
            return;
        }
        let this = self.clone();
        tokio::spawn(async move {
            if let Err(e) = this.resolve().await {
                // The cached key keeps signing; the next call tries again.
                tracing::warn!(error = %e, "could not look at the signing key again");
            }
            this.inner.refreshing.store(false, Ordering::Release);
        });
    }
}

impl KmsProofSigner {
    /// V-5: the public key of ring key `k` as KMS holds it, when KMS vouches for it: the
    /// ARN names an RSA_2048 SIGN_VERIFY key of this deployment (the account and region of
    /// the signing key, `home`) whose thumbprint is the ring's `kid`. A key KMS does not
    /// vouch for is left out and logged; KMS being unreachable is an error (publishing
    /// fewer keys would break the verification of proofs signed by the others).
    async fn vouched(
        &self,
        k: &RingKey,
        home: Option<&str>,
    ) -> Result<Option<PublicKeyInfo>, SignerError> {
        let known = read(&self.inner.vouched).get(&k.arn).cloned();
        let info = match known {
            Some(info) => info,
            None => {
                if home.is_some_and(|h| deployment_of(&k.arn) != Some(h)) {
                    tracing::warn!(arn = %k.arn, kid = %k.kid, "V-5: a ring key outside this deployment's account and region is not published");
                    return Ok(None);
                }
                match read_key(&self.inner.client, &k.arn).await {
                    Ok(key) if key.arn == k.arn => {
                        write(&self.inner.vouched).insert(k.arn.clone(), key.public.clone());
                        key.public
                    }
                    Err(KeyCheckError::Kms(e)) => return Err(SignerError::Unavailable(e)),
                    Ok(_) | Err(_) => {
                        tracing::warn!(arn = %k.arn, kid = %k.kid, "V-5: a ring key that is not a KMS RSA_2048 signing key named by its ARN is not published");
                        return Ok(None);
                    }
                }
            }
        };
        if info.kid != k.kid {
            tracing::warn!(arn = %k.arn, kid = %k.kid, "V-5: a ring key whose kid is not its KMS key's thumbprint is not published");
            return Ok(None);
        }
        Ok(Some(info))
    }
}

/// The `arn:aws:kms:REGION:ACCOUNT` part of a KMS key ARN.
fn deployment_of(arn: &str) -> Option<&str> {
    arn.strip_prefix("arn:")
        .and_then(|_| arn.rsplit_once(":key/"))
        .map(|(home, _)| home)
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[async_trait]
impl ProofSigner for KmsProofSigner {
    async fn key_id(&self) -> Result<String, SignerError> {
        Ok(self.public_key().await?.kid)
    }

    async fn sign_rs256(&self, kid: &str, signing_input: &[u8]) -> Result<Vec<u8>, SignerError> {
        self.key()?;
        let arn = read(&self.inner.arns).get(kid).cloned().ok_or_else(|| {
            SignerError::Unavailable(format!("no resolved signing key {kid}").into())
        })?;
        let out = self
            .inner
            .client
            .sign()
            .key_id(arn)
            .message(Blob::new(signing_input))
            .message_type(MessageType::Raw)
            .signing_algorithm(SigningAlgorithmSpec::RsassaPkcs1V15Sha256)
            .send()
            .await
            .map_err(unavailable)?;
        Ok(out.signature.map(Blob::into_inner).unwrap_or_default())
    }

    async fn verification_key(&self) -> Result<VerificationKey, SignerError> {
        let p = self.public_key().await?;
        Ok(VerificationKey {
            key_id: p.kid,
            public_key_pem: p.pem,
        })
    }

    /// The ring's published keys that KMS vouches for (N-8: never the key the alias names
    /// when the ring lacks it — an alias moved outside the ring publishes nothing). A
    /// signer without a ring (a deployment that never ran `keys` nor `bootstrap`)
    /// publishes the alias's key alone.
    async fn published_keys(&self) -> Result<PublishedKeys, SignerError> {
        // Not the cached answer when it is old: a stale cache would publish a retired key
        // again (this path is not the confirm path, and the document is cached anyway).
        let cached = read(&self.inner.current).clone();
        let signing = match cached {
            Some(r) if r.at.elapsed() < self.inner.refresh => Ok(r.info),
            _ if self.inner.key.is_none() => Err(SignerError::NotConfigured),
            _ => self.resolve().await,
        };
        let signing = match signing {
            Ok(k) => Some(k),
            Err(SignerError::NotConfigured) => None,
            // N-8: an alias outside the ring signs nothing, and the ring is still published.
            Err(e) if self.inner.ring.is_some() => {
                tracing::warn!(error = %e, "the signing key is not usable; the ring is published");
                None
            }
            Err(e) => return Err(e),
        };
        let ring = match &self.inner.ring {
            Some(store) => store.key_ring().await.map_err(unavailable)?.ring,
            None => KeyRing::default(),
        };
        // V-5: the ring names keys; KMS says what they are.
        let home = signing.as_ref().and_then(|k| {
            let arns = read(&self.inner.arns);
            arns.get(&k.kid)
                .and_then(|a| deployment_of(a))
                .map(str::to_owned)
        });
        // N-8: the checkpoint key's ring never retires a key from its published set: a
        // checkpoint or an erasure receipt is kept for years and must still verify.
        let every = self
            .inner
            .ring
            .as_ref()
            .is_some_and(DynamoStore::is_checkpoint_ring);
        let mut keys = Vec::new();
        for k in ring.keys.iter().filter(|k| every || k.status.published()) {
            if let Some(info) = self.vouched(k, home.as_deref()).await? {
                keys.push(PublishedKey {
                    key: VerificationKey {
                        key_id: info.kid,
                        public_key_pem: info.pem,
                    },
                    status: k.status,
                });
            }
        }
        if let Some(k) = signing
            && self.inner.ring.is_none()
            && !keys.iter().any(|p| p.key.key_id == k.kid)
        {
            keys.push(PublishedKey {
                key: VerificationKey {
                    key_id: k.kid,
                    public_key_pem: k.pem,
                },
                status: KeyStatus::Active,
            });
        }
        if keys.is_empty() {
            return Err(SignerError::NotConfigured);
        }
        Ok(PublishedKeys {
            cache_seconds: ring.cache_seconds,
            keys,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;

    /// A key as OpenSSL exports it (the provider kit's test key), standing in for KMS's
    /// `GetPublicKey` DER; its thumbprint was computed independently of this code.
    const PEM: &str = include_str!("../../provider-kit/tests/keys/trusted.pub.pem");
    const KID: &str = "oUEFlnJkysellaxiXoyt4hfOFlJSFjjS0T0nZ2XoCSg";

    /// RFC 7638 §3.1's example key and thumbprint.
    #[test]
    fn thumbprint_matches_rfc7638_example() {
        let n = "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw";
        assert_eq!(
            rsa_jwk_thumbprint(n, "AQAB"),
            "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
        );
    }

    /// What KMS returns becomes the `kid`, the PEM tenants install (byte for byte what
    /// OpenSSL writes) and a JWK whose members give the same `kid`.
    #[test]
    fn public_key_info_gives_kid_pem_and_jwk() {
        let body: String = PEM.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = STANDARD.decode(body).unwrap();
        let info = public_key_info(&der).unwrap();
        assert_eq!(info.kid, KID);
        assert_eq!(info.pem, PEM);
        assert_eq!(info.jwk["kid"], KID);
        assert_eq!(info.jwk["e"], "AQAB");
        assert_eq!(
            rsa_jwk_thumbprint(
                info.jwk["n"].as_str().unwrap(),
                info.jwk["e"].as_str().unwrap()
            ),
            KID
        );
    }

    #[test]
    fn garbage_der_is_refused() {
        assert!(public_key_info(b"not a key").is_err());
        assert!(public_key_info(&[]).is_err());
    }

    /// V-5: a ring ARN is held to the signing key's account and region.
    #[test]
    fn v5_deployment_of_a_key_arn() {
        assert_eq!(
            deployment_of("arn:aws:kms:us-east-1:123456789012:key/1234-abcd"),
            Some("arn:aws:kms:us-east-1:123456789012")
        );
        assert_eq!(deployment_of("alias/countersign-actions"), None);
        assert_eq!(deployment_of("1234-abcd"), None);
    }
}
