//! L-2 through the admin API on the emulator: the verification names the first broken
//! link of a trail altered in the table; a checkpoint is signed only over an intact
//! trail, with the platform's key, and verifies with the JWKS (K-1).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use countersign_domain::ports::AuditRecords;
use countersign_domain::ports::ProofSigner;
use http::StatusCode;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

use crate::common::*;

#[tokio::test]
async fn l2_verification_and_signed_checkpoints() {
    let env = env(true).await;
    let a = env.tenant("A").await;
    let key = a.admin_key.expose();
    let base = format!("/api/admin/tenants/{}", a.tenant.id);
    let app = || app(&env, env.secrets.clone());
    // Saved twice, unchanged the second time.
    for _ in 0..2 {
        let body = config("https://mcp.trackshare.example.com/mcp", false);
        let (status, body) =
            send(app(), "PUT", &format!("{base}/mcp"), Some(key), Some(body)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let (status, v) = send(
        app(),
        "GET",
        &format!("{base}/audit/verification"),
        Some(key),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["verified"], true, "{v}");
    assert_eq!(v["records"], 1, "an unchanged save writes nothing: {v}");

    // A checkpoint over the intact trail, verifiable with the published key that signed it.
    let (status, c) = send(
        app(),
        "POST",
        &format!("{base}/audit/checkpoints"),
        Some(key),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{c}");
    assert_eq!(c["digest"], v["digest"]);
    let jws = c["checkpoint"].as_str().unwrap();
    let header = jsonwebtoken::decode_header(jws).unwrap();
    assert_eq!(
        header.typ.as_deref(),
        Some("countersign-audit-checkpoint+jwt")
    );
    // V-6: signed by the checkpoint key, published apart from the proofs' JWKS (and never
    // in it), marked as not an action key.
    let (status, jwks) = send(app(), "GET", "/.well-known/jwks.json", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        !jwks["keys"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| Some(k["kid"].as_str().unwrap()) == header.kid.as_deref()),
        "the checkpoint key is not an action key: {jwks}"
    );
    let (status, audit_keys) = send(
        app(),
        "GET",
        "/.well-known/countersign-audit-keys.json",
        None,
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(audit_keys["purpose"], "audit-checkpoint");
    let jwk = audit_keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| Some(k["kid"].as_str().unwrap()) == header.kid.as_deref())
        .expect("the checkpoint's kid is in the audit keys");
    assert_eq!(jwk["purpose"], "audit-checkpoint");
    let decoding =
        DecodingKey::from_rsa_components(jwk["n"].as_str().unwrap(), jwk["e"].as_str().unwrap())
            .unwrap();
    let mut validation = Validation::new(Algorithm::RS256);
    validation.validate_exp = false;
    validation.required_spec_claims.clear();
    let claims = jsonwebtoken::decode::<Value>(jws, &decoding, &validation)
        .unwrap()
        .claims;
    assert_eq!(claims["tenantId"], a.tenant.id.as_str());
    assert_eq!(claims["digest"], v["digest"]);
    let kid = header.kid.unwrap();
    assert_eq!(
        env.checkpoint_signer
            .verification_key()
            .await
            .unwrap()
            .key_id,
        kid
    );
    assert_ne!(
        env.signer.verification_key().await.unwrap().key_id,
        kid,
        "V-6: never the action key"
    );

    // The configuration's record altered in the table: named, and no checkpoint signed.
    let trail = env.store.audit_trail(&a.tenant.id).await.unwrap();
    let record = &trail.records[0];
    aws_sdk_dynamodb::Client::new(&aws_config::load_from_env().await)
        .update_item()
        .table_name(env.store.table())
        .key(
            "pk",
            aws_sdk_dynamodb::types::AttributeValue::S(format!("TENANT#{}", a.tenant.id)),
        )
        .key(
            "sk",
            aws_sdk_dynamodb::types::AttributeValue::S(format!("AUDIT#{}", record.id)),
        )
        .update_expression("SET actor = :a")
        .expression_attribute_values(
            ":a",
            aws_sdk_dynamodb::types::AttributeValue::S("operator".into()),
        )
        .send()
        .await
        .unwrap();
    let (status, v) = send(
        app(),
        "GET",
        &format!("{base}/audit/verification"),
        Some(key),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["verified"], false, "{v}");
    assert_eq!(v["firstBroken"]["chain"], "tenant");
    assert_eq!(v["firstBroken"]["seq"], 1);
    assert_eq!(v["firstBroken"]["recordId"], record.id.as_str());
    let (status, refused) = send(
        app(),
        "POST",
        &format!("{base}/audit/checkpoints"),
        Some(key),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(refused["error"]["code"], "AUDIT_CHAIN_BROKEN");
}

/// V-7: one audit verification and one checkpoint in flight per tenant. While another
/// holds the tenant's lease of that kind the request is 429 `ALREADY_RUNNING` with
/// `Retry-After` and nothing is signed; the other kind, and another tenant, are not held
/// up; once the lease is given back the request goes ahead.
#[tokio::test]
async fn v7_one_audit_verification_and_one_checkpoint_in_flight_per_tenant() {
    use countersign_domain::ports::Clock as _;
    use countersign_domain::ports::Leases as _;
    let env = env(true).await;
    let a = env.tenant("A").await;
    let b = env.tenant("B").await;
    let app = || app(&env, env.secrets.clone());
    let verification = |t: &countersign_admin::tenants::Registered| {
        format!("/api/admin/tenants/{}/audit/verification", t.tenant.id)
    };
    let checkpoints = |t: &countersign_admin::tenants::Registered| {
        format!("/api/admin/tenants/{}/audit/checkpoints", t.tenant.id)
    };
    let now = countersign_aws::system::SystemClock.now();
    for (kind, method, path) in [
        ("verification", "GET", verification(&a)),
        ("checkpoint", "POST", checkpoints(&a)),
    ] {
        countersign_testkit::hold_lease(&env.store, &a.tenant.id, kind, now, 45).await;
        let key = a.admin_key.expose();
        let res = send_raw(app(), method, &path, Some(key), None).await;
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS, "{kind}");
        let wait: u64 = res.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=45).contains(&wait), "{kind}: {wait}");
        let body = body_json(res).await;
        assert_eq!(body["error"]["code"], "ALREADY_RUNNING", "{kind}: {body}");
        // Another tenant's job of the same kind is not held up by A's.
        let (status, other) = send(
            app(),
            method,
            &path.replace(a.tenant.id.as_ref(), b.tenant.id.as_ref()),
            Some(b.admin_key.expose()),
            None,
        )
        .await;
        assert!(status.is_success(), "{kind}: {status} {other}");
        env.store
            .release(&a.tenant.id, kind, countersign_testkit::HELD_BY)
            .await
            .unwrap();
        let (status, body) = send(app(), method, &path, Some(key), None).await;
        assert!(
            status.is_success(),
            "{kind}, once given back: {status} {body}"
        );
    }
}

/// Runs the offline recipe on `export` and `checkpoint` (and the audit keys), with the
/// test command's Python (its emulator's virtualenv, which has `cryptography`).
fn recipe(export: &Value, checkpoint: &Value, keys: &Value) -> (bool, String) {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let python = format!("{root}/.venv/moto/bin/python");
    assert!(
        std::path::Path::new(&python).exists(),
        "{python} is missing: run the test command (infra/scripts/test.sh), which installs it"
    );
    let dir = std::env::temp_dir().join(format!("cs-recipe-{}", ulid::Ulid::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut paths = Vec::new();
    for (name, value) in [
        ("export", export),
        ("checkpoint", checkpoint),
        ("keys", keys),
    ] {
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, serde_json::to_vec(value).unwrap()).unwrap();
        paths.push(path);
    }
    let out = std::process::Command::new(python)
        .arg(format!("{root}/docs/recipes/verify_audit_export.py"))
        .args(&paths)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// L-3: the trail exported with its chain fields verifies offline, in Python, against a
/// checkpoint the tenant kept (its signature checked with the published audit key), after
/// the trail grew; a record the checkpoint covered, rewritten in the export, is found;
/// a checkpoint whose kept heads were swapped is refused.
#[tokio::test]
async fn l3_an_export_verifies_offline_against_a_kept_checkpoint() {
    let env = env(true).await;
    let a = env.tenant("A").await;
    let key = a.admin_key.expose();
    let base = format!("/api/admin/tenants/{}", a.tenant.id);
    let app = || app(&env, env.secrets.clone());
    let save = |url: &'static str| {
        let app = app();
        let path = format!("{base}/mcp");
        async move {
            let (status, body) = send(app, "PUT", &path, Some(key), Some(config(url, false))).await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
    };
    save("https://mcp.trackshare.example.com/mcp").await;
    let (status, kept) = send(
        app(),
        "POST",
        &format!("{base}/audit/checkpoints"),
        Some(key),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{kept}");
    assert_eq!(kept["heads"][0]["chain"], "tenant", "{kept}");
    save("https://mcp2.trackshare.example.com/mcp").await;
    let (_, keys) = send(
        app(),
        "GET",
        "/.well-known/countersign-audit-keys.json",
        None,
        None,
    )
    .await;
    let export = countersign_admin::audit::export(
        &env.store,
        &countersign_domain::ports::NoSubjectKeys,
        &a.tenant.id,
    )
    .await
    .unwrap();
    assert_eq!(export["records"].as_array().unwrap().len(), 2, "{export}");

    let (ok, out) = recipe(&export, &kept, &keys);
    assert!(ok, "{out}");
    assert!(out.contains("signature checked"), "{out}");

    let mut rewritten = export.clone();
    for r in rewritten["records"].as_array_mut().unwrap() {
        if r["seq"] == 1 {
            r["actor"] = "operator".into();
        }
    }
    let (ok, out) = recipe(&rewritten, &kept, &keys);
    assert!(!ok && out.contains("BROKEN"), "{out}");

    let mut swapped = kept.clone();
    swapped["heads"][0]["seq"] = 2.into();
    swapped["heads"][0]["hash"] = export["heads"][0]["hash"].clone();
    let (ok, out) = recipe(&export, &swapped, &keys);
    assert!(!ok && out.contains("not the ones it signed"), "{out}");
}

/// on the emulator.
mod erasure;
