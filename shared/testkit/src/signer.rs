//! A proof signer that can be present, absent or down. Its "signature" is a SHA-256 of the
//! signing input: use-case tests check who signs what and when, not RSA (the KMS
//! adapter's tests verify real RS256 signatures).

use crate::faults::{Fault, Faults};
use async_trait::async_trait;
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ports::{ProofSigner, SignerError, VerificationKey};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The signer. `faults` plans failures for `key_id` and `sign`.
#[derive(Debug, Default)]
pub struct FakeSigner {
    absent: AtomicBool,
    signed: AtomicUsize,
    /// Fault switches.
    pub faults: Faults,
}

impl FakeSigner {
    /// The `kid` it reports.
    pub const KEY_ID: &'static str = "test-key-1";

    /// No signing key installed (C-6) while set.
    pub fn set_absent(&self, absent: bool) {
        self.absent.store(absent, Ordering::SeqCst);
    }

    /// How many signatures it made.
    pub fn signed(&self) -> usize {
        self.signed.load(Ordering::SeqCst)
    }

    fn check(&self, op: &str) -> Result<(), SignerError> {
        if self.absent.load(Ordering::SeqCst) {
            return Err(SignerError::NotConfigured);
        }
        match self.faults.take(op) {
            Some(Fault::Unavailable | Fault::Timeout | Fault::LostResponse | Fault::Hang) => Err(
                SignerError::Unavailable(format!("fake signer: planned fault in {op}").into()),
            ),
            Some(Fault::Conflict) | None => Ok(()),
        }
    }
}

#[async_trait]
impl ProofSigner for FakeSigner {
    async fn key_id(&self) -> Result<String, SignerError> {
        self.check("key_id")?;
        Ok(Self::KEY_ID.to_owned())
    }

    async fn sign_rs256(&self, kid: &str, signing_input: &[u8]) -> Result<Vec<u8>, SignerError> {
        self.check("sign")?;
        if kid != Self::KEY_ID {
            return Err(SignerError::Unavailable(
                format!("fake signer: no key {kid}").into(),
            ));
        }
        self.signed.fetch_add(1, Ordering::SeqCst);
        Ok(Sha256Hex::digest(signing_input)
            .as_str()
            .as_bytes()
            .to_vec())
    }

    async fn verification_key(&self) -> Result<VerificationKey, SignerError> {
        self.check("verification_key")?;
        Ok(VerificationKey {
            key_id: Self::KEY_ID.to_owned(),
            public_key_pem: "-----BEGIN PUBLIC KEY-----\nTEST\n-----END PUBLIC KEY-----\n"
                .to_owned(),
        })
    }
}
