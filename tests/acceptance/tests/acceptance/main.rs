//! The end-to-end acceptance suite, in one test binary (decision 0054): as one binary
//! per file, each was linked against the whole dependency graph. nextest still runs every
//! test in its own process.

mod acceptance;
mod agentdojo;
mod bridge_retail;
mod certification;
mod chat_live;
mod confirm_path;
mod foreign;
mod models;
mod rotation;
mod unsettled;
mod widget;
