//! The tool registry (G-1 … G-14): one envelope, one version per tool.
//!
//! - [`registry`]: tool definitions, the registry, the dispatcher (G-2, G-3, G-12, G-8);
//! - [`envelope`]: the seal, the one place an answer gets its shape (G-1, G-7);
//! - [`errors`]: error codes and the classifier (G-5);
//! - [`schema`]: input/output schemas and fingerprints (G-4, G-10);
//! - [`proxy`]: proxied consultations, checked against the provider's outputSchema (G-6);
//! - [`builtins`]: `describe_tool`, `list_operations`, `action_status`, `prepare_action`;
//! - [`catalog`]: the snapshot file (G-4) and `docs/tools.md` (G-14), generated from the
//!   registry.

pub mod access;
pub mod builtins;
pub mod catalog;
pub mod confirmation;
pub mod envelope;
pub mod errors;
pub mod integration;
pub mod prepare;
pub mod proxy;
pub mod registry;
pub mod request_state;
pub mod schema;
