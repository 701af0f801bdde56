//! The gateway function: reads configuration once, builds clients once, then serves the
//! router through Lambda (when `AWS_LAMBDA_RUNTIME_API` is set) or on a local port.

use countersign_gateway::router;

use countersign_aws::settings::FromEnv as _;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    countersign_http::serve::init_tracing();
    let config = countersign_gateway::wiring::Config::from_env()?;
    let sdk = aws_config::load_from_env().await;
    let gateway = countersign_gateway::wiring::gateway(&sdk, &config).await?;
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
    Ok(countersign_http::serve::run(app, &config.addr, "gateway").await?)
}
