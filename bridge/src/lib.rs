//! `countersign-bridge` (B-1 … B-7, decision 0066): a program a tenant runs in front of
//! its existing MCP server, so that the server's write tools become countersigned
//! actions without rewriting it. To the platform it is a conforming provider; upstream it
//! calls the existing server's tools.
//!
//! This first part holds the configuration (B-1, B-2): one TOML file, validated at start
//! with errors that name its line, and the summary templates, rendered and checked
//! against the summary rules before anything is prepared.

pub mod config;
pub mod template;
