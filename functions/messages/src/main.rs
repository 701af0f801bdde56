//! The messages function: reads configuration once, builds clients once, then serves the
//! widget API (`countersign_chat::api`) through Lambda (when `AWS_LAMBDA_RUNTIME_API` is
//! set) or on a local port (`COUNTERSIGN_MESSAGES_ADDR`, default 127.0.0.1:8789).
//! Configuration: `countersign_messages::ENV` (README "Configure").

use anyhow::Context as _;
use countersign_chat::api::router;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let sdk = aws_config::load_from_env().await;
    let app = router(countersign_messages::state_from_env(&sdk)?);
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() {
        lambda_http::run(app).await.map_err(|e| anyhow::anyhow!(e))
    } else {
        let addr =
            std::env::var("COUNTERSIGN_MESSAGES_ADDR").unwrap_or_else(|_| "127.0.0.1:8789".into());
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        tracing::info!(%addr, "messages API listening");
        axum::serve(listener, app).await.context("serving")
    }
}
