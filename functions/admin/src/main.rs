//! The admin function: reads its configuration once, builds clients once, then serves the
//! admin router (`countersign_admin::api`) through Lambda (when `AWS_LAMBDA_RUNTIME_API`
//! is set) or on a local port (`COUNTERSIGN_ADMIN_ADDR`).

use countersign_aws::settings::FromEnv as _;

// The allocator every function uses (issue 17: many small, short-lived allocations per
// request; mimalloc serves them at a fraction of glibc malloc's cost).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    countersign_http::serve::init_tracing();
    let config = countersign_admin_fn::Config::from_env()?;
    let sdk = countersign_aws::sdk::sdk_config_as(
        countersign_aws::sdk::Principal::Admin,
        countersign_provider_client::roots::system_bundle_pem(),
    )
    .await;
    let app = countersign_admin::app(countersign_admin_fn::state(&sdk, &config)?);
    Ok(countersign_http::serve::run(app, &config.addr, "admin API").await?)
}
