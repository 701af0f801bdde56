//! The proof signer (A-31, K-1).

use super::store::Cause;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// A signer failure.
#[derive(Debug, thiserror::Error)]
pub enum SignerError {
    /// No signing key is installed (C-5: `actionVerification: null`; C-6).
    #[error("no action signing key is installed")]
    NotConfigured,
    /// The key service failed.
    #[error("the signing service is unavailable")]
    Unavailable(#[source] Cause),
}

/// The public half of the action signing key, as shown to tenants (C-5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerificationKey {
    /// The `kid` proofs carry.
    pub key_id: String,
    /// SPKI PEM.
    pub public_key_pem: String,
}

/// One key of the JWKS (K-1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedKey {
    /// Its `kid` and PEM.
    pub key: VerificationKey,
    /// Announced, active or previous.
    pub status: KeyStatus,
}

/// The JWKS's content (K-1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedKeys {
    /// `Cache-Control: max-age`, seconds.
    pub cache_seconds: i64,
    /// The keys, oldest first; exactly one is active.
    pub keys: Vec<PublishedKey>,
}

/// Signs proofs. The private key never leaves the implementation (KMS).
#[async_trait]
pub trait ProofSigner: Send + Sync {
    /// The `kid` of the key that signs now (it may change between calls: a rotation).
    async fn key_id(&self) -> Result<String, SignerError>;
    /// The RS256 (RSASSA-PKCS1-v1_5 with SHA-256) signature of `signing_input` with the
    /// key whose thumbprint is `kid` (one [`Self::key_id`] returned), so that the header's
    /// `kid` always names the key that signed, even when the active key switches between
    /// the two calls.
    async fn sign_rs256(&self, kid: &str, signing_input: &[u8]) -> Result<Vec<u8>, SignerError>;
    /// The public key that signs now, for tenants to install (C-5).
    async fn verification_key(&self) -> Result<VerificationKey, SignerError> {
        Err(SignerError::NotConfigured)
    }
    /// Every key that verifies proofs, or soon will (K-1): the active one, an announced
    /// one and previous ones whose proofs may still be valid; and the JWKS cache time.
    /// By default, the signing key alone.
    async fn published_keys(&self) -> Result<PublishedKeys, SignerError> {
        let key = self.verification_key().await?;
        Ok(PublishedKeys {
            cache_seconds: DEFAULT_CACHE_SECONDS,
            keys: vec![PublishedKey {
                status: KeyStatus::Active,
                key,
            }],
        })
    }
}

/// The JWKS cache time a new key ring starts with.
pub const DEFAULT_CACHE_SECONDS: i64 = 300;

/// Where a key is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyStatus {
    /// Published, not signing yet.
    Announced,
    /// Signs new proofs (exactly one key at a time).
    Active,
    /// Stopped signing; published until its proofs have expired.
    Previous,
    /// Withdrawn from the JWKS; kept as history.
    Retired,
}

impl KeyStatus {
    /// Lowercase name, as the JWKS view and the CLI show it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Announced => "announced",
            Self::Active => "active",
            Self::Previous => "previous",
            Self::Retired => "retired",
        }
    }

    /// Whether the JWKS lists keys in this state.
    pub fn published(self) -> bool {
        !matches!(self, Self::Retired)
    }
}
