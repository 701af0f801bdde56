//! The gateway function: reads configuration once, builds clients once, then serves the
//! router through Lambda (when `AWS_LAMBDA_RUNTIME_API` is set) or on a local port.

use anyhow::Context as _;
use countersign_gateway::router;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let sdk = aws_config::load_from_env().await;
    let gateway = countersign_gateway::wiring::from_env(&sdk).await?;
    // G-8: metrics leave as CloudWatch Embedded Metric Format lines on stdout, flushed
    // after every request (so each Lambda invocation writes its own document).
    let metrics = metrics_cloudwatch_embedded::Builder::new()
        .cloudwatch_namespace("Countersign")
        .init()
        .map_err(|e| anyhow::anyhow!("installing the EMF metrics recorder: {e}"))?;
    let app = router(gateway).layer(axum::middleware::from_fn(
        move |req: axum::extract::Request, next: axum::middleware::Next| async move {
            let res = next.run(req).await;
            if let Err(e) = metrics.flush(std::io::stdout()) {
                tracing::warn!(error = %e, "flushing metrics failed");
            }
            res
        },
    ));
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() {
        lambda_http::run(app).await.map_err(|e| anyhow::anyhow!(e))
    } else {
        let addr =
            std::env::var("COUNTERSIGN_GATEWAY_ADDR").unwrap_or_else(|_| "127.0.0.1:8787".into());
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        tracing::info!(%addr, "gateway listening");
        axum::serve(listener, app).await.context("serving")
    }
}
