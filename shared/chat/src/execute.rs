//! Execution after a confirmation (A-30 …) and reconciliation of an
//! unsettled action. `execute_action` is sent at most once per proposal, after the
//! `executing` state is durable; any failure before the call is a plain failure, anything
//! uncertain after it is `unknown`, never re-sent.

use crate::service::{Chat, ChatError};
use countersign_domain::confirmation::Authorized;
use countersign_domain::conversation::{MessageKind, Principal, Role};
use countersign_domain::ids::{ActionId, CaseId, MessageId};
use countersign_domain::outcome::{
    ActionAnswer, event_after_execute, event_after_status, parse_action_answer,
};
use countersign_domain::ports::{
    Confirmation, NewMessage, ProviderContext, ProviderError, TransitionOutcome,
};
use countersign_domain::proof::{Proof, ProofClaims, ProofContext, ProofError, sign_proof};
use countersign_domain::proposal::{Proposal, ProposalState, RemoteStatus, transition};
use countersign_domain::stepup::Evidence;
use countersign_domain::texts::{self, Language};
use countersign_domain::tool_result::ToolResult;
use serde_json::{Map, Value};

/// Why `execute_action` was not sent: the proposal settles as this, certainly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NotSent {
    /// The integration, the claims or the signature failed.
    Failed,
    /// The proposal expired before the proof could be made.
    Expired,
    /// C-8: the tenant's action settings changed after it was prepared.
    SettingsChanged,
}

impl NotSent {
    fn state(self) -> ProposalState {
        match self {
            Self::Failed | Self::SettingsChanged => ProposalState::Failed,
            Self::Expired => ProposalState::Expired,
        }
    }
}

/// the only argument sent with `execute_action` and `get_action_status`.
fn action_arguments(id: &ActionId) -> Map<String, Value> {
    let mut args = Map::new();
    args.insert("actionId".into(), Value::String(id.as_str().to_owned()));
    args
}

/// Reads a provider's answer about `id`; `None` when there was none or it broke the
/// contract: the outcome is then uncertain, and the log says why (the rules
/// broken, never the values: no proof, no personal data).
fn read_answer(answer: Result<Value, ProviderError>, id: &ActionId) -> Option<ActionAnswer> {
    let raw = match answer {
        Ok(raw) => raw,
        Err(e) => {
            tracing::warn!(error = %e, action = %id, "the provider gave no answer: outcome unknown");
            return None;
        }
    };
    let result = match ToolResult::from_mcp_json(&raw) {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(action = %id, problem = %e, "the provider's answer is not a tool result: outcome unknown");
            return None;
        }
    };
    match parse_action_answer(&result, id) {
        Ok(a) => Some(a),
        Err(violations) => {
            let rules: Vec<&str> = violations.iter().map(|v| v.rule()).collect();
            tracing::warn!(action = %id, ?rules, "the provider's answer breaks the contract (A-40): outcome unknown");
            None
        }
    }
}

/// The Unix time (ms) in a ULID-based message id.
fn created_ms(id: &MessageId) -> Option<u64> {
    let ulid = id.as_str().strip_prefix(MessageId::PREFIX)?;
    ulid::Ulid::from_string(ulid).ok().map(|u| u.timestamp_ms())
}

impl Chat {
    /// Steps 3–5 of the confirm path: sign, call `execute_action` once, record the outcome.
    /// Returns the state it ended in.
    pub(crate) async fn execute(
        &self,
        who: &Principal,
        lang: Language,
        p: Proposal,
        authorized: &Authorized,
        evidence: Option<&Evidence>,
        out: &mut Vec<NewMessage>,
    ) -> Result<ProposalState, ChatError> {
        let sent = self.send_execute(who, lang, &p, authorized, evidence).await;
        let (to, answer, not_sent) = match sent {
            // no answer, an invalid one or a non-terminal one → unknown.
            Ok(answer) => {
                let event = event_after_execute(answer.as_ref());
                let to = transition(ProposalState::Executing, event);
                (to.unwrap_or(ProposalState::Unknown), answer, None)
            }
            Err(not_sent) => (not_sent.state(), None, Some(not_sent)),
        };
        let m = if not_sent == Some(NotSent::SettingsChanged) {
            self.notice(&p.case, texts::invalidated_notice(lang))
        } else {
            self.outcome_message(lang, &p.case, to, answer.as_ref())
        };
        self.settle(who, &p, ProposalState::Executing, to, m, out)
            .await?;
        Ok(to)
    }

    /// Opens the connection, signs the proof, and sends `execute_action` once, in that
    /// order: the proof exists only once the request is about to go. `Err` when nothing
    /// was sent (the integration, the handshake, the claims or the signature failed).
    async fn send_execute(
        &self,
        who: &Principal,
        lang: Language,
        p: &Proposal,
        authorized: &Authorized,
        evidence: Option<&Evidence>,
    ) -> Result<Option<ActionAnswer>, NotSent> {
        // C-8: read after the confirmation committed, so a save that committed first is
        // seen here, and one that commits later comes after the execution began.
        match self.parts.integration.in_force(who, p).await {
            Ok(true) => {}
            Ok(false) => return Err(NotSent::SettingsChanged),
            Err(e) => {
                tracing::warn!(error = %e, "reading the action settings failed before execution");
                return Err(NotSent::Failed);
            }
        }
        let (ctx, audience) = match self.parts.integration.for_proposal(who, p).await {
            // B-2: the person's language reaches the provider (`X-MCP-Language`).
            Ok(Some((ctx, audience))) => (
                ProviderContext {
                    language: Some(lang),
                    ..ctx
                },
                audience,
            ),
            Ok(None) => return Err(NotSent::Failed),
            Err(e) => {
                tracing::warn!(error = %e, "reading the integration failed before execution");
                return Err(NotSent::Failed);
            }
        };
        let provider = self.parts.integration.provider();
        // The handshake fails before anything is sent: the action is certainly not run.
        let opened = provider.open(&ctx).await.map_err(|e| {
            tracing::warn!(error = %e, action = %p.action_id, "the provider handshake failed: nothing was sent");
            NotSent::Failed
        })?;
        let proof = self.proof(p, authorized, &audience, evidence).await?;
        let args = action_arguments(&p.action_id);
        // only {actionId}, the A-11 headers and the proof.
        let confirmation = Confirmation {
            opened: &opened,
            proof: &proof,
        };
        let answer = provider
            .call_tool(&ctx, "execute_action", &args, Some(confirmation))
            .await;
        drop(proof);
        Ok(read_answer(answer, &p.action_id))
    }

    /// The proof for this confirmation.
    async fn proof(
        &self,
        p: &Proposal,
        authorized: &Authorized,
        audience: &str,
        evidence: Option<&Evidence>,
    ) -> Result<Proof, NotSent> {
        let jti = self.parts.ids.proof_jti();
        let context = ProofContext {
            issuer: &self.parts.issuer,
            audience,
            jti: &jti,
            now: self.parts.clock.now(),
        };
        let claims = match ProofClaims::for_confirmation(p, authorized, &context) {
            Ok(c) => c,
            Err(ProofError::ProposalExpired) => return Err(NotSent::Expired),
            Err(e) => {
                tracing::error!(error = %e, "proof claims refused");
                return Err(NotSent::Failed);
            }
        };
        let signer = self.parts.signer.as_ref();
        let signed = match (p.needs_passkey, evidence) {
            (_, Some(evidence)) => {
                countersign_domain::stepup::sign_stepup_proof(signer, &claims, evidence).await
            }
            (false, None) => sign_proof(signer, &claims).await,
            // F-1: never a plain proof for a passkey operation.
            (true, None) => {
                tracing::error!(action = %p.action_id, "a passkey operation reached signing without its step-up");
                return Err(NotSent::Failed);
            }
        };
        signed.map_err(|e| {
            tracing::error!(error = %e, "signing the proof failed");
            NotSent::Failed
        })
    }

    /// asks the provider for the status of an `executing` (stuck) or `unknown`
    /// proposal; a terminal answer closes it. Returns whether the action is now settled.
    pub(crate) async fn reconcile(
        &self,
        who: &Principal,
        lang: Language,
        p: Proposal,
        out: &mut Vec<NewMessage>,
    ) -> Result<bool, ChatError> {
        if p.state == ProposalState::Executing && self.still_running(&p) {
            // Another request is executing it right now.
            let text = texts::status_prefix(lang, RemoteStatus::Executing);
            self.tell(who, &p.case, text, out).await?;
            return Ok(false);
        }
        let answer = self.ask_status(who, lang, &p).await;
        let to = transition(p.state, event_after_status(answer.as_ref()))
            .unwrap_or(ProposalState::Unknown);
        let m = self.outcome_message(lang, &p.case, to, answer.as_ref());
        self.settle(who, &p, p.state, to, m, out).await?;
        Ok(to.is_terminal())
    }

    /// Whether an `executing` proposal was confirmed less than `stuck_after` ago.
    fn still_running(&self, p: &Proposal) -> bool {
        let started = p.confirmation_message_id.as_ref().and_then(created_ms);
        let now_ms = u64::try_from(self.parts.clock.now().unix_millis()).unwrap_or(0);
        let stuck_ms = u64::try_from(self.parts.stuck_after.as_millis()).unwrap_or(u64::MAX);
        started.is_some_and(|s| now_ms.saturating_sub(s) < stuck_ms)
    }

    /// `get_action_status` with the proposal's own integration (C-8).
    async fn ask_status(
        &self,
        who: &Principal,
        lang: Language,
        p: &Proposal,
    ) -> Option<ActionAnswer> {
        let ctx: Option<(ProviderContext, String)> = self
            .parts
            .integration
            .for_proposal(who, p)
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, "reading the integration failed before a status query");
                None
            });
        let (mut ctx, _) = ctx?;
        ctx.language = Some(lang);
        let args = action_arguments(&p.action_id);
        let answer = self
            .parts
            .integration
            .provider()
            .call_tool(&ctx, "get_action_status", &args, None)
            .await;
        let answer = read_answer(answer, &p.action_id);
        self.note_status(who, p, answer.as_ref()).await;
        answer
    }

    /// Keeps, for the tenant's administrator, the provider's last status answer that
    /// settles nothing (a final one settles the action, which removes its entry). A
    /// failure to note it changes nothing for the person.
    async fn note_status(&self, who: &Principal, p: &Proposal, answer: Option<&ActionAnswer>) {
        let seen = match answer {
            Some(ActionAnswer::Reported(r)) if r.status.is_terminal() => return,
            Some(ActionAnswer::Reported(r)) => r.status.as_str(),
            Some(ActionAnswer::ToolError) => "isError",
            None => "no valid answer",
        };
        let now = self.parts.clock.now();
        let noted = self
            .parts
            .unsettled
            .note_status(&who.tenant, &p.action_id, seen, now)
            .await;
        if let Err(e) = noted {
            tracing::warn!(error = %e, "noting the last status answer failed");
        }
    }

    /// Writes the outcome: `from` → `to`, with the message. If the state moved meanwhile
    /// (a concurrent reconciliation marked it `unknown`), a terminal outcome is written
    /// from `unknown` instead.
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
        let store = &self.parts.proposals;
        let (tenant, case, id) = (&who.tenant, &p.case, &p.action_id);
        let first = store
            .transition(tenant, case, id, from, to, Some(&message))
            .await?;
        let unknown_now = TransitionOutcome::Conflict {
            current: Some(ProposalState::Unknown),
        };
        let applied = if first == TransitionOutcome::Applied {
            true
        } else if first == unknown_now && to.is_terminal() {
            let again = store
                .transition(tenant, case, id, ProposalState::Unknown, to, Some(&message))
                .await?;
            again == TransitionOutcome::Applied
        } else if first == unknown_now && to == ProposalState::Unknown {
            // A status query marked it unknown first: the person is still told.
            self.parts
                .conversations
                .append_message(tenant, &message)
                .await?;
            true
        } else {
            false
        };
        if applied {
            crate::metrics::proposal_outcome(to);
            out.push(message);
        }
        Ok(())
    }

    /// The result message of an outcome, or the uncertainty notice.
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
        let content = texts::format_result(lang, status, text);
        self.message(case, Role::Assistant, MessageKind::Result, content)
    }
}
