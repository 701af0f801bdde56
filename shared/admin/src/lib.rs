//! Tenant administration (SPEC §3): admin keys and tenant registration, used by the
//! operator CLI and by the admin function's API ([`api`]).

pub mod api;
pub mod audit;
pub mod keys;
pub use countersign_provider_client::resolve;
pub mod tenants;
