//! The provider client against the TrackShare demo provider over HTTP on loopback (both
//! answer kinds, headers received, timeouts, refused addresses, bounded answers), and the
//! demo provider's duties (one proposal per conversation, no business change on prepare,
//! re-checks at execution, proofs verified and consumed once, idempotent execute).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use countersign_demo_provider::{Demo, DemoConfig, spawn};
use countersign_domain::config::{ServerUrl, UrlPolicy};
use countersign_domain::ids::{CaseId, OperationName, TenantId, UserId};
use countersign_domain::outcome::{ActionAnswer, parse_action_answer};
use countersign_domain::ports::{Confirmation, Provider, ProviderContext, ProviderError};
use countersign_domain::prepare::{PreparedAction, parse_prepare_answer};
use countersign_domain::proof::{Proof, ProofClaims, ProofHeader, UnsignedProof};
use countersign_domain::proposal::RemoteStatus;
use countersign_domain::secret::SecretString;
use countersign_domain::time::Timestamp;
use countersign_domain::tool_result::ToolResult;
use countersign_provider_client::resolve::Resolver;
use countersign_provider_client::{HttpProvider, Settings};
use serde_json::{Value, json};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

const KEY: &str = include_str!("../../../shared/provider-kit/tests/keys/trusted.key.pem");
const PUB: &str = include_str!("../../../shared/provider-kit/tests/keys/trusted.pub.pem");
const ISS: &str = "https://support.example.com/mcp-actions";
const TOKEN: &str = "svc_demo_token_for_tests";
const TENANT: &str = "ten_01JDZ6Y5X1QW9T3V7N2K4M8P0R";

struct Env {
    demo: Arc<Demo>,
    url: String,
    client: HttpProvider,
}

fn local() -> Settings {
    Settings {
        url_policy: UrlPolicy {
            allow_loopback_http: true,
        },
        ..Settings::default()
    }
}

async fn env_with(session_mode: bool, ttl: Duration, settings: Settings) -> Env {
    // The audience is the URL, known only once bound: bind, then set it.
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = probe.local_addr().unwrap();
    drop(probe);
    let url = format!("http://{addr}/mcp");
    let mut config = DemoConfig::new(TOKEN, ISS, url.clone());
    config.keys = vec![("kid-1".into(), PUB.into())];
    config.tenant_id = Some(TENANT.into());
    config.session_mode = session_mode;
    config.proposal_ttl = ttl;
    let (_, demo) = spawn(config, addr).await.unwrap();
    Env {
        demo,
        url,
        client: HttpProvider::new(settings).unwrap(),
    }
}

async fn env(session_mode: bool) -> Env {
    env_with(session_mode, Duration::from_secs(240), local()).await
}

fn ctx_for(url: &str, user: &str, case: &str, token: &str, policy: UrlPolicy) -> ProviderContext {
    ProviderContext {
        tenant: TenantId::parse(TENANT).unwrap(),
        user: UserId::parse(user).unwrap(),
        conversation: CaseId::parse(case).unwrap(),
        server_url: ServerUrl::parse(url, policy).unwrap(),
        service_token: SecretString::new(token),
        config_version: 1,
        language: None,
    }
}

impl Env {
    fn ctx(&self, user: &str, case: &str) -> ProviderContext {
        ctx_for(&self.url, user, case, TOKEN, local().url_policy)
    }

    async fn call(
        &self,
        ctx: &ProviderContext,
        tool: &str,
        args: Value,
        proof: Option<&Proof>,
    ) -> Value {
        let Value::Object(args) = args else { panic!() };
        let Some(proof) = proof else {
            return self.client.call_tool(ctx, tool, &args, None).await.unwrap();
        };
        let opened = self.client.open(ctx).await.unwrap();
        let confirmation = Confirmation {
            opened: &opened,
            proof,
        };
        self.client
            .call_tool(ctx, tool, &args, Some(confirmation))
            .await
            .unwrap()
    }

    fn stats(&self) -> Value {
        self.demo.stats()["stats"].clone()
    }

    async fn prepare(&self, ctx: &ProviderContext, session: &str, car: &str) -> PreparedAction {
        let raw = self
            .call(ctx, "prepare_action", json!({"operation": "reassign_session_car", "arguments": {"sessionId": session, "carId": car}}), None)
            .await;
        parse_prepare_answer(
            &ToolResult::from_mcp_json(&raw).unwrap(),
            &OperationName::parse("reassign_session_car").unwrap(),
            now(),
        )
        .unwrap_or_else(|e| panic!("{e:?}: {raw}"))
    }

    /// A proof for `p` as the platform would sign it.
    fn proof(&self, ctx: &ProviderContext, p: &PreparedAction, jti: &str) -> Proof {
        let iat = time::OffsetDateTime::now_utc().unix_timestamp();
        self.proof_at(ctx, p, jti, iat)
    }

    /// A proof for `p` issued at `iat`.
    fn proof_at(&self, ctx: &ProviderContext, p: &PreparedAction, jti: &str, iat: i64) -> Proof {
        let claims = ProofClaims {
            iss: ISS.into(),
            aud: self.url.clone(),
            sub: ctx.user.as_str().into(),
            tenant_id: ctx.tenant.as_str().into(),
            conversation_id: ctx.conversation.as_str().into(),
            action_id: p.action_id.as_str().into(),
            operation: p.operation.as_str().into(),
            arguments_hash: p.arguments_hash.as_str().into(),
            summary_hash: p.summary_hash.as_str().into(),
            message_id: "msg_01JDZ6Y5X1QW9T3V7N2K4M8P0S".into(),
            presented_message_id: "msg_01JDZ6Y5X1QW9T3V7N2K4M8P0R".into(),
            jti: jti.into(),
            iat,
            exp: iat + 60,
        };
        let unsigned = UnsignedProof::new(&ProofHeader::new("kid-1"), &claims);
        let key = jsonwebtoken::EncodingKey::from_rsa_pem(KEY.as_bytes()).unwrap();
        let sig = jsonwebtoken::crypto::sign(
            unsigned.signing_input(),
            &key,
            jsonwebtoken::Algorithm::RS256,
        )
        .unwrap();
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(sig)
            .unwrap();
        unsigned.finish(&bytes).unwrap()
    }

    async fn execute(
        &self,
        ctx: &ProviderContext,
        p: &PreparedAction,
        proof: Option<&Proof>,
    ) -> ActionAnswer {
        let raw = self
            .call(
                ctx,
                "execute_action",
                json!({"actionId": p.action_id.as_str()}),
                proof,
            )
            .await;
        parse_action_answer(&ToolResult::from_mcp_json(&raw).unwrap(), &p.action_id).unwrap()
    }

    async fn status(&self, ctx: &ProviderContext, p: &PreparedAction) -> RemoteStatus {
        let raw = self
            .call(
                ctx,
                "get_action_status",
                json!({"actionId": p.action_id.as_str()}),
                None,
            )
            .await;
        match parse_action_answer(&ToolResult::from_mcp_json(&raw).unwrap(), &p.action_id).unwrap()
        {
            ActionAnswer::Reported(r) => r.status,
            ActionAnswer::ToolError => panic!("status answered isError: {raw}"),
        }
    }

    async fn car_of(&self, ctx: &ProviderContext, session: &str) -> String {
        let raw = self.call(ctx, "get_user_sessions", json!({}), None).await;
        raw["structuredContent"]["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["sessionId"] == session)
            .map(|s| s["carId"].as_str().unwrap().to_owned())
            .unwrap()
    }
}

fn now() -> Timestamp {
    Timestamp::parse_utc(
        &time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap(),
    )
    .unwrap()
}

fn status_of(a: &ActionAnswer) -> Option<RemoteStatus> {
    match a {
        ActionAnswer::Reported(r) => Some(r.status),
        ActionAnswer::ToolError => None,
    }
}

async fn control(env: &Env, body: Value) {
    let r = reqwest::Client::new()
        .post(env.url.replace("/mcp", "/_demo/control"))
        .bearer_auth(TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204, "{body}");
}

const CASE: &str = "case_01JDZ6Y5X1QW9T3V7N2K4M8P0R";
const CASE2: &str = "case_01JDZ6Y5X1QW9T3V7N2K4M8P0S";

/// Issue 6: JSON answers (stateless) and SSE answers (a session server that needs
/// `initialize`) both work; the catalog has the seven consultations with output schemas.
#[tokio::test]
async fn client_speaks_json_and_sse_and_initializes_when_needed() {
    for session_mode in [false, true] {
        let env = env(session_mode).await;
        let ctx = env.ctx("u_alice", CASE);
        let tools = env.client.list_tools(&ctx).await.unwrap();
        assert_eq!(tools.len(), 12, "session_mode={session_mode}");
        for name in countersign_demo_provider::tools::CONSULTATIONS {
            let t = tools.iter().find(|t| t.name.as_str() == name).unwrap();
            assert!(t.output_schema.is_some(), "{name}");
        }
        let raw = env.call(&ctx, "get_user_cars", json!({}), None).await;
        assert_eq!(
            raw["structuredContent"]["cars"].as_array().unwrap().len(),
            3
        );
        let raw = env
            .call(
                &ctx,
                "get_error_diagnosis",
                json!({"code": "E_TRUNCATED"}),
                None,
            )
            .await;
        assert_eq!(raw["isError"], false);
        // What the server really is: the session server refuses a session-less request
        // (so the client must have initialized) and answers in SSE; the other in JSON.
        let http = reqwest::Client::new();
        let probe = |body: Value| {
            http.post(&env.url)
                .bearer_auth(TOKEN)
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2025-06-18")
                .json(&body)
                .send()
        };
        let list = probe(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}))
            .await
            .unwrap();
        let init = probe(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}})).await.unwrap();
        let kind = init.headers()["content-type"].to_str().unwrap().to_owned();
        if session_mode {
            assert_eq!(list.status(), 400);
            assert!(kind.starts_with("text/event-stream"), "{kind}");
        } else {
            assert_eq!(list.status(), 200);
            assert!(kind.starts_with("application/json"), "{kind}");
        }
    }
}

/// Issue 13: on a server that keeps sessions, one session per (tenant, URL) is reused
/// while it lives; a session the server dropped is replaced (and the call still
/// answered); a new settings version under the same service token keeps it (issue 27).
/// A countersigned call gets its own session, opened before the proof exists and closed
/// with `DELETE` after the answer.
#[tokio::test]
async fn sessions_are_reused_replaced_when_dropped_and_kept_across_settings_versions() {
    let env = env(true).await;
    let ctx = env.ctx("u_alice", CASE);
    let stat = |env: &Env, k: &str| env.stats()[k].as_u64().unwrap_or(0);
    for _ in 0..3 {
        env.call(&ctx, "get_user_cars", json!({}), None).await;
    }
    assert_eq!(stat(&env, "initializes"), 1, "one session for three calls");
    // The server drops it: the next call opens another and is answered.
    control(&env, json!({"fault": "expire_sessions"})).await;
    let raw = env.call(&ctx, "get_user_cars", json!({}), None).await;
    assert_eq!(
        raw["structuredContent"]["cars"].as_array().unwrap().len(),
        3
    );
    assert_eq!(stat(&env, "initializes"), 2);
    // A new configuration version under the same service token keeps the session
    // (issue 27: sessions are tagged with the token they were opened with; a rotated
    // token's session replacement is held in the provider client's own tests).
    let mut newer = ctx.clone();
    newer.config_version = 2;
    env.call(&newer, "get_user_cars", json!({}), None).await;
    assert_eq!(stat(&env, "initializes"), 2);
    assert_eq!(stat(&env, "sessionCloses"), 0);
    // The countersigned call: its own session, closed afterwards.
    let p = env.prepare(&newer, "ses_a1", "car_a2").await;
    let before = stat(&env, "initializes");
    let opened = env.client.open(&newer).await.unwrap();
    assert_eq!(
        stat(&env, "initializes"),
        before + 1,
        "handshake before the proof"
    );
    let proof = env.proof(&newer, &p, "jti-session");
    let Value::Object(args) = json!({"actionId": p.action_id.as_str()}) else {
        panic!()
    };
    let confirmation = Confirmation {
        opened: &opened,
        proof: &proof,
    };
    env.client
        .call_tool(&newer, "execute_action", &args, Some(confirmation))
        .await
        .unwrap();
    assert_eq!(stat(&env, "executions"), 1);
    let closed = async {
        while stat(&env, "sessionCloses") < 1 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), closed)
        .await
        .expect("the countersigned call's session is closed");
}

/// the identity headers come from the context; the provider sees them on every
/// call; arguments cannot name another person.
#[tokio::test]
async fn a11_b2_headers_are_set_from_the_context_and_arguments_name_no_one() {
    let env = env(false).await;
    let alice = env.ctx("u_alice", CASE);
    let raw = env
        .call(
            &alice,
            "get_user_sessions",
            json!({"userId": "u_bruno"}),
            None,
        )
        .await;
    let ids: Vec<&str> = raw["structuredContent"]["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["ses_a1", "ses_a2"], "only Alice's sessions");
    let last = env.demo.stats()["lastCall"].clone();
    assert_eq!(last["tenantId"], TENANT);
    assert_eq!(last["userId"], "u_alice");
    assert_eq!(last["conversationId"], CASE);
    assert_eq!(last["confirmation"], false);
    assert_eq!(last["protocolVersion"], "2025-06-18");
    assert_eq!(
        last["language"],
        Value::Null,
        "no language in the context, none sent"
    );
    // B-2: the person's language, when the context has it, as a BCP 47 tag.
    let portuguese = ProviderContext {
        language: Some(countersign_domain::texts::Language::Pt),
        ..alice.clone()
    };
    env.call(&portuguese, "get_user_cars", json!({}), None)
        .await;
    assert_eq!(env.demo.stats()["lastCall"]["language"], "pt-BR");
    // Another person's resource is not found.
    let raw = env
        .call(
            &alice,
            "get_session_laps",
            json!({"sessionId": "ses_b1"}),
            None,
        )
        .await;
    assert_eq!(raw["isError"], true);
    // A wrong service token is an HTTP error, typed.
    let bad = ctx_for(&env.url, "u_alice", CASE, "wrong", local().url_policy);
    let Value::Object(args) = json!({}) else {
        panic!()
    };
    assert!(matches!(
        env.client
            .call_tool(&bad, "get_user_cars", &args, None)
            .await,
        Err(ProviderError::Http { status: 401 })
    ));
}

/// `tools/list` is cached per configuration version.
#[tokio::test]
async fn tools_list_is_cached_per_configuration_version() {
    let env = env(false).await;
    let mut ctx = env.ctx("u_alice", CASE);
    env.client.list_tools(&ctx).await.unwrap();
    env.client.list_tools(&ctx).await.unwrap();
    assert_eq!(env.stats()["toolLists"], 1);
    ctx.config_version = 2;
    env.client.list_tools(&ctx).await.unwrap();
    assert_eq!(env.stats()["toolLists"], 2);
}

/// Timeouts, unreachable servers, garbage and oversized answers are typed errors.
#[tokio::test]
async fn timeouts_garbage_and_limits_are_typed_errors() {
    let env = env_with(
        false,
        Duration::from_secs(240),
        Settings {
            timeout: Duration::from_millis(400),
            ..local()
        },
    )
    .await;
    let ctx = env.ctx("u_alice", CASE);
    let Value::Object(none) = json!({}) else {
        panic!()
    };
    control(&env, json!({"fault": "delay", "ms": 1500})).await;
    assert!(matches!(
        env.client
            .call_tool(&ctx, "get_user_cars", &none, None)
            .await,
        Err(ProviderError::Timeout)
    ));
    control(&env, json!({"fault": "reset"})).await;
    control(&env, json!({"fault": "garbage"})).await;
    assert!(matches!(
        env.client
            .call_tool(&ctx, "get_user_cars", &none, None)
            .await,
        Err(ProviderError::Malformed(_))
    ));
    control(&env, json!({"fault": "reset"})).await;
    // Bounded answers.
    let small = HttpProvider::new(Settings {
        max_answer_bytes: 300,
        ..local()
    })
    .unwrap();
    assert!(
        matches!(small.list_tools(&ctx).await, Err(ProviderError::Malformed(m)) if m.contains("larger"))
    );
    // Nothing listening.
    let closed = ctx_for(
        "http://127.0.0.1:9/mcp",
        "u_alice",
        CASE,
        TOKEN,
        local().url_policy,
    );
    assert!(matches!(
        env.client
            .call_tool(&closed, "get_user_cars", &none, None)
            .await,
        Err(ProviderError::Unreachable(_))
    ));
}

/// Resolves every name to one address (no network).
struct Rebind(IpAddr);

#[async_trait::async_trait]
impl Resolver for Rebind {
    async fn resolve(&self, _: &str, _: u16) -> std::io::Result<Vec<IpAddr>> {
        Ok(vec![self.0])
    }
}

/// D-5 at connect time: without the local-stack setting, loopback URLs are refused, and a
/// name whose DNS answer became internal after it was saved (rebinding) is refused before
/// anything is sent.
#[tokio::test]
async fn d5_refused_addresses_at_connect_time() {
    let env = env(false).await;
    let Value::Object(none) = json!({}) else {
        panic!()
    };
    let deployed = HttpProvider::new(Settings::default()).unwrap();
    // Stored under the local setting, called by a deployment's client.
    let ctx = env.ctx("u_alice", CASE);
    assert!(matches!(
        deployed.call_tool(&ctx, "get_user_cars", &none, None).await,
        Err(ProviderError::Unreachable(_))
    ));
    for internal in ["127.0.0.1", "10.1.2.3", "169.254.169.254", "::1", "fd00::1"] {
        let client = HttpProvider::with_resolver(
            Settings::default(),
            Arc::new(Rebind(internal.parse().unwrap())),
        )
        .unwrap();
        let ctx = ctx_for(
            "https://mcp.trackshare.example.com/mcp",
            "u_alice",
            CASE,
            TOKEN,
            UrlPolicy::default(),
        );
        match client.call_tool(&ctx, "get_user_cars", &none, None).await {
            Err(ProviderError::Unreachable(_)) => {}
            other => panic!("{internal}: {other:?}"),
        }
    }
    assert_eq!(env.stats()["toolLists"], 0);
    assert!(
        env.demo.stats()["lastCall"].is_null(),
        "nothing reached the provider"
    );
}

/// The provider's duties, through the client: prepare changes nothing; one pending
/// proposal per conversation; execute with a valid proof completes once; a repeat answers
/// the same result without writing; a replayed proof and a missing proof are refused.
#[tokio::test]
async fn provider_duties_prepare_execute_idempotence_and_replay() {
    let env = env(false).await;
    let ctx = env.ctx("u_alice", CASE);
    let first = env.prepare(&ctx, "ses_a1", "car_a2").await;
    assert_eq!(
        env.car_of(&ctx, "ses_a1").await,
        "car_a1",
        "preparation changes no business data"
    );
    let second = env.prepare(&ctx, "ses_a1", "car_a3").await;
    assert_ne!(first.action_id, second.action_id);
    assert_eq!(
        env.status(&ctx, &first).await,
        RemoteStatus::Cancelled,
        "the previous proposal is cancelled"
    );
    assert_eq!(
        env.status(&ctx, &second).await,
        RemoteStatus::PendingConfirmation
    );
    // A superseded proposal never executes, even with a valid proof.
    let p1 = env.proof(&ctx, &first, "jti-first");
    assert_eq!(
        status_of(&env.execute(&ctx, &first, Some(&p1)).await),
        Some(RemoteStatus::Cancelled)
    );
    // No proof: refused.
    assert_eq!(
        env.execute(&ctx, &second, None).await,
        ActionAnswer::ToolError
    );
    // A proof for another action: refused.
    assert_eq!(
        env.execute(&ctx, &second, Some(&p1)).await,
        ActionAnswer::ToolError
    );
    assert_eq!(env.stats()["executions"], 0);
    let proof = env.proof(&ctx, &second, "jti-second");
    assert_eq!(
        status_of(&env.execute(&ctx, &second, Some(&proof)).await),
        Some(RemoteStatus::Completed)
    );
    assert_eq!(env.car_of(&ctx, "ses_a1").await, "car_a3");
    assert_eq!(env.stats()["executions"], 1);
    // Replay of the same proof: refused.
    assert_eq!(
        env.execute(&ctx, &second, Some(&proof)).await,
        ActionAnswer::ToolError
    );
    assert_eq!(env.stats()["replays"], 1);
    // A repeated execute with a fresh proof: the same result, no second write.
    let again = env.proof(&ctx, &second, "jti-again");
    assert_eq!(
        status_of(&env.execute(&ctx, &second, Some(&again)).await),
        Some(RemoteStatus::Completed)
    );
    assert_eq!(env.stats()["executions"], 1);
    assert_eq!(env.status(&ctx, &second).await, RemoteStatus::Completed);
    // Another person, or another conversation, cannot see or run it.
    let bruno = env.ctx("u_bruno", CASE);
    let raw = env
        .call(
            &bruno,
            "get_action_status",
            json!({"actionId": second.action_id.as_str()}),
            None,
        )
        .await;
    assert_eq!(raw["isError"], true);
    let other_case = env.ctx("u_alice", CASE2);
    let raw = env
        .call(
            &other_case,
            "get_action_status",
            json!({"actionId": second.action_id.as_str()}),
            None,
        )
        .await;
    assert_eq!(raw["isError"], true);
    assert_eq!(env.stats()["directWrites"], 0);
}

/// Execution re-checks permission, account and state: `conflict` when any changed.
#[tokio::test]
async fn provider_rechecks_at_execution_and_answers_conflict() {
    let env = env(false).await;
    for (i, (fault, user, session, to)) in [
        (
            json!({"fault": "change_session_car", "session": "ses_a1"}),
            "u_alice",
            "ses_a1",
            "car_a2",
        ),
        (
            json!({"fault": "revoke_permission", "user": "u_bruno"}),
            "u_bruno",
            "ses_b1",
            "car_b2",
        ),
        (
            json!({"fault": "block_account", "user": "u_alice"}),
            "u_alice",
            "ses_a2",
            "car_a2",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let ctx = env.ctx(user, CASE);
        let p = env.prepare(&ctx, session, to).await;
        control(&env, fault).await;
        let before = env.car_of(&ctx, session).await;
        let proof = env.proof(&ctx, &p, &format!("jti-conflict-{i}"));
        assert_eq!(
            status_of(&env.execute(&ctx, &p, Some(&proof)).await),
            Some(RemoteStatus::Conflict),
            "case {i}"
        );
        assert_eq!(
            env.car_of(&ctx, session).await,
            before,
            "nothing written on conflict"
        );
    }
    assert_eq!(env.stats()["executions"], 0);
}

/// Concurrent executes of one proposal with distinct valid proofs: one write.
#[tokio::test]
async fn concurrent_executes_write_once_and_ids_are_never_reused() {
    let env = Arc::new(env(true).await);
    let ctx = env.ctx("u_alice", CASE);
    let p = env.prepare(&ctx, "ses_a2", "car_a3").await;
    let mut tasks = Vec::new();
    for i in 0..16 {
        let env = env.clone();
        let ctx = ctx.clone();
        let p = p.clone();
        tasks.push(tokio::spawn(async move {
            let proof = env.proof(&ctx, &p, &format!("jti-c{i}"));
            env.execute(&ctx, &p, Some(&proof)).await
        }));
    }
    for t in tasks {
        assert_eq!(status_of(&t.await.unwrap()), Some(RemoteStatus::Completed));
    }
    assert_eq!(env.stats()["executions"], 1);
    let mut ids = std::collections::HashSet::new();
    for _ in 0..30 {
        let p = env.prepare(&ctx, "ses_a1", "car_a2").await;
        assert!(ids.insert(p.action_id.as_str().to_owned()));
    }
}

/// An unconfirmed proposal expires; it never executes afterwards.
#[tokio::test]
async fn expired_proposals_never_execute() {
    let env = env_with(false, Duration::from_secs(1), local()).await;
    let ctx = env.ctx("u_alice", CASE);
    let p = env.prepare(&ctx, "ses_a1", "car_a2").await;
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(env.status(&ctx, &p).await, RemoteStatus::Expired);
    // A proof made after the expiry outlives its proposal (the platform never signs one:
    // A-33 caps `exp` at `expiresAt`): refused before anything (D-7), nothing runs, and
    // the proposal stays expired.
    let proof = env.proof(&ctx, &p, "jti-late");
    assert!(matches!(
        env.execute(&ctx, &p, Some(&proof)).await,
        ActionAnswer::ToolError
    ));
    assert_eq!(env.status(&ctx, &p).await, RemoteStatus::Expired);
    assert_eq!(env.stats()["executions"], 0);
}

/// A-43 evidence: the provider executes, then drops the connection: the client reports
/// `Interrupted` (outcome unknown), and the status query then tells the truth.
#[tokio::test]
async fn dropped_connection_after_execute_is_interrupted() {
    let env = env(false).await;
    let ctx = env.ctx("u_alice", CASE);
    let p = env.prepare(&ctx, "ses_a1", "car_a2").await;
    control(&env, json!({"fault": "drop_after_execute"})).await;
    let proof = env.proof(&ctx, &p, "jti-drop");
    let Value::Object(args) = json!({"actionId": p.action_id.as_str()}) else {
        panic!()
    };
    let opened = env.client.open(&ctx).await.unwrap();
    let confirmation = Confirmation {
        opened: &opened,
        proof: &proof,
    };
    assert!(matches!(
        env.client
            .call_tool(&ctx, "execute_action", &args, Some(confirmation))
            .await,
        Err(ProviderError::Interrupted)
    ));
    control(&env, json!({"fault": "reset"})).await;
    assert_eq!(env.stats()["executions"], 1);
    assert_eq!(env.status(&ctx, &p).await, RemoteStatus::Completed);
}

/// Issue 16: the switches that make the demo a broken provider, for the certification
/// run to catch: one executes without any proof, one accepts an expired proof. Off, the
/// same requests are refused and nothing is executed.
#[tokio::test]
async fn broken_provider_switches_skip_verification_or_accept_expired_proofs() {
    let env = env(false).await;
    let ctx = env.ctx("u_alice", CASE);
    let p = env.prepare(&ctx, "ses_a1", "car_a2").await;
    assert_eq!(env.execute(&ctx, &p, None).await, ActionAnswer::ToolError);
    control(&env, json!({"fault": "skip_proof_verification"})).await;
    assert_eq!(
        status_of(&env.execute(&ctx, &p, None).await),
        Some(RemoteStatus::Completed)
    );
    control(&env, json!({"fault": "reset"})).await;
    let ctx2 = env.ctx("u_alice", CASE2);
    let p2 = env.prepare(&ctx2, "ses_a2", "car_a3").await;
    let iat = time::OffsetDateTime::now_utc().unix_timestamp() - 600;
    let expired = env.proof_at(&ctx2, &p2, "jti-expired-1", iat);
    assert_eq!(
        env.execute(&ctx2, &p2, Some(&expired)).await,
        ActionAnswer::ToolError
    );
    control(&env, json!({"fault": "accept_expired_proofs"})).await;
    let expired = env.proof_at(&ctx2, &p2, "jti-expired-2", iat);
    assert_eq!(
        status_of(&env.execute(&ctx2, &p2, Some(&expired)).await),
        Some(RemoteStatus::Completed)
    );
}
