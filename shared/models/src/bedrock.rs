//! Amazon Bedrock's Converse API with tool use (M-1). The request is built from the
//! turn's [`ModelRequest`] and the answer read back into a [`ModelReply`] by two pure
//! functions ([`converse_input`], [`reply_from`]); [`BedrockModel`] only sends.
//!
//! Converse wants a conversation that starts with the user and alternates roles, every
//! `toolUse` answered by a `toolResult` in the next user message, and no empty text
//! block: consecutive messages of one role are merged, leading assistant messages are
//! dropped, empty texts are left out.

use crate::document::{to_document, to_value};
use async_trait::async_trait;
use aws_sdk_bedrockruntime::Client;
use aws_sdk_bedrockruntime::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockruntime::operation::converse::{ConverseError, ConverseOutput};
use aws_sdk_bedrockruntime::types::{
    ContentBlock, ConversationRole, ConverseOutput as Output, InferenceConfiguration, Message,
    StopReason, SystemContentBlock, Tool, ToolConfiguration, ToolInputSchema, ToolResultBlock,
    ToolResultContentBlock, ToolSpecification, ToolUseBlock,
};
use countersign_domain::ports::{
    Model, ModelError, ModelMessage, ModelReply, ModelRequest, ToolCall,
};

/// The parts of one Converse request.
#[derive(Debug, Clone)]
pub struct ConverseInput {
    /// The system text.
    pub system: Vec<SystemContentBlock>,
    /// The conversation, alternating roles, starting with the user.
    pub messages: Vec<Message>,
    /// The tools (`None` when there are none: Converse refuses an empty list).
    pub tool_config: Option<ToolConfiguration>,
    /// The output bound.
    pub inference: InferenceConfiguration,
}

fn malformed(e: impl std::fmt::Display) -> ModelError {
    ModelError::Malformed(e.to_string())
}

/// Builds the Converse request for `request`.
pub fn converse_input(request: &ModelRequest) -> Result<ConverseInput, ModelError> {
    let mut messages: Vec<(ConversationRole, Vec<ContentBlock>)> = Vec::new();
    for m in &request.messages {
        let (role, blocks) = blocks_of(m)?;
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some((last, content)) if *last == role => content.extend(blocks),
            None if role == ConversationRole::Assistant => {}
            _ => messages.push((role, blocks)),
        }
    }
    let messages = messages
        .into_iter()
        .map(|(role, content)| {
            Message::builder()
                .role(role)
                .set_content(Some(content))
                .build()
                .map_err(malformed)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let tools = request
        .tools
        .iter()
        .map(|t| {
            ToolSpecification::builder()
                .name(&t.name)
                .description(if t.description.is_empty() {
                    t.name.as_str()
                } else {
                    t.description.as_str()
                })
                .input_schema(ToolInputSchema::Json(to_document(&t.input_schema)))
                .build()
                .map(Tool::ToolSpec)
                .map_err(malformed)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let tool_config = if tools.is_empty() {
        None
    } else {
        Some(
            ToolConfiguration::builder()
                .set_tools(Some(tools))
                .build()
                .map_err(malformed)?,
        )
    };
    Ok(ConverseInput {
        system: vec![SystemContentBlock::Text(request.system.clone())],
        messages,
        tool_config,
        inference: InferenceConfiguration::builder()
            .max_tokens(i32::try_from(request.max_output_tokens).unwrap_or(i32::MAX))
            .build(),
    })
}

fn blocks_of(m: &ModelMessage) -> Result<(ConversationRole, Vec<ContentBlock>), ModelError> {
    Ok(match m {
        ModelMessage::User(text) => (ConversationRole::User, text_block(text)),
        ModelMessage::Assistant { text, tool_calls } => {
            let mut blocks = text_block(text);
            for call in tool_calls {
                blocks.push(ContentBlock::ToolUse(
                    ToolUseBlock::builder()
                        .tool_use_id(&call.id)
                        .name(&call.name)
                        .input(to_document(&call.arguments))
                        .build()
                        .map_err(malformed)?,
                ));
            }
            (ConversationRole::Assistant, blocks)
        }
        ModelMessage::ToolResult { call_id, content } => {
            // M-2: the envelope's JSON goes back as JSON (text when it is not JSON).
            let block = match serde_json::from_str::<serde_json::Value>(content) {
                Ok(v) if v.is_object() => ToolResultContentBlock::Json(to_document(&v)),
                _ => ToolResultContentBlock::Text(content.clone()),
            };
            let result = ToolResultBlock::builder()
                .tool_use_id(call_id)
                .content(block)
                .build()
                .map_err(malformed)?;
            (
                ConversationRole::User,
                vec![ContentBlock::ToolResult(result)],
            )
        }
    })
}

fn text_block(text: &str) -> Vec<ContentBlock> {
    if text.trim().is_empty() {
        Vec::new()
    } else {
        vec![ContentBlock::Text(text.to_owned())]
    }
}

/// Reads Converse's answer.
pub fn reply_from(output: &ConverseOutput) -> Result<ModelReply, ModelError> {
    let Some(Output::Message(message)) = output.output() else {
        return Err(ModelError::Malformed("the answer holds no message".into()));
    };
    let mut texts = Vec::new();
    let mut tool_calls = Vec::new();
    for block in message.content() {
        match block {
            ContentBlock::Text(t) => texts.push(t.as_str()),
            ContentBlock::ToolUse(u) => tool_calls.push(ToolCall {
                id: u.tool_use_id().to_owned(),
                name: u.name().to_owned(),
                arguments: to_value(u.input()),
            }),
            // Reasoning, citations and the like are not for the person.
            _ => {}
        }
    }
    let stop = output.stop_reason();
    if matches!(
        stop,
        StopReason::MalformedModelOutput | StopReason::MalformedToolUse
    ) && tool_calls.is_empty()
        && texts.is_empty()
    {
        return Err(ModelError::Malformed(format!(
            "stop reason {}",
            stop.as_str()
        )));
    }
    if let Some(u) = output.usage() {
        tracing::info!(
            input_tokens = u.input_tokens(),
            output_tokens = u.output_tokens(),
            stop_reason = stop.as_str(),
            "bedrock converse"
        );
    }
    let text = texts.join("\n");
    Ok(ModelReply {
        text: (!text.trim().is_empty()).then_some(text),
        tool_calls,
        truncated: *stop == StopReason::MaxTokens,
    })
}

/// M-5: Converse's failures, typed.
pub fn error_of(e: SdkError<ConverseError>) -> ModelError {
    let cause: countersign_domain::ports::Cause = format!(
        "{}: {}",
        e.code().unwrap_or("no error code"),
        e.message().unwrap_or("no message")
    )
    .into();
    match e {
        SdkError::TimeoutError(_) => ModelError::Timeout,
        SdkError::DispatchFailure(_) | SdkError::ResponseError(_) => {
            ModelError::Unavailable(format!("{e}").into())
        }
        SdkError::ServiceError(s) => match s.err() {
            ConverseError::ThrottlingException(_) => ModelError::Throttled(cause),
            ConverseError::ModelTimeoutException(_) => ModelError::Timeout,
            ConverseError::InternalServerException(_)
            | ConverseError::ServiceUnavailableException(_)
            | ConverseError::ModelNotReadyException(_) => ModelError::Unavailable(cause),
            ConverseError::ModelErrorException(_) => ModelError::Malformed(cause.to_string()),
            // A 200 the SDK could not read is not the wire format.
            _ if s.raw().status().is_success() => ModelError::Malformed(cause.to_string()),
            _ if s.raw().status().as_u16() == 429 => ModelError::Throttled(cause),
            _ if s.raw().status().is_server_error() => ModelError::Unavailable(cause),
            _ => ModelError::Refused(cause),
        },
        _ => ModelError::Refused(cause),
    }
}

/// The Bedrock adapter.
#[derive(Debug, Clone)]
pub struct BedrockModel {
    client: Client,
    model_id: String,
}

impl BedrockModel {
    /// An adapter for `model_id` on `client`.
    pub fn new(client: Client, model_id: impl Into<String>) -> Self {
        Self {
            client,
            model_id: model_id.into(),
        }
    }

    /// An adapter for `model_id` with the SDK configuration `sdk` (its credentials,
    /// region and any endpoint override, such as `AWS_ENDPOINT_URL_BEDROCK_RUNTIME`). The
    /// SDK's own retries are off: the turn retries within its deadline (M-5), and two
    /// layers of retries would multiply.
    pub fn from_sdk(sdk: &aws_config::SdkConfig, model_id: impl Into<String>) -> Self {
        let config = aws_sdk_bedrockruntime::config::Builder::from(sdk)
            .retry_config(aws_sdk_bedrockruntime::config::retry::RetryConfig::disabled())
            .build();
        Self::new(Client::from_conf(config), model_id)
    }
}

#[async_trait]
impl Model for BedrockModel {
    async fn step(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let input = converse_input(request)?;
        let output = self
            .client
            .converse()
            .model_id(&self.model_id)
            .set_system(Some(input.system))
            .set_messages(Some(input.messages))
            .set_tool_config(input.tool_config)
            .inference_config(input.inference)
            .send()
            .await
            .map_err(error_of)?;
        reply_from(&output)
    }
}
