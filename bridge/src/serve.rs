//! B-1, B-4: the bridge on the wire. `POST /mcp` is rmcp's Streamable HTTP service
//! (stateless, JSON answers) behind the service token; `GET /health` says whether the
//! upstream answers; `GET /metrics` (token required) gives the counters.

use crate::engine::Bridge;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use countersign_provider_kit::{Identity, headers};
use rmcp::ErrorData as McpError;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use std::net::SocketAddr;
use std::sync::Arc;
use subtle::ConstantTimeEq as _;

/// `X-MCP-Language`: the person's language as a BCP 47 tag (`en`, `pt-BR`), optional.
pub const LANGUAGE: &str = "x-mcp-language";

#[derive(Clone)]
struct Handler(Arc<Bridge>);

impl ServerHandler for Handler {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "countersign-bridge",
                env!("CARGO_PKG_VERSION"),
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.0.catalog()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let empty = http::HeaderMap::new();
        let hdrs = ctx
            .extensions
            .get::<http::request::Parts>()
            .map_or(&empty, |p| &p.headers);
        let who = Identity::from_headers(hdrs)
            .map_err(|e| McpError::invalid_params(e.to_string(), None))?;
        let proof = headers::confirmation(hdrs).ok();
        let language = hdrs.get(LANGUAGE).and_then(|v| v.to_str().ok());
        let args = request.arguments.clone().unwrap_or_default();
        let result = self
            .0
            .call(&who, &request.name, args, proof.as_deref(), language)
            .await;
        Ok(CallToolResponse::Complete(result))
    }
}

/// The service token the platform must present.
#[derive(Clone)]
struct Token(Arc<str>);

fn bearer_ok(token: &Token, req: &Request) -> bool {
    req.headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|t| bool::from(t.as_bytes().ct_eq(token.0.as_bytes())))
}

async fn authenticate(State(token): State<Token>, req: Request, next: Next) -> Response {
    if !bearer_ok(&token, &req) {
        let body = json!({"error": "a valid service token is required"});
        return (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
    }
    next.run(req).await
}

async fn health(State(bridge): State<Arc<Bridge>>) -> Response {
    match bridge.upstream_health().await {
        Ok(()) => axum::Json(json!({"status": "ok"})).into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "health: upstream");
            let body = json!({"status": "upstream unavailable"});
            (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response()
        }
    }
}

async fn metrics(State(bridge): State<Arc<Bridge>>) -> Response {
    (
        [("content-type", "text/plain; version=0.0.4")],
        bridge.metrics.render(),
    )
        .into_response()
}

/// The router: `/mcp` and `/metrics` behind `service_token`, `/health` open.
pub fn router(bridge: Arc<Bridge>, service_token: &str) -> axum::Router {
    let handler = Handler(bridge.clone());
    let cfg = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true);
    let mcp = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(NeverSessionManager::default()),
        cfg,
    );
    let token = Token(Arc::from(service_token));
    let guarded = axum::Router::new()
        .nest_service("/mcp", mcp)
        .route("/metrics", axum::routing::get(metrics))
        .with_state(bridge.clone())
        .layer(middleware::from_fn_with_state(token, authenticate));
    guarded.merge(
        axum::Router::new()
            .route("/health", axum::routing::get(health))
            .with_state(bridge),
    )
}

/// Serves on `addr` in a background task; the bound address.
pub async fn spawn(
    bridge: Arc<Bridge>,
    service_token: &str,
    addr: SocketAddr,
) -> std::io::Result<SocketAddr> {
    let app = router(bridge, service_token);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "bridge stopped serving");
        }
    });
    Ok(bound)
}
