//! `countersign-bridge`: `check <file>` validates a configuration and renders every
//! summary against its sample; `serve <file>` runs the bridge; `settle` lists the writes
//! whose answer was lost and records what the tenant's system shows.

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use countersign_bridge::config::Config;
use countersign_bridge::store::Store as _;
use countersign_bridge::store::sqlite::SqliteStore;
use countersign_bridge::upstream::RmcpUpstream;
use countersign_bridge::{Bridge, Settings};
use countersign_provider_kit::{ActionStatus, Jwks, Verifier};
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

#[derive(Parser)]
#[command(
    name = "countersign-bridge",
    about = "Countersign in front of an existing MCP server"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate the configuration file and render every summary against its sample.
    Check {
        /// The configuration file (TOML).
        file: PathBuf,
    },
    /// Serve the platform (the service token comes from COUNTERSIGN_BRIDGE_SERVICE_TOKEN).
    Serve(Serve),
    /// The writes whose answer was lost: list them, or record what your system shows.
    Settle {
        /// The store file.
        #[arg(
            long,
            env = "COUNTERSIGN_BRIDGE_STORE",
            default_value = "countersign-bridge.db"
        )]
        store: PathBuf,
        #[command(subcommand)]
        what: Settle,
    },
}

#[derive(clap::Args)]
struct Serve {
    /// The configuration file (TOML).
    file: PathBuf,
    /// Where to listen.
    #[arg(
        long,
        env = "COUNTERSIGN_BRIDGE_LISTEN",
        default_value = "127.0.0.1:8791"
    )]
    listen: SocketAddr,
    /// The store file (SQLite).
    #[arg(
        long,
        env = "COUNTERSIGN_BRIDGE_STORE",
        default_value = "countersign-bridge.db"
    )]
    store: PathBuf,
    /// The proofs' issuer (the platform's).
    #[arg(long, env = "COUNTERSIGN_ISSUER")]
    issuer: String,
    /// The proofs' audience: this bridge's URL as the tenant configured it.
    #[arg(long, env = "COUNTERSIGN_BRIDGE_AUDIENCE")]
    audience: String,
    /// The platform's JWKS (`…/.well-known/jwks.json`).
    #[arg(long, env = "COUNTERSIGN_JWKS_URL")]
    jwks_url: String,
    /// The longest an upstream call may take, in seconds.
    #[arg(
        long,
        env = "COUNTERSIGN_BRIDGE_UPSTREAM_TIMEOUT",
        default_value_t = 30
    )]
    upstream_timeout: u64,
}

#[derive(Subcommand)]
enum Settle {
    /// List every write still `executing` (its answer was lost).
    Check,
    /// Record what the tenant's system shows for one of them.
    Record {
        /// The tenant.
        tenant: String,
        /// The action.
        action: String,
        /// What the system shows.
        #[arg(value_parser = ["completed", "failed"])]
        outcome: String,
    },
}

fn check(file: &std::path::Path) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(file)?;
    let mut out = std::io::stdout().lock();
    let config = match Config::parse(&text) {
        Ok(c) => c,
        Err(errors) => {
            for e in errors.0 {
                writeln!(out, "{}:{e}", file.display())?;
            }
            return Ok(ExitCode::FAILURE);
        }
    };
    let mut ok = true;
    for (op, lang, rendered) in countersign_bridge::config::check_samples(&config) {
        match rendered {
            Ok(text) => writeln!(out, "ok   {op} [{lang}]: {text}")?,
            Err(e) => {
                ok = false;
                writeln!(out, "FAIL {op} [{lang}]: {e}")?;
            }
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

async fn serve(args: Serve) -> anyhow::Result<ExitCode> {
    let token = std::env::var("COUNTERSIGN_BRIDGE_SERVICE_TOKEN")
        .context("COUNTERSIGN_BRIDGE_SERVICE_TOKEN is required")?;
    let text = std::fs::read(&args.file)?;
    let config = Config::parse(&String::from_utf8_lossy(&text))
        .map_err(|e| anyhow::anyhow!("{}:\n{e}", args.file.display()))?;
    let digest: String = countersign_domain::hash::Sha256Hex::digest(&text).into();
    let store = Arc::new(SqliteStore::open(&args.store)?);
    let upstream = Arc::new(RmcpUpstream::new(
        config.upstream.clone(),
        Duration::from_secs(args.upstream_timeout),
    ));
    let verifier =
        Verifier::new(args.issuer, args.audience).with_jwks(Arc::new(Jwks::new(args.jwks_url)));
    let bridge = Bridge::start(
        config,
        digest,
        upstream,
        store,
        verifier,
        Settings::default(),
    )
    .await?;
    let bound = countersign_bridge::serve::spawn(Arc::new(bridge), &token, args.listen).await?;
    tracing::info!("countersign-bridge on http://{bound}/mcp");
    tokio::signal::ctrl_c().await?;
    Ok(ExitCode::SUCCESS)
}

async fn settle(store: PathBuf, what: Settle) -> anyhow::Result<ExitCode> {
    let store = SqliteStore::open(&store)?;
    let mut out = std::io::stdout().lock();
    match what {
        Settle::Check => {
            let open = store.in_doubt().await?;
            for a in &open {
                writeln!(
                    out,
                    "{} {} {} person={} prepared_at={} args={}",
                    a.tenant_id,
                    a.action_id,
                    a.operation,
                    a.person,
                    a.prepared_at,
                    serde_json::Value::Object(a.arguments.clone())
                )?;
            }
            writeln!(out, "{} write(s) to settle", open.len())?;
            Ok(ExitCode::SUCCESS)
        }
        Settle::Record {
            tenant,
            action,
            outcome,
        } => {
            let status = if outcome == "completed" {
                ActionStatus::Completed
            } else {
                ActionStatus::Failed
            };
            let note = "Settled by the tenant from what its system shows.";
            if store.finish(&tenant, &action, status, Some(note)).await? {
                writeln!(out, "{action}: {outcome}")?;
                Ok(ExitCode::SUCCESS)
            } else {
                writeln!(out, "{action}: not an executing action of {tenant}")?;
                Ok(ExitCode::FAILURE)
            }
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Check { file } => check(&file),
        Command::Serve(args) => serve(args).await,
        Command::Settle { store, what } => settle(store, what).await,
    }
}
