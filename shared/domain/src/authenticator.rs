//! F-2, F-3, F-6: a software authenticator — the certification's platform test credential
//! (F-6: the consented positive step-up case, and each wrong one) and the tests'. It makes
//! a passkey (`create`'s client data and authenticator data) and asserts over a challenge
//! (`get`), as a browser returns them, with the flags, counter, origin and RP ID its user
//! chooses — so each check can be met wrongly on purpose. Never a person's credential:
//! its keys are derived from a public seed.

use crate::enrolment::registration_data;
use crate::stepup::{Assertion, CredentialKey};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::json;
use sha2::{Digest as _, Sha256};

/// The authenticator data's flags.
pub const UP: u8 = 0x01;
/// User verified.
pub const UV: u8 = 0x04;
/// Attested credential data follows.
pub const AT: u8 = 0x40;

/// A passkey's key.
#[derive(Debug, Clone)]
pub enum DeviceKey {
    /// ES256 (P-256).
    Es256(p256::ecdsa::SigningKey),
    /// EdDSA (Ed25519).
    Ed25519(ed25519_dalek::SigningKey),
}

/// One passkey on one authenticator, and the browser it runs in.
#[derive(Debug, Clone)]
pub struct Authenticator {
    /// The key.
    pub key: DeviceKey,
    /// The credential id.
    pub id: Vec<u8>,
    /// The RP ID it was made for (and asserts for).
    pub rp_id: String,
    /// The origin the browser reports.
    pub origin: String,
    /// The counter it reports next (incremented by each assertion unless 0).
    pub count: u32,
    /// The flags it sets.
    pub flags: u8,
}

impl Authenticator {
    /// An ES256 passkey from `seed`, for `rp_id` on `origin`, counting from 1.
    pub fn es256(seed: u8, rp_id: &str, origin: &str) -> Self {
        // 32 equal non-zero bytes are a scalar below the curve's order: always a key.
        #[allow(clippy::expect_used)]
        let key = p256::ecdsa::SigningKey::from_slice(&[seed.max(1); 32]).expect("a P-256 scalar");
        Self {
            key: DeviceKey::Es256(key),
            id: format!("credential-{seed}").into_bytes(),
            rp_id: rp_id.into(),
            origin: origin.into(),
            count: 1,
            flags: UP | UV,
        }
    }

    /// An Ed25519 passkey from `seed` that always reports counter 0 (a synced passkey).
    pub fn ed25519(seed: u8, rp_id: &str, origin: &str) -> Self {
        Self {
            key: DeviceKey::Ed25519(ed25519_dalek::SigningKey::from_bytes(&[seed; 32])),
            id: format!("synced-{seed}").into_bytes(),
            rp_id: rp_id.into(),
            origin: origin.into(),
            count: 0,
            flags: UP | UV,
        }
    }

    /// The credential id as it travels.
    pub fn id_text(&self) -> String {
        URL_SAFE_NO_PAD.encode(&self.id)
    }

    /// The public key.
    pub fn public_key(&self) -> CredentialKey {
        match &self.key {
            DeviceKey::Es256(k) => {
                let point = k.verifying_key().to_encoded_point(false);
                let coordinate = |c: Option<&p256::FieldBytes>| {
                    c.and_then(|b| <[u8; 32]>::try_from(b.as_slice()).ok())
                        .unwrap_or([0; 32])
                };
                CredentialKey::Es256 {
                    x: coordinate(point.x()),
                    y: coordinate(point.y()),
                }
            }
            DeviceKey::Ed25519(k) => CredentialKey::Ed25519 {
                x: k.verifying_key().to_bytes(),
            },
        }
    }

    fn sign(&self, data: &[u8]) -> Vec<u8> {
        match &self.key {
            DeviceKey::Es256(k) => {
                use p256::ecdsa::signature::Signer as _;
                let sig: p256::ecdsa::Signature = k.sign(data);
                sig.to_der().as_bytes().to_vec()
            }
            DeviceKey::Ed25519(k) => {
                use ed25519_dalek::Signer as _;
                k.sign(data).to_bytes().to_vec()
            }
        }
    }

    fn client_data(&self, kind: &str, challenge: &[u8]) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "type": kind,
            "challenge": URL_SAFE_NO_PAD.encode(challenge),
            "origin": self.origin,
            "crossOrigin": false,
        }))
        .unwrap_or_default()
    }

    /// What `create` returns for `challenge`: client data JSON and authenticator data.
    pub fn register(&self, challenge: &[u8]) -> (Vec<u8>, Vec<u8>) {
        (
            self.client_data("webauthn.create", challenge),
            registration_data(
                &self.rp_id,
                self.flags | AT,
                self.count,
                &self.id,
                &self.public_key(),
            ),
        )
    }

    /// What `get` returns for `challenge` (the counter moves first, unless it is 0).
    pub fn assert(&mut self, challenge: &[u8]) -> Assertion {
        self.assert_as("webauthn.get", challenge)
    }

    /// An assertion whose client data says `kind` (a wrong one, for the checks of type).
    pub fn assert_as(&mut self, kind: &str, challenge: &[u8]) -> Assertion {
        if self.count > 0 {
            self.count += 1;
        }
        let client_data_json = self.client_data(kind, challenge);
        let mut data = Sha256::digest(self.rp_id.as_bytes()).to_vec();
        data.push(self.flags);
        data.extend_from_slice(&self.count.to_be_bytes());
        let mut signed = data.clone();
        signed.extend_from_slice(&Sha256::digest(&client_data_json));
        Assertion {
            signature: self.sign(&signed),
            authenticator_data: data,
            client_data_json,
        }
    }
}
