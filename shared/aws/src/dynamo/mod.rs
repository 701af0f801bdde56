//! The DynamoDB adapter of the conversation/proposal store and the tenant store.
//!
//! All state of one conversation lives under one partition key; one `Query` reads the
//! case (with its active-proposal slot) and the non-terminal proposal (P-2). Moving a
//! proposal is one `TransactWriteItems` whose conditions on the slot and on the proposal's
//! state *are* the lock: of any number of concurrent confirmations, at most one commits.

mod chain;
mod confirm;
mod items;
mod keyring;
mod leases;
mod limits;
mod tenants;

use crate::calls::CallLog;
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, CancellationReason, ConditionCheck, Delete, Put,
    ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update,
};
use countersign_domain::conversation::{Case, CaseStatus, Message};
use countersign_domain::ids::{ActionId, CaseId, MessageId, TenantId};
use countersign_domain::ports::{
    ConfirmWrite, ConversationStore, ConversationView, CreateProposalOutcome, NewMessage,
    SettleByAdmin, StoreError, TransitionOutcome, UnsettledAction,
};
use countersign_domain::proposal::{Proposal, ProposalState, is_legal};
use countersign_domain::texts::Language;
use countersign_domain::time::Timestamp;
use items::*;
pub use keyring::StoredRing;
use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How many times a write is retried after losing an optimistic race or a DynamoDB
/// `TransactionConflict`. Each retry re-reads, so progress is guaranteed under contention
/// (one writer wins every round).
const MAX_ATTEMPTS: u32 = 64;

/// The DynamoDB store. Cheap to clone (the SDK client is an `Arc`).
#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
    retention_seconds: Option<i64>,
    /// Audit chain heads last seen (a hint; see `chain`).
    heads: std::sync::Arc<std::sync::Mutex<HashMap<String, countersign_domain::audit_chain::Head>>>,
}

fn unavailable<E: std::error::Error + Send + Sync + 'static>(e: E) -> StoreError {
    StoreError::Unavailable(Box::new(e))
}

fn build<T, E: std::error::Error + Send + Sync + 'static>(
    r: Result<T, E>,
) -> Result<T, StoreError> {
    r.map_err(unavailable)
}

/// Seconds since the epoch, now.
fn epoch_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Exponential backoff with full jitter before retrying a lost race, so that contenders
/// spread out instead of colliding again: a random pause in [1, 10·2^attempt] ms, at most
/// 200 ms. (Losing a race on one conversation is rare in production; under a burst
/// this keeps the number of wasted transactions near linear instead of quadratic.)
async fn backoff(attempt: u32) {
    let cap = (10u64 << attempt.min(7)).min(200);
    let ms = u64::try_from(ulid::Ulid::new().random() % u128::from(cap)).unwrap_or(0) + 1;
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

enum Tx {
    Committed,
    Cancelled(Vec<CancellationReason>),
}

/// What became of a sent transaction.
enum Sent {
    /// DynamoDB answered: committed or cancelled.
    Known(Tx),
    /// Certainly not applied.
    Refused(StoreError),
    /// Not applied for want of capacity (throttled): worth sending again.
    Throttled(StoreError),
    /// No answer, or an answer that does not tell: it may or may not have committed.
    Unknown(StoreError),
}

fn code(r: Option<&CancellationReason>) -> &str {
    r.and_then(CancellationReason::code).unwrap_or("None")
}

fn failed(r: Option<&CancellationReason>) -> bool {
    code(r) == "ConditionalCheckFailed"
}

fn any_conflict(reasons: &[CancellationReason]) -> bool {
    reasons.iter().any(|r| {
        matches!(
            r.code(),
            Some("TransactionConflict" | "ThrottlingError" | "ProvisionedThroughputExceeded")
        )
    })
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

fn values<const N: usize>(v: [(&str, AttributeValue); N]) -> HashMap<String, AttributeValue> {
    v.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

impl DynamoStore {
    /// A store on `table`. `retention_days` (P-3) is how long a conversation is kept once
    /// it holds no non-terminal proposal; `None` keeps it forever.
    pub fn new(client: Client, table: impl Into<String>, retention_days: Option<u32>) -> Self {
        Self {
            client,
            table: table.into(),
            retention_seconds: retention_days.map(|d| i64::from(d) * 86_400),
            heads: std::sync::Arc::default(),
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

    fn retention_ttl(&self) -> Option<AttributeValue> {
        self.retention_seconds.map(|r| n(epoch_now() + r))
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

    /// L-1: the record of a proposal's step `event` (`{from, to}` and the ids in
    /// `changes`), by the platform, now.
    fn life(
        &self,
        event: &str,
        changes: serde_json::Value,
    ) -> Result<countersign_domain::ports::AuditEntry, StoreError> {
        let now = Timestamp::from_unix_millis(
            i64::try_from(
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_millis(),
            )
            .unwrap_or(i64::MAX),
        )
        .map_err(|_| corrupt("clock"))?;
        tenants::life_entry(ulid::Ulid::new(), now, "platform", event, changes)
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

    async fn transact(&self, items: Vec<TransactWriteItem>) -> Result<Tx, StoreError> {
        match self.send_tx(items, None).await {
            Sent::Known(tx) => Ok(tx),
            Sent::Refused(e) | Sent::Throttled(e) | Sent::Unknown(e) => Err(e),
        }
    }

    /// Sends one `TransactWriteItems`. `token` is the client request token: the caller
    /// reuses one only to resend the very same items after an outcome that did not prove
    /// "not applied" (DynamoDB answers `IdempotentParameterMismatch` to a token reused
    /// with other parameters). With a token the SDK does not retry: the caller's resend
    /// loop must see every attempt's answer, since a refusal that follows an unknown
    /// outcome proves nothing about the earlier attempt (issue 27).
    async fn send_tx(&self, items: Vec<TransactWriteItem>, token: Option<&str>) -> Sent {
        let request = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .set_client_request_token(token.map(str::to_owned));
        let sent = match token {
            Some(_) => {
                let once = aws_sdk_dynamodb::config::Builder::default()
                    .retry_config(aws_sdk_dynamodb::config::retry::RetryConfig::disabled());
                request.customize().config_override(once).send().await
            }
            None => request.send().await,
        };
        let e = match sent {
            Ok(_) => return Sent::Known(Tx::Committed),
            Err(e) => e,
        };
        match &e {
            SdkError::ServiceError(se) => match se.err() {
                TransactWriteItemsError::TransactionCanceledException(c) => {
                    Sent::Known(Tx::Cancelled(c.cancellation_reasons().to_vec()))
                }
                // Refused for want of capacity, before anything was applied.
                TransactWriteItemsError::ProvisionedThroughputExceededException(_)
                | TransactWriteItemsError::RequestLimitExceeded(_)
                | TransactWriteItemsError::ThrottlingException(_) => {
                    Sent::Throttled(unavailable(e))
                }
                // Refused before anything was applied, as DynamoDB documents them.
                TransactWriteItemsError::IdempotentParameterMismatchException(_)
                | TransactWriteItemsError::ResourceNotFoundException(_) => {
                    Sent::Refused(unavailable(e))
                }
                // `ValidationException` (a 400 the model does not name) is a refusal;
                // `TransactionInProgressException` (the same token still running), an
                // `InternalServerError` or any other 5xx may still commit.
                other => {
                    use aws_sdk_dynamodb::error::ProvideErrorMetadata as _;
                    if other.code() == Some("ValidationException") {
                        Sent::Refused(unavailable(e))
                    } else {
                        Sent::Unknown(unavailable(e))
                    }
                }
            },
            SdkError::ConstructionFailure(_) => Sent::Refused(unavailable(e)),
            // Timeouts, lost connections, unreadable answers: it may have committed.
            _ => Sent::Unknown(unavailable(e)),
        }
    }

    /// Every item a query returns, following `LastEvaluatedKey` across pages.
    async fn query_all(
        &self,
        query: aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
    ) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let page = query
                .clone()
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(unavailable)?;
            items.extend(page.items.unwrap_or_default());
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(items),
            }
        }
    }

    /// Every item of the tenant's partition whose sort key starts with `prefix`: one
    /// consistent Query, followed across pages.
    async fn tenant_items(&self, tenant: &TenantId, prefix: &str) -> Result<Vec<Item>, StoreError> {
        let query = self
            .client
            .query()
            .table_name(&self.table)
            .consistent_read(true)
            .key_condition_expression("pk = :pk AND begins_with(sk, :prefix)")
            .set_expression_attribute_values(Some(values([
                (":pk", s(tenant_pk(tenant))),
                (":prefix", s(prefix)),
            ])));
        self.query_all(query).await
    }

    /// The case item and the conversation's non-terminal proposal items (one Query).
    async fn read_conversation(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<(Option<Item>, Vec<Item>), StoreError> {
        let query = self
            .client
            .query()
            .table_name(&self.table)
            .consistent_read(true)
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
                (":head", s(tenants::CASE_HEAD_SK)),
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
                Some(tenants::CASE_HEAD_SK) => head = chain::head_from(&item),
                _ => proposals.push(item),
            }
        }
        if case_item.is_some() {
            self.remember_head(&chain::ChainRef::case(tenant, case), head);
        }
        Ok((case_item, proposals))
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

    /// The case item alone (with its slot), by a consistent GetItem: what preparation and
    /// closing decide on.
    async fn case_item(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<Option<Item>, StoreError> {
        let item = self.get(conv_pk(tenant, case), CASE_SK).await?;
        Ok(item)
    }

    /// The slot as stored on the case item: (action id, state).
    fn slot(case_item: &Item) -> Option<(String, String)> {
        Some((
            opt_s(case_item, "slot_action")?.to_owned(),
            opt_s(case_item, "slot_state")?.to_owned(),
        ))
    }
}

#[async_trait]
impl ConversationStore for DynamoStore {
    async fn create_case(&self, case: &Case, language: Language) -> Result<(), StoreError> {
        let mut item = case_item(case, language);
        if case.status == CaseStatus::Open
            && let Some(t) = self.retention_ttl()
        {
            item.insert(TTL.into(), t);
        }
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await
            .map_err(unavailable)?;
        Ok(())
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
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(message_item(tenant, message)))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await
            .map_err(unavailable)?;
        Ok(())
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
            let page = self
                .client
                .query()
                .table_name(&self.table)
                // Issue 27: a message stored a moment ago (another tab's, a settlement's
                // notice) is in the page the widget reads now.
                .consistent_read(true)
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
        let page = self
            .client
            .query()
            .table_name(&self.table)
            // Consistent: the model must see the message that was stored milliseconds
            // before this turn began.
            .consistent_read(true)
            .key_condition_expression("pk = :pk AND begins_with(sk, :m)")
            .set_expression_attribute_values(Some(values([
                (":pk", s(conv_pk(tenant, case))),
                (":m", s("M#")),
            ])))
            .scan_index_forward(false)
            .limit(i32::try_from(limit.max(1)).unwrap_or(i32::MAX))
            .send()
            .await
            .map_err(unavailable)?;
        let mut out = page
            .items
            .unwrap_or_default()
            .iter()
            .map(message_from)
            .collect::<Result<Vec<_>, _>>()?;
        out.reverse();
        Ok(out)
    }

    async fn create_proposal(
        &self,
        proposal: &Proposal,
        presentation: &[NewMessage],
    ) -> Result<CreateProposalOutcome, StoreError> {
        // The case item as last seen: from a read first, then from the failed
        // condition's ALL_OLD image, which saves a read per lost race.
        let mut seen_case: Option<Item> = None;
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
                    let reused = [plan.guard_index, plan.proposal_index]
                        .into_iter()
                        .chain(plan.registration_index)
                        .any(|i| failed(reasons.get(i)));
                    if reused {
                        return Ok(CreateProposalOutcome::ActionIdReused);
                    }
                    // C-8: the settings it was prepared with are no longer in force.
                    if plan.fence_index.is_some_and(|i| failed(reasons.get(i))) {
                        return Ok(CreateProposalOutcome::SettingsChanged);
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

    async fn list_unsettled(&self, tenant: &TenantId) -> Result<Vec<UnsettledAction>, StoreError> {
        let mut all = self
            .tenant_items(tenant, UNSETTLED_PREFIX)
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
        let sent = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(
                tenant_pk(tenant),
                format!("{UNSETTLED_PREFIX}{action_id}"),
            )))
            .update_expression("SET last_status = :s, last_status_at = :t")
            .condition_expression("attribute_exists(pk)")
            .set_expression_attribute_values(Some(values([
                (":s", s(answer)),
                (":t", s(at.to_rfc3339())),
            ])))
            .send()
            .await;
        match sent {
            Ok(_) => Ok(()),
            // Settled meanwhile: nothing to note.
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_conditional_check_failed_exception()) =>
            {
                Ok(())
            }
            Err(e) => Err(unavailable(e)),
        }
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
            let (tx, entries) = self.close_tx(tenant, case, seen.as_ref(), seen_state)?;
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

    async fn invalidate_pending(
        &self,
        tenant: &TenantId,
        keep: Option<(u64, &str)>,
        notice: &(dyn for<'c> Fn(&'c CaseId, Language) -> NewMessage + Send + Sync),
    ) -> Result<usize, StoreError> {
        // Consistent: every proposal whose creation committed before this call is here
        // (a proposal created after it was fenced by its own condition on the settings).
        let now = epoch_now();
        let mut cancelled = 0;
        for item in self.tenant_items(tenant, PENDING_PREFIX).await? {
            let r = registration_from(&item)?;
            let current =
                keep.is_some_and(|(v, sv)| r.config_version == v && r.secret_version == sv);
            if current {
                continue;
            }
            if r.expires > now {
                let message = notice(&r.case, r.lang);
                let outcome = self
                    .transition(
                        tenant,
                        &r.case,
                        &r.action,
                        ProposalState::PendingConfirmation,
                        ProposalState::Cancelled,
                        Some(&message),
                    )
                    .await?;
                if outcome == TransitionOutcome::Applied {
                    cancelled += 1;
                }
            }
            // Settled either way: cancelled now, or already past pending.
            self.client
                .delete_item()
                .table_name(&self.table)
                .set_key(Some(key(
                    tenant_pk(tenant),
                    format!("{PENDING_PREFIX}{}", r.action),
                )))
                .send()
                .await
                .map_err(unavailable)?;
        }
        Ok(cancelled)
    }
}

/// the slot as seen, when a new proposal may take it (`Ok`), or the outcome that
/// refuses preparation (`Err`): the case is not open, or an action is unsettled.
#[allow(clippy::type_complexity)]
fn slot_for_preparation(
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
/// L-1: a proposal prepared and presented (one write), by the model for its person.
fn prepared_entry(
    proposal: &Proposal,
) -> Result<countersign_domain::ports::AuditEntry, StoreError> {
    tenants::life_entry(
        ulid::Ulid::new(),
        proposal.prepared_at,
        "model",
        "prepared",
        serde_json::json!({
            "actionId": proposal.action_id.as_str(),
            "userId": proposal.user.as_str(),
            "caseId": proposal.case.as_str(),
            "operation": proposal.operation.as_str(),
            "summaryHash": proposal.summary_hash.as_str(),
            "argumentsHash": proposal.arguments_hash.as_str(),
            "presentedMessageId": proposal.presented.message_id.as_str(),
            "expiresAt": proposal.expires_at.to_rfc3339(),
            "to": ProposalState::PendingConfirmation.as_str(),
        }),
    )
}

struct ProposalTx {
    items: Vec<TransactWriteItem>,
    /// L-1 records, appended to the conversation's chain (L-2).
    entries: Vec<countersign_domain::ports::AuditEntry>,
    superseded: Option<ActionId>,
    proposal_index: usize,
    guard_index: usize,
    registration_index: Option<usize>,
    fence_index: Option<usize>,
}

impl DynamoStore {
    /// The slot condition on the case item: as seen (the optimistic lock), or empty.
    fn slot_condition(
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
    fn end_pending_update(
        &self,
        pk: &str,
        action: &ActionId,
        to: ProposalState,
    ) -> Result<TransactWriteItem, StoreError> {
        let mut vals = values([
            (":pending", s(ProposalState::PendingConfirmation.as_str())),
            (":to", s(to.as_str())),
        ]);
        let expr = match self.retention_ttl() {
            Some(t) => {
                vals.insert(":ttl".into(), t);
                "SET #state = :to, #ttl = :ttl"
            }
            None => "SET #state = :to",
        };
        self.update(
            key(pk, prop_sk(action)),
            expr.to_owned(),
            "#state = :pending",
            vals,
        )
    }

    /// A-14 … A-17 in one transaction: the slot taken (conditional on what was seen),
    /// a pending predecessor superseded, the proposal and its tenant-wide id guard put
    /// new, the presentation messages, and (C-8) the proposal's registration with a
    /// condition that the tenant's action settings are still the ones it was prepared
    /// with.
    fn proposal_tx(
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
        // A held conversation never expires (P-3).
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
        let proposal_index = items.len();
        items.push(self.put_new(proposal_item(proposal))?);
        let guard_index = items.len();
        let mut guard = key(guard_pk(&proposal.tenant, &proposal.action_id), "ACTION");
        guard.insert("case_id".into(), s(proposal.case.as_str()));
        guard.insert("created_at".into(), s(proposal.prepared_at.to_rfc3339()));
        items.push(self.put_new(guard)?);
        for m in presentation {
            items.push(self.put_new(message_item(&proposal.tenant, m))?);
        }
        let (mut registration_index, mut fence_index) = (None, None);
        if let Some(sv) = &proposal.secret_version {
            registration_index = Some(items.len());
            items.push(self.put_new(registration_item(proposal, sv, lang))?);
            fence_index = Some(items.len());
            items.push(self.settings_fence(&proposal.tenant, proposal.config_version, sv)?);
        }
        // L-1: prepared and presented (one write), and the predecessor's end.
        let mut entries = vec![prepared_entry(proposal)?];
        if let Some(old) = &superseded {
            entries.push(self.life(
                ProposalState::Superseded.as_str(),
                serde_json::json!({
                    "actionId": old.as_str(),
                    "caseId": proposal.case.as_str(),
                    "from": ProposalState::PendingConfirmation.as_str(),
                    "to": ProposalState::Superseded.as_str(),
                    "by": proposal.action_id.as_str(),
                }),
            )?);
        }
        Ok(ProposalTx {
            items,
            entries,
            superseded,
            proposal_index,
            guard_index,
            registration_index,
            fence_index,
        })
    }

    /// C-8 at preparation: the tenant's action settings are still `(version,
    /// secret_version)`. This condition is on the tenant's one configuration item, so it
    /// is kept off the confirm path (where it would make every confirmation of a tenant
    /// conflict with every other); preparations are far rarer.
    fn settings_fence(
        &self,
        tenant: &TenantId,
        version: u64,
        secret_version: &str,
    ) -> Result<TransactWriteItem, StoreError> {
        let check = build(
            ConditionCheck::builder()
                .table_name(&self.table)
                .set_key(Some(key(tenant_pk(tenant), tenants::MCP_SK)))
                .condition_expression(
                    "secret_version = :sv AND (actions_version = :v OR \
                     (attribute_not_exists(actions_version) AND version = :v))",
                )
                .expression_attribute_values(":v", n(version))
                .expression_attribute_values(":sv", s(secret_version))
                .build(),
        )?;
        Ok(TransactWriteItem::builder().condition_check(check).build())
    }

    /// A-26 in one transaction: the case closed (conditional on the slot as seen), with
    /// its retention unless an action holds it, and a pending proposal cancelled with it.
    fn close_tx(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        seen: Option<&(String, String)>,
        seen_state: Option<ProposalState>,
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
        let held = seen_state
            .is_some_and(|st| st.blocks_purge() && st != ProposalState::PendingConfirmation);
        if pending.is_some() {
            vals.insert(":cancelled".into(), s(ProposalState::Cancelled.as_str()));
            expr.push_str(", slot_state = :cancelled");
        }
        if let (Some(t), false) = (self.retention_ttl(), held) {
            vals.insert(":ttl".into(), t);
            expr.push_str(", #ttl = :ttl");
        }
        let mut tx = vec![self.update(key(pk.as_str(), CASE_SK), expr, condition, vals)?];
        let mut entries = Vec::new();
        if let Some(old) = &pending {
            tx.push(self.end_pending_update(&pk, old, ProposalState::Cancelled)?);
            entries.push(self.life(
                ProposalState::Cancelled.as_str(),
                serde_json::json!({
                    "actionId": old.as_str(),
                    "caseId": case.as_str(),
                    "from": ProposalState::PendingConfirmation.as_str(),
                    "to": ProposalState::Cancelled.as_str(),
                    "reason": "conversation closed",
                }),
            )?);
        }
        Ok((tx, entries))
    }
}

impl DynamoStore {
    /// The raw TTL of a conversation's case item and of a proposal (tests of P-3).
    pub async fn retention_of(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        action: Option<&ActionId>,
    ) -> Result<Option<i64>, StoreError> {
        let sk = action.map_or_else(|| CASE_SK.to_owned(), prop_sk);
        let item = self.get(conv_pk(tenant, case), sk).await?;
        Ok(item.and_then(|i| get_n::<i64>(&i, TTL).ok()))
    }

    /// A proposal by id, whatever its state (history included).
    pub async fn proposal(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        action: &ActionId,
    ) -> Result<Option<Proposal>, StoreError> {
        let item = self.get(conv_pk(tenant, case), prop_sk(action)).await?;
        item.as_ref().map(proposal_from).transpose()
    }
}

/// One proposal move, for [`DynamoStore::transition_with`].
struct Step<'a> {
    tenant: &'a TenantId,
    case: &'a CaseId,
    action_id: &'a ActionId,
    from: ProposalState,
    to: ProposalState,
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
    let mut i = key(tenant_pk(tenant), format!("{UNSETTLED_PREFIX}{action_id}"));
    i.insert("case_id".into(), s(case.as_str()));
    i.insert("action_id".into(), s(action_id.as_str()));
    i.insert("since".into(), s(since.to_rfc3339()));
    i
}

fn unsettled_from(i: &Item) -> Result<UnsettledAction, StoreError> {
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
    /// [`ConversationStore::transition`], with one more item in the same write (the
    /// administrator's audit record). Settling an unsettled action also removes it from
    /// the tenant's index, in the same write.
    /// L-1: the record of a step `from → to`: an administrator's settlement record is
    /// itself the step's record; otherwise one by the platform.
    fn step_entry(
        &self,
        step: &Step<'_>,
        settlement: Option<&countersign_domain::ports::AuditEntry>,
    ) -> Result<countersign_domain::ports::AuditEntry, StoreError> {
        if let Some(e) = settlement {
            return Ok(e.clone());
        }
        self.life(
            step.to.as_str(),
            serde_json::json!({
                "actionId": step.action_id.as_str(),
                "caseId": step.case.as_str(),
                "from": step.from.as_str(),
                "to": step.to.as_str(),
            }),
        )
    }

    async fn transition_with(
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
        let ttl = if to.is_terminal() {
            self.retention_ttl()
        } else {
            None
        };
        for attempt in 0..MAX_ATTEMPTS {
            let mut case_vals = values([
                (":aid", s(action_id.as_str())),
                (":from", s(from.as_str())),
                (":to", s(to.as_str())),
            ]);
            let mut prop_vals = values([(":from", s(from.as_str())), (":to", s(to.as_str()))]);
            let mut case_expr = "SET slot_state = :to".to_owned();
            let mut prop_expr = "SET #state = :to".to_owned();
            if let Some(t) = &ttl {
                // P-3: once the slot is terminal, the conversation gets its retention.
                case_vals.insert(":ttl".into(), t.clone());
                prop_vals.insert(":ttl".into(), t.clone());
                case_expr.push_str(", #ttl = :ttl");
                prop_expr.push_str(", #ttl = :ttl");
            }
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
                tx.push(self.delete_unsettled(tenant, action_id)?);
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

    /// Writes an action's entry in the tenant's unsettled index (unconditionally: the
    /// transaction's other conditions decide).
    fn put_unsettled(&self, item: Item) -> Result<TransactWriteItem, StoreError> {
        let p = build(
            Put::builder()
                .table_name(&self.table)
                .set_item(Some(item))
                .build(),
        )?;
        Ok(TransactWriteItem::builder().put(p).build())
    }

    /// Removes an action from the tenant's unsettled index (nothing if absent).
    fn delete_unsettled(
        &self,
        tenant: &TenantId,
        action_id: &ActionId,
    ) -> Result<TransactWriteItem, StoreError> {
        let d = build(
            Delete::builder()
                .table_name(&self.table)
                .set_key(Some(key(
                    tenant_pk(tenant),
                    format!("{UNSETTLED_PREFIX}{action_id}"),
                )))
                .build(),
        )?;
        Ok(TransactWriteItem::builder().delete(d).build())
    }
}
