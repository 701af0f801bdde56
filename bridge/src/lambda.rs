//! `countersign-bridge-lambda`: the bridge as an AWS Lambda behind a function URL (B-4),
//! its store in DynamoDB. Every setting comes from the environment (the flags of
//! `countersign-bridge serve`, by their variables; `bridge/template.yaml` sets them), the
//! configuration file is packaged beside the binary (`bridge.toml`), and the service
//! token is read from Secrets Manager (`COUNTERSIGN_BRIDGE_SERVICE_TOKEN_SECRET`).

use clap::Parser;

#[derive(Parser)]
#[command(name = "countersign-bridge-lambda")]
struct Lambda {
    #[command(flatten)]
    serve: countersign_bridge::run::ServeArgs,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .json()
        .with_writer(std::io::stdout)
        .init();
    let args = Lambda::parse();
    if args.serve.table.is_none() {
        anyhow::bail!("COUNTERSIGN_BRIDGE_TABLE is required: a Lambda keeps its store in DynamoDB");
    }
    countersign_bridge::run::serve(args.serve).await
}
