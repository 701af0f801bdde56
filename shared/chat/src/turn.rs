//! One model turn (D-3): the model sees the conversation and the tools (the built-ins and
//! the tenant's allowed consultations); its tool calls run in-process through the same
//! integration service and registry the gateway serves; a bounded number of rounds. When
//! `prepare_action` presents a proposal, the turn ends there, so the presentation is the
//! turn's last assistant message.

use crate::prepare::TurnPreparer;
use crate::service::{Chat, ChatError};
use crate::tool_names::ToolNames;
use countersign_domain::conversation::{Message, MessageKind, Principal, Role};
use countersign_domain::ports::{
    ConversationView, ModelError, ModelMessage, ModelReply, ModelRequest, ModelTool, NewMessage,
    ProviderTool, ToolCall,
};
use countersign_domain::proposal::Proposal;
use countersign_domain::texts;
use countersign_tools::builtins::{CallContext, Services};
use countersign_tools::errors::code;
use countersign_tools::integration::{Catalog, Connected, ToolAnswer};
use rmcp::model::CallToolResult;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// History given to the model, in messages.
const HISTORY: usize = 50;

/// M-5: tries of one model step (the first and its retries).
const MODEL_TRIES: u32 = 3;

/// M-5: the wait before the first retry (doubled before the second).
const RETRY_BACKOFF: Duration = Duration::from_millis(250);

/// What the model reads of a tool's result: its structured content when present (the
/// envelope of a built-in), else its text blocks, marked as an error when it is one.
fn model_view(result: &CallToolResult) -> String {
    if let Some(v) = result.structured_content.as_ref().filter(|v| !v.is_null()) {
        return v.to_string();
    }
    let text = result
        .content
        .iter()
        .filter_map(|b| b.as_text().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n");
    if result.is_error == Some(true) {
        return format!("error: {text}");
    }
    text
}

fn model_tool(descriptor: &Value) -> Option<ModelTool> {
    Some(ModelTool {
        name: descriptor.get("name")?.as_str()?.to_owned(),
        description: descriptor
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        input_schema: descriptor
            .get("inputSchema")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object"})),
    })
}

/// What the model reads of a stored message: the person's and its own words as they
/// are; the platform's messages marked as the platform's, and each proposal with its
/// state, so the model neither prepares the same change twice nor mistakes a
/// proposal, a notice or a result for its own words. The confirm instructions are left
/// out (the model is told what they say by the system text).
fn model_message(m: &Message, active: Option<&Proposal>) -> Option<ModelMessage> {
    let text = match (m.role, m.kind) {
        (Role::User, _) => return Some(ModelMessage::User(m.content.clone())),
        (Role::Assistant, MessageKind::Text) => m.content.clone(),
        (Role::Assistant, MessageKind::Instructions) => return None,
        (Role::Assistant, MessageKind::Proposal) => match active {
            Some(p) if p.presented.message_id == m.id => format!(
                "[Platform: proposal shown to the customer, operation {}, state {}; only the customer can reply confirm or cancel]\n{}",
                p.operation,
                p.state.as_str(),
                m.content
            ),
            _ => format!(
                "[Platform: earlier proposal shown to the customer; no longer pending, see what followed]\n{}",
                m.content
            ),
        },
        (Role::Assistant, MessageKind::Result) => {
            format!("[Platform: result of a confirmed proposal]\n{}", m.content)
        }
        (Role::Assistant, MessageKind::Notice) => {
            format!("[Platform notice]\n{}", m.content)
        }
    };
    Some(ModelMessage::Assistant {
        text,
        tool_calls: Vec::new(),
    })
}

/// M-2: what the model reads for a call whose arguments are not a JSON object (nothing
/// is called).
fn not_an_object() -> String {
    json!({"ok": false, "error": {"code": code::VALIDATION_ERROR, "message": "the arguments must be a JSON object", "retryable": false}}).to_string()
}

/// D-3, A-3: what the model reads for a tool that is neither built in nor allowlisted.
fn unknown_tool(name: &str) -> String {
    let shown: String = name.chars().take(128).collect();
    json!({"ok": false, "error": {"code": code::NOT_FOUND, "message": format!("no tool named `{shown}` is available in this conversation")}}).to_string()
}

/// M-4: what the model reads for a call beyond the turn's bound (nothing is called).
fn too_many_calls(max: usize) -> String {
    json!({"ok": false, "error": {"code": code::TOOL_ERROR, "message": format!("at most {max} tool calls per turn: answer the person with what you have"), "retryable": false}}).to_string()
}

/// One turn in progress.
struct Turn<'a> {
    chat: &'a Chat,
    who: &'a Principal,
    view: &'a ConversationView,
    connected: Option<Connected>,
    proxied: Vec<ProviderTool>,
    preparer: Arc<TurnPreparer>,
    messages: Vec<ModelMessage>,
    tools: Vec<ModelTool>,
    /// M-2: the tools' names as the model is given them, both ways.
    names: ToolNames,
    /// Tool calls made so far this turn.
    calls: usize,
    /// When the turn must be over (M-4).
    deadline: Instant,
}

/// Runs one model turn after the user's message was stored.
pub(crate) async fn run(
    chat: &Chat,
    who: &Principal,
    view: &ConversationView,
    out: &mut Vec<NewMessage>,
) -> Result<(), ChatError> {
    let mut turn = Turn::start(chat, who, view).await?;
    let finished = turn.rounds(out).await?;
    // D-6: a preparation the tenant's server refused (or answered outside the contract)
    // is told to the person in a fixed text, whatever the model said about it.
    if turn.preparer.was_refused() && !turn.preparer.has_presented() {
        // N-7: the server's own words only when they are one short line with no link
        // and no reply word; otherwise the fixed notice alone.
        let text = match turn.preparer.refusal_reason() {
            Some(reason) if texts::quotable_reason(&reason) => {
                texts::preparation_refused_because(view.language, &reason)
            }
            _ => texts::preparation_refused_notice(view.language).to_owned(),
        };
        chat.tell(who, &view.case.id, &text, out).await?;
    }
    if turn.preparer.has_presented() {
        // the presentation (stored with the proposal) ends the turn.
        out.extend(turn.preparer.take_presented());
        return Ok(());
    }
    if !finished {
        let text = texts::turn_incomplete_notice(view.language);
        chat.tell(who, &view.case.id, text, out).await?;
    }
    Ok(())
}

impl<'a> Turn<'a> {
    /// The model's rounds; `false` when they ran out before the model was done.
    async fn rounds(&mut self, out: &mut Vec<NewMessage>) -> Result<bool, ChatError> {
        for _ in 0..self.chat.max_tool_rounds {
            let Some(reply) = self.step(out).await? else {
                return Ok(true);
            };
            if reply.tool_calls.is_empty() || self.run_tools(reply).await {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Reads the history, the integration and its tools.
    async fn start(
        chat: &'a Chat,
        who: &'a Principal,
        view: &'a ConversationView,
    ) -> Result<Self, ChatError> {
        let history = chat
            .parts
            .conversations
            .recent_messages(&who.tenant, &view.case.id, HISTORY)
            .await?;
        let integration = &chat.parts.integration;
        // B-2: the provider is told the conversation's language (`X-MCP-Language`).
        let connected = integration.current(who, &view.case.id).await?.map(|mut c| {
            c.ctx.language = Some(view.language);
            c
        });
        let catalog = match &connected {
            // Consultations are unavailable this turn if the provider fails; the
            // built-ins still work.
            Some(c) => integration.catalog(c).await.unwrap_or_else(|e| {
                tracing::warn!(error = %e, "provider tools/list failed");
                Catalog::default()
            }),
            None => Catalog::default(),
        };
        let Catalog {
            allowed: proxied,
            schemas,
        } = catalog;
        let builtins = chat.parts.registry.descriptors().map(|d| d.published());
        let published = proxied.iter().map(|t| Value::Object(t.descriptor.clone()));
        let tools: Vec<ModelTool> = builtins
            .chain(published)
            .filter_map(|d| model_tool(&d))
            .collect();
        let names = ToolNames::new(tools.iter().map(|t| t.name.as_str()));
        let tools = tools
            .into_iter()
            .map(|t| ModelTool {
                name: names.for_model(&t.name).unwrap_or(&t.name).to_owned(),
                ..t
            })
            .collect();
        let preparer = Arc::new(TurnPreparer::new(
            chat.parts.clone(),
            chat.step_up.as_ref().map(|s| s.passkeys.clone()),
            connected.clone(),
            schemas,
        ));
        Ok(Self {
            chat,
            who,
            view,
            connected,
            proxied,
            preparer,
            messages: history
                .iter()
                .filter_map(|m| model_message(m, view.active.as_ref()))
                .collect(),
            tools,
            names,
            calls: 0,
            deadline: Instant::now() + chat.turn_deadline,
        })
    }

    /// One model step; its text is stored as an ordinary assistant message (model text
    /// never authorizes, A-24). `None` when the model failed (a notice was stored) or its
    /// answer was cut at the output bound (what it said is kept, with a notice).
    async fn step(&mut self, out: &mut Vec<NewMessage>) -> Result<Option<ModelReply>, ChatError> {
        let request = ModelRequest {
            system: texts::model_system_text(self.view.language).to_owned(),
            messages: self.messages.clone(),
            tools: self.tools.clone(),
            max_output_tokens: self.chat.max_output_tokens,
        };
        let case = &self.view.case.id;
        let mut reply = match self.ask(&request).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, kind = e.kind(), "model step failed");
                let text = texts::assistant_unavailable_notice(self.view.language);
                self.chat.tell(self.who, case, text, out).await?;
                return Ok(None);
            }
        };
        reply.text = reply.text.filter(|t| !t.trim().is_empty());
        if let Some(t) = &reply.text {
            let m = self
                .chat
                .message(case, Role::Assistant, MessageKind::Text, t.clone());
            self.chat.store(self.who, &m, out).await?;
        }
        if reply.truncated {
            // M-4: a call cut at the bound may be cut in its arguments: none is run.
            let text = texts::answer_truncated_notice(self.view.language);
            self.chat.tell(self.who, case, text, out).await?;
            return Ok(None);
        }
        Ok(Some(reply))
    }

    /// M-5: asks the model, within the turn's deadline, retrying a retryable failure.
    /// A step runs before the round's tool calls, so a retry never repeats a provider
    /// call: the results of earlier rounds are in the request, not called again.
    async fn ask(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let mut backoff = RETRY_BACKOFF;
        let mut tries = 0;
        loop {
            tries += 1;
            let left = self.deadline.saturating_duration_since(Instant::now());
            let model = &self.chat.parts.model;
            // S-1: on a streamed post the text goes to the person as it is generated.
            let asked = async {
                if crate::stream::streaming() {
                    let delta = |piece: &str| {
                        crate::stream::emit(crate::stream::Event::Delta(piece.to_owned()));
                    };
                    model.step_streaming(request, &delta).await
                } else {
                    model.step(request).await
                }
            };
            let result = tokio::time::timeout(left, asked)
                .await
                .unwrap_or(Err(ModelError::Timeout));
            match result {
                Err(e) if e.retryable() && tries < MODEL_TRIES => {
                    if self.deadline.saturating_duration_since(Instant::now()) <= backoff {
                        return Err(e);
                    }
                    tracing::info!(kind = e.kind(), tries, "model step retried");
                    tokio::time::sleep(backoff).await;
                    backoff *= 2;
                }
                other => return other,
            }
        }
    }

    /// Runs the reply's tool calls in order. Returns whether a proposal was presented.
    async fn run_tools(&mut self, reply: ModelReply) -> bool {
        self.messages.push(ModelMessage::Assistant {
            text: reply.text.unwrap_or_default(),
            tool_calls: reply.tool_calls.clone(),
        });
        for call in reply.tool_calls {
            self.calls += 1;
            let content = if self.calls > self.chat.max_tool_calls {
                too_many_calls(self.chat.max_tool_calls)
            } else {
                self.call(&call).await
            };
            self.messages.push(ModelMessage::ToolResult {
                call_id: call.id,
                content,
            });
            if self.preparer.has_presented() {
                return true;
            }
        }
        false
    }

    /// One tool call, through the integration service: a built-in, an allowlisted
    /// consultation, or refused.
    async fn call(&self, call: &ToolCall) -> String {
        let ctx = CallContext {
            principal: self.who.clone(),
            case: self.view.case.id.clone(),
            services: Services {
                conversations: self.chat.parts.conversations.clone(),
                tenants: self.chat.parts.settings.clone(),
                actions: Some(self.preparer.clone()),
            },
            consultations: Vec::new(),
        };
        let proxied = self
            .connected
            .as_ref()
            .map(|c| (&c.ctx, self.proxied.as_slice()));
        let registry = &self.chat.parts.registry;
        // M-2: only a name this turn gave the model stands for a tool, and only an
        // object is arguments; neither reaches anyone otherwise.
        let Some(name) = self.names.original(&call.name) else {
            return unknown_tool(&call.name);
        };
        if !call.arguments.is_object() {
            return not_an_object();
        }
        let answer = self
            .chat
            .parts
            .integration
            .answer(
                registry,
                ctx,
                proxied,
                name,
                call.arguments.as_object().cloned(),
            )
            .await
            .map(ToolAnswer::into_call_tool_result);
        answer.map_or_else(|| unknown_tool(&call.name), |raw| model_view(&raw))
    }
}
