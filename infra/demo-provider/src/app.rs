//! The demo's HTTP application: the MCP endpoint (stateless, or with sessions), the fault
//! middleware, the `/_demo/` endpoints and the bearer-token check, put together.

use crate::DemoConfig;
use crate::control::{apply_faults, control, keys, stats};
use crate::server::{Demo, Handler, authenticate};
use axum::middleware;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::SocketAddr;
use std::sync::Arc;

/// `/mcp`, answered by `handler`, its sessions kept by `sessions`.
fn mcp_router<M: SessionManager>(
    handler: Handler,
    sessions: M,
    cfg: StreamableHttpServerConfig,
) -> axum::Router<Arc<Demo>> {
    axum::Router::new().nest_service(
        "/mcp",
        StreamableHttpService::new(move || Ok(handler.clone()), Arc::new(sessions), cfg),
    )
}

/// The router and its shared state.
pub fn router(config: DemoConfig) -> (axum::Router, Arc<Demo>) {
    let demo = Arc::new(Demo::new(config));
    let handler = Handler(demo.clone());
    let mcp = if demo.session_mode() {
        let cfg = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(true)
            .with_json_response(false)
            .with_sse_keep_alive(None);
        mcp_router(handler, LocalSessionManager::default(), cfg)
    } else {
        let cfg = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true);
        mcp_router(handler, NeverSessionManager::default(), cfg)
    };
    let app = mcp
        .layer(middleware::from_fn_with_state(demo.clone(), apply_faults))
        .route("/_demo/stats", axum::routing::get(stats))
        .route("/_demo/control", axum::routing::post(control))
        .route("/_demo/keys", axum::routing::post(keys))
        .with_state(demo.clone())
        .layer(middleware::from_fn_with_state(demo.clone(), authenticate));
    (app, demo)
}

/// Serves on `addr` (use port 0 for a free one) in a background task.
pub async fn spawn(
    config: DemoConfig,
    addr: SocketAddr,
) -> std::io::Result<(SocketAddr, Arc<Demo>)> {
    let (app, demo) = router(config);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "demo provider stopped");
        }
    });
    Ok((bound, demo))
}
