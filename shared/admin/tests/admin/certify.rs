//! The certification run (H-1 … H-4) on in-memory ports: a scripted provider, the fake
//! signer (whose "signature" is the SHA-256 of the signing input, so the platform's
//! signatures can be recognised), the memory store.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use async_trait::async_trait;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_admin::api::AdminState;
use countersign_admin::certify::{self, CertifyRequest};
use countersign_admin::{AdminError, mcp, tenants};
use countersign_domain::certification::{Certification, CheckStatus};
use countersign_domain::config::UrlPolicy;
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::{ToolName, UserId};
use countersign_domain::ports::AuditRecords;
use countersign_domain::ports::Certifications;
use countersign_domain::ports::{Clock, ProviderTool, Resolver, Tenant};
use countersign_domain::texts::Language;
use countersign_testkit::{
    FakeSigner, MemorySecrets, MemoryStore, Reply, ScriptedProvider, SeqIds, TestClock,
    action_answer, prepare_answer,
};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

struct Public;

#[async_trait]
impl Resolver for Public {
    async fn resolve(&self, _: &str, _: u16) -> std::io::Result<Vec<IpAddr>> {
        Ok(vec![IpAddr::from([93, 184, 216, 34])])
    }
}

const URL: &str = "https://mcp.trackshare.example.com/mcp";

struct Env {
    state: AdminState,
    provider: Arc<ScriptedProvider>,
    store: Arc<MemoryStore>,
    clock: Arc<TestClock>,
    tenant: Tenant,
}

fn tool(name: &str, output: Option<Value>, read_only: Option<bool>) -> ProviderTool {
    let mut d = json!({"name": name, "description": name, "inputSchema": {"type": "object"}});
    if let Some(o) = &output {
        d["outputSchema"] = o.clone();
    }
    if let Some(r) = read_only {
        d["annotations"] = json!({"readOnlyHint": r});
    }
    ProviderTool {
        name: ToolName::parse(name).unwrap(),
        descriptor: d.as_object().cloned().unwrap(),
        output_schema: output,
    }
}

fn action_tool(name: &str, args: &[&str]) -> ProviderTool {
    let mut t = tool(name, None, None);
    let properties: Map<String, Value> =
        args.iter().map(|a| ((*a).to_owned(), json!({}))).collect();
    t.descriptor.insert(
        "inputSchema".into(),
        json!({"type": "object", "properties": properties}),
    );
    t
}

fn cars_schema() -> Value {
    json!({"type": "object", "properties": {"cars": {"type": "array"}}, "required": ["cars"]})
}

fn config(token: &str, enabled: bool) -> Value {
    config_of(token, enabled, &["move"])
}

fn config_of(token: &str, enabled: bool, operations: &[&str]) -> Value {
    json!({
        "serverUrl": URL,
        "serviceToken": token,
        "allowedTools": ["get_cars"],
        "actionPolicy": {"contractVersion": 1, "enabled": enabled, "operations": operations}
    })
}

/// The operation a test action id was prepared for: `act_<operation>_<n>`.
fn operation_of(action_id: &str) -> &str {
    action_id
        .strip_prefix("act_")
        .and_then(|rest| rest.rsplit_once('_'))
        .map_or("move", |(op, _)| op)
}

/// How the scripted provider verifies proofs: all `false` is a provider that honours the
/// contract; each flag is one way to get it wrong.
#[derive(Debug, Clone, Copy, Default)]
struct Lax {
    /// Executes whatever comes, proof or not.
    skip_verification: bool,
    /// No key installed: refuses every proof, valid ones too.
    no_key: bool,
    /// Checks the signature but not `iss`.
    skip_iss: bool,
    /// Ignores `sub` and `tenantId`.
    skip_person: bool,
    /// Answers `failed` to every proof it refuses, instead of `isError`.
    failed_for_bad: bool,
    /// Answers consultations and preparations whatever the service token.
    skip_token: bool,
    /// N-7: checks the platform's signature but not the header's `kid`.
    ignore_kid: bool,
    /// N-7: checks the platform's signature but not the header's `typ`.
    ignore_typ: bool,
    /// N-7: verifies nothing, and executes only the first execute of each conversation.
    first_execute_per_conversation: bool,
    /// N-7: verifies nothing, and executes only the first execute of the run.
    first_execute_of_run: bool,
    /// Weak test 5: follows a proof's `jku` or `x5u` to the key it names (fetched from
    /// the messages function's router, as a real provider would over the network) and
    /// trusts it when its signature checks out.
    follow_key_urls: bool,
}

/// Where the test runs say the deployment is (`CertifyRequest::key_urls`).
const ORIGIN: &str = "https://countersign.test";

/// A provider that trusts a header's key URL: fetches what `jku` or `x5u` names from the
/// platform's router and accepts the proof when that key verifies it. `None` when the
/// header names no key URL of the platform's.
fn follows_key_url(call: &countersign_testkit::ProviderCall, state: &AdminState) -> Option<bool> {
    let proof = call.proof.as_deref()?;
    let header = jsonwebtoken::decode_header(proof).ok()?;
    let url = header.jku.or(header.x5u)?;
    let path = url.strip_prefix(ORIGIN)?.to_owned();
    // The run is inside the provider's answer; the fetch runs on its own thread.
    let state = state.clone();
    let jwks = std::thread::spawn(move || {
        tokio::runtime::Runtime::new()
            .unwrap()
            .block_on(async move {
                use tower::ServiceExt as _;
                let res = countersign_admin::api::certification_router(state)
                    .oneshot(
                        http::Request::get(&path)
                            .body(axum::body::Body::empty())
                            .unwrap(),
                    )
                    .await
                    .unwrap();
                let bytes = axum::body::to_bytes(res.into_body(), 1 << 16)
                    .await
                    .unwrap();
                (path, bytes)
            })
    })
    .join()
    .unwrap();
    let (path, body) = jwks;
    let jwk_set: jsonwebtoken::jwk::JwkSet = if path.ends_with(".pem") {
        // The certificate carries the key of the JWK Set served beside it (checked in
        // `v3_the_untrusted_key_urls_serve_the_key_that_signed_those_proofs`).
        serde_json::from_value(countersign_admin::certify::untrusted_jwks()).unwrap()
    } else {
        serde_json::from_slice(&body).unwrap()
    };
    let kid = header.kid?;
    let jwk = jwk_set.find(&kid)?;
    let key = jsonwebtoken::DecodingKey::from_jwk(jwk).ok()?;
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
    validation.validate_exp = false;
    validation.validate_aud = false;
    validation.required_spec_claims.clear();
    Some(jsonwebtoken::decode::<Value>(proof, &key, &validation).is_ok())
}

/// Why `proof` is not valid for `call`, as a provider verifying it would say; `None`
/// when valid. The fake signer's signature is the SHA-256 of the signing input.
fn invalid(
    call: &countersign_testkit::ProviderCall,
    tenant: &str,
    now: i64,
    lax: Lax,
) -> Option<&'static str> {
    let Some(proof) = call.proof.as_deref() else {
        return Some("no proof");
    };
    if lax.no_key {
        return Some("no key installed");
    }
    let parts: Vec<&str> = proof.split('.').collect();
    if parts.len() != 3 {
        return Some("malformed");
    }
    let (mut header, claims) = (decode(parts[0]), decode(parts[1]));
    let input = format!("{}.{}", parts[0], parts[1]);
    let ours = URL_SAFE_NO_PAD.encode(Sha256Hex::digest(&input).as_str());
    let mut standard =
        json!({"alg": "RS256", "typ": "support-action+jwt", "kid": FakeSigner::KEY_ID});
    for (ignored, field) in [(lax.ignore_kid, "kid"), (lax.ignore_typ, "typ")] {
        if ignored {
            header.as_object_mut().map(|h| h.remove(field));
            standard.as_object_mut().map(|h| h.remove(field));
        }
    }
    if header != standard || parts[2] != ours {
        return Some("signature");
    }
    let id = call.arguments["actionId"].as_str().unwrap_or("");
    let operation = operation_of(id);
    let prepared =
        prepare_answer(id, operation, "Move the session.", "-")["structuredContent"].clone();
    let (iat, exp) = (
        claims["iat"].as_i64().unwrap_or(0),
        claims["exp"].as_i64().unwrap_or(0),
    );
    let checks = [
        (exp <= now || exp - iat > 60, "lifetime"),
        (
            !lax.skip_iss && claims["iss"] != "https://support.example.com/mcp-actions",
            "iss",
        ),
        (claims["aud"] != URL, "aud"),
        (
            !lax.skip_person && claims["sub"] != call.user.as_str(),
            "sub",
        ),
        (!lax.skip_person && claims["tenantId"] != tenant, "tenantId"),
        (
            claims["conversationId"] != call.conversation.as_str(),
            "conversationId",
        ),
        (claims["actionId"] != id, "actionId"),
        (claims["operation"] != operation, "operation"),
        (
            claims["argumentsHash"] != prepared["argumentsHash"],
            "argumentsHash",
        ),
        (
            claims["summaryHash"] != prepared["summaryHash"],
            "summaryHash",
        ),
    ];
    checks.iter().find(|(wrong, _)| *wrong).map(|(_, why)| *why)
}

/// A provider that honours the contract.
async fn env() -> Env {
    env_with(Lax::default()).await
}

/// A provider that verifies proofs as `lax` says: executed actions are `completed`, the
/// others stay `pending_confirmation`.
async fn env_with(lax: Lax) -> Env {
    env_of(lax, &["move"]).await
}

/// The same, with the action policy's `operations`.
async fn env_of(lax: Lax, operations: &[&str]) -> Env {
    let clock = Arc::new(TestClock::default());
    let ids = Arc::new(SeqIds::new(clock.clone()));
    let store = Arc::new(MemoryStore::default());
    let provider = Arc::new(ScriptedProvider::default());
    let registered = tenants::register(&*store, &*ids, &*clock, "A", Language::En)
        .await
        .unwrap();
    let state = AdminState {
        stores: countersign_admin::api::AdminStores::split(store.clone(), store.clone()),
        leases: store.clone(),
        step_up: None,
        sessions: store.clone(),
        secrets: Arc::new(MemorySecrets::default()),
        signer: Arc::new(FakeSigner::default()),
        checkpoint_signer: Arc::new(FakeSigner::default()),
        issuer: "https://support.example.com/mcp-actions".into(),
        url_policy: UrlPolicy::default(),
        resolver: Arc::new(Public),
        provider: provider.clone(),
        ids,
        clock: clock.clone(),
    };
    provider.publish(vec![
        tool("get_cars", Some(cars_schema()), Some(true)),
        action_tool("prepare_action", &["operation", "arguments"]),
        action_tool("execute_action", &["actionId"]),
        action_tool("get_action_status", &["actionId"]),
    ]);
    mcp::put(
        &state,
        &registered.tenant,
        &config_of("tok-1", false, operations),
    )
    .await
    .unwrap();
    let expires = clock.now().plus_seconds(240).to_rfc3339();
    let n = AtomicU32::new(0);
    let wrong_token = move |call: &countersign_testkit::ProviderCall| {
        (!lax.skip_token && call.service_token != "tok-1").then(|| {
            Reply::Result(json!({"content": [{"type": "text", "text": "unknown service token"}], "isError": true}))
        })
    };
    provider.answer_with("prepare_action", move |call| {
        if let Some(refusal) = wrong_token(call) {
            return refusal;
        }
        let operation = call.arguments["operation"].as_str().unwrap_or("move");
        let id = format!("act_{operation}_{}", n.fetch_add(1, Ordering::SeqCst));
        Reply::Result(prepare_answer(
            &id,
            operation,
            "Move the session.",
            &expires,
        ))
    });
    provider.answer_with("get_cars", move |call| {
        if let Some(refusal) = wrong_token(call) {
            return refusal;
        }
        Reply::Result(
            json!({"content": [{"type": "text", "text": "{}"}], "structuredContent": {"cars": []}}),
        )
    });
    let executed = Arc::new(Mutex::new(BTreeSet::<String>::new()));
    let (done, tenant, now) = (
        executed.clone(),
        registered.tenant.id.to_string(),
        clock.now().unix_seconds(),
    );
    let conversations = Mutex::new(BTreeSet::<String>::new());
    let first_of_run = std::sync::atomic::AtomicBool::new(true);
    let platform = state.clone();
    provider.answer_with("execute_action", move |call| {
        let id = call.arguments["actionId"].as_str().unwrap().to_owned();
        let followed = lax
            .follow_key_urls
            .then(|| follows_key_url(call, &platform))
            .flatten();
        let refused = if let Some(trusted) = followed {
            !trusted
        } else if lax.first_execute_per_conversation {
            !conversations
                .lock()
                .unwrap()
                .insert(call.conversation.to_string())
        } else if lax.first_execute_of_run {
            !first_of_run.swap(false, Ordering::SeqCst)
        } else {
            !lax.skip_verification && invalid(call, &tenant, now, lax).is_some()
        };
        if !refused {
            done.lock().unwrap().insert(id.clone());
            return Reply::Result(action_answer(&id, "completed", None));
        }
        if lax.failed_for_bad {
            return Reply::Result(action_answer(&id, "failed", Some("nothing to do")));
        }
        Reply::Result(
            json!({"content": [{"type": "text", "text": "proof refused"}], "isError": true}),
        )
    });
    provider.answer_with("get_action_status", move |call| {
        let id = call.arguments["actionId"].as_str().unwrap();
        let status = if executed.lock().unwrap().contains(id) {
            "completed"
        } else {
            "pending_confirmation"
        };
        Reply::Result(action_answer(id, status, None))
    });
    Env {
        state,
        provider,
        store,
        clock,
        tenant: registered.tenant,
    }
}

fn request() -> CertifyRequest {
    CertifyRequest {
        test_user: UserId::parse("countersign-test:u_test").unwrap(),
        second_user: None,
        personal: Vec::new(),
        consultations: [("get_cars".to_owned(), Map::new())].into(),
        actions: [("move".to_owned(), Map::new())].into(),
        consent: true,
        key_urls: Some(ORIGIN.to_owned()),
        step_up: Vec::new(),
    }
}

fn status(run: &Certification, id: &str) -> CheckStatus {
    run.checks
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no check {id}: {run:#?}"))
        .status
}

fn reason<'a>(run: &'a Certification, id: &str) -> &'a str {
    &run.checks.iter().find(|c| c.id == id).unwrap().reason
}

fn decode(part: &str) -> Value {
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
}

/// H-1, H-3, V-3: a conforming provider passes; the run is stored with the settings it
/// checked; exactly one action per operation is executed, with the one valid proof the
/// run sends; every other proof is wrong in exactly one header field or claim (the V-3
/// series) or unsigned, MACed or signed by another key; every sent proof's jti is in the
/// run's audit record.
#[tokio::test]
async fn v3_a_conforming_provider_passes_executing_one_action_per_operation() {
    let e = env().await;
    let run = certify::run(&e.state, &e.tenant, &request()).await.unwrap();
    assert!(run.passed(), "{run:#?}");
    assert_eq!(status(&run, "actions.execute.move"), CheckStatus::Passed);
    assert_eq!(run.subject.operations, vec!["move".to_owned()]);
    assert_eq!(
        e.store.latest_certification(&e.tenant.id).await.unwrap(),
        Some(run.clone())
    );
    let executes = e.provider.calls_of("execute_action");
    assert_eq!(executes.len(), 21, "one valid proof, then the V-3 series");
    let tenant = e.tenant.id.to_string();
    let now = e.clock.now().unix_seconds();
    let valid: Vec<_> = executes
        .iter()
        .filter(|c| invalid(c, &tenant, now, Lax::default()).is_none())
        .collect();
    assert_eq!(valid.len(), 1, "exactly one valid proof is sent");
    assert_eq!(
        valid[0].user, "countersign-test:u_test",
        "for the synthetic person"
    );
    assert!(
        executes.iter().any(|c| c.proof.is_none()),
        "the series sends one execute with no proof at all"
    );
    let standard = json!({"alg": "RS256", "typ": "support-action+jwt", "kid": FakeSigner::KEY_ID});
    let mut platform_signed = 0;
    let mut jtis = Vec::new();
    for call in &executes {
        let Some(proof) = call.proof.as_deref() else {
            continue;
        };
        let parts: Vec<&str> = proof.split('.').collect();
        let (header, claims) = (decode(parts[0]), decode(parts[1]));
        jtis.push(claims["jti"].as_str().unwrap().to_owned());
        let input = format!("{}.{}", parts[0], parts[1]);
        let ours = URL_SAFE_NO_PAD.encode(Sha256Hex::digest(&input).as_str());
        if parts[2] != ours {
            continue; // Unsigned, MACed or another key's: no provider trusting the platform accepts it.
        }
        platform_signed += 1;
        let id = call.arguments["actionId"].as_str().unwrap();
        let prepared =
            prepare_answer(id, operation_of(id), "Move the session.", "-")["structuredContent"]
                .clone();
        let (iat, exp) = (
            claims["iat"].as_i64().unwrap(),
            claims["exp"].as_i64().unwrap(),
        );
        let wrongs = [
            header != standard,
            exp <= now,
            exp - iat > 60,
            claims["iss"] != "https://support.example.com/mcp-actions",
            claims["aud"] != URL,
            claims["sub"] != call.user.as_str(),
            claims["tenantId"] != e.tenant.id.as_str(),
            claims["conversationId"] != call.conversation.as_str(),
            claims["actionId"] != id,
            claims["operation"] != operation_of(id),
            claims["argumentsHash"] != prepared["argumentsHash"],
            claims["summaryHash"] != prepared["summaryHash"],
        ];
        let expected = usize::from(call.proof.as_deref() != valid[0].proof.as_deref());
        assert_eq!(
            wrongs.iter().filter(|w| **w).count(),
            expected,
            "the valid proof has nothing wrong, every other exactly one thing: {header:#} {claims:#}"
        );
    }
    assert_eq!(
        platform_signed, 14,
        "the valid one; unknown kid, expired, lifetime, iss, aud, typ, sub, tenant, conversation, action, operation, two hashes"
    );
    // The audit record names every proof sent, and the action executed.
    let audit = e.store.list_audit(&e.tenant.id, None, 5).await.unwrap();
    let record = audit
        .items
        .iter()
        .find(|r| r.action == "mcp.certify")
        .unwrap();
    assert_eq!(
        record.changes["proofJtis"],
        json!(jtis),
        "{:#}",
        record.changes
    );
    assert_eq!(
        record.changes["executed"],
        json!([valid[0].arguments["actionId"]])
    );
    assert_eq!(record.changes["consent"], true);
    // The prepared action was pending before its execution; every bad proof's stays so.
    assert_eq!(e.provider.calls_of("get_action_status").len(), 22);
}

/// V-3 over two operations: every configured operation is prepared and exactly one action
/// of each is executed with the run's valid proof, each with its own check; the bad-proof
/// series is sent for each and refused. A run that handled only the first operation fails
/// here (the second's check would be missing and nothing of it executed).
#[tokio::test]
async fn v3_a_run_over_two_operations_prepares_and_executes_each() {
    let e = env_of(Lax::default(), &["move", "rename"]).await;
    let mut req = request();
    req.actions.insert("rename".to_owned(), Map::new());
    let run = certify::run(&e.state, &e.tenant, &req).await.unwrap();
    assert!(run.passed(), "{run:#?}");
    assert_eq!(
        run.subject.operations,
        vec!["move".to_owned(), "rename".to_owned()]
    );
    for op in ["move", "rename"] {
        assert_eq!(
            status(&run, &format!("actions.execute.{op}")),
            CheckStatus::Passed,
            "{op}"
        );
        let prepared = e
            .provider
            .calls()
            .iter()
            .filter(|c| c.tool == "prepare_action" && c.arguments["operation"] == op)
            .count();
        assert!(prepared >= 1, "{op} was prepared");
        let executed: BTreeSet<String> = e
            .provider
            .calls()
            .iter()
            .filter(|c| c.tool == "execute_action" && c.proof.is_some())
            .filter(|c| {
                let id = c.arguments["actionId"].as_str().unwrap();
                operation_of(id) == op
                    && invalid(
                        c,
                        e.tenant.id.as_str(),
                        e.clock.now().unix_seconds(),
                        Lax::default(),
                    )
                    .is_none()
            })
            .map(|c| c.arguments["actionId"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            executed.len(),
            1,
            "exactly one {op} action executed with a valid proof: {executed:?}"
        );
    }
}

/// Weak test 5 (V-3): the `jku` and `x5u` proofs point at keys this deployment really
/// serves, so a provider that follows them finds a key that verifies the proof, executes
/// it, and fails exactly those two checks (before, they pointed at a name that did not
/// resolve, and such a provider "refused" them by failing to fetch).
#[tokio::test]
async fn v3_a_provider_that_follows_jku_or_x5u_fails_those_checks() {
    let e = env_with(Lax {
        follow_key_urls: true,
        ..Lax::default()
    })
    .await;
    let run = certify::run(&e.state, &e.tenant, &request()).await.unwrap();
    assert!(!run.passed(), "{run:#?}");
    for id in ["proof.jku", "proof.x5u"] {
        assert_eq!(status(&run, id), CheckStatus::Failed, "{id}: {run:#?}");
    }
    let failed: Vec<&str> = run
        .checks
        .iter()
        .filter(|c| c.status == CheckStatus::Failed)
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(failed, ["proof.jku", "proof.x5u"], "nothing else failed");
    // The same provider, with the run not knowing its origin: the URLs do not resolve,
    // the provider cannot follow them, and the checks pass — the weakness this closes.
    let e = env_with(Lax {
        follow_key_urls: true,
        ..Lax::default()
    })
    .await;
    let blind = CertifyRequest {
        key_urls: None,
        ..request()
    };
    let run = certify::run(&e.state, &e.tenant, &blind).await.unwrap();
    assert_eq!(status(&run, "proof.jku"), CheckStatus::Passed);
}

/// The untrusted key URLs serve the key that signed the `jku`/`x5u` proofs: the JWK Set
/// verifies them, and the certificate carries the same public key (its modulus is in the
/// certificate's DER) — and neither is ever one of the platform's keys.
#[tokio::test]
async fn v3_the_untrusted_key_urls_serve_the_key_that_signed_those_proofs() {
    use tower::ServiceExt as _;
    let e = env().await;
    let get = |path: &'static str| {
        let state = e.state.clone();
        async move {
            let res = countersign_admin::api::certification_router(state)
                .oneshot(
                    http::Request::get(path)
                        .body(axum::body::Body::empty())
                        .unwrap(),
                )
                .await
                .unwrap();
            assert_eq!(res.status(), http::StatusCode::OK, "{path}");
            axum::body::to_bytes(res.into_body(), 1 << 16)
                .await
                .unwrap()
        }
    };
    let jwks: Value = serde_json::from_slice(&get(certify::UNTRUSTED_JWKS_PATH).await).unwrap();
    let n = URL_SAFE_NO_PAD
        .decode(jwks["keys"][0]["n"].as_str().unwrap())
        .unwrap();
    let pem = String::from_utf8(get(certify::UNTRUSTED_CERT_PATH).await.to_vec()).unwrap();
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap();
    assert!(
        der.windows(n.len()).any(|w| w == n.as_slice()),
        "the certificate carries the key"
    );
    let platform = e.state.signer.verification_key().await.unwrap();
    assert_ne!(jwks["keys"][0]["kid"], platform.key_id.as_str());
    assert!(
        !platform
            .public_key_pem
            .contains(&URL_SAFE_NO_PAD.encode(&n))
    );
}

/// V-3: without the administrator's consent nothing is executed: no valid proof is sent,
/// the execution checks are skipped with the reason, and the run does not pass.
#[tokio::test]
async fn v3_without_consent_nothing_is_executed_and_the_run_does_not_pass() {
    let e = env().await;
    let mut r = request();
    r.consent = false;
    let run = certify::run(&e.state, &e.tenant, &r).await.unwrap();
    assert_eq!(status(&run, "actions.execute.move"), CheckStatus::Skipped);
    assert!(reason(&run, "actions.execute.move").contains("did not consent"));
    assert!(!run.passed(), "skipped is never a pass");
    let tenant = e.tenant.id.to_string();
    let now = e.clock.now().unix_seconds();
    assert!(
        e.provider
            .calls_of("execute_action")
            .iter()
            .all(|c| invalid(c, &tenant, now, Lax::default()).is_some()),
        "no valid proof was sent"
    );
    let refused = mcp::put(&e.state, &e.tenant, &config("tok-1", true)).await;
    assert!(matches!(refused, Err(AdminError::CertificationRequired)));
}

/// V-3 (done when): a provider with no key installed refuses everything, so it passes
/// every bad-proof check, and fails on the valid proof with what to install.
#[tokio::test]
async fn v3_a_provider_that_refuses_everything_fails_on_the_valid_proof() {
    let e = env_with(Lax {
        no_key: true,
        ..Lax::default()
    })
    .await;
    let run = certify::run(&e.state, &e.tenant, &request()).await.unwrap();
    assert!(!run.passed());
    assert_eq!(status(&run, "actions.execute.move"), CheckStatus::Failed);
    let r = reason(&run, "actions.execute.move");
    assert!(
        r.contains("a valid proof was refused")
            && r.contains("install the platform's public key")
            && r.contains("proof refused"),
        "{r}"
    );
    assert!(!run.accepted_bad_proof());
}

/// V-3 (done when): a provider that checks the signature but not `iss`, and one that
/// ignores `sub` and `tenantId`, fail exactly on those checks.
#[tokio::test]
async fn v3_a_provider_skipping_one_claim_fails_on_that_claim() {
    for (lax, failing) in [
        (
            Lax {
                skip_iss: true,
                ..Lax::default()
            },
            &["proof.wrong_iss"][..],
        ),
        (
            Lax {
                skip_person: true,
                ..Lax::default()
            },
            &["proof.wrong_sub", "proof.wrong_tenant"][..],
        ),
    ] {
        let e = env_with(lax).await;
        let run = certify::run(&e.state, &e.tenant, &request()).await.unwrap();
        let failed: Vec<&str> = run
            .checks
            .iter()
            .filter(|c| c.status != CheckStatus::Passed)
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(failed, failing, "{lax:?}");
        for id in failing {
            assert!(reason(&run, id).contains("answered `completed`"), "{id}");
        }
    }
}

/// H-3: a provider that executes on a bad proof fails every proof check, each with what
/// it was given and what to check.
#[tokio::test]
async fn h3_a_provider_that_executes_on_bad_proofs_fails_each_check_with_the_fix() {
    let e = env_with(Lax {
        skip_verification: true,
        ..Lax::default()
    })
    .await;
    let run = certify::run(&e.state, &e.tenant, &request()).await.unwrap();
    assert!(!run.passed());
    assert!(run.accepted_bad_proof());
    for (id, fix) in [
        ("proof.none", "refuse execute_action without a proof"),
        ("proof.alg_none", "accept only RS256"),
        (
            "proof.other_key",
            "verify the signature with the installed public key",
        ),
        ("proof.expired", "check exp"),
        ("proof.wrong_aud", "require aud to equal your audience"),
        ("proof.wrong_action_id", "require the proof's actionId"),
        ("proof.embedded_jwk", "refuse any jwk"),
        ("proof.jku", "refuse any jwk"),
        ("proof.x5u", "refuse any jwk"),
        ("proof.hs256_public_key", "accept only RS256"),
        ("proof.unknown_kid", "accept only the installed kids"),
        ("proof.long_lifetime", "exp - iat exceeds 60 s"),
        ("proof.wrong_iss", "require iss"),
        ("proof.wrong_typ", "require typ"),
        ("proof.wrong_sub", "require sub"),
        ("proof.wrong_tenant", "require tenantId"),
        ("proof.wrong_conversation", "require conversationId"),
        ("proof.wrong_operation", "require operation"),
        ("proof.wrong_arguments_hash", "require argumentsHash"),
        ("proof.wrong_summary_hash", "require summaryHash"),
    ] {
        assert_eq!(status(&run, id), CheckStatus::Failed, "{id}");
        let r = reason(&run, id);
        assert!(
            r.contains("answered `completed` instead of refusing") && r.contains(fix),
            "{id}: {r}"
        );
    }
    assert!(
        !run.checks.iter().any(|c| c.id == "proof.replayed"),
        "V-3: a valid proof for another action is not a check"
    );
    // H-4: that run cannot enable actions.
    let refused = mcp::put(&e.state, &e.tenant, &config("tok-1", true)).await;
    assert!(matches!(refused, Err(AdminError::CertificationRequired)));
}

/// V-3: a provider that answers `failed` to every bad proof (without looking at it) fails
/// every proof check: a bad proof is refused with isError, before any work.
#[tokio::test]
async fn v3_answering_failed_is_not_refusing_the_proof() {
    let e = env_with(Lax {
        failed_for_bad: true,
        ..Lax::default()
    })
    .await;
    let run = certify::run(&e.state, &e.tenant, &request()).await.unwrap();
    assert!(!run.passed());
    assert_eq!(status(&run, "actions.execute.move"), CheckStatus::Passed);
    for c in run.checks.iter().filter(|c| c.id.starts_with("proof.")) {
        assert_eq!(c.status, CheckStatus::Failed, "{}", c.id);
        assert!(
            c.reason.contains("answered `failed` instead of refusing"),
            "{}: {}",
            c.id,
            c.reason
        );
    }
}

/// V-3: after a refused bad proof the action must still be `pending_confirmation`; a
/// provider that cancelled it (or anything else) fails the check.
#[tokio::test]
async fn v3_the_action_must_still_be_pending_after_a_bad_proof() {
    let e = env().await;
    e.provider.answer_with("get_action_status", |call| {
        let id = call.arguments["actionId"].as_str().unwrap();
        let first = id.ends_with("_0");
        Reply::Result(action_answer(
            id,
            if first {
                "pending_confirmation"
            } else {
                "cancelled"
            },
            None,
        ))
    });
    let run = certify::run(&e.state, &e.tenant, &request()).await.unwrap();
    assert_eq!(status(&run, "actions.status"), CheckStatus::Passed);
    assert_eq!(status(&run, "proof.wrong_iss"), CheckStatus::Failed);
    assert!(reason(&run, "proof.wrong_iss").contains("must still be pending_confirmation"));
}

/// H-3: a provider whose status says `completed` after a refusal fails too (the action
/// must stay unexecuted).
#[tokio::test]
async fn h3_an_action_executed_behind_a_refusal_fails_the_check() {
    let e = env().await;
    e.provider.answer_with("get_action_status", |call| {
        let id = call.arguments["actionId"].as_str().unwrap();
        let done = !id.ends_with("_0");
        Reply::Result(action_answer(
            id,
            if done {
                "completed"
            } else {
                "pending_confirmation"
            },
            None,
        ))
    });
    let run = certify::run(&e.state, &e.tenant, &request()).await.unwrap();
    assert_eq!(status(&run, "actions.status"), CheckStatus::Passed);
    assert_eq!(status(&run, "proof.none"), CheckStatus::Failed);
    assert!(reason(&run, "proof.none").contains("the action was executed"));
}

/// H-2: a consultation annotated as a write, or without an `outputSchema`, fails its
/// listing (and is not called); one whose answer breaks its schema fails its call.
#[tokio::test]
async fn h2_a_write_a_schema_less_tool_and_a_wrong_answer_fail() {
    let e = env().await;
    let mut tools = vec![tool("get_cars", None, Some(false))];
    tools.extend(
        ["prepare_action", "execute_action", "get_action_status"].map(|n| {
            let args: &[&str] = if n == "prepare_action" {
                &["operation", "arguments"]
            } else {
                &["actionId"]
            };
            action_tool(n, args)
        }),
    );
    e.provider.publish(tools.clone());
    let run = certify::run(&e.state, &e.tenant, &request()).await.unwrap();
    assert_eq!(
        status(&run, "consultation.get_cars.listed"),
        CheckStatus::Failed
    );
    let r = reason(&run, "consultation.get_cars.listed");
    assert!(
        r.contains("declares no outputSchema") && r.contains("is not declared read-only"),
        "{r}"
    );
    assert_eq!(
        status(&run, "consultation.get_cars.call"),
        CheckStatus::Skipped
    );
    assert!(
        e.provider.calls_of("get_cars").is_empty(),
        "a write is never called"
    );

    tools[0] = tool("get_cars", Some(cars_schema()), Some(true));
    e.provider.publish(tools);
    e.provider.answer_with("get_cars", |_| {
        Reply::Result(json!({"content": [], "structuredContent": {"cars": "none"}}))
    });
    let run = certify::run(&e.state, &e.tenant, &request()).await.unwrap();
    assert_eq!(
        status(&run, "consultation.get_cars.listed"),
        CheckStatus::Passed
    );
    assert_eq!(
        status(&run, "consultation.get_cars.call"),
        CheckStatus::Failed
    );
    assert!(reason(&run, "consultation.get_cars.call").contains("does not match the outputSchema"));
    assert!(!run.passed());
}

/// H-3: a prepare answer that breaks the contract fails `actions.prepare`, names the rule,
/// and skips the proof checks (a skipped check is not a pass).
#[tokio::test]
async fn h3_a_broken_prepare_answer_skips_the_proof_checks() {
    let e = env().await;
    let expires = e.clock.now().plus_seconds(240).to_rfc3339();
    e.provider.answer_with("prepare_action", move |_| {
        let mut answer = prepare_answer("act_x", "move", "Move it.", &expires);
        answer["structuredContent"]["summaryHash"] = json!(Sha256Hex::digest("other").as_str());
        Reply::Result(answer)
    });
    let run = certify::run(&e.state, &e.tenant, &request()).await.unwrap();
    assert_eq!(status(&run, "actions.prepare.move"), CheckStatus::Failed);
    assert!(
        reason(&run, "actions.prepare.move").contains("summaryHash must"),
        "{}",
        reason(&run, "actions.prepare.move")
    );
    assert_eq!(status(&run, "actions.execute.move"), CheckStatus::Skipped);
    assert_eq!(status(&run, "proof.alg_none"), CheckStatus::Skipped);
    assert!(e.provider.calls_of("execute_action").is_empty());
    assert!(!run.passed());
}

/// H-4 as revised by V-3 (decision 0035): a passing run of the saved settings allows
/// enabling; a new service token is never certified; a later run failing on availability
/// leaves saves of unchanged enabled settings going, with a warning, while any change
/// of them needs a passing run.
#[tokio::test]
async fn h4_enabling_follows_the_latest_run_of_the_saved_settings() {
    let e = env().await;
    let refused = mcp::put(&e.state, &e.tenant, &config("tok-1", true)).await;
    assert!(matches!(refused, Err(AdminError::CertificationRequired)));
    let run = certify::run(&e.state, &e.tenant, &request()).await.unwrap();
    assert!(run.passed());
    let view = mcp::put(&e.state, &e.tenant, &config("tok-1", true))
        .await
        .unwrap();
    assert!(view.action_policy.unwrap().enabled);
    let refused = mcp::put(&e.state, &e.tenant, &config("tok-2", true)).await;
    assert!(matches!(refused, Err(AdminError::CertificationRequired)));

    e.provider
        .faults
        .once("tools/list", countersign_testkit::Fault::Unavailable);
    let run = certify::run(&e.state, &e.tenant, &request()).await.unwrap();
    assert_eq!(status(&run, "tools.list"), CheckStatus::Failed);
    assert!(reason(&run, "tools.list").contains("could not be reached"));
    let same = mcp::put(&e.state, &e.tenant, &config("tok-1", true))
        .await
        .unwrap();
    assert!(
        same.action_policy.unwrap().enabled,
        "unchanged: still saved"
    );
    assert!(!same.actions_suspended);
    assert!(same.certification_warning.unwrap().contains("did not pass"));
    let mut changed = config("tok-1", true);
    changed["actionPolicy"]["operations"] = json!(["move", "rename"]);
    let refused = mcp::put(&e.state, &e.tenant, &changed).await;
    assert!(
        matches!(refused, Err(AdminError::CertificationRequired)),
        "changed action settings need a passing run"
    );
}

/// V-3: a run that sees the provider accept a bad proof suspends enabled actions at once
/// (audited, shown by GET mcp); enabling again needs a run that passes.
#[tokio::test]
async fn v3_a_run_that_sees_a_bad_proof_accepted_suspends_actions() {
    let e = env().await;
    certify::run(&e.state, &e.tenant, &request()).await.unwrap();
    mcp::put(&e.state, &e.tenant, &config("tok-1", true))
        .await
        .unwrap();
    // The provider stops verifying proofs.
    e.provider.answer_with("execute_action", |call| {
        let id = call.arguments["actionId"].as_str().unwrap();
        Reply::Result(action_answer(id, "completed", None))
    });
    let run = certify::run(&e.state, &e.tenant, &request()).await.unwrap();
    assert!(run.accepted_bad_proof());
    let stored = mcp::current(&e.state, &e.tenant).await.unwrap().unwrap();
    assert!(!stored.config.action_policy.enabled, "suspended at once");
    let view = mcp::view(&e.state, &e.tenant, Some(&stored), None)
        .await
        .unwrap();
    assert!(view.actions_suspended);
    let audit = e.store.list_audit(&e.tenant.id, None, 5).await.unwrap();
    let suspended = audit
        .items
        .iter()
        .find(|r| r.action == "mcp.actions.suspended")
        .expect("the suspension is audited");
    assert_eq!(
        suspended.changes["actionPolicy.enabled"],
        json!({"from": true, "to": false})
    );
    let refused = mcp::put(&e.state, &e.tenant, &config("tok-1", true)).await;
    assert!(matches!(refused, Err(AdminError::CertificationRequired)));
}

/// V-4 and the service token: a provider that answers calls carrying a wrong service
/// token fails those checks (consultations and actions); a second person given the first
/// person's answer fails `other_person`; refusing them passes.
#[tokio::test]
async fn v4_a_wrong_token_and_a_second_person_must_be_refused() {
    let e = env_with(Lax {
        skip_token: true,
        ..Lax::default()
    })
    .await;
    let mut r = request();
    r.second_user = Some(UserId::parse("countersign-test:u_test2").unwrap());
    r.personal = vec!["get_cars".into()];
    let run = certify::run(&e.state, &e.tenant, &r).await.unwrap();
    for id in [
        "consultation.get_cars.wrong_token",
        "actions.wrong_token",
        "consultation.get_cars.other_person",
    ] {
        assert_eq!(status(&run, id), CheckStatus::Failed, "{id}");
        assert!(
            reason(&run, id).contains("was not refused"),
            "{id}: {}",
            reason(&run, id)
        );
    }
    assert!(
        !run.accepted_bad_proof(),
        "not a proof failure: no suspension"
    );

    let e = env().await;
    e.provider.answer_with("get_cars", |call| {
        if call.user == "countersign-test:u_test2" || call.service_token != "tok-1" {
            return Reply::Result(
                json!({"content": [{"type": "text", "text": "not yours"}], "isError": true}),
            );
        }
        Reply::Result(json!({"content": [], "structuredContent": {"cars": []}}))
    });
    let run = certify::run(&e.state, &e.tenant, &r).await.unwrap();
    assert!(run.passed(), "{run:#?}");
    assert!(reason(&run, "consultation.get_cars.other_person").contains("not yours"));
}

/// The provider's own words: a preparation refused for a plain reason is reported with
/// the provider's text (when it passes the summary rules) and what to check; a check
/// whose prerequisite failed is skipped with the reason, never failed with another fix.
#[tokio::test]
async fn a_refused_preparation_shows_the_providers_words_and_skips_what_depends_on_it() {
    let e = env().await;
    e.provider.answer_with("prepare_action", |_| {
        Reply::Result(
            json!({"content": [{"type": "text", "text": "unknown user countersign-test:u_test"}], "isError": true}),
        )
    });
    let run = certify::run(&e.state, &e.tenant, &request()).await.unwrap();
    let r = reason(&run, "actions.prepare.move");
    assert!(
        r.contains("\"unknown user countersign-test:u_test\"") && r.contains("test person exists"),
        "{r}"
    );
    for id in [
        "actions.status",
        "actions.wrong_token",
        "actions.execute.move",
        "proof.none",
    ] {
        assert_eq!(status(&run, id), CheckStatus::Skipped, "{id}");
    }
    e.provider.answer_with("prepare_action", |_| {
        Reply::Result(json!({"content": [{"type": "text", "text": "see http://10.0.0.7/admin"}], "isError": true}))
    });
    let run = certify::run(&e.state, &e.tenant, &request()).await.unwrap();
    let r = reason(&run, "actions.prepare.move");
    assert!(
        r.contains("its text is not shown: text contains an internal address"),
        "{r}"
    );
}

/// Issue 50: what a check saw, in Portuguese words, without the words quoted from the
/// provider (`"…"`), the names in backticks, and what a library says after "(em inglês):".
fn portuguese_problem(c: &countersign_domain::certification::Check) -> Option<String> {
    let Some(pt) = c.reason_pt.as_deref() else {
        return Some("no Portuguese".into());
    };
    if pt == c.reason {
        return Some("the same as the English".into());
    }
    let mut bare = String::new();
    let (mut quoted, mut named) = (false, false);
    for ch in pt.split("(em inglês):").next().unwrap_or("").chars() {
        match ch {
            '"' if !named => quoted = !quoted,
            '`' if !quoted => named = !named,
            _ if !quoted && !named => bare.push(ch),
            _ => {}
        }
    }
    const ENGLISH: [&str; 16] = [
        "the", "was", "were", "must", "with", "answered", "refused", "not", "and", "is", "check",
        "your", "its", "from", "for", "said",
    ];
    let english: Vec<&str> = bare
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| ENGLISH.contains(w))
        .collect();
    (!english.is_empty()).then(|| format!("English words {english:?}"))
}

/// Issue 50: every reason a run writes, passed, failed or skipped, has its Portuguese (the
/// Portuguese panel's "O que vimos"), in Portuguese words; the English (the API's) is
/// unchanged. Runs against a conforming provider and against every way of getting it
/// wrong this file scripts, so most of the reasons a run can write are written.
#[tokio::test]
async fn issue_50_every_reason_a_run_writes_is_in_portuguese_too() {
    let mut runs = Vec::new();
    for lax in [
        Lax::default(),
        Lax {
            no_key: true,
            ..Lax::default()
        },
        Lax {
            skip_verification: true,
            ..Lax::default()
        },
        Lax {
            failed_for_bad: true,
            ..Lax::default()
        },
        Lax {
            skip_token: true,
            ..Lax::default()
        },
    ] {
        let e = env_with(lax).await;
        runs.push(certify::run(&e.state, &e.tenant, &request()).await.unwrap());
    }
    let e = env().await;
    let no_consent = CertifyRequest {
        consent: false,
        ..request()
    };
    runs.push(
        certify::run(&e.state, &e.tenant, &no_consent)
            .await
            .unwrap(),
    );
    // A schema-less write offered as a consultation, and no action tools.
    e.provider
        .publish(vec![tool("get_cars", None, Some(false))]);
    runs.push(certify::run(&e.state, &e.tenant, &request()).await.unwrap());
    // A consultation answering off its schema; a preparation refused in internal words.
    e.provider.publish(vec![
        tool("get_cars", Some(cars_schema()), Some(true)),
        action_tool("prepare_action", &["operation", "arguments"]),
        action_tool("execute_action", &["actionId"]),
        action_tool("get_action_status", &["actionId"]),
    ]);
    e.provider.answer_with("get_cars", |_| {
        Reply::Result(json!({"content": [], "structuredContent": {"cars": "none"}}))
    });
    e.provider.answer_with("prepare_action", |_| {
        Reply::Result(json!({"content": [{"type": "text", "text": "see http://10.0.0.7/admin"}], "isError": true}))
    });
    runs.push(certify::run(&e.state, &e.tenant, &request()).await.unwrap());
    // A preparation that breaks the contract.
    let expires = e.clock.now().plus_seconds(240).to_rfc3339();
    e.provider.answer_with("prepare_action", move |_| {
        let mut answer = prepare_answer("act_x", "move", "Move it.", &expires);
        answer["structuredContent"]["summaryHash"] = json!("nope");
        Reply::Result(answer)
    });
    runs.push(certify::run(&e.state, &e.tenant, &request()).await.unwrap());

    let mut seen = BTreeSet::new();
    let mut problems = Vec::new();
    for c in runs.iter().flat_map(|r| &r.checks) {
        seen.insert((c.id.clone(), c.status == CheckStatus::Passed));
        if let Some(p) = portuguese_problem(c) {
            problems.push(format!(
                "{} ({:?}): {p}\n  en: {}\n  pt: {:?}",
                c.id, c.status, c.reason, c.reason_pt
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The runs wrote many different reasons: passes, failures and skips of most checks.
    assert!(seen.len() > 45, "{seen:?}");
    let statuses: BTreeSet<_> = runs
        .iter()
        .flat_map(|r| &r.checks)
        .map(|c| format!("{:?}", c.status))
        .collect();
    assert_eq!(statuses.len(), 3, "{statuses:?}");
}

/// Bad input: sample arguments missing for an operation, an unknown operation, a second
/// person without the consultations to check (or equal to the first): typed errors,
/// nothing run.
#[tokio::test]
async fn a_run_request_missing_an_operation_or_a_person_is_refused() {
    let e = env().await;
    let mut r = request();
    r.actions.clear();
    r.actions.insert("other".into(), Map::new());
    let Err(AdminError::Invalid { errors, .. }) = certify::run(&e.state, &e.tenant, &r).await
    else {
        panic!("refused");
    };
    let fields: Vec<&str> = errors.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(fields, ["actions.other", "actions.move"]);
    let mut r = request();
    r.second_user = Some(UserId::parse("countersign-test:u_test").unwrap());
    let Err(AdminError::Invalid { errors, .. }) = certify::run(&e.state, &e.tenant, &r).await
    else {
        panic!("refused");
    };
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        e.provider.calls().len() <= 1,
        "nothing run but the save's tools/list"
    );
}

/// V-7: one certification run in flight per tenant: while one holds the tenant's lease a
/// second is refused (409-worthy `Busy`, with the wait) and runs nothing at the provider;
/// once it is given back, a run goes ahead.
#[tokio::test]
async fn v7_one_certification_run_in_flight_per_tenant() {
    use countersign_domain::ports::{Lease, Leases as _};
    let e = env().await;
    let now = e.clock.now();
    countersign_testkit::hold_lease(&*e.store, &e.tenant.id, "certification run", now, 60).await;
    let calls = e.provider.calls().len();
    let refused = certify::run(&e.state, &e.tenant, &request()).await;
    assert!(
        matches!(
            refused,
            Err(AdminError::Busy {
                retry_after_secs: 60,
                ..
            })
        ),
        "{refused:?}"
    );
    assert_eq!(e.provider.calls().len(), calls, "nothing ran");
    e.store
        .release(
            &e.tenant.id,
            "certification run",
            countersign_testkit::HELD_BY,
        )
        .await
        .unwrap();
    certify::run(&e.state, &e.tenant, &request()).await.unwrap();
    // The run gave its own lease back.
    let again = e
        .store
        .acquire(
            &e.tenant.id,
            "certification run",
            "next",
            now,
            now.plus_seconds(60),
        )
        .await
        .unwrap();
    assert_eq!(again, Lease::Held);
}

/// V-7: a cap across tenants: while every platform slot for certification runs is held
/// (by other tenants' runs), a run is refused with the shortest wait, runs nothing, and
/// gives the tenant's own lease back; once a slot frees, it goes ahead.
#[tokio::test]
async fn v7_certification_runs_are_capped_across_tenants() {
    use countersign_admin::lease::{PLATFORM_SLOTS, platform, slot};
    use countersign_domain::ports::{Lease, Leases as _};
    let e = env().await;
    let now = e.clock.now();
    let platform = platform().unwrap();
    for i in 0..PLATFORM_SLOTS {
        let held = e
            .store
            .acquire(
                &platform,
                &slot("certification run", i),
                &format!("other-tenant-{i}"),
                now,
                now.plus_seconds(30 + i64::try_from(i).unwrap()),
            )
            .await
            .unwrap();
        assert_eq!(held, Lease::Held);
    }
    let calls = e.provider.calls().len();
    let refused = certify::run(&e.state, &e.tenant, &request()).await;
    assert!(
        matches!(
            refused,
            Err(AdminError::PlatformBusy {
                retry_after_secs: 30,
                ..
            })
        ),
        "{refused:?}"
    );
    // N-7: its words are true (nothing runs for this tenant) and it is a limit: 429.
    let refusal = refused.unwrap_err();
    assert!(!refusal.to_string().contains("this tenant"), "{refusal}");
    let answer =
        axum::response::IntoResponse::into_response(countersign_http::ApiError::from(refusal));
    assert_eq!(answer.status(), axum::http::StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(answer.headers()["retry-after"], "30");
    assert_eq!(e.provider.calls().len(), calls, "nothing ran");
    let own = e
        .store
        .acquire(
            &e.tenant.id,
            "certification run",
            "probe",
            now,
            now.plus_seconds(1),
        )
        .await
        .unwrap();
    assert_eq!(own, Lease::Held, "the tenant's lease was given back");
    e.store
        .release(&e.tenant.id, "certification run", "probe")
        .await
        .unwrap();
    e.store
        .release(&platform, &slot("certification run", 2), "other-tenant-2")
        .await
        .unwrap();
    assert!(certify::run(&e.state, &e.tenant, &request()).await.is_ok());
}

/// The ids of the actions the scripted provider was asked to execute and answered
/// `completed` for.
fn completed_executes(e: &Env) -> Vec<String> {
    e.provider
        .calls_of("execute_action")
        .iter()
        .filter(|c| {
            let id = c.arguments["actionId"].as_str().unwrap();
            e.provider
                .calls_of("get_action_status")
                .iter()
                .any(|s| s.arguments["actionId"] == id)
                && c.proof.is_some()
        })
        .map(|c| c.arguments["actionId"].as_str().unwrap().to_owned())
        .collect()
}

/// Whether `call`'s proof carries the platform's (fake signer's) signature.
fn platform_signed(call: &countersign_testkit::ProviderCall) -> bool {
    let Some(proof) = call.proof.as_deref() else {
        return false;
    };
    let parts: Vec<&str> = proof.split('.').collect();
    parts.len() == 3
        && parts[2]
            == URL_SAFE_NO_PAD
                .encode(Sha256Hex::digest(format!("{}.{}", parts[0], parts[1])).as_str())
}

/// N-7 (security review N6): without consent the run sends nothing the platform signed —
/// the proofs wrong in one claim, in the `kid` or in the `typ` are not sent — so a verifier
/// that checks the signature but not the `kid` or the `typ` (sound, only lenient) executes
/// nothing; those checks are skipped with the reason, and the run does not pass.
#[tokio::test]
async fn n7_without_consent_no_platform_signed_proof_is_sent() {
    let e = env_with(Lax {
        ignore_kid: true,
        ignore_typ: true,
        ..Lax::default()
    })
    .await;
    let mut r = request();
    r.consent = false;
    let run = certify::run(&e.state, &e.tenant, &r).await.unwrap();
    let executes = e.provider.calls_of("execute_action");
    assert_eq!(
        executes.len(),
        7,
        "only the unsigned, MACed and foreign-key proofs"
    );
    assert!(
        !executes.iter().any(platform_signed),
        "nothing the platform signed"
    );
    let tenant = e.tenant.id.to_string();
    let now = e.clock.now().unix_seconds();
    assert!(executes.iter().all(|c| {
        invalid(
            c,
            &tenant,
            now,
            Lax {
                ignore_kid: true,
                ignore_typ: true,
                ..Lax::default()
            },
        )
        .is_some()
    }));
    for id in [
        "proof.unknown_kid",
        "proof.wrong_typ",
        "proof.wrong_sub",
        "proof.expired",
    ] {
        assert_eq!(status(&run, id), CheckStatus::Skipped, "{id}");
        assert!(reason(&run, id).contains("only with consent"), "{id}");
    }
    assert!(!run.accepted_bad_proof(), "{run:#?}");
    assert!(!run.passed());
    // With consent the same lenient verifier executes the kid and typ proofs: they are sent
    // then, and they fail the run (a real verifier must check both).
    let run = certify::run(&e.state, &e.tenant, &request()).await.unwrap();
    assert_eq!(status(&run, "proof.unknown_kid"), CheckStatus::Failed);
    assert_eq!(status(&run, "proof.wrong_typ"), CheckStatus::Failed);
}

/// N-7: what a run without consent can still execute is said truly: a server that
/// verifies nothing executes the run's unsigned forgeries — only those — and the run fails
/// and suspends actions.
#[tokio::test]
async fn n7_without_consent_a_server_that_verifies_nothing_executes_only_unsigned_forgeries() {
    let e = env_with(Lax {
        skip_verification: true,
        ..Lax::default()
    })
    .await;
    let mut r = request();
    r.consent = false;
    let run = certify::run(&e.state, &e.tenant, &r).await.unwrap();
    let executes = e.provider.calls_of("execute_action");
    assert_eq!(executes.len(), 7);
    assert!(!executes.iter().any(platform_signed));
    assert!(run.accepted_bad_proof(), "{run:#?}");
    assert!(!completed_executes(&e).is_empty());
}

/// N-7: the test people must be synthetic ones the platform marks (`countersign-test:`): a
/// free id is refused as bad input before anything runs, and every proof a run signs names
/// a marked person.
#[tokio::test]
async fn n7_the_test_person_must_carry_the_reserved_prefix() {
    let e = env().await;
    for (first, second) in [
        ("u_test", None),
        ("countersign-test:u_test", Some("u_other")),
    ] {
        let mut r = request();
        r.test_user = UserId::parse(first).unwrap();
        r.second_user = second.map(|s| UserId::parse(s).unwrap());
        r.personal = second
            .map(|_| vec!["get_cars".to_owned()])
            .unwrap_or_default();
        let calls = e.provider.calls().len();
        let Err(AdminError::Invalid { errors, .. }) = certify::run(&e.state, &e.tenant, &r).await
        else {
            panic!("refused: {first} {second:?}");
        };
        let field = if second.is_some() {
            "secondTestUser"
        } else {
            "testUser"
        };
        assert!(
            errors
                .iter()
                .any(|(f, m)| f == field && m.en.contains("countersign-test:")),
            "{errors:?}"
        );
        assert_eq!(e.provider.calls().len(), calls, "nothing ran");
    }
    certify::run(&e.state, &e.tenant, &request()).await.unwrap();
    for call in e.provider.calls_of("execute_action") {
        assert!(call.user.starts_with(UserId::TEST_PREFIX));
        if let Some(proof) = call.proof.as_deref() {
            let claims = decode(proof.split('.').nth(1).unwrap());
            assert!(
                claims["sub"]
                    .as_str()
                    .unwrap()
                    .starts_with(UserId::TEST_PREFIX),
                "{claims}"
            );
        }
    }
}

/// N-7 (the hostile provider): a provider that verifies nothing but executes only the first
/// execute of each conversation, or only the first of the run, passed when the valid proof
/// always came first in one conversation. Each bad proof now has a conversation of its own
/// and a bad proof goes first and last, in an order that changes from run to run: both are
/// caught, and their actions are suspended.
#[tokio::test]
async fn n7_a_provider_executing_only_first_executes_is_caught() {
    for lax in [
        Lax {
            first_execute_per_conversation: true,
            ..Lax::default()
        },
        Lax {
            first_execute_of_run: true,
            ..Lax::default()
        },
    ] {
        let e = env_with(lax).await;
        let run = certify::run(&e.state, &e.tenant, &request()).await.unwrap();
        assert!(run.accepted_bad_proof(), "{lax:?}: {run:#?}");
        assert!(!run.passed());
    }
    // A conforming provider: every execute in its own conversation, the valid one neither
    // first nor last; two runs send the series in different orders.
    let e = env().await;
    let mut orders = BTreeSet::new();
    for _ in 0..2 {
        let before = e.provider.calls_of("execute_action").len();
        let run = certify::run(&e.state, &e.tenant, &request()).await.unwrap();
        assert!(run.passed(), "{run:#?}");
        let executes = e.provider.calls_of("execute_action")[before..].to_vec();
        let conversations: BTreeSet<&str> =
            executes.iter().map(|c| c.conversation.as_str()).collect();
        assert_eq!(conversations.len(), executes.len(), "one conversation each");
        let tenant = e.tenant.id.to_string();
        let now = e.clock.now().unix_seconds();
        let at = executes
            .iter()
            .position(|c| invalid(c, &tenant, now, Lax::default()).is_none())
            .unwrap();
        assert!(at > 0 && at < executes.len() - 1, "valid at {at}");
        // The order of the kinds of proof sent (what a verifier would say of each).
        let kinds: Vec<&str> = executes
            .iter()
            .map(|c| invalid(c, &tenant, now, Lax::default()).unwrap_or("valid"))
            .collect();
        orders.insert(kinds.join(","));
    }
    assert_eq!(
        orders.len(),
        2,
        "the order changes between runs: {orders:?}"
    );
}

/// N-7: the second person's answer must carry none of the first person's data: the first
/// person's cars plus one field is a leak (it was taken for "other data"); the second
/// person's own cars pass.
#[tokio::test]
async fn n7_a_second_person_given_the_first_persons_data_plus_one_field_fails() {
    let first =
        json!({"cars": [{"id": "car_t1", "vin": "WVWZZZ1JZXW000001", "name": "Test car one"}]});
    for (leak, want) in [(true, CheckStatus::Failed), (false, CheckStatus::Passed)] {
        let e = env().await;
        let theirs = first.clone();
        e.provider.answer_with("get_cars", move |call| {
            if call.service_token != "tok-1" {
                return Reply::Result(
                    json!({"content": [{"type": "text", "text": "unknown service token"}], "isError": true}),
                );
            }
            let body = if call.user == "countersign-test:u_test" {
                theirs.clone()
            } else if leak {
                let mut b = theirs.clone();
                b["viewer"] = json!(call.user);
                b
            } else {
                json!({"cars": [{"id": "car_u1", "vin": "WVWZZZ1JZXW000777", "name": "Second car"}]})
            };
            Reply::Result(json!({"content": [{"type": "text", "text": body.to_string()}], "structuredContent": body}))
        });
        let mut r = request();
        r.second_user = Some(UserId::parse("countersign-test:u_test2").unwrap());
        r.personal = vec!["get_cars".into()];
        let run = certify::run(&e.state, &e.tenant, &r).await.unwrap();
        assert_eq!(
            status(&run, "consultation.get_cars.other_person"),
            want,
            "leak {leak}: {}",
            reason(&run, "consultation.get_cars.other_person")
        );
        if leak {
            assert!(reason(&run, "consultation.get_cars.other_person").contains("data"));
        }
    }
}

/// F-1, F-4: an operation can need the person's passkey only after a certification that
/// sent step-up proofs passed; the certification does not send them yet, so a save that
/// makes one `passkey` is refused (409 `STEP_UP_NOT_CERTIFIED`, by the field) and changes
/// nothing; `none` saves as before and the view shows every operation's step-up.
#[tokio::test]
async fn f1_no_operation_needs_a_passkey_before_a_step_up_certification() {
    let e = env().await;
    let before = mcp::current(&e.state, &e.tenant).await.unwrap().unwrap();
    let mut body = config("tok-1", false);
    body["actionPolicy"]["stepUp"] = json!({"move": "passkey"});
    let refused = mcp::put(&e.state, &e.tenant, &body).await;
    assert!(
        matches!(&refused, Err(AdminError::StepUpNotCertified(op)) if op == "move"),
        "{refused:?}"
    );
    let api = countersign_http::ApiError::from(refused.unwrap_err());
    assert_eq!(api.status(), http::StatusCode::CONFLICT);
    assert_eq!(
        mcp::current(&e.state, &e.tenant).await.unwrap().unwrap(),
        before
    );
    body["actionPolicy"]["stepUp"] = json!({"move": "none"});
    let view = mcp::put(&e.state, &e.tenant, &body).await.unwrap();
    let policy = view.action_policy.unwrap();
    assert_eq!(policy.step_up.get("move").map(String::as_str), Some("none"));
    assert!(!policy.step_up_fallback, "off by default");
}

/// F-2 (recovery): the tenant's fallback for people without a passkey is an action-settings
/// change (C-8: the actions version moves) and audited with its old and new value.
#[tokio::test]
async fn f2_the_fallback_is_an_audited_action_settings_change() {
    let e = env().await;
    let before = mcp::current(&e.state, &e.tenant).await.unwrap().unwrap();
    let mut body = config("tok-1", false);
    body["actionPolicy"]["stepUpFallback"] = json!(true);
    let view = mcp::put(&e.state, &e.tenant, &body).await.unwrap();
    assert!(view.action_policy.unwrap().step_up_fallback);
    let after = mcp::current(&e.state, &e.tenant).await.unwrap().unwrap();
    assert!(after.config.action_policy.step_up_fallback);
    assert!(after.actions_version > before.actions_version, "C-8");
    let page = e
        .state
        .stores
        .audit
        .list_audit(&e.tenant.id, None, 1)
        .await
        .unwrap();
    let changes = &page.items[0].changes;
    assert_eq!(
        changes["actionPolicy.stepUpFallback"],
        json!({"from": false, "to": true}),
        "{changes}"
    );
}
