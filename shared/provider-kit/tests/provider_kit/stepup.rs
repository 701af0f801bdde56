//! F-4, F-5: the provider kit verifies a step-up proof on its own — a real RS256 proof
//! carrying a real passkey assertion (an ES256 test authenticator) over the action's
//! challenge — and refuses every way one can be wrong.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::expected;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_domain::proof::ProofClaims;
use countersign_domain::stepup::{
    Assertion, Binding, CredentialKey, Evidence, StepUpError, join_claims,
};
use countersign_provider_kit::Verifier;
use countersign_provider_kit::proof::{PinnedKeys, ProofRejection};
use jsonwebtoken::{Algorithm, EncodingKey};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use std::sync::Arc;

const TRUSTED_KEY: &str = include_str!("../keys/trusted.key.pem");
const TRUSTED_PUB: &str = include_str!("../keys/trusted.pub.pem");
const ISS: &str = "https://support.example.com/mcp-actions";
const AUD: &str = "https://mcp.trackshare.example.com/mcp";
const NOW: i64 = 1_800_000_000;
const RP: &str = "confirm.countersign.example";
const ORIGIN: &str = "https://confirm.countersign.example";

fn claims() -> ProofClaims {
    ProofClaims {
        iss: ISS.into(),
        aud: AUD.into(),
        sub: "u_alice".into(),
        tenant_id: "ten_1".into(),
        conversation_id: "case_1".into(),
        action_id: "act_1".into(),
        operation: "reassign_session_car".into(),
        arguments_hash: "a".repeat(64),
        summary_hash: "b".repeat(64),
        message_id: "msg_2".into(),
        presented_message_id: "msg_1".into(),
        jti: "jti-1".into(),
        iat: NOW - 5,
        exp: NOW + 55,
    }
}

/// A test authenticator: a fixed P-256 key.
fn device(seed: u8) -> p256::ecdsa::SigningKey {
    p256::ecdsa::SigningKey::from_slice(&[seed; 32]).unwrap()
}

fn key_of(d: &p256::ecdsa::SigningKey) -> CredentialKey {
    let point = d.verifying_key().to_encoded_point(false);
    CredentialKey::Es256 {
        x: point.x().unwrap().as_slice().try_into().unwrap(),
        y: point.y().unwrap().as_slice().try_into().unwrap(),
    }
}

/// A test authenticator's key.
enum Dev {
    Es256(p256::ecdsa::SigningKey),
    Ed25519(ed25519_dalek::SigningKey),
}

impl Dev {
    fn key(&self) -> CredentialKey {
        match self {
            Self::Es256(d) => key_of(d),
            Self::Ed25519(d) => CredentialKey::Ed25519 {
                x: d.verifying_key().to_bytes(),
            },
        }
    }
    fn sign(&self, data: &[u8]) -> Vec<u8> {
        match self {
            Self::Es256(d) => {
                use p256::ecdsa::signature::Signer as _;
                let sig: p256::ecdsa::Signature = d.sign(data);
                sig.to_der().as_bytes().to_vec()
            }
            Self::Ed25519(d) => {
                use ed25519_dalek::Signer as _;
                d.sign(data).to_bytes().to_vec()
            }
        }
    }
}

/// How a ceremony went: what the browser and the authenticator put in the assertion.
#[derive(Clone, Copy)]
struct Ceremony<'a> {
    flags: u8,
    origin: &'a str,
    rp: &'a str,
    cross_origin: bool,
    /// The authenticator signed other bytes than the assertion's.
    sign_other: bool,
}

const GOOD: Ceremony<'static> = Ceremony {
    flags: 0x05,
    origin: ORIGIN,
    rp: RP,
    cross_origin: false,
    sign_other: false,
};

/// The evidence a browser ceremony would give for `c`'s action with `nonce`.
fn evidence_with(d: &Dev, c: &ProofClaims, nonce: &str, how: Ceremony<'_>) -> Evidence {
    let challenge = Binding::of_claims(c, nonce).challenge();
    let client = serde_json::to_vec(&json!({"type": "webauthn.get",
        "challenge": URL_SAFE_NO_PAD.encode(challenge), "origin": how.origin,
        "crossOrigin": how.cross_origin}))
    .unwrap();
    let mut data = Sha256::digest(how.rp.as_bytes()).to_vec();
    data.push(how.flags);
    data.extend_from_slice(&0_u32.to_be_bytes());
    let mut signed = data.clone();
    signed.extend_from_slice(&Sha256::digest(&client));
    if how.sign_other {
        signed.push(0);
    }
    let assertion = Assertion {
        authenticator_data: data,
        client_data_json: client,
        signature: d.sign(&signed),
    };
    Evidence::of(b"cred-1", &d.key(), &assertion, nonce)
}

fn evidence(d: &p256::ecdsa::SigningKey, c: &ProofClaims, nonce: &str, flags: u8) -> Evidence {
    evidence_with(&Dev::Es256(d.clone()), c, nonce, Ceremony { flags, ..GOOD })
}

/// The platform's step-up proof: `claims` signed with the trusted key.
fn proof(claims: &Value, typ: &str) -> String {
    let header = json!({"alg": "RS256", "typ": typ, "kid": "kid-1"});
    let b64 = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
    let input = format!("{}.{}", b64(&header), b64(claims));
    let key = EncodingKey::from_rsa_pem(TRUSTED_KEY.as_bytes()).unwrap();
    let sig = jsonwebtoken::crypto::sign(input.as_bytes(), &key, Algorithm::RS256).unwrap();
    format!("{input}.{sig}")
}

fn stepup_proof(e: &Evidence) -> String {
    proof(&join_claims(&claims(), e), "support-action-stepup+jwt")
}

fn verifier() -> Verifier {
    Verifier::new(ISS, AUD)
        .with_key("kid-1", TRUSTED_PUB)
        .unwrap()
        .with_step_up(RP, vec![ORIGIN.to_owned()])
}

struct Pins(Vec<CredentialKey>);

impl PinnedKeys for Pins {
    fn keys(&self, tenant_id: &str, user_id: &str) -> Option<Vec<CredentialKey>> {
        (tenant_id == "ten_1" && user_id == "u_alice").then(|| self.0.clone())
    }
}

/// F-5: a step-up proof of this action verifies, carrying its evidence; with the person's
/// key pinned too.
#[test]
fn f5_the_kit_verifies_a_step_up_proof_on_its_own() {
    let d = device(7);
    let e = evidence(&d, &claims(), "nonce-1", 0x05);
    let verified = verifier()
        .verify(&stepup_proof(&e), &expected(), NOW)
        .unwrap();
    assert_eq!(verified.step_up, Some(e.clone()));
    let pinned = verifier().with_pinned_keys(Arc::new(Pins(vec![key_of(&d)])));
    assert!(pinned.verify(&stepup_proof(&e), &expected(), NOW).is_ok());
}

/// F-5: every way a step-up proof can be wrong is refused, each by its own reason: a
/// verifier not told the ceremony's RP ID; UV off; another action's assertion (the
/// challenge recomputed from the claims differs); another RP ID; a key the tenant did not
/// pin; a step-up claim set with an extra claim; a required step-up missing.
#[test]
fn f5_the_kit_refuses_each_wrong_step_up() {
    let d = device(7);
    let good = evidence(&d, &claims(), "nonce-1", 0x05);
    let plain = Verifier::new(ISS, AUD)
        .with_key("kid-1", TRUSTED_PUB)
        .unwrap();
    assert_eq!(
        plain.verify(&stepup_proof(&good), &expected(), NOW),
        Err(ProofRejection::StepUpNotAccepted)
    );
    let no_uv = evidence(&d, &claims(), "nonce-1", 0x01);
    let mut other_action = claims();
    other_action.action_id = "act_2".into();
    let elsewhere = evidence(&d, &other_action, "nonce-1", 0x05);
    for (e, why) in [
        (no_uv, StepUpError::UserVerification),
        (elsewhere, StepUpError::Challenge),
    ] {
        assert_eq!(
            verifier().verify(&stepup_proof(&e), &expected(), NOW),
            Err(ProofRejection::StepUp(why)),
            "{why}"
        );
    }
    let other_rp = Verifier::new(ISS, AUD)
        .with_key("kid-1", TRUSTED_PUB)
        .unwrap()
        .with_step_up("shop.example", vec![ORIGIN.to_owned()]);
    assert_eq!(
        other_rp.verify(&stepup_proof(&good), &expected(), NOW),
        Err(ProofRejection::StepUp(StepUpError::RpId))
    );
    let pinned_other = verifier().with_pinned_keys(Arc::new(Pins(vec![key_of(&device(8))])));
    assert_eq!(
        pinned_other.verify(&stepup_proof(&good), &expected(), NOW),
        Err(ProofRejection::StepUp(StepUpError::NotPinned))
    );
    let mut extra = join_claims(&claims(), &good);
    extra["admin"] = json!(true);
    assert!(matches!(
        verifier().verify(
            &proof(&extra, "support-action-stepup+jwt"),
            &expected(),
            NOW
        ),
        Err(ProofRejection::StepUp(StepUpError::Malformed(_)))
    ));
    // A plain proof where this server requires the person's passkey.
    let plain_proof = proof(
        &serde_json::to_value(claims()).unwrap(),
        "support-action+jwt",
    );
    assert!(verifier().verify(&plain_proof, &expected(), NOW).is_ok());
    assert_eq!(
        verifier()
            .require_step_up("reassign_session_car")
            .verify(&plain_proof, &expected(), NOW),
        Err(ProofRejection::StepUpRequired)
    );
    // A step-up claim set under the plain type: its extra claims are refused.
    assert_eq!(
        verifier().verify(
            &proof(&join_claims(&claims(), &good), "support-action+jwt"),
            &expected(),
            NOW
        ),
        Err(ProofRejection::Malformed("claims"))
    );
}

/// F-5: `docs/stepup-test-vectors.json` for provider engineers in any language: a valid
/// step-up proof of each key kind and one proof per refusal, with the platform's key, the
/// ceremony's RP ID and origins, the pinned credentials and the action. This test writes
/// it (`UPDATE_VECTORS=1`), checks the checked-in file is what it writes (RS256, RFC 6979
/// ECDSA and Ed25519 signatures are deterministic), and that the kit's verdict on each case
/// is the file's, so the file and the kit cannot disagree.
#[test]
fn f5_the_step_up_test_vectors_are_the_kits_verdicts() {
    let es = Dev::Es256(device(7));
    let ed = Dev::Ed25519(ed25519_dalek::SigningKey::from_bytes(&[9_u8; 32]));
    let stranger = Dev::Es256(device(8));
    let c = claims();
    let token = |e: &Evidence| stepup_proof(e);
    let mut other_action = claims();
    other_action.action_id = "act_2".into();
    let mut other_summary = claims();
    other_summary.summary_hash = "c".repeat(64);
    let good = evidence_with(&es, &c, "nonce-1", GOOD);
    let mut extra = join_claims(&c, &good);
    extra["admin"] = json!(true);
    let mut more_amr = join_claims(&c, &good);
    more_amr["amr"] = json!(["pop", "user", "mfa", "hwk"]);
    let cases: Vec<(&str, &str, String, bool)> = vec![
        (
            "valid-es256",
            "a step-up by an ES256 passkey over this action: accept",
            token(&good),
            true,
        ),
        (
            "valid-eddsa",
            "a step-up by an Ed25519 passkey over this action: accept",
            token(&evidence_with(&ed, &c, "nonce-1", GOOD)),
            true,
        ),
        (
            "no-user-verification",
            "UV flag off",
            token(&evidence_with(
                &es,
                &c,
                "nonce-1",
                Ceremony {
                    flags: 0x01,
                    ..GOOD
                },
            )),
            false,
        ),
        (
            "no-user-presence",
            "UP flag off",
            token(&evidence_with(
                &es,
                &c,
                "nonce-1",
                Ceremony {
                    flags: 0x04,
                    ..GOOD
                },
            )),
            false,
        ),
        (
            "another-action",
            "the assertion is over another action's challenge",
            token(&evidence_with(&es, &other_action, "nonce-1", GOOD)),
            false,
        ),
        (
            "another-summary",
            "the assertion is over another summary's challenge",
            token(&evidence_with(&es, &other_summary, "nonce-1", GOOD)),
            false,
        ),
        (
            "wrong-origin",
            "the ceremony ran on the tenant's site, not the platform's page",
            token(&evidence_with(
                &es,
                &c,
                "nonce-1",
                Ceremony {
                    origin: "https://shop.example",
                    ..GOOD
                },
            )),
            false,
        ),
        (
            "cross-origin",
            "the ceremony ran in a cross-origin frame",
            token(&evidence_with(
                &es,
                &c,
                "nonce-1",
                Ceremony {
                    cross_origin: true,
                    ..GOOD
                },
            )),
            false,
        ),
        (
            "wrong-rp-id",
            "the credential is another site's",
            token(&evidence_with(
                &es,
                &c,
                "nonce-1",
                Ceremony {
                    rp: "shop.example",
                    ..GOOD
                },
            )),
            false,
        ),
        (
            "another-credential",
            "a passkey the tenant did not pin for the person",
            token(&evidence_with(&stranger, &c, "nonce-1", GOOD)),
            false,
        ),
        (
            "signature-over-other-data",
            "the signature is not over this assertion",
            token(&evidence_with(
                &es,
                &c,
                "nonce-1",
                Ceremony {
                    sign_other: true,
                    ..GOOD
                },
            )),
            false,
        ),
        (
            "extra-claim",
            "a claim besides the fourteen, stepUp and amr",
            proof(&extra, "support-action-stepup+jwt"),
            false,
        ),
        (
            "amr-beyond",
            "amr claims more than pop, user, mfa",
            proof(&more_amr, "support-action-stepup+jwt"),
            false,
        ),
        (
            "required-but-plain",
            "a plain proof of an operation that requires a step-up",
            proof(&serde_json::to_value(&c).unwrap(), "support-action+jwt"),
            false,
        ),
    ];
    let pinned = vec![es.key(), ed.key()];
    let kit = verifier()
        .require_step_up("reassign_session_car")
        .with_pinned_keys(Arc::new(Pins(pinned.clone())));
    for (name, _, token, accept) in &cases {
        let got = kit.verify(token, &expected(), NOW);
        assert_eq!(got.is_ok(), *accept, "{name}: {got:?}");
    }
    let e = expected();
    let doc = json!({
        "about": "Step-up proof test vectors (F-5, docs/provider-guide.md §6.1): verify each token as of `now` with `trustedKeys`, `issuer`, `audience`, the ceremony's `stepUpRpId` and `stepUpOrigins`, the person's `pinnedKeys`, and `requireStepUp`; exactly the cases marked accept are accepted. Generated by shared/provider-kit/tests/provider_kit/stepup.rs.",
        "issuer": ISS, "audience": AUD, "now": NOW, "leewaySeconds": 5,
        "trustedKeys": [{"kid": "kid-1", "publicKeyPem": TRUSTED_PUB}],
        "stepUpRpId": RP, "stepUpOrigins": [ORIGIN],
        "requireStepUp": ["reassign_session_car"],
        "pinnedKeys": {"tenantId": e.tenant_id, "userId": e.user_id,
            "keys": pinned.iter().map(CredentialKey::to_jwk).collect::<Vec<_>>()},
        "action": {"tenantId": e.tenant_id, "userId": e.user_id, "conversationId": e.conversation_id,
            "actionId": e.action_id, "operation": e.operation, "argumentsHash": e.arguments_hash,
            "summaryHash": e.summary_hash},
        "cases": cases.iter().map(|(name, tests, token, accept)| json!({
            "name": name, "tests": tests, "token": token,
            "expect": if *accept { "accept" } else { "refuse" }})).collect::<Vec<_>>(),
    });
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/stepup-test-vectors.json"
    );
    let written = serde_json::to_string_pretty(&doc).unwrap() + "\n";
    if std::env::var_os("UPDATE_VECTORS").is_some() {
        std::fs::write(path, &written).unwrap();
    }
    let checked_in = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        checked_in == written,
        "docs/stepup-test-vectors.json is stale: run UPDATE_VECTORS=1 cargo test -p countersign-provider-kit --test provider_kit"
    );
}
