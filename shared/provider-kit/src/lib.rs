//! The provider kit (D-7): what a tenant's Rust MCP server needs to take part in
//! Countersign's actions protocol correctly.
//!
//! - [`proof`]: verify `X-MCP-Confirmation` (RS256 only, `typ: support-action+jwt`, a
//!   trusted `kid`, no embedded keys, issuer, audience, at most 60 s of validity, every
//!   claim bound to the action being executed) — A-31 … A-33.
//! - [`jwks`]: the platform's keys from its JWKS URL, cached and refreshed on an unknown
//!   `kid` (K-2), as an alternative or a complement to keys installed by hand.
//! - [`replay`]: consume each proof's `jti` once ([`replay::ReplayGuard`], with an
//!   in-memory implementation for one process; use a shared store across processes).
//! - [`contract`]: the answers of `prepare_action` and of `execute_action` /
//!   `get_action_status`, and the two hashes.
//! - [`headers`]: the identity the platform sends on every call.
//!
//! The contract itself is language-neutral: `docs/provider-guide.md` states it for any
//! language.

pub mod contract;
pub mod headers;
pub mod jwks;
pub mod proof;
pub mod rejection;
pub mod replay;

pub use contract::{ActionStatus, PrepareAnswer, StatusAnswer, arguments_hash, summary_hash};
pub use headers::Identity;
pub use jwks::Jwks;
pub use proof::{ExpectedAction, ProofRejection, VerifiedProof, Verifier};
pub use replay::{InMemoryReplayGuard, ReplayGuard};
