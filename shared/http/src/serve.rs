//! How every function runs its router: through Lambda when `AWS_LAMBDA_RUNTIME_API` is
//! set (`lambda_http::run` panics without the runtime's variables), otherwise on a local
//! port, so the code a developer runs locally is the code that runs in Lambda.

/// JSON logs to stdout, filtered by `RUST_LOG`.
pub fn init_tracing() {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
}

/// Serves `app` through Lambda, or on `local_addr` outside it.
pub async fn run(app: axum::Router, local_addr: &str, what: &str) -> std::io::Result<()> {
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() {
        return lambda_http::run(app).await.map_err(std::io::Error::other);
    }
    let listener = tokio::net::TcpListener::bind(local_addr).await?;
    tracing::info!(addr = %local_addr, "{what} listening");
    axum::serve(listener, app).await
}
