//! The KMS adapter of the proof signer (A-31): `Sign` with `RSASSA_PKCS1_V1_5_SHA_256` and
//! `MessageType: RAW` (KMS hashes the signing input itself; the JWS signing input is far
//! below the 4,096-byte RAW limit). The public key is fetched once per process and cached;
//! `kid` is its RFC 7638 JWK thumbprint.

use crate::calls::CallLog;
use async_trait::async_trait;
use aws_sdk_kms::Client;
use aws_sdk_kms::primitives::Blob;
use aws_sdk_kms::types::{MessageType, SigningAlgorithmSpec};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_domain::ports::{ProofSigner, SignerError, VerificationKey};
use rsa::RsaPublicKey;
use rsa::pkcs8::{DecodePublicKey, EncodePublicKey, LineEnding};
use rsa::traits::PublicKeyParts;
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;

/// The public half of the signing key, in the forms tenants install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKeyInfo {
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
pub struct KeyFormatError;

/// RFC 7638 thumbprint of an RSA JWK given its base64url `n` and `e`: SHA-256 over the
/// required members in lexicographic order, no white space, base64url without padding.
pub fn rsa_jwk_thumbprint(n: &str, e: &str) -> String {
    let canonical = format!(r#"{{"e":"{e}","kty":"RSA","n":"{n}"}}"#);
    URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
}

/// Reads a DER SubjectPublicKeyInfo (what KMS `GetPublicKey` returns).
pub fn public_key_info(der: &[u8]) -> Result<PublicKeyInfo, KeyFormatError> {
    let key = RsaPublicKey::from_public_key_der(der).map_err(|_| KeyFormatError)?;
    let n = URL_SAFE_NO_PAD.encode(key.n().to_bytes_be());
    let e = URL_SAFE_NO_PAD.encode(key.e().to_bytes_be());
    let kid = rsa_jwk_thumbprint(&n, &e);
    let pem = key
        .to_public_key_pem(LineEnding::LF)
        .map_err(|_| KeyFormatError)?;
    let jwk =
        serde_json::json!({"kty": "RSA", "n": n, "e": e, "alg": "RS256", "use": "sig", "kid": kid});
    Ok(PublicKeyInfo { kid, pem, jwk })
}

/// Signs proofs with a KMS asymmetric key. The private key never leaves KMS.
#[derive(Debug)]
pub struct KmsProofSigner {
    client: Client,
    key: Option<String>,
    public: OnceCell<PublicKeyInfo>,
}

fn unavailable<E: std::error::Error + Send + Sync + 'static>(e: E) -> SignerError {
    SignerError::Unavailable(Box::new(e))
}

impl KmsProofSigner {
    /// A signer for `key` (id, ARN or `alias/…`); `None` means no key is installed.
    pub fn new(client: Client, key: Option<String>) -> Self {
        Self {
            client,
            key,
            public: OnceCell::new(),
        }
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
        self.key.as_deref().ok_or(SignerError::NotConfigured)
    }

    /// The public key, fetched from KMS on first use and then cached for the process.
    pub async fn public_key(&self) -> Result<&PublicKeyInfo, SignerError> {
        let key = self.key()?;
        self.public
            .get_or_try_init(|| async {
                let out = match self.client.get_public_key().key_id(key).send().await {
                    Ok(out) => out,
                    Err(e)
                        if e.as_service_error()
                            .is_some_and(|s| s.is_not_found_exception()) =>
                    {
                        return Err(SignerError::NotConfigured);
                    }
                    Err(e) => return Err(unavailable(e)),
                };
                let der = out.public_key.ok_or(SignerError::NotConfigured)?;
                public_key_info(der.as_ref()).map_err(unavailable)
            })
            .await
    }
}

#[async_trait]
impl ProofSigner for KmsProofSigner {
    async fn key_id(&self) -> Result<String, SignerError> {
        Ok(self.public_key().await?.kid.clone())
    }

    async fn sign_rs256(&self, signing_input: &[u8]) -> Result<Vec<u8>, SignerError> {
        let out = self
            .client
            .sign()
            .key_id(self.key()?)
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
            key_id: p.kid.clone(),
            public_key_pem: p.pem.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7638 §3.1's example key and thumbprint.
    #[test]
    fn thumbprint_matches_rfc7638_example() {
        let n = "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw";
        assert_eq!(
            rsa_jwk_thumbprint(n, "AQAB"),
            "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
        );
    }

    #[test]
    fn garbage_der_is_refused() {
        assert!(public_key_info(b"not a key").is_err());
    }
}
