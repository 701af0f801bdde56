//! `countersign`: the operator CLI. Works against real AWS and the local stack alike
//! (standard AWS SDK configuration: `AWS_PROFILE`, `AWS_REGION`, `AWS_ENDPOINT_URL`, …).

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use countersign_aws::AwsSettings;
use std::io::Write as _;

#[derive(Debug, Parser)]
#[command(name = "countersign", version, about = "Countersign operator CLI")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create the DynamoDB table, the KMS signing key and its alias when missing
    /// (idempotent). Names come from COUNTERSIGN_TABLE / COUNTERSIGN_SIGNING_KEY.
    Bootstrap,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let sdk = aws_config::load_from_env().await;
    let settings = AwsSettings::from_env();
    match cli.command {
        Command::Bootstrap => {
            let r = countersign_aws::bootstrap::bootstrap(&sdk, &settings)
                .await
                .context("bootstrap")?;
            let mut out = std::io::stdout().lock();
            writeln!(
                out,
                "table {} ({})",
                r.table,
                if r.table_created { "created" } else { "exists" }
            )?;
            match r.signing_key_id {
                Some(id) => writeln!(
                    out,
                    "signing key {id} ({})",
                    if r.key_created { "created" } else { "exists" }
                )?,
                None => writeln!(out, "no signing key configured")?,
            }
            writeln!(
                out,
                "gateway token key ({})",
                if r.gateway_key_created {
                    "created"
                } else {
                    "exists"
                }
            )?;
        }
    }
    Ok(())
}
