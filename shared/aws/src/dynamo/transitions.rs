//! Moving a proposal from one state to the next (with its notice and its L-1 record), and
//! the tenant's index of unsettled actions (decision 0028).

use super::*;

/// One proposal move, for [`DynamoStore::transition_with`].
pub(super) struct Step<'a> {
    pub(super) tenant: &'a TenantId,
    pub(super) case: &'a CaseId,
    pub(super) action_id: &'a ActionId,
    pub(super) from: ProposalState,
    pub(super) to: ProposalState,
}

/// The tenant's index of unsettled actions: written by the confirm transaction, removed
/// by the transition that settles the action (so the listing never scans conversations).
pub(crate) const UNSETTLED_PREFIX: &str = "UNSETTLED#";

/// The index item of an action confirmed at `since`.
pub(crate) fn unsettled_item(
    tenant: &TenantId,
    case: &CaseId,
    action_id: &ActionId,
    since: Timestamp,
) -> Item {
    let mut i = key(
        index_pk(tenant, action_id.as_str()),
        format!("{UNSETTLED_PREFIX}{action_id}"),
    );
    i.insert("case_id".into(), s(case.as_str()));
    i.insert("action_id".into(), s(action_id.as_str()));
    i.insert("since".into(), s(since.to_rfc3339()));
    i
}

pub(super) fn unsettled_from(i: &Item) -> Result<UnsettledAction, StoreError> {
    Ok(UnsettledAction {
        case: CaseId::parse(get_s(i, "case_id")?).map_err(|_| corrupt("case_id"))?,
        action_id: ActionId::parse(get_s(i, "action_id")?).map_err(|_| corrupt("action_id"))?,
        since: Timestamp::parse_utc(get_s(i, "since")?).map_err(|_| corrupt("since"))?,
        last_status: match (get_s(i, "last_status"), get_s(i, "last_status_at")) {
            (Ok(answer), Ok(at)) => Some((
                answer.to_owned(),
                Timestamp::parse_utc(at).map_err(|_| corrupt("last_status_at"))?,
            )),
            _ => None,
        },
    })
}

impl DynamoStore {
    /// [`ProposalLock::transition`], with one more item in the same write (the
    /// administrator's audit record). Settling an unsettled action also removes it from
    /// the tenant's index, in the same write.
    /// L-1: the record of a step `from → to`: an administrator's settlement record is
    /// itself the step's record; otherwise one by the platform.
    pub(super) fn step_entry(
        &self,
        step: &Step<'_>,
        settlement: Option<&countersign_domain::ports::AuditEntry>,
    ) -> Result<countersign_domain::ports::AuditEntry, StoreError> {
        if let Some(e) = settlement {
            return Ok(e.clone());
        }
        Ok(life::stepped(
            step.action_id,
            step.case,
            (step.from, step.to),
            self.stamp(),
        ))
    }

    pub(super) async fn transition_with(
        &self,
        step: &Step<'_>,
        notice: Option<&NewMessage>,
        extra: Option<&countersign_domain::ports::AuditEntry>,
    ) -> Result<TransitionOutcome, StoreError> {
        let Step {
            tenant,
            case,
            action_id,
            from,
            to,
        } = *step;
        if !is_legal(from, to) {
            return Err(StoreError::IllegalTransition { from, to });
        }
        let pk = conv_pk(tenant, case);
        for attempt in 0..MAX_ATTEMPTS {
            let case_vals = values([
                (":aid", s(action_id.as_str())),
                (":from", s(from.as_str())),
                (":to", s(to.as_str())),
            ]);
            let prop_vals = values([(":from", s(from.as_str())), (":to", s(to.as_str()))]);
            // no TTL; the purge removes a conversation (decision 0052).
            let case_expr = "SET slot_state = :to".to_owned();
            let prop_expr = "SET #state = :to".to_owned();
            let mut tx = vec![
                self.update(
                    key(pk.as_str(), CASE_SK),
                    case_expr,
                    "slot_action = :aid AND slot_state = :from",
                    case_vals,
                )?,
                self.update(
                    key(pk.as_str(), prop_sk(action_id)),
                    prop_expr,
                    "#state = :from",
                    prop_vals,
                )?,
            ];
            if let Some(m) = notice {
                tx.push(self.put_new(message_item(tenant, m))?);
            }
            if to.is_terminal() && from.blocks_preparation() {
                tx.extend(self.delete_unsettled(tenant, action_id)?);
            }
            let entries = [self.step_entry(step, extra)?];
            let chain = chain::ChainRef::case(tenant, case);
            match self.transact_chained(&chain, tx, &entries).await? {
                Tx::Committed => return Ok(TransitionOutcome::Applied),
                Tx::Cancelled(reasons) => {
                    if !reasons.iter().any(|r| failed(Some(r))) && any_conflict(&reasons) {
                        backoff(attempt).await;
                        continue;
                    }
                    let current = match reasons.get(1) {
                        Some(r) if failed(Some(r)) => r.item().and_then(state_of),
                        _ => Some(from),
                    };
                    return Ok(TransitionOutcome::Conflict { current });
                }
            }
        }
        Ok(TransitionOutcome::Conflict { current: None })
    }

    /// Removes an action from the tenant's unsettled index (nothing if absent): from its
    /// shard. (Entries written before the shards, decision 0043, are moved into their
    /// shards by the index backfill, N-8: nothing on the chat's paths writes the tenant's
    /// own partition any more.)
    pub(super) fn delete_unsettled(
        &self,
        tenant: &TenantId,
        action_id: &ActionId,
    ) -> Result<[TransactWriteItem; 1], StoreError> {
        let sk = format!("{UNSETTLED_PREFIX}{action_id}");
        Ok([self.delete(key(index_pk(tenant, action_id.as_str()), sk))?])
    }
}
