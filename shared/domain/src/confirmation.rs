//! Human confirmation: the rule that reads a reply and the check that binds a
//! confirmation to one presented proposal, one person and one open case (A-22, A-23,
//! Both are code, not AI.

use crate::conversation::{Case, CaseStatus, Principal, Role};
use crate::ids::{ActionId, CaseId, MessageId};
use crate::proposal::{Proposal, ProposalState};
use crate::time::Timestamp;

/// What a user message means for a pending proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reply {
    /// Exactly `confirm` / `confirmar`.
    Confirm,
    /// Exactly `cancel` / `cancelar`.
    Cancel,
    /// Anything else (it invalidates a pending proposal, A-25).
    Other,
}

/// the whole content, trimmed of outer white space and compared without regard to
/// ASCII case, must equal one of the four words. Nothing else (quotes, sentences, other
/// scripts' look-alike letters, full-width forms) counts. Case folding is ASCII-only on
/// purpose: Unicode folding would let look-alikes such as the Kelvin sign match.
pub fn classify(content: &str) -> Reply {
    let word = content.trim();
    if word.eq_ignore_ascii_case("confirm") || word.eq_ignore_ascii_case("confirmar") {
        Reply::Confirm
    } else if word.eq_ignore_ascii_case("cancel") || word.eq_ignore_ascii_case("cancelar") {
        Reply::Cancel
    } else {
        Reply::Other
    }
}

/// The confirming message, as stored a moment ago by the messages function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfirmingMessage<'a> {
    /// Its id (becomes the proof's `messageId`).
    pub id: &'a MessageId,
    /// Its case.
    pub case: &'a CaseId,
    /// Its author role.
    pub role: Role,
    /// Its `replyToMessageId`.
    pub reply_to: Option<&'a MessageId>,
    /// Its content (classified with [`classify`]).
    pub content: &'a str,
}

/// A confirmation that satisfied every binding rule: what the proof will carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorized {
    /// The proposal to execute.
    pub action_id: ActionId,
    /// The confirming user message (`messageId` claim).
    pub message_id: MessageId,
    /// The presentation it answered (`presentedMessageId` claim).
    pub presented_message_id: MessageId,
}

/// Why a message does not confirm. Each variant is one precise rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The content is not `confirm` / `confirmar`.
    #[error("the message is not exactly 'confirm' or 'confirmar'")]
    NotAConfirmation,
    /// Only user messages confirm: never model text or tool results.
    #[error("only a message written by the user can confirm")]
    NotFromUser,
    /// The message belongs to another case.
    #[error("the message belongs to another conversation")]
    WrongConversation,
    /// The authenticated person is not the case's owner.
    #[error("the authenticated person does not own this conversation")]
    WrongPerson,
    /// The case is closed.
    #[error("the conversation is closed")]
    CaseClosed,
    /// Nothing is waiting for confirmation.
    #[error("there is no proposal waiting for confirmation")]
    NoPendingProposal,
    /// The proposal exists but is no longer pending.
    #[error("the proposal is {0}, not waiting for confirmation")]
    NotPending(ProposalState),
    /// The proposal belongs to another tenant, person or case than the confirmer.
    #[error("the proposal belongs to another person or conversation")]
    ProposalNotOwned,
    /// No `replyToMessageId`: this client can chat but never confirm.
    #[error("a confirmation must say which message it replies to")]
    MissingReplyTo,
    /// A reply to another message than the current presentation: a late reply to an
    /// earlier proposal never authorizes its replacement.
    #[error("the confirmation replies to another message than the current proposal")]
    StaleReply,
    /// The message was not written after the presentation.
    #[error("the confirmation was not written after the proposal was presented")]
    NotAfterPresentation,
    /// The proposal's `expiresAt` has passed.
    #[error("the proposal has expired")]
    Expired,
    /// N-6: the proposal replaced another less than [`REPLACEMENT_DWELL_MS`] after it was
    /// first served to the person (or was never served): a swap under the pointer.
    #[error("the proposal replaced another moments ago")]
    TooSoonAfterReplacement,
}

/// N-6: how long after a replacing proposal is first served (server time) a confirmation
/// of it is refused (and the proposal cancelled).
pub const REPLACEMENT_DWELL_MS: i64 = 5_000;

/// The binding check of, as one pure function.
///
/// `principal` is the authenticated identity of the request carrying `message` (a renewed
/// widget JWT for the same person is the same principal, A-26); `case` and `proposal` are
/// read from the store in the same query (the conversation's active proposal, if any).
/// The store's conditional write repeats the decisive conditions (slot, state,
/// `presentedMessageId`) so that a concurrent change between this check and the write
/// cannot slip through (P-2).
pub fn check_confirmation(
    proposal: Option<&Proposal>,
    message: &ConfirmingMessage<'_>,
    principal: &Principal,
    case: &Case,
    now: Timestamp,
) -> Result<Authorized, Refusal> {
    if classify(message.content) != Reply::Confirm {
        return Err(Refusal::NotAConfirmation);
    }
    if message.role != Role::User {
        return Err(Refusal::NotFromUser);
    }
    if message.case != &case.id {
        return Err(Refusal::WrongConversation);
    }
    if !case.is_owned_by(principal) {
        return Err(Refusal::WrongPerson);
    }
    if case.status == CaseStatus::Closed {
        return Err(Refusal::CaseClosed);
    }
    let proposal = proposal.ok_or(Refusal::NoPendingProposal)?;
    if proposal.tenant != case.tenant || proposal.user != case.user || proposal.case != case.id {
        return Err(Refusal::ProposalNotOwned);
    }
    if proposal.state != ProposalState::PendingConfirmation {
        return Err(Refusal::NotPending(proposal.state));
    }
    let reply_to = message.reply_to.ok_or(Refusal::MissingReplyTo)?;
    if reply_to != &proposal.presented.message_id {
        return Err(Refusal::StaleReply);
    }
    // Message ids are time-ordered ULIDs of one prefix: string order is creation order.
    if message.id <= &proposal.presented.message_id {
        return Err(Refusal::NotAfterPresentation);
    }
    if proposal.is_expired_at(now) {
        return Err(Refusal::Expired);
    }
    // N-6: a proposal that replaced another confirms only once it has been in front of the
    // person for the dwell time, by the server's own record of its first serving.
    if proposal.presented.replaced.is_some()
        && proposal
            .presented
            .first_served_at
            .is_none_or(|t| now.unix_millis() < t.unix_millis() + REPLACEMENT_DWELL_MS)
    {
        return Err(Refusal::TooSoonAfterReplacement);
    }
    Ok(Authorized {
        action_id: proposal.action_id.clone(),
        message_id: message.id.clone(),
        presented_message_id: proposal.presented.message_id.clone(),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::test_support::*;

    /// N-6: a proposal that replaced another is refused until 5 s after its first serving
    /// (and when never served); one that replaced nothing confirms at once.
    #[test]
    fn n6_a_replacing_proposal_confirms_only_after_the_dwell() {
        let f = Fixture::new();
        let m = msg(&f, Some(&f.proposal.presented.message_id));
        let check = |p: &Proposal| check_confirmation(Some(p), &m, &f.principal, &f.case, f.now);
        let mut p = f.proposal.clone();
        assert!(check(&p).is_ok(), "replaced nothing");
        p.presented.replaced = Some(ActionId::parse("act_earlier").unwrap());
        assert_eq!(
            check(&p),
            Err(Refusal::TooSoonAfterReplacement),
            "never served"
        );
        p.presented.first_served_at =
            Some(Timestamp::from_unix_millis(f.now.unix_millis() - 4_999).unwrap());
        assert_eq!(check(&p), Err(Refusal::TooSoonAfterReplacement));
        p.presented.first_served_at = Some(f.now.plus_seconds(-5));
        assert!(check(&p).is_ok());
    }

    /// the four words, trimmed and in any ASCII case.
    #[test]
    fn a24_the_four_words_in_any_case() {
        for s in ["confirm", "CONFIRM", "  Confirmar\n", "\tconFIRM  "] {
            assert_eq!(classify(s), Reply::Confirm, "{s:?}");
        }
        for s in ["cancel", "Cancelar", " CANCEL "] {
            assert_eq!(classify(s), Reply::Cancel, "{s:?}");
        }
    }

    /// A-24 / T-9: quotes, sentences, look-alikes and other words never confirm.
    #[test]
    fn a24_quotes_sentences_and_lookalikes_are_other() {
        for s in [
            "\"confirm\"",
            "'confirm'",
            "«confirmar»",
            "confirm.",
            "confirm!",
            "yes, confirm",
            "I confirm",
            "confirmed",
            "confirma",
            "ok",
            "yes",
            "sim",
            "con firm",
            "ｃｏｎｆｉｒｍ",
            "confırm",
            "cancel confirm",
            "confirm\u{200B}",
            "",
            "{\"confirmed\": true}",
        ] {
            assert_eq!(classify(s), Reply::Other, "{s:?}");
        }
    }

    /// any other text while a proposal is pending invalidates it (it becomes
    /// `cancelled`) before the text goes to the model; a refused confirm does the same.
    #[test]
    fn a25_other_text_invalidates_the_pending_proposal() {
        use crate::proposal::{ProposalEvent, transition};
        for text in ["actually, use the Civic", "confirm please", "yes"] {
            assert_eq!(classify(text), Reply::Other);
        }
        assert_eq!(
            transition(
                ProposalState::PendingConfirmation,
                ProposalEvent::Invalidate
            ),
            Ok(ProposalState::Cancelled)
        );
        let f = Fixture::new();
        let mut p = f.proposal.clone();
        p.apply(ProposalEvent::Invalidate).unwrap();
        let m = msg(&f, Some(&f.proposal.presented.message_id));
        assert_eq!(
            check_confirmation(Some(&p), &m, &f.principal, &f.case, f.now),
            Err(Refusal::NotPending(ProposalState::Cancelled))
        );
    }

    fn msg<'a>(f: &'a Fixture, reply_to: Option<&'a MessageId>) -> ConfirmingMessage<'a> {
        ConfirmingMessage {
            id: &f.confirm_id,
            case: &f.case.id,
            role: Role::User,
            reply_to,
            content: " Confirm ",
        }
    }

    /// a new user message replying to the current presentation confirms.
    #[test]
    fn a23_reply_to_current_presentation_authorizes() {
        let f = Fixture::new();
        let m = msg(&f, Some(&f.proposal.presented.message_id));
        let ok = check_confirmation(Some(&f.proposal), &m, &f.principal, &f.case, f.now).unwrap();
        assert_eq!(ok.action_id, f.proposal.action_id);
        assert_eq!(ok.message_id, f.confirm_id);
        assert_eq!(ok.presented_message_id, f.proposal.presented.message_id);
    }

    /// without `replyToMessageId` a client can chat but never confirm.
    #[test]
    fn a22_confirm_without_reply_to_is_refused() {
        let f = Fixture::new();
        let m = msg(&f, None);
        assert_eq!(
            check_confirmation(Some(&f.proposal), &m, &f.principal, &f.case, f.now),
            Err(Refusal::MissingReplyTo)
        );
    }

    /// A-23 / T-8: a late reply to an earlier presentation never authorizes its replacement.
    #[test]
    fn a23_confirm_fails_when_reply_targets_an_earlier_presentation() {
        let f = Fixture::new();
        let earlier = f.other_message_id.clone();
        let m = msg(&f, Some(&earlier));
        assert_eq!(
            check_confirmation(Some(&f.proposal), &m, &f.principal, &f.case, f.now),
            Err(Refusal::StaleReply)
        );
    }

    /// only a message written after the presentation confirms.
    #[test]
    fn a23_message_not_after_presentation_is_refused() {
        let f = Fixture::new();
        let mut m = msg(&f, Some(&f.proposal.presented.message_id));
        let earlier = f.other_message_id.clone();
        m.id = &earlier;
        assert_eq!(
            check_confirmation(Some(&f.proposal), &m, &f.principal, &f.case, f.now),
            Err(Refusal::NotAfterPresentation)
        );
    }

    /// A-23 / T-9: model text (assistant role) never authorizes.
    #[test]
    fn a23_assistant_text_never_confirms() {
        let f = Fixture::new();
        let mut m = msg(&f, Some(&f.proposal.presented.message_id));
        m.role = Role::Assistant;
        assert_eq!(
            check_confirmation(Some(&f.proposal), &m, &f.principal, &f.case, f.now),
            Err(Refusal::NotFromUser)
        );
    }

    /// content other than the confirm words is not a confirmation.
    #[test]
    fn a24_sentence_is_not_a_confirmation() {
        let f = Fixture::new();
        let mut m = msg(&f, Some(&f.proposal.presented.message_id));
        m.content = "please confirm";
        assert_eq!(
            check_confirmation(Some(&f.proposal), &m, &f.principal, &f.case, f.now),
            Err(Refusal::NotAConfirmation)
        );
    }

    /// another person, even of the same tenant, cannot confirm; a closed case never
    /// executes; a proposal of another conversation cannot be confirmed here.
    #[test]
    fn a26_identity_and_case_state_bind_the_confirmation() {
        let f = Fixture::new();
        let m = msg(&f, Some(&f.proposal.presented.message_id));
        let other = Principal {
            tenant: f.principal.tenant.clone(),
            user: crate::ids::UserId::parse("someone-else").unwrap(),
        };
        assert_eq!(
            check_confirmation(Some(&f.proposal), &m, &other, &f.case, f.now),
            Err(Refusal::WrongPerson)
        );
        let other_tenant = Principal {
            tenant: tenant_id(9),
            user: f.principal.user.clone(),
        };
        assert_eq!(
            check_confirmation(Some(&f.proposal), &m, &other_tenant, &f.case, f.now),
            Err(Refusal::WrongPerson)
        );

        let mut closed = f.case.clone();
        closed.status = CaseStatus::Closed;
        assert_eq!(
            check_confirmation(Some(&f.proposal), &m, &f.principal, &closed, f.now),
            Err(Refusal::CaseClosed)
        );

        let mut foreign = f.proposal.clone();
        foreign.case = case_id(7);
        assert_eq!(
            check_confirmation(Some(&foreign), &m, &f.principal, &f.case, f.now),
            Err(Refusal::ProposalNotOwned)
        );

        let mut wrong_case_msg = m.clone();
        let elsewhere = case_id(8);
        wrong_case_msg.case = &elsewhere;
        assert_eq!(
            check_confirmation(
                Some(&f.proposal),
                &wrong_case_msg,
                &f.principal,
                &f.case,
                f.now
            ),
            Err(Refusal::WrongConversation)
        );
    }

    /// superseded, cancelled, expired or already executing proposals are not
    /// confirmable; an expired `expiresAt` refuses too.
    #[test]
    fn a16_only_pending_proposals_can_be_confirmed() {
        let f = Fixture::new();
        let m = msg(&f, Some(&f.proposal.presented.message_id));
        assert_eq!(
            check_confirmation(None, &m, &f.principal, &f.case, f.now),
            Err(Refusal::NoPendingProposal)
        );
        for state in ProposalState::ALL {
            if state == ProposalState::PendingConfirmation {
                continue;
            }
            let mut p = f.proposal.clone();
            p.state = state;
            assert_eq!(
                check_confirmation(Some(&p), &m, &f.principal, &f.case, f.now),
                Err(Refusal::NotPending(state))
            );
        }
        assert_eq!(
            check_confirmation(
                Some(&f.proposal),
                &m,
                &f.principal,
                &f.case,
                f.proposal.expires_at
            ),
            Err(Refusal::Expired)
        );
    }
}
