//! What the gateway's HTTP tests share: a tenant with a configured provider, tokens, a
//! gateway over in-memory stores.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use countersign_aws::system::SystemClock;
use countersign_domain::config::{UrlPolicy, validate_mcp_config};
use countersign_domain::conversation::Principal;
use countersign_domain::ids::ToolName;
use countersign_domain::ids::{CaseId, TenantId, UserId};
use countersign_domain::ports::{
    Clock, Provider, ProviderContext, ProviderError, ProviderTool, SecretError, SecretStore,
    StoredMcpConfig,
};
use countersign_domain::secret::SecretString;
use countersign_gateway_fn::Gateway;
use countersign_testkit::MemoryStore;
use countersign_tools::access::{self, Grant};
use countersign_tools::builtins::{self, Services};
use countersign_tools::integration::IntegrationService;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::Mutex;

/// Secrets: every tenant's service token is `svc-token`.
pub(crate) struct Secrets;

#[async_trait::async_trait]
impl SecretStore for Secrets {
    async fn put(&self, _: &str, _: &SecretString) -> Result<String, SecretError> {
        Ok("v1".into())
    }
    async fn get_current(&self, _: &str) -> Result<Option<(SecretString, String)>, SecretError> {
        Ok(Some((SecretString::new("svc-token"), "v1".into())))
    }
    async fn get_version(&self, _: &str, _: &str) -> Result<Option<SecretString>, SecretError> {
        Ok(Some(SecretString::new("svc-token")))
    }
    async fn delete(&self, _: &str) -> Result<(), SecretError> {
        Ok(())
    }
}

/// A provider publishing an allowed tool, a tool outside the allowlist and a reserved
/// one; `get_user_uploads` answers per its schema, `get_user_cars` breaks its schema.
pub(crate) struct TrackShare {
    pub(crate) seen_tokens: Mutex<Vec<String>>,
}

pub(crate) fn tool(name: &str) -> ProviderTool {
    let schema = json!({"type": "object", "required": ["uploads"], "properties": {"uploads": {"type": "array"}}});
    ProviderTool {
        name: ToolName::parse(name).unwrap(),
        descriptor: json!({"name": name, "description": "provider tool", "inputSchema": {"type": "object"}, "outputSchema": schema, "annotations": {"readOnlyHint": true}})
            .as_object()
            .unwrap()
            .clone(),
        output_schema: Some(schema),
    }
}

#[async_trait::async_trait]
impl Provider for TrackShare {
    async fn list_tools(&self, ctx: &ProviderContext) -> Result<Vec<ProviderTool>, ProviderError> {
        self.seen_tokens
            .lock()
            .unwrap()
            .push(ctx.service_token.expose().to_owned());
        Ok(vec![
            tool("get_user_uploads"),
            tool("get_user_cars"),
            tool("get_matching_sessions"),
            tool("execute_action"),
        ])
    }
    async fn call_tool(
        &self,
        _: &ProviderContext,
        name: &str,
        _: &serde_json::Map<String, Value>,
        _: Option<countersign_domain::ports::Confirmation<'_>>,
    ) -> Result<Value, ProviderError> {
        Ok(match name {
            "get_user_uploads" => {
                json!({"content": [{"type": "text", "text": "{\"uploads\":[]}"}], "structuredContent": {"uploads": []}})
            }
            _ => {
                json!({"content": [{"type": "text", "text": "{}"}], "structuredContent": {"uploads": "wrong"}})
            }
        })
    }
}

pub(crate) const ULID: &str = "01JDZ6Y5X1QW9T3V7N2K4M8P0R";

pub(crate) fn key() -> SecretString {
    SecretString::new("test-gateway-key-0123456789abcdef")
}

pub(crate) fn grant() -> Grant {
    Grant {
        principal: Principal {
            tenant: TenantId::from_ulid_text(ULID).unwrap(),
            user: UserId::parse("driver-42").unwrap(),
        },
        case: CaseId::from_ulid_text(ULID).unwrap(),
    }
}

pub(crate) fn gateway_keyed(
    provider: Option<Arc<dyn Provider>>,
    budget: Option<(Arc<dyn countersign_domain::ports::RateLimiter>, u32)>,
    token_key: countersign_gateway_fn::TokenKey,
) -> Gateway {
    let fake = Arc::new(MemoryStore::default());
    let config = validate_mcp_config(
        &json!({
            "serverUrl": "https://mcp.trackshare.example.com/mcp",
            "serviceToken": "svc-token",
            "allowedTools": ["get_user_uploads", "get_user_cars"]
        }),
        UrlPolicy::default(),
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
    Gateway {
        registry: builtins::consultation_registry().unwrap(),
        services: Services {
            conversations: fake.clone(),
            tenants: fake.clone(),
            actions: None,
        },
        token_key,
        clock: Arc::new(SystemClock),
        allowed_hosts: vec![],
        integration: provider
            .map(|p| Arc::new(IntegrationService::new(fake, Arc::new(Secrets), p))),
        budget,
        links: None,
        public_url: None,
        page_url: None,
    }
}

pub(crate) fn token() -> String {
    access::mint(&key(), &grant(), SystemClock.now(), 300).unwrap()
}

pub(crate) fn rpc(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// One JSON-RPC request to the gateway `app` in `version`'s framing (2026-07-28: no
/// initialize; version, method and tool name in `_meta` and headers).
pub(crate) async fn post_to(
    app: axum::Router,
    token: Option<&str>,
    version: &str,
    body: Value,
) -> (http::StatusCode, Value) {
    let mut body = body;
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    let mut req = http::Request::post("/mcp")
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
        // A caller that set `_meta` (its capabilities) keeps it.
        if body["params"].get("_meta").is_none() {
            body["params"]["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": version,
                "io.modelcontextprotocol/clientCapabilities": {}
            });
        }
    }
    let res = tower::ServiceExt::oneshot(
        app,
        req.body(axum::body::Body::from(body.to_string())).unwrap(),
    )
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
