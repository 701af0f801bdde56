//! The admin function: reads configuration once, builds clients once, then serves the
//! admin router (`countersign_admin::api`) through Lambda (when `AWS_LAMBDA_RUNTIME_API`
//! is set) or on a local port.

use anyhow::Context as _;
use countersign_admin::api::router;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let sdk = aws_config::load_from_env().await;
    let app = router(countersign_admin_fn::state_from_env(&sdk));
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() {
        lambda_http::run(app).await.map_err(|e| anyhow::anyhow!(e))
    } else {
        let addr =
            std::env::var("COUNTERSIGN_ADMIN_ADDR").unwrap_or_else(|_| "127.0.0.1:8788".into());
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        tracing::info!(%addr, "admin API listening");
        axum::serve(listener, app).await.context("serving")
    }
}
