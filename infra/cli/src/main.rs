//! `countersign`: the operator CLI. Works against real AWS and the local stack alike
//! (standard AWS SDK configuration: `AWS_PROFILE`, `AWS_REGION`, `AWS_ENDPOINT_URL`, …).

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use countersign_aws::AwsSettings;
use countersign_domain::ports::Tenants;
use std::io::Write as _;

mod audit;
mod erase;
mod keys;
mod purge;
mod verify;

#[derive(Debug, Parser)]
#[command(name = "countersign", version, about = "Countersign operator CLI")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum TenantCommand {
    /// Register a tenant: prints its id and a one-time admin key (only its hash is kept).
    Create {
        /// Display name.
        #[arg(long)]
        name: String,
        /// Language of the chat's fixed texts: en or pt.
        #[arg(long, default_value = "en")]
        language: String,
    },
    /// Replace a tenant's admin key (the old one stops working at once); prints the new
    /// key once.
    RotateAdminKey {
        /// Tenant id (`ten_…`).
        #[arg(long)]
        tenant: String,
    },
    /// List tenants (id, name, language, creation time).
    List,
}

#[derive(Debug, Subcommand)]
enum AuditCommand {
    /// Walk every hash chain of the tenant's audit trail and name the first broken link
    /// (exit status 1 when one is broken).
    Verify {
        /// Tenant id (`ten_…`).
        #[arg(long)]
        tenant: String,
        /// A checkpoint the tenant kept (the checkpoint API's answer, as a JSON file):
        /// also prove the trail extends it — nothing it covered removed or rewritten (L-3).
        #[arg(long, value_name = "CHECKPOINT.json")]
        since: Option<std::path::PathBuf>,
    },
    /// Print the tenant's audit trail with its chain fields as JSON, for
    /// `docs/recipes/verify_audit_export.py` (L-3).
    Export {
        /// Tenant id (`ten_…`).
        #[arg(long)]
        tenant: String,
    },
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Register and manage tenants (C-1).
    #[command(subcommand)]
    Tenant(TenantCommand),
    /// Check a tenant's audit trail (L-2).
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Rotate the proof signing key with overlap (K-2): list, announce, activate, retire.
    /// With `--checkpoint`, the audit checkpoint key and its own ring (N-8).
    Keys(keys::KeysArgs),
    /// Create the DynamoDB table, the KMS signing key and its alias when missing
    /// (idempotent). Names come from COUNTERSIGN_TABLE / COUNTERSIGN_SIGNING_KEY.
    Bootstrap {
        #[command(flatten)]
        roles: keys::KeyRoles,
    },
    /// O-2: check a deployed stack: each route answers as documented, the JWKS lists
    /// exactly the keys KMS returns for the key ring (read with COUNTERSIGN_TABLE and this
    /// shell's AWS credentials), and a synthetic tenant's person gets an answer. Prints one
    /// line per check; exits 1 when any failed.
    VerifyDeployment {
        /// The stack's API base URL (the `ApiUrl` output), e.g. https://abc.execute-api.eu-west-1.amazonaws.com
        #[arg(long)]
        url: String,
        /// The stream function's URL (the `StreamUrl` output), for the streamed answer's
        /// check (S-1).
        #[arg(long)]
        stream_url: Option<String>,
        /// A widget JWT of a synthetic tenant's person (its end-to-end checks are failures
        /// without one).
        #[arg(long)]
        widget_jwt: Option<String>,
        /// What that person says.
        #[arg(long, default_value = "my cars")]
        message: String,
    },
    /// purge the conversations idle past their tenant's retention (`retentionDays`, or
    /// COUNTERSIGN_RETENTION_DAYS for a tenant without one); conversations with a pending,
    /// executing or unknown proposal are kept. One JSON line per tenant.
    Purge {
        /// Only this tenant (`ten_…`); every tenant without it.
        #[arg(long)]
        tenant: Option<String>,
        /// First index the conversations created before the purge existed (one scan of
        /// the table; run once after upgrading).
        #[arg(long)]
        backfill: bool,
    },
    /// erase a person of a tenant through the deployment's admin API: their
    /// conversations are purged (unresolved ones reported, purged once resolved), their
    /// personal data in the audit trail made unreadable; waits for the job (`--wait`) and
    /// prints it, with its signed receipt once done. The
    /// tenant's admin key is read from COUNTERSIGN_ADMIN_KEY.
    Erase {
        /// The API base URL (the stack's `ApiUrl` output; the local stack's address).
        #[arg(long)]
        api: String,
        /// Tenant id (`ten_…`).
        #[arg(long)]
        tenant: String,
        /// The person, as the tenant's site names them.
        #[arg(long)]
        person: String,
        /// How long to wait for the erasure worker (it runs about once a minute) before
        /// printing where the job stands; 0 prints the queued job at once.
        #[arg(long, default_value_t = 180)]
        wait: u64,
    },
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
    let settings = AwsSettings::from_env()?;
    match cli.command {
        Command::Bootstrap { roles } => bootstrap(roles.users(), &sdk, &settings).await?,
        Command::Tenant(cmd) => tenant(cmd, &sdk, &settings).await?,
        Command::Keys(cmd) => keys::run(cmd, &sdk, &settings).await?,
        Command::VerifyDeployment {
            url,
            stream_url,
            widget_jwt,
            message,
        } => {
            let stream_url = stream_url.as_deref();
            let jwt = widget_jwt.as_deref();
            if !verify::run(&url, stream_url, jwt, &message, &sdk, &settings).await? {
                std::process::exit(1);
            }
        }
        Command::Audit(AuditCommand::Verify { tenant, since }) => {
            if !audit::verify(tenant, since.as_deref(), &sdk, &settings).await? {
                std::process::exit(1);
            }
        }
        Command::Erase {
            api,
            tenant,
            person,
            wait,
        } => {
            erase::run(&api, &tenant, &person, std::time::Duration::from_secs(wait)).await?;
        }
        Command::Purge { tenant, backfill } => {
            purge::run(tenant, backfill, &sdk, &settings).await?;
        }
        Command::Audit(AuditCommand::Export { tenant }) => {
            audit::export(tenant, &sdk, &settings).await?;
        }
        Command::GatewayToken {
            tenant,
            user,
            case,
            ttl,
        } => gateway_token(tenant, user, case, ttl, &sdk, &settings).await?,
    }
    Ok(())
}

/// `gateway-token`: a gateway access token (D-4) for one conversation, printed.
async fn gateway_token(
    tenant: String,
    user: String,
    case: String,
    ttl: i64,
    sdk: &aws_config::SdkConfig,
    settings: &AwsSettings,
) -> anyhow::Result<()> {
    use countersign_domain::ports::{Clock as _, SecretStore as _};
    let grant = countersign_tools::access::Grant {
        principal: countersign_domain::conversation::Principal {
            tenant: countersign_domain::ids::TenantId::parse(tenant)?,
            user: countersign_domain::ids::UserId::parse(user)?,
        },
        case: countersign_domain::ids::CaseId::parse(case)?,
    };
    let secrets = countersign_aws::secrets::SecretsManagerStore::new(
        countersign_aws::secrets::SecretsManagerStore::client(sdk, None),
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
    Ok(())
}

/// `bootstrap`: creates what is missing and says what it found.
async fn bootstrap(
    users: Option<countersign_aws::bootstrap::KeyUsers>,
    sdk: &aws_config::SdkConfig,
    settings: &AwsSettings,
) -> anyhow::Result<()> {
    let r = countersign_aws::bootstrap::bootstrap_with(sdk, settings, users.as_ref())
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
    Ok(())
}

async fn tenant(
    cmd: TenantCommand,
    sdk: &aws_config::SdkConfig,
    settings: &AwsSettings,
) -> anyhow::Result<()> {
    use countersign_admin::tenants;

    let store = countersign_aws::dynamo::DynamoStore::new(
        countersign_aws::dynamo::DynamoStore::client(sdk, None),
        &settings.table,
    );
    let mut out = std::io::stdout().lock();
    match cmd {
        TenantCommand::Create { name, language } => {
            let language = match language.as_str() {
                "en" => countersign_domain::texts::Language::En,
                "pt" => countersign_domain::texts::Language::Pt,
                other => anyhow::bail!("unknown language {other:?}: use en or pt"),
            };
            let r = tenants::register(
                &store,
                &countersign_aws::system::UlidIds::default(),
                &countersign_aws::system::SystemClock,
                &name,
                language,
            )
            .await?;
            writeln!(out, "tenant    {}", r.tenant.id)?;
            writeln!(out, "admin key {}", r.admin_key.expose())?;
            writeln!(
                out,
                "(the admin key is shown once; only its hash is stored)"
            )?;
        }
        TenantCommand::RotateAdminKey { tenant } => {
            let id = countersign_domain::ids::TenantId::parse(tenant)?;
            let key = tenants::rotate_admin_key(
                &store,
                &countersign_aws::system::UlidIds::default(),
                &countersign_aws::system::SystemClock,
                &id,
            )
            .await?;
            writeln!(out, "admin key {}", key.expose())?;
            writeln!(out, "(shown once; the previous key no longer works)")?;
        }
        TenantCommand::List => {
            for t in store.list_tenants().await? {
                writeln!(
                    out,
                    "{}\t{}\t{:?}\t{}",
                    t.id, t.name, t.language, t.created_at
                )?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// K-2: a kid is base64url (an RFC 7638 thumbprint) and one in 64 begins with `-`; the
    /// commands that name a kid take it as the value (the README's `keys retire --kid …`
    /// and the CLI's own hints failed on such a kid: "unexpected argument").
    #[test]
    fn k2_a_kid_that_begins_with_a_hyphen_is_a_kid() {
        for command in ["activate", "retire"] {
            let parsed = Cli::try_parse_from(["countersign", "keys", command, "--kid", "-3aB_x"]);
            assert!(parsed.is_ok(), "keys {command}: {:?}", parsed.err());
        }
    }
}
