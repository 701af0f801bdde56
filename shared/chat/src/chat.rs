//! The use cases of the messages function (D-1, D-3): cases, and the order of decisions
//! for each user message.
//!
//! For each user message, in this order: store it (or, for a valid confirmation, store it
//! inside the confirm transaction); if a proposal is pending, classify first →
//! confirm, cancel, or invalidate and continue; if one is
//! `executing` or `unknown`, run only the status query; otherwise a model turn.
//! The confirm path is in `confirm`, execution and reconciliation in `execute`, the
//! model turn in `turn`; a case's life and reads are in `cases`, the budgets in `limits`.

use crate::turn;
use countersign_domain::confirmation::{Refusal, Reply, classify};
use countersign_domain::conversation::{CaseStatus, MessageKind, Principal, Role};
use countersign_domain::ids::{CaseId, MessageId};
use countersign_domain::ports::{ConversationView, NewMessage, TransitionOutcome};
use countersign_domain::proposal::{Proposal, ProposalState};
use countersign_domain::texts::{self, Language};

pub use crate::cases::OpenedCase;
pub use crate::service::{Chat, ChatError, ChatParts, MAX_CONTENT_CHARS, PersonLimits};

/// What a request does after its first decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// Nothing more: the messages stored so far are the answer.
    Done,
    /// A model turn answers the message.
    ModelTurn,
}

/// Whether `c` is white space as the widget API documents it: the OpenAPI pattern `\S`
/// (ECMA-262's `\s`: its white space and line terminators). Rust's `char::is_whitespace`
/// differs in two characters (U+0085 is white space there, U+FEFF is not): a message of
/// one NEL matched the document and was refused (found by the API fuzzing).
fn is_documented_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

/// Refuses an empty, blank or overlong message.
fn check_content(content: &str) -> Result<(), ChatError> {
    if content.chars().all(is_documented_space) || content.chars().count() > MAX_CONTENT_CHARS {
        return Err(ChatError::Invalid {
            field: "content",
            message: format!("must be 1-{MAX_CONTENT_CHARS} characters, not only spaces"),
        });
    }
    Ok(())
}

impl Chat {
    /// Assembles the use cases.
    pub fn new(parts: ChatParts) -> Self {
        Self {
            parts,
            max_tool_rounds: 4,
            max_tool_calls: 8,
            turn_deadline: std::time::Duration::from_secs(20),
            max_output_tokens: 1024,
            turn_budget: None,
            request_budget: None,
            person_limits: None,
            mcp_tokens: None,
            step_up: None,
        }
    }

    /// A new message of this case, stamped now.
    pub(crate) fn message(
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

    /// A platform notice (a fixed text, D-6).
    pub(crate) fn notice(&self, case: &CaseId, text: &str) -> NewMessage {
        self.message(case, Role::Assistant, MessageKind::Notice, text)
    }

    /// Stores `m` and adds it to this request's answer.
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
        crate::stream::emit(crate::stream::Event::Stored(m.clone()));
        out.push(m.clone());
        Ok(())
    }

    /// Stores a fixed notice.
    pub(crate) async fn tell(
        &self,
        who: &Principal,
        case: &CaseId,
        text: &str,
        out: &mut Vec<NewMessage>,
    ) -> Result<(), ChatError> {
        let n = self.notice(case, text);
        self.store(who, &n, out).await
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
        self.post_answering(who, case, content, reply_to, None)
            .await
    }

    /// F-3: a confirmation countersigned with the person's passkey: `post`, with the
    /// step-up `answer` a passkey operation's confirmation needs.
    pub async fn post_countersigned(
        &self,
        who: &Principal,
        case: &CaseId,
        content: &str,
        reply_to: Option<MessageId>,
        answer: &crate::stepup::StepUpAnswer,
    ) -> Result<(Vec<NewMessage>, Language), ChatError> {
        self.post_answering(who, case, content, reply_to, Some(answer))
            .await
    }

    async fn post_answering(
        &self,
        who: &Principal,
        case: &CaseId,
        content: &str,
        reply_to: Option<MessageId>,
        answer: Option<&crate::stepup::StepUpAnswer>,
    ) -> Result<(Vec<NewMessage>, Language), ChatError> {
        check_content(content)?;
        let view = self.owned(who, case).await?;
        // Confirm-path review N10: the answer to a waiting proposal never spends the
        // person's message budget (a person can always confirm or cancel it).
        let answering = classify(content) != Reply::Other
            && view
                .active
                .as_ref()
                .is_some_and(|p| p.state == ProposalState::PendingConfirmation);
        if !answering {
            self.spend_person(who, "messages").await?;
        }
        if view.case.status == CaseStatus::Closed {
            return Err(ChatError::Closed);
        }
        // Before anything is stored: a message the model would answer spends one unit of
        // the tenant's budget. Confirmations, cancellations and status checks never do.
        let reconciling = view
            .active
            .as_ref()
            .is_some_and(|p| p.state.needs_reconciliation());
        if classify(content) == Reply::Other && !reconciling {
            self.spend_turn(who).await?;
        }
        let message = NewMessage {
            reply_to,
            ..self.message(case, Role::User, MessageKind::Text, content)
        };
        let mut out = Vec::new();
        let next = match view.active.clone() {
            Some(p) if p.state == ProposalState::PendingConfirmation => {
                self.while_pending(who, &view, p, message, answer, &mut out)
                    .await?
            }
            Some(p) if p.state.needs_reconciliation() => {
                // only the status query, never the model.
                self.store(who, &message, &mut out).await?;
                let settled = self.reconcile(who, view.language, p, &mut out).await?;
                // Settled by this check: the person's message then goes on to the model,
                // so they need not repeat it (a budget already spent skips it).
                let for_model = classify(&message.content) == Reply::Other;
                if settled && for_model && self.spend_turn(who).await.is_ok() {
                    Next::ModelTurn
                } else {
                    Next::Done
                }
            }
            _ => self.while_idle(who, &view, &message, &mut out).await?,
        };
        if next == Next::ModelTurn {
            self.model_turn(who, &view, &mut out).await?;
        }
        Ok((out, view.language))
    }

    /// A message while a proposal waits for its confirmation (A-24 classifies first).
    async fn while_pending(
        &self,
        who: &Principal,
        view: &ConversationView,
        p: Proposal,
        message: NewMessage,
        answer: Option<&crate::stepup::StepUpAnswer>,
        out: &mut Vec<NewMessage>,
    ) -> Result<Next, ChatError> {
        let lang = view.language;
        match classify(&message.content) {
            Reply::Confirm => {
                // F-1: no proof for a passkey operation without the person's passkey over
                // this very action: a typed confirm, or a step-up that fails, is refused
                // before anything is stored (a stored notice after the presentation would
                // end the proposal, A-25).
                let evidence = match (p.needs_passkey, &self.step_up, answer) {
                    (false, _, _) => None,
                    (true, Some(step_up), Some(answer)) => {
                        Some(step_up.verify(who, &p, answer).await?)
                    }
                    (true, _, _) => return Err(ChatError::StepUpRequired),
                };
                self.confirm(who, view, p, message, evidence, out).await?;
                Ok(Next::Done)
            }
            Reply::Cancel => {
                self.store(who, &message, out).await?;
                let notice = texts::cancelled_notice(lang);
                let cancelled = self.end_pending(who, &p, ProposalState::Cancelled, notice, out);
                let current = match cancelled.await? {
                    TransitionOutcome::Applied => return Ok(Next::Done),
                    TransitionOutcome::Conflict { current } => current,
                };
                if self.after_lost_race(who, &p.case, lang, out).await? {
                    return Ok(Next::Done);
                }
                // Lost to a confirmation that already settled: say what happened.
                let text = current
                    .and_then(|st| texts::too_late_to_cancel_notice(lang, st))
                    .unwrap_or_else(|| texts::refusal_notice(lang, &Refusal::NoPendingProposal));
                self.tell(who, &p.case, text, out).await?;
                Ok(Next::Done)
            }
            Reply::Other => {
                // any other text invalidates the proposal before the model sees it.
                self.store(who, &message, out).await?;
                let notice = texts::discarded_notice(lang);
                let discarded = self.end_pending(who, &p, ProposalState::Cancelled, notice, out);
                // Lost to a confirmation that started the action: status only.
                let lost = discarded.await? != TransitionOutcome::Applied;
                if lost && self.after_lost_race(who, &p.case, lang, out).await? {
                    return Ok(Next::Done);
                }
                Ok(Next::ModelTurn)
            }
        }
    }

    /// A message with no proposal waiting: a bare "confirm"/"cancel" is answered with a
    /// notice (the model never sees a confirmation word as a request); anything else goes
    /// to the model.
    async fn while_idle(
        &self,
        who: &Principal,
        view: &ConversationView,
        message: &NewMessage,
        out: &mut Vec<NewMessage>,
    ) -> Result<Next, ChatError> {
        self.store(who, message, out).await?;
        if classify(&message.content) == Reply::Other {
            return Ok(Next::ModelTurn);
        }
        // S-3: a reply to a proposal that is no longer pending says what became of it.
        let refusal = match &message.reply_to {
            Some(reply) => self
                .parts
                .conversations
                .proposal_outcomes(&who.tenant, &view.case.id)
                .await?
                .into_iter()
                .find(|o| &o.presented == reply)
                .map_or(Refusal::NoPendingProposal, |o| Refusal::NotPending(o.state)),
            None => Refusal::NoPendingProposal,
        };
        let text = texts::refusal_notice(view.language, &refusal);
        self.tell(who, &view.case.id, text, out).await?;
        Ok(Next::Done)
    }

    /// The model answers. The user's message is already stored, so a failed turn is
    /// answered with a notice rather than a 503 a client would retry (storing the
    /// message twice).
    async fn model_turn(
        &self,
        who: &Principal,
        view: &ConversationView,
        out: &mut Vec<NewMessage>,
    ) -> Result<(), ChatError> {
        let turn = tokio::time::timeout(self.turn_deadline, turn::run(self, who, view, out));
        let Ok(ran) = turn.await else {
            tracing::warn!(deadline = ?self.turn_deadline, "the model turn ran out of time");
            let text = texts::turn_incomplete_notice(view.language);
            return self.tell(who, &view.case.id, text, out).await;
        };
        let Err(e) = ran else {
            return Ok(());
        };
        tracing::warn!(error = %e, "model turn failed");
        let text = texts::assistant_unavailable_notice(view.language);
        self.tell(who, &view.case.id, text, out)
            .await
            .map_err(|_| e)
    }

    /// Moves a pending proposal to `to` with a notice; if another request moved it first,
    /// says nothing more. Returns the store's outcome (`Conflict` carries the state found).
    pub(crate) async fn end_pending(
        &self,
        who: &Principal,
        p: &Proposal,
        to: ProposalState,
        text: &str,
        out: &mut Vec<NewMessage>,
    ) -> Result<TransitionOutcome, ChatError> {
        let notice = self.notice(&p.case, text);
        let outcome = self
            .parts
            .proposals
            .transition(
                &who.tenant,
                &p.case,
                &p.action_id,
                ProposalState::PendingConfirmation,
                to,
                Some(&notice),
            )
            .await?;
        if outcome == TransitionOutcome::Applied {
            crate::metrics::proposal_outcome(to);
            out.push(notice);
        }
        Ok(outcome)
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
}

/// F-3: the confirmation page's links for a passkey proposal (here, beside the other
/// use cases, so the ceremonies' module never reaches back into the service).
impl Chat {
    /// F-3: a new link to the confirmation page for `case`'s waiting proposal that needs
    /// the person's passkey (the widget opens it top-level: the ceremony never runs in the
    /// tenant's page), and when it expires.
    pub async fn step_up_link(
        &self,
        who: &Principal,
        case: &countersign_domain::ids::CaseId,
    ) -> Result<(String, countersign_domain::time::Timestamp), ChatError> {
        self.step_up_link_of(who, case, |_| true).await
    }

    /// F-3 (rollout without lockout): the link of [`Self::step_up_link`], only when the
    /// waiting passkey proposal is one `presented` (a message about to be shown), with the
    /// id of the message that presented it. What a widget older than step-up, which shows
    /// a proposal's instructions but not the step-up button, gives the person.
    pub async fn step_up_link_for(
        &self,
        who: &Principal,
        case: &countersign_domain::ids::CaseId,
        presented: &[&countersign_domain::ids::MessageId],
    ) -> Option<(countersign_domain::ids::MessageId, String)> {
        let mut found = None;
        let link = self
            .step_up_link_of(who, case, |p| {
                let shown = presented.contains(&&p.presented.message_id);
                if shown {
                    found = Some(p.presented.message_id.clone());
                }
                shown
            })
            .await
            .ok()?;
        Some((found?, link.0))
    }

    async fn step_up_link_of(
        &self,
        who: &Principal,
        case: &countersign_domain::ids::CaseId,
        mut wanted: impl FnMut(&countersign_domain::proposal::Proposal) -> bool,
    ) -> Result<(String, countersign_domain::time::Timestamp), ChatError> {
        use ChatError;
        use countersign_domain::proposal::ProposalState;
        let view = self.owned(who, case).await?;
        let now = self.parts.clock.now();
        let (Some(step_up), Some(p)) = (
            &self.step_up,
            view.active.filter(|p| {
                p.state == ProposalState::PendingConfirmation
                    && p.needs_passkey
                    && now < p.expires_at
                    && wanted(p)
            }),
        ) else {
            return Err(ChatError::NoStepUpPending);
        };
        let origin = step_up.origins.first().ok_or(ChatError::NoStepUpPending)?;
        let created =
            countersign_tools::confirmation::create_link(step_up.nonces.as_ref(), &p).await?;
        Ok((
            countersign_tools::confirmation::page_url(origin, &created.id),
            p.expires_at,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A blank message is what the widget API's document says is blank (`\S`, ECMA-262):
    /// a lone NEL (U+0085) is text there and is accepted; a lone BOM (U+FEFF), blank there,
    /// is refused.
    #[test]
    fn a_blank_message_is_the_documents_blank() {
        for blank in ["", " ", "\t\r\n", "\u{a0}\u{3000}", "\u{feff}", "\u{2028} "] {
            assert!(check_content(blank).is_err(), "{blank:?}");
        }
        for text in ["\u{85}", "a", " x ", "\u{200b}"] {
            assert!(check_content(text).is_ok(), "{text:?}");
        }
        assert!(check_content(&"x".repeat(MAX_CONTENT_CHARS)).is_ok());
        assert!(check_content(&"x".repeat(MAX_CONTENT_CHARS + 1)).is_err());
    }
}
