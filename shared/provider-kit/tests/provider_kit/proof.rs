//! D-7, A-31 …: every refusal of the provider kit's proof verification, with
//! real RS256 signatures (test keys in `tests/keys`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::expected;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_provider_kit::proof::ProofRejection;
use countersign_provider_kit::{ExpectedAction, InMemoryReplayGuard, Verifier};
use jsonwebtoken::{Algorithm, EncodingKey};
use serde_json::{Value, json};

const TRUSTED_KEY: &str = include_str!("../keys/trusted.key.pem");
const TRUSTED_PUB: &str = include_str!("../keys/trusted.pub.pem");
const ATTACKER_KEY: &str = include_str!("../keys/attacker.key.pem");
const ATTACKER_PUB: &str = include_str!("../keys/attacker.pub.pem");
const ISS: &str = "https://support.example.com/mcp-actions";
const AUD: &str = "https://mcp.trackshare.example.com/mcp";
const NOW: i64 = 1_800_000_000;

fn header() -> Value {
    json!({"alg": "RS256", "typ": "support-action+jwt", "kid": "kid-1"})
}

fn claims() -> Value {
    json!({
        "iss": ISS, "aud": AUD, "sub": "u_alice", "tenantId": "ten_1",
        "conversationId": "case_1", "actionId": "act_1", "operation": "reassign_session_car",
        "argumentsHash": "a".repeat(64), "summaryHash": "b".repeat(64),
        "messageId": "msg_2", "presentedMessageId": "msg_1", "jti": "jti-1",
        "iat": NOW - 5, "exp": NOW + 55
    })
}

fn verifier() -> Verifier {
    Verifier::new(ISS, AUD)
        .with_key("kid-1", TRUSTED_PUB)
        .unwrap()
}

fn b64(v: &Value) -> String {
    URL_SAFE_NO_PAD.encode(v.to_string())
}

/// Signs any header and claims with `alg` and `key` (no checks: an attacker's tool).
fn sign(header: &Value, claims: &Value, alg: Algorithm, key: &EncodingKey) -> String {
    let input = format!("{}.{}", b64(header), b64(claims));
    let sig = jsonwebtoken::crypto::sign(input.as_bytes(), key, alg).unwrap();
    format!("{input}.{sig}")
}

fn rs256(header: &Value, claims: &Value) -> String {
    sign(
        header,
        claims,
        Algorithm::RS256,
        &EncodingKey::from_rsa_pem(TRUSTED_KEY.as_bytes()).unwrap(),
    )
}

fn refused(token: &str) -> ProofRejection {
    verifier().verify(token, &expected(), NOW).unwrap_err()
}

fn with(mut v: Value, k: &str, x: Value) -> Value {
    v[k] = x;
    v
}

#[test]
fn d7_a_valid_proof_is_accepted() {
    let v = verifier()
        .verify(&rs256(&header(), &claims()), &expected(), NOW)
        .unwrap();
    assert_eq!(v.claims.jti, "jti-1");
    assert_eq!(v.claims.message_id, "msg_2");
    // A second installed key (rotation) is found by kid.
    let two = verifier().with_key("kid-2", ATTACKER_PUB).unwrap();
    let by_second = sign(
        &with(header(), "kid", json!("kid-2")),
        &claims(),
        Algorithm::RS256,
        &EncodingKey::from_rsa_pem(ATTACKER_KEY.as_bytes()).unwrap(),
    );
    assert!(two.verify(&by_second, &expected(), NOW).is_ok());
}

/// only RS256: `none`, HS256 keyed with the public key PEM, RS512 are refused before
/// any key is used.
#[test]
fn a31_wrong_algorithms_are_refused() {
    let none = format!(
        "{}.{}.",
        b64(&with(header(), "alg", json!("none"))),
        b64(&claims())
    );
    assert_eq!(refused(&none), ProofRejection::Algorithm("none".into()));
    let hs = sign(
        &with(header(), "alg", json!("HS256")),
        &claims(),
        Algorithm::HS256,
        &EncodingKey::from_secret(TRUSTED_PUB.as_bytes()),
    );
    assert_eq!(refused(&hs), ProofRejection::Algorithm("HS256".into()));
    let rs512 = sign(
        &with(header(), "alg", json!("RS512")),
        &claims(),
        Algorithm::RS512,
        &EncodingKey::from_rsa_pem(TRUSTED_KEY.as_bytes()).unwrap(),
    );
    assert_eq!(refused(&rs512), ProofRejection::Algorithm("RS512".into()));
    let mut no_alg = header();
    no_alg.as_object_mut().unwrap().remove("alg");
    assert_eq!(
        refused(&rs256(&no_alg, &claims())),
        ProofRejection::Algorithm(String::new())
    );
}

/// the typ, the kid, and no embedded keys.
#[test]
fn a31_header_rules() {
    assert_eq!(
        refused(&rs256(&with(header(), "typ", json!("JWT")), &claims())),
        ProofRejection::Type
    );
    assert_eq!(
        refused(&rs256(&with(header(), "kid", json!("kid-9")), &claims())),
        ProofRejection::UnknownKey
    );
    let mut no_kid = header();
    no_kid.as_object_mut().unwrap().remove("kid");
    assert_eq!(
        refused(&rs256(&no_kid, &claims())),
        ProofRejection::UnknownKey
    );
    for field in ["jku", "x5u", "jwk", "x5c"] {
        let h = with(header(), field, json!("https://attacker.example/keys"));
        assert_eq!(
            refused(&rs256(&h, &claims())),
            ProofRejection::EmbeddedKey(match field {
                "jku" => "jku",
                "x5u" => "x5u",
                "jwk" => "jwk",
                _ => "x5c",
            })
        );
    }
    assert_eq!(
        refused(&rs256(&with(header(), "crit", json!(["exp"])), &claims())),
        ProofRejection::Malformed("unexpected header field")
    );
    // Signed by a key that is not the one installed under that kid.
    let forged = sign(
        &header(),
        &claims(),
        Algorithm::RS256,
        &EncodingKey::from_rsa_pem(ATTACKER_KEY.as_bytes()).unwrap(),
    );
    assert_eq!(refused(&forged), ProofRejection::BadSignature);
    // One claim changed after signing.
    let good = rs256(&header(), &claims());
    let parts: Vec<&str> = good.split('.').collect();
    let tampered = format!(
        "{}.{}.{}",
        parts[0],
        b64(&with(claims(), "sub", json!("u_mallory"))),
        parts[2]
    );
    assert_eq!(refused(&tampered), ProofRejection::BadSignature);
    for junk in ["", "a.b", "a.b.c.d", "!!.x.y", "e30.e30.e30"] {
        assert!(
            matches!(
                refused(junk),
                ProofRejection::Malformed(_) | ProofRejection::Algorithm(_)
            ),
            "{junk}"
        );
    }
}

/// issuer and audience.
#[test]
fn a32_issuer_and_audience() {
    assert_eq!(
        refused(&rs256(
            &header(),
            &with(claims(), "iss", json!("https://evil.example"))
        )),
        ProofRejection::Issuer
    );
    assert_eq!(
        refused(&rs256(
            &header(),
            &with(claims(), "aud", json!("https://other.example/mcp"))
        )),
        ProofRejection::Audience
    );
}

/// expired, not yet valid, longer than 60 s; a small leeway only.
#[test]
fn a33_times() {
    let at = |iat: i64, exp: i64| {
        rs256(
            &header(),
            &with(with(claims(), "iat", json!(iat)), "exp", json!(exp)),
        )
    };
    assert_eq!(refused(&at(NOW - 70, NOW - 10)), ProofRejection::Expired);
    assert!(
        verifier()
            .verify(&at(NOW - 62, NOW - 3), &expected(), NOW)
            .is_ok(),
        "within the 5 s leeway"
    );
    assert_eq!(
        refused(&at(NOW + 20, NOW + 60)),
        ProofRejection::NotYetValid
    );
    assert_eq!(
        refused(&at(NOW - 5, NOW + 56)),
        ProofRejection::Lifetime,
        "61 s"
    );
    assert_eq!(refused(&at(NOW, NOW)), ProofRejection::Lifetime);
    assert_eq!(refused(&at(NOW - 5, NOW - 6)), ProofRejection::Lifetime);
}

/// every binding claim must equal the action executed.
#[test]
fn a32_each_mismatched_claim_is_refused() {
    for (claim, name) in [
        ("tenantId", "tenantId"),
        ("sub", "sub"),
        ("conversationId", "conversationId"),
        ("actionId", "actionId"),
        ("operation", "operation"),
        ("argumentsHash", "argumentsHash"),
        ("summaryHash", "summaryHash"),
    ] {
        let token = rs256(&header(), &with(claims(), claim, json!("other")));
        assert_eq!(refused(&token), ProofRejection::Mismatch(name), "{claim}");
    }
    // Unknown or missing claims are refused too.
    let extra = rs256(&header(), &with(claims(), "admin", json!(true)));
    assert!(matches!(refused(&extra), ProofRejection::Malformed(_)));
    let mut missing = claims();
    missing.as_object_mut().unwrap().remove("jti");
    assert!(matches!(
        refused(&rs256(&header(), &missing)),
        ProofRejection::Malformed(_)
    ));
}

/// N-1: an action executes once: a second, genuine proof for the same action (another
/// `jti`, as a second confirm request would get) is refused as already executed, and
/// consumes its `jti` all the same.
#[tokio::test]
async fn n1_a_second_proof_for_an_executed_action_is_refused() {
    let guard = InMemoryReplayGuard::default();
    let v = verifier();
    let first = rs256(&header(), &claims());
    let second = rs256(&header(), &with(claims(), "jti", json!("jti-second")));
    assert!(
        v.verify_and_consume(&first, &expected(), &guard, NOW)
            .await
            .is_ok()
    );
    assert_eq!(
        v.verify_and_consume(&second, &expected(), &guard, NOW)
            .await,
        Err(ProofRejection::AlreadyExecuted)
    );
    assert_eq!(
        v.verify_and_consume(&second, &expected(), &guard, NOW)
            .await,
        Err(ProofRejection::Replayed)
    );
}

/// a proof is consumed once.
#[tokio::test]
async fn a35_replay_is_refused() {
    let guard = InMemoryReplayGuard::default();
    let token = rs256(&header(), &claims());
    let v = verifier();
    assert!(
        v.verify_and_consume(&token, &expected(), &guard, NOW)
            .await
            .is_ok()
    );
    assert_eq!(
        v.verify_and_consume(&token, &expected(), &guard, NOW).await,
        Err(ProofRejection::Replayed)
    );
    // A refused proof consumes nothing: the same jti in a valid proof still works once.
    let guard = InMemoryReplayGuard::default();
    let bad = rs256(&header(), &with(claims(), "actionId", json!("act_2")));
    assert!(
        v.verify_and_consume(&bad, &expected(), &guard, NOW)
            .await
            .is_err()
    );
    assert!(
        v.verify_and_consume(&token, &expected(), &guard, NOW)
            .await
            .is_ok()
    );
}

/// D-7, A-33: given the proposal's `expiresAt`, the kit refuses a proof whose `exp` is
/// later — a proof never outlives its proposal — and accepts one that ends with it or
/// before; without it, only the proof's own times are checked.
#[test]
fn d7_a33_a_proof_that_outlives_its_proposal_is_refused() {
    let token = rs256(&header(), &claims()); // exp = NOW + 55
    let with_expiry = |expires_at: i64| ExpectedAction {
        expires_at: Some(expires_at),
        ..expected()
    };
    assert_eq!(
        verifier()
            .verify(&token, &with_expiry(NOW + 54), NOW)
            .unwrap_err(),
        ProofRejection::Mismatch("exp")
    );
    for ok in [NOW + 55, NOW + 300] {
        assert!(verifier().verify(&token, &with_expiry(ok), NOW).is_ok());
    }
    assert!(verifier().verify(&token, &expected(), NOW).is_ok());
}
