//! The DynamoDB adapter of the conversation/proposal store and the tenant store.
//!
//! All state of one conversation lives under one partition key; one `Query` reads the
//! case (with its active-proposal slot) and the non-terminal proposal (P-2). Moving a
//! proposal is one `TransactWriteItems` whose conditions on the slot and on the proposal's
//! state *are* the lock: of any number of concurrent confirmations, at most one commits.

mod chain;
mod confirm;
mod conversations;
mod erasure;
mod items;
mod keyring;
mod leases;
mod limits;
mod links;
mod partitions;
mod passkeys;
mod proposals;
mod retention;
mod subjects;
mod sweep;
mod tenants;
mod transact;
mod transitions;

use crate::calls::CallLog;
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, CancellationReason, Delete, Put, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem, Update,
};
use countersign_domain::conversation::{Case, Message};
use countersign_domain::ids::{ActionId, CaseId, MessageId, TenantId};
use countersign_domain::life;
use countersign_domain::ports::{
    CaseSummary, ConfirmWrite, ConversationView, Conversations, CreateProposalOutcome, NewMessage,
    ProposalLock, ProposalOutcome, SettingsFence, SettleByAdmin, StoreError, TransitionOutcome,
    UnsettledAction, UnsettledIndex,
};
use countersign_domain::proposal::{Proposal, ProposalState, is_legal};
use countersign_domain::texts::Language;
use countersign_domain::time::Timestamp;
use items::*;
pub use keyring::StoredRing;
pub use partitions::PARTITIONS;
use proposals::*;
use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
pub use subjects::{CACHE_TTL, DataKey, EnvelopeKeys, KeyWrap, KmsWrap};
use transact::*;
use transitions::*;

/// How many times a write is retried after losing an optimistic race or a DynamoDB
/// `TransactionConflict`. Each retry re-reads, so progress is guaranteed under contention
/// (one writer wins every round).
const MAX_ATTEMPTS: u32 = 64;

/// The DynamoDB store. Cheap to clone (the SDK client is an `Arc`).
#[derive(Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
    /// Audit chain heads last seen (a hint; see `chain`).
    heads: std::sync::Arc<std::sync::Mutex<HashMap<String, countersign_domain::audit_chain::Head>>>,
    /// Time and ids of the records the store writes for a step (L-1).
    clock: std::sync::Arc<dyn countersign_domain::ports::Clock>,
    ids: std::sync::Arc<dyn countersign_domain::ports::Ids>,
    /// How long a C-8 sweep cancels before it reports what is left.
    sweep_budget: std::time::Duration,
    /// seals the personal fields of audit records; `None` writes them as they are
    /// (a table without people's keys: the emulator's older tests).
    subjects: Option<std::sync::Arc<dyn countersign_domain::ports::SubjectKeys>>,
    /// How long the confirm write is resent while its outcome is unknown (issue 27).
    resend_for: std::time::Duration,
    /// Which key ring `key_ring` and `put_key_ring` read and write (N-8: the action
    /// key's, or the checkpoint key's).
    ring_item: &'static str,
}

countersign_domain::debug_showing!(DynamoStore { table });

fn unavailable<E: std::error::Error + Send + Sync + 'static>(e: E) -> StoreError {
    StoreError::Unavailable(Box::new(e))
}

fn build<T, E: std::error::Error + Send + Sync + 'static>(
    r: Result<T, E>,
) -> Result<T, StoreError> {
    r.map_err(unavailable)
}

/// Whether a conditional request failed on its condition (nothing written).
fn condition_failed<E>(e: &SdkError<E>) -> bool
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata,
{
    e.as_service_error()
        .and_then(aws_sdk_dynamodb::error::ProvideErrorMetadata::code)
        == Some("ConditionalCheckFailedException")
}

/// A conditional write's answer: `true` written, `false` its condition failed (nothing
/// written); any other failure is an error.
fn written<T, E>(sent: Result<T, SdkError<E>>) -> Result<bool, StoreError>
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match sent {
        Ok(_) => Ok(true),
        Err(e) if condition_failed(&e) => Ok(false),
        Err(e) => Err(unavailable(e)),
    }
}

/// Seconds since the epoch, now.
fn epoch_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Expression names for the attributes whose names are DynamoDB reserved words, limited
/// to those the expressions use (DynamoDB refuses unused names).
fn names(expressions: &[&str]) -> Option<HashMap<String, String>> {
    let map: HashMap<String, String> = [("#state", "state"), ("#status", "status"), ("#ttl", TTL)]
        .into_iter()
        .filter(|(alias, _)| expressions.iter().any(|e| e.contains(alias)))
        .map(|(a, n)| (a.to_owned(), n.to_owned()))
        .collect();
    (!map.is_empty()).then_some(map)
}

/// A Query's `Limit` for a page of `limit` items (at least one).
fn page_limit(limit: usize) -> i32 {
    i32::try_from(limit.max(1)).unwrap_or(i32::MAX)
}

fn values<const N: usize>(v: [(&str, AttributeValue); N]) -> HashMap<String, AttributeValue> {
    v.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

impl DynamoStore {
    /// A store on `table`. It writes no TTL on conversations: the purge removes them
    /// (R-1, decision 0052), after each tenant's own retention and never past a hold.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
            heads: std::sync::Arc::default(),
            clock: std::sync::Arc::new(crate::system::SystemClock),
            ids: std::sync::Arc::new(crate::system::UlidIds::default()),
            sweep_budget: sweep::SWEEP_BUDGET,
            subjects: None,
            resend_for: confirm::RESEND_FOR,
            ring_item: keyring::SIGNING_RING,
        }
    }

    /// The same store, whose key ring is the audit checkpoint key's (N-8, security review
    /// N12): checkpoints and erasure receipts verify against the keys it names, rotations
    /// included.
    #[must_use]
    pub fn for_checkpoint_ring(mut self) -> Self {
        self.ring_item = keyring::CHECKPOINT_RING;
        self
    }

    /// Whether this store's key ring is the checkpoint key's.
    #[must_use]
    pub fn is_checkpoint_ring(&self) -> bool {
        self.ring_item == keyring::CHECKPOINT_RING
    }

    /// The same store with another resend window for the confirm write (tests only: they
    /// lose every answer many times over; deployed, the 5 s of issue 27 hold).
    pub fn with_resend_window(mut self, window: std::time::Duration) -> Self {
        self.resend_for = window;
        self
    }

    /// The same store, sealing the personal fields of every audit record it writes under
    /// their person's key with `keys`.
    pub fn with_subject_keys(
        mut self,
        keys: std::sync::Arc<dyn countersign_domain::ports::SubjectKeys>,
    ) -> Self {
        self.subjects = Some(keys);
        self
    }

    /// The same store with another C-8 sweep budget (tests of an unfinished sweep).
    pub fn with_sweep_budget(mut self, budget: std::time::Duration) -> Self {
        self.sweep_budget = budget;
        self
    }

    /// The same store, stamping the records it writes for a step (L-1) with `clock`'s time
    /// and `ids`' ids.
    pub fn with_system(
        mut self,
        clock: std::sync::Arc<dyn countersign_domain::ports::Clock>,
        ids: std::sync::Arc<dyn countersign_domain::ports::Ids>,
    ) -> Self {
        self.clock = clock;
        self.ids = ids;
        self
    }

    /// A new record's id and time (L-1).
    fn stamp(&self) -> countersign_domain::life::Stamp {
        countersign_domain::life::Stamp {
            id: self.ids.audit_id(),
            at: self.clock.now(),
        }
    }

    /// Builds the SDK client from the shared AWS configuration, optionally counting calls.
    pub fn client(sdk: &aws_config::SdkConfig, calls: Option<&CallLog>) -> Client {
        let mut b = aws_sdk_dynamodb::config::Builder::from(sdk);
        if let Some(c) = calls {
            b = b.interceptor(c.clone());
        }
        Client::from_conf(b.build())
    }

    /// The table name.
    pub fn table(&self) -> &str {
        &self.table
    }

    fn update(
        &self,
        key: Item,
        expr: String,
        condition: &str,
        vals: HashMap<String, AttributeValue>,
    ) -> Result<TransactWriteItem, StoreError> {
        let names = names(&[&expr, condition]);
        let u = build(
            Update::builder()
                .table_name(&self.table)
                .set_key(Some(key))
                .update_expression(expr)
                .condition_expression(condition)
                .set_expression_attribute_names(names)
                .set_expression_attribute_values(Some(vals))
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .build(),
        )?;
        Ok(TransactWriteItem::builder().update(u).build())
    }

    fn put_new(&self, item: Item) -> Result<TransactWriteItem, StoreError> {
        let p = build(
            Put::builder()
                .table_name(&self.table)
                .set_item(Some(item))
                .condition_expression("attribute_not_exists(pk)")
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .build(),
        )?;
        Ok(TransactWriteItem::builder().put(p).build())
    }

    /// A transaction's unconditional put of `item` (the transaction's other conditions
    /// decide).
    fn put(&self, item: Item) -> Result<TransactWriteItem, StoreError> {
        let p = build(
            Put::builder()
                .table_name(&self.table)
                .set_item(Some(item))
                .build(),
        )?;
        Ok(TransactWriteItem::builder().put(p).build())
    }

    /// A transaction's unconditional delete of `key`'s item.
    fn delete(&self, key: Item) -> Result<TransactWriteItem, StoreError> {
        self.delete_where(key, None, None)
    }

    /// A transaction's delete of `key`'s item, on `condition` (if any) whose placeholders
    /// `vals` fills (if it has any: DynamoDB refuses an empty value map).
    fn delete_where(
        &self,
        key: Item,
        condition: Option<&str>,
        vals: Option<HashMap<String, AttributeValue>>,
    ) -> Result<TransactWriteItem, StoreError> {
        let d = build(
            Delete::builder()
                .table_name(&self.table)
                .set_key(Some(key))
                .set_condition_expression(condition.map(str::to_owned))
                .set_expression_attribute_values(vals)
                .build(),
        )?;
        Ok(TransactWriteItem::builder().delete(d).build())
    }

    /// A check that `key`'s item does not exist.
    fn absent(&self, key: Item) -> Result<TransactWriteItem, StoreError> {
        self.check(key, "attribute_not_exists(pk)")
    }

    /// A check that `key`'s item exists.
    fn present(&self, key: Item) -> Result<TransactWriteItem, StoreError> {
        self.check(key, "attribute_exists(pk)")
    }

    fn check(&self, key: Item, condition: &str) -> Result<TransactWriteItem, StoreError> {
        self.check_where(key, condition, None)
    }

    /// A transaction's check of `condition` on `key`'s item, whose placeholders `vals`
    /// fills (if it has any: DynamoDB refuses an empty value map).
    fn check_where(
        &self,
        key: Item,
        condition: &str,
        vals: Option<HashMap<String, AttributeValue>>,
    ) -> Result<TransactWriteItem, StoreError> {
        let c = build(
            aws_sdk_dynamodb::types::ConditionCheck::builder()
                .table_name(&self.table)
                .set_key(Some(key))
                .condition_expression(condition)
                .set_expression_attribute_values(vals)
                .build(),
        )?;
        Ok(TransactWriteItem::builder().condition_check(c).build())
    }

    /// Every item a query returns, following `LastEvaluatedKey` across pages.
    async fn query_all(
        &self,
        query: aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
    ) -> Result<Vec<Item>, StoreError> {
        query
            .into_paginator()
            .items()
            .send()
            .try_collect()
            .await
            .map_err(unavailable)
    }

    /// The items of the first page of `query`, at most `limit` of them.
    async fn first_page(
        &self,
        query: aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
        limit: usize,
    ) -> Result<Vec<Item>, StoreError> {
        let page = query
            .limit(page_limit(limit))
            .send()
            .await
            .map_err(unavailable)?;
        Ok(page.items.unwrap_or_default())
    }

    /// A consistent Query of the table (every reader of index items needs one: a
    /// registration or record written a moment before must be seen).
    fn consistent_query(&self) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        self.client
            .query()
            .table_name(&self.table)
            .consistent_read(true)
    }

    /// Every item of partition `pk` whose sort key starts with `prefix`: one consistent
    /// Query, followed across pages.
    async fn partition_items(&self, pk: String, prefix: &str) -> Result<Vec<Item>, StoreError> {
        self.query_all(self.prefix_query(pk, prefix)).await
    }

    /// A consistent Query of the items of partition `pk` whose sort key starts with
    /// `prefix`.
    fn prefix_query(
        &self,
        pk: impl Into<String>,
        prefix: &str,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        self.consistent_query()
            .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
            .set_expression_attribute_values(Some(values([(":pk", s(pk)), (":prefix", s(prefix))])))
    }

    /// One page of at most `limit` items of partition `pk` whose sort key starts with
    /// `prefix`, after sort key `after`; with the sort key to go on after, while there
    /// are more.
    async fn prefix_page(
        &self,
        pk: String,
        prefix: &str,
        after: Option<String>,
        limit: usize,
    ) -> Result<(Vec<Item>, Option<String>), StoreError> {
        let start = after.map(|sk| key(pk.clone(), sk));
        let page = self
            .prefix_query(pk, prefix)
            .limit(page_limit(limit))
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(unavailable)?;
        let next = page
            .last_evaluated_key
            .and_then(|k| opt_s(&k, SK).map(str::to_owned));
        Ok((page.items.unwrap_or_default(), next))
    }

    /// Every item of the tenant's own partition whose sort key starts with `prefix`.
    async fn tenant_items(&self, tenant: &TenantId, prefix: &str) -> Result<Vec<Item>, StoreError> {
        self.partition_items(tenant_pk(tenant), prefix).await
    }

    /// Every index item of the tenant whose sort key starts with `prefix`, from the
    /// tenant's own partition and each of its shards (decision 0043), all at once.
    async fn index_items(&self, tenant: &TenantId, prefix: &str) -> Result<Vec<Item>, StoreError> {
        let queries = index_pks(tenant)
            .into_iter()
            .map(|pk| self.partition_items(pk, prefix));
        let pages = futures::future::try_join_all(queries).await?;
        Ok(pages.into_iter().flatten().collect())
    }

    /// Puts `item` when no item has its key; `false` when one has (nothing written).
    async fn put_if_new(&self, item: Item) -> Result<bool, StoreError> {
        let put = (self.client.put_item())
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)");
        Self::put_if(put).await
    }

    /// Sends a conditional put; `false` when its condition failed (nothing written).
    async fn put_if(
        put: aws_sdk_dynamodb::operation::put_item::builders::PutItemFluentBuilder,
    ) -> Result<bool, StoreError> {
        written(put.send().await)
    }

    /// Puts `item`, whose key is new (a fresh random id): an existing item is a failure.
    async fn put_fresh(&self, item: Item) -> Result<(), StoreError> {
        if self.put_if_new(item).await? {
            Ok(())
        } else {
            Err(StoreError::Unavailable(
                "an item with this new key exists".into(),
            ))
        }
    }

    /// An unconditional put of `item`.
    async fn put_plain(&self, item: Item) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    /// One item by key, read consistently.
    async fn get(
        &self,
        pk: impl Into<String>,
        sk: impl Into<String>,
    ) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key(pk, sk)))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable)?;
        Ok(out.item)
    }

    /// One item by key, read consistently, as `from` reads it.
    async fn get_as<T>(
        &self,
        pk: impl Into<String>,
        sk: impl Into<String>,
        from: impl FnOnce(&Item) -> Result<T, StoreError>,
    ) -> Result<Option<T>, StoreError> {
        self.get(pk, sk).await?.as_ref().map(from).transpose()
    }
}
