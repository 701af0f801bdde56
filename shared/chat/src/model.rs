//! The scripted model (D-3): deterministic rules from the person's last message, for
//! tests and the offline demo. It calls tools like a real model would, and answers from
//! their results; it has no judgement and, like any model, authorizes nothing. It knows
//! no tenant (A-1): the tools it calls are the ones it is offered, the operations the ones
//! `list_operations` names, their arguments the names their schemas give.
//!
//! Rules (case-insensitive, on the last user message):
//! - `move <a> to <b>` (or `mover <a> para <b>`) → `list_operations`, then `prepare_action`
//!   with the first operation whose arguments schema requires two values, `<a>` and `<b>`
//!   in its order;
//! - `call <tool> <json>` → that tool with those arguments (any tool: tests use it to try
//!   what a misbehaving model would);
//! - `say <text>` → answers `<text>` (model text that looks like a confirmation);
//! - `say slowly <text>` → answers `<text>`, streamed one word every 50 ms (S-1: a model
//!   that takes its time, for the widget's streaming tests and measurement);
//! - a word naming an offered tool (`invoices` → a tool whose name ends in `invoices`,
//!   `orders` → one with an `orders` part, `diagnose` → one with a `diagnosis` part; the
//!   last part of the name first) → that tool, with the word after it as its first required argument when
//!   it requires one;
//! - anything else → a short help text about these commands (the same for every tenant:
//!   it names no tenant's business).
//!
//! After tool results it answers with short readable lines (the envelope's data, a list's
//! items one per line, a refusal as its message and code), never the raw JSON. It speaks the conversation's language (issue
//! 50): it reads it from the system text, the domain's fixed text per language.

use async_trait::async_trait;
use countersign_domain::ports::{
    Model, ModelError, ModelMessage, ModelReply, ModelRequest, ModelTool, ToolCall,
};
use countersign_domain::texts::{Language, model_system_text};
use serde_json::{Map, Value, json};

/// What the scripted model says to anything it has no rule for: how to drive it, for
/// every tenant alike.
pub const FALLBACK: &str = "This is the offline scripted assistant: it follows fixed commands only. Try `operations`, `status`, `call <tool> <json arguments>` or `say <text>`.";

/// [`FALLBACK`] in Portuguese.
pub const FALLBACK_PT: &str = "Este é o assistente roteirizado offline: ele segue apenas comandos fixos. Experimente `operations`, `status`, `call <ferramenta> <argumentos json>` ou `say <texto>`.";

/// What it says when a `move` finds no operation to prepare.
pub const NO_OPERATION: &str =
    "No write operation that takes two values is enabled here, so nothing was prepared.";

/// [`NO_OPERATION`] in Portuguese.
pub const NO_OPERATION_PT: &str = "Nenhuma operação de escrita que recebe dois valores está habilitada aqui, então nada foi preparado.";

/// The conversation's language, as the chat's system text says it.
fn language_of(system: &str) -> Language {
    if system == model_system_text(Language::Pt) {
        Language::Pt
    } else {
        Language::En
    }
}

/// A tool's answer as short readable lines: the envelope's `data` (or its error's
/// message), a list's items one per line as `key: value` pairs; anything that is not JSON
/// as it came. At most 1,500 characters.
pub fn readable(content: &str) -> String {
    let Ok(v) = serde_json::from_str::<Value>(content) else {
        return content.chars().take(1500).collect();
    };
    let body = if v.get("ok") == Some(&Value::Bool(false)) {
        // A refusal: its words, and its code (what a developer driving the demo looks up).
        let message = v.pointer("/error/message").and_then(Value::as_str);
        let code = v.pointer("/error/code").and_then(Value::as_str);
        match (message, code) {
            (Some(m), Some(c)) => Value::String(format!("{m} ({c})")),
            (Some(m), None) => Value::String(m.to_owned()),
            _ => v,
        }
    } else {
        v.get("data").cloned().unwrap_or(v)
    };
    let mut lines = Vec::new();
    match &body {
        Value::Array(items) => lines.extend(items.iter().map(|i| format!("- {}", inline(i)))),
        Value::Object(fields) => {
            for (key, value) in fields {
                match value {
                    Value::Array(items) if !items.is_empty() => {
                        lines.push(format!("{key}:"));
                        lines.extend(items.iter().map(|i| format!("- {}", inline(i))));
                    }
                    _ => lines.push(format!("{key}: {}", inline(value))),
                }
            }
        }
        other => lines.push(inline(other)),
    }
    lines.join("\n").chars().take(1500).collect()
}

/// One value on one line.
fn inline(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "—".to_owned(),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k}: {}", inline(v)))
            .collect::<Vec<_>>()
            .join(", "),
        Value::Array(a) => a.iter().map(inline).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

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

fn text(t: &str) -> ModelReply {
    ModelReply {
        text: Some(t.to_owned()),
        tool_calls: Vec::new(),
        truncated: false,
    }
}

/// The built-in that names the enabled operations.
const LIST_OPERATIONS: &str = "list_operations";

/// `move <a> to <b>` / `mover <a> para <b>`: the two values, as typed.
fn move_values(text: &str) -> Option<(&str, &str)> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let verb = words.first()?.to_lowercase();
    if verb != "move" && verb != "mover" {
        return None;
    }
    let a = *words.get(1)?;
    let to = words
        .iter()
        .position(|w| matches!(w.to_lowercase().as_str(), "to" | "para"))?;
    let b = *words.get(to + 1)?;
    (to >= 2).then_some((a, b))
}

/// A word's stem: lower case, without a trailing `s` or `e` (`invoices` → `invoic`,
/// `diagnose` → `diagnos`).
fn stem(word: &str) -> String {
    word.to_lowercase()
        .trim_end_matches(|c: char| !c.is_alphanumeric())
        .trim_end_matches('s')
        .trim_end_matches('e')
        .to_owned()
}

/// How well `word` names `tool`: 2 when it is the last part of the name (`get_invoices`
/// for `invoices`), 1 when another part (`orders.search` for `orders`), 0 otherwise. A part matches on its stem, or when it starts with a long enough stem
/// (`diagnosis` for `diagnose`).
fn names(word: &str, tool: &str) -> u8 {
    let w = stem(word);
    if w.len() < 3 {
        return 0;
    }
    let parts: Vec<&str> = tool.split(['_', '.', '-']).collect();
    let matches = |part: &str| {
        let p = stem(part);
        p == w || (w.len() >= 6 && p.starts_with(&w))
    };
    match parts.split_last() {
        Some((last, _)) if matches(last) => 2,
        Some((_, rest)) if rest.iter().any(|p| matches(p)) => 1,
        _ => 0,
    }
}

/// The offered tool the message names, with the word after its name.
fn named_tool<'t, 'm>(
    text: &'m str,
    tools: &'t [ModelTool],
) -> Option<(&'t ModelTool, Option<&'m str>)> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut best: Option<(u8, &ModelTool, Option<&str>)> = None;
    for (i, word) in words.iter().enumerate() {
        for tool in tools {
            let score = names(word, &tool.name);
            if score > best.map_or(0, |b| b.0) {
                best = Some((score, tool, words.get(i + 1).copied()));
            }
        }
    }
    best.map(|(_, tool, next)| (tool, next))
}

/// The first property `schema` requires.
fn first_required(schema: &Value) -> Option<&str> {
    schema["required"].as_array()?.first()?.as_str()
}

/// What the scripted model does with one user message, offered `tools`.
pub fn decide(message: &str, tools: &[ModelTool]) -> ModelReply {
    decide_in(Language::En, message, tools)
}

/// [`decide`], answering in `lang`.
fn decide_in(lang: Language, message: &str, tools: &[ModelTool]) -> ModelReply {
    let trimmed = message.trim();
    if let Some(rest) = trimmed.strip_prefix("say slowly ") {
        return text(rest);
    }
    if let Some(rest) = trimmed.strip_prefix("say ") {
        return text(rest);
    }
    if let Some(rest) = trimmed.strip_prefix("call ") {
        let (name, args) = rest.split_once(' ').unwrap_or((rest, "{}"));
        let arguments = serde_json::from_str(args).unwrap_or_else(|_| json!({}));
        return call(name.trim(), arguments);
    }
    // "mover … para …": the Portuguese walkthrough (S-4) drives the same preparation.
    if move_values(trimmed).is_some() {
        return call(LIST_OPERATIONS, json!({}));
    }
    if let Some((tool, next)) = named_tool(trimmed, tools) {
        let mut arguments = Map::new();
        if let (Some(field), Some(value)) = (first_required(&tool.input_schema), next) {
            arguments.insert(field.to_owned(), Value::String(value.to_owned()));
        }
        return call(&tool.name, Value::Object(arguments));
    }
    text(match lang {
        Language::En => FALLBACK,
        Language::Pt => FALLBACK_PT,
    })
}

/// After `list_operations` answered a `move`: `prepare_action` with the first operation
/// whose arguments schema requires two values, bound in its order.
fn prepare_from(lang: Language, operations: &str, (a, b): (&str, &str)) -> ModelReply {
    let answer: Value = serde_json::from_str(operations).unwrap_or(Value::Null);
    let items = answer["data"]["items"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let chosen = items.iter().find_map(|item| {
        let required = item["arguments"]["required"].as_array()?;
        let (first, second) = (required.first()?.as_str()?, required.get(1)?.as_str()?);
        Some((item["operation"].as_str()?, first, second))
    });
    match chosen {
        Some((operation, first, second)) => call(
            "prepare_action",
            json!({"operation": operation, "arguments": {first: a, second: b}}),
        ),
        None => text(match lang {
            Language::En => NO_OPERATION,
            Language::Pt => NO_OPERATION_PT,
        }),
    }
}

/// What the scripted model answers to `messages`, offered `tools`: after `list_operations`
/// answered a `move`, its preparation; after other tool results, one line per result;
/// otherwise what [`decide`] makes of the last user message. Public so a test double of a
/// model service can think like it over any wire format.
pub fn reply_to(messages: &[ModelMessage], tools: &[ModelTool]) -> ModelReply {
    reply_in(Language::En, messages, tools)
}

/// [`reply_to`], answering in `lang`.
fn reply_in(lang: Language, messages: &[ModelMessage], tools: &[ModelTool]) -> ModelReply {
    let results: Vec<(&str, &str)> = messages
        .iter()
        .rev()
        .take_while(|m| matches!(m, ModelMessage::ToolResult { .. }))
        .filter_map(|m| match m {
            ModelMessage::ToolResult { call_id, content } => {
                Some((call_id.as_str(), content.as_str()))
            }
            _ => None,
        })
        .collect();
    let last_user = messages
        .iter()
        .rev()
        .find_map(|m| match m {
            ModelMessage::User(t) => Some(t.as_str()),
            _ => None,
        })
        .unwrap_or_default();
    let listed = format!("call_{LIST_OPERATIONS}");
    if let ([(id, operations)], Some(values)) = (results.as_slice(), move_values(last_user.trim()))
        && *id == listed
    {
        return prepare_from(lang, operations, values);
    }
    if !results.is_empty() {
        let lines = results
            .iter()
            .rev()
            .map(|(_, r)| readable(r))
            .collect::<Vec<_>>()
            .join("\n");
        return text(&lines);
    }
    decide_in(lang, last_user, tools)
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
        let reply = reply_in(
            language_of(&request.system),
            &request.messages,
            &request.tools,
        );
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
        let reply = reply_in(
            language_of(&request.system),
            &request.messages,
            &request.tools,
        );
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

    fn tool(name: &str, required: &[&str]) -> ModelTool {
        ModelTool {
            name: name.to_owned(),
            description: String::new(),
            input_schema: json!({"type": "object", "required": required}),
        }
    }

    /// A shop's configuration, nothing like the demo's: what the model calls comes from it.
    fn shop() -> Vec<ModelTool> {
        vec![
            tool("list_operations", &[]),
            tool("action_status", &[]),
            tool("prepare_action", &["operation", "arguments"]),
            tool("orders.search", &[]),
            tool("get_order_lines", &["orderId"]),
            tool("get_invoices", &[]),
        ]
    }

    #[test]
    fn rules() {
        let tools = shop();
        assert_eq!(
            decide("Show my invoices please", &tools).tool_calls[0].name,
            "get_invoices"
        );
        // The last part of the name first: `orders` is `orders.search`'s first part only,
        // `lines` names `get_order_lines`, with the next word as its required argument.
        let lines = decide("lines ord_7 please", &tools);
        assert_eq!(lines.tool_calls[0].name, "get_order_lines");
        assert_eq!(lines.tool_calls[0].arguments, json!({"orderId": "ord_7"}));
        assert_eq!(decide("orders", &tools).tool_calls[0].name, "orders.search");
        assert_eq!(decide("status", &tools).tool_calls[0].name, "action_status");
        assert_eq!(
            decide("say confirm", &tools).text.as_deref(),
            Some("confirm")
        );
        let c = decide(
            r#"call prepare_action {"operation": "x", "arguments": {}, "confirmed": true}"#,
            &tools,
        );
        assert_eq!(c.tool_calls[0].arguments["confirmed"], true);
        assert!(decide("hello", &tools).tool_calls.is_empty());
        // Nothing offered, nothing called.
        assert!(decide("invoices", &[]).tool_calls.is_empty());
    }

    /// A-1: a move asks `list_operations`, then prepares the operation it names, its two
    /// values bound to the names its schema requires, in order; with none, it says so.
    #[test]
    fn a1_a_move_prepares_the_operation_the_tenant_configured() {
        let tools = shop();
        let asked = decide("move ord_7 to addr_2", &tools);
        assert_eq!(asked.tool_calls[0].name, "list_operations");
        let user = ModelMessage::User("mover ord_7 para addr_2".into());
        let listed = |items: Value| ModelMessage::ToolResult {
            call_id: asked.tool_calls[0].id.clone(),
            content: json!({"ok": true, "data": {"items": items, "actionsEnabled": true}})
                .to_string(),
        };
        let items = json!([
            {"operation": "cancel_order", "arguments": {"required": ["orderId"]}},
            {"operation": "change_address", "arguments": {"required": ["orderId", "addressId"]}}
        ]);
        let prepared = reply_to(&[user.clone(), listed(items)], &tools);
        assert_eq!(prepared.tool_calls[0].name, "prepare_action");
        assert_eq!(
            prepared.tool_calls[0].arguments,
            json!({"operation": "change_address", "arguments": {"orderId": "ord_7", "addressId": "addr_2"}})
        );
        let none = reply_to(&[user, listed(json!([]))], &tools);
        assert_eq!(none.text.as_deref(), Some(NO_OPERATION));
        assert!(none.tool_calls.is_empty());
    }

    /// A-1: no operation, tool or argument name of any tenant is written in the model's
    /// code (its tests above use a shop's on purpose).
    #[test]
    fn a1_the_scripted_model_names_no_tenants_tools() {
        let source = include_str!("model.rs");
        let code = source.split("#[cfg(test)]").next().unwrap();
        for name in [
            "reassign_session_car",
            "get_user_",
            "get_session_laps",
            "get_error_diagnosis",
            "get_download_status",
            "sessionId",
            "carId",
            "ses_",
            "car_",
        ] {
            assert!(!code.contains(name), "{name}");
        }
    }

    /// Issue 14: the help text is the same for every tenant and names no tenant's
    /// business (no demo sessions or cars).
    #[test]
    fn the_fallback_names_no_tenants_business() {
        assert_eq!(decide("hello", &shop()).text.as_deref(), Some(FALLBACK));
        for demo_word in ["session", "car", "upload", "lap"] {
            assert!(!FALLBACK.to_lowercase().contains(demo_word), "{demo_word}");
        }
    }

    /// Issue 50: a tool's answer is shown as short readable lines, never raw JSON; a
    /// refusal as its message; text that is not JSON as it came.
    #[test]
    fn tool_results_read_as_short_lines() {
        let listed = r#"{"ok":true,"data":{"items":[{"id":"x1","laps":2},{"id":"x2","laps":null}],"total":2}}"#;
        assert_eq!(
            readable(listed),
            "items:\n- id: x1, laps: 2\n- id: x2, laps: —\ntotal: 2"
        );
        let refused = r#"{"ok":false,"error":{"code":"NOT_FOUND","message":"No such thing."}}"#;
        assert_eq!(readable(refused), "No such thing. (NOT_FOUND)");
        assert_eq!(readable("plain words"), "plain words");
        let reply = reply_to(
            &[
                ModelMessage::User("invoices".into()),
                ModelMessage::ToolResult {
                    call_id: "call_get_invoices".into(),
                    content: listed.into(),
                },
            ],
            &shop(),
        );
        assert!(!reply.text.unwrap().contains('{'), "no JSON");
    }

    /// Issue 50: in a Portuguese conversation (the Portuguese system text) it answers in
    /// Portuguese.
    #[tokio::test]
    async fn it_answers_in_the_conversations_language() {
        let request = |lang| ModelRequest {
            system: model_system_text(lang).to_owned(),
            messages: vec![ModelMessage::User("olá".into())],
            tools: shop(),
            max_output_tokens: 64,
        };
        let pt = ScriptedModel.step(&request(Language::Pt)).await.unwrap();
        assert_eq!(pt.text.as_deref(), Some(FALLBACK_PT));
        let en = ScriptedModel.step(&request(Language::En)).await.unwrap();
        assert_eq!(en.text.as_deref(), Some(FALLBACK));
    }
}
