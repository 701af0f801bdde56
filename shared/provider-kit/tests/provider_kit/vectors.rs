//! Proof test vectors for provider engineers in any language (issue 16):
//! `docs/proof-test-vectors.json` holds one valid proof and one proof for each refusal
//! the verification order of docs/provider-guide.md §6 requires, with the key, the
//! expected action and the moment to verify at. This test writes the file from the test
//! keys (`UPDATE_VECTORS=1`), checks the checked-in file is what it writes (RS256
//! signatures are deterministic), and checks the kit's verdict on each vector is the one
//! the file states, so the file and the kit cannot disagree.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_provider_kit::{ExpectedAction, InMemoryReplayGuard, Verifier};
use jsonwebtoken::{Algorithm, EncodingKey};
use serde_json::{Value, json};

const TRUSTED_KEY: &str = include_str!("../keys/trusted.key.pem");
const TRUSTED_PUB: &str = include_str!("../keys/trusted.pub.pem");
const ATTACKER_KEY: &str = include_str!("../keys/attacker.key.pem");
const ISS: &str = "https://support.example.com/mcp-actions";
const AUD: &str = "https://mcp.trackshare.example.com/mcp";
const KID: &str = "countersign-test-2026";
/// V-6: the kid of the test audit checkpoint key (published with `purpose`).
const CHECKPOINT_KID: &str = "countersign-audit-checkpoint-test";
const NOW: i64 = 1_800_000_000;
const ARGS_HASH: &str = "bf5d4052c47cac4ce8e2ea1f26d3dde492452604493bdccc3676deaa0f00e008";
const SUMMARY_HASH: &str = "8f83ee58f4c11cf159842828438ae57f51b647fdc90851bff5a0831ef42f5b9f";

fn header() -> Value {
    json!({"alg": "RS256", "typ": "support-action+jwt", "kid": KID})
}

fn claims() -> Value {
    json!({
        "iss": ISS, "aud": AUD, "sub": "u_alice", "tenantId": "ten_01JDZ6Y5X1QW9T3V7N2K4M8P0R",
        "conversationId": "case_01JDZ7A0000000000000000000", "actionId": "act_01JDZ7B3K9V2M4Q6R8T0W1X3Y5",
        "operation": "reassign_session_car", "argumentsHash": ARGS_HASH, "summaryHash": SUMMARY_HASH,
        "messageId": "msg_01JDZ7C0000000000000000001", "presentedMessageId": "msg_01JDZ7C0000000000000000000",
        "jti": "01JDZ7D0000000000000000000", "iat": NOW - 5, "exp": NOW + 55
    })
}

fn expected() -> ExpectedAction<'static> {
    ExpectedAction {
        tenant_id: "ten_01JDZ6Y5X1QW9T3V7N2K4M8P0R",
        user_id: "u_alice",
        conversation_id: "case_01JDZ7A0000000000000000000",
        action_id: "act_01JDZ7B3K9V2M4Q6R8T0W1X3Y5",
        operation: "reassign_session_car",
        arguments_hash: ARGS_HASH,
        summary_hash: SUMMARY_HASH,
        expires_at: None,
    }
}

fn b64(v: &Value) -> String {
    URL_SAFE_NO_PAD.encode(v.to_string())
}

fn sign(header: &Value, claims: &Value, alg: Algorithm, key: &EncodingKey) -> String {
    let input = format!("{}.{}", b64(header), b64(claims));
    let sig = jsonwebtoken::crypto::sign(input.as_bytes(), key, alg).unwrap();
    format!("{input}.{sig}")
}

fn rs256(header: &Value, claims: &Value) -> String {
    let key = EncodingKey::from_rsa_pem(TRUSTED_KEY.as_bytes()).unwrap();
    sign(header, claims, Algorithm::RS256, &key)
}

fn with(mut v: Value, k: &str, x: Value) -> Value {
    v[k] = x;
    v
}

fn without(mut v: Value, k: &str) -> Value {
    v.as_object_mut().unwrap().remove(k);
    v
}

/// (name, what it tests, token).
fn cases() -> Vec<(&'static str, &'static str, String)> {
    let attacker = EncodingKey::from_rsa_pem(ATTACKER_KEY.as_bytes()).unwrap();
    let good = rs256(&header(), &claims());
    let parts: Vec<&str> = good.split('.').collect();
    let tampered = format!(
        "{}.{}.{}",
        parts[0],
        b64(&with(claims(), "sub", json!("u_mallory"))),
        parts[2]
    );
    vec![
        (
            "valid",
            "a valid proof: accept it once (then see `replay`)",
            good.clone(),
        ),
        ("empty", "no proof at all", String::new()),
        (
            "alg_none",
            "`alg: none` with no signature",
            format!(
                "{}.{}.",
                b64(&with(header(), "alg", json!("none"))),
                b64(&claims())
            ),
        ),
        (
            "hs256_keyed_with_the_public_key",
            "HS256 whose HMAC key is the public key's PEM (the classic confusion)",
            sign(
                &with(header(), "alg", json!("HS256")),
                &claims(),
                Algorithm::HS256,
                &EncodingKey::from_secret(TRUSTED_PUB.as_bytes()),
            ),
        ),
        (
            "rs512",
            "another RSA algorithm",
            sign(
                &with(header(), "alg", json!("RS512")),
                &claims(),
                Algorithm::RS512,
                &EncodingKey::from_rsa_pem(TRUSTED_KEY.as_bytes()).unwrap(),
            ),
        ),
        (
            "another_key",
            "signed by another key under the trusted `kid`",
            sign(&header(), &claims(), Algorithm::RS256, &attacker),
        ),
        (
            "checkpoint_key",
            "signed by the platform's audit checkpoint key (`checkpointKeys`, marked `purpose: audit-checkpoint`): never a proof key",
            sign(
                &with(header(), "kid", json!(CHECKPOINT_KID)),
                &claims(),
                Algorithm::RS256,
                &attacker,
            ),
        ),
        (
            "unknown_kid",
            "a `kid` that is not installed",
            rs256(&with(header(), "kid", json!("some-other-key")), &claims()),
        ),
        (
            "no_kid",
            "no `kid`",
            rs256(&without(header(), "kid"), &claims()),
        ),
        (
            "typ_jwt",
            "`typ` other than support-action+jwt",
            rs256(&with(header(), "typ", json!("JWT")), &claims()),
        ),
        (
            "embedded_jwk",
            "a key embedded in the header (`jwk`)",
            rs256(
                &with(
                    header(),
                    "jwk",
                    json!({"kty": "RSA", "n": "AQAB", "e": "AQAB"}),
                ),
                &claims(),
            ),
        ),
        (
            "embedded_jku",
            "a key location in the header (`jku`)",
            rs256(
                &with(header(), "jku", json!("https://attacker.example/keys.json")),
                &claims(),
            ),
        ),
        (
            "crit_header",
            "an extra header field (`crit`)",
            rs256(&with(header(), "crit", json!(["exp"])), &claims()),
        ),
        ("tampered_claims", "a claim changed after signing", tampered),
        (
            "wrong_issuer",
            "`iss` of someone else",
            rs256(
                &header(),
                &with(claims(), "iss", json!("https://evil.example/mcp-actions")),
            ),
        ),
        (
            "wrong_audience",
            "`aud` of another provider",
            rs256(
                &header(),
                &with(claims(), "aud", json!("https://mcp.other.example/mcp")),
            ),
        ),
        (
            "audience_array",
            "`aud` as an array holding your audience (must be a string)",
            rs256(&header(), &with(claims(), "aud", json!([AUD]))),
        ),
        (
            "expired",
            "`exp` two minutes ago",
            rs256(
                &header(),
                &with(
                    with(claims(), "iat", json!(NOW - 180)),
                    "exp",
                    json!(NOW - 120),
                ),
            ),
        ),
        (
            "not_yet_valid",
            "`iat` a minute ahead",
            rs256(
                &header(),
                &with(
                    with(claims(), "iat", json!(NOW + 60)),
                    "exp",
                    json!(NOW + 110),
                ),
            ),
        ),
        (
            "lifetime_over_60s",
            "`exp - iat` of 10 minutes",
            rs256(&header(), &with(claims(), "exp", json!(NOW + 595))),
        ),
        (
            "extra_claim",
            "a claim beyond the fourteen (`confirmed`)",
            rs256(&header(), &with(claims(), "confirmed", json!(true))),
        ),
        (
            "missing_jti",
            "no `jti`",
            rs256(&header(), &without(claims(), "jti")),
        ),
        (
            "wrong_action_id",
            "another action's proof",
            rs256(
                &header(),
                &with(
                    claims(),
                    "actionId",
                    json!("act_01JDZ7B3K9V2M4Q6R8T0W1X3Y6"),
                ),
            ),
        ),
        (
            "wrong_tenant",
            "another tenant",
            rs256(
                &header(),
                &with(
                    claims(),
                    "tenantId",
                    json!("ten_01JDZ6Y5X1QW9T3V7N2K4M8P0S"),
                ),
            ),
        ),
        (
            "wrong_user",
            "another person",
            rs256(&header(), &with(claims(), "sub", json!("u_bruno"))),
        ),
        (
            "wrong_conversation",
            "another conversation",
            rs256(
                &header(),
                &with(
                    claims(),
                    "conversationId",
                    json!("case_01JDZ7A0000000000000000001"),
                ),
            ),
        ),
        (
            "wrong_operation",
            "another operation",
            rs256(
                &header(),
                &with(claims(), "operation", json!("delete_account")),
            ),
        ),
        (
            "wrong_arguments_hash",
            "other arguments than the stored proposal's",
            rs256(
                &header(),
                &with(claims(), "argumentsHash", json!("0".repeat(64))),
            ),
        ),
        (
            "wrong_summary_hash",
            "another summary than the one presented",
            rs256(
                &header(),
                &with(claims(), "summaryHash", json!("0".repeat(64))),
            ),
        ),
    ]
}

fn verifier() -> Verifier {
    Verifier::new(ISS, AUD).with_key(KID, TRUSTED_PUB).unwrap()
}

fn verdict(token: &str) -> String {
    match verifier().verify(token, &expected(), NOW) {
        Ok(_) => "accept".into(),
        Err(e) => format!("reject: {e:?}"),
    }
}

fn document() -> Value {
    let e = expected();
    let cases: Vec<Value> = cases()
        .into_iter()
        .map(|(name, what, token)| json!({"name": name, "tests": what, "expect": verdict(&token), "token": token}))
        .collect();
    json!({
        "about": "Countersign proof test vectors: verify each `token` at `now` (Unix seconds) against `trustedKeys`, `issuer`, `audience` and `action` (what your server stored for the action being executed and the call's identity headers). `expect` is `accept` or `reject: <the Rust provider kit's reason>`; any refusal is right for a `reject` vector. Then `replay`. `checkpointKeys` is the platform's audit checkpoint key set: a verifier must refuse it as a source of proof keys (the `checkpoint_key` vector is signed by it). The keys are test keys: they sign nothing real.",
        "now": NOW,
        "leewaySeconds": 5,
        "issuer": ISS,
        "audience": AUD,
        "trustedKeys": [{"kid": KID, "alg": "RS256", "publicKeyPem": TRUSTED_PUB}],
        "testPrivateKeyPem": TRUSTED_KEY,
        "checkpointKeys": checkpoint_keys(),
        "action": {
            "tenantId": e.tenant_id, "userId": e.user_id, "conversationId": e.conversation_id,
            "actionId": e.action_id, "operation": e.operation,
            "argumentsHash": e.arguments_hash, "summaryHash": e.summary_hash
        },
        "cases": cases,
        "replay": "Accept `valid` once and record its `jti`; the same token a second time must be refused.",
    })
}

/// V-6: the audit checkpoint keys document as the platform publishes it
/// (`/.well-known/countersign-audit-keys.json`): marked, and each key marked. A verifier
/// must never take proof keys from it.
fn checkpoint_keys() -> Value {
    let attacker = EncodingKey::from_rsa_pem(ATTACKER_KEY.as_bytes()).unwrap();
    let jwk = jsonwebtoken::jwk::Jwk::from_encoding_key(&attacker, Algorithm::RS256).unwrap();
    let jwk = serde_json::to_value(jwk).unwrap();
    json!({"purpose": "audit-checkpoint", "keys": [{
        "kty": "RSA", "alg": "RS256", "use": "sig", "kid": CHECKPOINT_KID,
        "n": jwk["n"], "e": jwk["e"], "purpose": "audit-checkpoint"
    }]})
}

/// `UPDATE_VECTORS=1 cargo test -p countersign-provider-kit --test vectors` rewrites it.
#[test]
fn the_published_vectors_are_these() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/proof-test-vectors.json"
    );
    let generated = serde_json::to_string_pretty(&document()).unwrap() + "\n";
    if std::env::var_os("UPDATE_VECTORS").is_some() {
        std::fs::write(path, &generated).unwrap();
    }
    let checked_in = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "docs/proof-test-vectors.json is stale: run UPDATE_VECTORS=1 cargo test -p countersign-provider-kit --test vectors"
    );
}

/// Exactly one vector is accepted; every other one is refused by the kit, each for its
/// own reason; and the valid one is refused the second time.
#[tokio::test]
async fn the_kit_accepts_only_the_valid_vector_and_only_once() {
    let cases = cases();
    let accepted: Vec<&str> = cases
        .iter()
        .filter(|(_, _, t)| verdict(t) == "accept")
        .map(|(n, _, _)| *n)
        .collect();
    assert_eq!(accepted, ["valid"]);
    let guard = InMemoryReplayGuard::default();
    let valid = &cases[0].2;
    let v = verifier();
    assert!(
        v.verify_and_consume(valid, &expected(), &guard, NOW)
            .await
            .is_ok()
    );
    let again = v
        .verify_and_consume(valid, &expected(), &guard, NOW)
        .await
        .unwrap_err();
    assert_eq!(format!("{again:?}"), "Replayed");
}
