//! The gateway function: reads configuration once, builds clients once, then serves the
//! router through Lambda (when `AWS_LAMBDA_RUNTIME_API` is set) or on a local port.

use countersign_gateway_fn::router;

// The allocator every function uses (issue 17: many small, short-lived allocations per
// request; mimalloc serves them at a fraction of glibc malloc's cost).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use countersign_aws::settings::FromEnv as _;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    countersign_http::serve::init_tracing();
    let config = countersign_gateway_fn::wiring::Config::from_env()?;
    let sdk = countersign_aws::sdk::sdk_config_as(
        countersign_aws::sdk::Principal::Gateway,
        countersign_provider_client::roots::system_bundle_pem(),
    )
    .await;
    let gateway = countersign_gateway_fn::wiring::gateway(&sdk, &config).await?;
    // G-8: metrics as CloudWatch EMF, flushed after every request.
    let app = countersign_http::emf::with_emf_metrics(router(gateway))?;
    Ok(countersign_http::serve::run(app, &config.addr, "gateway").await?)
}
