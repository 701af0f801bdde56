//! The adapters' own work per model round, without the network: building the request
//! from a turn (50 messages of history, 12 tools with schemas, a round of tool results)
//! and reading an answer with a tool call back. For the OpenAI-compatible adapter that
//! includes the JSON encoding and decoding; for Bedrock, the conversion to and from the
//! SDK's types (the SDK's own serialization is the SDK's).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use aws_sdk_bedrockruntime::operation::converse::ConverseOutput;
use aws_sdk_bedrockruntime::types::{
    ContentBlock, ConversationRole, ConverseOutput as Output, Message, StopReason, TokenUsage,
    ToolUseBlock,
};
use countersign_domain::ports::{ModelMessage, ModelRequest, ModelTool, ToolCall};
use countersign_models::{bedrock, document, openai};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::hint::black_box;

fn request() -> ModelRequest {
    let mut messages = Vec::new();
    for i in 0..24 {
        messages.push(ModelMessage::User(format!(
            "Message {i}: where is my session from last Sunday at Interlagos?"
        )));
        messages.push(ModelMessage::Assistant {
            text: format!("Answer {i}: your session ses_a{i} has 12 laps, best 1:38.441."),
            tool_calls: Vec::new(),
        });
    }
    messages.push(ModelMessage::Assistant {
        text: String::new(),
        tool_calls: vec![ToolCall {
            id: "tool_1".into(),
            name: "get_user_sessions".into(),
            arguments: json!({"limit": 10}),
        }],
    });
    let items: Vec<_> = (0..10)
        .map(|i| json!({"sessionId": format!("ses_a{i}"), "track": "Interlagos", "date": "2026-11-20", "carId": "car_a1", "lapCount": 12}))
        .collect();
    messages.push(ModelMessage::ToolResult {
        call_id: "tool_1".into(),
        content: json!({"ok": true, "data": {"items": items}, "meta": {"tool": "get_user_sessions", "version": "1.0.0"}}).to_string(),
    });
    let tools = (0..12)
        .map(|i| ModelTool {
            name: format!("tool_{i}"),
            description: "Lists the person's sessions, newest first, with track, date, car and lap count.".into(),
            input_schema: json!({"type": "object", "properties": {"limit": {"type": "integer", "minimum": 1, "maximum": 50}, "track": {"type": "string"}}, "additionalProperties": false}),
        })
        .collect();
    ModelRequest {
        system: countersign_domain::texts::model_system_text(
            countersign_domain::texts::Language::En,
        )
        .into(),
        messages,
        tools,
        max_output_tokens: 1024,
    }
}

fn bench(c: &mut Criterion) {
    let request = request();
    let endpoint =
        openai::Endpoint::new(&url::Url::parse("https://api.openai.com/v1").unwrap(), "m");
    let answer = serde_json::to_vec(&json!({
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "prepare_action",
                "arguments": "{\"operation\":\"reassign_session_car\",\"arguments\":{\"sessionId\":\"ses_a1\",\"carId\":\"car_a2\"}}"}}]}}],
        "usage": {"prompt_tokens": 2400, "completion_tokens": 40}
    }))
    .unwrap();
    c.bench_function("openai: request body (encoded)", |b| {
        b.iter(|| serde_json::to_vec(&openai::body(&endpoint, black_box(&request))).unwrap());
    });
    c.bench_function("openai: read an answer with a tool call", |b| {
        b.iter(|| openai::reply_from(black_box(&answer)).unwrap());
    });
    let output = ConverseOutput::builder()
        .output(Output::Message(
            Message::builder()
                .role(ConversationRole::Assistant)
                .content(ContentBlock::ToolUse(
                    ToolUseBlock::builder()
                        .tool_use_id("tooluse_1")
                        .name("prepare_action")
                        .input(document::to_document(&json!({"operation": "reassign_session_car", "arguments": {"sessionId": "ses_a1", "carId": "car_a2"}})))
                        .build()
                        .unwrap(),
                ))
                .build()
                .unwrap(),
        ))
        .stop_reason(StopReason::ToolUse)
        .usage(TokenUsage::builder().input_tokens(2400).output_tokens(40).total_tokens(2440).build().unwrap())
        .build()
        .unwrap();
    c.bench_function("bedrock: request parts", |b| {
        b.iter(|| bedrock::converse_input(black_box(&request)).unwrap());
    });
    c.bench_function("bedrock: read an answer with a tool call", |b| {
        b.iter(|| bedrock::reply_from(black_box(&output)).unwrap());
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
