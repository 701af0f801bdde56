//! The confirm path (A-22 …, P-2): the binding check, then one
//! transaction that stores the confirming message and moves the proposal to `executing`;
//! only then the proof and the provider (in `execute`).

use crate::service::{Chat, ChatError};
use countersign_domain::confirmation::{ConfirmingMessage, Refusal, check_confirmation};
use countersign_domain::conversation::Principal;
use countersign_domain::ports::{ConfirmWrite, ConversationView, NewMessage, TransitionOutcome};
use countersign_domain::proposal::{Proposal, ProposalState};
use countersign_domain::texts::{self, Language};

impl Chat {
    /// A "confirm" while `p` is pending: check, write, then execute.
    pub(crate) async fn confirm(
        &self,
        who: &Principal,
        view: &ConversationView,
        p: Proposal,
        message: NewMessage,
        evidence: Option<countersign_domain::stepup::Evidence>,
        out: &mut Vec<NewMessage>,
    ) -> Result<(), ChatError> {
        let lang = view.language;
        let started = std::time::Instant::now();
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
            Err(refusal) => return self.refuse(who, lang, &p, &message, &refusal, out).await,
        };
        // the confirmation and the `executing` state are durable before anything
        // is signed or sent.
        let write = confirm_write(who, &p, &message);
        let outcome = match self.parts.proposals.confirm(&write).await {
            Ok(outcome) => outcome,
            // the store could not tell whether the write committed (issue 27): one more
            // read before answering "unavailable", so that a confirmation that did commit
            // is carried on instead of left `executing` with nothing running.
            Err(e) => self.settled_after_unknown(who, &p, &write, e).await?,
        };
        match outcome {
            TransitionOutcome::Applied => {
                out.push(message);
                let mut executing = p;
                executing.state = ProposalState::Executing;
                executing.confirmation_message_id = Some(authorized.message_id.clone());
                let outcome = self
                    .execute(who, lang, executing, &authorized, evidence.as_ref(), out)
                    .await?;
                crate::metrics::confirm_latency(started, outcome);
                Ok(())
            }
            TransitionOutcome::Conflict {
                current: None | Some(ProposalState::PendingConfirmation),
            } => {
                // The store kept losing races (DynamoDB's adapter then reads the proposal
                // still pending; confirm-path review N6): keep it, ask to try again.
                self.store(who, &message, out).await?;
                let text = texts::confirm_retry_notice(lang);
                self.tell(who, &message.case, text, out).await
            }
            TransitionOutcome::Conflict { current } => {
                // Another request confirmed, cancelled or replaced it first: this message
                // is an ordinary one and authorizes nothing.
                self.store(who, &message, out).await?;
                let refusal = Refusal::NotPending(current.unwrap_or(ProposalState::Cancelled));
                let text = texts::refusal_notice(lang, &refusal);
                self.tell(who, &message.case, text, out).await
            }
        }
    }

    /// The outcome of a confirm write whose answer was lost (`error`), from one fresh read
    /// of the conversation: this request's attempt recorded with the confirmation →
    /// `Applied` (N-1: never decided by the message id, which another instance's clock
    /// could have produced too); the proposal moved on without it → `Conflict`; still
    /// pending (nothing committed) or unreadable → the error.
    async fn settled_after_unknown(
        &self,
        who: &Principal,
        p: &Proposal,
        write: &ConfirmWrite,
        error: countersign_domain::ports::StoreError,
    ) -> Result<TransitionOutcome, ChatError> {
        let Ok(view) = self.parts.conversations.load(&who.tenant, &p.case).await else {
            return Err(error.into());
        };
        let now = view
            .and_then(|v| v.active)
            .filter(|a| a.action_id == p.action_id);
        Ok(match now {
            Some(a) if a.confirm_attempt.as_deref() == Some(write.attempt.as_str()) => {
                tracing::info!("the confirm write's answer was lost but it committed");
                TransitionOutcome::Applied
            }
            Some(a) if a.state == ProposalState::PendingConfirmation => return Err(error.into()),
            Some(a) => TransitionOutcome::Conflict {
                current: Some(a.state),
            },
            // No longer the active proposal: ended by another request (cancelled, expired
            // or replaced), never by this one.
            None => TransitionOutcome::Conflict {
                current: Some(ProposalState::Cancelled),
            },
        })
    }

    /// a confirmation that fails A-23 cancels the pending proposal (or marks it
    /// expired) and says why.
    async fn refuse(
        &self,
        who: &Principal,
        lang: Language,
        p: &Proposal,
        message: &NewMessage,
        refusal: &Refusal,
        out: &mut Vec<NewMessage>,
    ) -> Result<(), ChatError> {
        self.store(who, message, out).await?;
        let to = if *refusal == Refusal::Expired {
            ProposalState::Expired
        } else {
            ProposalState::Cancelled
        };
        let text = texts::refusal_notice(lang, refusal);
        self.end_pending(who, p, to, text, out).await.map(|_| ())
    }
}

/// The confirm transaction's conditions and writes (ARCHITECTURE "confirm path", step 2).
fn confirm_write(who: &Principal, p: &Proposal, message: &NewMessage) -> ConfirmWrite {
    ConfirmWrite {
        tenant: who.tenant.clone(),
        case: p.case.clone(),
        action_id: p.action_id.clone(),
        presented_message_id: p.presented.message_id.clone(),
        message: message.clone(),
        attempt: attempt(),
    }
}

/// N-1: this confirm request's own value (128 random bits): what decides, after an unknown
/// outcome, whether the write that committed was this request's.
fn attempt() -> String {
    use rand::RngCore as _;
    let mut bytes = [0u8; 16];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
