//! How every function runs its router: through Lambda when `AWS_LAMBDA_RUNTIME_API` is
//! set (`lambda_http::run` panics without the runtime's variables), otherwise on a local
//! port, so the code a developer runs locally is the code that runs in Lambda.

/// Whether this process runs inside Lambda (the runtime sets `AWS_LAMBDA_RUNTIME_API`).
pub fn in_lambda() -> bool {
    std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some()
}

/// JSON logs to stdout, filtered by `RUST_LOG`.
///
/// Outside Lambda, the EMF collector's own complaints are off (G-8's metrics are
/// unchanged): a long-running local server flushes its metrics once a second (see `emf`),
/// the collector keeps at most 100 values of a histogram between flushes (EMF's limit per
/// document), and past that it logs an error for every value it drops — under load, one
/// log line per request (issue 26's profile).
/// In Lambda every request is flushed, so nothing is dropped and nothing is hidden.
pub fn init_tracing() {
    let mut filter = tracing_subscriber::EnvFilter::from_default_env();
    if !in_lambda()
        && let Ok(quiet) = "metrics_cloudwatch_embedded=off".parse()
    {
        filter = filter.add_directive(quiet);
    }
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .init();
}

/// Serves `app` through Lambda, or on `local_addr` outside it.
pub async fn run(app: axum::Router, local_addr: &str, what: &str) -> std::io::Result<()> {
    if in_lambda() {
        return lambda_http::run(app).await.map_err(std::io::Error::other);
    }
    let listener = tokio::net::TcpListener::bind(local_addr).await?;
    tracing::info!(addr = %local_addr, "{what} listening");
    axum::serve(listener, app).await
}

/// [`run`] for a function behind a function URL in `RESPONSE_STREAM` mode (S-1, decision
/// 0046): inside Lambda, the streaming runner, which sends each piece of a response body
/// as it is produced; outside, the same local server (which streams anyway).
pub async fn run_streaming(app: axum::Router, local_addr: &str, what: &str) -> std::io::Result<()> {
    if in_lambda() {
        return lambda_http::run_with_streaming_response(app)
            .await
            .map_err(std::io::Error::other);
    }
    run(app, local_addr, what).await
}
