//! TrackShare, the demo provider (the example scenario of `docs/requirements.md`): a real
//! MCP server (rmcp, Streamable HTTP) on loopback, built on the provider kit. It plays a
//! tenant's system in tests and in the local stack.
//!
//! - `POST /mcp`: the catalog of [`tools::catalog`]; `Authorization: Bearer <service
//!   token>` required; the person is `X-MCP-User-Id`, never an argument.
//! - `GET /_demo/stats`, `POST /_demo/control`, `POST /_demo/keys`: counters, fault
//!   switches and key installation for tests and the local stack (same bearer token).
//!
//! Stateless JSON answers by default; [`DemoConfig::session_mode`] makes it a
//! session-based server answering with SSE (it then needs `initialize`).

pub mod actions;
mod app;
mod control;
pub mod data;
mod server;
pub mod tools;

pub use app::{router, spawn};
pub use server::{Demo, Faults};

use std::time::Duration;

/// How the demo provider is set up.
#[derive(Debug, Clone)]
pub struct DemoConfig {
    /// The service token the platform must send (`Authorization: Bearer …`).
    pub service_token: String,
    /// When set, calls for any other `X-MCP-Tenant-Id` are refused.
    pub tenant_id: Option<String>,
    /// The proofs' expected `iss`.
    pub issuer: String,
    /// The proofs' expected `aud` (this server's URL or configured audience).
    pub audience: String,
    /// Installed verification keys: `(kid, public key PEM)`.
    pub keys: Vec<(String, String)>,
    /// The platform's JWKS URL: keys are followed from it (K-2), next to `keys`.
    pub jwks_url: Option<String>,
    /// Session-based with SSE answers instead of stateless JSON.
    pub session_mode: bool,
    /// Proposal lifetime (at most 5 minutes).
    pub proposal_ttl: Duration,
    /// F-5: the platform's `stepUpRpId` and `stepUpOrigins` (actionVerification): step-up
    /// proofs are verified against them with the provider kit; unset, one is refused.
    pub step_up: Option<(String, Vec<String>)>,
}

impl DemoConfig {
    /// A configuration with no key installed yet.
    pub fn new(
        service_token: impl Into<String>,
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> Self {
        Self {
            service_token: service_token.into(),
            tenant_id: None,
            issuer: issuer.into(),
            audience: audience.into(),
            keys: Vec::new(),
            jwks_url: None,
            session_mode: false,
            proposal_ttl: Duration::from_secs(240),
            step_up: None,
        }
    }
}
