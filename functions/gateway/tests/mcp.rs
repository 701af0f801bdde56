//! The gateway over HTTP, in memory (`Router::oneshot`): MCP Streamable HTTP, stateless,
//! JSON responses, D-4 tokens.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use axum::body::Body;
use countersign_aws::system::SystemClock;
use countersign_domain::conversation::Principal;
use countersign_domain::ids::{CaseId, TenantId, UserId};
use countersign_domain::ports::Clock;
use countersign_domain::secret::SecretString;
use countersign_gateway::{Gateway, router};
use countersign_tools::access::{self, Grant};
use countersign_tools::builtins::{self, Services};
use countersign_tools::testing::Fake;
use http::{Request, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;
use tower::ServiceExt as _;

const ULID: &str = "01JDZ6Y5X1QW9T3V7N2K4M8P0R";

fn key() -> SecretString {
    SecretString::new("test-gateway-key-0123456789abcdef")
}

fn grant() -> Grant {
    Grant {
        principal: Principal {
            tenant: TenantId::from_ulid_text(ULID).unwrap(),
            user: UserId::parse("driver-42").unwrap(),
        },
        case: CaseId::from_ulid_text(ULID).unwrap(),
    }
}

fn app() -> axum::Router {
    let fake = Arc::new(Fake::default());
    router(Gateway {
        registry: builtins::registry().unwrap(),
        services: Services {
            conversations: fake.clone(),
            tenants: fake,
            actions: None,
        },
        token_key: key(),
        clock: Arc::new(SystemClock),
        allowed_hosts: vec![],
    })
}

fn token() -> String {
    access::mint(&key(), &grant(), SystemClock.now(), 300).unwrap()
}

async fn post(token: Option<&str>, version: &str, body: Value) -> (StatusCode, Value) {
    let mut body = body;
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    let mut req = Request::post("/mcp")
        .header("host", "127.0.0.1")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", version);
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    if version == "2026-07-28" {
        // 2026-07-28: no initialize; the version travels in `_meta` and the method (and
        // tool name) in headers.
        req = req.header("mcp-method", method.as_str());
        if let Some(name) = body["params"]["name"].as_str() {
            req = req.header("mcp-name", name);
        }
        body["params"]["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": {}
        });
    }
    let res = app()
        .oneshot(req.body(Body::from(body.to_string())).unwrap())
        .await
        .unwrap();
    let status = res.status();
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 20)
        .await
        .unwrap();
    let v = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| json!({"raw": String::from_utf8_lossy(&bytes)}));
    (status, v)
}

fn rpc(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The bootstrap creates the secret the gateway reads.
#[test]
fn d4_token_key_names_agree() {
    assert_eq!(
        access::SECRET_NAME,
        countersign_aws::bootstrap::GATEWAY_TOKEN_KEY
    );
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
            vec![
                "action_status",
                "describe_tool",
                "list_operations",
                "prepare_action"
            ]
        );
        for t in tools {
            assert_eq!(t["_meta"]["version"], "1.0.0", "{t}");
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
        json!({"tool": "describe_tool", "version": "1.0.0"})
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
