//! The use cases of the messages function (SPEC §1, D-1, D-3): cases, the order of
//! decisions for each user message, the confirm path, execution and reconciliation.
//!
//! For each user message, in this order: store it (or, for a valid confirmation, store it
//! inside the confirm transaction); if a proposal is pending, classify first →
//! confirm, cancel, or invalidate and continue; if one is
//! `executing` or `unknown`, run only the status query; otherwise a model turn.

use crate::turn;
use countersign_domain::config::service_token_secret_name;
use countersign_domain::confirmation::{
    Authorized, ConfirmingMessage, Refusal, Reply, check_confirmation, classify,
};
use countersign_domain::conversation::{Case, CaseStatus, Message, MessageKind, Principal, Role};
use countersign_domain::ids::{CaseId, MessageId, TenantId};
use countersign_domain::outcome::{
    ActionAnswer, event_after_execute, event_after_status, parse_action_answer,
};
use countersign_domain::ports::StoredMcpConfig;
use countersign_domain::ports::{
    Clock, ConfirmWrite, ConversationStore, ConversationView, Ids, Model, NewMessage, ProofSigner,
    Provider, ProviderContext, SecretStore, StoreError, TenantStore, TransitionOutcome,
};
use countersign_domain::proof::{ProofClaims, ProofContext, sign_proof};
use countersign_domain::proposal::{Proposal, ProposalState, RemoteStatus, transition};
use countersign_domain::secret::SecretString;
use countersign_domain::texts::{self, Language};
use countersign_domain::tool_result::ToolResult;
use countersign_tools::builtins::CallContext;
use countersign_tools::registry::Registry;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// Longest user message, in characters.
pub const MAX_CONTENT_CHARS: usize = 4000;

/// Why a request cannot be served. Each maps to one HTTP status and code.
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    /// No such case for this person (also another person's case).
    #[error("no such case")]
    NotFound,
    /// The case is closed.
    #[error("the case is closed")]
    Closed,
    /// A field breaks a rule.
    #[error("{field}: {message}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// Why.
        message: String,
    },
    /// An action's outcome is still being checked in this case.
    #[error("an action's outcome is still being checked")]
    Busy,
    /// A store failed; nothing more was done.
    #[error("a platform service is unavailable")]
    Unavailable(#[from] StoreError),
}

/// Everything the use cases need, built once per process.
pub struct Chat {
    /// The ports and settings.
    pub parts: ChatParts,
    /// Tool rounds per model turn (D-3).
    pub max_tool_rounds: usize,
    /// Service tokens by secret version (immutable, so cached).
    pub(crate) tokens: Mutex<HashMap<(TenantId, String), SecretString>>,
}

impl std::fmt::Debug for Chat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chat")
            .field("issuer", &self.parts.issuer)
            .field("max_tool_rounds", &self.max_tool_rounds)
            .finish_non_exhaustive()
    }
}

/// The ports and settings of [`Chat`] (cheap to clone: shared handles).
#[derive(Clone)]
pub struct ChatParts {
    /// Cases, messages, proposals.
    pub conversations: Arc<dyn ConversationStore>,
    /// Tenants and their configuration.
    pub tenants: Arc<dyn TenantStore>,
    /// Service tokens.
    pub secrets: Arc<dyn SecretStore>,
    /// Signs proofs (KMS).
    pub signer: Arc<dyn ProofSigner>,
    /// Tenants' MCP servers.
    pub provider: Arc<dyn Provider>,
    /// The model.
    pub model: Arc<dyn Model>,
    /// The built-in tools (the same registry the gateway serves).
    pub registry: Arc<Registry<CallContext>>,
    /// Time.
    pub clock: Arc<dyn Clock>,
    /// Ids.
    pub ids: Arc<dyn Ids>,
    /// The proofs' `iss`.
    pub issuer: String,
    /// An `executing` proposal older than this is treated as stuck (its process died):
    /// the next message reconciles it. Longer than the provider timeout.
    pub stuck_after: Duration,
}

impl std::fmt::Debug for ChatParts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatParts")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

/// The message of a ULID-based id was created at this Unix time (ms).
fn created_ms(id: &MessageId) -> Option<u64> {
    let ulid = id.as_str().strip_prefix(MessageId::PREFIX)?;
    ulid::Ulid::from_string(ulid).ok().map(|u| u.timestamp_ms())
}

impl Chat {
    /// Assembles the use cases.
    pub fn new(parts: ChatParts) -> Self {
        Self {
            parts,
            max_tool_rounds: 4,
            tokens: Mutex::new(HashMap::new()),
        }
    }

    fn message(
        &self,
        case: &CaseId,
        role: Role,
        kind: MessageKind,
        content: impl Into<String>,
    ) -> NewMessage {
        NewMessage {
            id: self.parts.ids.message_id(),
            case: case.clone(),
            role,
            kind,
            content: content.into(),
            reply_to: None,
            created_at: self.parts.clock.now(),
        }
    }

    pub(crate) fn notice(&self, case: &CaseId, text: &str) -> NewMessage {
        self.message(case, Role::Assistant, MessageKind::Notice, text)
    }

    /// `POST /api/cases`: a new open case for this person.
    pub async fn create_case(&self, who: &Principal) -> Result<Case, ChatError> {
        let language = self
            .parts
            .tenants
            .get_tenant(&who.tenant)
            .await?
            .map(|t| t.language)
            .unwrap_or_default();
        let case = Case {
            id: self.parts.ids.case_id(),
            tenant: who.tenant.clone(),
            user: who.user.clone(),
            status: CaseStatus::Open,
            created_at: self.parts.clock.now(),
        };
        self.parts
            .conversations
            .create_case(&case, language)
            .await?;
        Ok(case)
    }

    async fn owned(&self, who: &Principal, case: &CaseId) -> Result<ConversationView, ChatError> {
        self.parts
            .conversations
            .load(&who.tenant, case)
            .await?
            .filter(|v| v.case.is_owned_by(who))
            .ok_or(ChatError::NotFound)
    }

    /// `GET /api/cases/:id/messages`.
    pub async fn messages(
        &self,
        who: &Principal,
        case: &CaseId,
        after: Option<&MessageId>,
        limit: usize,
    ) -> Result<(Vec<Message>, Language), ChatError> {
        let view = self.owned(who, case).await?;
        let messages = self
            .parts
            .conversations
            .list_messages(&who.tenant, case, after, limit)
            .await?;
        Ok((messages, view.language))
    }

    /// `POST /api/cases/:id/close`: closes the case; a pending proposal is cancelled with
    /// it.
    pub async fn close(&self, who: &Principal, case: &CaseId) -> Result<(), ChatError> {
        self.owned(who, case).await?;
        match self
            .parts
            .conversations
            .close_case(&who.tenant, case)
            .await?
        {
            TransitionOutcome::Applied => Ok(()),
            TransitionOutcome::Conflict { .. } => Err(ChatError::Busy),
        }
    }

    /// `POST /api/cases/:id/messages`: one user message and everything it causes. Returns
    /// the messages stored by this request, in order (the user's first), and the case's
    /// language.
    pub async fn post(
        &self,
        who: &Principal,
        case: &CaseId,
        content: &str,
        reply_to: Option<MessageId>,
    ) -> Result<(Vec<NewMessage>, Language), ChatError> {
        let chars = content.chars().count();
        if content.trim().is_empty() || chars > MAX_CONTENT_CHARS {
            return Err(ChatError::Invalid {
                field: "content",
                message: format!("must be 1-{MAX_CONTENT_CHARS} characters, not only spaces"),
            });
        }
        let view = self.owned(who, case).await?;
        if view.case.status == CaseStatus::Closed {
            return Err(ChatError::Closed);
        }
        let lang = view.language;
        let user_message = NewMessage {
            reply_to,
            ..self.message(case, Role::User, MessageKind::Text, content)
        };
        let mut out = Vec::new();
        match view.active.clone() {
            Some(p) if p.state == ProposalState::PendingConfirmation => match classify(content) {
                Reply::Confirm => {
                    self.confirm(who, &view, p, user_message, &mut out).await?;
                    return Ok((out, lang));
                }
                Reply::Cancel => {
                    self.store(who, &user_message, &mut out).await?;
                    let cancelled = self
                        .end_pending(
                            who,
                            &p,
                            ProposalState::Cancelled,
                            texts::cancelled_notice(lang),
                            &mut out,
                        )
                        .await?;
                    if !cancelled && !self.after_lost_race(who, case, lang, &mut out).await? {
                        let n = self.notice(
                            case,
                            texts::refusal_notice(lang, &Refusal::NoPendingProposal),
                        );
                        self.store(who, &n, &mut out).await?;
                    }
                    return Ok((out, lang));
                }
                Reply::Other => {
                    // any other text invalidates the proposal before the model sees it.
                    self.store(who, &user_message, &mut out).await?;
                    let discarded = self
                        .end_pending(
                            who,
                            &p,
                            ProposalState::Cancelled,
                            texts::discarded_notice(lang),
                            &mut out,
                        )
                        .await?;
                    // Lost to a confirmation that started the action: status only.
                    if !discarded && self.after_lost_race(who, case, lang, &mut out).await? {
                        return Ok((out, lang));
                    }
                }
            },
            Some(p) if p.state.needs_reconciliation() => {
                // only the status query, never the model.
                self.store(who, &user_message, &mut out).await?;
                self.reconcile(who, lang, p, &mut out).await?;
                return Ok((out, lang));
            }
            _ => {
                self.store(who, &user_message, &mut out).await?;
                if classify(content) != Reply::Other {
                    // "confirm"/"cancel" with nothing pending: say so; the model never
                    // sees a bare confirmation word as a request.
                    let n = self.notice(
                        case,
                        texts::refusal_notice(lang, &Refusal::NoPendingProposal),
                    );
                    self.store(who, &n, &mut out).await?;
                    return Ok((out, lang));
                }
            }
        }
        if let Err(e) = turn::run(self, who, &view, &mut out).await {
            // The message is stored: answer with what happened rather than a 503 that a
            // client would retry (storing the message twice).
            tracing::warn!(error = %e, "model turn failed");
            let n = self.notice(case, texts::assistant_unavailable_notice(lang));
            if self.store(who, &n, &mut out).await.is_err() {
                return Err(e);
            }
        }
        Ok((out, lang))
    }

    pub(crate) async fn store(
        &self,
        who: &Principal,
        m: &NewMessage,
        out: &mut Vec<NewMessage>,
    ) -> Result<(), ChatError> {
        self.parts
            .conversations
            .append_message(&who.tenant, m)
            .await?;
        out.push(m.clone());
        Ok(())
    }

    /// Moves a pending proposal to `to` with a notice; if another request moved it first,
    /// says nothing more.
    async fn end_pending(
        &self,
        who: &Principal,
        p: &Proposal,
        to: ProposalState,
        text: &str,
        out: &mut Vec<NewMessage>,
    ) -> Result<bool, ChatError> {
        let notice = self.notice(&p.case, text);
        let applied = self
            .parts
            .conversations
            .transition(
                &who.tenant,
                &p.case,
                &p.action_id,
                ProposalState::PendingConfirmation,
                to,
                Some(&notice),
            )
            .await?
            == TransitionOutcome::Applied;
        if applied {
            out.push(notice);
        }
        Ok(applied)
    }

    /// After losing a race on a pending proposal (another request confirmed, cancelled or
    /// replaced it): decides again on the state now. Returns whether this request is done.
    async fn after_lost_race(
        &self,
        who: &Principal,
        case: &CaseId,
        lang: Language,
        out: &mut Vec<NewMessage>,
    ) -> Result<bool, ChatError> {
        let view = self.owned(who, case).await?;
        match view.active {
            // the action started meanwhile: only its status, never the model.
            Some(p) if p.state.needs_reconciliation() => {
                self.reconcile(who, lang, p, out).await?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// The confirm path: the binding check, then one transaction that stores the message
    /// and moves the proposal to `executing`; only then the proof and the provider.
    async fn confirm(
        &self,
        who: &Principal,
        view: &ConversationView,
        p: Proposal,
        message: NewMessage,
        out: &mut Vec<NewMessage>,
    ) -> Result<(), ChatError> {
        let lang = view.language;
        let checked = check_confirmation(
            Some(&p),
            &ConfirmingMessage {
                id: &message.id,
                case: &message.case,
                role: message.role,
                reply_to: message.reply_to.as_ref(),
                content: &message.content,
            },
            who,
            &view.case,
            self.parts.clock.now(),
        );
        let authorized = match checked {
            Ok(a) => a,
            Err(refusal) => {
                // a confirmation that fails A-23 cancels the pending proposal and says why.
                self.store(who, &message, out).await?;
                let to = if refusal == Refusal::Expired {
                    ProposalState::Expired
                } else {
                    ProposalState::Cancelled
                };
                self.end_pending(who, &p, to, texts::refusal_notice(lang, &refusal), out)
                    .await?;
                return Ok(());
            }
        };
        let write = ConfirmWrite {
            tenant: who.tenant.clone(),
            case: p.case.clone(),
            action_id: p.action_id.clone(),
            presented_message_id: p.presented.message_id.clone(),
            message: message.clone(),
            config: p.secret_version.clone().map(|sv| (p.config_version, sv)),
        };
        match self.parts.conversations.confirm(&write).await? {
            TransitionOutcome::Applied => {
                out.push(message);
                let mut executing = p;
                executing.state = ProposalState::Executing;
                executing.confirmation_message_id = Some(authorized.message_id.clone());
                self.execute(who, lang, executing, &authorized, out).await
            }
            TransitionOutcome::Conflict { current: None } => {
                self.store(who, &message, out).await?;
                // Either the configuration changed since the proposal was prepared (C-8),
                // or the store kept losing races: tell which, and cancel only for the first.
                let config = self.parts.tenants.get_mcp_config(&who.tenant).await?;
                let same = config.is_some_and(|c| {
                    Some(&c.secret_version) == p.secret_version.as_ref()
                        && c.version == p.config_version
                });
                if same {
                    let n = self.notice(&message.case, texts::confirm_retry_notice(lang));
                    self.store(who, &n, out).await
                } else {
                    self.end_pending(
                        who,
                        &p,
                        ProposalState::Cancelled,
                        texts::invalidated_notice(lang),
                        out,
                    )
                    .await
                    .map(|_| ())
                }
            }
            TransitionOutcome::Conflict { current } => {
                // Another request confirmed, cancelled or replaced it first: this message
                // is an ordinary one and authorizes nothing.
                self.store(who, &message, out).await?;
                let refusal = Refusal::NotPending(current.unwrap_or(ProposalState::Cancelled));
                let notice = self.notice(&message.case, texts::refusal_notice(lang, &refusal));
                self.store(who, &notice, out).await
            }
        }
    }

    /// The tenant's provider context with the service token of `secret_version` (the
    /// integration the proposal was prepared with, C-8), or of the current configuration.
    pub(crate) async fn provider_context(
        &self,
        who: &Principal,
        case: &CaseId,
        config: &StoredMcpConfig,
    ) -> Result<Option<ProviderContext>, ChatError> {
        self.context_for(
            who,
            case,
            config.config.server_url.clone(),
            &config.secret_version,
            config.version,
        )
        .await
    }

    /// The provider context for `server_url` with the service token of `secret_version`
    /// (cached: a secret version never changes).
    async fn context_for(
        &self,
        who: &Principal,
        case: &CaseId,
        server_url: countersign_domain::config::ServerUrl,
        secret_version: &str,
        config_version: u64,
    ) -> Result<Option<ProviderContext>, ChatError> {
        let key = (who.tenant.clone(), secret_version.to_owned());
        let cached = self
            .tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
            .cloned();
        let token = match cached {
            Some(t) => t,
            None => {
                let Some(t) = self
                    .parts
                    .secrets
                    .get_version(&service_token_secret_name(&who.tenant), secret_version)
                    .await
                    .map_err(|e| ChatError::Unavailable(StoreError::Unavailable(Box::new(e))))?
                else {
                    return Ok(None);
                };
                self.tokens
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(key, t.clone());
                t
            }
        };
        Ok(Some(ProviderContext {
            tenant: who.tenant.clone(),
            user: who.user.clone(),
            conversation: case.clone(),
            server_url,
            service_token: token,
            config_version,
        }))
    }

    /// The integration a proposal was prepared with — its URL, token version and
    /// audience — and no other (C-8: an uncertain result is checked with the original
    /// integration).
    async fn proposal_context(
        &self,
        who: &Principal,
        p: &Proposal,
    ) -> Result<Option<(ProviderContext, String)>, ChatError> {
        let (Some(url), Some(secret)) = (&p.server_url, &p.secret_version) else {
            return Ok(None);
        };
        // Stored URLs passed the save-time rules; the client re-checks D-5 at connect time
        // under this deployment's policy.
        let Ok(server_url) = countersign_domain::config::ServerUrl::parse(
            url,
            countersign_domain::config::UrlPolicy {
                allow_loopback_http: true,
            },
        ) else {
            return Ok(None);
        };
        let audience = p
            .audience
            .clone()
            .unwrap_or_else(|| server_url.as_str().to_owned());
        Ok(self
            .context_for(who, &p.case, server_url, secret, p.config_version)
            .await?
            .map(|ctx| (ctx, audience)))
    }

    /// Writes the outcome: `executing`/`unknown` → `to`, with the message. If the state
    /// moved meanwhile (a concurrent reconciliation marked it `unknown`), a terminal
    /// outcome is written from `unknown` instead.
    async fn settle(
        &self,
        who: &Principal,
        p: &Proposal,
        from: ProposalState,
        to: ProposalState,
        message: NewMessage,
        out: &mut Vec<NewMessage>,
    ) -> Result<(), ChatError> {
        if from == to {
            return self.store(who, &message, out).await;
        }
        let first = self
            .parts
            .conversations
            .transition(&who.tenant, &p.case, &p.action_id, from, to, Some(&message))
            .await?;
        let applied = match first {
            TransitionOutcome::Applied => true,
            TransitionOutcome::Conflict {
                current: Some(ProposalState::Unknown),
            } if to.is_terminal() => {
                self.parts
                    .conversations
                    .transition(
                        &who.tenant,
                        &p.case,
                        &p.action_id,
                        ProposalState::Unknown,
                        to,
                        Some(&message),
                    )
                    .await?
                    == TransitionOutcome::Applied
            }
            TransitionOutcome::Conflict {
                current: Some(ProposalState::Unknown),
            } if to == ProposalState::Unknown => {
                // A status query marked it unknown first: the person is still told.
                self.parts
                    .conversations
                    .append_message(&who.tenant, &message)
                    .await?;
                true
            }
            TransitionOutcome::Conflict { .. } => false,
        };
        if applied {
            out.push(message);
        }
        Ok(())
    }

    fn outcome_message(
        &self,
        lang: Language,
        case: &CaseId,
        to: ProposalState,
        answer: Option<&ActionAnswer>,
    ) -> NewMessage {
        if to == ProposalState::Unknown {
            return self.notice(case, texts::uncertainty_notice(lang));
        }
        let (status, text) = match answer {
            Some(ActionAnswer::Reported(r)) => (r.status, r.message.as_ref()),
            _ => (RemoteStatus::Failed, None),
        };
        let status = to.as_remote().unwrap_or(status);
        self.message(
            case,
            Role::Assistant,
            MessageKind::Result,
            texts::format_result(lang, status, text),
        )
    }

    /// Steps 3–5 of the confirm path: sign, call `execute_action` once, record the outcome.
    async fn execute(
        &self,
        who: &Principal,
        lang: Language,
        p: Proposal,
        authorized: &Authorized,
        out: &mut Vec<NewMessage>,
    ) -> Result<(), ChatError> {
        let failed = |this: &Self| {
            this.message(
                &p.case,
                Role::Assistant,
                MessageKind::Result,
                texts::format_result(lang, RemoteStatus::Failed, None),
            )
        };
        // Nothing has been sent yet: any failure before the call is a plain failure.
        let (ctx, audience) = match self.proposal_context(who, &p).await {
            Ok(Some(found)) => found,
            Ok(None) => {
                let m = failed(self);
                return self
                    .settle(
                        who,
                        &p,
                        ProposalState::Executing,
                        ProposalState::Failed,
                        m,
                        out,
                    )
                    .await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading the integration failed before execution");
                let m = failed(self);
                return self
                    .settle(
                        who,
                        &p,
                        ProposalState::Executing,
                        ProposalState::Failed,
                        m,
                        out,
                    )
                    .await;
            }
        };
        let jti = self.parts.ids.proof_jti();
        let claims = ProofClaims::for_confirmation(
            &p,
            authorized,
            &ProofContext {
                issuer: &self.parts.issuer,
                audience: &audience,
                jti: &jti,
                now: self.parts.clock.now(),
            },
        );
        let claims = match claims {
            Ok(c) => c,
            Err(countersign_domain::proof::ProofError::ProposalExpired) => {
                let m = self.message(
                    &p.case,
                    Role::Assistant,
                    MessageKind::Result,
                    texts::format_result(lang, RemoteStatus::Expired, None),
                );
                return self
                    .settle(
                        who,
                        &p,
                        ProposalState::Executing,
                        ProposalState::Expired,
                        m,
                        out,
                    )
                    .await;
            }
            Err(e) => {
                tracing::error!(error = %e, "proof claims refused");
                let m = failed(self);
                return self
                    .settle(
                        who,
                        &p,
                        ProposalState::Executing,
                        ProposalState::Failed,
                        m,
                        out,
                    )
                    .await;
            }
        };
        let proof = match sign_proof(self.parts.signer.as_ref(), &claims).await {
            Ok(proof) => proof,
            Err(e) => {
                tracing::error!(error = %e, "signing the proof failed");
                let m = failed(self);
                return self
                    .settle(
                        who,
                        &p,
                        ProposalState::Executing,
                        ProposalState::Failed,
                        m,
                        out,
                    )
                    .await;
            }
        };
        // only {actionId}, the A-11 headers and the proof.
        let mut args = serde_json::Map::new();
        args.insert("actionId".into(), json!(p.action_id.as_str()));
        let answer = self
            .parts
            .provider
            .call_tool(&ctx, "execute_action", &args, Some(&proof))
            .await;
        drop(proof);
        let parsed = match &answer {
            Ok(raw) => ToolResult::from_mcp_json(raw)
                .ok()
                .and_then(|r| parse_action_answer(&r, &p.action_id).ok()),
            Err(e) => {
                tracing::warn!(error = %e, action = %p.action_id, "execute_action got no answer: outcome unknown");
                None
            }
        };
        // no answer, an invalid one or a non-terminal one → unknown; never re-sent.
        let to = transition(
            ProposalState::Executing,
            event_after_execute(parsed.as_ref()),
        )
        .unwrap_or(ProposalState::Unknown);
        let m = self.outcome_message(lang, &p.case, to, parsed.as_ref());
        self.settle(who, &p, ProposalState::Executing, to, m, out)
            .await
    }

    /// asks the provider for the status of an `executing` (stuck) or `unknown`
    /// proposal; a terminal answer closes it.
    async fn reconcile(
        &self,
        who: &Principal,
        lang: Language,
        p: Proposal,
        out: &mut Vec<NewMessage>,
    ) -> Result<(), ChatError> {
        if p.state == ProposalState::Executing {
            let started = p.confirmation_message_id.as_ref().and_then(created_ms);
            let now_ms = u64::try_from(self.parts.clock.now().unix_millis()).unwrap_or(0);
            let young = started.is_some_and(|s| {
                now_ms.saturating_sub(s) < self.parts.stuck_after.as_millis() as u64
            });
            if young {
                // Another request is executing it right now.
                let n = self.notice(&p.case, texts::status_prefix(lang, RemoteStatus::Executing));
                return self.store(who, &n, out).await;
            }
        }
        let ctx = self.proposal_context(who, &p).await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "reading the integration failed before a status query");
            None
        });
        let parsed = match ctx {
            None => None,
            Some((ctx, _)) => {
                let mut args = serde_json::Map::new();
                args.insert("actionId".into(), json!(p.action_id.as_str()));
                match self
                    .parts
                    .provider
                    .call_tool(&ctx, "get_action_status", &args, None)
                    .await
                {
                    Ok(raw) => ToolResult::from_mcp_json(&raw)
                        .ok()
                        .and_then(|r| parse_action_answer(&r, &p.action_id).ok()),
                    Err(e) => {
                        tracing::warn!(error = %e, action = %p.action_id, "status query failed");
                        None
                    }
                }
            }
        };
        let to = transition(p.state, event_after_status(parsed.as_ref()))
            .unwrap_or(ProposalState::Unknown);
        let m = self.outcome_message(lang, &p.case, to, parsed.as_ref());
        self.settle(who, &p, p.state, to, m, out).await
    }
}
