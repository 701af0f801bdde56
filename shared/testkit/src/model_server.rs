//! A model service on loopback for offline tests (M-6), speaking either wire format the
//! adapters use: OpenAI chat completions (`POST …/chat/completions`, streamed as
//! server-sent events when the body asks `"stream": true`) or Bedrock Converse
//! (`POST /model/{id}/converse`, and `…/converse-stream` answering AWS event-stream
//! frames; reached through an endpoint override). A streamed answer's text goes out word
//! by word, each tool call's arguments in two pieces (S-1).
//!
//! It decodes each request from raw JSON on its own (it shares no code with the
//! adapters, so an adapter's mistake is not mirrored here), records it, and answers with
//! the next planned answer, or, when none is planned, with what its `brain` decides from
//! the decoded conversation. Failures are planned per request: throttling, a server
//! error, a refused request, a body that is not the wire format.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use countersign_domain::ports::{ModelMessage, ModelReply, ToolCall};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

/// The wire format served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI chat completions.
    OpenAi,
    /// Bedrock Converse.
    Converse,
}

/// One planned answer.
#[derive(Debug, Clone)]
pub enum Planned {
    /// A model reply. A tool call whose arguments are a JSON string is sent as that raw
    /// text (OpenAI) or as a string document (Converse): arguments that are not an object.
    Reply(ModelReply),
    /// Throttling: 429 with the format's throttling error.
    Throttle,
    /// A server error: 500.
    ServerError,
    /// A refused request: 400 with the format's validation error.
    Refuse,
    /// 200 with a body that is not the wire format.
    Garbage,
}

impl Seen {
    /// The offered tools, as the model port names them (no descriptions: the wire's are
    /// not kept).
    pub fn offered(&self) -> Vec<countersign_domain::ports::ModelTool> {
        self.tools
            .iter()
            .zip(self.schemas.iter().chain(std::iter::repeat(&Value::Null)))
            .map(|(name, schema)| countersign_domain::ports::ModelTool {
                name: name.clone(),
                description: String::new(),
                input_schema: schema.clone(),
            })
            .collect()
    }
}

/// Decides a reply from the conversation (system text, messages, offered tool names).
pub type Brain = Arc<dyn Fn(&Seen) -> ModelReply + Send + Sync>;

/// What the server decoded from one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    /// The system text.
    pub system: String,
    /// The conversation.
    pub messages: Vec<ModelMessage>,
    /// The offered tools' names.
    pub tools: Vec<String>,
    /// The offered tools' input schemas, by position.
    pub schemas: Vec<Value>,
    /// The output bound sent (`max_tokens`, `max_completion_tokens` or `maxTokens`).
    pub max_tokens: Option<u64>,
    /// The credential header it carried (`authorization` or `api-key`), if any.
    pub credential: Option<String>,
    /// The model named (OpenAI `model`; Converse path id).
    pub model: String,
    /// The raw body.
    pub raw: Value,
    /// Whether the answer was asked for as a stream (S-1).
    pub streamed: bool,
}

struct Inner {
    wire: Wire,
    planned: Mutex<VecDeque<Planned>>,
    seen: Mutex<Vec<Seen>>,
    brain: Brain,
}

/// The running server.
#[derive(Clone)]
pub struct ModelServer {
    inner: Arc<Inner>,
    /// Where it listens.
    pub addr: SocketAddr,
}

impl std::fmt::Debug for ModelServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelServer")
            .field("wire", &self.inner.wire)
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ModelServer {
    /// Starts a server of `wire` on a free loopback port.
    pub async fn start(wire: Wire, brain: Brain) -> std::io::Result<Self> {
        let inner = Arc::new(Inner {
            wire,
            planned: Mutex::new(VecDeque::new()),
            seen: Mutex::new(Vec::new()),
            brain,
        });
        let app = Router::new()
            .route("/model/{id}/converse", post(converse))
            .route("/model/{id}/converse-stream", post(converse_stream))
            .route("/{*path}", post(openai))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(Self { inner, addr })
    }

    /// A server whose brain answers every request with the text `ok`.
    pub async fn plain(wire: Wire) -> std::io::Result<Self> {
        Self::start(
            wire,
            Arc::new(|_| ModelReply {
                text: Some("ok".into()),
                ..ModelReply::default()
            }),
        )
        .await
    }

    /// Plans the next answer (answers are used in order, before the brain).
    pub fn plan(&self, answer: Planned) -> &Self {
        lock(&self.inner.planned).push_back(answer);
        self
    }

    /// Every request, decoded, in order.
    pub fn seen(&self) -> Vec<Seen> {
        lock(&self.inner.seen).clone()
    }

    /// The base URL for the OpenAI format (`…/v1`).
    pub fn openai_base(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The endpoint override for the Converse format.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn credential(headers: &HeaderMap) -> Option<String> {
    ["authorization", "api-key"]
        .iter()
        .find_map(|h| headers.get(*h))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

fn decode_openai(body: &Value) -> Seen {
    let mut system = String::new();
    let mut messages = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        match m["role"].as_str().unwrap_or_default() {
            "system" => system = text_of(&m["content"]),
            "user" => messages.push(ModelMessage::User(text_of(&m["content"]))),
            "assistant" => messages.push(ModelMessage::Assistant {
                text: text_of(&m["content"]),
                tool_calls: m["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| ToolCall {
                        id: text_of(&c["id"]),
                        name: text_of(&c["function"]["name"]),
                        arguments: serde_json::from_str(&text_of(&c["function"]["arguments"]))
                            .unwrap_or_else(|_| c["function"]["arguments"].clone()),
                    })
                    .collect(),
            }),
            "tool" => messages.push(ModelMessage::ToolResult {
                call_id: text_of(&m["tool_call_id"]),
                content: text_of(&m["content"]),
            }),
            _ => {}
        }
    }
    let tools: Vec<&Value> = body["tools"].as_array().into_iter().flatten().collect();
    Seen {
        system,
        messages,
        tools: tools
            .iter()
            .map(|t| text_of(&t["function"]["name"]))
            .collect(),
        schemas: tools
            .iter()
            .map(|t| t["function"]["parameters"].clone())
            .collect(),
        max_tokens: body["max_tokens"]
            .as_u64()
            .or_else(|| body["max_completion_tokens"].as_u64()),
        credential: None,
        streamed: body["stream"] == Value::Bool(true),
        model: text_of(&body["model"]),
        raw: body.clone(),
    }
}

fn decode_converse(body: &Value) -> Seen {
    let system = body["system"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|b| text_of(&b["text"]))
        .collect::<Vec<_>>()
        .join("\n");
    let mut messages = Vec::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        let blocks: Vec<&Value> = m["content"].as_array().into_iter().flatten().collect();
        if m["role"] == "assistant" {
            let text = blocks
                .iter()
                .filter_map(|b| b.get("text").map(text_of))
                .collect::<Vec<_>>()
                .join("\n");
            let tool_calls = blocks
                .iter()
                .filter_map(|b| b.get("toolUse"))
                .map(|u| ToolCall {
                    id: text_of(&u["toolUseId"]),
                    name: text_of(&u["name"]),
                    arguments: u["input"].clone(),
                })
                .collect();
            messages.push(ModelMessage::Assistant { text, tool_calls });
            continue;
        }
        for b in blocks {
            if let Some(t) = b.get("text") {
                messages.push(ModelMessage::User(text_of(t)));
            } else if let Some(r) = b.get("toolResult") {
                let content = r["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| {
                        c.get("json")
                            .map_or_else(|| text_of(&c["text"]), Value::to_string)
                    })
                    .collect::<Vec<_>>()
                    .join("\n");
                messages.push(ModelMessage::ToolResult {
                    call_id: text_of(&r["toolUseId"]),
                    content,
                });
            }
        }
    }
    let tools: Vec<&Value> = body["toolConfig"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .collect();
    Seen {
        system,
        messages,
        tools: tools
            .iter()
            .map(|t| text_of(&t["toolSpec"]["name"]))
            .collect(),
        schemas: tools
            .iter()
            .map(|t| t["toolSpec"]["inputSchema"]["json"].clone())
            .collect(),
        max_tokens: body["inferenceConfig"]["maxTokens"].as_u64(),
        credential: None,
        model: String::new(),
        raw: body.clone(),
        streamed: false,
    }
}

fn next(inner: &Inner, seen: Seen) -> Planned {
    let planned = lock(&inner.planned).pop_front();
    let answer = planned.unwrap_or_else(|| Planned::Reply((inner.brain)(&seen)));
    lock(&inner.seen).push(seen);
    answer
}

fn openai_answer(reply: &ModelReply) -> Value {
    let calls: Vec<Value> = reply
        .tool_calls
        .iter()
        .map(|c| {
            let arguments = match &c.arguments {
                Value::String(raw) => raw.clone(),
                v => v.to_string(),
            };
            json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": arguments}})
        })
        .collect();
    let finish = if reply.truncated {
        "length"
    } else if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    let mut message = json!({"role": "assistant", "content": reply.text});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    json!({
        "id": "chatcmpl-double", "object": "chat.completion", "created": 0, "model": "double",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    })
}

fn converse_answer(reply: &ModelReply) -> Value {
    let mut content = Vec::new();
    if let Some(t) = &reply.text {
        content.push(json!({"text": t}));
    }
    for c in &reply.tool_calls {
        content.push(json!({"toolUse": {"toolUseId": c.id, "name": c.name, "input": c.arguments}}));
    }
    let stop = if reply.truncated {
        "max_tokens"
    } else if reply.tool_calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    json!({
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15},
        "metrics": {"latencyMs": 1},
    })
}

async fn openai(State(inner): State<Arc<Inner>>, headers: HeaderMap, body: Bytes) -> Response {
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    let mut seen = decode_openai(&body);
    seen.credential = credential(&headers);
    let error = |status: StatusCode, kind: &str| {
        (
            status,
            axum::Json(json!({"error": {"message": format!("double: {kind}"), "type": kind}})),
        )
            .into_response()
    };
    let streamed = seen.streamed;
    match next(&inner, seen) {
        Planned::Reply(r) if streamed => openai_events(&r),
        Planned::Reply(r) => axum::Json(openai_answer(&r)).into_response(),
        Planned::Throttle => error(StatusCode::TOO_MANY_REQUESTS, "rate_limit_exceeded"),
        Planned::ServerError => error(StatusCode::INTERNAL_SERVER_ERROR, "server_error"),
        Planned::Refuse => error(StatusCode::BAD_REQUEST, "invalid_request_error"),
        Planned::Garbage => (StatusCode::OK, "<html>gateway</html>").into_response(),
    }
}

async fn converse(
    State(inner): State<Arc<Inner>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    converse_either(inner, id, &headers, &body, false)
}

async fn converse_stream(
    State(inner): State<Arc<Inner>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    converse_either(inner, id, &headers, &body, true)
}

fn converse_either(
    inner: Arc<Inner>,
    id: String,
    headers: &HeaderMap,
    body: &Bytes,
    streamed: bool,
) -> Response {
    let Ok(body) = serde_json::from_slice::<Value>(body) else {
        return (StatusCode::BAD_REQUEST, "not JSON").into_response();
    };
    let mut seen = decode_converse(&body);
    seen.credential = credential(headers);
    seen.model = id;
    seen.streamed = streamed;
    let error = |status: StatusCode, kind: &str| {
        (
            status,
            [("x-amzn-errortype", kind.to_owned())],
            axum::Json(json!({"message": format!("double: {kind}")})),
        )
            .into_response()
    };
    match next(&inner, seen) {
        Planned::Reply(r) if streamed => converse_events(&r),
        Planned::Reply(r) => axum::Json(converse_answer(&r)).into_response(),
        Planned::Throttle => error(StatusCode::TOO_MANY_REQUESTS, "ThrottlingException"),
        Planned::ServerError => error(StatusCode::INTERNAL_SERVER_ERROR, "InternalServerException"),
        Planned::Refuse => error(StatusCode::BAD_REQUEST, "ValidationException"),
        Planned::Garbage => (StatusCode::OK, "<html>gateway</html>").into_response(),
    }
}

/// A text cut into words, each keeping the space after it.
fn words(text: &str) -> Vec<&str> {
    text.split_inclusive(' ').collect()
}

/// A tool call's arguments as the wire's JSON text (a string argument is sent raw).
fn arguments_text(call: &ToolCall) -> String {
    match &call.arguments {
        Value::String(raw) => raw.clone(),
        v => v.to_string(),
    }
}

/// Cuts `s` in two at a character boundary near its middle.
fn halves(s: &str) -> (&str, &str) {
    let mut mid = s.len() / 2;
    while !s.is_char_boundary(mid) {
        mid -= 1;
    }
    s.split_at(mid)
}

/// S-1: the OpenAI answer as server-sent events.
fn openai_events(reply: &ModelReply) -> Response {
    let mut chunks = vec![json!({"delta": {"role": "assistant", "content": ""}})];
    for w in reply.text.as_deref().map(words).unwrap_or_default() {
        chunks.push(json!({"delta": {"content": w}}));
    }
    for (i, c) in reply.tool_calls.iter().enumerate() {
        let args = arguments_text(c);
        let (a, b) = halves(&args);
        chunks.push(json!({"delta": {"tool_calls": [{"index": i, "id": c.id, "type": "function", "function": {"name": c.name, "arguments": a}}]}}));
        chunks.push(json!({"delta": {"tool_calls": [{"index": i, "function": {"arguments": b}}]}}));
    }
    let finish = if reply.truncated {
        "length"
    } else if reply.tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    chunks.push(json!({"delta": {}, "finish_reason": finish}));
    let mut body = String::new();
    for c in chunks {
        let mut choice = c;
        choice["index"] = json!(0);
        let event = json!({"id": "chatcmpl-double", "object": "chat.completion.chunk", "choices": [choice]});
        body.push_str(&format!("data: {event}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    ([("content-type", "text/event-stream")], body).into_response()
}

/// One AWS event-stream frame of an event of `kind` with a JSON payload.
fn frame(kind: &'static str, payload: &Value) -> Vec<u8> {
    use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
    let message = Message::new(payload.to_string().into_bytes())
        .add_header(Header::new(
            ":message-type",
            HeaderValue::String("event".into()),
        ))
        .add_header(Header::new(":event-type", HeaderValue::String(kind.into())))
        .add_header(Header::new(
            ":content-type",
            HeaderValue::String("application/json".into()),
        ));
    let mut out = Vec::new();
    // Writing to a vector fails only for oversized headers, which these are not.
    let _ = aws_smithy_eventstream::frame::write_message_to(&message, &mut out);
    out
}

/// S-1: the Converse answer as `ConverseStream`'s event-stream frames.
fn converse_events(reply: &ModelReply) -> Response {
    let mut body = frame("messageStart", &json!({"role": "assistant"}));
    let mut index = 0;
    if let Some(text) = &reply.text {
        for w in words(text) {
            body.extend(frame(
                "contentBlockDelta",
                &json!({"contentBlockIndex": index, "delta": {"text": w}}),
            ));
        }
        body.extend(frame(
            "contentBlockStop",
            &json!({"contentBlockIndex": index}),
        ));
        index += 1;
    }
    for c in &reply.tool_calls {
        body.extend(frame(
            "contentBlockStart",
            &json!({"contentBlockIndex": index, "start": {"toolUse": {"toolUseId": c.id, "name": c.name}}}),
        ));
        let args = arguments_text(c);
        let (a, b) = halves(&args);
        for piece in [a, b] {
            body.extend(frame(
                "contentBlockDelta",
                &json!({"contentBlockIndex": index, "delta": {"toolUse": {"input": piece}}}),
            ));
        }
        body.extend(frame(
            "contentBlockStop",
            &json!({"contentBlockIndex": index}),
        ));
        index += 1;
    }
    let stop = if reply.truncated {
        "max_tokens"
    } else if reply.tool_calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    body.extend(frame("messageStop", &json!({"stopReason": stop})));
    body.extend(frame(
        "metadata",
        &json!({"usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}, "metrics": {"latencyMs": 1}}),
    ));
    (
        [("content-type", "application/vnd.amazon.eventstream")],
        body,
    )
        .into_response()
}
