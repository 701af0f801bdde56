//! `countersign-bridge`: `check <file>` validates a configuration and renders every
//! summary template against its sample (B-4's check). Serving is not built yet.

use clap::{Parser, Subcommand};
use std::io::Write as _;
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
        file: std::path::PathBuf,
    },
}

fn main() -> anyhow::Result<ExitCode> {
    let Command::Check { file } = Cli::parse().command;
    let text = std::fs::read_to_string(&file)?;
    let mut out = std::io::stdout().lock();
    let config = match countersign_bridge::config::Config::parse(&text) {
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
