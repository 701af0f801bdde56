//! B-4: the store on DynamoDB, for the bridge as a Lambda (several instances at once, so
//! the invariants cannot lean on one process's lock or one file's transactions).
//!
//! One table, a string hash key `pk`, three kinds of item:
//! - `A#["<tenant>","<action>"]`: an action, one attribute per field;
//! - `P#["<tenant>","<person>","<conversation>"]`: the conversation's pending pointer
//!   (`action_id`), the latest action prepared there;
//! - `J#<jti>`: a consumed proof (`ttl`: DynamoDB deletes it after the proof's expiry).
//!
//! Keys are JSON arrays, so no id can forge another's key with a separator.
//!
//! One pending per conversation: a preparation puts the new action, moves the pointer on
//! condition that it still points where it was read (or does not exist yet), and cancels
//! the previous action on condition that it is still pending — one transaction; a lost
//! race is read again and retried. Every pending action is the one its pointer names, so
//! two cannot be pending at once. A claim puts the `jti` on condition that it is new and
//! moves the action out of pending on condition that it is pending — one transaction.
//!
//! Lost answers: the SDK gives each `TransactWriteItems` a fresh client request token and
//! resends a request whose answer was lost under the same one, so DynamoDB answers the
//! resend as the first instead of failing it on its own condition. The token is never
//! derived from the request's content: two bridge instances claiming the same proof
//! would then be told they both succeeded.

use super::{Action, Claim, Store, StoreError, status_parse, status_str};
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, CancellationReason, KeySchemaElement,
    KeyType, Put, ScalarAttributeType, TransactWriteItem, Update,
};
use countersign_provider_kit::ActionStatus;
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Attempts at a preparation that keeps losing races before it answers an error.
const ATTEMPTS: u32 = 8;
/// How long a consumed `jti` is kept past the proof's expiry (clock skew).
const JTI_GRACE: i64 = 120;

type Item = HashMap<String, AttributeValue>;

/// The bridge's actions in one DynamoDB table.
#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
}

fn err(e: impl std::fmt::Display) -> StoreError {
    StoreError(e.to_string())
}

/// An SDK failure, with its cause's details.
fn sdk_err<E: std::error::Error>(e: E) -> StoreError {
    err(aws_sdk_dynamodb::error::DisplayErrorContext(e))
}

/// A conditional write's answer: `true` written, `false` its condition failed (nothing
/// written); any other failure is an error.
fn written<T, E>(sent: Result<T, SdkError<E>>) -> Result<bool, StoreError>
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    match sent {
        Ok(_) => Ok(true),
        Err(e)
            if e.as_service_error().and_then(ProvideErrorMetadata::code)
                == Some("ConditionalCheckFailedException") =>
        {
            Ok(false)
        }
        Err(e) => Err(sdk_err(e)),
    }
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn n(v: i64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn action_pk(tenant: &str, action: &str) -> String {
    format!("A#{}", Value::from(vec![tenant, action]))
}

fn pending_pk(tenant: &str, person: &str, conversation: &str) -> String {
    format!("P#{}", Value::from(vec![tenant, person, conversation]))
}

fn jti_pk(jti: &str) -> String {
    format!("J#{jti}")
}

fn item_of(a: &Action) -> Item {
    let mut item: Item = [
        ("pk", s(action_pk(&a.tenant_id, &a.action_id))),
        ("tenant_id", s(&a.tenant_id)),
        ("action_id", s(&a.action_id)),
        ("person", s(&a.person)),
        ("conversation_id", s(&a.conversation_id)),
        ("operation", s(&a.operation)),
        (
            "arguments",
            s(Value::Object(a.arguments.clone()).to_string()),
        ),
        ("arguments_hash", s(&a.arguments_hash)),
        ("summary", s(&a.summary)),
        ("summary_hash", s(&a.summary_hash)),
        ("language", s(&a.language)),
        ("config_digest", s(&a.config_digest)),
        ("status", s(status_str(a.status))),
        ("prepared_at", n(a.prepared_at)),
        ("expires_at", n(a.expires_at)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    if let Some(m) = &a.message {
        item.insert("message".into(), s(m));
    }
    item
}

fn action_of(item: &Item) -> Result<Action, StoreError> {
    let text = |k: &str| {
        item.get(k)
            .and_then(|v| v.as_s().ok())
            .cloned()
            .ok_or_else(|| err(format!("an action item lacks `{k}`")))
    };
    let number = |k: &str| {
        item.get(k)
            .and_then(|v| v.as_n().ok())
            .and_then(|v| v.parse::<i64>().ok())
            .ok_or_else(|| err(format!("an action item lacks `{k}`")))
    };
    let arguments: Map<String, Value> = serde_json::from_str(&text("arguments")?).map_err(err)?;
    let status = status_parse(&text("status")?).ok_or_else(|| err("an unknown status"))?;
    Ok(Action {
        action_id: text("action_id")?,
        tenant_id: text("tenant_id")?,
        person: text("person")?,
        conversation_id: text("conversation_id")?,
        operation: text("operation")?,
        arguments,
        arguments_hash: text("arguments_hash")?,
        summary: text("summary")?,
        summary_hash: text("summary_hash")?,
        language: text("language")?,
        config_digest: text("config_digest")?,
        status,
        message: item.get("message").and_then(|v| v.as_s().ok()).cloned(),
        prepared_at: number("prepared_at")?,
        expires_at: number("expires_at")?,
    })
}

/// Whether a cancelled transaction's `i`-th item failed its condition.
fn failed(reasons: &[CancellationReason], i: usize) -> bool {
    reasons.get(i).and_then(CancellationReason::code) == Some("ConditionalCheckFailed")
}

enum Tx {
    Committed,
    Cancelled(Vec<CancellationReason>),
}

impl DynamoStore {
    /// The store on `table` through `client`.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    /// The store on `table`, with the SDK configured from the environment (the Lambda's
    /// role, `AWS_REGION`, `AWS_ENDPOINT_URL` for a local emulator).
    pub async fn from_env(table: impl Into<String>) -> Self {
        let sdk = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        Self::new(Client::new(&sdk), table)
    }

    /// Creates the table (on demand, `pk` as its key, `ttl` expiry) — for a local run and
    /// the tests; a deployment's table comes from the SAM template.
    pub async fn create_table(&self) -> Result<(), StoreError> {
        let key = KeySchemaElement::builder()
            .attribute_name("pk")
            .key_type(KeyType::Hash)
            .build()
            .map_err(err)?;
        let attr = AttributeDefinition::builder()
            .attribute_name("pk")
            .attribute_type(ScalarAttributeType::S)
            .build()
            .map_err(err)?;
        self.client
            .create_table()
            .table_name(&self.table)
            .key_schema(key)
            .attribute_definitions(attr)
            .billing_mode(BillingMode::PayPerRequest)
            .send()
            .await
            .map_err(sdk_err)?;
        Ok(())
    }

    async fn read(&self, pk: String) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("pk", s(pk))
            .consistent_read(true)
            .send()
            .await
            .map_err(sdk_err)?;
        Ok(out.item)
    }

    async fn transact(&self, items: Vec<TransactWriteItem>) -> Result<Tx, StoreError> {
        let sent = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .send()
            .await;
        match sent {
            Ok(_) => Ok(Tx::Committed),
            Err(SdkError::ServiceError(se)) => match se.into_err() {
                TransactWriteItemsError::TransactionCanceledException(c) => {
                    Ok(Tx::Cancelled(c.cancellation_reasons().to_vec()))
                }
                other => Err(sdk_err(other)),
            },
            Err(e) => Err(sdk_err(e)),
        }
    }

    fn put(&self, item: Item, condition: &str) -> Result<TransactWriteItem, StoreError> {
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(condition);
        Ok(TransactWriteItem::builder()
            .put(put.build().map_err(err)?)
            .build())
    }

    /// Moves an action from pending to `to`, on condition that it is pending.
    fn leave_pending(
        &self,
        tenant: &str,
        action: &str,
        to: ActionStatus,
    ) -> Result<TransactWriteItem, StoreError> {
        let update = Update::builder()
            .table_name(&self.table)
            .key("pk", s(action_pk(tenant, action)))
            .update_expression("SET #s = :to")
            .condition_expression("#s = :pending")
            .expression_attribute_names("#s", "status")
            .expression_attribute_values(":to", s(status_str(to)))
            .expression_attribute_values(
                ":pending",
                s(status_str(ActionStatus::PendingConfirmation)),
            )
            .build()
            .map_err(err)?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// One attempt at a preparation: `None` when a concurrent one won the race.
    async fn try_prepare(&self, a: &Action) -> Result<Option<Option<String>>, StoreError> {
        let pointer = pending_pk(&a.tenant_id, &a.person, &a.conversation_id);
        let current = self
            .read(pointer.clone())
            .await?
            .and_then(|i| i.get("action_id").and_then(|v| v.as_s().ok()).cloned());
        let previous = match &current {
            Some(id) => self.get(&a.tenant_id, id).await?,
            None => None,
        }
        .filter(|p| p.status == ActionStatus::PendingConfirmation);
        let mut items = vec![self.put(item_of(a), "attribute_not_exists(pk)")?];
        let mut marker: Item = HashMap::new();
        marker.insert("pk".into(), s(pointer));
        marker.insert("action_id".into(), s(&a.action_id));
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(marker));
        let put = match &current {
            Some(id) => put
                .condition_expression("action_id = :was")
                .expression_attribute_values(":was", s(id)),
            None => put.condition_expression("attribute_not_exists(pk)"),
        };
        items.push(
            TransactWriteItem::builder()
                .put(put.build().map_err(err)?)
                .build(),
        );
        if let Some(p) = &previous {
            items.push(self.leave_pending(&a.tenant_id, &p.action_id, ActionStatus::Cancelled)?);
        }
        match self.transact(items).await? {
            Tx::Committed => Ok(Some(previous.map(|p| p.action_id))),
            Tx::Cancelled(reasons) if failed(&reasons, 0) => {
                Err(err(format!("the action id {} exists already", a.action_id)))
            }
            Tx::Cancelled(_) => Ok(None),
        }
    }
}

#[async_trait]
impl Store for DynamoStore {
    async fn prepare(&self, action: &Action) -> Result<Option<String>, StoreError> {
        for attempt in 0..ATTEMPTS {
            if let Some(cancelled) = self.try_prepare(action).await? {
                return Ok(cancelled);
            }
            // Lost a race with another preparation in the conversation: a short, jittered
            // pause, then read the pointer again.
            let jitter = u64::try_from(ulid::Ulid::new().random() % 20).unwrap_or(0);
            tokio::time::sleep(std::time::Duration::from_millis(
                5 * (1 << attempt.min(4)) + jitter,
            ))
            .await;
        }
        Err(err(
            "the conversation's preparations kept colliding; try again",
        ))
    }

    async fn get(&self, tenant_id: &str, action_id: &str) -> Result<Option<Action>, StoreError> {
        match self.read(action_pk(tenant_id, action_id)).await? {
            Some(item) => action_of(&item).map(Some),
            None => Ok(None),
        }
    }

    async fn claim(
        &self,
        tenant_id: &str,
        action_id: &str,
        jti: &str,
        jti_exp: i64,
        now: i64,
    ) -> Result<Claim, StoreError> {
        let Some(action) = self.get(tenant_id, action_id).await? else {
            return Ok(Claim::Missing);
        };
        if action.status != ActionStatus::PendingConfirmation {
            return Ok(Claim::NotPending(action));
        }
        let next = action.claimed_status(now);
        let mut proof: Item = HashMap::new();
        proof.insert("pk".into(), s(jti_pk(jti)));
        proof.insert("ttl".into(), n(jti_exp + JTI_GRACE));
        let items = vec![
            self.put(proof, "attribute_not_exists(pk)")?,
            self.leave_pending(tenant_id, action_id, next)?,
        ];
        match self.transact(items).await? {
            Tx::Committed => Ok(action.into_claim(next)),
            Tx::Cancelled(reasons) if failed(&reasons, 0) => Ok(Claim::Replayed),
            // Moved out of pending by someone else between the read and the claim.
            Tx::Cancelled(_) => match self.get(tenant_id, action_id).await? {
                Some(a) => Ok(Claim::NotPending(a)),
                None => Ok(Claim::Missing),
            },
        }
    }

    async fn finish(
        &self,
        tenant_id: &str,
        action_id: &str,
        status: ActionStatus,
        message: Option<&str>,
    ) -> Result<bool, StoreError> {
        let mut update = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(action_pk(tenant_id, action_id)))
            .condition_expression("#s = :executing")
            .expression_attribute_names("#s", "status")
            .expression_attribute_values(":executing", s(status_str(ActionStatus::Executing)))
            .expression_attribute_values(":to", s(status_str(status)));
        update = match message {
            Some(m) => update
                .update_expression("SET #s = :to, message = :m")
                .expression_attribute_values(":m", s(m)),
            None => update.update_expression("SET #s = :to REMOVE message"),
        };
        written(update.send().await)
    }

    async fn mark_in_doubt(
        &self,
        tenant_id: &str,
        action_id: &str,
        message: &str,
    ) -> Result<(), StoreError> {
        let sent = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("pk", s(action_pk(tenant_id, action_id)))
            .update_expression("SET message = :m")
            .condition_expression("#s = :executing")
            .expression_attribute_names("#s", "status")
            .expression_attribute_values(":executing", s(status_str(ActionStatus::Executing)))
            .expression_attribute_values(":m", s(message))
            .send()
            .await;
        // Not written: no longer executing, so nothing is in doubt.
        written(sent)?;
        Ok(())
    }

    async fn in_doubt(&self) -> Result<Vec<Action>, StoreError> {
        // A scan: `settle check` is an operator's occasional command, and a bridge's
        // table holds its actions only (no index kept for this alone).
        let mut items = self
            .client
            .scan()
            .table_name(&self.table)
            .filter_expression("begins_with(pk, :a) AND #s = :executing")
            .expression_attribute_names("#s", "status")
            .expression_attribute_values(":a", s("A#"))
            .expression_attribute_values(":executing", s(status_str(ActionStatus::Executing)))
            .consistent_read(true)
            .into_paginator()
            .items()
            .send();
        let mut found = Vec::new();
        while let Some(item) = items.try_next().await.map_err(sdk_err)? {
            found.push(action_of(&item)?);
        }
        found.sort_by_key(|a| a.prepared_at);
        Ok(found)
    }
}
