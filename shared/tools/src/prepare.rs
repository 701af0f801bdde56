//! `prepare_action` (A-2, A-10 … A-21, C-6), wherever it is called from: a model turn in
//! the messages function, or an MCP client through the gateway. The checks made
//! before the provider is asked, the provider's answer read against the contract, and the
//! proposal stored with its presentation; nothing is stored or shown unless every rule
//! holds. What is particular to a caller (one presentation per chat turn, remembering the
//! provider's refusal for the person) stays with the caller.

use crate::builtins::{CallContext, PreparedAction};
use crate::errors::{ToolError, code, from_provider, from_store};
use crate::integration::{Connected, IntegrationService};
use countersign_domain::config::ActionPolicy;
use countersign_domain::conversation::{MessageKind, Role};
use countersign_domain::ids::OperationName;
use countersign_domain::ports::{
    Clock, Conversations, CreateProposalOutcome, Ids, NewMessage, Passkeys, ProofSigner,
    ProposalLock, SignerError,
};
use countersign_domain::prepare::{PreparedAction as Prepared, parse_prepare_answer};
use countersign_domain::proposal::{Presentation, Proposal, ProposalState};
use countersign_domain::text::SafeText;
use countersign_domain::texts::Language;
use countersign_domain::time::Timestamp;
use countersign_domain::tool_result::{ContentBlock, ToolResult};
use serde_json::{Map, Value, json};
use std::sync::Arc;

const TOOL: &str = "prepare_action";

/// The ports a preparation uses.
#[derive(Clone)]
pub struct Preparation {
    /// Cases and messages.
    pub conversations: Arc<dyn Conversations>,
    /// Proposals (the one-pending rule is the store's, A-15 … A-17).
    pub proposals: Arc<dyn ProposalLock>,
    /// The tenant's server.
    pub integration: Arc<IntegrationService>,
    /// The proof key (C-6: no proposal without a key that can sign its confirmation).
    pub signer: Arc<dyn ProofSigner>,
    /// Time.
    pub clock: Arc<dyn Clock>,
    /// Ids.
    pub ids: Arc<dyn Ids>,
    /// F-2: people's passkeys, read only when the tenant lets people without one fall back
    /// (`None`: no fallback is possible, every `passkey` operation needs one).
    pub passkeys: Option<Arc<dyn Passkeys>>,
}

countersign_domain::debug_showing!(Preparation {});

/// A preparation refused.
#[derive(Debug)]
pub struct Failure {
    /// What the caller answers.
    pub error: ToolError,
    /// Whether the tenant's server refused it or answered outside the contract (D-6: the
    /// person is then told so, with a fixed text).
    pub provider_refused: bool,
    /// The tenant's server's own words for a business refusal, when they pass A-20.
    pub reason: Option<SafeText>,
}

impl Failure {
    fn refused(error: ToolError) -> Self {
        Self {
            error,
            provider_refused: true,
            reason: None,
        }
    }
}

impl From<ToolError> for Failure {
    fn from(error: ToolError) -> Self {
        Self {
            error,
            provider_refused: false,
            reason: None,
        }
    }
}

/// `prepare_action` for a caller outside a chat turn (an MCP client through the
/// gateway, with a token bound to one person's conversation): it connects to the tenant's
/// server for each call and prepares exactly as a turn does. The proposal is stored in
/// the token's conversation, where the person's widget shows it (S-2) and where the
/// person confirms it; the client never can.
#[derive(Debug, Clone)]
pub struct ConnectingPreparer {
    /// The preparation.
    pub preparation: Preparation,
}

#[async_trait::async_trait]
impl crate::builtins::ActionPreparer for ConnectingPreparer {
    async fn prepare(
        &self,
        ctx: &CallContext,
        operation: &str,
        arguments: &Map<String, Value>,
    ) -> Result<PreparedAction, ToolError> {
        let connected = self
            .preparation
            .integration
            .current(&ctx.principal, &ctx.case)
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "the integration could not be read");
                ToolError::new(
                    code::SERVICE_UNAVAILABLE,
                    "The company's integration settings are unavailable.",
                )
                .retryable(true)
            })?;
        self.preparation
            .prepare_by(ctx, connected.as_ref(), (operation, arguments), true)
            .await
            .map(|(data, _)| data)
            .map_err(|f| f.error)
    }
}

impl Preparation {
    /// Prepares `operation` with `arguments` in the caller's conversation, with the
    /// tenant's server `connected` (`None`: not connected). On success the proposal and its
    /// presentation are stored; the presentation is returned with the answer.
    pub async fn prepare(
        &self,
        ctx: &CallContext,
        connected: Option<&Connected>,
        operation: &str,
        arguments: &Map<String, Value>,
    ) -> Result<(PreparedAction, NewMessage), Failure> {
        self.prepare_by(ctx, connected, (operation, arguments), false)
            .await
    }

    /// [`Self::prepare`], saying whether an app the person connected (`outside`: an MCP
    /// client through the gateway) asked, rather than the chat's assistant (issue 50: the
    /// card says so, from the stored proposal).
    pub async fn prepare_by(
        &self,
        ctx: &CallContext,
        connected: Option<&Connected>,
        (operation, arguments): (&str, &Map<String, Value>),
        outside: bool,
    ) -> Result<(PreparedAction, NewMessage), Failure> {
        let connected = connected.ok_or_else(not_connected)?;
        let op = allowed_operation(&connected.config.config.action_policy, operation)?;
        self.signing_available().await?;
        let language = self.make_room(ctx).await?;
        // B-2: the provider is told the conversation's language (`X-MCP-Language`) — the
        // chat's turn has set it already; an MCP client's preparation learns it here.
        let mut connected = connected.clone();
        connected.ctx.language = connected.ctx.language.or(Some(language));
        let connected = &connected;
        let now = self.clock.now();
        let prepared = self.ask_provider(connected, &op, arguments, now).await?;
        let message = self.presentation(ctx, &prepared, now);
        let policy = &connected.config.config.action_policy;
        let needs_passkey = self.needs_passkey(ctx, policy, &op).await;
        let marks = (&prepared, needs_passkey, outside);
        let proposal = new_proposal(ctx, connected, marks, &message, now);
        self.store(&proposal, &message).await?;
        Ok((
            PreparedAction {
                action_id: prepared.action_id.to_string(),
                operation: prepared.operation.to_string(),
                status: ProposalState::PendingConfirmation.as_str().into(),
                expires_at: prepared.expires_at.to_rfc3339(),
                confirmation_url: None,
                summary: None,
                next: None,
                result: None,
            },
            message,
        ))
    }

    /// C-6: no proposal without a key that can sign its confirmation.
    async fn signing_available(&self) -> Result<(), ToolError> {
        match self.signer.key_id().await {
            Ok(_) => Ok(()),
            Err(SignerError::NotConfigured) => Err(ToolError::new(
                code::ACTION_SIGNING_UNAVAILABLE,
                "Actions are unavailable: the platform cannot sign confirmations.",
            )
            .retryable(false)),
            Err(e) => {
                tracing::warn!(error = %e, "signing key unavailable");
                Err(ToolError::new(
                    code::SERVICE_UNAVAILABLE,
                    "The signing service is unavailable.",
                )
                .retryable(true))
            }
        }
    }

    /// on fresh state: a blocking proposal refuses; a pending one is
    /// superseded before the provider prepares the next. Returns the conversation's
    /// language.
    async fn make_room(&self, ctx: &CallContext) -> Result<Language, ToolError> {
        let store = &self.conversations;
        let tenant = &ctx.principal.tenant;
        let view = store
            .load(tenant, &ctx.case)
            .await
            .map_err(|e| from_store(TOOL, &e))?
            // only the caller's own conversation (a gateway token names both, and
            // one minted for another person's case must not prepare in it).
            .filter(|v| v.case.is_owned_by(&ctx.principal))
            .ok_or_else(|| {
                ToolError::new(code::NOT_FOUND, "This conversation does not exist.")
                    .retryable(false)
            })?;
        let Some(active) = &view.active else {
            return Ok(view.language);
        };
        if active.state.blocks_preparation() {
            return Err(blocked().details(
                json!({"actionId": active.action_id.as_str(), "state": active.state.as_str()}),
            ));
        }
        if active.state == ProposalState::PendingConfirmation {
            let (from, to) = (
                ProposalState::PendingConfirmation,
                ProposalState::Superseded,
            );
            let outcome = self
                .proposals
                .transition(tenant, &ctx.case, &active.action_id, from, to, None)
                .await
                .map_err(|e| from_store(TOOL, &e))?;
            if outcome == countersign_domain::ports::TransitionOutcome::Applied {
                metrics::counter!("proposals_total", "outcome" => "superseded").increment(1);
            }
        }
        Ok(view.language)
    }

    /// The provider's `prepare_action`, read against.
    async fn ask_provider(
        &self,
        connected: &Connected,
        op: &OperationName,
        arguments: &Map<String, Value>,
        now: Timestamp,
    ) -> Result<Prepared, Failure> {
        let mut args = Map::new();
        args.insert("operation".into(), Value::String(op.as_str().to_owned()));
        args.insert("arguments".into(), Value::Object(arguments.clone()));
        let raw = self
            .integration
            .provider()
            .call_tool(&connected.ctx, TOOL, &args, None)
            .await
            .map_err(|e| Failure::refused(from_provider(TOOL, &e)))?;
        let result = ToolResult::from_mcp_json(&raw).map_err(|_| {
            Failure::refused(contract_error(&[
                "the answer is not an MCP tool result".to_owned()
            ]))
        })?;
        if result.is_error {
            // A business reason ("this loan is overdue") reaches the model and the person
            // as the provider's words only when it passes the summary's rules;
            // anything else stays the fixed text.
            let reason = refusal_reason(&result);
            let message = match &reason {
                Some(r) => format!(
                    "The company's system refused to prepare this action: {}",
                    r.as_str()
                ),
                None => "The company's system refused to prepare this action.".to_owned(),
            };
            let mut error = ToolError::new(code::TOOL_ERROR, message).retryable(false).hint(
                "Tell the person it cannot be done as asked; do not retry with the same arguments.",
            );
            if let Some(r) = &reason {
                error = error.details(json!({"reason": r.as_str()}));
            }
            return Err(Failure {
                error,
                provider_refused: true,
                reason,
            });
        }
        // anything else is refused; nothing is stored or presented.
        parse_prepare_answer(&result, op, now).map_err(|v| {
            // The rules broken, never the refused content (it may hold the very address
            // or secret that made it unsafe to show).
            let mut rules: Vec<String> = v.iter().map(|v| v.rule().to_owned()).collect();
            rules.dedup();
            Failure::refused(contract_error(&rules))
        })
    }

    /// the summary, literally, as the platform's own message.
    fn presentation(&self, ctx: &CallContext, prepared: &Prepared, now: Timestamp) -> NewMessage {
        NewMessage {
            id: self.ids.message_id(),
            case: ctx.case.clone(),
            role: Role::Assistant,
            kind: MessageKind::Proposal,
            content: prepared.summary.as_str().to_owned(),
            reply_to: None,
            created_at: now,
        }
    }

    /// F-1, F-2: whether confirming `op` needs the person's passkey: a `passkey` operation,
    /// unless the tenant lets people without one fall back and this person has none. A
    /// store that cannot say keeps the passkey (closed, never open).
    async fn needs_passkey(
        &self,
        ctx: &CallContext,
        policy: &ActionPolicy,
        op: &OperationName,
    ) -> bool {
        if !policy.needs_passkey(op) {
            return false;
        }
        let Some(passkeys) = self.passkeys.as_ref().filter(|_| policy.step_up_fallback) else {
            return true;
        };
        let who = &ctx.principal;
        !passkeys
            .passkeys(&who.tenant, &who.user)
            .await
            .is_ok_and(|found| found.is_empty())
    }

    /// Stores the proposal with its presentation (A-14 … A-17 held by the store).
    async fn store(&self, proposal: &Proposal, message: &NewMessage) -> Result<(), ToolError> {
        let outcome = self
            .proposals
            .create_proposal(proposal, std::slice::from_ref(message))
            .await
            .map_err(|e| from_store(TOOL, &e))?;
        match outcome {
            CreateProposalOutcome::Applied { superseded } => {
                if superseded.is_some() {
                    metrics::counter!("proposals_total", "outcome" => "superseded").increment(1);
                }
                Ok(())
            }
            CreateProposalOutcome::Blocked { .. } => Err(blocked()),
            CreateProposalOutcome::ActionIdReused => Err(contract_error(&[
                "the actionId was used before (A-14)".to_owned(),
            ])),
            CreateProposalOutcome::CaseNotOpen => Err(ToolError::new(
                code::TOOL_ERROR,
                "This conversation is closed.",
            )
            .retryable(false)),
            CreateProposalOutcome::Conflict => Err(ToolError::new(
                code::SERVICE_UNAVAILABLE,
                "The conversation changed meanwhile.",
            )
            .retryable(true)),
            // C-8: the company changed its action settings while this was prepared.
            CreateProposalOutcome::SettingsChanged => Err(ToolError::new(
                code::SERVICE_UNAVAILABLE,
                "The company's integration settings changed meanwhile; prepare it again.",
            )
            .retryable(true)),
        }
    }
}

/// only operations configured and enabled for this tenant.
fn allowed_operation(policy: &ActionPolicy, operation: &str) -> Result<OperationName, ToolError> {
    let op = OperationName::parse(operation)
        .map_err(|e| ToolError::validation("operation", e.to_string()))?;
    if policy.allows(&op) {
        return Ok(op);
    }
    Err(ToolError::new(
        code::OPERATION_NOT_ENABLED,
        format!("The operation `{op}` is not enabled for this company."),
    )
    .details(json!({"field": "operation"}))
    .retryable(false)
    .hint("Use an operation from list_operations."))
}

/// The proposal, bound to the integration it was prepared with (C-8).
fn new_proposal(
    ctx: &CallContext,
    connected: &Connected,
    (prepared, needs_passkey, prepared_outside): (&Prepared, bool, bool),
    message: &NewMessage,
    now: Timestamp,
) -> Proposal {
    let config = &connected.config;
    Proposal {
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
            replaced: None,
            first_served_at: None,
            message_id: message.id.clone(),
        },
        confirmation_message_id: None,
        confirm_attempt: None,
        config_version: config.actions_version,
        secret_version: Some(config.secret_version.clone()),
        server_url: Some(config.config.server_url.as_str().to_owned()),
        audience: Some(config.config.audience().to_owned()),
        needs_passkey,
        prepared_outside,
    }
}

fn not_connected() -> ToolError {
    ToolError::new(
        code::OPERATION_NOT_ENABLED,
        "This company has not connected its system, so no action can be prepared.",
    )
    .retryable(false)
}

fn blocked() -> ToolError {
    ToolError::new(
        code::PROPOSAL_BLOCKED,
        "An earlier action's outcome is still being checked; no new action can be prepared until then.",
    )
    .retryable(false)
}

/// The contract rules an answer broke, by name: `problems` never carries the provider's
/// values.
/// The refusal's one text block, when it is safe to show as the company's words.
fn refusal_reason(result: &ToolResult) -> Option<SafeText> {
    let mut texts = result.content.iter().filter_map(|b| match b {
        ContentBlock::Text(t) => Some(t.trim()),
        ContentBlock::Other { .. } => None,
    });
    let text = texts.next()?;
    SafeText::check(text).ok()
}

/// Every preparation refused for breaking the contract (a malformed answer, a broken rule,
/// a reused `actionId`) gets this one answer and this one log line (issue 25).
fn contract_error(problems: &[String]) -> ToolError {
    tracing::warn!(
        rules = ?problems,
        "a prepare_action answer breaks the contract; nothing presented"
    );
    ToolError::new(code::PROVIDER_CONTRACT_VIOLATION, "The company's system answered outside the actions contract; nothing was presented to the person.")
        .details(json!({"rulesBroken": problems}))
        .retryable(false)
}
