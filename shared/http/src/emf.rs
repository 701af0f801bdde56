//! G-8: every function's metrics leave as CloudWatch Embedded Metric Format lines on
//! stdout (namespace `Countersign`), flushed after every request, so each Lambda invocation
//! writes its own documents and CloudWatch turns them into metrics without an API call.

/// Installs the process's metrics recorder and returns `app` with a layer that flushes the
/// metrics after each request. Call once per process.
pub fn with_emf_metrics(app: axum::Router) -> std::io::Result<axum::Router> {
    let metrics = metrics_cloudwatch_embedded::Builder::new()
        .cloudwatch_namespace("Countersign")
        .init()
        .map_err(|e| std::io::Error::other(format!("installing the EMF metrics recorder: {e}")))?;
    Ok(app.layer(axum::middleware::from_fn(
        move |req: axum::extract::Request, next: axum::middleware::Next| async move {
            let res = next.run(req).await;
            if let Err(e) = metrics.flush(std::io::stdout()) {
                tracing::warn!(error = %e, "flushing metrics failed");
            }
            res
        },
    )))
}
