//! G-8: every function's metrics leave as CloudWatch Embedded Metric Format lines on
//! stdout (namespace `Countersign`), flushed after every request in Lambda, so each invocation
//! writes its own documents and CloudWatch turns them into metrics without an API call.

/// Installs the process's metrics recorder and returns `app` ready to emit them. In Lambda
/// (`AWS_LAMBDA_RUNTIME_API` set) a layer flushes after each request, since the runtime may
/// freeze the process as soon as the answer is sent. A long-running local server flushes
/// once a second instead: a write to stdout per request cost the gateway a tenth of its
/// time under load (issue 26). Call once per process, inside the Tokio runtime.
pub fn with_emf_metrics(app: axum::Router) -> std::io::Result<axum::Router> {
    let in_lambda = crate::serve::in_lambda();
    let mut builder =
        metrics_cloudwatch_embedded::Builder::new().cloudwatch_namespace("Countersign");
    if !in_lambda {
        builder = builder.with_auto_flush_interval(std::time::Duration::from_secs(1));
    }
    let metrics = builder
        .init()
        .map_err(|e| std::io::Error::other(format!("installing the EMF metrics recorder: {e}")))?;
    if !in_lambda {
        return Ok(app);
    }
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
