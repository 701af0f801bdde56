//! The messages function's use cases and router (SPEC §1, D-1 … D-3): widget identity,
//! cases and messages, the confirm path (ARCHITECTURE), execution and reconciliation, the
//! model turn, and the scripted model.

pub mod api;
pub mod chat;
pub mod model;
mod turn;
pub mod widget;

pub use chat::{Chat, ChatError, ChatParts};
