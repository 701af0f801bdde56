//! `ProposalLock`, `UnsettledIndex`, `SettingsFence`: the one active slot, the unsettled index, the C-8 fence.

use super::*;

#[async_trait]
impl ProposalLock for MemoryStore {
    async fn create_proposal(
        &self,
        proposal: &Proposal,
        presentation: &[NewMessage],
    ) -> Result<CreateProposalOutcome, StoreError> {
        yield_now().await;
        let prepared_record = life::prepared(proposal, self.ids.audit_id());
        let superseded_stamp = self.stamp();
        self.run(
            "create_proposal",
            || CreateProposalOutcome::Conflict,
            |s| {
                let guard = (proposal.tenant.clone(), proposal.action_id.clone());
                let used = s.used_action_ids.contains(&guard);
                // C-8: the settings it was prepared with must still be in force.
                let fenced = proposal.secret_version.as_ref().is_some_and(|sv| {
                    !s.configs.get(&proposal.tenant).is_some_and(|c| {
                        c.actions_version == proposal.config_version && &c.secret_version == sv
                    })
                });
                let Some(conv) = s.conversation(&proposal.tenant, &proposal.case) else {
                    return Ok(CreateProposalOutcome::CaseNotOpen);
                };
                if conv.case.status != CaseStatus::Open {
                    return Ok(CreateProposalOutcome::CaseNotOpen);
                }
                if let Some(active) = conv.active()
                    && active.state.blocks_preparation()
                {
                    return Ok(CreateProposalOutcome::Blocked {
                        action_id: active.action_id.clone(),
                        state: active.state,
                    });
                }
                if used {
                    return Ok(CreateProposalOutcome::ActionIdReused);
                }
                if fenced {
                    return Ok(CreateProposalOutcome::SettingsChanged);
                }
                // N-6: what this one replaced, from the slot as it stood.
                let replaced = conv.replaced();
                // a pending predecessor is superseded in the same write.
                let superseded = conv
                    .slot
                    .clone()
                    .and_then(|a| conv.proposals.get_mut(&a))
                    .filter(|p| p.state == ProposalState::PendingConfirmation)
                    .map(|p| {
                        p.state = ProposalState::Superseded;
                        p.action_id.clone()
                    });
                conv.slot = Some(proposal.action_id.clone());
                let mut stored = proposal.clone();
                stored.presented.replaced = replaced;
                conv.proposals.insert(proposal.action_id.clone(), stored);
                for m in presentation {
                    conv.push(m);
                }
                s.used_action_ids.insert(guard);
                // L-1, in the same write.
                s.audit_case(&proposal.tenant, &proposal.case, &prepared_record);
                if let Some(old) = &superseded {
                    let by = &proposal.action_id;
                    let record = life::superseded(old, &proposal.case, by, superseded_stamp);
                    s.audit_case(&proposal.tenant, &proposal.case, &record);
                }
                Ok(CreateProposalOutcome::Applied { superseded })
            },
        )
    }

    async fn confirm(&self, w: &ConfirmWrite) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        let record = life::confirmed(w).ok_or_else(|| missing("message ULID"))?;
        let apply = |s: &mut State| {
            if let Some(conflict) = confirm_conflict(s, w) {
                return Ok(conflict);
            }
            let conv = s
                .conversation(&w.tenant, &w.case)
                .ok_or_else(|| missing("case"))?;
            let p = conv
                .proposals
                .get_mut(&w.action_id)
                .ok_or_else(|| missing("proposal"))?;
            p.state = ProposalState::Executing;
            p.confirmation_message_id = Some(w.message.id.clone());
            p.confirm_attempt = Some(w.attempt.clone());
            conv.push(&w.message);
            s.audit_case(&w.tenant, &w.case, &record);
            Ok(TransitionOutcome::Applied)
        };
        match self.faults.take("confirm") {
            Some(Fault::Unavailable | Fault::Timeout | Fault::Hang) => Err(unavailable("confirm")),
            // As when the adapter's retries run out: it reads the proposal, still pending
            // (confirm-path review N6).
            Some(Fault::Conflict) => Ok(TransitionOutcome::Conflict {
                current: Some(ProposalState::PendingConfirmation),
            }),
            // Committed, but the adapter could not tell (its resends and read-back were
            // lost too): the caller must find out by reading (issue 27).
            Some(Fault::LostResponse) => {
                apply(&mut self.lock())?;
                Err(unavailable("confirm"))
            }
            None => apply(&mut self.lock()),
        }
    }

    async fn mark_served(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        action_id: &ActionId,
        at: Timestamp,
    ) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "mark_served",
            || (),
            |s| {
                if let Some(p) = s
                    .conversations
                    .get_mut(&(tenant.clone(), case.clone()))
                    .and_then(|c| c.proposals.get_mut(action_id))
                {
                    p.presented.first_served_at.get_or_insert(at);
                }
                Ok(())
            },
        )
    }

    async fn transition(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        action_id: &ActionId,
        from: ProposalState,
        to: ProposalState,
        notice: Option<&NewMessage>,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        let record = life::stepped(action_id, case, (from, to), self.stamp());
        self.step(tenant, case, action_id, (from, to), notice, &record)
    }
}

#[async_trait]
impl UnsettledIndex for MemoryStore {
    async fn list_unsettled(&self, tenant: &TenantId) -> Result<Vec<UnsettledAction>, StoreError> {
        yield_now().await;
        self.read("list_unsettled", |s| {
            let mut all: Vec<UnsettledAction> = s
                .conversations
                .iter()
                .filter(|((t, _), _)| t == tenant)
                .flat_map(|((_, case), conv)| {
                    conv.proposals
                        .values()
                        .filter(|p| p.state.blocks_preparation())
                        .map(move |p| UnsettledAction {
                            case: case.clone(),
                            action_id: p.action_id.clone(),
                            since: p
                                .confirmation_message_id
                                .as_ref()
                                .and_then(|m| conv.messages.get(m))
                                .map_or(p.prepared_at, |m| m.created_at),
                            last_status: s
                                .status_notes
                                .get(&(tenant.clone(), p.action_id.clone()))
                                .cloned(),
                        })
                })
                .collect();
            all.sort_by_key(|u| u.since);
            all
        })
    }

    async fn note_status(
        &self,
        tenant: &TenantId,
        action_id: &ActionId,
        answer: &str,
        at: Timestamp,
    ) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "note_status",
            || (),
            |s| {
                let unsettled = s
                    .conversations
                    .iter()
                    .filter(|((t, _), _)| t == tenant)
                    .any(|(_, c)| {
                        c.proposals
                            .get(action_id)
                            .is_some_and(|p| p.state.blocks_preparation())
                    });
                if unsettled {
                    s.status_notes
                        .insert((tenant.clone(), action_id.clone()), (answer.to_owned(), at));
                }
                Ok(())
            },
        )
    }

    async fn settle_by_admin(
        &self,
        settle: &SettleByAdmin<'_>,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        // The administrator's record is the step's record (L-1).
        self.step(
            settle.tenant,
            settle.case,
            settle.action_id,
            (settle.from, settle.to),
            Some(settle.notice),
            settle.audit,
        )
    }
}

#[async_trait]
impl SettingsFence for MemoryStore {
    async fn invalidate_pending(
        &self,
        tenant: &TenantId,
        keep: Option<(u64, &str)>,
        notice: &(dyn for<'c> Fn(&'c CaseId, Language) -> NewMessage + Send + Sync),
    ) -> Result<usize, StoreError> {
        yield_now().await;
        self.run(
            "invalidate_pending",
            || 0,
            |s| {
                let (mut cancelled, mut records) = (0, Vec::new());
                for ((t, case), conv) in &mut s.conversations {
                    if t != tenant {
                        continue;
                    }
                    let lang = conv.language;
                    let mut notices = Vec::new();
                    for p in conv.proposals.values_mut() {
                        // Only registered proposals (prepared with an integration).
                        let Some(sv) = p.secret_version.as_deref() else {
                            continue;
                        };
                        let current = keep == Some((p.config_version, sv));
                        if p.state == ProposalState::PendingConfirmation && !current {
                            p.state = ProposalState::Cancelled;
                            notices.push(notice(case, lang));
                            let step = (ProposalState::PendingConfirmation, p.state);
                            let record = life::stepped(&p.action_id, case, step, self.stamp());
                            records.push((case.clone(), record));
                            cancelled += 1;
                        }
                    }
                    for m in &notices {
                        conv.push(m);
                    }
                }
                for (case, record) in &records {
                    s.audit_case(tenant, case, record);
                }
                Ok(cancelled)
            },
        )
    }
}
