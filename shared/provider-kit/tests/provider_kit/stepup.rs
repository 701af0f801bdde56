//! F-4, F-5: the provider kit verifies a step-up proof on its own — a real RS256 proof
//! carrying a real passkey assertion (an ES256 test authenticator) over the action's
//! challenge — and refuses every way one can be wrong.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_domain::proof::ProofClaims;
use countersign_domain::stepup::{
    Assertion, Binding, CredentialKey, Evidence, StepUpError, join_claims,
};
use countersign_provider_kit::proof::{PinnedKeys, ProofRejection};
use countersign_provider_kit::{ExpectedAction, Verifier};
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

fn expected() -> ExpectedAction<'static> {
    ExpectedAction {
        tenant_id: "ten_1",
        user_id: "u_alice",
        conversation_id: "case_1",
        action_id: "act_1",
        operation: "reassign_session_car",
        arguments_hash: Box::leak("a".repeat(64).into_boxed_str()),
        summary_hash: Box::leak("b".repeat(64).into_boxed_str()),
        expires_at: None,
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

/// The evidence a browser ceremony would give for `c`'s action with `nonce`, `flags`.
fn evidence(d: &p256::ecdsa::SigningKey, c: &ProofClaims, nonce: &str, flags: u8) -> Evidence {
    use p256::ecdsa::signature::Signer as _;
    let challenge = Binding {
        tenant: &c.tenant_id,
        conversation: &c.conversation_id,
        action: &c.action_id,
        operation: &c.operation,
        arguments_hash: &c.arguments_hash,
        summary_hash: &c.summary_hash,
        presented_message: &c.presented_message_id,
        nonce,
    }
    .challenge();
    let client = serde_json::to_vec(&json!({"type": "webauthn.get",
        "challenge": URL_SAFE_NO_PAD.encode(challenge), "origin": ORIGIN, "crossOrigin": false}))
    .unwrap();
    let mut data = Sha256::digest(RP.as_bytes()).to_vec();
    data.push(flags);
    data.extend_from_slice(&0_u32.to_be_bytes());
    let mut signed = data.clone();
    signed.extend_from_slice(&Sha256::digest(&client));
    let sig: p256::ecdsa::Signature = d.sign(&signed);
    let assertion = Assertion {
        authenticator_data: data,
        client_data_json: client,
        signature: sig.to_der().as_bytes().to_vec(),
    };
    Evidence::of(b"cred-1", &key_of(d), &assertion, nonce)
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
