//! Tenant administration: admin keys and tenant registration (used by the operator CLI),
//! and the admin function's use cases — the MCP connection ([`mcp`]), widget credentials
//! ([`widgets`]), the audit trail ([`audit`]) — behind its API ([`api`]).

pub mod api;
pub mod audit;
pub mod certify;
pub mod erasure;
pub mod jwks;
pub mod keys;
pub mod lease;
pub mod mcp;
pub mod panel;
pub mod passkeys;
pub mod retention;
mod state;
pub mod tenants;
pub mod unsettled;
pub mod widgets;

pub use state::{AdminError, AdminState};

/// Everything the admin function serves: the admin API and the `/admin` panel.
pub fn app(state: AdminState) -> axum::Router {
    api::router(state.clone()).merge(panel::router(state))
}

/// What the messages function serves for the admin side: the certification run, from
/// the API and from the panel (decision 0026).
pub fn certification_app(state: AdminState) -> axum::Router {
    api::certification_router(state.clone()).merge(panel::certification_router(state))
}
