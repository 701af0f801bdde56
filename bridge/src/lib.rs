//! `countersign-bridge` (B-1 … B-7, decisions 0066, 0067): a program a tenant runs in
//! front of its existing MCP server, so that the server's write tools become
//! countersigned actions without rewriting it. To the platform it is a conforming
//! provider; upstream it calls the existing server's tools.
//!
//! - [`config`], [`template`]: the one TOML file, validated at start with errors that name
//!   its line; summary templates checked against the summary rules.
//! - [`upstream`]: the existing server over stdio (supervised) or Streamable HTTP.
//! - [`engine`], `actions`: consultations, and the protocol's three tools over the
//!   upstream's write tools, with guards at preparation and again at execution.
//! - [`store`]: the bridge's memory (SQLite by default), one pending action per
//!   conversation and each proof consumed once, in its transactions.
//! - [`serve`]: the Streamable HTTP endpoint, the service token, health and metrics.

mod actions;
pub mod config;
pub mod engine;
pub mod run;
pub mod serve;
pub mod store;
pub mod template;
pub mod upstream;

pub use engine::{Bridge, Settings, StartError};
