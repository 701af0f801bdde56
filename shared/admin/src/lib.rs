//! Tenant administration: admin keys and tenant registration (used by the operator CLI),
//! and the admin function's use cases — the MCP connection ([`mcp`]), widget credentials
//! ([`widgets`]), the audit trail ([`audit`]) — behind its API ([`api`]).

pub mod api;
pub mod audit;
pub mod certify;
pub mod keys;
pub mod mcp;
mod state;
pub mod tenants;
pub mod widgets;

pub use countersign_provider_client::resolve;
pub use state::{AdminError, AdminState};
