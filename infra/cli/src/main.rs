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
    /// Print a gateway access token (D-4) for one conversation, signed with the platform's
    /// gateway token key. For the local stack and for trying the gateway by hand.
    GatewayToken {
        /// Tenant id (`ten_…`).
        #[arg(long)]
        tenant: String,
        /// The tenant's user id.
        #[arg(long)]
        user: String,
        /// Case id (`case_…`).
        #[arg(long)]
        case: String,
        /// Validity in seconds (at most 900).
        #[arg(long, default_value_t = 300)]
        ttl: i64,
    },
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
        Command::GatewayToken {
            tenant,
            user,
            case,
            ttl,
        } => {
            use countersign_domain::ports::{Clock as _, SecretStore as _};
            let grant = countersign_tools::access::Grant {
                principal: countersign_domain::conversation::Principal {
                    tenant: countersign_domain::ids::TenantId::parse(tenant)?,
                    user: countersign_domain::ids::UserId::parse(user)?,
                },
                case: countersign_domain::ids::CaseId::parse(case)?,
            };
            let secrets = countersign_aws::secrets::SecretsManagerStore::new(
                countersign_aws::secrets::SecretsManagerStore::client(&sdk, None),
                settings.secret_prefix.clone(),
            );
            let (key, _) = secrets
                .get_current(countersign_tools::access::SECRET_NAME)
                .await?
                .context("the gateway token key is missing; run `countersign bootstrap`")?;
            let token = countersign_tools::access::mint(
                &key,
                &grant,
                countersign_aws::system::SystemClock.now(),
                ttl,
            )?;
            writeln!(std::io::stdout().lock(), "{token}")?;
        }
    }
    Ok(())
}
