//! K-2: the kit follows the platform's JWKS — fetched once and cached, fetched again when
//! a proof names a key it does not know (a rotation), never more than once per floor
//! interval for unknown keys, and keeping the keys it knows when the platform is down.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::expected;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_domain::jwk::{pem_der, rsa_jwk, rsa_public_key};
use countersign_provider_kit::proof::ProofRejection;
use countersign_provider_kit::{Jwks, Verifier};
use jsonwebtoken::{Algorithm, EncodingKey};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const OLD_KEY: &str = include_str!("../keys/trusted.key.pem");
const OLD_PUB: &str = include_str!("../keys/trusted.pub.pem");
const NEW_KEY: &str = include_str!("../keys/attacker.key.pem");
const NEW_PUB: &str = include_str!("../keys/attacker.pub.pem");
const ISS: &str = "https://support.example.com/mcp-actions";
const AUD: &str = "https://mcp.trackshare.example.com/mcp";

fn kid(pem: &str) -> String {
    rsa_public_key(&pem_der(pem).unwrap()).unwrap().thumbprint()
}

/// A JWKS server on loopback whose document, status and fetch count the test controls.
struct Platform {
    url: String,
    keys: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
    down: Arc<AtomicBool>,
}

async fn platform(pems: &[&str]) -> Platform {
    let keys = Arc::new(Mutex::new(
        pems.iter()
            .map(|p| rsa_jwk(p, &kid(p)).unwrap())
            .collect::<Vec<_>>(),
    ));
    let fetches = Arc::new(AtomicUsize::new(0));
    let down = Arc::new(AtomicBool::new(false));
    let (k, f, d) = (keys.clone(), fetches.clone(), down.clone());
    let app = axum::Router::new().route(
        "/.well-known/jwks.json",
        axum::routing::get(move || {
            let (k, f, d) = (k.clone(), f.clone(), d.clone());
            async move {
                f.fetch_add(1, Ordering::SeqCst);
                if d.load(Ordering::SeqCst) {
                    return (
                        axum::http::StatusCode::SERVICE_UNAVAILABLE,
                        [("cache-control", "no-store")],
                        String::new(),
                    );
                }
                let body = json!({"keys": *k.lock().unwrap()}).to_string();
                (
                    axum::http::StatusCode::OK,
                    [("cache-control", "public, max-age=300")],
                    body,
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}/.well-known/jwks.json",
        listener.local_addr().unwrap()
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    Platform {
        url,
        keys,
        fetches,
        down,
    }
}

fn now() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap()
}

/// A valid proof signed by `key`, its header naming `kid`.
fn proof(key: &str, kid: &str, jti: &str) -> String {
    let header = json!({"alg": "RS256", "typ": "support-action+jwt", "kid": kid});
    let t = now();
    let claims = json!({
        "iss": ISS, "aud": AUD, "sub": "u_alice", "tenantId": "ten_1",
        "conversationId": "case_1", "actionId": "act_1", "operation": "reassign_session_car",
        "argumentsHash": "a".repeat(64), "summaryHash": "b".repeat(64),
        "messageId": "msg_2", "presentedMessageId": "msg_1", "jti": jti,
        "iat": t, "exp": t + 60
    });
    let b64 = |v: &Value| URL_SAFE_NO_PAD.encode(v.to_string());
    let input = format!("{}.{}", b64(&header), b64(&claims));
    let key = EncodingKey::from_rsa_pem(key.as_bytes()).unwrap();
    let sig = jsonwebtoken::crypto::sign(input.as_bytes(), &key, Algorithm::RS256).unwrap();
    format!("{input}.{sig}")
}

/// Before, during and after a rotation: the first proof fetches the set, the next ones use
/// the cache, a proof by the newly announced key fetches it again, and both keys verify.
#[tokio::test]
async fn k2_a_new_kid_is_fetched_once_and_both_keys_verify() {
    let p = platform(&[OLD_PUB]).await;
    let jwks = Arc::new(Jwks::new(&p.url).with_min_refresh(Duration::ZERO));
    let v = Verifier::new(ISS, AUD).with_jwks(jwks.clone());
    let (old, new) = (kid(OLD_PUB), kid(NEW_PUB));
    // Not fetched yet: the synchronous check knows nothing.
    assert_eq!(
        v.verify(&proof(OLD_KEY, &old, "j1"), &expected(), now()),
        Err(ProofRejection::UnknownKey)
    );
    for jti in ["j1", "j2", "j3"] {
        v.verify_fetching(&proof(OLD_KEY, &old, jti), &expected(), now())
            .await
            .unwrap();
    }
    assert_eq!(
        p.fetches.load(Ordering::SeqCst),
        1,
        "cached for its max-age"
    );
    // The platform announces its next key, then signs with it.
    p.keys.lock().unwrap().push(rsa_jwk(NEW_PUB, &new).unwrap());
    v.verify_fetching(&proof(NEW_KEY, &new, "j4"), &expected(), now())
        .await
        .unwrap();
    v.verify_fetching(&proof(OLD_KEY, &old, "j5"), &expected(), now())
        .await
        .unwrap();
    assert_eq!(p.fetches.load(Ordering::SeqCst), 2);
    assert_eq!(jwks.known_kids().len(), 2);
    // A key labelled with another key's kid is not a key of the platform: ignored.
    p.keys
        .lock()
        .unwrap()
        .push(rsa_jwk(NEW_PUB, "made-up").unwrap());
    assert_eq!(
        v.verify_fetching(&proof(NEW_KEY, "made-up", "j6"), &expected(), now())
            .await,
        Err(ProofRejection::UnknownKey)
    );
    // A proof signed by one key under the other's kid fails its signature.
    assert_eq!(
        v.verify_fetching(&proof(NEW_KEY, &old, "j7"), &expected(), now())
            .await,
        Err(ProofRejection::BadSignature)
    );
}

/// Made-up kids cannot make the provider hammer the platform: one fetch per floor.
#[tokio::test]
async fn k2_unknown_kids_refetch_at_most_once_per_floor() {
    let p = platform(&[OLD_PUB]).await;
    let v = Verifier::new(ISS, AUD).with_jwks(Arc::new(
        Jwks::new(&p.url).with_min_refresh(Duration::from_secs(60)),
    ));
    for i in 0..20 {
        let token = proof(OLD_KEY, &format!("unknown-{i}"), "j");
        assert_eq!(
            v.verify_fetching(&token, &expected(), now()).await,
            Err(ProofRejection::UnknownKey)
        );
    }
    assert_eq!(p.fetches.load(Ordering::SeqCst), 1);
}

/// The platform down: known keys keep verifying; an unknown kid is "keys unavailable".
#[tokio::test]
async fn k2_a_failed_fetch_keeps_the_known_keys() {
    let p = platform(&[OLD_PUB]).await;
    let jwks = Arc::new(
        Jwks::new(&p.url)
            .with_max_age(Duration::ZERO)
            .with_min_refresh(Duration::ZERO),
    );
    let v = Verifier::new(ISS, AUD).with_jwks(jwks);
    let old = kid(OLD_PUB);
    v.verify_fetching(&proof(OLD_KEY, &old, "j1"), &expected(), now())
        .await
        .unwrap();
    p.down.store(true, Ordering::SeqCst);
    v.verify_fetching(&proof(OLD_KEY, &old, "j2"), &expected(), now())
        .await
        .unwrap();
    assert_eq!(
        v.verify_fetching(&proof(NEW_KEY, &kid(NEW_PUB), "j3"), &expected(), now())
            .await,
        Err(ProofRejection::KeysUnavailable)
    );
    assert!(p.fetches.load(Ordering::SeqCst) >= 2, "it did try again");
}

/// Keys installed by hand are looked at first and need no JWKS.
#[tokio::test]
async fn installed_keys_and_the_jwks_work_together() {
    let p = platform(&[NEW_PUB]).await;
    let old = kid(OLD_PUB);
    let v = Verifier::new(ISS, AUD)
        .with_key(old.clone(), OLD_PUB)
        .unwrap()
        .with_jwks(Arc::new(Jwks::new(&p.url)));
    v.verify_fetching(&proof(OLD_KEY, &old, "j1"), &expected(), now())
        .await
        .unwrap();
    assert_eq!(p.fetches.load(Ordering::SeqCst), 0);
    v.verify_fetching(&proof(NEW_KEY, &kid(NEW_PUB), "j2"), &expected(), now())
        .await
        .unwrap();
    assert_eq!(p.fetches.load(Ordering::SeqCst), 1);
}

/// Issue 25: a platform that is down is asked at most once per floor, stale set or not
/// (before, a stale set made every proof fetch again).
#[tokio::test]
async fn the_floor_holds_after_failed_fetches() {
    let p = platform(&[OLD_PUB]).await;
    p.down.store(true, Ordering::SeqCst);
    let v = Verifier::new(ISS, AUD).with_jwks(Arc::new(
        Jwks::new(&p.url).with_min_refresh(Duration::from_secs(60)),
    ));
    for i in 0..10 {
        let token = proof(OLD_KEY, &kid(OLD_PUB), &format!("j{i}"));
        assert_eq!(
            v.verify_fetching(&token, &expected(), now()).await,
            Err(ProofRejection::KeysUnavailable)
        );
    }
    assert_eq!(p.fetches.load(Ordering::SeqCst), 1);
}

/// Issue 25: keys come only from an https URL (http on loopback for development), and a
/// redirect is not followed, so the set cannot be swapped on the way.
#[tokio::test]
async fn jwks_urls_are_https_and_redirects_are_not_followed() {
    let old = kid(OLD_PUB);
    // Plain http to a real host: never fetched (no network needed to refuse it).
    let plain = Verifier::new(ISS, AUD).with_jwks(Arc::new(Jwks::new(
        "http://support.example.com/.well-known/jwks.json",
    )));
    assert_eq!(
        plain
            .verify_fetching(&proof(OLD_KEY, &old, "j1"), &expected(), now())
            .await,
        Err(ProofRejection::KeysUnavailable)
    );
    // A server that redirects to a set holding the key: the redirect is not followed.
    let p = platform(&[OLD_PUB]).await;
    let target = p.url.clone();
    let app = axum::Router::new().route(
        "/jwks.json",
        axum::routing::get(move || {
            let target = target.clone();
            async move { axum::response::Redirect::temporary(&target) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let redirected = Verifier::new(ISS, AUD).with_jwks(Arc::new(Jwks::new(&url)));
    assert_eq!(
        redirected
            .verify_fetching(&proof(OLD_KEY, &old, "j2"), &expected(), now())
            .await,
        Err(ProofRejection::KeysUnavailable)
    );
    assert_eq!(
        p.fetches.load(Ordering::SeqCst),
        0,
        "the target was never asked"
    );
}
