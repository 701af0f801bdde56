//! K-1, K-2 on the local stack: the signing key rotates with overlap while a provider
//! that follows the JWKS (the demo provider, through the provider kit) keeps verifying
//! every proof — signed before, during and after the rotation — with no refused
//! confirmation; and the operator's CLI steps refuse the orders that would break that.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use countersign_acceptance::{Options, Stack};
use countersign_aws::kms::KmsProofSigner;
use countersign_aws::rotation::{Rotation, RotationError, unix_now};
use countersign_domain::keyring::RingError;
use countersign_domain::time::Timestamp;
use serde_json::Value;
use std::time::Duration;

fn now() -> Timestamp {
    Timestamp::from_unix_seconds(unix_now()).unwrap()
}

/// The JWKS as a provider reads it: its `kid`s and its `Cache-Control`.
async fn jwks(s: &Stack) -> (Vec<String>, String) {
    let res = s
        .http
        .get(format!("{}/.well-known/jwks.json", s.admin_url))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.headers()["content-type"].to_str().unwrap(),
        "application/jwk-set+json"
    );
    let cache = res.headers()["cache-control"].to_str().unwrap().to_owned();
    let body: Value = res.json().await.unwrap();
    let kids = body["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            // K-1: RS256 signature keys named by their RFC 7638 thumbprint.
            assert_eq!(
                (&k["kty"], &k["alg"], &k["use"]),
                (&"RSA".into(), &"RS256".into(), &"sig".into())
            );
            let kid = k["kid"].as_str().unwrap();
            assert_eq!(
                countersign_domain::jwk::rsa_jwk_thumbprint(
                    k["n"].as_str().unwrap(),
                    k["e"].as_str().unwrap()
                ),
                kid
            );
            kid.to_owned()
        })
        .collect();
    (kids, cache)
}

/// The keys the admin API shows, as `(kid, status)`.
async fn admin_keys(s: &Stack) -> Vec<(String, String)> {
    let (status, view) = s.admin("GET", "mcp", None).await;
    assert_eq!(status, 200, "{view}");
    view["actionVerification"]["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["keyId"].as_str().unwrap().to_owned(),
                k["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Moves ses_a1 to its other car and confirms; the provider must execute it.
async fn confirm_once(s: &Stack, t: &str, case: &str) {
    let car = if s.car_of("u_alice", "ses_a1") == "car_a1" {
        "car_a2"
    } else {
        "car_a1"
    };
    let before = s.stats()["executions"].as_u64().unwrap();
    let p = s.propose(t, case, "ses_a1", car).await;
    s.say(t, case, "confirm", p["id"].as_str()).await;
    assert_eq!(
        s.stats()["executions"].as_u64().unwrap(),
        before + 1,
        "{}",
        s.stats()
    );
    assert_eq!(s.car_of("u_alice", "ses_a1"), car);
}

fn kids_verified(s: &Stack) -> Vec<String> {
    s.demo.verified_kids.lock().unwrap().clone()
}

#[tokio::test]
async fn k1_k2_proofs_signed_before_during_and_after_a_rotation_all_verify_at_a_jwks_following_provider()
 {
    let s = Stack::with(Options {
        follow_jwks: true,
        signing_key_refresh_secs: Some(1),
        // From the start: a provider's cache filled under a longer time would still hold
        // the old set when the new key starts signing (operations.md: change the cache
        // time only between rotations).
        jwks_cache_seconds: Some(1),
        ..Options::default()
    })
    .await;
    let sdk = aws_config::load_from_env().await;
    let kms = KmsProofSigner::client(&sdk, None);
    let alias = s.settings.signing_key.clone().unwrap();
    let rotation = Rotation::new(&kms, &s.store, &alias);
    let t = s.token("u_alice");
    let case = s.create_case(&t).await;

    // Before: one key, the bootstrap's, active and published.
    let (kids, cache) = jwks(&s).await;
    assert_eq!(kids.len(), 1);
    assert_eq!(cache, "public, max-age=1");
    let old = kids[0].clone();
    assert_eq!(admin_keys(&s).await, [(old.clone(), "active".to_owned())]);
    confirm_once(&s, &t, &case).await;

    // Announced: published next to the old key, not signing yet.
    // I-1: made as a deployment makes it (`keys announce --create --signer-role-arn …`),
    // so that the roles that sign and read may, and the announcement checks its policy.
    let users = countersign_aws::bootstrap::local_key_users();
    let created = rotation.create(Some(&users)).await.unwrap();
    let announced_at = now();
    let signers = [users.signer.as_str(), users.stream.as_deref().unwrap()];
    let new = rotation
        .announce(&created, announced_at, &signers)
        .await
        .unwrap();
    assert_ne!(new, old);
    assert_eq!(jwks(&s).await.0, [old.clone(), new.clone()]);
    assert_eq!(
        admin_keys(&s).await,
        [
            (old.clone(), "active".to_owned()),
            (new.clone(), "announced".to_owned())
        ]
    );
    confirm_once(&s, &t, &case).await;

    // Activation waits for the JWKS cache time (caches must have seen the new key).
    assert!(matches!(
        rotation.activate(&new, announced_at).await,
        Err(RotationError::Ring(RingError::TooEarly { .. }))
    ));
    // Retiring the active key is refused at any time.
    assert!(matches!(
        rotation.retire(&old, now()).await,
        Err(RotationError::Ring(RingError::WrongState { .. }))
    ));
    tokio::time::sleep(Duration::from_millis(1100)).await;
    rotation.activate(&new, now()).await.unwrap();
    assert_eq!(jwks(&s).await.0, [old.clone(), new.clone()]);
    // During: the messages process may still sign with the key it cached; both verify.
    confirm_once(&s, &t, &case).await;
    // The process notices the switch (its refresh interval is 1 s here, 60 s by
    // default): from then on the new key signs.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    confirm_once(&s, &t, &case).await;
    confirm_once(&s, &t, &case).await;
    assert_eq!(
        kids_verified(&s).last(),
        Some(&new),
        "{:?}",
        kids_verified(&s)
    );

    // The old key stays published until its proofs have expired and every cache has its
    // successor (the hold, here 60 + 60 + 30 + 1 s; simulated, as an operator would wait).
    let ring = rotation.list().await.unwrap().ring;
    let hold = ring.retire_hold_seconds();
    assert_eq!(hold, 151);
    assert!(matches!(
        rotation.retire(&old, now()).await,
        Err(RotationError::Ring(RingError::TooEarly { .. }))
    ));
    let later = now().plus_seconds(hold);
    let old_arn = ring.get(&old).unwrap().arn.clone();
    rotation.retire(&old, later).await.unwrap();
    assert_eq!(jwks(&s).await.0, std::slice::from_ref(&new));
    // V-5: the retired key can no longer sign: disabled in KMS (not deleted). Real KMS
    // refuses Sign on a disabled key (DisabledException); the emulator signs anyway, so
    // the state KMS enforces is what is checked here.
    let described = kms.describe_key().key_id(&old_arn).send().await.unwrap();
    let meta = described.key_metadata.unwrap();
    assert!(!meta.enabled, "a retired key is disabled");
    assert_eq!(meta.key_state, Some(aws_sdk_kms::types::KeyState::Disabled));
    assert_eq!(admin_keys(&s).await, [(new.clone(), "active".to_owned())]);
    // After: the new key alone.
    confirm_once(&s, &t, &case).await;

    // Every proof verified: the first two with the old key, the last ones with the new.
    let verified = kids_verified(&s);
    assert_eq!(verified.len(), 6, "{verified:?}");
    assert_eq!(&verified[..2], [old.clone(), old.clone()]);
    assert_eq!(&verified[3..], [new.clone(), new.clone(), new.clone()]);
    assert!(verified.iter().all(|k| k == &old || k == &new));
    assert_eq!(s.stats()["proofRefusals"], 0, "{}", s.stats());
    s.finish();
}
