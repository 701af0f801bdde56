//! The messages function's use cases and router (D-1 … D-3): widget identity, cases and
//! messages, the confirm path, execution and reconciliation, the model turn, and the
//! scripted model.

pub mod api;
pub mod assets;
mod cases;
pub mod chat;
mod confirm;
pub mod cors;
mod execute;
mod gateway_key;
mod limits;
pub mod mcp_token;
pub mod metrics;
pub mod model;
pub mod page;
mod prepare;
mod service;
pub mod stepup;
pub mod stream;
pub mod tool_names;
mod turn;
pub mod widget;

pub use chat::{Chat, ChatError, ChatParts, PersonLimits};
