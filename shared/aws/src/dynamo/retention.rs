//! R-1 (decision 0052): the purge's side of the store. Each conversation has an index
//! entry (`RETAIN#<case>` in one of the tenant's 16 index partitions), written before its
//! case item, so a tenant's conversations can be listed without a scan; a conversation's
//! last activity is its newest message (message sort keys are ULIDs: one `Query` of one
//! item), so nothing is written per message for retention.

use super::items::*;
use super::{
    DynamoStore, MAX_ATTEMPTS, Tx, any_conflict, backoff, failed, unavailable, values, written,
};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::{DeleteRequest, WriteRequest};
use countersign_domain::conversation::Case;
use countersign_domain::ids::{ActionId, CaseId, TenantId, UserId};
use countersign_domain::ports::{PurgeOutcome, Retained, RetainedPage, Retention, StoreError};
use countersign_domain::proposal::ProposalState;
use countersign_domain::time::Timestamp;

const RETAIN_PREFIX: &str = "RETAIN#";

/// What the conditional removal of a case item did.
enum Removal {
    /// Removed (`existed`: there was one to remove).
    Removed { existed: bool },
    /// Kept: its proposal blocks the purge (`None`: it did a moment ago, no longer).
    Kept(Option<ProposalState>),
    /// Kept: a legal hold covers it.
    Held,
    /// Kept: written to since the purge listed it (N-4).
    Active,
    /// Not tried: another request's transaction held one of its items at that moment (a
    /// hold being placed on the tenant item); no condition failed. Try again.
    Conflict,
}
/// Conversations whose last activity is read at once.
const CONCURRENCY: usize = 8;
/// DynamoDB's most deletes in one `BatchWriteItem`.
const BATCH: usize = 25;
/// Rounds of retrying a batch's unprocessed deletes (DynamoDB throttling) before failing.
const ROUNDS: usize = 8;

/// N-4: a case item's `writes` (none kept yet: 0).
fn writes_of(item: &Item) -> Result<u64, StoreError> {
    match item.get("writes") {
        None => Ok(0),
        Some(v) => v
            .as_n()
            .ok()
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| corrupt("writes")),
    }
}

fn retain_sk(case: &CaseId) -> String {
    format!("{RETAIN_PREFIX}{case}")
}

/// The index entry of a new conversation (written before its case item).
pub(super) fn retain_item(case: &Case) -> Item {
    let mut i = key(
        index_pk(&case.tenant, case.id.as_str()),
        retain_sk(&case.id),
    );
    i.insert("case_id".into(), s(case.id.as_str()));
    i.insert("user_id".into(), s(case.user.as_str()));
    i.insert("created_at".into(), s(case.created_at.to_rfc3339()));
    i
}

/// A cursor: the shard and the last index entry read in it.
fn parse_cursor(cursor: &str) -> Result<(u32, Option<String>), StoreError> {
    let bad = || corrupt("cursor");
    let (shard, sk) = cursor.split_once('|').ok_or_else(bad)?;
    let shard: u32 = shard.parse().map_err(|_| bad())?;
    if shard >= INDEX_SHARDS || !(sk.is_empty() || sk.starts_with(RETAIN_PREFIX)) {
        return Err(bad());
    }
    Ok((shard, (!sk.is_empty()).then(|| sk.to_owned())))
}

impl DynamoStore {
    /// One page of the index entries of one shard, after `after`.
    async fn retain_entries(
        &self,
        tenant: &TenantId,
        shard: u32,
        after: Option<String>,
        limit: usize,
    ) -> Result<(Vec<Item>, Option<String>), StoreError> {
        let pk = format!("TENANT#{tenant}#{shard:02}");
        self.prefix_page(pk, RETAIN_PREFIX, after, limit).await
    }

    /// A conversation's last activity: its newest message's time, or `created`.
    async fn last_activity(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        created: Timestamp,
    ) -> Result<Timestamp, StoreError> {
        let page = self
            .consistent_query()
            .key_condition_expression("pk = :pk AND begins_with(sk, :m)")
            .set_expression_attribute_values(Some(values([
                (":pk", s(conv_pk(tenant, case))),
                (":m", s("M#")),
            ])))
            .scan_index_forward(false)
            .limit(1)
            .send()
            .await
            .map_err(unavailable)?;
        let newest = match page.items.unwrap_or_default().first() {
            Some(m) => Some(
                Timestamp::parse_utc(get_s(m, "created_at")?).map_err(|_| corrupt("created_at"))?,
            ),
            None => None,
        };
        Ok(newest.map_or(created, |m| m.max(created)))
    }

    /// A listed conversation: its last activity and `writes` from its case item (N-4),
    /// or, for a case item from before both were kept, its newest message.
    async fn retained_of(&self, tenant: &TenantId, entry: &Item) -> Result<Retained, StoreError> {
        let case = CaseId::parse(get_s(entry, "case_id")?).map_err(|_| corrupt("case_id"))?;
        let user = UserId::parse(get_s(entry, "user_id")?).map_err(|_| corrupt("user_id"))?;
        let created =
            Timestamp::parse_utc(get_s(entry, "created_at")?).map_err(|_| corrupt("created_at"))?;
        let item = self.get(conv_pk(tenant, &case), CASE_SK).await?;
        let writes = item.as_ref().map_or(Ok(0), writes_of)?;
        let kept = item.as_ref().and_then(|i| opt_s(i, "last_activity"));
        let last_activity = match kept {
            Some(t) => Timestamp::parse_utc(t)
                .map_err(|_| corrupt("last_activity"))?
                .max(created),
            None => self.last_activity(tenant, &case, created).await?,
        };
        Ok(Retained {
            case,
            user,
            last_activity,
            writes,
        })
    }

    /// Removes the case item unless its slot holds a pending, executing or unknown
    /// proposal, or a legal hold covers it: one transaction of a check on the
    /// tenant item's holds and the case item's conditional delete, so a hold placed or a
    /// proposal prepared before it is never lost with the conversation.
    async fn remove_case_item(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        seen: Option<u64>,
    ) -> Result<Removal, StoreError> {
        let Some(item) = self.get(conv_pk(tenant, case), CASE_SK).await? else {
            return Ok(Removal::Removed { existed: false });
        };
        let user = get_s(&item, "user")?.to_owned();
        let not_held =
            format!("NOT contains({HELD_CASES}, :case) AND NOT contains({HELD_PEOPLE}, :user)");
        let vals = values([(":case", s(case.as_str())), (":user", s(user))]);
        let tenant_key = key(tenant_pk(tenant), super::tenants::TENANT_SK);
        let tx = vec![
            self.check_where(tenant_key, &not_held, Some(vals))?,
            self.case_delete(tenant, case, seen)?,
        ];
        self.removal(tenant, case, seen, tx).await
    }

    /// The case item's delete: unless its slot blocks the purge, and (N-4) only as quiet
    /// as when it was listed.
    fn case_delete(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        seen: Option<u64>,
    ) -> Result<aws_sdk_dynamodb::types::TransactWriteItem, StoreError> {
        let blocking = [
            ProposalState::PendingConfirmation,
            ProposalState::Executing,
            ProposalState::Unknown,
        ];
        let mut condition =
            "(attribute_not_exists(slot_state) OR NOT (slot_state IN (:p, :e, :u)))".to_owned();
        let mut vals = values([
            (":p", s(blocking[0].as_str())),
            (":e", s(blocking[1].as_str())),
            (":u", s(blocking[2].as_str())),
        ]);
        // N-4: only as quiet as when it was listed.
        match seen {
            Some(0) => condition.push_str(" AND attribute_not_exists(writes)"),
            Some(w) => {
                condition.push_str(" AND writes = :w");
                vals.insert(":w".into(), n(w));
            }
            None => {}
        }
        self.delete_where(
            key(conv_pk(tenant, case), CASE_SK),
            Some(&condition),
            Some(vals),
        )
    }

    /// What the removal's transaction `tx` decided.
    async fn removal(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        seen: Option<u64>,
        tx: Vec<aws_sdk_dynamodb::types::TransactWriteItem>,
    ) -> Result<Removal, StoreError> {
        match self.transact(tx).await? {
            Tx::Committed => Ok(Removal::Removed { existed: true }),
            Tx::Cancelled(reasons) if failed(reasons.first()) => Ok(Removal::Held),
            Tx::Cancelled(reasons) if failed(reasons.get(1)) => {
                let item = self.get(conv_pk(tenant, case), CASE_SK).await?;
                let blocking = item
                    .as_ref()
                    .and_then(|i| opt_s(i, "slot_state"))
                    .and_then(ProposalState::parse)
                    .filter(|st| st.blocks_purge());
                let writes = item.as_ref().map_or(Ok(0), writes_of)?;
                Ok(match (blocking, seen) {
                    (Some(state), _) => Removal::Kept(Some(state)),
                    (None, Some(w)) if item.is_some() && writes != w => Removal::Active,
                    (None, _) => Removal::Kept(None),
                })
            }
            // Another request's transaction held an item at that moment: try again.
            Tx::Cancelled(reasons) if any_conflict(&reasons) => Ok(Removal::Conflict),
            Tx::Cancelled(_) => Ok(Removal::Kept(None)),
        }
    }

    /// A-14's guards outlive the conversation (an action id is never reused), but not
    /// which conversation they came from (and, keyed by a digest since decision 0055, not
    /// the action id either).
    async fn forget_guards(&self, tenant: &TenantId, keys: &[Item]) -> Result<(), StoreError> {
        let guards = keys.iter().filter_map(|k| {
            let action = opt_s(k, SK)?.strip_prefix(PROPOSAL_PREFIX)?;
            Some(ActionId::parse(action).map_err(|_| corrupt("sk")))
        });
        for action in guards {
            let action = action?;
            for pk in [guard_pk(tenant, &action), legacy_guard_pk(tenant, &action)] {
                self.forget_guard_case(pk).await?;
            }
        }
        Ok(())
    }

    /// Removes the case a guard names, if the guard exists.
    async fn forget_guard_case(&self, pk: String) -> Result<(), StoreError> {
        let sent = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(pk, "ACTION")))
            .update_expression("REMOVE case_id")
            .condition_expression("attribute_exists(pk)")
            .send()
            .await;
        // A guard that is not there has nothing to forget.
        written(sent)?;
        Ok(())
    }

    /// the items a conversation's partition points to, deleted with it (decision 0055):
    /// its data key (`KEY`, the wrapped key under `SUBJECTKEY#`), and each confirmation
    /// link made in it (`LINK#<hash>`, the link under `CONFIRMLINK#<hash>`).
    /// And (confirm-path review N7) each proposal's C-8 registration (`PENDING#<action>`
    /// in its shard), which names the conversation and the action until its TTL (those
    /// from before the shards expired long ago: a day after their proposal).
    fn pointed_to(tenant: &TenantId, keys: &[Item]) -> Vec<Item> {
        let registrations = keys.iter().filter_map(|k| {
            let action = opt_s(k, SK)?.strip_prefix(PROPOSAL_PREFIX)?;
            Some(key(
                index_pk(tenant, action),
                format!("{PENDING_PREFIX}{action}"),
            ))
        });
        let registrations: Vec<Item> = registrations.collect();
        keys.iter()
            .filter_map(|k| match opt_s(k, SK)? {
                sk if sk == super::subjects::KEY_POINTER_SK => {
                    let id = opt_s(k, "key_id")?;
                    Some(key(super::subjects::key_pk(tenant, id), "KEY"))
                }
                sk => super::links::link_key_of_pointer(sk),
            })
            .chain(registrations)
            .collect()
    }

    /// Deletes `keys` in batches, retrying what DynamoDB left unprocessed.
    pub(super) async fn delete_keys(&self, keys: Vec<Item>) -> Result<(), StoreError> {
        for chunk in keys.chunks(BATCH) {
            let mut requests: Vec<WriteRequest> = chunk
                .iter()
                .map(|k| {
                    let delete = DeleteRequest::builder()
                        .set_key(Some(k.clone()))
                        .build()
                        .map_err(unavailable)?;
                    Ok(WriteRequest::builder().delete_request(delete).build())
                })
                .collect::<Result<_, StoreError>>()?;
            for _ in 0..ROUNDS {
                let out = self
                    .client
                    .batch_write_item()
                    .request_items(self.table.clone(), requests)
                    .send()
                    .await
                    .map_err(unavailable)?;
                requests = out
                    .unprocessed_items
                    .and_then(|mut u| u.remove(&self.table))
                    .unwrap_or_default();
                if requests.is_empty() {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            if !requests.is_empty() {
                return Err(StoreError::Unavailable(
                    "deletes left unprocessed after retries".into(),
                ));
            }
        }
        Ok(())
    }
}

impl DynamoStore {
    /// R-1 (decision 0052): writes the retention index entry of every conversation that
    /// has none — those created before the purge existed — so the purge finds them, and
    /// removes the deployment-wide TTL the older version put on case and proposal items
    /// (R-3, decision 0053: DynamoDB's TTL deletes without looking at legal holds; the
    /// purge does). One scan of the table (the operator runs it once, `countersign purge
    /// --backfill`); idempotent. Returns how many conversations it saw.
    pub async fn backfill_retention_index(&self) -> Result<usize, StoreError> {
        let mut items = self
            .client
            .scan()
            .table_name(&self.table)
            .filter_expression("sk = :case OR (begins_with(sk, :prop) AND attribute_exists(#ttl))")
            .expression_attribute_names("#ttl", TTL)
            .set_expression_attribute_values(Some(values([
                (":case", s(CASE_SK)),
                (":prop", s(PROPOSAL_PREFIX)),
            ])))
            .into_paginator()
            .items()
            .send();
        let mut seen = 0;
        while let Some(item) = items.try_next().await.map_err(unavailable)? {
            if item.contains_key(TTL) {
                self.drop_ttl(&item).await?;
            }
            if opt_s(&item, SK) != Some(CASE_SK) {
                continue;
            }
            let (case, _) = case_from(&item)?;
            self.put_plain(retain_item(&case)).await?;
            seen += 1;
        }
        Ok(seen)
    }

    /// Removes an item's TTL (if the item is still there).
    async fn drop_ttl(&self, item: &Item) -> Result<(), StoreError> {
        let (Some(pk), Some(sk)) = (opt_s(item, PK), opt_s(item, SK)) else {
            return Err(corrupt("key"));
        };
        let answer = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(pk, sk)))
            .update_expression("REMOVE #ttl")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_names("#ttl", TTL)
            .send()
            .await;
        // Gone meanwhile: nothing to remove.
        written(answer)?;
        Ok(())
    }

    /// Every item of the table (R-1's tests: what a purge left behind). A whole-table
    /// scan: never on a request path.
    pub async fn scan_everything(
        &self,
    ) -> Result<
        Vec<std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>>,
        StoreError,
    > {
        self.client
            .scan()
            .table_name(&self.table)
            .consistent_read(true)
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(unavailable)
    }
}

#[async_trait]
impl Retention for DynamoStore {
    async fn retained(
        &self,
        tenant: &TenantId,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<RetainedPage, StoreError> {
        use futures::StreamExt as _;
        let (mut shard, mut after) = match cursor {
            Some(c) => parse_cursor(c)?,
            None => (0, None),
        };
        let mut entries = Vec::new();
        let mut next = None;
        while shard < INDEX_SHARDS {
            let (items, more) = self
                .retain_entries(tenant, shard, after.take(), limit - entries.len())
                .await?;
            entries.extend(items);
            match more {
                Some(sk) => after = Some(sk),
                None => shard += 1,
            }
            if entries.len() >= limit {
                next = (shard < INDEX_SHARDS)
                    .then(|| format!("{shard}|{}", after.clone().unwrap_or_default()));
                break;
            }
        }
        let reads: Vec<_> = entries
            .iter()
            .map(|e| self.retained_of(tenant, e))
            .collect();
        let items = futures::stream::iter(reads)
            .buffered(CONCURRENCY)
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RetainedPage { items, next })
    }

    async fn purge(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        seen: Option<u64>,
    ) -> Result<PurgeOutcome, StoreError> {
        // Twice at most: a proposal settled between the delete and the read is purged on
        // the second try; one still blocking is kept. A conflict with another request's
        // transaction (R-3: a hold being placed) is not a try: it backs off and tries
        // again, so the answer says what was decided, not that they met.
        let mut existed = None;
        let (mut tries, mut conflicts) = (0, 0);
        while tries < 2 && conflicts < MAX_ATTEMPTS {
            match self.remove_case_item(tenant, case, seen).await? {
                Removal::Removed { existed: e } => {
                    existed = Some(e);
                    break;
                }
                Removal::Kept(Some(state)) => return Ok(PurgeOutcome::Unresolved(state)),
                Removal::Held => return Ok(PurgeOutcome::Held),
                Removal::Active => return Ok(PurgeOutcome::Active),
                Removal::Kept(None) => tries += 1,
                Removal::Conflict => {
                    backoff(conflicts).await;
                    conflicts += 1;
                }
            }
        }
        let Some(existed) = existed else {
            return Ok(PurgeOutcome::Unresolved(ProposalState::PendingConfirmation));
        };
        self.remove_the_rest(tenant, case, existed).await
    }
}

impl DynamoStore {
    /// Everything of a conversation whose case item is gone (`existed`: this purge
    /// removed it).
    async fn remove_the_rest(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        existed: bool,
    ) -> Result<PurgeOutcome, StoreError> {
        // The case item is gone: nothing can be prepared or confirmed in it any more, so
        // the rest of it can go in any order.
        // L-2: the conversation's chain head moves out of its partition first, to where
        // nothing names the conversation (decision 0055); a chain without its head would
        // no longer verify.
        self.retire_chain(tenant, case).await?;
        let pk = conv_pk(tenant, case);
        let query = self
            .consistent_query()
            .key_condition_expression("pk = :pk")
            .projection_expression("pk, sk, key_id")
            .set_expression_attribute_values(Some(values([(":pk", s(pk))])));
        // A head of a chain started before decision 0055 stays with its records (its
        // records name the case anyway).
        let found: Vec<Item> = self
            .query_all(query)
            .await?
            .into_iter()
            .filter(|k| {
                let sk = opt_s(k, SK);
                sk != Some(CASE_HEAD_SK) && sk != Some(super::chain::CONV_HEAD_SK)
            })
            .collect();
        self.forget_guards(tenant, &found).await?;
        let removed = found.len() + usize::from(existed);
        // What the pointers name goes first: a purge stopped between batches and run
        // again still finds the pointers of what is left.
        let keys = Self::pointed_to(tenant, &found)
            .into_iter()
            .chain(found.into_iter().map(|mut k| {
                k.remove("key_id");
                k
            }))
            .collect();
        self.delete_keys(keys).await?;
        if let Some(subjects) = &self.subjects {
            subjects.forget_conversation(tenant, case);
        }
        // N-3: its entry in its person's index, named by the index entry (which outlives
        // a purge stopped half-way), then the index entry itself.
        let entry = self
            .get(index_pk(tenant, case.as_str()), retain_sk(case))
            .await?;
        if let Some(user) = entry.as_ref().and_then(|e| opt_s(e, "user_id")) {
            let user = UserId::parse(user).map_err(|_| corrupt("user_id"))?;
            self.delete_keys(vec![super::erasure::person_case_key(tenant, &user, case)])
                .await?;
        }
        self.client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(key(index_pk(tenant, case.as_str()), retain_sk(case))))
            .send()
            .await
            .map_err(unavailable)?;
        Ok(if removed == 0 {
            PurgeOutcome::Gone
        } else {
            PurgeOutcome::Purged { items: removed }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// a cursor names a shard and an index entry of it; anything else is refused.
    #[test]
    fn r1_a_cursor_is_read_back_or_refused() {
        assert_eq!(parse_cursor("3|").ok(), Some((3, None)));
        assert_eq!(
            parse_cursor("15|RETAIN#x").ok(),
            Some((15, Some("RETAIN#x".to_owned())))
        );
        for bad in ["", "16|", "x|", "3", "3|M#secret", "-1|"] {
            assert!(parse_cursor(bad).is_err(), "{bad}");
        }
    }
}
