//! F-3: the passkey step-up — the challenge that binds one exact action, and the check of
//! a WebAuthn assertion over it. Pure: both the platform (before it signs a step-up
//! proof) and a tenant's verifier (the provider kit, which recomputes the challenge from
//! the proof's own claims) run this same code.
//!
//! Why our own verifier: a general WebAuthn library chooses the challenge itself, and this
//! one must be computed from the action (FIELD-NOTES: `webauthn-rs` takes no caller-chosen
//! challenge). What it checks is W3C WebAuthn Level 2 §7.2 steps 11–21 for an assertion:
//! client data type, challenge and origin; the RP ID hash, the user-present and
//! user-verified flags and the signature counter in the authenticator data; the signature
//! over `authenticatorData ‖ SHA-256(clientDataJSON)` by the enrolled key (ES256, high-S
//! accepted as some authenticators emit it; EdDSA).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

/// The first field of every challenge: the scheme and its version, so a challenge can
/// never be read as another protocol's.
pub const CHALLENGE_TAG: &str = "countersign-stepup-v1";

/// The `typ` of a proof that carries a step-up (F-4).
pub const STEPUP_PROOF_TYPE: &str = "support-action-stepup+jwt";

/// The action a challenge binds: every field the person's countersign is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding<'a> {
    /// `tenantId`.
    pub tenant: &'a str,
    /// `conversationId`.
    pub conversation: &'a str,
    /// `actionId`.
    pub action: &'a str,
    /// `operation`.
    pub operation: &'a str,
    /// `argumentsHash`.
    pub arguments_hash: &'a str,
    /// `summaryHash`.
    pub summary_hash: &'a str,
    /// The presented message's id.
    pub presented_message: &'a str,
    /// The single-use nonce the platform issued for this ceremony.
    pub nonce: &'a str,
}

impl<'a> Binding<'a> {
    /// The binding a proof's own claims make with `nonce`: what a tenant's verifier (and
    /// the certification, which forges step-ups) recompute.
    pub fn of_claims(claims: &'a crate::proof::ProofClaims, nonce: &'a str) -> Self {
        Self {
            tenant: &claims.tenant_id,
            conversation: &claims.conversation_id,
            action: &claims.action_id,
            operation: &claims.operation,
            arguments_hash: &claims.arguments_hash,
            summary_hash: &claims.summary_hash,
            presented_message: &claims.presented_message_id,
            nonce,
        }
    }

    /// `SHA-256(tag ‖ tenant ‖ conversation ‖ action ‖ operation ‖ argumentsHash ‖
    /// summaryHash ‖ presentedMessageId ‖ nonce)`, each field prefixed by its length in
    /// bytes (4 bytes, big-endian), so no two different bindings hash the same bytes.
    pub fn challenge(&self) -> [u8; 32] {
        let mut h = Sha256::new();
        for field in [
            CHALLENGE_TAG,
            self.tenant,
            self.conversation,
            self.action,
            self.operation,
            self.arguments_hash,
            self.summary_hash,
            self.presented_message,
            self.nonce,
        ] {
            let len = u32::try_from(field.len()).unwrap_or(u32::MAX);
            h.update(len.to_be_bytes());
            h.update(field.as_bytes());
        }
        h.finalize().into()
    }
}

/// An enrolled credential's public key, as a JWK (F-4 carries it so).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialKey {
    /// ES256: an ECDSA P-256 point.
    Es256 {
        /// The x coordinate.
        x: [u8; 32],
        /// The y coordinate.
        y: [u8; 32],
    },
    /// EdDSA: an Ed25519 public key.
    Ed25519 {
        /// The key.
        x: [u8; 32],
    },
}

impl CredentialKey {
    /// Reads a public JWK (`kty: EC, crv: P-256` or `kty: OKP, crv: Ed25519`).
    pub fn from_jwk(jwk: &Value) -> Result<Self, StepUpError> {
        let coordinate = |name: &str| -> Result<[u8; 32], StepUpError> {
            let raw = jwk[name]
                .as_str()
                .ok_or(StepUpError::Key("a coordinate is missing"))?;
            let bytes = URL_SAFE_NO_PAD
                .decode(raw)
                .map_err(|_| StepUpError::Key("a coordinate is not base64url"))?;
            bytes
                .try_into()
                .map_err(|_| StepUpError::Key("a coordinate is not 32 bytes"))
        };
        match (jwk["kty"].as_str(), jwk["crv"].as_str()) {
            (Some("EC"), Some("P-256")) => Ok(Self::Es256 {
                x: coordinate("x")?,
                y: coordinate("y")?,
            }),
            (Some("OKP"), Some("Ed25519")) => Ok(Self::Ed25519 {
                x: coordinate("x")?,
            }),
            _ => Err(StepUpError::Key(
                "only ES256 (P-256) and EdDSA (Ed25519) keys",
            )),
        }
    }

    /// The public JWK.
    pub fn to_jwk(&self) -> Value {
        let b64 = |b: &[u8]| URL_SAFE_NO_PAD.encode(b);
        match self {
            Self::Es256 { x, y } => json!({"kty": "EC", "crv": "P-256", "x": b64(x), "y": b64(y)}),
            Self::Ed25519 { x } => json!({"kty": "OKP", "crv": "Ed25519", "x": b64(x)}),
        }
    }

    /// Whether `signature` is this key's over `signed`.
    fn verifies(&self, signed: &[u8], signature: &[u8]) -> bool {
        match self {
            Self::Es256 { x, y } => {
                use p256::ecdsa::signature::Verifier as _;
                let mut sec1 = [0_u8; 65];
                sec1[0] = 4;
                sec1[1..33].copy_from_slice(x);
                sec1[33..].copy_from_slice(y);
                let (Ok(key), Ok(sig)) = (
                    p256::ecdsa::VerifyingKey::from_sec1_bytes(&sec1),
                    p256::ecdsa::Signature::from_der(signature),
                ) else {
                    return false;
                };
                // Some authenticators emit high-S signatures; both forms of one signature
                // are the same signature, so check its low-S form.
                let sig = sig.normalize_s().unwrap_or(sig);
                key.verify(signed, &sig).is_ok()
            }
            Self::Ed25519 { x } => {
                let (Ok(key), Ok(sig)) = (
                    ed25519_dalek::VerifyingKey::from_bytes(x),
                    ed25519_dalek::Signature::from_slice(signature),
                ) else {
                    return false;
                };
                key.verify_strict(signed, &sig).is_ok()
            }
        }
    }
}

/// F-3: where the ceremonies run — the confirmation page's origin and the RP ID its
/// credentials are made for (its host) — as `actionVerification` publishes it
/// (`stepUpRpId`, `stepUpOrigins`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    /// The RP ID.
    pub rp_id: String,
    /// The origins a ceremony may run on.
    pub origins: Vec<String>,
}

impl Site {
    /// The site of the confirmation page at `origin` (`https://host[:port]`, or
    /// `http://localhost[:port]` where `local` allows it: browsers treat only that plain
    /// http origin as secure, and an IP address can never be an RP ID).
    pub fn from_origin(origin: &str, local: bool) -> Result<Self, &'static str> {
        let url = url::Url::parse(origin).map_err(|_| "not a URL")?;
        let host = match url.host() {
            Some(url::Host::Domain(d)) => d.to_owned(),
            Some(_) => return Err("an RP ID must be a domain name, not an IP address"),
            None => return Err("no host"),
        };
        let plain_local = url.scheme() == "http" && local && host == "localhost";
        if url.scheme() != "https" && !plain_local {
            return Err("must be https (http only for localhost on the local stack)");
        }
        if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
            return Err("an origin only: scheme, host and port");
        }
        Ok(Self {
            rp_id: host,
            origins: vec![url.origin().ascii_serialization()],
        })
    }
}

/// What a WebAuthn `get` returned, as the browser gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assertion {
    /// `authenticatorData`.
    pub authenticator_data: Vec<u8>,
    /// `clientDataJSON`, as bytes (its hash is signed, so never re-serialised).
    pub client_data_json: Vec<u8>,
    /// `signature`.
    pub signature: Vec<u8>,
}

/// What an assertion must match.
#[derive(Debug, Clone, Copy)]
pub struct Expected<'a> {
    /// The challenge of the action's binding.
    pub challenge: [u8; 32],
    /// The origins the ceremony may run on (the platform's confirmation page).
    pub origins: &'a [String],
    /// The RP ID the credential was made for.
    pub rp_id: &'a str,
    /// The credential's stored signature counter; `None` where it is not known (a
    /// tenant's verifier: the platform keeps the counter and checks it).
    pub sign_count: Option<u32>,
}

/// A verified assertion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verified {
    /// The authenticator's counter now (store it: the next must be greater, or 0 again).
    pub sign_count: u32,
}

/// Why an assertion is refused: one name per check, so a test can hold each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StepUpError {
    /// The credential key cannot be read.
    #[error("credential key: {0}")]
    Key(&'static str),
    /// The assertion cannot be read.
    #[error("malformed assertion: {0}")]
    Malformed(&'static str),
    /// `clientDataJSON.type` is not `webauthn.get`.
    #[error("not an assertion (client data type)")]
    Type,
    /// The challenge is another action's (or another nonce's).
    #[error("the challenge is not this action's")]
    Challenge,
    /// The origin is not one the ceremony may run on (or it ran in a cross-origin frame).
    #[error("the ceremony ran on another origin")]
    Origin,
    /// The credential was made for another RP ID.
    #[error("the credential is another site's (RP ID)")]
    RpId,
    /// The user-present flag is off.
    #[error("no user presence (UP)")]
    UserPresence,
    /// The user-verified flag is off.
    #[error("no user verification (UV)")]
    UserVerification,
    /// The signature is not the enrolled key's over this data.
    #[error("the signature does not verify with the enrolled key")]
    Signature,
    /// The signature counter went back (a cloned authenticator).
    #[error("the signature counter went back")]
    Counter,
    /// The credential is not one the tenant pinned for this person.
    #[error("the credential is not one the tenant pinned for this person")]
    NotPinned,
}

/// The authenticator data's user-present flag.
const UP: u8 = 0x01;
/// The authenticator data's user-verified flag.
const UV: u8 = 0x04;

/// The checks a ceremony's client data must pass (WebAuthn §7.1 steps 7–10, §7.2 steps
/// 11–14): its `type` is `kind`, its challenge `challenge`, its origin one of `origins`, and
/// it ran top-level (not in a cross-origin frame).
pub(crate) fn check_client_data(
    client_data_json: &[u8],
    kind: &str,
    challenge: &[u8],
    origins: &[String],
) -> Result<(), StepUpError> {
    let client: Value = serde_json::from_slice(client_data_json)
        .map_err(|_| StepUpError::Malformed("clientDataJSON is not JSON"))?;
    if client["type"] != kind {
        return Err(StepUpError::Type);
    }
    if client["challenge"].as_str() != Some(URL_SAFE_NO_PAD.encode(challenge).as_str()) {
        return Err(StepUpError::Challenge);
    }
    let origin = client["origin"].as_str().unwrap_or("");
    if !origins.iter().any(|o| o == origin) || client["crossOrigin"] == true {
        return Err(StepUpError::Origin);
    }
    Ok(())
}

/// The checks the authenticator data's head must pass: `min_len` bytes at least, the RP ID
/// hash of `rp_id`, user present and user verified. Returns the flags.
pub(crate) fn check_authenticator_data(
    data: &[u8],
    min_len: usize,
    too_short: &'static str,
    rp_id: &str,
) -> Result<u8, StepUpError> {
    if data.len() < min_len {
        return Err(StepUpError::Malformed(too_short));
    }
    if data[..32] != Sha256::digest(rp_id.as_bytes())[..] {
        return Err(StepUpError::RpId);
    }
    let flags = data[32];
    if flags & UP == 0 {
        return Err(StepUpError::UserPresence);
    }
    if flags & UV == 0 {
        return Err(StepUpError::UserVerification);
    }
    Ok(flags)
}

/// F-3: checks `assertion` by `key` against `expected`, every check of WebAuthn's
/// assertion verification; the first that fails is the error.
pub fn verify_assertion(
    key: &CredentialKey,
    assertion: &Assertion,
    expected: &Expected<'_>,
) -> Result<Verified, StepUpError> {
    check_client_data(
        &assertion.client_data_json,
        "webauthn.get",
        &expected.challenge,
        expected.origins,
    )?;
    let data = &assertion.authenticator_data;
    let too_short = "authenticatorData is shorter than 37 bytes";
    check_authenticator_data(data, 37, too_short, expected.rp_id)?;
    let mut signed = data.clone();
    signed.extend_from_slice(&Sha256::digest(&assertion.client_data_json));
    if !key.verifies(&signed, &assertion.signature) {
        return Err(StepUpError::Signature);
    }
    let sign_count = u32::from_be_bytes([data[33], data[34], data[35], data[36]]);
    // A synced passkey always reports 0: 0 after 0 is no regression. Otherwise it must grow.
    if let Some(stored) = expected.sign_count
        && !((sign_count == 0 && stored == 0) || sign_count > stored)
    {
        return Err(StepUpError::Counter);
    }
    Ok(Verified { sign_count })
}

/// F-4: what a step-up proof carries besides the fourteen claims (`stepUp`): the
/// assertion as the browser returned it and the credential that made it, so the tenant's
/// server can check it on its own. Binary values are base64url without padding.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Evidence {
    /// The credential's id.
    pub credential_id: String,
    /// The credential's public key (a JWK, [`CredentialKey::to_jwk`]).
    pub credential_key: Value,
    /// `authenticatorData`.
    pub authenticator_data: String,
    /// `clientDataJSON` (WebAuthn's own spelling).
    #[serde(rename = "clientDataJSON")]
    pub client_data_json: String,
    /// `signature`.
    pub signature: String,
    /// The nonce the challenge was made with.
    pub nonce: String,
}

/// The `amr` of a step-up proof (RFC 8176): a proof of possession of a key, by a present
/// user, verified by the authenticator — nothing else is claimed.
pub const AMR: [&str; 3] = ["pop", "user", "mfa"];

impl Evidence {
    /// The evidence of `assertion` by credential `id` with `key`, for `nonce`.
    pub fn of(id: &[u8], key: &CredentialKey, assertion: &Assertion, nonce: &str) -> Self {
        Self {
            credential_id: URL_SAFE_NO_PAD.encode(id),
            credential_key: key.to_jwk(),
            authenticator_data: URL_SAFE_NO_PAD.encode(&assertion.authenticator_data),
            client_data_json: URL_SAFE_NO_PAD.encode(&assertion.client_data_json),
            signature: URL_SAFE_NO_PAD.encode(&assertion.signature),
            nonce: nonce.to_owned(),
        }
    }

    /// The assertion and key it carries.
    pub fn assertion(&self) -> Result<(CredentialKey, Assertion), StepUpError> {
        let bytes = |s: &str, what: &'static str| {
            URL_SAFE_NO_PAD
                .decode(s)
                .map_err(|_| StepUpError::Malformed(what))
        };
        Ok((
            CredentialKey::from_jwk(&self.credential_key)?,
            Assertion {
                authenticator_data: bytes(
                    &self.authenticator_data,
                    "authenticatorData is not base64url",
                )?,
                client_data_json: bytes(&self.client_data_json, "clientDataJSON is not base64url")?,
                signature: bytes(&self.signature, "signature is not base64url")?,
            },
        ))
    }

    /// F-5: the check a tenant's server makes of a step-up proof's evidence, on its own:
    /// the challenge recomputed from the proof's own claims, the assertion checked against
    /// the platform's published step-up RP ID and origins, and — when the tenant pinned
    /// the person's credentials — the key one of theirs. The signature counter is the
    /// platform's to keep (it is not checked here).
    pub fn verify(
        &self,
        claims: &crate::proof::ProofClaims,
        rp_id: &str,
        origins: &[String],
        pinned: Option<&[CredentialKey]>,
    ) -> Result<Verified, StepUpError> {
        let (key, assertion) = self.assertion()?;
        if pinned.is_some_and(|keys| !keys.contains(&key)) {
            return Err(StepUpError::NotPinned);
        }
        let binding = Binding::of_claims(claims, &self.nonce);
        let expected = Expected {
            challenge: binding.challenge(),
            origins,
            rp_id,
            sign_count: None,
        };
        verify_assertion(&key, &assertion, &expected)
    }
}

/// F-4: a step-up proof's claim set split into the fourteen claims (unknown ones refused,
/// as in every proof), its evidence and its `amr`.
pub fn split_claims(
    mut claims: Value,
) -> Result<(crate::proof::ProofClaims, Evidence, Vec<String>), StepUpError> {
    let object = claims
        .as_object_mut()
        .ok_or(StepUpError::Malformed("the claims are not an object"))?;
    let evidence = object
        .remove("stepUp")
        .ok_or(StepUpError::Malformed("no stepUp claim"))?;
    let amr = object
        .remove("amr")
        .ok_or(StepUpError::Malformed("no amr claim"))?;
    let evidence: Evidence = serde_json::from_value(evidence)
        .map_err(|_| StepUpError::Malformed("stepUp is not the evidence of an assertion"))?;
    let amr: Vec<String> =
        serde_json::from_value(amr).map_err(|_| StepUpError::Malformed("amr is not a list"))?;
    if amr.iter().any(|m| !AMR.contains(&m.as_str())) {
        return Err(StepUpError::Malformed(
            "amr claims more than pop, user, mfa",
        ));
    }
    let base = serde_json::from_value(claims)
        .map_err(|_| StepUpError::Malformed("the claims are not a proof's"))?;
    Ok((base, evidence, amr))
}

/// F-4: signs a step-up proof (`typ: support-action-stepup+jwt`): `claims` (the fourteen)
/// with `stepUp` and `amr` from the verified `evidence` of the person's passkey over this
/// very action.
pub async fn sign_stepup_proof(
    signer: &dyn crate::ports::signer::ProofSigner,
    claims: &crate::proof::ProofClaims,
    evidence: &Evidence,
) -> Result<crate::proof::Proof, crate::proof::ProofError> {
    let kid = signer.key_id().await?;
    let header = crate::proof::ProofHeader {
        typ: STEPUP_PROOF_TYPE,
        ..crate::proof::ProofHeader::new(kid.clone())
    };
    let unsigned = crate::proof::UnsignedProof::encoded(&header, &join_claims(claims, evidence));
    let signature = signer.sign_rs256(&kid, unsigned.signing_input()).await?;
    unsigned.finish(&signature)
}

/// F-4: a step-up proof's claim set: the fourteen claims, `stepUp` and `amr`.
pub fn join_claims(base: &crate::proof::ProofClaims, evidence: &Evidence) -> Value {
    let mut claims = serde_json::to_value(base).unwrap_or(Value::Null);
    if let Some(object) = claims.as_object_mut() {
        object.insert(
            "stepUp".into(),
            serde_json::to_value(evidence).unwrap_or(Value::Null),
        );
        object.insert("amr".into(), json!(AMR));
    }
    claims
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const RP: &str = "confirm.countersign.example";
    const ORIGIN: &str = "https://confirm.countersign.example";

    fn binding(nonce: &str) -> Binding<'_> {
        Binding {
            tenant: "ten_01JDZ6Y5X1QW9T3V7N2K4M8P0R",
            conversation: "case_01JDZ6Y5X1QW9T3V7N2K4M8P0R",
            action: "act_1",
            operation: "reassign_session_car",
            arguments_hash: "a".repeat(64).leak(),
            summary_hash: "b".repeat(64).leak(),
            presented_message: "msg_1",
            nonce,
        }
    }

    /// An authenticator for the tests: an ES256 or an Ed25519 key, fixed.
    enum Device {
        Es256(p256::ecdsa::SigningKey),
        Ed25519(ed25519_dalek::SigningKey),
    }

    impl Device {
        fn es256() -> Self {
            Self::Es256(p256::ecdsa::SigningKey::from_slice(&[7_u8; 32]).unwrap())
        }
        fn ed25519() -> Self {
            Self::Ed25519(ed25519_dalek::SigningKey::from_bytes(&[9_u8; 32]))
        }
        fn key(&self) -> CredentialKey {
            match self {
                Self::Es256(k) => {
                    let point = k.verifying_key().to_encoded_point(false);
                    CredentialKey::Es256 {
                        x: point.x().unwrap().as_slice().try_into().unwrap(),
                        y: point.y().unwrap().as_slice().try_into().unwrap(),
                    }
                }
                Self::Ed25519(k) => CredentialKey::Ed25519 {
                    x: k.verifying_key().to_bytes(),
                },
            }
        }
        fn sign(&self, data: &[u8]) -> Vec<u8> {
            match self {
                Self::Es256(k) => {
                    use p256::ecdsa::signature::Signer as _;
                    let sig: p256::ecdsa::Signature = k.sign(data);
                    sig.to_der().as_bytes().to_vec()
                }
                Self::Ed25519(k) => {
                    use ed25519_dalek::Signer as _;
                    k.sign(data).to_bytes().to_vec()
                }
            }
        }
    }

    /// What a browser returns for `challenge` on `origin`, with `flags` and `count`.
    fn assertion(
        device: &Device,
        challenge: [u8; 32],
        client: Value,
        flags: u8,
        count: u32,
    ) -> Assertion {
        let mut client = client;
        if client["challenge"].is_null() {
            client["challenge"] = json!(URL_SAFE_NO_PAD.encode(challenge));
        }
        let client_data_json = serde_json::to_vec(&client).unwrap();
        let mut data = Sha256::digest(RP.as_bytes()).to_vec();
        data.push(flags);
        data.extend_from_slice(&count.to_be_bytes());
        let mut signed = data.clone();
        signed.extend_from_slice(&Sha256::digest(&client_data_json));
        Assertion {
            signature: device.sign(&signed),
            authenticator_data: data,
            client_data_json,
        }
    }

    fn get() -> Value {
        json!({"type": "webauthn.get", "origin": ORIGIN, "crossOrigin": false})
    }

    fn expected(challenge: [u8; 32], origins: &[String], count: u32) -> Expected<'_> {
        Expected {
            challenge,
            origins,
            rp_id: RP,
            sign_count: Some(count),
        }
    }

    /// F-3: a length-prefixed hash: moving a byte from one field to the next changes it;
    /// every field counts.
    #[test]
    fn f3_the_challenge_binds_every_field_and_their_boundaries() {
        let base = binding("n1").challenge();
        assert_ne!(base, binding("n2").challenge());
        let mut other = binding("n1");
        other.summary_hash = "c".repeat(64).leak();
        assert_ne!(base, other.challenge());
        let (a, b) = (
            Binding {
                action: "act_12",
                presented_message: "msg_1",
                ..binding("n1")
            },
            Binding {
                action: "act_1",
                presented_message: "2msg_1",
                ..binding("n1")
            },
        );
        assert_ne!(
            a.challenge(),
            b.challenge(),
            "field boundaries are part of the hash"
        );
        assert_eq!(base, binding("n1").challenge(), "deterministic");
    }

    /// F-3: a good assertion verifies with either kind of key and returns the counter; each
    /// check refuses what it names, one at a time.
    #[test]
    fn f3_each_check_refuses_what_it_names() {
        let origins = [ORIGIN.to_owned()];
        let challenge = binding("n1").challenge();
        for device in [Device::es256(), Device::ed25519()] {
            let key = device.key();
            let good = assertion(&device, challenge, get(), UP | UV, 5);
            assert_eq!(
                verify_assertion(&key, &good, &expected(challenge, &origins, 4)),
                Ok(Verified { sign_count: 5 })
            );
            let cases: Vec<(Assertion, Expected<'_>, StepUpError)> = vec![
                (
                    assertion(
                        &device,
                        challenge,
                        json!({"type": "webauthn.create", "origin": ORIGIN}),
                        UP | UV,
                        5,
                    ),
                    expected(challenge, &origins, 4),
                    StepUpError::Type,
                ),
                (
                    assertion(&device, binding("n2").challenge(), get(), UP | UV, 5),
                    expected(challenge, &origins, 4),
                    StepUpError::Challenge,
                ),
                (
                    assertion(
                        &device,
                        challenge,
                        json!({"type": "webauthn.get", "origin": "https://shop.example"}),
                        UP | UV,
                        5,
                    ),
                    expected(challenge, &origins, 4),
                    StepUpError::Origin,
                ),
                (
                    assertion(
                        &device,
                        challenge,
                        json!({"type": "webauthn.get", "origin": ORIGIN, "crossOrigin": true}),
                        UP | UV,
                        5,
                    ),
                    expected(challenge, &origins, 4),
                    StepUpError::Origin,
                ),
                (
                    good.clone(),
                    Expected {
                        rp_id: "shop.example",
                        ..expected(challenge, &origins, 4)
                    },
                    StepUpError::RpId,
                ),
                (
                    assertion(&device, challenge, get(), UV, 5),
                    expected(challenge, &origins, 4),
                    StepUpError::UserPresence,
                ),
                (
                    assertion(&device, challenge, get(), UP, 5),
                    expected(challenge, &origins, 4),
                    StepUpError::UserVerification,
                ),
                (
                    Assertion {
                        signature: good.signature.iter().rev().copied().collect(),
                        ..good.clone()
                    },
                    expected(challenge, &origins, 4),
                    StepUpError::Signature,
                ),
                (
                    good.clone(),
                    expected(challenge, &origins, 5),
                    StepUpError::Counter,
                ),
            ];
            for (a, e, why) in cases {
                assert_eq!(verify_assertion(&key, &a, &e), Err(why), "{why}");
            }
            // Another credential's key: the signature check.
            let other = match device {
                Device::Es256(_) => {
                    Device::Es256(p256::ecdsa::SigningKey::from_slice(&[8_u8; 32]).unwrap())
                }
                Device::Ed25519(_) => {
                    Device::Ed25519(ed25519_dalek::SigningKey::from_bytes(&[10_u8; 32]))
                }
            };
            assert_eq!(
                verify_assertion(&other.key(), &good, &expected(challenge, &origins, 4)),
                Err(StepUpError::Signature)
            );
        }
    }

    /// F-3: a synced passkey reports 0 every time: 0 after 0 is accepted; 0 after a count
    /// is a regression.
    #[test]
    fn f3_zero_after_zero_is_accepted_a_regression_is_not() {
        let origins = [ORIGIN.to_owned()];
        let challenge = binding("n1").challenge();
        let device = Device::es256();
        let zero = assertion(&device, challenge, get(), UP | UV, 0);
        assert!(verify_assertion(&device.key(), &zero, &expected(challenge, &origins, 0)).is_ok());
        assert_eq!(
            verify_assertion(&device.key(), &zero, &expected(challenge, &origins, 3)),
            Err(StepUpError::Counter)
        );
    }

    /// F-3: an ES256 signature and its high-S twin both verify (Apple's authenticators emit
    /// high-S).
    #[test]
    fn f3_a_high_s_signature_is_accepted() {
        let origins = [ORIGIN.to_owned()];
        let challenge = binding("n1").challenge();
        let device = Device::es256();
        let good = assertion(&device, challenge, get(), UP | UV, 1);
        let sig = p256::ecdsa::Signature::from_der(&good.signature).unwrap();
        let (r, s) = sig.split_scalars();
        let twin = p256::ecdsa::Signature::from_scalars(r, -*s).unwrap();
        let (low, high) = match sig.normalize_s() {
            Some(_) => (twin, sig),
            None => (sig, twin),
        };
        assert!(low.normalize_s().is_none() && high.normalize_s().is_some());
        for form in [low, high] {
            let a = Assertion {
                signature: form.to_der().as_bytes().to_vec(),
                ..good.clone()
            };
            assert!(verify_assertion(&device.key(), &a, &expected(challenge, &origins, 0)).is_ok());
        }
    }

    /// F-4: the key travels as a JWK and back.
    #[test]
    fn f4_a_credential_key_is_a_jwk() {
        for device in [Device::es256(), Device::ed25519()] {
            let key = device.key();
            assert_eq!(CredentialKey::from_jwk(&key.to_jwk()), Ok(key));
        }
        assert!(CredentialKey::from_jwk(&json!({"kty": "RSA", "n": "x", "e": "AQAB"})).is_err());
    }

    fn claims() -> crate::proof::ProofClaims {
        crate::proof::ProofClaims {
            iss: "https://support.example.com/mcp-actions".into(),
            aud: "https://mcp.shop.example/mcp".into(),
            sub: "u_alice".into(),
            tenant_id: "ten_01JDZ6Y5X1QW9T3V7N2K4M8P0R".into(),
            conversation_id: "case_01JDZ6Y5X1QW9T3V7N2K4M8P0R".into(),
            action_id: "act_1".into(),
            operation: "reassign_session_car".into(),
            arguments_hash: "a".repeat(64),
            summary_hash: "b".repeat(64),
            message_id: "msg_2".into(),
            presented_message_id: "msg_1".into(),
            jti: "prf_01JDZ6Y5X1QW9T3V7N2K4M8P0R".into(),
            iat: 1_700_000_000,
            exp: 1_700_000_060,
        }
    }

    /// The evidence of an assertion made over `claims`' own binding with `nonce`.
    fn evidence_for(device: &Device, c: &crate::proof::ProofClaims, nonce: &str) -> Evidence {
        let binding = Binding::of_claims(c, nonce);
        let a = assertion(device, binding.challenge(), get(), UP | UV, 0);
        Evidence::of(b"credential-1", &device.key(), &a, nonce)
    }

    /// F-5: the tenant's check recomputes the challenge from the proof's own claims: the
    /// evidence of this action verifies; the same evidence under another summary, another
    /// action or another nonce does not; a key the tenant did not pin is refused.
    #[test]
    fn f5_a_tenant_verifies_the_step_up_from_the_proofs_own_claims() {
        let origins = [ORIGIN.to_owned()];
        let device = Device::es256();
        let c = claims();
        let evidence = evidence_for(&device, &c, "nonce-1");
        assert!(evidence.verify(&c, RP, &origins, None).is_ok());
        assert!(
            evidence
                .verify(&c, RP, &origins, Some(&[device.key()]))
                .is_ok()
        );
        let other = Device::ed25519().key();
        assert_eq!(
            evidence.verify(&c, RP, &origins, Some(&[other])),
            Err(StepUpError::NotPinned)
        );
        let mut changed = c.clone();
        changed.summary_hash = "c".repeat(64);
        assert_eq!(
            evidence.verify(&changed, RP, &origins, None),
            Err(StepUpError::Challenge)
        );
        let mut changed = c.clone();
        changed.action_id = "act_2".into();
        assert_eq!(
            evidence.verify(&changed, RP, &origins, None),
            Err(StepUpError::Challenge)
        );
        let replayed = Evidence {
            nonce: "nonce-2".into(),
            ..evidence.clone()
        };
        assert_eq!(
            replayed.verify(&c, RP, &origins, None),
            Err(StepUpError::Challenge)
        );
        assert_eq!(
            evidence.verify(&c, "shop.example", &origins, None),
            Err(StepUpError::RpId)
        );
    }

    /// F-4: the step-up claim set is the fourteen claims, `stepUp` and `amr`; it splits
    /// back; an unknown claim, an `amr` beyond pop/user/mfa or missing evidence is refused.
    #[test]
    fn f4_the_claims_join_and_split_and_refuse_anything_else() {
        let device = Device::es256();
        let c = claims();
        let evidence = evidence_for(&device, &c, "nonce-1");
        let joined = join_claims(&c, &evidence);
        assert_eq!(joined["amr"], json!(["pop", "user", "mfa"]));
        let (base, back, amr) = split_claims(joined.clone()).unwrap();
        assert_eq!((base, back, amr.len()), (c, evidence, 3));
        let mut extra = joined.clone();
        extra["admin"] = json!(true);
        assert!(split_claims(extra).is_err());
        let mut more = joined.clone();
        more["amr"] = json!(["pop", "hwk"]);
        assert!(split_claims(more).is_err());
        let mut none = joined;
        none.as_object_mut().unwrap().remove("stepUp");
        assert!(split_claims(none).is_err());
    }

    /// F-4: the largest step-up proof — an ES256 credential (a bigger key and a DER
    /// signature, longer than EdDSA's), the longest ids — is at most 6 KiB as a compact JWS
    /// with its RS256 signature, so it fits `X-MCP-Confirmation`.
    #[test]
    fn f4_the_largest_step_up_proof_is_at_most_6_kib() {
        let mut c = claims();
        c.aud = format!("https://{}/mcp", "a".repeat(500));
        c.sub = "u".repeat(256);
        c.operation = "o".repeat(128);
        c.action_id = format!("act_{}", "x".repeat(120));
        let mut evidence = evidence_for(&Device::es256(), &c, &"n".repeat(43));
        // A long credential id (1023 bytes, WebAuthn's largest) and a client data with
        // extra fields browsers add.
        evidence.credential_id = URL_SAFE_NO_PAD.encode([7_u8; 1023]);
        evidence.client_data_json = URL_SAFE_NO_PAD.encode(
            serde_json::to_vec(&json!({"type": "webauthn.get", "challenge": "x".repeat(43),
                "origin": ORIGIN, "crossOrigin": false,
                "other_keys_can_be_added_here": "do not compare clientDataJSON against a template. See https://goo.gl/yabPex"}))
            .unwrap(),
        );
        let header = json!({"alg": "RS256", "typ": STEPUP_PROOF_TYPE, "kid": "k".repeat(43)});
        let b64 = |v: &Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap());
        let compact = format!(
            "{}.{}.{}",
            b64(&header),
            b64(&join_claims(&c, &evidence)),
            URL_SAFE_NO_PAD.encode([0_u8; 256])
        );
        assert!(compact.len() <= 6 * 1024, "{} bytes", compact.len());
    }
}

#[cfg(test)]
mod site_tests {
    use super::Site;

    /// F-3: the ceremonies' site is an https origin whose host is the RP ID; plain http
    /// only for localhost on the local stack; never an IP address.
    #[test]
    fn f3_the_site_is_an_https_origin_and_its_host() {
        let site = Site::from_origin("https://confirm.example.com", false).unwrap();
        assert_eq!(site.rp_id, "confirm.example.com");
        assert_eq!(site.origins, ["https://confirm.example.com"]);
        assert!(Site::from_origin("http://confirm.example.com", true).is_err());
        assert!(Site::from_origin("http://localhost:8700", false).is_err());
        assert_eq!(
            Site::from_origin("http://localhost:8700", true)
                .unwrap()
                .origins,
            ["http://localhost:8700"]
        );
        assert!(Site::from_origin("https://127.0.0.1", true).is_err());
        assert!(Site::from_origin("https://confirm.example.com/x", false).is_err());
    }
}
