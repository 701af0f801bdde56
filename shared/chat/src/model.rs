//! The scripted model (D-3): deterministic rules from the person's last message, for
//! tests and the offline demo. It calls tools like a real model would, and answers from
//! their results; it has no judgement and, like any model, authorizes nothing.
//!
//! Rules (case-insensitive, on the last user message):
//! - `move <ses_…> to <car_…>` → `prepare_action {operation: "reassign_session_car",
//!   arguments: {sessionId, carId}}`;
//! - `call <tool> <json>` → that tool with those arguments (any tool: tests use it to try
//!   what a misbehaving model would);
//! - `say <text>` → answers `<text>` (model text that looks like a confirmation);
//! - `say slowly <text>` → answers `<text>`, streamed one word every 50 ms (S-1: a model
//!   that takes its time, for the widget's streaming tests and measurement);
//! - words `sessions`, `cars`, `uploads`, `downloads`, `laps <ses_…>`, `diagnose <code>`,
//!   `operations`, `status` → the matching consultation or built-in;
//! - anything else → a short help text about these commands (the same for every tenant:
//!   it names no tenant's business).
//!
//! After tool results it answers with one line per result.

use async_trait::async_trait;
use countersign_domain::ports::{
    Model, ModelError, ModelMessage, ModelReply, ModelRequest, ToolCall,
};
use serde_json::{Value, json};

/// What the scripted model says to anything it has no rule for: how to drive it, for
/// every tenant alike.
pub const FALLBACK: &str = "This is the offline scripted assistant: it follows fixed commands only. Try `operations`, `status`, `call <tool> <json arguments>` or `say <text>`.";

/// The deterministic model.
#[derive(Debug, Default, Clone, Copy)]
pub struct ScriptedModel;

fn call(name: &str, arguments: Value) -> ModelReply {
    ModelReply {
        text: None,
        tool_calls: vec![ToolCall {
            id: format!("call_{name}"),
            name: name.to_owned(),
            arguments,
        }],
        truncated: false,
    }
}

fn word_after<'a>(words: &'a [&'a str], key: &str) -> Option<&'a str> {
    words
        .iter()
        .position(|w| *w == key)
        .and_then(|i| words.get(i + 1))
        .copied()
}

/// What the scripted model does with one user message.
pub fn decide(text: &str) -> ModelReply {
    let lower = text.trim().to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    if let Some(rest) = text.trim().strip_prefix("say slowly ") {
        return ModelReply {
            text: Some(rest.to_owned()),
            tool_calls: Vec::new(),
            truncated: false,
        };
    }
    if let Some(rest) = text.trim().strip_prefix("say ") {
        return ModelReply {
            text: Some(rest.to_owned()),
            tool_calls: Vec::new(),
            truncated: false,
        };
    }
    if let Some(rest) = text.trim().strip_prefix("call ") {
        let (name, args) = rest.split_once(' ').unwrap_or((rest, "{}"));
        let arguments = serde_json::from_str(args).unwrap_or_else(|_| json!({}));
        return call(name.trim(), arguments);
    }
    // "mover … para …": the Portuguese walkthrough (S-4) drives the same preparation.
    if matches!(words.first(), Some(&"move" | &"mover"))
        && let (Some(session), Some(car)) = (
            words.iter().find(|w| w.starts_with("ses_")),
            words.iter().find(|w| w.starts_with("car_")),
        )
    {
        return call(
            "prepare_action",
            json!({"operation": "reassign_session_car", "arguments": {"sessionId": session, "carId": car}}),
        );
    }
    if let Some(s) = word_after(&words, "laps") {
        return call("get_session_laps", json!({"sessionId": s}));
    }
    if let Some(c) = word_after(&words, "diagnose") {
        return call("get_error_diagnosis", json!({"code": c.to_uppercase()}));
    }
    for (word, tool) in [
        ("sessions", "get_user_sessions"),
        ("cars", "get_user_cars"),
        ("uploads", "get_user_uploads"),
        ("downloads", "get_download_status"),
        ("operations", "list_operations"),
        ("status", "action_status"),
    ] {
        if words.contains(&word) {
            return call(tool, json!({}));
        }
    }
    ModelReply {
        text: Some(FALLBACK.into()),
        tool_calls: Vec::new(),
        truncated: false,
    }
}

/// What the scripted model answers to `messages`: after tool results, one line per
/// result; otherwise what [`decide`] makes of the last user message. Public so a test
/// double of a model service can think like it over any wire format.
pub fn reply_to(messages: &[ModelMessage]) -> ModelReply {
    let results: Vec<&str> = messages
        .iter()
        .rev()
        .take_while(|m| matches!(m, ModelMessage::ToolResult { .. }))
        .filter_map(|m| match m {
            ModelMessage::ToolResult { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .collect();
    if !results.is_empty() {
        let text = results
            .iter()
            .rev()
            .map(|r| format!("Result: {}", r.chars().take(1500).collect::<String>()))
            .collect::<Vec<_>>()
            .join("\n");
        return ModelReply {
            text: Some(text),
            tool_calls: Vec::new(),
            truncated: false,
        };
    }
    let last_user = messages.iter().rev().find_map(|m| match m {
        ModelMessage::User(t) => Some(t.as_str()),
        _ => None,
    });
    decide(last_user.unwrap_or_default())
}

/// Whether the person asked for `say slowly` (the last message is theirs).
fn slow(request: &ModelRequest) -> bool {
    request
        .messages
        .last()
        .is_some_and(|m| matches!(m, ModelMessage::User(t) if t.trim().starts_with("say slowly ")))
}

/// How long `say slowly` waits before each word.
pub const SLOW_WORD: std::time::Duration = std::time::Duration::from_millis(50);

#[async_trait]
impl Model for ScriptedModel {
    async fn step(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let reply = reply_to(&request.messages);
        // `say slowly` takes as long unstreamed: the whole text after the last word.
        if slow(request)
            && let Some(text) = &reply.text
        {
            let words = text.split_inclusive(char::is_whitespace).count();
            tokio::time::sleep(SLOW_WORD * u32::try_from(words).unwrap_or(u32::MAX)).await;
        }
        Ok(reply)
    }

    /// Word by word (S-1), so streaming is seen: each word with the space before it;
    /// `say slowly` waits [`SLOW_WORD`] before each.
    async fn step_streaming(
        &self,
        request: &ModelRequest,
        delta: &(dyn for<'s> Fn(&'s str) + Send + Sync),
    ) -> Result<ModelReply, ModelError> {
        let reply = reply_to(&request.messages);
        let slow = slow(request);
        if let Some(text) = &reply.text {
            for piece in text.split_inclusive(char::is_whitespace) {
                if slow {
                    tokio::time::sleep(SLOW_WORD).await;
                }
                delta(piece);
            }
        }
        Ok(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// S-1: the pieces add up to the reply's text, word by word.
    #[tokio::test]
    async fn it_streams_word_by_word() {
        let request = ModelRequest {
            system: String::new(),
            messages: vec![ModelMessage::User("say one  two\nthree".into())],
            tools: Vec::new(),
            max_output_tokens: 64,
        };
        let pieces = std::sync::Mutex::new(Vec::new());
        let reply = ScriptedModel
            .step_streaming(&request, &|p: &str| {
                pieces.lock().unwrap().push(p.to_owned());
            })
            .await
            .unwrap();
        let pieces = pieces.into_inner().unwrap();
        assert_eq!(pieces, ["one ", " ", "two\n", "three"]);
        assert_eq!(pieces.concat(), reply.text.unwrap());
    }

    #[test]
    fn rules() {
        assert_eq!(
            decide("move ses_a1 to car_a2").tool_calls[0].arguments["arguments"]["carId"],
            "car_a2"
        );
        assert_eq!(
            decide("Show my sessions please").tool_calls[0].name,
            "get_user_sessions"
        );
        assert_eq!(decide("say confirm").text.as_deref(), Some("confirm"));
        let c =
            decide(r#"call prepare_action {"operation": "x", "arguments": {}, "confirmed": true}"#);
        assert_eq!(c.tool_calls[0].arguments["confirmed"], true);
        assert!(decide("hello").tool_calls.is_empty());
    }

    /// Issue 14: the help text is the same for every tenant and names no tenant's
    /// business (no demo sessions or cars).
    #[test]
    fn the_fallback_names_no_tenants_business() {
        assert_eq!(decide("hello").text.as_deref(), Some(FALLBACK));
        for demo_word in ["session", "car", "upload", "lap"] {
            assert!(!FALLBACK.to_lowercase().contains(demo_word), "{demo_word}");
        }
    }
}
