//! Preparation and closing: the transactions that take or free a conversation's slot
//! (P-2, A-15 …, C-8's fence at preparation).

use super::*;

/// the slot as seen, when a new proposal may take it (`Ok`), or the outcome that
/// refuses preparation (`Err`): the case is not open, or an action is unsettled.
#[allow(clippy::type_complexity)]
pub(super) fn slot_for_preparation(
    case_item: &Item,
) -> Result<Result<Option<(String, String)>, CreateProposalOutcome>, StoreError> {
    if opt_s(case_item, "status") != Some("open") {
        return Ok(Err(CreateProposalOutcome::CaseNotOpen));
    }
    let seen = DynamoStore::slot(case_item);
    let seen_state = seen.as_ref().and_then(|(_, st)| ProposalState::parse(st));
    if let (Some((a, _)), Some(st)) = (&seen, seen_state)
        && st.blocks_preparation()
    {
        let action_id = ActionId::parse(a.as_str()).map_err(|_| corrupt("slot_action"))?;
        return Ok(Err(CreateProposalOutcome::Blocked {
            action_id,
            state: st,
        }));
    }
    Ok(Ok(seen))
}

/// The transaction that stores a proposal, and where its guards sit in it.
pub(super) struct ProposalTx {
    pub(super) items: Vec<TransactWriteItem>,
    /// L-1 records, appended to the conversation's chain (L-2).
    pub(super) entries: Vec<countersign_domain::ports::AuditEntry>,
    pub(super) superseded: Option<ActionId>,
    pub(super) proposal_index: usize,
    pub(super) guard_index: usize,
    /// The check that no guard of the action id from before decision 0055 exists.
    pub(super) legacy_guard_index: usize,
    pub(super) registration_index: Option<usize>,
}

impl DynamoStore {
    /// The slot condition on the case item: as seen (the optimistic lock), or empty.
    pub(super) fn slot_condition(
        seen: Option<&(String, String)>,
        vals: &mut HashMap<String, AttributeValue>,
    ) -> &'static str {
        match seen {
            Some((a, st)) => {
                vals.insert(":seen_a".into(), s(a.as_str()));
                vals.insert(":seen_s".into(), s(st.as_str()));
                "#status = :open AND slot_action = :seen_a AND slot_state = :seen_s"
            }
            None => "#status = :open AND attribute_not_exists(slot_action)",
        }
    }

    /// Moves a pending proposal to `to` inside a larger transaction, with retention when
    /// configured.
    pub(super) fn end_pending_update(
        &self,
        pk: &str,
        action: &ActionId,
        to: ProposalState,
    ) -> Result<TransactWriteItem, StoreError> {
        let vals = values([
            (":pending", s(ProposalState::PendingConfirmation.as_str())),
            (":to", s(to.as_str())),
        ]);
        self.update(
            key(pk, prop_sk(action)),
            "SET #state = :to".to_owned(),
            "#state = :pending",
            vals,
        )
    }

    /// A-14 … A-17 in one transaction: the slot taken (conditional on what was seen),
    /// a pending predecessor superseded, the proposal and its tenant-wide id guard put
    /// new, the presentation messages, and (C-8) the proposal's registration (the
    /// settings it was prepared with are checked before, [`Self::settings_in_force`]).
    pub(super) fn proposal_tx(
        &self,
        proposal: &Proposal,
        presentation: &[NewMessage],
        seen: Option<&(String, String)>,
        lang: Language,
    ) -> Result<ProposalTx, StoreError> {
        let pk = conv_pk(&proposal.tenant, &proposal.case);
        let mut vals = values([
            (":open", s("open")),
            (":new", s(proposal.action_id.as_str())),
            (":pending", s(ProposalState::PendingConfirmation.as_str())),
        ]);
        let condition = Self::slot_condition(seen, &mut vals);
        // P-3: a TTL an older version set (decision 0052) never removes a conversation
        // with a proposal.
        let take = "SET slot_action = :new, slot_state = :pending REMOVE #ttl".to_owned();
        let mut items = vec![self.update(key(pk.as_str(), CASE_SK), take, condition, vals)?];
        // the pending predecessor is superseded in the same transaction.
        let pending = seen.filter(|(_, st)| st == ProposalState::PendingConfirmation.as_str());
        let superseded = match pending {
            Some((a, _)) => {
                let old = ActionId::parse(a.as_str()).map_err(|_| corrupt("slot_action"))?;
                items.push(self.end_pending_update(&pk, &old, ProposalState::Superseded)?);
                Some(old)
            }
            None => None,
        };
        let mut stored = proposal.clone();
        stored.presented.replaced = replaced_by_slot(seen)?;
        let proposal_index = items.len();
        items.push(self.put_new(proposal_item(&stored))?);
        let guard_index = items.len();
        let mut guard = key(guard_pk(&proposal.tenant, &proposal.action_id), "ACTION");
        guard.insert("case_id".into(), s(proposal.case.as_str()));
        guard.insert("created_at".into(), s(proposal.prepared_at.to_rfc3339()));
        items.push(self.put_new(guard)?);
        // a guard written before decision 0055 is under the action id itself: the id is
        // still refused while it stands.
        let legacy_guard_index = items.len();
        items.push(self.absent(key(
            legacy_guard_pk(&proposal.tenant, &proposal.action_id),
            "ACTION",
        ))?);
        for m in presentation {
            items.push(self.put_new(message_item(&proposal.tenant, m))?);
        }
        let mut registration_index = None;
        if let Some(sv) = &proposal.secret_version {
            registration_index = Some(items.len());
            items.push(self.put_new(registration_item(proposal, sv, lang))?);
        }
        // L-1: prepared and presented (one write), and the predecessor's end.
        let mut entries = vec![life::prepared(proposal, self.ids.audit_id())];
        if let Some(old) = &superseded {
            let stamp = self.stamp();
            entries.push(life::superseded(
                old,
                &proposal.case,
                &proposal.action_id,
                stamp,
            ));
        }
        Ok(ProposalTx {
            items,
            entries,
            superseded,
            proposal_index,
            guard_index,
            legacy_guard_index,
            registration_index,
        })
    }

    /// C-8 at preparation: whether the tenant's action settings are still `(version,
    /// secret_version)`, from one consistent read before the preparation's transaction
    /// (decision 0043). Not a condition inside it: every preparation of a tenant would then
    /// include the tenant's one settings item, and DynamoDB cancels concurrent transactions
    /// on one item, so a tenant's preparations would contend with each other. A save that
    /// commits between this read and the write leaves a proposal of the old settings
    /// pending; the check before execution refuses it (decision 0042).
    pub(super) async fn settings_in_force(
        &self,
        tenant: &TenantId,
        version: u64,
        secret_version: &str,
    ) -> Result<bool, StoreError> {
        let Some(item) = self.get(tenant_pk(tenant), tenants::MCP_SK).await? else {
            return Ok(false);
        };
        let actions_version = match get_n::<u64>(&item, "actions_version") {
            Ok(v) => v,
            Err(_) => get_n::<u64>(&item, "version")?,
        };
        Ok(opt_s(&item, "secret_version") == Some(secret_version) && actions_version == version)
    }

    /// A-26 in one transaction: the case closed (conditional on the slot as seen), and a
    /// pending proposal cancelled with it.
    pub(super) fn close_tx(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        seen: Option<&(String, String)>,
    ) -> Result<
        (
            Vec<TransactWriteItem>,
            Vec<countersign_domain::ports::AuditEntry>,
        ),
        StoreError,
    > {
        let pk = conv_pk(tenant, case);
        let mut vals = values([(":open", s("open")), (":closed", s("closed"))]);
        let mut expr = "SET #status = :closed".to_owned();
        let condition = Self::slot_condition(seen, &mut vals);
        let pending = match seen {
            Some((a, st)) if st == ProposalState::PendingConfirmation.as_str() => {
                Some(ActionId::parse(a.as_str()).map_err(|_| corrupt("slot_action"))?)
            }
            _ => None,
        };
        if pending.is_some() {
            vals.insert(":cancelled".into(), s(ProposalState::Cancelled.as_str()));
            expr.push_str(", slot_state = :cancelled");
        }
        let mut tx = vec![self.update(key(pk.as_str(), CASE_SK), expr, condition, vals)?];
        let mut entries = Vec::new();
        if let Some(old) = &pending {
            tx.push(self.end_pending_update(&pk, old, ProposalState::Cancelled)?);
            entries.push(life::cancelled_with_case(old, case, self.stamp()));
        }
        Ok((tx, entries))
    }
}

/// N-6: what a new proposal replaces, from the slot as it stood: a pending one (the chat's
/// supersession in the same transaction) or one just superseded (the gateway's
/// `make_room`).
fn replaced_by_slot(seen: Option<&(String, String)>) -> Result<Option<ActionId>, StoreError> {
    seen.filter(|(_, st)| {
        ProposalState::parse(st).is_some_and(ProposalState::is_replaced_by_a_new_proposal)
    })
    .map(|(a, _)| ActionId::parse(a.as_str()))
    .transpose()
    .map_err(|_| corrupt("slot_action"))
}
