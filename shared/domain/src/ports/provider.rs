//! The tenant's MCP server.

use super::store::Cause;
use crate::ids::{CaseId, TenantId, ToolName, UserId};
use crate::proof::Proof;
use crate::secret::SecretString;
use async_trait::async_trait;
use serde_json::{Map, Value};

/// Who a provider call is for: set by the platform from the authenticated context, never
/// from tool arguments.
#[derive(Debug, Clone)]
pub struct ProviderContext {
    /// `X-MCP-Tenant-Id`.
    pub tenant: TenantId,
    /// `X-MCP-User-Id`.
    pub user: UserId,
    /// `X-MCP-Conversation-Id`.
    pub conversation: CaseId,
    /// The provider endpoint.
    pub server_url: crate::config::ServerUrl,
    /// `Authorization: Bearer …`.
    pub service_token: SecretString,
    /// The configuration version (cache key for `tools/list`).
    pub config_version: u64,
    /// `X-MCP-Language` (B-2): the person's language, when the call is for a person whose
    /// conversation has one; the tenant's for the administrator's and the certification's.
    pub language: Option<crate::language::Language>,
}

/// A tool as the provider's `tools/list` publishes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderTool {
    /// Name.
    pub name: ToolName,
    /// The whole descriptor as published (passed through to the model unchanged).
    pub descriptor: Map<String, Value>,
    /// Its `outputSchema`, if declared (G-6).
    pub output_schema: Option<Value>,
}

impl ProviderTool {
    /// Its `description`, as published (empty when it has none).
    pub fn description(&self) -> &str {
        self.descriptor
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

/// A provider call failure.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// Connection refused, DNS failure, or an address the URL rules forbid (D-5).
    #[error("the provider is unreachable")]
    Unreachable(#[source] Cause),
    /// No answer in time. For `execute_action` the outcome is unknown.
    #[error("the provider did not answer in time")]
    Timeout,
    /// The connection closed after the request was sent and before the whole answer came:
    /// for `execute_action` the outcome is unknown.
    #[error("the connection to the provider dropped before its answer was complete")]
    Interrupted,
    /// An HTTP status other than success.
    #[error("the provider answered HTTP {status}")]
    Http {
        /// The status code.
        status: u16,
    },
    /// Not a valid MCP / JSON-RPC answer.
    #[error("the provider's answer is malformed")]
    Malformed(String),
    /// A JSON-RPC error object (e.g. unknown tool).
    #[error("the provider answered a protocol error {code}")]
    Protocol {
        /// The JSON-RPC error code.
        code: i64,
    },
}

/// A connection opened for one call that must be sent exactly once: everything
/// that has to happen before that request — the MCP handshake, when the server keeps
/// sessions — has happened. A failure before this point means nothing was sent.
#[derive(Debug, Clone, Default)]
pub struct Opened {
    /// The MCP session opened for the call, if the server keeps sessions.
    pub session: Option<String>,
    /// When the whole exchange (handshake and call) must be over.
    pub until: Option<std::time::Instant>,
}

/// What carries a countersigned call: the connection opened for it and the proof,
/// signed after the connection was opened.
#[derive(Debug, Clone, Copy)]
pub struct Confirmation<'a> {
    /// From [`Provider::open`].
    pub opened: &'a Opened,
    /// Sent as `X-MCP-Confirmation`.
    pub proof: &'a Proof,
}

/// The tenant's MCP server.
#[async_trait]
pub trait Provider: Send + Sync {
    /// `tools/list` (implementations may cache briefly per configuration version).
    async fn list_tools(&self, ctx: &ProviderContext) -> Result<Vec<ProviderTool>, ProviderError>;

    /// Opens a connection for one countersigned call: the handshake, if any. An error
    /// here means nothing was sent (the action is certainly not executed).
    async fn open(&self, ctx: &ProviderContext) -> Result<Opened, ProviderError> {
        let _ = ctx;
        Ok(Opened::default())
    }

    /// `tools/call`: the provider's `CallToolResult` JSON, unchanged (proxied answers pass
    /// through as they came, G-6; contract answers are read with
    /// [`crate::tool_result::ToolResult::from_mcp_json`]). With a `confirmation`
    /// (`execute_action` only, A-30) the call goes over its opened connection, carries the
    /// proof as `X-MCP-Confirmation`, and is sent exactly once.
    async fn call_tool(
        &self,
        ctx: &ProviderContext,
        tool: &str,
        arguments: &Map<String, Value>,
        confirmation: Option<Confirmation<'_>>,
    ) -> Result<Value, ProviderError>;
}
