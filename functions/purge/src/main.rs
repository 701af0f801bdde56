//! The purge function: in Lambda, one run per scheduled event (`countersign_purge_fn`):
//! the daily purge, or (an event whose `job` is `erasures`, once a minute) the erasure
//! worker (N-3); outside Lambda, one purge run now, its report printed (the local stack,
//! whose dev server runs the erasure worker itself).

use countersign_domain::ports::Clock as _;
use countersign_domain::retention::RetentionDays;
use std::io::Write as _;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    countersign_http::serve::init_tracing();
    let settings = countersign_aws::AwsSettings::from_env()?;
    // I-1: the purge function's role (its erasure worker too); on AWS, Lambda's own. I-2:
    // the one configuration's timeouts.
    let sdk =
        countersign_aws::sdk::sdk_config_as(countersign_aws::sdk::Principal::Purge, None).await;
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
    let worker = countersign_admin::erasure::Worker {
        jobs: std::sync::Arc::new(store.clone()),
        conversations: std::sync::Arc::new(store.clone()),
        tenants: std::sync::Arc::new(store.clone()),
        subjects: keys.clone(),
        checkpoint_signer: std::sync::Arc::new(settings.checkpoint_signer(&sdk)),
        issuer: countersign_aws::settings::Env::new(&|k| std::env::var(k).ok()).issuer(),
        ids: std::sync::Arc::new(countersign_aws::system::UlidIds::default()),
        clock: std::sync::Arc::new(countersign_aws::system::SystemClock),
    };
    let worker = &worker;
    let handler = lambda_http::lambda_runtime::service_fn(
        |event: lambda_http::lambda_runtime::LambdaEvent<serde_json::Value>| async move {
            if countersign_purge_fn::wants_erasures(&event.payload) {
                let budget = countersign_admin::erasure::Budget::lasting(
                    countersign_purge_fn::WORKER_BUDGET,
                );
                let run = countersign_admin::erasure::run_queued(worker, budget).await?;
                tracing::info!(run = %serde_json::to_string(&run)?, "erasures");
                return Ok::<_, lambda_http::Error>(serde_json::to_value(&run)?);
            }
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
