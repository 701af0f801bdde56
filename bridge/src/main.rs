//! `countersign-bridge`: `check <file>` validates a configuration and renders every
//! summary against its sample; `serve <file>` runs the bridge; `settle` lists the writes
//! whose answer was lost and records what the tenant's system shows.

use clap::{Parser, Subcommand};
use countersign_bridge::config::Config;
use countersign_bridge::store::Store;
use countersign_bridge::store::dynamo::DynamoStore;
use countersign_bridge::store::sqlite::SqliteStore;
use countersign_provider_kit::ActionStatus;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

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
    Serve(countersign_bridge::run::ServeArgs),
    /// The writes whose answer was lost: list them, or record what your system shows.
    Settle {
        /// The store file.
        #[arg(
            long,
            env = "COUNTERSIGN_BRIDGE_STORE",
            default_value = "countersign-bridge.db"
        )]
        store: PathBuf,
        /// The DynamoDB table, when the bridge keeps its store there.
        #[arg(long, env = "COUNTERSIGN_BRIDGE_TABLE")]
        table: Option<String>,
        #[command(subcommand)]
        what: Settle,
    },
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

async fn settle(store: PathBuf, table: Option<String>, what: Settle) -> anyhow::Result<ExitCode> {
    let store: Box<dyn Store> = match table {
        Some(t) => Box::new(DynamoStore::from_env(t).await),
        None => Box::new(SqliteStore::open(&store)?),
    };
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
        Command::Serve(args) => countersign_bridge::run::serve(args)
            .await
            .map(|()| ExitCode::SUCCESS),
        Command::Settle { store, table, what } => settle(store, table, what).await,
    }
}
