//! The messages function: reads its configuration once, builds clients once, then serves
//! the widget API (`countersign_chat::api`) and the admin API's certification routes
//! (decision 0026) through Lambda (when `AWS_LAMBDA_RUNTIME_API`
//! is set) or on a local port (`COUNTERSIGN_MESSAGES_ADDR`). Configuration:
//! [`countersign_messages_fn::Config`] (README "Configure").

use countersign_aws::settings::FromEnv as _;

// The allocator every function uses (issue 17: many small, short-lived allocations per
// request; mimalloc serves them at a fraction of glibc malloc's cost).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    countersign_http::serve::init_tracing();
    let config = countersign_messages_fn::Config::from_env()?;
    // I-1: the streamed post runs as its own function and role.
    let principal = if config.response_streaming {
        countersign_aws::sdk::Principal::Stream
    } else {
        countersign_aws::sdk::Principal::Messages
    };
    let sdk = countersign_aws::sdk::sdk_config_as(
        principal,
        countersign_provider_client::roots::system_bundle_pem(),
    )
    .await;
    // G-8: metrics (tool calls, proposal outcomes, confirm latency) as CloudWatch EMF.
    if config.response_streaming {
        // S-1: the template's stream function (a function URL in RESPONSE_STREAM mode); N-5:
        // it serves the streamed post and nothing else.
        let app = countersign_messages_fn::stream_app(&sdk, &config)?;
        let app = countersign_http::emf::with_emf_metrics(app)?;
        return Ok(
            countersign_http::serve::run_streaming(app, &config.addr, "messages API").await?,
        );
    }
    let app =
        countersign_http::emf::with_emf_metrics(countersign_messages_fn::app(&sdk, &config)?)?;
    Ok(countersign_http::serve::run(app, &config.addr, "messages API").await?)
}
