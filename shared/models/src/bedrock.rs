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
use aws_sdk_bedrockruntime::operation::converse_stream::ConverseStreamError;
use aws_sdk_bedrockruntime::types::error::ConverseStreamOutputError;
use aws_sdk_bedrockruntime::types::{
    ContentBlock, ContentBlockDelta, ContentBlockStart, ConversationRole, ConverseOutput as Output,
    ConverseStreamOutput, InferenceConfiguration, Message, StopReason, SystemContentBlock, Tool,
    ToolConfiguration, ToolInputSchema, ToolResultBlock, ToolResultContentBlock, ToolSpecification,
    ToolUseBlock,
};
use countersign_domain::ports::{
    Model, ModelError, ModelMessage, ModelReply, ModelRequest, ToolCall,
};
use std::collections::BTreeMap;

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
    let cause: countersign_domain::ports::Cause = cause_of(&e).into();
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

/// S-1: `ConverseStream`'s events folded into the reply as they arrive: text pieces go
/// out as they come (a second text block is joined with a line break, as [`reply_from`]
/// joins them), tool-use input arrives as pieces of one JSON text per block.
#[derive(Debug, Default)]
pub struct ConverseStreamed {
    text: String,
    last_text_block: Option<i32>,
    /// By content block index: id, name, input text so far.
    tools: BTreeMap<i32, (String, String, String)>,
    stop: Option<StopReason>,
}

impl ConverseStreamed {
    /// Takes one event; `delta` gets each piece of text.
    pub fn feed(&mut self, event: &ConverseStreamOutput, delta: &(dyn Fn(&str) + Send + Sync)) {
        match event {
            ConverseStreamOutput::ContentBlockStart(e) => {
                if let Some(ContentBlockStart::ToolUse(t)) = e.start() {
                    self.tools.insert(
                        e.content_block_index(),
                        (
                            t.tool_use_id().to_owned(),
                            t.name().to_owned(),
                            String::new(),
                        ),
                    );
                }
            }
            ConverseStreamOutput::ContentBlockDelta(e) => match e.delta() {
                Some(ContentBlockDelta::Text(t)) if !t.is_empty() => {
                    let index = e.content_block_index();
                    if self.last_text_block.is_some_and(|last| last != index) {
                        self.text.push('\n');
                        delta("\n");
                    }
                    self.last_text_block = Some(index);
                    self.text.push_str(t);
                    delta(t);
                }
                Some(ContentBlockDelta::ToolUse(u)) => {
                    if let Some(tool) = self.tools.get_mut(&e.content_block_index()) {
                        tool.2.push_str(u.input());
                    }
                }
                // Reasoning, citations and the like are not for the person.
                _ => {}
            },
            ConverseStreamOutput::MessageStop(e) => self.stop = Some(e.stop_reason().clone()),
            ConverseStreamOutput::Metadata(m) => {
                if let Some(u) = m.usage() {
                    tracing::info!(
                        input_tokens = u.input_tokens(),
                        output_tokens = u.output_tokens(),
                        "bedrock converse stream"
                    );
                }
            }
            _ => {}
        }
    }

    /// The reply, once the stream has ended. Input that is not JSON is kept as the model
    /// wrote it (a string), for the turn to refuse as arguments that are not an object.
    pub fn reply(self) -> Result<ModelReply, ModelError> {
        let tool_calls: Vec<ToolCall> = self
            .tools
            .into_values()
            .map(|(id, name, input)| ToolCall {
                id,
                name,
                arguments: if input.trim().is_empty() {
                    serde_json::Value::Object(serde_json::Map::new())
                } else {
                    serde_json::from_str(&input).unwrap_or(serde_json::Value::String(input))
                },
            })
            .collect();
        let Some(stop) = self.stop else {
            return Err(ModelError::Malformed(
                "the stream ended before its messageStop".into(),
            ));
        };
        if matches!(
            stop,
            StopReason::MalformedModelOutput | StopReason::MalformedToolUse
        ) && tool_calls.is_empty()
            && self.text.is_empty()
        {
            return Err(ModelError::Malformed(format!(
                "stop reason {}",
                stop.as_str()
            )));
        }
        Ok(ModelReply {
            text: (!self.text.trim().is_empty()).then_some(self.text),
            tool_calls,
            truncated: stop == StopReason::MaxTokens,
        })
    }
}

/// M-5: a failure of the stream, typed by its error code (the start of the stream and the
/// events after it carry the same codes as Converse).
fn stream_error(code: Option<&str>, status: Option<u16>, cause: String) -> ModelError {
    let cause: countersign_domain::ports::Cause = cause.into();
    match code {
        Some("ThrottlingException") => ModelError::Throttled(cause),
        Some("ModelTimeoutException") => ModelError::Timeout,
        Some(
            "InternalServerException"
            | "ServiceUnavailableException"
            | "ModelNotReadyException"
            | "ModelStreamErrorException",
        ) => ModelError::Unavailable(cause),
        Some("ModelErrorException") => ModelError::Malformed(cause.to_string()),
        _ => match status {
            Some(200..=299) => ModelError::Malformed(cause.to_string()),
            Some(429) => ModelError::Throttled(cause),
            Some(500..) | None => ModelError::Unavailable(cause),
            Some(_) => ModelError::Refused(cause),
        },
    }
}

/// An error's code and message, for logs (never the request).
fn cause_of(e: &impl ProvideErrorMetadata) -> String {
    format!(
        "{}: {}",
        e.code().unwrap_or("no error code"),
        e.message().unwrap_or("no message")
    )
}

/// M-5: `ConverseStream`'s failure to start, typed.
pub fn stream_start_error_of(e: SdkError<ConverseStreamError>) -> ModelError {
    match e {
        SdkError::TimeoutError(_) => return ModelError::Timeout,
        SdkError::DispatchFailure(_) => return ModelError::Unavailable(e.to_string().into()),
        // A 200 whose first bytes are not event-stream frames: not the wire format.
        SdkError::ResponseError(_) => return ModelError::Malformed(e.to_string()),
        _ => {}
    }
    let status = match &e {
        SdkError::ServiceError(s) => Some(s.raw().status().as_u16()),
        _ => None,
    };
    stream_error(e.code(), status, cause_of(&e))
}

/// M-5: a failure in the middle of `ConverseStream`, typed.
fn stream_event_error_of<R: std::fmt::Debug>(
    e: &SdkError<ConverseStreamOutputError, R>,
) -> ModelError {
    match e {
        SdkError::TimeoutError(_) => ModelError::Timeout,
        // The connection failed or was cut: worth another try.
        SdkError::ResponseError(_) | SdkError::DispatchFailure(_) => {
            ModelError::Unavailable(e.to_string().into())
        }
        // Bytes that are not event-stream frames, or an event without an error code: not
        // the wire format.
        _ if e.code().is_none() => ModelError::Malformed(e.to_string()),
        _ => stream_error(e.code(), None, cause_of(e)),
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
    /// layers of retries would multiply. Nor does it take the process's AWS call timeouts
    /// (I-2: seconds, for DynamoDB, KMS and Secrets Manager): a model step takes as long as
    /// the model writes, bounded by the turn's own deadline.
    pub fn from_sdk(sdk: &aws_config::SdkConfig, model_id: impl Into<String>) -> Self {
        let config = aws_sdk_bedrockruntime::config::Builder::from(sdk)
            .retry_config(aws_sdk_bedrockruntime::config::retry::RetryConfig::disabled())
            .timeout_config(
                // Explicitly off: unset fields would be merged from the SDK configuration.
                aws_sdk_bedrockruntime::config::timeout::TimeoutConfig::builder()
                    .connect_timeout(std::time::Duration::from_secs(3))
                    .disable_operation_timeout()
                    .disable_operation_attempt_timeout()
                    .build(),
            )
            .build();
        Self::new(Client::from_conf(config), model_id)
    }
}

#[async_trait]
impl Model for BedrockModel {
    /// S-1: `ConverseStream` (IAM `bedrock:InvokeModelWithResponseStream`).
    async fn step_streaming(
        &self,
        request: &ModelRequest,
        delta: &(dyn for<'s> Fn(&'s str) + Send + Sync),
    ) -> Result<ModelReply, ModelError> {
        let input = converse_input(request)?;
        let mut output = self
            .client
            .converse_stream()
            .model_id(&self.model_id)
            .set_system(Some(input.system))
            .set_messages(Some(input.messages))
            .set_tool_config(input.tool_config)
            .inference_config(input.inference)
            .send()
            .await
            .map_err(stream_start_error_of)?;
        let mut streamed = ConverseStreamed::default();
        while let Some(event) = output
            .stream
            .recv()
            .await
            .map_err(|e| stream_event_error_of(&e))?
        {
            streamed.feed(&event, delta);
        }
        streamed.reply()
    }

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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod timeout_tests {
    use aws_sdk_bedrockruntime::config::timeout::TimeoutConfig;
    use std::time::Duration;

    /// I-2 (decision 0083): the process's AWS call timeouts (seconds) do not reach the
    /// model client, whose step takes as long as the model writes within the turn's
    /// deadline.
    #[test]
    fn i2_a_model_step_does_not_take_the_aws_call_timeouts() {
        let sdk = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("us-east-1"))
            .timeout_config(
                TimeoutConfig::builder()
                    .operation_timeout(Duration::from_secs(8))
                    .operation_attempt_timeout(Duration::from_secs(3))
                    .build(),
            )
            .build();
        let model = super::BedrockModel::from_sdk(&sdk, "m");
        let timeouts = model.client.config().timeout_config().cloned().unwrap();
        assert_eq!(timeouts.operation_timeout(), None);
        assert_eq!(timeouts.operation_attempt_timeout(), None);
        assert_eq!(timeouts.connect_timeout(), Some(Duration::from_secs(3)));
    }
}
