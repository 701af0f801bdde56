//! Countersign's domain: every rule of the actions protocol that needs no I/O, and the
//! ports (traits) through which the rest of the system reaches the outside world.
//!
//! This crate deliberately has no AWS SDK, no HTTP client and no async runtime: rules are
//! plain functions over plain values, so they are tested exhaustively and cheaply, and the
//! same rules hold in the Lambda functions, the local stack and the tests.
//!
//! Map of the requirements (see `SPEC.md`) to modules:
//! - identifiers and values (A-14, C-4): [`ids`], [`hash`] (and the one hex encoder,
//!   [`hash::hex`]), [`time`]
//! - the summary / message checker: [`text`], with address classes in [`net`]
//! - the provider's prepare answer: [`prepare`]
//! - `execute_action` / `get_action_status` answers: [`outcome`]
//! - the confirmation rule and its binding (A-22 … A-26): [`confirmation`]
//! - the proposal state machine (A-15 … … A-45, P-3): [`proposal`]
//! - proof claims and compact-JWS assembly (A-31 … A-34): [`proof`]
//! - the proof key's `kid` (RFC 7638 thumbprint) and PEM: [`jwk`]
//! - tenant configuration (C-3, C-4, C-7): [`config`]
//! - tool pinning (V-2): [`pinning`], over the canonical JSON in [`canonical`]
//! - fixed texts (D-6): [`texts`]
//! - what the audit trail records of each proposal step (L-1): [`life`]
//! - ports: [`ports`]

pub mod appearance;
pub mod audit_chain;
pub mod authenticator;
pub mod canonical;
pub mod certification;
pub mod config;
pub mod confirmation;
pub mod contract;
pub mod conversation;
pub mod enrolment;
pub mod hash;
pub mod host;
pub mod ids;
pub mod jwk;
pub mod key_policy;
pub mod keyring;
pub mod language;
pub mod life;
pub mod net;
pub mod outcome;
pub mod pinning;
pub mod ports;
pub mod prepare;
pub mod proof;
pub mod proposal;
pub mod retention;
pub mod secret;
pub mod stepup;
pub mod text;
pub mod texts;
pub mod time;
pub mod tool_result;
pub mod vetting;

#[cfg(test)]
mod test_support;
