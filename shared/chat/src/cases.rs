//! A case's life and its reads (S-2, S-3, S-4, N-6, issue 50): opening one in the
//! person's or the tenant's language, the summary the widget polls, the messages, and
//! closing it. Another person's case is absent.

use crate::service::{Chat, ChatError};
use countersign_domain::appearance::Welcome;
use countersign_domain::conversation::{Case, CaseStatus, Message, Principal};
use countersign_domain::ids::{CaseId, MessageId};
use countersign_domain::ports::{
    CaseSummary, ConversationView, ProposalOutcome, TransitionOutcome,
};
use countersign_domain::proposal::ProposalState;
use countersign_domain::texts::Language;

impl Chat {
    /// A new open case for this person, in the tenant's language.
    pub async fn create_case(&self, who: &Principal) -> Result<Case, ChatError> {
        self.open_case(who, None).await.map(|opened| opened.case)
    }

    /// `POST /api/cases` with the person's language (S-4): `None` takes the tenant's.
    /// Returns the case, the language of its fixed texts and what the widget shows before
    /// the person's first message, from one read of the tenant.
    pub async fn open_case(
        &self,
        who: &Principal,
        language: Option<Language>,
    ) -> Result<OpenedCase, ChatError> {
        self.spend_person(who, "cases").await?;
        let tenant = self.parts.tenants.get_tenant(&who.tenant).await?;
        // S-4: the host page may choose the person's language; else the tenant's default.
        let language = language
            .or(tenant.as_ref().map(|t| t.language))
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
        let (accent, welcome) = appearance_of(tenant.as_ref(), language);
        Ok(OpenedCase {
            case,
            language,
            accent,
            welcome,
        })
    }

    /// Issue 50: the tenant's accent and its welcome in `language`: what the widget shows
    /// before the person's first message. One read of the tenant; never on the poll.
    pub async fn appearance(
        &self,
        who: &Principal,
        language: Language,
    ) -> Result<(Option<String>, Option<Welcome>), ChatError> {
        let tenant = self.parts.tenants.get_tenant(&who.tenant).await?;
        Ok(appearance_of(tenant.as_ref(), language))
    }

    /// `GET /api/cases/:id` (S-2, S-3): the case's status, language and newest message,
    /// what an open widget polls. Two small reads, whatever the conversation's length.
    pub async fn summary(&self, who: &Principal, case: &CaseId) -> Result<CaseSummary, ChatError> {
        self.parts
            .conversations
            .summary(&who.tenant, case)
            .await?
            .filter(|s| s.case.is_owned_by(who))
            .ok_or(ChatError::NotFound)
    }

    /// Where each proposal of the case stands (S-3), for the proposal cards. Only for a
    /// request already found to be `who`'s own case's (the API calls it after
    /// [`Self::messages`] or [`Self::post`] answered).
    pub(crate) async fn proposal_outcomes(
        &self,
        who: &Principal,
        case: &CaseId,
    ) -> Result<Vec<ProposalOutcome>, ChatError> {
        Ok(self
            .parts
            .conversations
            .proposal_outcomes(&who.tenant, case)
            .await?)
    }

    /// The case, if `who` owns it (another person's case is absent, A-26).
    pub(crate) async fn owned(
        &self,
        who: &Principal,
        case: &CaseId,
    ) -> Result<ConversationView, ChatError> {
        let view = self
            .parts
            .conversations
            .load(&who.tenant, case)
            .await?
            .filter(|v| v.case.is_owned_by(who))
            .ok_or(ChatError::NotFound)?;
        // A-23 (issue 27): what this request writes sorts after the presentation it read,
        // whatever the clock of the instance that wrote it.
        if let Some(p) = &view.active {
            self.parts.ids.observe_message(&p.presented.message_id);
        }
        Ok(view)
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
        self.served(&view, |id| messages.iter().any(|m| &m.id == id))
            .await;
        Ok((messages, view.language))
    }

    /// N-6: records the first serving of the conversation's pending proposal, if `shown`
    /// says its presentation is in what is being served and it replaced another (only a
    /// replacing proposal waits for the dwell; no write for any other). A write that fails
    /// is only logged: the confirmation is then refused, never let through.
    pub(crate) async fn served(&self, view: &ConversationView, shown: impl Fn(&MessageId) -> bool) {
        let Some(p) = &view.active else { return };
        if p.state != ProposalState::PendingConfirmation
            || p.presented.replaced.is_none()
            || p.presented.first_served_at.is_some()
            || !shown(&p.presented.message_id)
        {
            return;
        }
        let now = self.parts.clock.now();
        if let Err(e) = self
            .parts
            .proposals
            .mark_served(&p.tenant, &p.case, &p.action_id, now)
            .await
        {
            tracing::warn!(error = %e, "N-6: a proposal's first serving was not recorded");
        }
    }

    /// N-6: the confirmation page shows the presentation `presented` of `case` to `who`.
    pub async fn presentation_served(
        &self,
        who: &Principal,
        case: &CaseId,
        presented: &MessageId,
    ) -> Result<(), ChatError> {
        let view = self.owned(who, case).await?;
        self.served(&view, |id| id == presented).await;
        Ok(())
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
}

/// A case just opened (`POST /api/cases`, issue 50): the case, the language of its fixed
/// texts, and the tenant's accent and welcome in that language.
#[derive(Debug, Clone)]
pub struct OpenedCase {
    /// The new case.
    pub case: Case,
    /// The language of its fixed texts (S-4).
    pub language: Language,
    /// The tenant's accent, if it set one.
    pub accent: Option<String>,
    /// The tenant's welcome in `language`, if it set one.
    pub welcome: Option<Welcome>,
}

/// The accent and the welcome in `language` of `tenant` (none for an unknown tenant).
fn appearance_of(
    tenant: Option<&countersign_domain::ports::Tenant>,
    language: Language,
) -> (Option<String>, Option<Welcome>) {
    tenant.map_or((None, None), |t| {
        (
            t.appearance.accent.clone(),
            t.appearance.welcome(language).cloned(),
        )
    })
}
