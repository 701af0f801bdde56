//! The purge function: in Lambda, one run per scheduled event (`countersign_purge_fn`);
//! outside Lambda, one run now, its report printed (the local stack).

use countersign_domain::ports::Clock as _;
use countersign_domain::retention::RetentionDays;
use std::io::Write as _;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    countersign_http::serve::init_tracing();
    let settings = countersign_aws::AwsSettings::from_env()?;
    let sdk = aws_config::load_from_env().await;
    let store = settings.store(&sdk);
    let keys = settings
        .subject_keys(&sdk)
        .unwrap_or_else(|| std::sync::Arc::new(countersign_domain::ports::NoSubjectKeys));
    let default = settings
        .retention_days
        .and_then(|d| RetentionDays::new(i64::from(d)).ok());
    let once = || async {
        let now = countersign_aws::system::SystemClock.now();
        countersign_purge_fn::run(
            &store,
            keys.as_ref(),
            default,
            now,
            countersign_purge_fn::RUN_BUDGET,
        )
        .await
    };
    if !countersign_http::serve::in_lambda() {
        let mut out = std::io::stdout().lock();
        for r in once().await? {
            writeln!(out, "{}", serde_json::to_string(&r)?)?;
        }
        return Ok(());
    }
    let handler = lambda_http::lambda_runtime::service_fn(
        |_: lambda_http::lambda_runtime::LambdaEvent<serde_json::Value>| async {
            let runs = once().await?;
            for r in &runs {
                tracing::info!(run = %serde_json::to_string(r)?, "purge");
            }
            Ok::<_, lambda_http::Error>(serde_json::json!({"tenants": runs.len()}))
        },
    );
    lambda_http::lambda_runtime::run(handler)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))
}
