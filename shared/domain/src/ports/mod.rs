//! Ports: the small traits through which the use cases reach the outside world. Adapters
//! (DynamoDB, KMS, Secrets Manager, the provider client, model clients) implement them in
//! other crates; this crate only states the contracts.
//!
//! Conditional writes return an outcome enum (`Applied` / a precise conflict), never a
//! generic error: a lost race is a normal answer, not a failure. Errors are for I/O that
//! did not happen or cannot be trusted.
//!
//! One file per port, with the data types of its contract; everything is re-exported here.

pub mod budgets;
pub mod confirmations;
pub mod conversations;
pub mod erasure;
pub mod model;
pub mod passkeys;
pub mod provider;
pub mod resolver;
pub mod retention;
pub mod secrets;
pub mod sessions;
pub mod signer;
pub mod store;
pub mod subjects;
pub mod system;
pub mod tenants;

pub use budgets::*;
pub use confirmations::*;
pub use conversations::*;
pub use erasure::*;
pub use model::*;
pub use passkeys::*;
pub use provider::*;
pub use resolver::*;
pub use retention::*;
pub use secrets::*;
pub use sessions::*;
pub use signer::*;
pub use store::*;
pub use subjects::*;
pub use system::*;
pub use tenants::*;

pub use crate::audit_chain::{AuditEntry, AuditTrail};
pub use crate::config::StoredMcpConfig;
