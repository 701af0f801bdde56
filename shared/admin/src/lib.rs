//! Tenant administration (SPEC §3): admin keys and tenant registration, used by the
//! operator CLI now and by the admin function's API.

pub mod keys;
pub mod tenants;
