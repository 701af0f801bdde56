//! The KMS proof signer against the emulator, checked by an independent RS256 verifier.

use crate::common::env;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_aws::kms::{KmsProofSigner, rsa_jwk_thumbprint};
use countersign_aws::sdk::Principal;
use countersign_domain::confirmation::Authorized;
use countersign_domain::ports::Ids as _;
use countersign_domain::ports::{Clock, ProofSigner, SignerError};
use countersign_domain::proof::{ProofClaims, ProofContext, sign_proof};
use countersign_domain::proposal::ProposalState;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};

const ISS: &str = "https://support.example.com/mcp-actions";
const AUD: &str = "https://mcp.trackshare.example.com/mcp";

/// The claims of a proof for a proposal `action` just confirmed in a new conversation.
async fn executing_claims(env: &crate::common::Env, action: &str, jti: &str) -> ProofClaims {
    let store = env.store();
    let case = env.open_case(&store, &env.tenant()).await;
    let (mut p, _) = env.proposal(&case, action, 1);
    let confirm = env.ids.message_id();
    p.state = ProposalState::Executing;
    p.confirmation_message_id = Some(confirm.clone());
    let auth = Authorized {
        action_id: p.action_id.clone(),
        message_id: confirm,
        presented_message_id: p.presented.message_id.clone(),
    };
    let ctx = ProofContext {
        issuer: ISS,
        audience: AUD,
        jti,
        now: countersign_aws::system::SystemClock.now(),
    };
    ProofClaims::for_confirmation(&p, &auth, &ctx).unwrap()
}

/// A-31 … A-33: a proof signed through KMS verifies with `jsonwebtoken` using the PEM the
/// adapter exports; changing one byte of the payload breaks it; the public key is fetched
/// once per process.
#[tokio::test]
async fn a31_kms_proof_verifies_with_an_independent_rs256_verifier() {
    let env = env().await;
    let client = KmsProofSigner::client(&env.as_role(Principal::Messages), Some(&env.calls));
    let signer = KmsProofSigner::new(client, env.settings.signing_key.clone());

    let claims = executing_claims(&env, "act_kms", "jti-kms-1").await;

    env.calls.reset();
    let proof = sign_proof(&signer, &claims).await.unwrap();
    let second = sign_proof(&signer, &claims).await.unwrap();
    let calls = env.calls.snapshot();
    assert_eq!(
        calls.get("GetPublicKey"),
        Some(&1),
        "public key cached: {calls:?}"
    );
    assert_eq!(calls.get("Sign"), Some(&2));
    assert_eq!(
        proof.expose(),
        second.expose(),
        "RSASSA-PKCS1-v1_5 is deterministic"
    );

    let key = signer.verification_key().await.unwrap();
    let public = signer.public_key().await.unwrap();
    assert_eq!(key.key_id, public.kid);
    assert_eq!(
        public.kid,
        rsa_jwk_thumbprint(
            public.jwk["n"].as_str().unwrap(),
            public.jwk["e"].as_str().unwrap()
        )
    );
    assert!(key.public_key_pem.starts_with("-----BEGIN PUBLIC KEY-----"));

    let header = decode_header(proof.expose()).unwrap();
    assert_eq!(header.alg, Algorithm::RS256);
    assert_eq!(header.typ.as_deref(), Some("support-action+jwt"));
    assert_eq!(header.kid.as_deref(), Some(public.kid.as_str()));
    assert!(header.jku.is_none() && header.x5u.is_none() && header.jwk.is_none());

    let decoding = DecodingKey::from_rsa_pem(key.public_key_pem.as_bytes()).unwrap();
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_issuer(&[ISS]);
    validation.set_audience(&[AUD]);
    let verified = decode::<ProofClaims>(proof.expose(), &decoding, &validation).unwrap();
    assert_eq!(verified.claims, claims);

    // One byte of the payload changed: the signature no longer verifies.
    let parts: Vec<&str> = proof.expose().split('.').collect();
    let mut payload = URL_SAFE_NO_PAD.decode(parts[1]).unwrap();
    let at = payload.iter().position(|b| *b == b'4').unwrap();
    payload[at] = b'5';
    let tampered = format!(
        "{}.{}.{}",
        parts[0],
        URL_SAFE_NO_PAD.encode(payload),
        parts[2]
    );
    assert!(decode::<ProofClaims>(&tampered, &decoding, &validation).is_err());
}

/// K-2: after the alias moves (a rotation's activation), the signer keeps signing with
/// the key it resolved until it looks again, then with the new one; the header's `kid`
/// always names the key that signed, so every proof verifies with the key it names.
#[tokio::test]
async fn k2_the_signer_follows_its_alias_and_each_kid_names_the_key_that_signed() {
    use countersign_aws::kms::read_key;
    let env = env().await;
    let kms = KmsProofSigner::client(&env.sdk, None);
    let signing = KmsProofSigner::client(&env.as_role(Principal::Messages), None);
    let alias = env.settings.signing_key.clone().unwrap();
    let signer =
        KmsProofSigner::new(signing, Some(alias.clone())).with_refresh(std::time::Duration::ZERO);
    let claims = executing_claims(&env, "act_rot", "jti-rot").await;
    let verifies = |proof: &str, pem: &str| {
        let mut v = Validation::new(Algorithm::RS256);
        v.set_issuer(&[ISS]);
        v.set_audience(&[AUD]);
        decode::<ProofClaims>(
            proof,
            &DecodingKey::from_rsa_pem(pem.as_bytes()).unwrap(),
            &v,
        )
        .is_ok()
    };
    let old = read_key(&kms, &alias).await.unwrap();
    let first = sign_proof(&signer, &claims).await.unwrap();
    assert_eq!(
        decode_header(first.expose()).unwrap().kid,
        Some(old.public.kid.clone())
    );

    let id = countersign_aws::bootstrap::create_signing_key(&kms, None)
        .await
        .unwrap();
    let new = read_key(&kms, &id).await.unwrap();
    kms.update_alias()
        .alias_name(&alias)
        .target_key_id(&new.arn)
        .send()
        .await
        .unwrap();
    // The process notices in the background (its refresh interval is 0 here).
    let mut kid = signer.key_id().await.unwrap();
    for _ in 0..100 {
        if kid == new.public.kid {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        kid = signer.key_id().await.unwrap();
    }
    assert_eq!(
        kid, new.public.kid,
        "the signer never noticed the alias moved"
    );
    let second = sign_proof(&signer, &claims).await.unwrap();
    assert_eq!(
        decode_header(second.expose()).unwrap().kid,
        Some(new.public.kid.clone())
    );
    assert!(verifies(second.expose(), &new.public.pem));
    assert!(!verifies(second.expose(), &old.public.pem));
    assert!(verifies(first.expose(), &old.public.pem));
    // A header built with the old kid just before the switch is still signed by the old
    // key, never by the new one under the old name.
    let signature = signer.sign_rs256(&old.public.kid, b"a.b").await.unwrap();
    let direct = KmsProofSigner::client(&env.as_role(Principal::Messages), None)
        .sign()
        .key_id(&old.arn)
        .message(aws_sdk_kms::primitives::Blob::new(&b"a.b"[..]))
        .message_type(aws_sdk_kms::types::MessageType::Raw)
        .signing_algorithm(aws_sdk_kms::types::SigningAlgorithmSpec::RsassaPkcs1V15Sha256)
        .send()
        .await
        .unwrap();
    assert_eq!(Some(signature), direct.signature.map(|b| b.into_inner()));
    // An unknown kid is not signed at all.
    assert!(signer.sign_rs256("unknown", b"a.b").await.is_err());
}

/// K-2: two operators changing the key ring at once cannot lose a change: a put against
/// a version that moved writes nothing.
#[tokio::test]
async fn k2_a_key_ring_change_against_a_moved_version_writes_nothing() {
    let env = env().await;
    let store = env.store();
    let stored = store.key_ring().await.unwrap();
    // The bootstrap installed the alias's key as the first active key.
    assert_eq!(stored.ring.keys.len(), 1);
    assert!(stored.version >= 1);
    let mut a = stored.ring.clone();
    a.set_cache_seconds(10).unwrap();
    let mut b = stored.ring.clone();
    b.set_cache_seconds(20).unwrap();
    assert!(store.put_key_ring(&a, stored.version).await.unwrap());
    assert!(!store.put_key_ring(&b, stored.version).await.unwrap());
    assert_eq!(store.key_ring().await.unwrap().ring.cache_seconds, 10);
}

/// C-5: no key configured, or an alias that does not exist, is "not configured".
#[tokio::test]
async fn c5_missing_signing_key_is_not_configured() {
    let env = env().await;
    let client = KmsProofSigner::client(&env.sdk, None);
    let none = KmsProofSigner::new(client.clone(), None);
    assert!(matches!(
        none.verification_key().await,
        Err(SignerError::NotConfigured)
    ));
    assert!(matches!(
        none.sign_rs256("kid", b"x").await,
        Err(SignerError::NotConfigured)
    ));
    let missing = KmsProofSigner::new(client, Some("alias/cs-test-does-not-exist".into()));
    assert!(matches!(
        missing.key_id().await,
        Err(SignerError::NotConfigured)
    ));
}

/// Issue 13: a key the bootstrap creates for a deployment carries the policy in which
/// only the signer role may sign.
#[tokio::test]
async fn bootstrap_creates_the_key_with_the_signer_only_policy() {
    use countersign_aws::bootstrap::{KeyUsers, ensure_signing_key, signing_key_policy};
    let env = env().await;
    let kms = aws_sdk_kms::Client::new(&env.sdk);
    let users = KeyUsers {
        signer: "arn:aws:iam::123456789012:role/countersign-messages".into(),
        stream: None,
        reader: None,
        gateway: None,
        administrator: None,
    };
    let alias = format!(
        "alias/cs-policy-{}",
        ulid::Ulid::new().to_string().to_lowercase()
    );
    let (id, created) = ensure_signing_key(&kms, &alias, Some(&users))
        .await
        .unwrap();
    assert!(created);
    let stored = kms
        .get_key_policy()
        .key_id(&id)
        .policy_name("default")
        .send()
        .await
        .unwrap();
    let stored: serde_json::Value = serde_json::from_str(stored.policy().unwrap()).unwrap();
    assert_eq!(stored, signing_key_policy(&users).unwrap());
}

/// V-5: `keys announce` with the signer role refuses a key whose policy lets anyone else
/// sign (KMS's default policy: the account root with `kms:*`), and accepts one made with
/// the deployment's policy. Nothing is announced on a refusal.
#[tokio::test]
async fn v5_announce_refuses_a_key_others_can_sign_with() {
    use countersign_aws::bootstrap::{KeyUsers, create_signing_key};
    use countersign_aws::rotation::{Rotation, RotationError};
    let env = env().await;
    let store = env.store();
    let kms = aws_sdk_kms::Client::new(&env.sdk);
    let signer = "arn:aws:iam::123456789012:role/countersign-messages";
    let alias = env.settings.signing_key.clone().unwrap();
    let rotation = Rotation::new(&kms, &store, &alias);
    let now = countersign_domain::time::Timestamp::from_unix_seconds(1_800_000_000).unwrap();
    let wide = create_signing_key(&kms, None).await.unwrap();
    let refused = rotation.announce(&wide, now, &[signer]).await;
    let Err(RotationError::PolicyTooWide { principals }) = refused else {
        panic!("refused: {refused:?}");
    };
    assert!(
        principals.iter().any(|p| p.ends_with(":root")),
        "{principals:?}"
    );
    assert!(
        store
            .key_ring()
            .await
            .unwrap()
            .ring
            .published()
            .all(|k| !k.arn.contains(&wide)),
        "nothing announced"
    );
    // N-8 (decision 0081): the deployment's policy, but the account may still rewrite it
    // or move the alias: refused too.
    let mut users = KeyUsers {
        signer: signer.into(),
        stream: None,
        reader: None,
        gateway: None,
        administrator: None,
    };
    let unadministered = create_signing_key(&kms, Some(&users)).await.unwrap();
    let refused = rotation.announce(&unadministered, now, &[signer]).await;
    let Err(RotationError::PolicyTooWide { principals }) = refused else {
        panic!("refused: {refused:?}");
    };
    assert!(
        principals
            .iter()
            .any(|p| p.contains(":root") && p.contains("kms:PutKeyPolicy")),
        "{principals:?}"
    );
    users.administrator = Some("arn:aws:iam::123456789012:role/deployer".into());
    let narrow = create_signing_key(&kms, Some(&users)).await.unwrap();
    rotation.announce(&narrow, now, &[signer]).await.unwrap();
}

/// V-5: the JWKS is what KMS returns for the keys the ring names. Whoever can write the ring
/// item cannot publish a key through it: an entry naming another account's key, a
/// symmetric key, a key by id instead of ARN, or a real signing key under a `kid` that is
/// not its thumbprint (an item carrying another key's material) is left out.
#[tokio::test]
async fn v5_writing_the_ring_cannot_publish_a_key_kms_does_not_vouch_for() {
    use aws_sdk_kms::types::{KeySpec, KeyUsageType};
    use countersign_domain::keyring::{KeyStatus, RingKey};
    let env = env().await;
    let store = env.store();
    let client = KmsProofSigner::client(&env.sdk, None);
    let signer = KmsProofSigner::new(client.clone(), env.settings.signing_key.clone())
        .with_ring(store.clone());
    let before = signer.published_keys().await.unwrap();
    assert_eq!(before.keys.len(), 1);
    let signing_kid = before.keys[0].key.key_id.clone();

    let create = |spec: KeySpec, usage: KeyUsageType| {
        let client = client.clone();
        async move {
            let out = client
                .create_key()
                .key_spec(spec)
                .key_usage(usage)
                .send()
                .await
                .unwrap();
            out.key_metadata.unwrap().arn.unwrap()
        }
    };
    let other_rsa = create(KeySpec::Rsa2048, KeyUsageType::SignVerify).await;
    let symmetric = create(KeySpec::SymmetricDefault, KeyUsageType::EncryptDecrypt).await;
    let (home, id) = other_rsa.rsplit_once(":key/").unwrap();
    let foreign = format!("{}:999999999999:key/{id}", home.rsplit_once(':').unwrap().0);
    let attacker_kid = rsa_jwk_thumbprint("attacker-n", "AQAB");
    let stored = store.key_ring().await.unwrap();
    let mut ring = stored.ring.clone();
    for (kid, arn) in [
        (attacker_kid.clone(), foreign),
        (attacker_kid.clone(), symmetric),
        (attacker_kid.clone(), id.to_owned()),
        (attacker_kid.clone(), other_rsa.clone()),
    ] {
        ring.keys.push(RingKey {
            kid,
            arn,
            status: KeyStatus::Active,
            announced_at: 1,
            activated_at: Some(1),
            deactivated_at: None,
            retired_at: None,
        });
    }
    assert!(store.put_key_ring(&ring, stored.version).await.unwrap());
    let after = signer.published_keys().await.unwrap();
    let kids: Vec<&str> = after.keys.iter().map(|k| k.key.key_id.as_str()).collect();
    assert_eq!(kids, [signing_kid.as_str()], "only the key KMS vouches for");
    assert_eq!(
        after.keys[0].key.public_key_pem,
        before.keys[0].key.public_key_pem
    );
}

/// N-8 (security review N7): an alias moved to a key the ring does not name — by anyone
/// who could move it — signs nothing, and the JWKS still publishes the ring's keys alone,
/// never the alias's new key; the checkpoint key's ring (N12) publishes its own keys.
#[tokio::test]
async fn n8_an_alias_moved_outside_the_ring_signs_nothing_and_is_not_published() {
    use countersign_aws::kms::read_key;
    let env = env().await;
    let kms = KmsProofSigner::client(&env.sdk, None);
    let signing = KmsProofSigner::client(&env.as_role(Principal::Messages), None);
    let alias = env.settings.signing_key.clone().unwrap();
    let store = env.store();
    let signer = KmsProofSigner::new(signing.clone(), Some(alias.clone()))
        .with_refresh(std::time::Duration::ZERO)
        .with_ring(store.clone());
    let before = signer.published_keys().await.unwrap();
    let ring_kid = before.keys[0].key.key_id.clone();
    let claims = executing_claims(&env, "act_ring", "jti-ring").await;
    assert!(
        sign_proof(&signer, &claims).await.is_ok(),
        "the ring's key signs"
    );

    // The attacker's own key, the alias moved to it (UpdateAlias), nothing announced.
    let id = countersign_aws::bootstrap::create_signing_key(&kms, None)
        .await
        .unwrap();
    let theirs = read_key(&kms, &id).await.unwrap();
    kms.update_alias()
        .alias_name(&alias)
        .target_key_id(&theirs.arn)
        .send()
        .await
        .unwrap();
    let fresh = KmsProofSigner::new(signing, Some(alias.clone())).with_ring(store.clone());
    assert!(
        sign_proof(&fresh, &claims).await.is_err(),
        "a key outside the ring signed"
    );
    let published = fresh.published_keys().await.unwrap();
    let kids: Vec<&str> = published
        .keys
        .iter()
        .map(|k| k.key.key_id.as_str())
        .collect();
    assert_eq!(
        kids,
        [ring_kid.as_str()],
        "only the ring's key is published"
    );

    // The checkpoint key has a ring of its own, adopted by bootstrap.
    let checkpoints = env
        .settings
        .checkpoint_signer(&env.as_role(Principal::Messages));
    let audit_keys = checkpoints.published_keys().await.unwrap();
    assert_eq!(audit_keys.keys.len(), 1);
    let ring = store
        .clone()
        .for_checkpoint_ring()
        .key_ring()
        .await
        .unwrap();
    assert_eq!(
        ring.ring.keys.len(),
        1,
        "bootstrap adopted the checkpoint key"
    );
    assert_eq!(ring.ring.keys[0].kid, audit_keys.keys[0].key.key_id);
}
