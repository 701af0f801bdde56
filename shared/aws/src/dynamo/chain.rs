//! L-2 in the table: each audit record is appended to its chain in the same
//! `TransactWriteItems` as the change it records, with the chain's head item updated
//! under a condition on the head it was built on. Two chains per conversation-free
//! concern (decision 0031): the tenant's configuration (`TENANT#<t>` / `AUDITHEAD`) and
//! each conversation (`conv:<digest>`, decision 0055: head `CONV#<t>#<c>` / `A#CHAIN`,
//! read by the conversation's one Query, so the confirm path learns its head without a
//! call of its own). The purge moves a conversation's head to `AUDITHEAD#<t>#<digest>`,
//! where nothing names the conversation; the tenant's index entry of the chain names the
//! case while it lives, so a verifier knows where to read the head.
//!
//! Chains started before decision 0055 (`case:<c>`, head `CONV#<t>#<c>` / `A#AUDIT`) are
//! read where they are; none is started any more.
//!
//! Heads are cached per process as a hint only: a stale one fails the head's condition,
//! nothing is written, and the write is built again on the head read back.

use super::items::*;
use super::{DynamoStore, MAX_ATTEMPTS, Tx, any_conflict, backoff, failed, values};
use aws_sdk_dynamodb::types::TransactWriteItem;
use countersign_domain::audit_chain::{self, ChainedRecord, Head, TENANT_CHAIN};
use countersign_domain::ids::{CaseId, TenantId};
use countersign_domain::ports::{AuditEntry, StoreError};

/// The tenant's index of its conversation chains (L-3): `AUDITCHAIN#<chain>`.
pub(crate) const CHAIN_INDEX_PREFIX: &str = "AUDITCHAIN#";

/// Heads kept per process before the cache is emptied (a hint, never a source of truth).
const MAX_CACHED_HEADS: usize = 50_000;

/// A conversation chain's head while the conversation lives (decision 0055).
pub(crate) const CONV_HEAD_SK: &str = "A#CHAIN";
/// Where the purge moves a conversation chain's head: `AUDITHEAD#<tenant>#<digest>`.
pub(super) const PURGED_HEAD_PREFIX: &str = "AUDITHEAD#";
const PURGED_HEAD_SK: &str = "HEAD";

/// One chain of one tenant, and where its head lives.
#[derive(Debug, Clone)]
pub(crate) struct ChainRef {
    pub(crate) tenant: TenantId,
    pub(crate) chain: String,
    head_pk: String,
    head_sk: &'static str,
    /// Where the chain's records and index entry live (decision 0043).
    pub(crate) index_pk: String,
    /// The conversation, for a live conversation chain: its index entry names it.
    case: Option<CaseId>,
}

impl ChainRef {
    /// The tenant's configuration changes.
    pub(crate) fn tenant(tenant: &TenantId) -> Self {
        Self {
            tenant: tenant.clone(),
            chain: TENANT_CHAIN.to_owned(),
            head_pk: tenant_pk(tenant),
            head_sk: AUDIT_HEAD_SK,
            index_pk: tenant_pk(tenant),
            case: None,
        }
    }

    /// One conversation's proposals (decision 0055), while the conversation lives.
    pub(crate) fn case(tenant: &TenantId, case: &CaseId) -> Self {
        Self {
            tenant: tenant.clone(),
            chain: audit_chain::conversation_chain(tenant.as_str(), case.as_str()),
            head_pk: conv_pk(tenant, case),
            head_sk: CONV_HEAD_SK,
            index_pk: index_pk(tenant, case.as_str()),
            case: Some(case.clone()),
        }
    }

    /// A conversation chain started before decision 0055 (`case:<id>`), read only.
    fn legacy_case(tenant: &TenantId, case: &CaseId) -> Self {
        Self {
            tenant: tenant.clone(),
            chain: audit_chain::case_chain(case.as_str()),
            head_pk: conv_pk(tenant, case),
            head_sk: CASE_HEAD_SK,
            index_pk: index_pk(tenant, case.as_str()),
            case: None,
        }
    }

    /// A conversation chain (`conv:<digest>`) once its conversation is purged, read only.
    fn purged(tenant: &TenantId, chain: &str) -> Self {
        let digest = chain
            .strip_prefix(audit_chain::CONVERSATION_CHAIN_PREFIX)
            .unwrap_or(chain);
        Self {
            tenant: tenant.clone(),
            chain: chain.to_owned(),
            head_pk: format!("{PURGED_HEAD_PREFIX}{tenant}#{digest}"),
            head_sk: PURGED_HEAD_SK,
            index_pk: tenant_pk(tenant),
            case: None,
        }
    }

    fn cache_key(&self) -> String {
        format!("{}/{}", self.tenant, self.chain)
    }
}

/// The head stored in a head item.
pub(crate) fn head_from(item: &Item) -> Head {
    Head {
        seq: get_n(item, "chain_seq").unwrap_or(0),
        hash: opt_s(item, "chain_hash").unwrap_or_default().to_owned(),
    }
}

/// `entry` as a record of `chain` (chain fields filled by [`audit_chain::append`]).
fn record_of(chain: &str, entry: &AuditEntry) -> ChainedRecord {
    ChainedRecord {
        id: entry.id.to_string(),
        chain: chain.to_owned(),
        seq: 0,
        prev: String::new(),
        at: entry.at.to_rfc3339(),
        actor: entry.actor.clone(),
        action: entry.action.clone(),
        changes: entry.changes.to_string(),
    }
}

impl DynamoStore {
    /// `entries` with their personal fields sealed under their person's key, before
    /// they are chained (the chain hashes cover the sealed form). Without people's keys
    /// the entries are written as they are.
    pub(crate) async fn sealed(
        &self,
        tenant: &TenantId,
        entries: &[AuditEntry],
    ) -> Result<Vec<AuditEntry>, StoreError> {
        let mut out = entries.to_vec();
        let Some(keys) = &self.subjects else {
            return Ok(out);
        };
        for entry in &mut out {
            // R-1 (decision 0055): the conversation's ids under its key, which the purge
            // destroys. A conversation that does not exist (a hold on a case id that
            // never was) has no key: nothing of it to purge either.
            if let Some((case, fields)) = audit_chain::conversation_fields(&entry.changes)
                && let Ok(case) = CaseId::parse(case)
                && let Some(sealed) = keys.seal_conversation(tenant, &case, &fields).await?
            {
                audit_chain::drop_conversation_fields(&mut entry.changes, sealed);
            }
            let Some((who, personal)) = audit_chain::take_personal(&mut entry.changes) else {
                continue;
            };
            let user = countersign_domain::ids::UserId::parse(who)
                .map_err(|_| corrupt("personal field"))?;
            let sealed = keys.seal(tenant, &user, &personal).await?;
            entry.changes[audit_chain::SEALED] = serde_json::Value::String(sealed);
        }
        Ok(out)
    }

    fn heads(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Head>> {
        self.heads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Remembers a head read with other items (the conversation's Query).
    pub(crate) fn remember_head(&self, chain: &ChainRef, head: Head) {
        let mut heads = self.heads();
        if heads.len() >= MAX_CACHED_HEADS {
            heads.clear();
        }
        heads.insert(chain.cache_key(), head);
    }

    fn forget_head(&self, chain: &ChainRef) {
        self.heads().remove(&chain.cache_key());
    }

    /// The chain's head: the cached one, else a consistent read.
    pub(crate) async fn head(&self, chain: &ChainRef) -> Result<Head, StoreError> {
        if let Some(h) = self.heads().get(&chain.cache_key()).cloned() {
            return Ok(h);
        }
        let head = self
            .get(chain.head_pk.as_str(), chain.head_sk)
            .await?
            .as_ref()
            .map(head_from)
            .unwrap_or_default();
        self.remember_head(chain, head.clone());
        Ok(head)
    }

    /// The items that append `entries` to `chain` after `head`: one put per record, then
    /// the head's conditional update (last). Returns them and the head after them.
    pub(crate) fn chain_items(
        &self,
        chain: &ChainRef,
        head: &Head,
        entries: &[AuditEntry],
    ) -> Result<(Vec<TransactWriteItem>, Head), StoreError> {
        let tenant = chain.tenant.as_str();
        let mut items = Vec::with_capacity(entries.len() + 1);
        let mut next = head.clone();
        for entry in entries {
            let (record, after) =
                audit_chain::append(tenant, &next, record_of(&chain.chain, entry));
            items.push(self.put_new(chained_audit_item(
                &chain.index_pk,
                entry,
                &record,
                &after.hash,
            ))?);
            next = after;
        }
        // L-3: a conversation chain's first records name it in the tenant's chain index,
        // so a verifier finds the chain even if its records and head are deleted later.
        if head.seq == 0 && !entries.is_empty() && chain.chain != TENANT_CHAIN {
            items.push(self.chain_index_put(chain)?);
        }
        let mut vals = values([
            (":seq", n(i128::from(next.seq))),
            (":hash", s(next.hash.as_str())),
        ]);
        let condition = if head.seq == 0 {
            "attribute_not_exists(pk)"
        } else {
            vals.insert(":prev".into(), n(i128::from(head.seq)));
            "chain_seq = :prev"
        };
        items.push(self.update(
            key(chain.head_pk.as_str(), chain.head_sk),
            "SET chain_seq = :seq, chain_hash = :hash".to_owned(),
            condition,
            vals,
        )?);
        Ok((items, next))
    }

    /// The tenant's index entry of `chain` (unconditional: writing it twice is harmless).
    fn chain_index_put(&self, chain: &ChainRef) -> Result<TransactWriteItem, StoreError> {
        let mut item = key(
            chain.index_pk.as_str(),
            format!("{CHAIN_INDEX_PREFIX}{}", chain.chain),
        );
        item.insert("chain".into(), s(chain.chain.as_str()));
        if let Some(case) = &chain.case {
            item.insert("case".into(), s(case.as_str()));
        }
        self.put(item)
    }

    /// Where `chain`'s head lives, for a verifier reading it by name: `case` is what the
    /// tenant's index entry of a conversation chain names (`None` once it is purged).
    fn chain_named(
        tenant: &TenantId,
        chain: &str,
        case: Option<&str>,
    ) -> Result<ChainRef, StoreError> {
        if chain == TENANT_CHAIN {
            return Ok(ChainRef::tenant(tenant));
        }
        if let Some(case) = chain.strip_prefix("case:") {
            let case = CaseId::parse(case).map_err(|_| corrupt("chain"))?;
            return Ok(ChainRef::legacy_case(tenant, &case));
        }
        if !chain.starts_with(audit_chain::CONVERSATION_CHAIN_PREFIX) {
            return Err(corrupt("chain"));
        }
        match case {
            Some(case) => {
                let case = CaseId::parse(case).map_err(|_| corrupt("case"))?;
                let live = ChainRef::case(tenant, &case);
                if live.chain != chain {
                    return Err(corrupt("case"));
                }
                Ok(live)
            }
            None => Ok(ChainRef::purged(tenant, chain)),
        }
    }

    /// `chain`'s stored head (a consistent read, never the cache), or `None`.
    pub(crate) async fn stored_head(&self, chain: &ChainRef) -> Result<Option<Head>, StoreError> {
        let item = self.get(chain.head_pk.as_str(), chain.head_sk).await?;
        Ok(item.as_ref().map(head_from))
    }

    /// The head of `chain` by name (see [`Self::chain_named`]). A live conversation's head
    /// not found where it lives was moved by a purge since the index was read (the move
    /// is one transaction): it is read where the purge put it.
    pub(crate) async fn head_named(
        &self,
        tenant: &TenantId,
        chain: &str,
        case: Option<&str>,
    ) -> Result<Option<Head>, StoreError> {
        let at = Self::chain_named(tenant, chain, case)?;
        match self.stored_head(&at).await? {
            Some(head) => Ok(Some(head)),
            None if at.case.is_some() => self.stored_head(&ChainRef::purged(tenant, chain)).await,
            None => Ok(None),
        }
    }

    /// R-1 (decision 0055): moves the purged conversation's chain head to where nothing
    /// names the conversation, and rewrites the chain's index entry without its case: one
    /// transaction, conditioned on the head as read, so no record is lost between.
    pub(crate) async fn retire_chain(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<(), StoreError> {
        let live = ChainRef::case(tenant, case);
        for attempt in 0..MAX_ATTEMPTS {
            let Some(head) = self.stored_head(&live).await? else {
                return Ok(());
            };
            if head.seq == 0 {
                // An empty chain (written before N13's fix): nothing to keep or index.
                self.client
                    .delete_item()
                    .table_name(self.table())
                    .set_key(Some(key(live.head_pk.as_str(), live.head_sk)))
                    .send()
                    .await
                    .map_err(|e| StoreError::Unavailable(Box::new(e)))?;
                return Ok(());
            }
            let purged = ChainRef::purged(tenant, &live.chain);
            let mut moved = key(purged.head_pk.as_str(), purged.head_sk);
            moved.insert("chain_seq".into(), n(i128::from(head.seq)));
            moved.insert("chain_hash".into(), s(head.hash.as_str()));
            let index = key(
                live.index_pk.as_str(),
                format!("{CHAIN_INDEX_PREFIX}{}", live.chain),
            );
            let mut entry = index.clone();
            entry.insert("chain".into(), s(live.chain.as_str()));
            let delete = self.delete_where(
                key(live.head_pk.as_str(), live.head_sk),
                Some("chain_seq = :seq"),
                Some(values([(":seq", n(i128::from(head.seq)))])),
            )?;
            let tx = vec![self.put_new(moved)?, delete, self.put(entry)?];
            match self.transact(tx).await? {
                Tx::Committed => {
                    self.forget_head(&live);
                    return Ok(());
                }
                // A record appended meanwhile (the head moved): read it again.
                Tx::Cancelled(reasons) if failed(reasons.get(1)) && !failed(reasons.first()) => {
                    backoff(attempt).await;
                }
                Tx::Cancelled(reasons) if failed(reasons.first()) => {
                    return Err(corrupt("a purged chain's head exists twice"));
                }
                Tx::Cancelled(_) => backoff(attempt).await,
            }
        }
        Err(StoreError::Unavailable(
            "the audit chain's head kept moving".into(),
        ))
    }

    /// Whether a cancellation was the head's alone (another record came first): then the
    /// caller builds the write again on the fresh head.
    pub(crate) fn head_moved(
        &self,
        chain: &ChainRef,
        reasons: &[aws_sdk_dynamodb::types::CancellationReason],
        head_index: usize,
    ) -> bool {
        let moved = failed(reasons.get(head_index))
            && reasons
                .iter()
                .enumerate()
                .all(|(i, r)| i == head_index || !failed(Some(r)));
        if moved {
            self.forget_head(chain);
        }
        moved
    }

    /// `items`, with `entries` appended to `chain`, in one transaction; rebuilt on the
    /// fresh head when only the head moved. A cancellation for any other reason is
    /// returned as it is (the chain's items come after the caller's, whose indices hold).
    pub(super) async fn transact_chained(
        &self,
        chain: &ChainRef,
        items: Vec<TransactWriteItem>,
        entries: &[AuditEntry],
    ) -> Result<Tx, StoreError> {
        // Confirm-path review N13: a step that records nothing touches no chain (a head
        // of seq 0 would outlive the conversation as two items for nothing).
        if entries.is_empty() {
            return self.transact(items).await;
        }
        let sealed = self.sealed(&chain.tenant, entries).await?;
        let entries = sealed.as_slice();
        for attempt in 0..MAX_ATTEMPTS {
            let head = self.head(chain).await?;
            let (extra, next) = self.chain_items(chain, &head, entries)?;
            let mut tx = items.clone();
            tx.extend(extra);
            let head_index = tx.len() - 1;
            match self.transact(tx).await? {
                Tx::Committed => {
                    self.remember_head(chain, next);
                    return Ok(Tx::Committed);
                }
                Tx::Cancelled(reasons) => {
                    if self.head_moved(chain, &reasons, head_index) {
                        backoff(attempt).await;
                        continue;
                    }
                    // L-2, issue 27: an item was in another request's transaction at that
                    // moment (an admin save overlapping a preparation that condition-
                    // checks the settings) and no condition failed: not a refusal, try
                    // again.
                    if !reasons.iter().any(|r| failed(Some(r))) && any_conflict(&reasons) {
                        backoff(attempt).await;
                        continue;
                    }
                    // The head may be stale too: read it next time.
                    if failed(reasons.get(head_index)) {
                        self.forget_head(chain);
                    }
                    return Ok(Tx::Cancelled(reasons));
                }
            }
        }
        Err(StoreError::Unavailable(
            "the audit chain's head kept moving".into(),
        ))
    }
}
