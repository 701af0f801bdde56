//! The KMS adapter of the proof signer: `Sign` with `RSASSA_PKCS1_V1_5_SHA_256` and
//! `MessageType: RAW` (KMS hashes the signing input itself; the JWS signing input is far
//! below the 4,096-byte RAW limit). The public key is fetched once per process and cached;
//! `kid` is its RFC 7638 JWK thumbprint.

use crate::calls::CallLog;
use async_trait::async_trait;
use aws_sdk_kms::Client;
use aws_sdk_kms::primitives::Blob;
use aws_sdk_kms::types::{MessageType, SigningAlgorithmSpec};
use countersign_domain::jwk::{JwkError, rsa_public_key, spki_pem};
use countersign_domain::ports::{ProofSigner, SignerError, VerificationKey};
use tokio::sync::OnceCell;

/// RFC 7638 thumbprint of an RSA JWK from its base64url `n` and `e` (the domain's).
pub use countersign_domain::jwk::rsa_jwk_thumbprint;

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
}
