//! OpenAI-compatible chat completions with tools (M-1): hosted OpenAI, Azure-style
//! deployments and local servers (vLLM, Ollama, llama.cpp). A thin typed client on the
//! project's `reqwest` (decision 0023): one endpoint, and only the fields every one of
//! those servers reads.
//!
//! The request and the answer are built and read by two pure functions ([`body`],
//! [`reply_from`]); [`OpenAiModel`] only sends, with the API key read lazily from the
//! secret store (never at start, never logged).

use async_trait::async_trait;
use countersign_domain::ports::{
    Model, ModelError, ModelMessage, ModelReply, ModelRequest, SecretStore, ToolCall,
};
use countersign_domain::secret::SecretString;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::OnceCell;
use url::Url;

/// Which field bounds the output: hosted OpenAI and Azure refuse `max_tokens` for their
/// reasoning models; the local servers know `max_tokens` (decision 0023).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenField {
    /// `max_completion_tokens`.
    MaxCompletionTokens,
    /// `max_tokens`.
    MaxTokens,
}

/// How the API key is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyHeader {
    /// `Authorization: Bearer <key>`.
    Bearer,
    /// `api-key: <key>` (Azure OpenAI deployments).
    ApiKey,
}

/// Where and how to call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `<base>/chat/completions`, with the base's query (Azure's `api-version`).
    pub url: Url,
    /// The `model` field.
    pub model: String,
    /// The output bound's field.
    pub token_field: TokenField,
    /// How the key is sent.
    pub key_header: KeyHeader,
}

impl Endpoint {
    /// The endpoint of `base` (for example `https://api.openai.com/v1`,
    /// `http://127.0.0.1:11434/v1`, or
    /// `https://NAME.openai.azure.com/openai/deployments/DEPLOYMENT?api-version=…`).
    pub fn new(base: &Url, model: &str) -> Self {
        let mut url = base.clone();
        let path = format!("{}/chat/completions", base.path().trim_end_matches('/'));
        url.set_path(&path);
        let host = base.host_str().unwrap_or_default();
        let azure = host.ends_with(".openai.azure.com") || host.ends_with(".azure.com");
        let hosted = azure || host == "api.openai.com";
        Self {
            url,
            model: model.to_owned(),
            token_field: if hosted {
                TokenField::MaxCompletionTokens
            } else {
                TokenField::MaxTokens
            },
            key_header: if azure {
                KeyHeader::ApiKey
            } else {
                KeyHeader::Bearer
            },
        }
    }
}

/// The request body for `request`.
pub fn body(endpoint: &Endpoint, request: &ModelRequest) -> Value {
    let mut messages = vec![json!({"role": "system", "content": request.system})];
    for m in &request.messages {
        messages.push(match m {
            ModelMessage::User(text) => json!({"role": "user", "content": text}),
            ModelMessage::Assistant { text, tool_calls } if tool_calls.is_empty() => {
                json!({"role": "assistant", "content": text})
            }
            ModelMessage::Assistant { text, tool_calls } => {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|c| {
                        json!({"id": c.id, "type": "function", "function": {
                            "name": c.name,
                            // The wire carries arguments as a JSON string; a call whose
                            // arguments were not JSON is replayed as the model wrote it.
                            "arguments": match &c.arguments {
                                Value::String(raw) => raw.clone(),
                                v => v.to_string(),
                            },
                        }})
                    })
                    .collect();
                let content = if text.is_empty() {
                    Value::Null
                } else {
                    Value::String(text.clone())
                };
                json!({"role": "assistant", "content": content, "tool_calls": calls})
            }
            ModelMessage::ToolResult { call_id, content } => {
                json!({"role": "tool", "tool_call_id": call_id, "content": content})
            }
        });
    }
    let mut body = json!({"model": endpoint.model, "messages": messages});
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                }})
            })
            .collect();
    }
    let field = match endpoint.token_field {
        TokenField::MaxCompletionTokens => "max_completion_tokens",
        TokenField::MaxTokens => "max_tokens",
    };
    body[field] = request.max_output_tokens.into();
    body
}

#[derive(Debug, Deserialize)]
struct Completion {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    message: AnswerMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct AnswerMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<WireCall>,
}

#[derive(Debug, Deserialize, Serialize)]
struct WireCall {
    id: String,
    function: WireFunction,
}

#[derive(Debug, Deserialize, Serialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    arguments: String,
}

#[derive(Debug, Deserialize)]
struct Usage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

/// Reads a chat completion. Arguments that are not JSON are kept as the raw string, which
/// the turn answers as an error without calling anything (M-2).
pub fn reply_from(bytes: &[u8]) -> Result<ModelReply, ModelError> {
    let completion: Completion = serde_json::from_slice(bytes)
        .map_err(|e| ModelError::Malformed(format!("not a chat completion: {e}")))?;
    let Some(choice) = completion.choices.into_iter().next() else {
        return Err(ModelError::Malformed("no choices".into()));
    };
    if let Some(u) = completion.usage {
        tracing::info!(
            input_tokens = u.prompt_tokens,
            output_tokens = u.completion_tokens,
            finish_reason = choice.finish_reason.as_deref().unwrap_or(""),
            "chat completion"
        );
    }
    let tool_calls = choice
        .message
        .tool_calls
        .into_iter()
        .map(|c| ToolCall {
            id: c.id,
            name: c.function.name,
            arguments: serde_json::from_str(&c.function.arguments)
                .unwrap_or(Value::String(c.function.arguments)),
        })
        .collect();
    Ok(ModelReply {
        text: choice.message.content.filter(|t| !t.trim().is_empty()),
        tool_calls,
        truncated: choice.finish_reason.as_deref() == Some("length"),
    })
}

/// S-1: a streamed chat completion (`stream: true`, server-sent events) read as it comes:
/// each text piece goes to the caller as it arrives; tool calls are assembled from their
/// pieces by index; `[DONE]` (or the end of the body) ends it. Lines are cut at `\n` on
/// bytes, so a character split across two network chunks is read whole.
#[derive(Debug, Default)]
pub struct Streamed {
    pending: Vec<u8>,
    text: String,
    calls: std::collections::BTreeMap<u64, (String, String, String)>,
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
}

#[derive(Debug, Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: ChunkDelta,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct ChunkDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<CallPiece>,
}

#[derive(Debug, Deserialize)]
struct CallPiece {
    #[serde(default)]
    index: u64,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionPiece>,
}

#[derive(Debug, Deserialize)]
struct FunctionPiece {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

impl Streamed {
    /// Reads `bytes`, passing each text piece to `delta`.
    pub fn feed(
        &mut self,
        bytes: &[u8],
        delta: &(dyn for<'s> Fn(&'s str) + Send + Sync),
    ) -> Result<(), ModelError> {
        self.pending.extend_from_slice(bytes);
        while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let Some(data) = line.trim().strip_prefix("data:").map(str::trim) else {
                continue; // `event:`, `id:`, comments, blank separators
            };
            if data == "[DONE]" || data.is_empty() {
                continue;
            }
            let chunk: Chunk = serde_json::from_str(data)
                .map_err(|e| ModelError::Malformed(format!("not a completion chunk: {e}")))?;
            for choice in chunk.choices.into_iter().take(1) {
                if let Some(piece) = choice.delta.content.filter(|p| !p.is_empty()) {
                    delta(&piece);
                    self.text.push_str(&piece);
                }
                for call in choice.delta.tool_calls {
                    let entry = self.calls.entry(call.index).or_default();
                    if let Some(id) = call.id {
                        entry.0 = id;
                    }
                    if let Some(f) = call.function {
                        entry.1.push_str(f.name.as_deref().unwrap_or_default());
                        entry.2.push_str(f.arguments.as_deref().unwrap_or_default());
                    }
                }
                if choice.finish_reason.is_some() {
                    self.finish_reason = choice.finish_reason;
                }
            }
        }
        Ok(())
    }

    /// The reply the pieces make.
    pub fn reply(self) -> ModelReply {
        let tool_calls = self
            .calls
            .into_values()
            .map(|(id, name, arguments)| ToolCall {
                id,
                name,
                arguments: serde_json::from_str(&arguments).unwrap_or(Value::String(arguments)),
            })
            .collect();
        ModelReply {
            text: Some(self.text).filter(|t| !t.trim().is_empty()),
            tool_calls,
            truncated: self.finish_reason.as_deref() == Some("length"),
        }
    }
}

/// M-5: an HTTP status, typed.
pub fn status_error(status: u16, body: &[u8]) -> ModelError {
    // The service's own message, short: it names the problem (a wrong model, a bad key)
    // and never holds the key.
    let message: String = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_default()
        .chars()
        .take(300)
        .collect();
    let cause: countersign_domain::ports::Cause = format!("HTTP {status}: {message}").into();
    match status {
        429 => ModelError::Throttled(cause),
        408 | 504 => ModelError::Timeout,
        500..=599 => ModelError::Unavailable(cause),
        _ => ModelError::Refused(cause),
    }
}

/// Where the API key is kept.
#[derive(Clone)]
pub struct ApiKey {
    /// The secret store.
    pub store: Arc<dyn SecretStore>,
    /// The secret's name or ARN.
    pub secret_id: String,
}

countersign_domain::debug_showing!(ApiKey { secret_id });

/// The OpenAI-compatible adapter.
#[derive(Debug)]
pub struct OpenAiModel {
    http: reqwest::Client,
    endpoint: Endpoint,
    key: Option<ApiKey>,
    cached: OnceCell<SecretString>,
}

impl OpenAiModel {
    /// An adapter for `endpoint`; `key` is `None` for a local server without one.
    pub fn new(http: reqwest::Client, endpoint: Endpoint, key: Option<ApiKey>) -> Self {
        Self {
            http,
            endpoint,
            key,
            cached: OnceCell::new(),
        }
    }

    /// The API key, read on first use and kept (a failed read is tried again next time).
    async fn key(&self) -> Result<Option<&SecretString>, ModelError> {
        let Some(key) = &self.key else {
            return Ok(None);
        };
        let value = self
            .cached
            .get_or_try_init(|| async {
                match key.store.get_current(&key.secret_id).await {
                    Ok(Some((value, _))) => Ok(value),
                    Ok(None) => Err(ModelError::Refused(
                        format!("the API key secret `{}` does not exist", key.secret_id).into(),
                    )),
                    Err(e) => Err(ModelError::Unavailable(Box::new(e))),
                }
            })
            .await?;
        Ok(Some(value))
    }
}

impl OpenAiModel {
    /// Sends `body` with the key.
    async fn send(&self, body: &Value) -> Result<reqwest::Response, ModelError> {
        let mut call = self.http.post(self.endpoint.url.clone()).json(body);
        if let Some(key) = self.key().await? {
            call = match self.endpoint.key_header {
                KeyHeader::Bearer => call.bearer_auth(key.expose()),
                KeyHeader::ApiKey => call.header("api-key", key.expose()),
            };
        }
        call.send().await.map_err(|e| {
            if e.is_timeout() {
                ModelError::Timeout
            } else {
                // Without the URL: reqwest's message would carry it, harmless, but the
                // cause is what matters.
                ModelError::Unavailable(e.without_url().into())
            }
        })
    }
}

#[async_trait]
impl Model for OpenAiModel {
    /// S-1: `stream: true`; a server that answers with one JSON completion instead (some
    /// local servers ignore the flag) is read as such, its text passed whole.
    async fn step_streaming(
        &self,
        request: &ModelRequest,
        delta: &(dyn for<'s> Fn(&'s str) + Send + Sync),
    ) -> Result<ModelReply, ModelError> {
        let mut wire = body(&self.endpoint, request);
        wire["stream"] = Value::Bool(true);
        let mut answer = self.send(&wire).await?;
        let status = answer.status().as_u16();
        let events = answer
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if status != 200 || !events {
            let reply = completion(answer).await?;
            if let Some(text) = &reply.text {
                delta(text);
            }
            return Ok(reply);
        }
        let mut streamed = Streamed::default();
        while let Some(bytes) = answer
            .chunk()
            .await
            .map_err(|e| ModelError::Unavailable(e.without_url().into()))?
        {
            streamed.feed(&bytes, delta)?;
        }
        streamed.feed(b"\n", delta)?;
        Ok(streamed.reply())
    }

    async fn step(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        completion(self.send(&body(&self.endpoint, request)).await?).await
    }
}

/// A whole (not streamed) answer: the completion, or its status typed (M-5).
async fn completion(answer: reqwest::Response) -> Result<ModelReply, ModelError> {
    let status = answer.status().as_u16();
    let bytes = answer
        .bytes()
        .await
        .map_err(|e| ModelError::Unavailable(e.without_url().into()))?;
    if status != 200 {
        return Err(status_error(status, &bytes));
    }
    reply_from(&bytes)
}
