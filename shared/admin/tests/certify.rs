//! The certification run (H-1 … H-4) on in-memory ports: a scripted provider, the fake
//! signer (whose "signature" is the SHA-256 of the signing input, so the platform's
//! signatures can be recognised), the memory store.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use async_trait::async_trait;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_admin::api::AdminState;
use countersign_admin::certify::{self, CertifyRequest, TestAction};
use countersign_admin::{AdminError, mcp, tenants};
use countersign_domain::certification::{Certification, CheckStatus};
use countersign_domain::config::UrlPolicy;
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::{OperationName, ToolName, UserId};
use countersign_domain::ports::{Clock, ProviderTool, Resolver, Tenant, TenantStore};
use countersign_domain::texts::Language;
use countersign_testkit::{
    FakeSigner, MemorySecrets, MemoryStore, Reply, ScriptedProvider, SeqIds, TestClock,
    action_answer, prepare_answer,
};
use serde_json::{Map, Value, json};
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

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
    json!({
        "serverUrl": URL,
        "serviceToken": token,
        "allowedTools": ["get_cars"],
        "actionPolicy": {"contractVersion": 1, "enabled": enabled, "operations": ["move"]}
    })
}

/// A provider that honours the contract: every bad proof refused with `isError`.
async fn env() -> Env {
    let clock = Arc::new(TestClock::default());
    let ids = Arc::new(SeqIds::new(clock.clone()));
    let store = Arc::new(MemoryStore::default());
    let provider = Arc::new(ScriptedProvider::default());
    let registered = tenants::register(&*store, &*ids, &*clock, "A", Language::En)
        .await
        .unwrap();
    let state = AdminState {
        tenants: store.clone(),
        leases: store.clone(),
        conversations: store.clone(),
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
    mcp::put(&state, &registered.tenant, &config("tok-1", false))
        .await
        .unwrap();
    let expires = clock.now().plus_seconds(240).to_rfc3339();
    let n = AtomicU32::new(0);
    provider.answer_with("prepare_action", move |_| {
        let id = format!("act_{}", n.fetch_add(1, Ordering::SeqCst));
        Reply::Result(prepare_answer(&id, "move", "Move the session.", &expires))
    });
    provider.answer_always(
        "get_cars",
        Reply::Result(
            json!({"content": [{"type": "text", "text": "{}"}], "structuredContent": {"cars": []}}),
        ),
    );
    provider.answer_always(
        "execute_action",
        Reply::Result(
            json!({"content": [{"type": "text", "text": "proof refused"}], "isError": true}),
        ),
    );
    provider.answer_with("get_action_status", |call| {
        let id = call.arguments["actionId"].as_str().unwrap();
        Reply::Result(action_answer(id, "pending_confirmation", None))
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
        test_user: UserId::parse("u_test").unwrap(),
        consultations: [("get_cars".to_owned(), Map::new())].into(),
        action: Some(TestAction {
            operation: OperationName::parse("move").unwrap(),
            arguments: Map::new(),
        }),
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
/// checked; and no proof it sends is valid for its call: each one the platform signed is
/// wrong in exactly one header field or claim (the V-3 series), the others are unsigned,
/// MACed or signed by another key.
#[tokio::test]
async fn h3_v3_a_conforming_provider_passes_and_no_valid_proof_is_ever_sent() {
    let e = env().await;
    let run = certify::run(&e.state, &e.tenant, &request()).await.unwrap();
    assert!(run.passed(), "{run:#?}");
    assert_eq!(run.subject.operations, vec!["move".to_owned()]);
    assert_eq!(
        e.store.latest_certification(&e.tenant.id).await.unwrap(),
        Some(run.clone())
    );
    let executes = e.provider.calls_of("execute_action");
    assert_eq!(executes.len(), 20, "one per bad proof of the V-3 series");
    assert!(executes[0].proof.is_none(), "the first has no proof at all");
    let now = e.clock.now().unix_seconds();
    let standard = json!({"alg": "RS256", "typ": "support-action+jwt", "kid": FakeSigner::KEY_ID});
    let mut platform_signed = 0;
    for call in &executes[1..] {
        let proof = call.proof.as_deref().unwrap();
        let parts: Vec<&str> = proof.split('.').collect();
        let (header, claims) = (decode(parts[0]), decode(parts[1]));
        let input = format!("{}.{}", parts[0], parts[1]);
        let ours = URL_SAFE_NO_PAD.encode(Sha256Hex::digest(&input).as_str());
        if parts[2] != ours {
            continue; // Unsigned, MACed or another key's: no provider trusting the platform accepts it.
        }
        platform_signed += 1;
        let id = call.arguments["actionId"].as_str().unwrap();
        let prepared =
            prepare_answer(id, "move", "Move the session.", "-")["structuredContent"].clone();
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
            claims["operation"] != "move",
            claims["argumentsHash"] != prepared["argumentsHash"],
            claims["summaryHash"] != prepared["summaryHash"],
        ];
        assert_eq!(
            wrongs.iter().filter(|w| **w).count(),
            1,
            "exactly one thing wrong: {header:#} {claims:#}"
        );
    }
    assert_eq!(
        platform_signed, 13,
        "unknown kid, expired, lifetime, iss, aud, typ, sub, tenant, conversation, action, operation, two hashes"
    );
    // Every action prepared stays pending (the status was asked after each attempt).
    assert_eq!(e.provider.calls_of("get_action_status").len(), 21);
}

/// H-3: a provider that executes on a bad proof fails every proof check, each with what
/// it was given and what to check.
#[tokio::test]
async fn h3_a_provider_that_executes_on_bad_proofs_fails_each_check_with_the_fix() {
    let e = env().await;
    e.provider.answer_with("execute_action", |call| {
        let id = call.arguments["actionId"].as_str().unwrap();
        Reply::Result(action_answer(id, "completed", None))
    });
    let run = certify::run(&e.state, &e.tenant, &request()).await.unwrap();
    assert!(!run.passed());
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
            r.contains("execute_action answered `completed`") && r.contains(fix),
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
    let e = env().await;
    e.provider.answer_with("execute_action", |call| {
        let id = call.arguments["actionId"].as_str().unwrap();
        Reply::Result(action_answer(id, "failed", Some("no such car")))
    });
    let run = certify::run(&e.state, &e.tenant, &request()).await.unwrap();
    assert!(!run.passed());
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
    e.provider.answer_always(
        "get_cars",
        Reply::Result(json!({"content": [], "structuredContent": {"cars": "none"}})),
    );
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
    assert_eq!(status(&run, "actions.prepare"), CheckStatus::Failed);
    assert!(reason(&run, "actions.prepare").contains("breaks the contract"));
    assert_eq!(status(&run, "proof.alg_none"), CheckStatus::Skipped);
    assert!(e.provider.calls_of("execute_action").is_empty());
    assert!(!run.passed());
}

/// H-4 in the use case: a passing run of the saved settings allows enabling; a new
/// service token is never certified; an unreachable provider fails the run.
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
    let refused = mcp::put(&e.state, &e.tenant, &config("tok-1", true)).await;
    assert!(
        matches!(refused, Err(AdminError::CertificationRequired)),
        "the latest run failed"
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
    let held = e
        .store
        .acquire(
            &e.tenant.id,
            "certification run",
            "another-run",
            now,
            now.plus_seconds(60),
        )
        .await
        .unwrap();
    assert_eq!(held, Lease::Held);
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
        .release(&e.tenant.id, "certification run", "another-run")
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
