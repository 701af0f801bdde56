//! One model turn (D-3): the model sees the conversation and the tools (the built-ins and
//! the tenant's allowed consultations); its tool calls run in-process through the same
//! registry the gateway serves; a bounded number of rounds. When `prepare_action`
//! presents a proposal, the turn ends there, so the presentation is the turn's last
//! assistant message.

use crate::chat::{Chat, ChatError, ChatParts};
use async_trait::async_trait;
use countersign_domain::conversation::{MessageKind, Principal, Role};
use countersign_domain::ids::OperationName;
use countersign_domain::ports::StoredMcpConfig;
use countersign_domain::ports::{
    ConversationView, CreateProposalOutcome, ModelMessage, ModelRequest, ModelTool, NewMessage,
    ProviderContext, ProviderTool, SignerError,
};
use countersign_domain::prepare::parse_prepare_answer;
use countersign_domain::proposal::{Presentation, Proposal, ProposalState};
use countersign_domain::texts;
use countersign_domain::tool_result::ToolResult;
use countersign_tools::builtins::{ActionPreparer, CallContext, PreparedAction, Services};
use countersign_tools::errors::{ToolError, code, from_provider, from_store};
use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex, PoisonError};

/// History given to the model, in messages.
const HISTORY: usize = 50;

const SYSTEM: &str = "You are a support assistant. Use the tools to look up the person's data. To change something in the company's system, call prepare_action: the platform shows the exact proposal to the person, who replies confirm or cancel. You never confirm for them, and nothing changes until they do.";

/// The turn's view of the tenant's integration.
struct Integration {
    config: StoredMcpConfig,
    ctx: ProviderContext,
    tools: Vec<ProviderTool>,
}

/// Prepares actions for one turn, and remembers what it presented. It must be `'static`
/// (it sits in an `Arc<dyn ActionPreparer>`), so it holds the ports by value.
struct TurnPreparer {
    parts: ChatParts,
    integration: Option<(StoredMcpConfig, ProviderContext)>,
    presented: Mutex<Vec<NewMessage>>,
}

#[async_trait]
impl ActionPreparer for TurnPreparer {
    async fn prepare(
        &self,
        ctx: &CallContext,
        operation: &str,
        arguments: &Map<String, Value>,
    ) -> Result<PreparedAction, ToolError> {
        const TOOL: &str = "prepare_action";
        let c = &self.parts;
        if !self
            .presented
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
        {
            return Err(ToolError::new(
                code::TOOL_ERROR,
                "A proposal was already presented in this turn; wait for the person's reply.",
            )
            .retryable(false));
        }
        let Some((config, pctx)) = &self.integration else {
            return Err(ToolError::new(
                code::OPERATION_NOT_ENABLED,
                "This company has not connected its system, so no action can be prepared.",
            )
            .retryable(false));
        };
        let op = OperationName::parse(operation)
            .map_err(|e| ToolError::validation("operation", e.to_string()))?;
        let policy = &config.config.action_policy;
        // only operations configured and enabled for this tenant.
        if !policy.enabled || !policy.operations.contains(&op) {
            return Err(ToolError::new(
                code::OPERATION_NOT_ENABLED,
                format!("The operation `{op}` is not enabled for this company."),
            )
            .details(json!({"field": "operation"}))
            .retryable(false)
            .hint("Use an operation from list_operations."));
        }
        match c.signer.key_id().await {
            Ok(_) => {}
            Err(SignerError::NotConfigured) => {
                return Err(ToolError::new(
                    code::ACTION_SIGNING_UNAVAILABLE,
                    "Actions are unavailable: the platform cannot sign confirmations.",
                )
                .retryable(false));
            }
            Err(e) => {
                tracing::warn!(error = %e, "signing key unavailable");
                return Err(ToolError::new(
                    code::SERVICE_UNAVAILABLE,
                    "The signing service is unavailable.",
                )
                .retryable(true));
            }
        }
        // on fresh state: a blocking proposal refuses; a pending one is
        // superseded locally before the provider prepares the next.
        let view = c
            .conversations
            .load(&ctx.principal.tenant, &ctx.case)
            .await
            .map_err(|e| from_store(TOOL, &e))?
            .ok_or_else(|| {
                ToolError::new(code::NOT_FOUND, "This conversation does not exist.")
                    .retryable(false)
            })?;
        if let Some(active) = &view.active {
            if active.state.blocks_preparation() {
                return Err(ToolError::new(code::PROPOSAL_BLOCKED, "An earlier action's outcome is still being checked; no new action can be prepared until then.")
                    .details(json!({"actionId": active.action_id.as_str(), "state": active.state.as_str()}))
                    .retryable(false));
            }
            if active.state == ProposalState::PendingConfirmation {
                let _ = c
                    .conversations
                    .transition(
                        &ctx.principal.tenant,
                        &ctx.case,
                        &active.action_id,
                        ProposalState::PendingConfirmation,
                        ProposalState::Superseded,
                        None,
                    )
                    .await
                    .map_err(|e| from_store(TOOL, &e))?;
            }
        }
        let mut args = Map::new();
        args.insert("operation".into(), json!(op.as_str()));
        args.insert("arguments".into(), Value::Object(arguments.clone()));
        let raw = c
            .provider
            .call_tool(pctx, TOOL, &args, None)
            .await
            .map_err(|e| from_provider(TOOL, &e))?;
        let now = c.clock.now();
        let result = ToolResult::from_mcp_json(&raw)
            .map_err(|_| contract_error(&["the answer is not an MCP tool result".to_owned()]))?;
        if result.is_error {
            return Err(ToolError::new(
                code::TOOL_ERROR,
                "The company's system refused to prepare this action.",
            )
            .retryable(false)
            .hint(
                "Tell the person it cannot be done as asked; do not retry with the same arguments.",
            ));
        }
        // anything else is refused; nothing is stored or presented.
        let prepared = parse_prepare_answer(&result, &op, now)
            .map_err(|v| contract_error(&v.iter().map(ToString::to_string).collect::<Vec<_>>()))?;
        let message = NewMessage {
            id: c.ids.message_id(),
            case: ctx.case.clone(),
            role: Role::Assistant,
            kind: MessageKind::Proposal,
            content: prepared.summary.as_str().to_owned(),
            reply_to: None,
            created_at: now,
        };
        let proposal = Proposal {
            action_id: prepared.action_id.clone(),
            tenant: ctx.principal.tenant.clone(),
            user: ctx.principal.user.clone(),
            case: ctx.case.clone(),
            operation: prepared.operation.clone(),
            summary: prepared.summary.clone(),
            summary_hash: prepared.summary_hash.clone(),
            arguments_hash: prepared.arguments_hash.clone(),
            expires_at: prepared.expires_at,
            prepared_at: now,
            state: ProposalState::PendingConfirmation,
            presented: Presentation {
                message_id: message.id.clone(),
            },
            confirmation_message_id: None,
            config_version: config.version,
            secret_version: Some(config.secret_version.clone()),
            server_url: Some(config.config.server_url.as_str().to_owned()),
            audience: Some(
                config
                    .config
                    .audience
                    .clone()
                    .unwrap_or_else(|| config.config.server_url.as_str().to_owned()),
            ),
        };
        match c
            .conversations
            .create_proposal(&proposal, std::slice::from_ref(&message))
            .await
            .map_err(|e| from_store(TOOL, &e))?
        {
            CreateProposalOutcome::Applied { .. } => {}
            CreateProposalOutcome::Blocked { .. } => {
                return Err(ToolError::new(
                    code::PROPOSAL_BLOCKED,
                    "An earlier action's outcome is still being checked.",
                )
                .retryable(false));
            }
            CreateProposalOutcome::ActionIdReused => {
                return Err(contract_error(&[
                    "the actionId was used before (A-14)".to_owned()
                ]));
            }
            CreateProposalOutcome::CaseNotOpen => {
                return Err(
                    ToolError::new(code::TOOL_ERROR, "This conversation is closed.")
                        .retryable(false),
                );
            }
            CreateProposalOutcome::Conflict => {
                return Err(ToolError::new(
                    code::SERVICE_UNAVAILABLE,
                    "The conversation changed meanwhile.",
                )
                .retryable(true));
            }
        }
        self.presented
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(message);
        Ok(PreparedAction {
            action_id: prepared.action_id.to_string(),
            operation: prepared.operation.to_string(),
            status: "pending_confirmation".into(),
            expires_at: prepared.expires_at.to_rfc3339(),
        })
    }
}

fn contract_error(problems: &[String]) -> ToolError {
    ToolError::new(code::PROVIDER_CONTRACT_VIOLATION, "The company's system answered outside the actions contract; nothing was presented to the person.")
        .details(json!({"problems": problems}))
        .retryable(false)
}

/// What the model reads of a proxied tool's result: its structured content when present,
/// else its text blocks; an error is marked as such.
fn model_view(raw: &Value) -> String {
    let text = || {
        raw.get("content")
            .and_then(Value::as_array)
            .map(|blocks| {
                blocks
                    .iter()
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default()
    };
    if raw.get("isError").and_then(Value::as_bool) == Some(true) {
        return format!("error: {}", text());
    }
    match raw.get("structuredContent") {
        Some(v) if !v.is_null() => v.to_string(),
        _ => text(),
    }
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

/// The tenant's integration for this turn, if configured and reachable.
async fn integration(
    chat: &Chat,
    who: &Principal,
    view: &ConversationView,
) -> Result<Option<Integration>, ChatError> {
    let Some(config) = chat.parts.tenants.get_mcp_config(&who.tenant).await? else {
        return Ok(None);
    };
    let Some(ctx) = chat.provider_context(who, &view.case.id, &config).await? else {
        return Ok(None);
    };
    let tools = match chat.parts.provider.list_tools(&ctx).await {
        Ok(published) => {
            countersign_tools::proxy::allowed_tools(published, &config.config.allowed_tools)
        }
        Err(e) => {
            // Consultations are unavailable this turn; the built-ins still work.
            tracing::warn!(error = %e, "provider tools/list failed");
            Vec::new()
        }
    };
    Ok(Some(Integration { config, ctx, tools }))
}

/// Runs one model turn after the user's message was stored.
pub(crate) async fn run(
    chat: &Chat,
    who: &Principal,
    view: &ConversationView,
    out: &mut Vec<NewMessage>,
) -> Result<(), ChatError> {
    let case = &view.case.id;
    let history = chat
        .parts
        .conversations
        .recent_messages(&who.tenant, case, HISTORY)
        .await?;
    let mut messages: Vec<ModelMessage> = history
        .iter()
        .map(|m| match m.role {
            Role::User => ModelMessage::User(m.content.clone()),
            Role::Assistant => ModelMessage::Assistant {
                text: m.content.clone(),
                tool_calls: Vec::new(),
            },
        })
        .collect();
    let integration = integration(chat, who, view).await?;
    let mut tools: Vec<ModelTool> = chat
        .parts
        .registry
        .descriptors()
        .filter_map(|d| model_tool(&d.published()))
        .collect();
    if let Some(i) = &integration {
        tools.extend(
            i.tools
                .iter()
                .filter_map(|t| model_tool(&Value::Object(t.descriptor.clone()))),
        );
    }
    let preparer = Arc::new(TurnPreparer {
        parts: chat.parts.clone(),
        integration: integration
            .as_ref()
            .map(|i| (i.config.clone(), i.ctx.clone())),
        presented: Mutex::new(Vec::new()),
    });
    let call_ctx = CallContext {
        principal: who.clone(),
        case: case.clone(),
        services: Services {
            conversations: chat.parts.conversations.clone(),
            tenants: chat.parts.tenants.clone(),
            actions: Some(preparer.clone()),
        },
    };
    for _ in 0..chat.max_tool_rounds {
        let request = ModelRequest {
            system: SYSTEM.to_owned(),
            messages: messages.clone(),
            tools: tools.clone(),
        };
        let reply = match chat.parts.model.step(&request).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(error = %e, "model step failed");
                let n = chat.notice(case, texts::assistant_unavailable_notice(view.language));
                return chat.store(who, &n, out).await;
            }
        };
        let text = reply.text.clone().filter(|t| !t.trim().is_empty());
        if let Some(t) = &text {
            // Model text is only ever an ordinary assistant message: it never authorizes.
            let m = NewMessage {
                id: chat.parts.ids.message_id(),
                case: case.clone(),
                role: Role::Assistant,
                kind: MessageKind::Text,
                content: t.clone(),
                reply_to: None,
                created_at: chat.parts.clock.now(),
            };
            chat.store(who, &m, out).await?;
        }
        if reply.tool_calls.is_empty() {
            return Ok(());
        }
        messages.push(ModelMessage::Assistant {
            text: text.unwrap_or_default(),
            tool_calls: reply.tool_calls.clone(),
        });
        for call in &reply.tool_calls {
            let content = if chat.parts.registry.get(&call.name).is_some() {
                chat.parts
                    .registry
                    .call(call_ctx.clone(), &call.name, call.arguments.clone())
                    .await
                    .map_or_else(|| "unknown tool".to_owned(), |s| s.text)
            } else if let Some((i, tool)) = integration.as_ref().and_then(|i| {
                i.tools
                    .iter()
                    .find(|t| t.name.as_str() == call.name)
                    .map(|t| (i, t))
            }) {
                let args = call.arguments.as_object().cloned().unwrap_or_default();
                let raw = countersign_tools::proxy::call(
                    chat.parts.provider.as_ref(),
                    &i.ctx,
                    tool,
                    &args,
                )
                .await;
                model_view(&raw)
            } else {
                // D-3, A-3: only built-ins and allowlisted consultations; reserved or
                // unlisted provider tools are refused (held by T-1).
                json!({"ok": false, "error": {"code": code::NOT_FOUND, "message": format!("no tool named `{}` is available in this conversation", call.name.chars().take(128).collect::<String>())}}).to_string()
            };
            messages.push(ModelMessage::ToolResult {
                call_id: call.id.clone(),
                content,
            });
            let presented = std::mem::take(
                &mut *preparer
                    .presented
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner),
            );
            if !presented.is_empty() {
                // the presentation (stored with the proposal) ends the turn.
                out.extend(presented);
                return Ok(());
            }
        }
    }
    let n = chat.notice(case, texts::turn_incomplete_notice(view.language));
    chat.store(who, &n, out).await
}
