//! The AI model (D-3, M-5).

use super::store::Cause;
use async_trait::async_trait;
use serde_json::Value;

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelTool {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// JSON Schema of its arguments.
    pub input_schema: Value,
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The model's id for the call.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Arguments (validated by the dispatcher, never trusted).
    pub arguments: Value,
}

/// One turn of the model's conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelMessage {
    /// Text from the user.
    User(String),
    /// The model's own earlier output.
    Assistant {
        /// Text.
        text: String,
        /// Tool calls it made.
        tool_calls: Vec<ToolCall>,
    },
    /// A tool's answer (the enveloped text).
    ToolResult {
        /// The call answered.
        call_id: String,
        /// The answer text.
        content: String,
    },
}

/// A request for one model step.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// System instructions.
    pub system: String,
    /// History.
    pub messages: Vec<ModelMessage>,
    /// Tools it may call.
    pub tools: Vec<ModelTool>,
    /// The most output tokens this step may produce (M-4).
    pub max_output_tokens: u32,
}

/// The model's reply: text, tool calls, or both.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelReply {
    /// Text for the user.
    pub text: Option<String>,
    /// Tools to call before the next step.
    pub tool_calls: Vec<ToolCall>,
    /// The answer stopped at the step's output bound (M-4).
    pub truncated: bool,
}

/// A model failure (M-5), typed so the turn can tell a failure worth retrying from one
/// that is not.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The service refused for load (HTTP 429, `ThrottlingException`): retryable.
    #[error("the model service is throttling requests")]
    Throttled(#[source] Cause),
    /// The service failed or could not be reached (5xx, connection): retryable.
    #[error("the model is unavailable")]
    Unavailable(#[source] Cause),
    /// No answer within the step's time: retryable while the turn has time.
    #[error("the model did not answer in time")]
    Timeout,
    /// An answer that is not the wire format's (unparseable, no message): not retried.
    #[error("the model's answer is malformed: {0}")]
    Malformed(String),
    /// The service refused the request itself (4xx: credentials, model id, a request
    /// too large): configuration, not luck, so not retried.
    #[error("the model service refused the request")]
    Refused(#[source] Cause),
}

impl ModelError {
    /// M-5: whether the same request may be sent again (the service did not answer it,
    /// or answered with a passing condition).
    pub fn retryable(&self) -> bool {
        matches!(
            self,
            Self::Throttled(_) | Self::Unavailable(_) | Self::Timeout
        )
    }

    /// A short name for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Throttled(_) => "throttled",
            Self::Unavailable(_) => "unavailable",
            Self::Timeout => "timeout",
            Self::Malformed(_) => "malformed",
            Self::Refused(_) => "refused",
        }
    }
}

/// The AI model (D-3). Its output is never an authorization.
#[async_trait]
pub trait Model: Send + Sync {
    /// One step.
    async fn step(&self, request: &ModelRequest) -> Result<ModelReply, ModelError>;

    /// One step, passing the reply's text to `delta` as it is generated (S-1): the
    /// pieces, in order, add up to the reply's text. The reply is the same as
    /// [`Self::step`]'s. An adapter that cannot stream passes the whole text once, at the
    /// end (this default).
    async fn step_streaming(
        &self,
        request: &ModelRequest,
        delta: &(dyn for<'s> Fn(&'s str) + Send + Sync),
    ) -> Result<ModelReply, ModelError> {
        let reply = self.step(request).await?;
        if let Some(text) = &reply.text {
            delta(text);
        }
        Ok(reply)
    }
}
