//! F-2: reading a new passkey — what a WebAuthn `create` returned — into the credential the
//! platform keeps for a person. Pure, like the assertion check (`stepup`).
//!
//! What it checks is W3C WebAuthn Level 2 §7.1 for a registration with attestation `none`:
//! client data type, challenge (the platform's single-use enrolment nonce) and origin; the
//! RP ID hash, the user-present and user-verified flags and the attested credential data
//! in the authenticator data. The public key is read from that attested credential data
//! (a COSE key: ES256 on P-256, or EdDSA on Ed25519), never from a separate field the
//! browser could make disagree with it. No attestation statement is asked for or checked:
//! a passkey proves the same person returns, not which maker built the authenticator.

use crate::stepup::{CredentialKey, StepUpError, check_authenticator_data, check_client_data};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ciborium::Value as Cbor;
use sha2::{Digest as _, Sha256};

/// The longest credential id WebAuthn allows.
pub const MAX_CREDENTIAL_ID: usize = 1023;

/// The authenticator data's attested-credential flag.
const AT: u8 = 0x40;

/// What a registration must match.
#[derive(Debug, Clone, Copy)]
pub struct ExpectedRegistration<'a> {
    /// The challenge the platform issued (its enrolment nonce's bytes).
    pub challenge: &'a [u8],
    /// The origins the ceremony may run on.
    pub origins: &'a [String],
    /// The RP ID the credential must be made for.
    pub rp_id: &'a str,
}

/// A new credential, read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    /// The credential's id.
    pub id: Vec<u8>,
    /// Its public key.
    pub key: CredentialKey,
    /// The authenticator's counter at creation.
    pub sign_count: u32,
}

impl Registered {
    /// The credential id as it travels (base64url, no padding).
    pub fn id_text(&self) -> String {
        URL_SAFE_NO_PAD.encode(&self.id)
    }
}

/// F-2: checks what `create` returned — `client_data_json` and `authenticator_data` as the
/// browser gave them — against `expected`; the first check that fails is the error.
pub fn read_registration(
    client_data_json: &[u8],
    authenticator_data: &[u8],
    expected: &ExpectedRegistration<'_>,
) -> Result<Registered, StepUpError> {
    check_client_data(
        client_data_json,
        "webauthn.create",
        expected.challenge,
        expected.origins,
    )?;
    let data = authenticator_data;
    let no_credential = "authenticatorData has no attested credential";
    let flags = check_authenticator_data(data, 55, no_credential, expected.rp_id)?;
    if flags & AT == 0 {
        return Err(StepUpError::Malformed(
            "authenticatorData has no attested credential",
        ));
    }
    let sign_count = u32::from_be_bytes([data[33], data[34], data[35], data[36]]);
    // 16 bytes of AAGUID, then the id's length (2 bytes) and the id.
    let id_len = usize::from(u16::from_be_bytes([data[53], data[54]]));
    if id_len == 0 || id_len > MAX_CREDENTIAL_ID || data.len() < 55 + id_len {
        return Err(StepUpError::Malformed(
            "the credential id's length is wrong",
        ));
    }
    let id = data[55..55 + id_len].to_vec();
    let key = cose_key(&data[55 + id_len..])?;
    Ok(Registered {
        id,
        key,
        sign_count,
    })
}

/// Reads a COSE public key (RFC 9053): EC2 on P-256 with ES256, or OKP on Ed25519 with
/// EdDSA. Any other kind is refused (the platform asked for only these two).
fn cose_key(bytes: &[u8]) -> Result<CredentialKey, StepUpError> {
    let value: Cbor = ciborium::de::from_reader(bytes)
        .map_err(|_| StepUpError::Key("the public key is not CBOR"))?;
    let map = value
        .as_map()
        .ok_or(StepUpError::Key("the public key is not a COSE key"))?;
    let field = |label: i64| {
        map.iter()
            .find(|(k, _)| {
                k.as_integer()
                    .is_some_and(|i| i128::from(i) == i128::from(label))
            })
            .map(|(_, v)| v)
    };
    let int = |label: i64| field(label).and_then(Cbor::as_integer).map(i128::from);
    let coordinate = |label: i64| -> Result<[u8; 32], StepUpError> {
        field(label)
            .and_then(Cbor::as_bytes)
            .and_then(|b| <[u8; 32]>::try_from(b.as_slice()).ok())
            .ok_or(StepUpError::Key("a coordinate is missing or not 32 bytes"))
    };
    match (int(1), int(3), int(-1)) {
        // kty EC2, alg ES256, crv P-256.
        (Some(2), Some(-7), Some(1)) => Ok(CredentialKey::Es256 {
            x: coordinate(-2)?,
            y: coordinate(-3)?,
        }),
        // kty OKP, alg EdDSA, crv Ed25519.
        (Some(1), Some(-8), Some(6)) => Ok(CredentialKey::Ed25519 { x: coordinate(-2)? }),
        _ => Err(StepUpError::Key(
            "only ES256 (P-256) and EdDSA (Ed25519) keys",
        )),
    }
}

/// Test help: the COSE encoding of `key`, as an authenticator writes it.
pub fn cose_bytes(key: &CredentialKey) -> Vec<u8> {
    let int = |i: i64| Cbor::Integer(i.into());
    let entries = match key {
        CredentialKey::Es256 { x, y } => vec![
            (int(1), int(2)),
            (int(3), int(-7)),
            (int(-1), int(1)),
            (int(-2), Cbor::Bytes(x.to_vec())),
            (int(-3), Cbor::Bytes(y.to_vec())),
        ],
        CredentialKey::Ed25519 { x } => vec![
            (int(1), int(1)),
            (int(3), int(-8)),
            (int(-1), int(6)),
            (int(-2), Cbor::Bytes(x.to_vec())),
        ],
    };
    let mut out = Vec::new();
    // Writing a small map into a Vec cannot fail.
    let _ = ciborium::ser::into_writer(&Cbor::Map(entries), &mut out);
    out
}

/// Test help: the authenticator data of a new credential `id` with `key` for `rp_id`,
/// its counter at `count`.
pub fn registration_data(
    rp_id: &str,
    flags: u8,
    count: u32,
    id: &[u8],
    key: &CredentialKey,
) -> Vec<u8> {
    let mut data = Sha256::digest(rp_id.as_bytes()).to_vec();
    data.push(flags);
    data.extend_from_slice(&count.to_be_bytes());
    data.extend_from_slice(&[0_u8; 16]);
    data.extend_from_slice(&u16::try_from(id.len()).unwrap_or(0).to_be_bytes());
    data.extend_from_slice(id);
    data.extend_from_slice(&cose_bytes(key));
    data
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::authenticator::{UP, UV};
    use serde_json::json;

    const RP: &str = "confirm.countersign.example";
    const ORIGIN: &str = "https://confirm.countersign.example";

    fn keys() -> [CredentialKey; 2] {
        [
            CredentialKey::Es256 {
                x: [1; 32],
                y: [2; 32],
            },
            CredentialKey::Ed25519 { x: [3; 32] },
        ]
    }

    fn client(kind: &str, challenge: &[u8], origin: &str) -> Vec<u8> {
        serde_json::to_vec(
            &json!({"type": kind, "challenge": URL_SAFE_NO_PAD.encode(challenge),
            "origin": origin, "crossOrigin": false}),
        )
        .unwrap()
    }

    /// F-2: a new credential is read from the attested credential data with its key; each
    /// check refuses what it names.
    #[test]
    fn f2_a_registration_is_read_and_each_check_refuses_what_it_names() {
        let origins = [ORIGIN.to_owned()];
        let expected = ExpectedRegistration {
            challenge: b"enrol-nonce",
            origins: &origins,
            rp_id: RP,
        };
        for key in keys() {
            let data = registration_data(RP, UP | UV | AT, 0, b"cred-1", &key);
            let good = client("webauthn.create", b"enrol-nonce", ORIGIN);
            let read = read_registration(&good, &data, &expected).unwrap();
            assert_eq!((read.id.as_slice(), &read.key), (&b"cred-1"[..], &key));
            let cases: [(Vec<u8>, Vec<u8>, StepUpError); 7] = [
                (
                    client("webauthn.get", b"enrol-nonce", ORIGIN),
                    data.clone(),
                    StepUpError::Type,
                ),
                (
                    client("webauthn.create", b"other", ORIGIN),
                    data.clone(),
                    StepUpError::Challenge,
                ),
                (
                    client("webauthn.create", b"enrol-nonce", "https://shop.example"),
                    data.clone(),
                    StepUpError::Origin,
                ),
                (
                    good.clone(),
                    registration_data("shop.example", UP | UV | AT, 0, b"cred-1", &key),
                    StepUpError::RpId,
                ),
                (
                    good.clone(),
                    registration_data(RP, UV | AT, 0, b"cred-1", &key),
                    StepUpError::UserPresence,
                ),
                (
                    good.clone(),
                    registration_data(RP, UP | AT, 0, b"cred-1", &key),
                    StepUpError::UserVerification,
                ),
                (
                    good.clone(),
                    registration_data(RP, UP | UV, 0, b"cred-1", &key),
                    StepUpError::Malformed("authenticatorData has no attested credential"),
                ),
            ];
            for (c, d, why) in cases {
                assert_eq!(read_registration(&c, &d, &expected), Err(why), "{why}");
            }
        }
    }

    /// F-2: only the two kinds of key the platform asked for; a truncated key is refused.
    #[test]
    fn f2_another_kind_of_key_or_a_broken_one_is_refused() {
        let int = |i: i64| Cbor::Integer(i.into());
        let mut rsa = Vec::new();
        ciborium::ser::into_writer(
            &Cbor::Map(vec![(int(1), int(3)), (int(3), int(-257))]),
            &mut rsa,
        )
        .unwrap();
        assert!(cose_key(&rsa).is_err());
        let es = cose_bytes(&keys()[0]);
        assert!(cose_key(&es[..es.len() - 5]).is_err());
        assert_eq!(cose_key(&es), Ok(keys()[0].clone()));
    }
}
