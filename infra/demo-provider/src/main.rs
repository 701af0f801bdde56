//! `demo-provider`: TrackShare on loopback for the local stack.
//!
//! Environment: `DEMO_PROVIDER_ADDR` (default `127.0.0.1:8790`), `DEMO_PROVIDER_TOKEN`
//! (the service token tenants configure; required), `DEMO_PROVIDER_TENANT` (optional),
//! `COUNTERSIGN_ISSUER`, `DEMO_PROVIDER_AUDIENCE` (default `http://<addr>/mcp`),
//! `DEMO_PROVIDER_SESSION_MODE=1`, `DEMO_PROVIDER_JWKS_URL` (the platform's
//! `/.well-known/jwks.json`: keys are followed from it). Or install a key by hand with
//! `POST /_demo/keys`.

use anyhow::Context as _;
use countersign_demo_provider::{DemoConfig, spawn};
use std::net::SocketAddr;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let addr: SocketAddr = std::env::var("DEMO_PROVIDER_ADDR")
        .unwrap_or_else(|_| "127.0.0.1:8790".into())
        .parse()
        .context("DEMO_PROVIDER_ADDR")?;
    anyhow::ensure!(
        addr.ip().is_loopback(),
        "the demo provider serves on loopback only"
    );
    let token = std::env::var("DEMO_PROVIDER_TOKEN").context("DEMO_PROVIDER_TOKEN is required")?;
    let issuer = std::env::var("COUNTERSIGN_ISSUER")
        .unwrap_or_else(|_| "https://support.example.com/mcp-actions".into());
    let audience =
        std::env::var("DEMO_PROVIDER_AUDIENCE").unwrap_or_else(|_| format!("http://{addr}/mcp"));
    let mut config = DemoConfig::new(token, issuer, audience);
    config.tenant_id = std::env::var("DEMO_PROVIDER_TENANT").ok();
    config.jwks_url = std::env::var("DEMO_PROVIDER_JWKS_URL").ok();
    config.session_mode = std::env::var("DEMO_PROVIDER_SESSION_MODE").is_ok_and(|v| v == "1");
    let (bound, _demo) = spawn(config, addr).await?;
    tracing::info!("demo provider (TrackShare) on http://{bound}/mcp");
    // Runs until the process is stopped (Ctrl-C ends it).
    std::future::pending::<()>().await;
    Ok(())
}
