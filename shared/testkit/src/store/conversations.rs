//! `Conversations`: cases, messages, proposals and their transitions.

use super::*;

#[async_trait]
impl Conversations for MemoryStore {
    async fn create_case(&self, case: &Case, language: Language) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "create_case",
            || (),
            |s| {
                let key = (case.tenant.clone(), case.id.clone());
                if s.conversations.contains_key(&key) {
                    return Err(StoreError::Corrupt("case exists".into()));
                }
                s.conversations.insert(
                    key,
                    Conversation {
                        case: case.clone(),
                        language,
                        slot: None,
                        proposals: HashMap::new(),
                        messages: BTreeMap::new(),
                        writes: 0,
                    },
                );
                Ok(())
            },
        )
    }

    async fn load(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<Option<ConversationView>, StoreError> {
        yield_now().await;
        self.read("load", |s| {
            s.conversations
                .get(&(tenant.clone(), case.clone()))
                .map(|c| ConversationView {
                    case: c.case.clone(),
                    active: c.active().cloned(),
                    language: c.language,
                })
        })
    }

    async fn append_message(
        &self,
        tenant: &TenantId,
        message: &NewMessage,
    ) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "append_message",
            || (),
            |s| {
                let conv = s
                    .conversation(tenant, &message.case)
                    .ok_or(StoreError::Gone)?;
                conv.push(message);
                conv.writes += 1;
                Ok(())
            },
        )
    }

    async fn list_messages(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        after: Option<&MessageId>,
        limit: usize,
    ) -> Result<Vec<Message>, StoreError> {
        yield_now().await;
        self.read("list_messages", |s| {
            s.conversations
                .get(&(tenant.clone(), case.clone()))
                .map(|c| {
                    c.messages
                        .values()
                        .filter(|m| after.is_none_or(|a| &m.id > a))
                        .take(limit)
                        .cloned()
                        .collect()
                })
                .unwrap_or_default()
        })
    }

    async fn recent_messages(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        limit: usize,
    ) -> Result<Vec<Message>, StoreError> {
        yield_now().await;
        self.read("recent_messages", |s| {
            let all: Vec<Message> = s
                .conversations
                .get(&(tenant.clone(), case.clone()))
                .map(|c| c.messages.values().cloned().collect())
                .unwrap_or_default();
            all[all.len().saturating_sub(limit)..].to_vec()
        })
    }

    async fn close_case(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        let stamp = self.stamp();
        self.run(
            "close_case",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                let Some(conv) = s.conversation(tenant, case) else {
                    return Ok(TransitionOutcome::Applied);
                };
                if let Some(state) = conv
                    .active()
                    .map(|p| p.state)
                    .filter(|st| st.needs_reconciliation())
                {
                    return Ok(TransitionOutcome::Conflict {
                        current: Some(state),
                    });
                }
                // a pending proposal is cancelled with the case.
                let cancelled = conv
                    .slot
                    .clone()
                    .and_then(|a| conv.proposals.get_mut(&a))
                    .filter(|p| p.state == ProposalState::PendingConfirmation)
                    .map(|p| {
                        p.state = ProposalState::Cancelled;
                        p.action_id.clone()
                    });
                conv.case.status = CaseStatus::Closed;
                if let Some(action) = cancelled {
                    let record = life::cancelled_with_case(&action, case, stamp);
                    s.audit_case(tenant, case, &record);
                }
                Ok(TransitionOutcome::Applied)
            },
        )
    }

    async fn summary(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<Option<CaseSummary>, StoreError> {
        yield_now().await;
        self.read("summary", |s| {
            s.conversations
                .get(&(tenant.clone(), case.clone()))
                .map(|c| CaseSummary {
                    case: c.case.clone(),
                    language: c.language,
                    last_message: c.messages.keys().next_back().cloned(),
                })
        })
    }

    async fn proposal_outcomes(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<Vec<ProposalOutcome>, StoreError> {
        yield_now().await;
        self.read("proposal_outcomes", |s| {
            let mut outcomes: Vec<ProposalOutcome> = s
                .conversations
                .get(&(tenant.clone(), case.clone()))
                .map(|c| {
                    c.proposals
                        .values()
                        .map(|p| ProposalOutcome {
                            action_id: p.action_id.clone(),
                            operation: p.operation.clone(),
                            presented: p.presented.message_id.clone(),
                            state: p.state,
                            expires_at: p.expires_at,
                            replaced: p.presented.replaced.is_some(),
                            needs_passkey: p.needs_passkey,
                            prepared_outside: p.prepared_outside,
                        })
                        .collect()
                })
                .unwrap_or_default();
            outcomes.sort_by(|a, b| a.presented.cmp(&b.presented));
            outcomes
        })
    }

    async fn record_in_case(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        entry: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        self.run(
            "record_in_case",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                let open = s
                    .conversation(tenant, case)
                    .is_some_and(|c| c.case.status == CaseStatus::Open);
                if !open {
                    return Ok(TransitionOutcome::Conflict { current: None });
                }
                s.audit_case(tenant, case, entry);
                Ok(TransitionOutcome::Applied)
            },
        )
    }
}
