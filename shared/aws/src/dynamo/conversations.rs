//! The conversation store's port on DynamoDB: one partition per conversation, read by one
//! Query; the writes that move a proposal are in `proposals`, `confirm`, `transitions`
//! and `sweep`.

use super::*;

impl DynamoStore {
    /// The case item and the conversation's non-terminal proposal items (one Query).
    pub(super) async fn read_conversation(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<(Option<Item>, Vec<Item>), StoreError> {
        let query = self
            .consistent_query()
            .key_condition_expression("pk = :pk AND begins_with(sk, :a)")
            // Terminal proposals stay in the partition as history; only the case and the
            // (at most one, P-2) non-terminal proposal are returned.
            // The conversation's audit chain head comes along (L-2): the confirm path
            // appends to the chain without a read of its own.
            .filter_expression("sk = :case OR sk = :head OR #state IN (:p, :e, :u)")
            .expression_attribute_names("#state", "state")
            .set_expression_attribute_values(Some(values([
                (":pk", s(conv_pk(tenant, case))),
                (":a", s(ACTIVE_PREFIX)),
                (":case", s(CASE_SK)),
                (":head", s(chain::CONV_HEAD_SK)),
                (":p", s(ProposalState::PendingConfirmation.as_str())),
                (":e", s(ProposalState::Executing.as_str())),
                (":u", s(ProposalState::Unknown.as_str())),
            ])));
        let mut case_item = None;
        let mut proposals = Vec::new();
        let mut head = countersign_domain::audit_chain::Head::default();
        for item in self.query_all(query).await? {
            match opt_s(&item, SK) {
                Some(CASE_SK) => case_item = Some(item),
                Some(chain::CONV_HEAD_SK) => head = chain::head_from(&item),
                _ => proposals.push(item),
            }
        }
        if case_item.is_some() {
            self.remember_head(&chain::ChainRef::case(tenant, case), head);
        }
        Ok((case_item, proposals))
    }

    /// The case item alone (with its slot), by a consistent GetItem: what preparation and
    /// closing decide on.
    pub(super) async fn case_item(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<Option<Item>, StoreError> {
        let item = self.get(conv_pk(tenant, case), CASE_SK).await?;
        Ok(item)
    }

    /// N-4: `writes` into `case`'s conversation in one transaction with a bump of the case
    /// item's `writes` (and its `last_activity`, for a message), conditioned on the case
    /// item existing: nothing lands in a purged conversation ([`StoreError::Gone`]), and
    /// the purge, whose delete is conditioned on the `writes` it listed, never deletes a
    /// conversation written to since. A transaction also makes the SDK's own retries of a
    /// lost answer idempotent (its client request token), where a conditional put's retry
    /// failed on its own first write (confirm-path review N14).
    pub(super) async fn write_into(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        writes: Vec<TransactWriteItem>,
        at: Option<Timestamp>,
    ) -> Result<(), StoreError> {
        let (expression, mut vals) = match at {
            Some(t) => (
                "SET last_activity = :t ADD writes :one",
                values([(":t", s(t.to_rfc3339()))]),
            ),
            None => ("ADD writes :one", HashMap::new()),
        };
        vals.insert(":one".into(), n(1));
        let bump = build(
            aws_sdk_dynamodb::types::Update::builder()
                .table_name(&self.table)
                .set_key(Some(key(conv_pk(tenant, case), CASE_SK)))
                .update_expression(expression)
                .condition_expression("attribute_exists(pk)")
                .set_expression_attribute_values(Some(vals))
                .build(),
        )?;
        let bump = TransactWriteItem::builder().update(bump).build();
        for attempt in 0..MAX_ATTEMPTS {
            let mut tx = writes.clone();
            tx.push(bump.clone());
            match self.transact(tx).await? {
                Tx::Committed => return Ok(()),
                Tx::Cancelled(r) if failed(r.get(writes.len())) => return Err(StoreError::Gone),
                Tx::Cancelled(r) if r.iter().take(writes.len()).any(|r| failed(Some(r))) => {
                    return Err(StoreError::Unavailable("the item exists already".into()));
                }
                // Another transaction held the case item (a confirm, a preparation).
                Tx::Cancelled(_) => backoff(attempt).await,
            }
        }
        Err(StoreError::Unavailable(
            "writing into the conversation kept losing races".into(),
        ))
    }

    /// The slot as stored on the case item: (action id, state).
    pub(super) fn slot(case_item: &Item) -> Option<(String, String)> {
        Some((
            opt_s(case_item, "slot_action")?.to_owned(),
            opt_s(case_item, "slot_state")?.to_owned(),
        ))
    }
}

#[async_trait]
impl Conversations for DynamoStore {
    async fn create_case(&self, case: &Case, language: Language) -> Result<(), StoreError> {
        // its retention index entry first, so no conversation exists that the purge
        // cannot find (an entry whose case was never written is removed by the purge).
        self.put_plain(super::retention::retain_item(case)).await?;
        // N-3: and its entry in its person's index, so an erasure finds it directly.
        let mut entry = super::erasure::person_case_key(&case.tenant, &case.user, &case.id);
        entry.insert("case_id".into(), s(case.id.as_str()));
        self.put_plain(entry).await?;
        let item = case_item(case, language);
        self.put_fresh(item).await
    }

    async fn load(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<Option<ConversationView>, StoreError> {
        let (case_item, proposals) = self.read_conversation(tenant, case).await?;
        let Some(case_item) = case_item else {
            return Ok(None);
        };
        let (case, language) = case_from(&case_item)?;
        let slot_action = opt_s(&case_item, "slot_action");
        let active = proposals
            .iter()
            .find(|p| opt_s(p, "action_id") == slot_action)
            .map(proposal_from)
            .transpose()?;
        Ok(Some(ConversationView {
            case,
            active,
            language,
        }))
    }

    async fn append_message(
        &self,
        tenant: &TenantId,
        message: &NewMessage,
    ) -> Result<(), StoreError> {
        let put = self.put_new(message_item(tenant, message))?;
        self.write_into(tenant, &message.case, vec![put], Some(message.created_at))
            .await
    }

    async fn list_messages(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        after: Option<&MessageId>,
        limit: usize,
    ) -> Result<Vec<Message>, StoreError> {
        let from = after.map_or_else(|| "M#".to_owned(), msg_sk);
        let mut out = Vec::new();
        let mut start: Option<Item> = None;
        while out.len() < limit {
            // Consistent (issue 27): a message stored a moment ago (another tab's, a
            // settlement's notice) is in the page the widget reads now.
            let page = self
                .consistent_query()
                .key_condition_expression("pk = :pk AND sk > :from")
                .set_expression_attribute_values(Some(values([
                    (":pk", s(conv_pk(tenant, case))),
                    (":from", s(from.as_str())),
                ])))
                .limit(i32::try_from(limit - out.len()).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(unavailable)?;
            for item in page.items.unwrap_or_default() {
                out.push(message_from(&item)?);
            }
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => break,
            }
        }
        Ok(out)
    }

    async fn recent_messages(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        limit: usize,
    ) -> Result<Vec<Message>, StoreError> {
        // Newest first, one page of at most `limit`, then back to oldest first.
        // Consistent: the model must see the message that was stored milliseconds before
        // this turn began.
        let query = self
            .prefix_query(conv_pk(tenant, case), "M#")
            .scan_index_forward(false);
        let mut out = (self.first_page(query, limit).await?)
            .iter()
            .map(message_from)
            .collect::<Result<Vec<_>, _>>()?;
        out.reverse();
        Ok(out)
    }

    async fn close_case(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<TransitionOutcome, StoreError> {
        for attempt in 0..MAX_ATTEMPTS {
            let Some(case_item) = self.case_item(tenant, case).await? else {
                return Ok(TransitionOutcome::Applied);
            };
            if opt_s(&case_item, "status") == Some("closed") {
                return Ok(TransitionOutcome::Applied);
            }
            let seen = Self::slot(&case_item);
            let seen_state = seen.as_ref().and_then(|(_, st)| ProposalState::parse(st));
            // An action whose outcome is not settled keeps the case open: it must be
            // reconciled in it, and a closed case never executes.
            if let Some(state) = seen_state.filter(|st| st.needs_reconciliation()) {
                return Ok(TransitionOutcome::Conflict {
                    current: Some(state),
                });
            }
            let (tx, entries) = self.close_tx(tenant, case, seen.as_ref())?;
            let chain = chain::ChainRef::case(tenant, case);
            match self.transact_chained(&chain, tx, &entries).await? {
                Tx::Committed => return Ok(TransitionOutcome::Applied),
                Tx::Cancelled(_) => backoff(attempt).await,
            }
        }
        Err(StoreError::Unavailable(
            "closing the case kept losing races".into(),
        ))
    }

    async fn summary(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<Option<CaseSummary>, StoreError> {
        // Two reads at once: the case item, and the newest message (one item, newest
        // first). About 1 RCU each, however long the conversation.
        let (case_item, newest) = tokio::join!(
            self.case_item(tenant, case),
            self.recent_messages(tenant, case, 1)
        );
        let Some(case_item) = case_item? else {
            return Ok(None);
        };
        let (case, language) = case_from(&case_item)?;
        let last_message = newest?.pop().map(|m| m.id);
        Ok(Some(CaseSummary {
            case,
            language,
            last_message,
        }))
    }

    async fn proposal_outcomes(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<Vec<ProposalOutcome>, StoreError> {
        let items = self
            .partition_items(conv_pk(tenant, case), PROPOSAL_PREFIX)
            .await?;
        let mut outcomes = items
            .iter()
            .map(outcome_from)
            .collect::<Result<Vec<_>, _>>()?;
        // By presentation: proposal items sort by action id, which is not the chat's order.
        outcomes.sort_by(|a, b| a.presented.cmp(&b.presented));
        Ok(outcomes)
    }

    async fn record_in_case(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        entry: &countersign_domain::ports::AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        // The record and a check that the case is open, in one transaction with the chain.
        let check = build(
            aws_sdk_dynamodb::types::ConditionCheck::builder()
                .table_name(&self.table)
                .set_key(Some(key(conv_pk(tenant, case), CASE_SK)))
                .condition_expression("#status = :open")
                .expression_attribute_names("#status", "status")
                .expression_attribute_values(":open", s("open"))
                .build(),
        )?;
        let tx = vec![TransactWriteItem::builder().condition_check(check).build()];
        let chain = chain::ChainRef::case(tenant, case);
        match self
            .transact_chained(&chain, tx, std::slice::from_ref(entry))
            .await?
        {
            Tx::Committed => Ok(TransitionOutcome::Applied),
            Tx::Cancelled(_) => Ok(TransitionOutcome::Conflict { current: None }),
        }
    }
}

#[async_trait]
impl ProposalLock for DynamoStore {
    async fn create_proposal(
        &self,
        proposal: &Proposal,
        presentation: &[NewMessage],
    ) -> Result<CreateProposalOutcome, StoreError> {
        // The case item as last seen: from a read first, then from the failed
        // condition's ALL_OLD image, which saves a read per lost race.
        let mut seen_case: Option<Item> = None;
        // C-8: the settings it was prepared with are still in force (decision 0043).
        if let Some(sv) = &proposal.secret_version
            && !self
                .settings_in_force(&proposal.tenant, proposal.config_version, sv)
                .await?
        {
            return Ok(CreateProposalOutcome::SettingsChanged);
        }
        for attempt in 0..MAX_ATTEMPTS {
            let case_item = match seen_case.take() {
                Some(i) => i,
                None => match self.case_item(&proposal.tenant, &proposal.case).await? {
                    Some(i) => i,
                    None => return Ok(CreateProposalOutcome::CaseNotOpen),
                },
            };
            let seen = match slot_for_preparation(&case_item)? {
                Ok(seen) => seen,
                Err(refused) => return Ok(refused),
            };
            let lang = case_from(&case_item)?.1;
            let plan = self.proposal_tx(proposal, presentation, seen.as_ref(), lang)?;
            let chain = chain::ChainRef::case(&proposal.tenant, &proposal.case);
            match self
                .transact_chained(&chain, plan.items, &plan.entries)
                .await?
            {
                Tx::Committed => {
                    let superseded = plan.superseded;
                    return Ok(CreateProposalOutcome::Applied { superseded });
                }
                Tx::Cancelled(reasons) => {
                    // the action id was used before in this tenant.
                    let reused = [
                        plan.guard_index,
                        plan.legacy_guard_index,
                        plan.proposal_index,
                    ]
                    .into_iter()
                    .chain(plan.registration_index)
                    .any(|i| failed(reasons.get(i)));
                    if reused {
                        return Ok(CreateProposalOutcome::ActionIdReused);
                    }
                    // Someone changed the slot between our read and write: decide again.
                    seen_case = reasons
                        .first()
                        .filter(|r| failed(Some(r)))
                        .and_then(|r| r.item().cloned());
                    backoff(attempt).await;
                }
            }
        }
        Ok(CreateProposalOutcome::Conflict)
    }

    async fn confirm(&self, w: &ConfirmWrite) -> Result<TransitionOutcome, StoreError> {
        self.confirm_tx(w).await
    }

    async fn mark_served(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        action_id: &ActionId,
        at: Timestamp,
    ) -> Result<(), StoreError> {
        let sent = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(conv_pk(tenant, case), prop_sk(action_id))))
            .update_expression("SET served_at = :t")
            .condition_expression("attribute_exists(pk) AND attribute_not_exists(served_at)")
            .set_expression_attribute_values(Some(values([(":t", s(at.to_rfc3339()))])))
            .send()
            .await;
        // Not written: served before (the first serving stands), or gone.
        written(sent)?;
        Ok(())
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
        let step = Step {
            tenant,
            case,
            action_id,
            from,
            to,
        };
        self.transition_with(&step, notice, None).await
    }
}

#[async_trait]
impl UnsettledIndex for DynamoStore {
    async fn list_unsettled(&self, tenant: &TenantId) -> Result<Vec<UnsettledAction>, StoreError> {
        let mut all = self
            .index_items(tenant, UNSETTLED_PREFIX)
            .await?
            .iter()
            .map(unsettled_from)
            .collect::<Result<Vec<_>, _>>()?;
        all.sort_by_key(|u| u.since);
        Ok(all)
    }

    async fn note_status(
        &self,
        tenant: &TenantId,
        action_id: &ActionId,
        answer: &str,
        at: Timestamp,
    ) -> Result<(), StoreError> {
        // Its shard, else the tenant's own partition (an entry from before the shards,
        // decision 0043).
        for pk in [index_pk(tenant, action_id.as_str()), tenant_pk(tenant)] {
            let sent = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(key(pk, format!("{UNSETTLED_PREFIX}{action_id}"))))
                .update_expression("SET last_status = :s, last_status_at = :t")
                .condition_expression("attribute_exists(pk)")
                .set_expression_attribute_values(Some(values([
                    (":s", s(answer)),
                    (":t", s(at.to_rfc3339())),
                ])))
                .send()
                .await;
            // Not written: not there (settled meanwhile, or in the other partition).
            if written(sent)? {
                return Ok(());
            }
        }
        Ok(())
    }

    async fn settle_by_admin(
        &self,
        settle: &SettleByAdmin<'_>,
    ) -> Result<TransitionOutcome, StoreError> {
        let step = Step {
            tenant: settle.tenant,
            case: settle.case,
            action_id: settle.action_id,
            from: settle.from,
            to: settle.to,
        };
        self.transition_with(&step, Some(settle.notice), Some(settle.audit))
            .await
    }
}

#[async_trait]
impl SettingsFence for DynamoStore {
    async fn invalidate_pending(
        &self,
        tenant: &TenantId,
        keep: Option<(u64, &str)>,
        notice: &(dyn for<'c> Fn(&'c CaseId, Language) -> NewMessage + Send + Sync),
    ) -> Result<usize, StoreError> {
        self.sweep(tenant, keep, notice).await
    }
}

impl DynamoStore {
    /// A proposal by id, whatever its state (history included).
    pub async fn proposal(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        action: &ActionId,
    ) -> Result<Option<Proposal>, StoreError> {
        self.get_as(conv_pk(tenant, case), prop_sk(action), proposal_from)
            .await
    }
}
