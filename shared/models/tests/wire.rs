//! M-6: each adapter against a local server speaking its wire format
//! (`countersign_testkit::model_server`): what is sent, what is read back, and each
//! failure typed (M-5).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use aws_sdk_bedrockruntime::config::{BehaviorVersion, Credentials, Region};
use countersign_domain::ports::{
    Model, ModelError, ModelMessage, ModelReply, ModelRequest, ModelTool, SecretStore, ToolCall,
};
use countersign_domain::secret::SecretString;
use countersign_models::bedrock::BedrockModel;
use countersign_models::openai::{ApiKey, Endpoint, OpenAiModel};
use countersign_testkit::MemorySecrets;
use countersign_testkit::model_server::{ModelServer, Planned, Wire};
use serde_json::{Value, json};
use std::sync::Arc;

const KEY: &str = "sk-test-model-key";

fn request() -> ModelRequest {
    ModelRequest {
        system: "fixed system text".into(),
        messages: vec![
            ModelMessage::User("my sessions".into()),
            ModelMessage::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "get_user_sessions".into(),
                    arguments: json!({"limit": 2}),
                }],
            },
            ModelMessage::ToolResult {
                call_id: "c1".into(),
                content: json!({"ok": true, "data": {"items": ["ses_a1"]}}).to_string(),
            },
        ],
        tools: vec![ModelTool {
            name: "get_user_sessions".into(),
            description: "Lists sessions.".into(),
            input_schema: json!({"type": "object", "properties": {"limit": {"type": "integer", "minimum": 1}}, "additionalProperties": false}),
        }],
        max_output_tokens: 321,
    }
}

async fn openai(server: &ModelServer) -> OpenAiModel {
    let secrets = Arc::new(MemorySecrets::default());
    secrets
        .put("model-key", &SecretString::new(KEY))
        .await
        .unwrap();
    let base = url::Url::parse(&server.openai_base()).unwrap();
    OpenAiModel::new(
        reqwest::Client::new(),
        Endpoint::new(&base, "double-model"),
        Some(ApiKey {
            store: secrets,
            secret_id: "model-key".into(),
        }),
    )
}

fn bedrock(server: &ModelServer) -> BedrockModel {
    let config = aws_sdk_bedrockruntime::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "test"))
        .endpoint_url(server.endpoint())
        .retry_config(aws_sdk_bedrockruntime::config::retry::RetryConfig::disabled())
        .build();
    BedrockModel::new(
        aws_sdk_bedrockruntime::Client::from_conf(config),
        "anthropic.claude-test-v1:0",
    )
}

async fn adapters() -> Vec<(Wire, ModelServer, Box<dyn Model>)> {
    let o = ModelServer::plain(Wire::OpenAi).await.unwrap();
    let b = ModelServer::plain(Wire::Converse).await.unwrap();
    let om: Box<dyn Model> = Box::new(openai(&o).await);
    let bm: Box<dyn Model> = Box::new(bedrock(&b));
    vec![(Wire::OpenAi, o, om), (Wire::Converse, b, bm)]
}

/// M-2, M-3, M-4: the system text, the conversation (a tool call and its result as the
/// envelope's JSON), the tools with their schemas as given, and the output bound reach
/// the service in its format.
#[tokio::test]
async fn m6_each_adapter_sends_the_turn_in_its_wire_format() {
    for (wire, server, model) in adapters().await {
        let reply = model.step(&request()).await.unwrap();
        assert_eq!(reply.text.as_deref(), Some("ok"), "{wire:?}");
        let seen = server.seen().pop().unwrap();
        assert_eq!(seen.system, "fixed system text", "{wire:?}");
        assert_eq!(seen.tools, ["get_user_sessions"], "{wire:?}");
        assert_eq!(seen.schemas[0], request().tools[0].input_schema, "{wire:?}");
        assert_eq!(seen.max_tokens, Some(321), "{wire:?}");
        assert_eq!(seen.messages[0], ModelMessage::User("my sessions".into()));
        let ModelMessage::Assistant { tool_calls, .. } = &seen.messages[1] else {
            panic!("{wire:?}: {:?}", seen.messages)
        };
        assert_eq!(tool_calls[0].arguments, json!({"limit": 2}), "{wire:?}");
        let ModelMessage::ToolResult { call_id, content } = &seen.messages[2] else {
            panic!("{wire:?}: {:?}", seen.messages)
        };
        assert_eq!(call_id, "c1");
        assert_eq!(
            serde_json::from_str::<Value>(content).unwrap(),
            json!({"ok": true, "data": {"items": ["ses_a1"]}}),
            "{wire:?}"
        );
        match wire {
            Wire::OpenAi => {
                assert_eq!(seen.credential.as_deref(), Some(&*format!("Bearer {KEY}")));
                assert_eq!(seen.model, "double-model");
            }
            Wire::Converse => {
                assert!(seen.credential.unwrap().starts_with("AWS4-HMAC-SHA256"));
                assert_eq!(seen.model, "anthropic.claude-test-v1:0");
            }
        }
    }
}

/// The model's tool calls are read back; arguments that are not JSON stay the raw text
/// (the turn refuses them, M-2); a cut answer is marked (M-4).
#[tokio::test]
async fn m6_tool_calls_text_and_truncation_are_read_back() {
    for (wire, server, model) in adapters().await {
        server.plan(Planned::Reply(ModelReply {
            text: Some("Let me look.".into()),
            tool_calls: vec![
                ToolCall {
                    id: "t1".into(),
                    name: "prepare_action".into(),
                    arguments: json!({"operation": "x", "arguments": {"a": 1}}),
                },
                ToolCall {
                    id: "t2".into(),
                    name: "prepare_action".into(),
                    arguments: Value::String("{\"operation\": ".into()),
                },
            ],
            truncated: false,
        }));
        let reply = model.step(&request()).await.unwrap();
        assert_eq!(reply.text.as_deref(), Some("Let me look."), "{wire:?}");
        assert_eq!(reply.tool_calls.len(), 2, "{wire:?}");
        assert_eq!(reply.tool_calls[0].arguments["arguments"]["a"], 1);
        assert!(!reply.tool_calls[1].arguments.is_object(), "{wire:?}");
        assert!(!reply.truncated);
        server.plan(Planned::Reply(ModelReply {
            text: Some("Your sessions are".into()),
            tool_calls: Vec::new(),
            truncated: true,
        }));
        assert!(model.step(&request()).await.unwrap().truncated, "{wire:?}");
    }
}

/// M-5: throttling, a server error, a refused request and a body outside the format are
/// each typed; only the first two are retryable.
#[tokio::test]
async fn m5_each_failure_is_typed() {
    for (wire, server, model) in adapters().await {
        for (planned, kind, retryable) in [
            (Planned::Throttle, "throttled", true),
            (Planned::ServerError, "unavailable", true),
            (Planned::Refuse, "refused", false),
            (Planned::Garbage, "malformed", false),
        ] {
            server.plan(planned);
            let e: ModelError = model.step(&request()).await.unwrap_err();
            assert_eq!(e.kind(), kind, "{wire:?}: {e:?}");
            assert_eq!(e.retryable(), retryable, "{wire:?}");
        }
        // And the next request succeeds: nothing is stuck.
        assert!(model.step(&request()).await.is_ok(), "{wire:?}");
    }
}

/// M-1: the API key is read from the secret store once and kept; a missing secret is a
/// refusal naming the secret, never the key.
#[tokio::test]
async fn m1_the_api_key_comes_from_the_secret_store() {
    let server = ModelServer::plain(Wire::OpenAi).await.unwrap();
    let base = url::Url::parse(&server.openai_base()).unwrap();
    let model = OpenAiModel::new(
        reqwest::Client::new(),
        Endpoint::new(&base, "m"),
        Some(ApiKey {
            store: Arc::new(MemorySecrets::default()),
            secret_id: "absent".into(),
        }),
    );
    let e = model.step(&request()).await.unwrap_err();
    assert_eq!(e.kind(), "refused");
    assert!(e.to_string().contains("refused") || format!("{e:?}").contains("absent"));
    assert!(server.seen().is_empty(), "nothing was sent without the key");
}

/// S-1: a streamed completion read in network chunks cut anywhere (inside a line, inside a
/// multi-byte character): the text pieces go out in order and add up to the reply's text;
/// tool calls are assembled from their pieces; a `length` finish is a truncation; and a
/// chunk that is not JSON is a malformed answer.
#[test]
fn s1_a_streamed_completion_is_read_piece_by_piece() {
    use countersign_models::openai::Streamed;
    let events = [
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
        json!({"choices": [{"index": 0, "delta": {"content": "Olá, "}}]}),
        json!({"choices": [{"index": 0, "delta": {"content": "sessões"}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_user_", "arguments": ""}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"name": "sessions", "arguments": "{\"limit\""}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ": 2}"}}]}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4}}),
    ];
    let mut sse: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    sse.push_str(": keep-alive\n\ndata: [DONE]\n\n");
    let bytes = sse.as_bytes();
    for cut in [1, 3, 7, 64] {
        let pieces = std::sync::Mutex::new(Vec::new());
        let delta = |p: &str| {
            pieces.lock().unwrap().push(p.to_owned());
        };
        let mut streamed = Streamed::default();
        for chunk in bytes.chunks(cut) {
            streamed.feed(chunk, &delta).unwrap();
        }
        let reply = streamed.reply();
        assert_eq!(
            pieces.into_inner().unwrap(),
            ["Olá, ", "sessões"],
            "cut {cut}"
        );
        assert_eq!(reply.text.as_deref(), Some("Olá, sessões"));
        assert_eq!(
            reply.tool_calls,
            vec![ToolCall {
                id: "call_1".into(),
                name: "get_user_sessions".into(),
                arguments: json!({"limit": 2}),
            }]
        );
        assert!(!reply.truncated);
    }
    let mut cut_short = Streamed::default();
    let line = json!({"choices": [{"delta": {"content": "half"}, "finish_reason": "length"}]});
    cut_short
        .feed(format!("data: {line}\n").as_bytes(), &|_| {})
        .unwrap();
    assert!(cut_short.reply().truncated);
    let mut broken = Streamed::default();
    assert!(matches!(
        broken.feed(b"data: {not json\n", &|_| {}),
        Err(ModelError::Malformed(_))
    ));
}

/// S-1: each adapter asks for a stream (OpenAI `stream: true`, Bedrock `ConverseStream`),
/// passes the text on word by word as the server sends it, and reads back the same reply
/// as the buffered call: text, tool calls assembled from their pieces, truncation.
#[tokio::test]
async fn s1_each_adapter_streams_the_text_word_by_word_and_reads_the_same_reply() {
    for (wire, server, model) in adapters().await {
        let planned = ModelReply {
            text: Some("Vou consultar as sessões agora.".into()),
            tool_calls: vec![
                ToolCall {
                    id: "t1".into(),
                    name: "prepare_action".into(),
                    arguments: json!({"operation": "x", "arguments": {"a": "ç"}}),
                },
                ToolCall {
                    id: "t2".into(),
                    name: "prepare_action".into(),
                    arguments: Value::String("{\"operation\": ".into()),
                },
            ],
            truncated: false,
        };
        server.plan(Planned::Reply(planned.clone()));
        let pieces = std::sync::Mutex::new(Vec::<String>::new());
        let reply = model
            .step_streaming(&request(), &|p| pieces.lock().unwrap().push(p.to_owned()))
            .await
            .unwrap();
        let pieces = pieces.into_inner().unwrap();
        assert_eq!(
            pieces,
            ["Vou ", "consultar ", "as ", "sessões ", "agora."],
            "{wire:?}: word by word"
        );
        assert!(
            server.seen().last().unwrap().streamed,
            "{wire:?}: asked as a stream"
        );
        assert_eq!(reply.text, planned.text, "{wire:?}");
        assert_eq!(reply.tool_calls[0], planned.tool_calls[0], "{wire:?}");
        assert!(!reply.tool_calls[1].arguments.is_object(), "{wire:?}");
        assert!(!reply.truncated);
        server.plan(Planned::Reply(planned.clone()));
        assert_eq!(
            model.step(&request()).await.unwrap().text,
            reply.text,
            "{wire:?}"
        );
        server.plan(Planned::Reply(ModelReply {
            text: Some("Your sessions are".into()),
            tool_calls: Vec::new(),
            truncated: true,
        }));
        let cut = model.step_streaming(&request(), &|_| {}).await.unwrap();
        assert!(cut.truncated, "{wire:?}");
    }
}

/// M-5 on the streaming path: each failure typed as on the buffered one, nothing streamed.
#[tokio::test]
async fn s1_m5_each_failure_of_a_stream_is_typed() {
    for (wire, server, model) in adapters().await {
        for (planned, kind) in [
            (Planned::Throttle, "throttled"),
            (Planned::ServerError, "unavailable"),
            (Planned::Refuse, "refused"),
            (Planned::Garbage, "malformed"),
        ] {
            server.plan(planned);
            let pieces = std::sync::Mutex::new(0);
            let e = model
                .step_streaming(&request(), &|_| *pieces.lock().unwrap() += 1)
                .await
                .unwrap_err();
            assert_eq!(e.kind(), kind, "{wire:?}: {e:?}");
            assert_eq!(*pieces.lock().unwrap(), 0, "{wire:?}");
        }
        assert!(
            model.step_streaming(&request(), &|_| {}).await.is_ok(),
            "{wire:?}"
        );
    }
}
