//! The gateway over HTTP, in memory (`Router::oneshot`): MCP Streamable HTTP, stateless,
//! JSON responses, D-4 tokens.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::*;

use axum::body::Body;
use countersign_aws::system::SystemClock;
use countersign_domain::config::{UrlPolicy, validate_mcp_config};
use countersign_domain::conversation::Principal;
use countersign_domain::ids::{CaseId, TenantId, UserId};
use countersign_domain::ports::{Clock, Provider, SecretError, SecretStore, StoredMcpConfig};
use countersign_domain::secret::SecretString;
use countersign_gateway_fn::{Gateway, router};
use countersign_testkit::MemoryStore;
use countersign_tools::access::{self, Grant};
use countersign_tools::builtins::{self, Services};
use countersign_tools::integration::IntegrationService;
use http::{Request, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::Mutex;
use tower::ServiceExt as _;

fn app() -> axum::Router {
    app_with(None)
}

fn app_with(provider: Option<Arc<dyn Provider>>) -> axum::Router {
    app_budgeted(provider, None)
}

fn app_budgeted(
    provider: Option<Arc<dyn Provider>>,
    budget: Option<(Arc<dyn countersign_domain::ports::RateLimiter>, u32)>,
) -> axum::Router {
    app_keyed(
        provider,
        budget,
        countersign_gateway_fn::TokenKey::fixed(key()),
    )
}

fn app_keyed(
    provider: Option<Arc<dyn Provider>>,
    budget: Option<(Arc<dyn countersign_domain::ports::RateLimiter>, u32)>,
    token_key: countersign_gateway_fn::TokenKey,
) -> axum::Router {
    router(gateway_keyed(provider, budget, token_key))
}

async fn post(token: Option<&str>, version: &str, body: Value) -> (StatusCode, Value) {
    post_to(app(), token, version, body).await
}

/// D-4: a missing, expired, forged or unparsable token is a 401, before MCP.
#[tokio::test]
async fn d4_missing_expired_or_bad_tokens_are_401() {
    let list = rpc(1, "tools/list", json!({}));
    let (s, body) = post(None, "2025-06-18", list.clone()).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert_eq!(body["error"]["code"], "UNAUTHORIZED");
    let expired =
        access::mint(&key(), &grant(), SystemClock.now().plus_seconds(-3600), 60).unwrap();
    let forged = access::mint(
        &SecretString::new("another key"),
        &grant(),
        SystemClock.now(),
        60,
    )
    .unwrap();
    for t in [expired.as_str(), forged.as_str(), "garbage", ""] {
        let (s, _) = post(Some(t), "2025-06-18", list.clone()).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{t}");
    }
}

/// G-3: tools/list publishes every built-in with `_meta.version`, on each protocol version.
#[tokio::test]
async fn g3_tools_list_publishes_versions_on_every_protocol_version() {
    for version in ["2025-06-18", "2025-11-25", "2026-07-28"] {
        let (s, body) = post(Some(&token()), version, rpc(1, "tools/list", json!({}))).await;
        assert_eq!(s, StatusCode::OK, "{version}: {body}");
        let tools = body["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{version}: {body}"));
        let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            vec!["action_status", "describe_tool", "list_operations"]
        );
        for t in tools {
            let version = match t["name"].as_str().unwrap() {
                "list_operations" | "action_status" => "1.1.0",
                "describe_tool" => "2.0.0",
                _ => "1.0.0",
            };
            assert_eq!(t["_meta"]["version"], version, "{t}");
            assert!(t["outputSchema"].is_object());
        }
    }
}

/// G-1 over the wire: a call answers the sealed envelope; an unknown tool is -32602.
#[tokio::test]
async fn g1_tools_call_answers_the_envelope_and_unknown_tools_are_invalid_params() {
    let (s, body) = post(
        Some(&token()),
        "2025-06-18",
        rpc(
            2,
            "tools/call",
            json!({"name": "describe_tool", "arguments": {"name": "action_status"}}),
        ),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let result = &body["result"];
    assert_eq!(result["isError"], false, "{body}");
    assert_eq!(
        result["structuredContent"]["meta"],
        json!({"tool": "describe_tool", "version": "2.0.0"})
    );
    let text = result["content"][0]["text"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        result["structuredContent"]
    );

    let (_, body) = post(
        Some(&token()),
        "2025-06-18",
        rpc(
            3,
            "tools/call",
            json!({"name": "execute_action", "arguments": {"actionId": "a"}}),
        ),
    )
    .await;
    assert_eq!(body["error"]["code"], -32602, "{body}");
}

/// GET /mcp is not served (stateless, no SSE stream): 405.
#[tokio::test]
async fn get_is_method_not_allowed() {
    let req = Request::get("/mcp")
        .header("host", "127.0.0.1")
        .header("accept", "text/event-stream")
        .header("authorization", format!("Bearer {}", token()))
        .body(Body::empty())
        .unwrap();
    let res = app().oneshot(req).await.unwrap();
    assert_eq!(res.status(), StatusCode::METHOD_NOT_ALLOWED);
}

/// Decision 0021: a tenant's proxied consultations are budgeted per minute; beyond it the
/// call reaches no one and is answered as a retryable SERVICE_UNAVAILABLE envelope with
/// the seconds to wait; built-ins are never counted.
#[tokio::test]
async fn proxied_consultations_are_budgeted_per_tenant() {
    // G-8: the refusal is measured too.
    let recorder = metrics_util::debugging::DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _guard = metrics::set_default_local_recorder(&recorder);
    let provider = Arc::new(TrackShare {
        seen_tokens: Mutex::new(Vec::new()),
    });
    let limiter: Arc<dyn countersign_domain::ports::RateLimiter> =
        Arc::new(countersign_testkit::MemoryStore::default());
    let app = || app_budgeted(Some(provider.clone()), Some((limiter.clone(), 1)));
    let call = |name: &str| rpc(2, "tools/call", json!({"name": name, "arguments": {}}));
    let (_, first) = post_to(
        app(),
        Some(&token()),
        "2025-06-18",
        call("get_user_uploads"),
    )
    .await;
    assert_eq!(
        first["result"]["structuredContent"],
        json!({"uploads": []}),
        "{first}"
    );
    let describe = rpc(
        3,
        "tools/call",
        json!({"name": "describe_tool", "arguments": {"name": "action_status"}}),
    );
    let (_, builtin) = post_to(app(), Some(&token()), "2025-06-18", describe).await;
    assert_ne!(builtin["result"]["isError"], true, "{builtin}");
    let (_, second) = post_to(
        app(),
        Some(&token()),
        "2025-06-18",
        call("get_user_uploads"),
    )
    .await;
    assert_eq!(second["result"]["isError"], true, "{second}");
    let text = second["result"]["content"][0]["text"].as_str().unwrap();
    let envelope: Value = serde_json::from_str(text).unwrap();
    assert_eq!(
        envelope["error"]["code"], "SERVICE_UNAVAILABLE",
        "{envelope}"
    );
    assert_eq!(envelope["error"]["retryable"], true);
    let refusal_measured = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .any(|(k, _, _, _)| {
            let labels: Vec<(String, String)> = k
                .key()
                .labels()
                .map(|l| (l.key().to_owned(), l.value().to_owned()))
                .collect();
            k.key().name() == "mcp_tool_duration_seconds"
                && labels.contains(&("tool".into(), "get_user_uploads".into()))
                && labels.contains(&("error_type".into(), "SERVICE_UNAVAILABLE".into()))
        });
    assert!(refusal_measured, "G-8: the budget refusal is measured");
    assert!(
        envelope["error"]["details"]["retryAfterSeconds"]
            .as_u64()
            .unwrap()
            >= 1
    );
}

/// G-6, A-3, T-1: the tenant's allowed consultations are listed as the provider publishes
/// them, answered unchanged when they honour their schema, enveloped as
/// PROVIDER_CONTRACT_VIOLATION when not; tools outside the allowlist and reserved names are
/// never offered nor callable; the provider gets the tenant's service token.
#[tokio::test]
async fn g6_proxied_consultations_through_the_gateway() {
    let provider = Arc::new(TrackShare {
        seen_tokens: Mutex::new(Vec::new()),
    });
    let app = || app_with(Some(provider.clone()));
    let (s, body) = post_to(
        app(),
        Some(&token()),
        "2025-06-18",
        rpc(1, "tools/list", json!({})),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let mut names: Vec<&str> = body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        vec![
            "action_status",
            "describe_tool",
            "get_user_cars",
            "get_user_uploads",
            "list_operations"
        ]
    );
    assert_eq!(
        provider
            .seen_tokens
            .lock()
            .unwrap()
            .first()
            .map(String::as_str),
        Some("svc-token")
    );

    let call = |name: &str| rpc(2, "tools/call", json!({"name": name, "arguments": {}}));
    let (_, body) = post_to(
        app(),
        Some(&token()),
        "2025-06-18",
        call("get_user_uploads"),
    )
    .await;
    assert_eq!(
        body["result"]["structuredContent"],
        json!({"uploads": []}),
        "{body}"
    );
    assert!(
        body["result"].get("meta").is_none(),
        "proxied answers are not enveloped"
    );

    let (_, body) = post_to(app(), Some(&token()), "2025-06-18", call("get_user_cars")).await;
    assert_eq!(body["result"]["isError"], true, "{body}");
    let env: Value =
        serde_json::from_str(body["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(env["error"]["code"], "PROVIDER_CONTRACT_VIOLATION");

    for refused in ["get_matching_sessions", "execute_action"] {
        let (_, body) = post_to(app(), Some(&token()), "2025-06-18", call(refused)).await;
        assert_eq!(body["error"]["code"], -32602, "{refused}: {body}");
    }
}

/// G-6 end to end: the gateway's proxied consultations through the real HTTP provider
/// client to the TrackShare demo provider on loopback: only allowlisted tools are
/// published, answers pass through validated against the provider's output schemas, and
/// the provider sees the token's principal, never an argument's.
#[tokio::test]
async fn g6_proxied_consultations_reach_the_demo_provider_over_http() {
    let tenant = TenantId::from_ulid_text(ULID).unwrap();
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = probe.local_addr().unwrap();
    drop(probe);
    let url = format!("http://{addr}/mcp");
    let mut demo = countersign_demo_provider::DemoConfig::new(
        "svc-token",
        "https://issuer.example",
        url.clone(),
    );
    demo.tenant_id = Some(tenant.to_string());
    let (_, demo) = countersign_demo_provider::spawn(demo, addr).await.unwrap();
    let local = UrlPolicy {
        allow_loopback_http: true,
    };
    let fake = Arc::new(MemoryStore::default());
    let config = validate_mcp_config(
        &json!({"serverUrl": url, "serviceToken": "svc-token", "allowedTools": ["get_user_cars", "get_user_sessions"]}),
        local,
    )
    .unwrap();
    fake.seed_mcp_config(
        &TenantId::from_ulid_text(ULID).unwrap(),
        StoredMcpConfig {
            config,
            version: 1,
            actions_version: 1,
            secret_version: "v1".into(),
        },
    );
    let app = || {
        router(Gateway {
            registry: builtins::consultation_registry().unwrap(),
            services: Services {
                conversations: fake.clone(),
                tenants: fake.clone(),
                actions: None,
            },
            token_key: countersign_gateway_fn::TokenKey::fixed(key()),
            clock: Arc::new(SystemClock),
            allowed_hosts: vec![],
            budget: None,
            links: None,
            public_url: None,
            page_url: None,
            integration: Some(Arc::new(IntegrationService::new(
                fake.clone(),
                Arc::new(Secrets),
                Arc::new(
                    countersign_provider_client::HttpProvider::new(
                        countersign_provider_client::Settings {
                            url_policy: local,
                            ..countersign_provider_client::Settings::default()
                        },
                    )
                    .unwrap(),
                ),
            ))),
        })
    };
    let alice = Grant {
        principal: Principal {
            tenant: tenant.clone(),
            user: UserId::parse("u_alice").unwrap(),
        },
        case: CaseId::from_ulid_text(ULID).unwrap(),
    };
    let token = access::mint(&key(), &alice, SystemClock.now(), 300).unwrap();
    let (s, body) = post_to(
        app(),
        Some(&token),
        "2025-06-18",
        rpc(1, "tools/list", json!({})),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let names: Vec<&str> = body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"get_user_cars") && names.contains(&"get_user_sessions"),
        "{names:?}"
    );
    assert!(
        !names.contains(&"get_matching_sessions")
            && !names.contains(&"execute_action")
            && !names.contains(&"reassign_session_car")
    );
    let (_, body) = post_to(
        app(),
        Some(&token),
        "2025-06-18",
        rpc(
            2,
            "tools/call",
            json!({"name": "get_user_sessions", "arguments": {"userId": "u_bruno"}}),
        ),
    )
    .await;
    let sessions = body["result"]["structuredContent"]["sessions"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(sessions.len(), 2, "{body}");
    assert!(
        sessions
            .iter()
            .all(|s| s["sessionId"].as_str().unwrap().starts_with("ses_a"))
    );
    let last = demo.stats()["lastCall"].clone();
    assert_eq!(last["userId"], "u_alice");
    assert_eq!(last["tenantId"], tenant.as_str());
    let (_, body) = post_to(
        app(),
        Some(&token),
        "2025-06-18",
        rpc(3, "tools/call", json!({"name": "reassign_session_car", "arguments": {"sessionId": "ses_a1", "carId": "car_a2"}})),
    )
    .await;
    assert_eq!(
        body["error"]["code"], -32602,
        "a direct write is not allowlisted: {body}"
    );
    assert_eq!(demo.stats()["stats"]["directWrites"], 0);
}

/// Issue 17, decision 0029: `server/discover` advertises exactly the versions the gateway
/// implements; a request naming any other is refused with -32022 (2026-07-28) and
/// `initialize` never agrees to one.
#[tokio::test]
async fn mcp_versions_advertised_are_exactly_the_implemented_ones() {
    let (s, body) = post(
        Some(&token()),
        "2026-07-28",
        rpc(1, "server/discover", json!({})),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(
        body["result"]["supportedVersions"],
        json!(["2025-06-18", "2025-11-25", "2026-07-28"])
    );
    assert_eq!(body["result"]["resultType"], "complete");
    assert_eq!(body["result"]["capabilities"], json!({"tools": {}}));
    // A version the gateway does not implement, in the request's own `_meta`.
    let (_, body) = post(Some(&token()), "2024-11-05", list_with_meta("2024-11-05")).await;
    assert_eq!(body["error"]["code"], -32022, "{body}");
    // `initialize` from an older client is answered with an implemented version.
    let init = rpc(
        1,
        "initialize",
        json!({"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let (_, body) = post(Some(&token()), "2024-11-05", init).await;
    let agreed = body["result"]["protocolVersion"]
        .as_str()
        .unwrap_or_default();
    assert!(
        ["2025-06-18", "2025-11-25"].contains(&agreed),
        "initialize agreed to {agreed}: {body}"
    );
}

fn list_with_meta(version: &str) -> Value {
    rpc(
        2,
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {}}}),
    )
}

/// Issue 17: every 2026-07-28 result carries `resultType` (built-ins, the list, and a
/// proxied consultation's answer, which the provider did not frame that way); results of
/// the `initialize` eras carry none.
#[tokio::test]
async fn mcp_2026_results_carry_result_type_and_earlier_ones_do_not() {
    let provider: Arc<dyn Provider> = Arc::new(TrackShare {
        seen_tokens: Mutex::default(),
    });
    let calls = [
        rpc(1, "tools/list", json!({})),
        rpc(
            2,
            "tools/call",
            json!({"name": "action_status", "arguments": {}}),
        ),
        rpc(
            3,
            "tools/call",
            json!({"name": "get_user_uploads", "arguments": {}}),
        ),
        rpc(
            4,
            "tools/call",
            json!({"name": "get_user_cars", "arguments": {}}),
        ),
    ];
    for version in ["2025-06-18", "2025-11-25", "2026-07-28"] {
        for call in &calls {
            let app = app_with(Some(provider.clone()));
            let (s, body) = post_to(app, Some(&token()), version, call.clone()).await;
            assert_eq!(s, StatusCode::OK, "{version} {call}: {body}");
            let result_type = &body["result"]["resultType"];
            if version == "2026-07-28" {
                assert_eq!(result_type, "complete", "{version} {call}: {body}");
            } else {
                assert!(result_type.is_null(), "{version} {call}: {body}");
            }
        }
    }
}

/// Issue 17: the 2026-07-28 headers are checked: `Mcp-Method` is required and must match
/// the body (-32020), and so must `Mcp-Name` on `tools/call`.
#[tokio::test]
async fn mcp_2026_headers_must_match_the_body() {
    let call = rpc(
        1,
        "tools/call",
        json!({"name": "action_status", "arguments": {}}),
    );
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    let mut body = call.clone();
    body["params"]["_meta"] = meta;
    for headers in [
        vec![],
        vec![("mcp-method", "tools/list")],
        vec![("mcp-method", "tools/call"), ("mcp-name", "describe_tool")],
        vec![("mcp-method", "tools/call")],
    ] {
        let mut req = Request::post("/mcp")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("authorization", format!("Bearer {}", token()));
        for (k, v) in &headers {
            req = req.header(*k, *v);
        }
        let res = app()
            .oneshot(req.body(Body::from(body.to_string())).unwrap())
            .await
            .unwrap();
        let bytes = axum::body::to_bytes(res.into_body(), 1 << 20)
            .await
            .unwrap();
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["error"]["code"], -32020, "{headers:?}: {v}");
    }
}

/// Issue 17: `describe_tool` describes every tool the conversation can call, a proxied
/// consultation included (its descriptor exactly as `tools/list` shows it), and still
/// refuses a tool outside the allowlist.
#[tokio::test]
async fn describe_tool_describes_proxied_consultations() {
    let provider: Arc<dyn Provider> = Arc::new(TrackShare {
        seen_tokens: Mutex::default(),
    });
    for version in ["2025-06-18", "2026-07-28"] {
        let describe = |name: &str| {
            rpc(
                2,
                "tools/call",
                json!({"name": "describe_tool", "arguments": {"name": name}}),
            )
        };
        let app = app_with(Some(provider.clone()));
        let (_, listed) = post_to(
            app,
            Some(&token()),
            version,
            rpc(1, "tools/list", json!({})),
        )
        .await;
        let published = listed["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "get_user_uploads")
            .cloned()
            .unwrap();
        let app = app_with(Some(provider.clone()));
        let (_, body) = post_to(app, Some(&token()), version, describe("get_user_uploads")).await;
        let envelope = &body["result"]["structuredContent"];
        assert_eq!(envelope["ok"], true, "{body}");
        assert_eq!(envelope["data"], published, "{body}");
        for refused in ["get_matching_sessions", "execute_action", "prepare_action"] {
            let app = app_with(Some(provider.clone()));
            let (_, body) = post_to(app, Some(&token()), version, describe(refused)).await;
            let envelope = &body["result"]["structuredContent"];
            assert_eq!(envelope["error"]["code"], "NOT_FOUND", "{refused}: {body}");
        }
    }
}

/// The token key's store: fails the first `fail` reads, then answers the key; counts reads.
#[derive(Default)]
struct KeyStore {
    fail: std::sync::atomic::AtomicU32,
    reads: std::sync::atomic::AtomicU32,
}

#[async_trait::async_trait]
impl SecretStore for KeyStore {
    async fn put(&self, _: &str, _: &SecretString) -> Result<String, SecretError> {
        unreachable!("the gateway never writes secrets")
    }
    async fn get_current(&self, name: &str) -> Result<Option<(SecretString, String)>, SecretError> {
        use std::sync::atomic::Ordering::SeqCst;
        assert_eq!(name, access::SECRET_NAME);
        self.reads.fetch_add(1, SeqCst);
        if self.fail.load(SeqCst) > 0 {
            self.fail.fetch_sub(1, SeqCst);
            return Err(SecretError::Unavailable("connection reset by peer".into()));
        }
        Ok(Some((key(), "v1".into())))
    }
    async fn get_version(&self, _: &str, _: &str) -> Result<Option<SecretString>, SecretError> {
        unreachable!()
    }
    async fn delete(&self, _: &str) -> Result<(), SecretError> {
        unreachable!()
    }
}

/// Issue 17 (cold start): the token key is read on the first request, not when the gateway
/// is built; a failed read is a typed 503 without its cause and is tried again next time;
/// once read, it is kept.
#[tokio::test]
async fn the_token_key_is_read_lazily_once_and_a_failure_is_retried() {
    use std::sync::atomic::Ordering::SeqCst;
    let store = Arc::new(KeyStore::default());
    store.fail.store(1, SeqCst);
    let lazy = countersign_gateway_fn::TokenKey::lazy(store.clone(), access::SECRET_NAME);
    let app = app_keyed(None, None, lazy);
    assert_eq!(store.reads.load(SeqCst), 0, "nothing is read at init");
    let list = rpc(1, "tools/list", json!({}));
    let (s, body) = post_to(app.clone(), Some(&token()), "2025-06-18", list.clone()).await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "SERVICE_UNAVAILABLE");
    assert!(!body.to_string().contains("connection reset"), "{body}");
    for _ in 0..3 {
        let (s, body) = post_to(app.clone(), Some(&token()), "2025-06-18", list.clone()).await;
        assert_eq!(s, StatusCode::OK, "{body}");
    }
    assert_eq!(
        store.reads.load(SeqCst),
        2,
        "one failed read, then one read kept"
    );
}

/// N-6 (MCP Streamable HTTP): a present `Origin` that is not the gateway's own is answered
/// 403 before anything (with a valid `Host` and a valid token); the gateway's own origin
/// and no `Origin` at all (every non-browser client) are served.
#[tokio::test]
async fn n6_a_disallowed_origin_is_403() {
    let list = rpc(1, "tools/list", json!({}));
    for (origin, want) in [
        (Some("https://evil.example"), StatusCode::FORBIDDEN),
        (Some("null"), StatusCode::FORBIDDEN),
        (Some("http://127.0.0.1.evil.example"), StatusCode::FORBIDDEN),
        (Some("http://127.0.0.1/path"), StatusCode::FORBIDDEN),
        (Some("http://127.0.0.1"), StatusCode::OK),
        (None, StatusCode::OK),
    ] {
        let mut req = Request::post("/mcp")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .header("authorization", format!("Bearer {}", token()));
        if let Some(o) = origin {
            req = req.header("origin", o);
        }
        let res = app()
            .oneshot(req.body(Body::from(list.to_string())).unwrap())
            .await
            .unwrap();
        assert_eq!(res.status(), want, "{origin:?}");
    }
}

/// Security review N11: one person's token takes at most their share of the tenant's
/// gateway calls a minute (a quarter, at least 10); another person of the same tenant is
/// still served when the first is refused.
#[tokio::test]
async fn n11_one_persons_token_cannot_spend_the_whole_tenant_budget() {
    assert_eq!(countersign_gateway_fn::person_share(120), 30);
    assert_eq!(countersign_gateway_fn::person_share(2), 2);
    let provider = Arc::new(TrackShare {
        seen_tokens: Mutex::new(Vec::new()),
    });
    let limiter: Arc<dyn countersign_domain::ports::RateLimiter> =
        Arc::new(countersign_testkit::MemoryStore::default());
    let app = || app_budgeted(Some(provider.clone()), Some((limiter.clone(), 40)));
    let call = || {
        rpc(
            2,
            "tools/call",
            json!({"name": "get_user_uploads", "arguments": {}}),
        )
    };
    let refused = |answer: &Value| answer["result"]["isError"] == true;
    for n in 0..10 {
        let (_, answer) = post_to(app(), Some(&token()), "2025-06-18", call()).await;
        assert!(!refused(&answer), "call {n}: {answer}");
    }
    let (_, eleventh) = post_to(app(), Some(&token()), "2025-06-18", call()).await;
    assert!(refused(&eleventh), "{eleventh}");
    let other = Grant {
        principal: Principal {
            user: UserId::parse("driver-43").unwrap(),
            ..grant().principal
        },
        ..grant()
    };
    let theirs = access::mint(&key(), &other, SystemClock.now(), 300).unwrap();
    let (_, served) = post_to(app(), Some(&theirs), "2025-06-18", call()).await;
    assert!(!refused(&served), "another person is served: {served}");
}
