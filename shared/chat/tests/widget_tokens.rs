//! Widget JWTs are other parties' bytes (D-2): property tests of the verifier. Each
//! reports how many cases ran (`--nocapture` prints it) and asserts that number.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_chat::widget::{MAX_TOKEN_SECONDS, WidgetAuth, sign_token};
use countersign_domain::config::widget_secret_name;
use countersign_domain::ids::{TenantId, UserId, WidgetKeyId};
use countersign_domain::ports::WidgetKeys;
use countersign_domain::ports::{AuditEntry, SecretStore, WidgetKey};
use countersign_domain::secret::SecretString;
use countersign_domain::time::Timestamp;
use countersign_testkit::{MemorySecrets, MemoryStore};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::sync::Arc;

const SECRET: &str = "widget-secret-0123456789abcdef0123456789abcdef";
const SHOP: &str = "https://shop.example.com";

struct Setup {
    auth: WidgetAuth,
    tenant: TenantId,
    kid: WidgetKeyId,
    rt: tokio::runtime::Runtime,
}

fn setup() -> Setup {
    setup_retiring(None)
}

fn setup_retiring(retires_at: Option<Timestamp>) -> Setup {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let tenant = TenantId::from_ulid_text("01JDZ6Y5X1QW9T3V7N2K4M8P0R").unwrap();
    let kid = WidgetKeyId::from_ulid_text("01JDZ6Y5X1QW9T3V7N2K4M8P0S").unwrap();
    let store = Arc::new(MemoryStore::default());
    let secrets = Arc::new(MemorySecrets::default());
    let now = Timestamp::from_unix_seconds(1_795_986_900).unwrap();
    rt.block_on(async {
        let key = WidgetKey {
            id: kid.clone(),
            created_at: now,
            allowed_origins: vec![SHOP.to_owned()],
            retires_at,
        };
        let audit = AuditEntry {
            id: countersign_domain::ids::AuditId::from_ulid_text("01JDZ6Y5X1QW9T3V7N2K4M8P0T")
                .unwrap(),
            at: now,
            actor: "operator".into(),
            action: "widget.create".into(),
            changes: serde_json::json!({}),
        };
        store.put_widget_key(&tenant, &key, &audit).await.unwrap();
        secrets
            .put(
                &widget_secret_name(&tenant, &kid),
                &SecretString::new(SECRET),
            )
            .await
            .unwrap();
    });
    Setup {
        auth: WidgetAuth::new(store, secrets),
        tenant,
        kid,
        rt,
    }
}

fn run<S: Strategy>(
    name: &str,
    cases: u32,
    strategy: S,
    check: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let ran = std::sync::atomic::AtomicU32::new(0);
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let result = runner.run(&strategy, |v| {
        ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        check(v)
    });
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
    // Runs that a `prop_assume!` set aside are re-drawn: at least `cases` ran.
    let n = ran.into_inner();
    eprintln!("{name}: {n} cases");
    assert!(n >= cases, "{name}: {n} cases");
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

fn b64(v: &serde_json::Value) -> String {
    URL_SAFE_NO_PAD.encode(v.to_string())
}

/// Any bytes, JWT-shaped or not, with headers and claims that are JSON or not: refused,
/// never a panic, never accepted.
#[test]
fn d2_arbitrary_tokens_are_refused_without_panic() {
    let s = setup();
    let header = prop_oneof![
        Just(serde_json::json!({"alg": "HS256", "kid": s.kid.as_str()})),
        Just(serde_json::json!({"alg": "none", "kid": s.kid.as_str()})),
        Just(serde_json::json!({"alg": "HS256"})),
        any::<String>().prop_map(|k| serde_json::json!({"alg": "HS256", "kid": k})),
    ];
    let claims = (any::<String>(), any::<String>(), any::<i64>(), any::<i64>()).prop_map(
        |(sub, tid, iat, exp)| serde_json::json!({"sub": sub, "tid": tid, "iat": iat, "exp": exp}),
    );
    let token = prop_oneof![
        any::<String>(),
        "[A-Za-z0-9_.=-]{0,200}",
        (header, claims, "[A-Za-z0-9_-]{0,64}").prop_map(|(h, c, sig)| format!(
            "{}.{}.{sig}",
            b64(&h),
            b64(&c)
        )),
    ];
    run("d2_arbitrary_tokens", 2048, token, |t| {
        let r = s.rt.block_on(s.auth.authenticate(&t));
        prop_assert!(r.is_err(), "accepted {t:?}");
        Ok(())
    });
}

/// Tokens signed with the tenant's credential: accepted exactly when the rules hold —
/// not expired (30 s leeway), not issued in the future (30 s), a lifetime of 0 to 24 h,
/// this tenant, a valid user id — and then as that person.
#[test]
fn d2_signed_tokens_are_accepted_exactly_when_the_rules_hold() {
    let s = setup();
    let max = MAX_TOKEN_SECONDS;
    let lifetime = prop_oneof![
        prop::sample::select(vec![
            -3600,
            -1,
            0,
            1,
            300,
            3600,
            max - 1,
            max,
            max + 1,
            10 * max
        ]),
        -max..2 * max,
    ];
    let user = prop::sample::select(vec![
        "u_alice".to_owned(),
        String::new(),
        "x".repeat(300),
        "has space".to_owned(),
        "driver-42".to_owned(),
    ]);
    let other = TenantId::from_ulid_text("01JDZ6Y5X1QW9T3V7N2K4M8P0Z").unwrap();
    let tenant = prop::sample::select(vec![s.tenant.clone(), other]);
    // Issue times near now, where the rules meet, as often as far ones.
    let iat_offset = prop_oneof![-2 * max..120i64, -45..45i64];
    let cases = (iat_offset, lifetime, user, tenant);
    run(
        "d2_signed_tokens",
        2048,
        cases,
        |(iat_off, life, sub, tid)| {
            let t0 = now();
            let (iat, exp) = (t0 + iat_off, t0 + iat_off + life);
            // Stay clear of the clock's boundaries (the second may tick during a case).
            prop_assume!((iat - (t0 + 30)).abs() > 3 && (exp - (t0 - 30)).abs() > 3);
            let secret = SecretString::new(SECRET);
            let Ok(user) = UserId::parse(sub.clone()) else {
                // The signer refuses nothing; sign the raw claims.
                let header =
                    serde_json::json!({"alg": "HS256", "typ": "JWT", "kid": s.kid.as_str()});
                let claims =
                    serde_json::json!({"sub": sub, "tid": tid.as_str(), "iat": iat, "exp": exp});
                let token = jsonwebtoken::encode(
                    &serde_json::from_value(header).unwrap(),
                    &claims,
                    &jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes()),
                )
                .unwrap();
                prop_assert!(s.rt.block_on(s.auth.authenticate(&token)).is_err());
                return Ok(());
            };
            let token = sign_token(&secret, &s.kid, &tid, &user, iat, exp).unwrap();
            let accepted = s.rt.block_on(s.auth.authenticate(&token));
            let should =
                tid == s.tenant && exp >= t0 - 30 && iat <= t0 + 30 && (0..=max).contains(&life);
            prop_assert_eq!(
                accepted.is_ok(),
                should,
                "iat {} exp {} now {}",
                iat,
                exp,
                t0
            );
            if let Ok(p) = accepted {
                prop_assert_eq!(p.tenant, s.tenant.clone());
                prop_assert_eq!(p.user, user);
            }
            Ok(())
        },
    );
}

/// Decision 0025: a valid token is accepted from its credential's origins (or without
/// an origin) and refused from any other; an invalid token is refused as invalid
/// whatever its origin, so it learns nothing about the credential's origins.
#[test]
fn a_valid_token_is_refused_from_an_origin_its_credential_does_not_list() {
    use countersign_chat::widget::AuthError;
    let s = setup();
    let t = now();
    let user = UserId::parse("u_alice").unwrap();
    let token = sign_token(
        &SecretString::new(SECRET),
        &s.kid,
        &s.tenant,
        &user,
        t,
        t + 600,
    )
    .unwrap();
    let from =
        |origin: Option<&str>, token: &str| s.rt.block_on(s.auth.authenticate_from(token, origin));
    assert!(from(Some(SHOP), &token).is_ok());
    assert!(from(None, &token).is_ok());
    assert_eq!(
        from(Some("https://evil.example"), &token),
        Err(AuthError::Origin)
    );
    let forged = sign_token(
        &SecretString::new("another secret"),
        &s.kid,
        &s.tenant,
        &user,
        t,
        t + 600,
    )
    .unwrap();
    assert_eq!(
        from(Some("https://evil.example"), &forged),
        Err(AuthError::Invalid)
    );
}

/// A replaced credential (decision 0047): its tokens are accepted during the grace period
/// the administrator chose and refused from its end, like a revoked one's.
#[test]
fn u3_a_replaced_credential_is_accepted_until_its_grace_period_ends() {
    use countersign_chat::widget::AuthError;
    let t = now();
    let user = UserId::parse("u_alice").unwrap();
    for (ends_in, expected) in [(3600, Ok(())), (-1, Err(AuthError::UnknownCredential))] {
        let s = setup_retiring(Some(Timestamp::from_unix_seconds(t + ends_in).unwrap()));
        let token = sign_token(
            &SecretString::new(SECRET),
            &s.kid,
            &s.tenant,
            &user,
            t,
            t + 600,
        )
        .unwrap();
        let got = s.rt.block_on(s.auth.authenticate(&token)).map(|_| ());
        assert_eq!(got, expected, "grace period ending in {ends_in} s");
    }
}

/// N-7: no person of the chat carries a certification's reserved prefix: a widget token
/// for `countersign-test:…` is refused (so a run's synthetic person is never a real one);
/// N-6: a token with a `nonce` (a sign-in hand-off) is no widget token.
#[test]
fn n7_n6_reserved_test_people_and_hand_off_tokens_are_no_widget_bearers() {
    use countersign_chat::widget::{AuthError, sign_hand_off};
    use countersign_domain::conversation::Principal;
    let s = setup();
    let t = now();
    let secret = SecretString::new(SECRET);
    let reserved = UserId::parse("countersign-test:u_test").unwrap();
    let token = sign_token(&secret, &s.kid, &s.tenant, &reserved, t, t + 600).unwrap();
    assert_eq!(
        s.rt.block_on(s.auth.authenticate(&token)),
        Err(AuthError::Invalid)
    );
    let who = Principal {
        tenant: s.tenant.clone(),
        user: UserId::parse("u_alice").unwrap(),
    };
    let hand_off = sign_hand_off(&secret, &s.kid, &who, "n", t, t + 120).unwrap();
    assert_eq!(
        s.rt.block_on(s.auth.authenticate(&hand_off)),
        Err(AuthError::Invalid)
    );
    assert!(
        s.rt.block_on(s.auth.authenticate_hand_off(&hand_off))
            .is_ok()
    );
    let plain = sign_token(&secret, &s.kid, &s.tenant, &who.user, t, t + 120).unwrap();
    assert_eq!(
        s.rt.block_on(s.auth.authenticate_hand_off(&plain)),
        Err(AuthError::Invalid)
    );
}
