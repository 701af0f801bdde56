//! N-3 (decision 0062): the per-person index and the erasure jobs on DynamoDB.
//!
//! | item | pk | sk |
//! |---|---|---|
//! | a person's conversation | `PERSON#<tenant>#<digest of the person>` | `CASE#<case>` |
//! | an audit record naming the person in clear (before decision 0053) | same | `LEGACY#<auditId>` |
//! | the backfill's state | `BACKFILL#person-index` | `STATE` |
//! | an erasure job | `ERASUREJOB#<tenant>` | `<jobId>` |
//! | the job's place in the queue | `JOBQUEUE#erasure` | `<tenant>#<digest of the person>` |
//!
//! The backfill also moves the unsettled entries written before the shards into their
//! shards (N-8).
//!
//! The person's id is never a key (a digest is); their conversation's entry goes with the
//! conversation (the purge deletes it), the rest once they are erased.

use super::items::*;
use super::{DynamoStore, Tx, failed, page_limit, unavailable, values};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, Select, TransactWriteItem, Update};
use countersign_domain::audit_chain::PERSONAL_FIELDS;
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::{CaseId, TenantId, UserId};
use countersign_domain::ports::{
    Enqueued, ErasureJob, ErasureJobs, JobStatus, PersonIndex, PersonPage, StoreError,
};
use countersign_domain::time::Timestamp;

const CASE_ENTRY: &str = "CASE#";
const LEGACY_ENTRY: &str = "LEGACY#";
const BACKFILL_PK: &str = "BACKFILL#person-index";
const QUEUE_PK: &str = "JOBQUEUE#erasure";
/// How long a done job (its outcome and receipt) is kept for the tenant to fetch.
const DONE_KEPT_SECS: i64 = 30 * 86_400;
/// Items a backfill page scans.
const BACKFILL_PAGE: i32 = 1000;

pub(crate) fn digest(tenant: &TenantId, user: &UserId) -> Sha256Hex {
    Sha256Hex::digest(format!("countersign person\n{tenant}\n{user}"))
}

/// The person's index partition.
pub(crate) fn person_pk(tenant: &TenantId, user: &UserId) -> String {
    format!("PERSON#{tenant}#{}", digest(tenant, user))
}

/// A conversation's entry in its person's index (written with the conversation, deleted
/// with it).
pub(crate) fn person_case_key(tenant: &TenantId, user: &UserId, case: &CaseId) -> Item {
    key(person_pk(tenant, user), format!("{CASE_ENTRY}{case}"))
}

fn job_pk(tenant: &TenantId) -> String {
    format!("ERASUREJOB#{tenant}")
}

fn queue_sk(tenant: &TenantId, user: &UserId) -> String {
    format!("{tenant}#{}", digest(tenant, user))
}

fn job_item(job: &ErasureJob) -> Item {
    let mut i = key(job_pk(&job.tenant), job.id.clone());
    i.insert("tenant_id".into(), s(job.tenant.as_str()));
    i.insert("person".into(), s(job.person.as_str()));
    i.insert("requested_by".into(), s(job.requested_by.as_str()));
    i.insert("requested_at".into(), s(job.requested_at.to_rfc3339()));
    i.insert("status".into(), s(job.status.as_str()));
    i.insert("purged".into(), n(job.purged));
    i.insert("items".into(), n(job.items));
    i.insert("runs".into(), n(job.runs));
    i
}

fn job_from(i: &Item) -> Result<ErasureJob, StoreError> {
    let tenant = TenantId::parse(get_s(i, "tenant_id")?).map_err(|_| corrupt("tenant_id"))?;
    // A done job no longer keeps the person's id apart (the outcome names them).
    let person =
        UserId::parse(opt_s(i, "person").unwrap_or("erased")).map_err(|_| corrupt("person"))?;
    Ok(ErasureJob {
        id: get_s(i, SK)?.to_owned(),
        tenant,
        person,
        requested_by: get_s(i, "requested_by")?.to_owned(),
        requested_at: Timestamp::parse_utc(get_s(i, "requested_at")?)
            .map_err(|_| corrupt("requested_at"))?,
        status: JobStatus::parse(get_s(i, "status")?).ok_or_else(|| corrupt("status"))?,
        purged: get_n(i, "purged")?,
        items: get_n(i, "items")?,
        runs: get_n(i, "runs")?,
        outcome: opt_s(i, "outcome").map(str::to_owned),
        receipt: opt_s(i, "receipt").map(str::to_owned),
    })
}

impl DynamoStore {
    /// The person's entries whose sort key starts with `prefix`, as keys.
    async fn person_entries(
        &self,
        tenant: &TenantId,
        user: &UserId,
        prefix: &str,
    ) -> Result<Vec<Item>, StoreError> {
        let query = self
            .prefix_query(person_pk(tenant, user), prefix)
            .projection_expression("pk, sk");
        self.query_all(query).await
    }

    /// The index entries one scanned item calls for: its person's conversation entry (a
    /// case item), or an entry per person a legacy audit record names in clear.
    fn entries_for(item: &Item) -> Vec<Item> {
        let (Some(pk), Some(sk)) = (opt_s(item, PK), opt_s(item, SK)) else {
            return Vec::new();
        };
        if sk == CASE_SK {
            let parsed = (
                opt_s(item, "tenant").and_then(|t| TenantId::parse(t).ok()),
                opt_s(item, "user").and_then(|u| UserId::parse(u).ok()),
                opt_s(item, "case_id").and_then(|c| CaseId::parse(c).ok()),
            );
            return match parsed {
                (Some(t), Some(u), Some(c)) => vec![person_case_key(&t, &u, &c)],
                _ => Vec::new(),
            };
        }
        let Some(id) = sk.strip_prefix(AUDIT_PREFIX) else {
            return Vec::new();
        };
        let tenant = pk
            .strip_prefix("TENANT#")
            .and_then(|rest| rest.split('#').next())
            .and_then(|t| TenantId::parse(t).ok());
        let changes =
            opt_s(item, "changes").and_then(|c| serde_json::from_str::<serde_json::Value>(c).ok());
        let (Some(tenant), Some(changes)) = (tenant, changes) else {
            return Vec::new();
        };
        PERSONAL_FIELDS
            .iter()
            .filter_map(|f| changes.get(*f).and_then(|v| v.as_str()))
            .filter_map(|u| UserId::parse(u).ok())
            .map(|u| key(person_pk(&tenant, &u), format!("{LEGACY_ENTRY}{id}")))
            .collect()
    }

    /// N-8 (confirm-path review N12): an unsettled entry written before the shards
    /// (decision 0043), in the tenant's own partition, moves into its shard, so that no
    /// settlement need write the tenant's partition again.
    async fn move_legacy_unsettled(&self, item: &Item) -> Result<(), StoreError> {
        let (Some(pk), Some(sk)) = (opt_s(item, PK), opt_s(item, SK)) else {
            return Ok(());
        };
        let Some(action) = sk.strip_prefix(super::transitions::UNSETTLED_PREFIX) else {
            return Ok(());
        };
        let Some(tenant) = pk.strip_prefix("TENANT#").filter(|t| !t.contains('#')) else {
            return Ok(());
        };
        let tenant = TenantId::parse(tenant).map_err(|_| corrupt("pk"))?;
        let mut moved = item.clone();
        moved.insert(PK.into(), s(index_pk(&tenant, action)));
        let tx = vec![self.put(moved)?, self.delete(key(pk, sk))?];
        match self.transact(tx).await? {
            Tx::Committed => Ok(()),
            Tx::Cancelled(_) => Err(StoreError::Unavailable(
                "moving a legacy unsettled entry lost a race; the backfill resumes".into(),
            )),
        }
    }
}

#[async_trait]
impl PersonIndex for DynamoStore {
    async fn person_conversations(
        &self,
        tenant: &TenantId,
        user: &UserId,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<PersonPage, StoreError> {
        let after = match cursor {
            Some(c) if c.starts_with(CASE_ENTRY) => Some(c.to_owned()),
            Some(_) => return Err(corrupt("cursor")),
            None => None,
        };
        let (items, next) = self
            .prefix_page(person_pk(tenant, user), CASE_ENTRY, after, limit)
            .await?;
        let cases = items
            .iter()
            .filter_map(|i| opt_s(i, SK)?.strip_prefix(CASE_ENTRY).map(str::to_owned))
            .map(|c| CaseId::parse(&c).map_err(|_| corrupt("sk")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(PersonPage { cases, next })
    }

    async fn legacy_records(&self, tenant: &TenantId, user: &UserId) -> Result<usize, StoreError> {
        let mut pages = self
            .prefix_query(person_pk(tenant, user), LEGACY_ENTRY)
            .select(Select::Count)
            .into_paginator()
            .send();
        let mut count = 0;
        while let Some(page) = pages.try_next().await.map_err(unavailable)? {
            count += usize::try_from(page.count).unwrap_or(0);
        }
        Ok(count)
    }

    async fn forget_person(&self, tenant: &TenantId, user: &UserId) -> Result<(), StoreError> {
        let keys = self.person_entries(tenant, user, LEGACY_ENTRY).await?;
        self.delete_keys(keys).await
    }

    async fn backfill_person_index(&self, pages: usize) -> Result<bool, StoreError> {
        let state = self.get(BACKFILL_PK, "STATE").await?;
        if state.as_ref().and_then(|s| s.get("done")) == Some(&AttributeValue::Bool(true)) {
            return Ok(true);
        }
        let mut start = state.as_ref().and_then(|st| {
            let (pk, sk) = (opt_s(st, "cursor_pk")?, opt_s(st, "cursor_sk")?);
            Some(key(pk, sk))
        });
        for _ in 0..pages.max(1) {
            let page = self
                .client
                .scan()
                .table_name(&self.table)
                .filter_expression(
                    "sk = :case OR begins_with(sk, :audit) OR begins_with(sk, :unsettled)",
                )
                .set_expression_attribute_values(Some(values([
                    (":case", s(CASE_SK)),
                    (":audit", s(AUDIT_PREFIX)),
                    (":unsettled", s(super::transitions::UNSETTLED_PREFIX)),
                ])))
                .limit(BACKFILL_PAGE)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(unavailable)?;
            for item in page.items.unwrap_or_default() {
                self.move_legacy_unsettled(&item).await?;
                for entry in Self::entries_for(&item) {
                    self.put_plain(entry).await?;
                }
            }
            let mut marker = key(BACKFILL_PK, "STATE");
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => {
                    let (pk, sk) = (opt_s(&k, PK), opt_s(&k, SK));
                    let (Some(pk), Some(sk)) = (pk, sk) else {
                        return Err(corrupt("scan key"));
                    };
                    marker.insert("cursor_pk".into(), s(pk));
                    marker.insert("cursor_sk".into(), s(sk));
                    self.put_plain(marker).await?;
                    start = Some(k);
                }
                _ => {
                    marker.insert("done".into(), AttributeValue::Bool(true));
                    self.put_plain(marker).await?;
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }
}

#[async_trait]
impl ErasureJobs for DynamoStore {
    async fn enqueue(&self, job: &ErasureJob, cap: usize) -> Result<Enqueued, StoreError> {
        let prefix = format!("{}#", job.tenant);
        let queued = self
            .prefix_query(QUEUE_PK, &prefix)
            .select(Select::Count)
            .limit(page_limit(cap + 1))
            .send()
            .await
            .map_err(unavailable)?;
        let sk = queue_sk(&job.tenant, &job.person);
        let mut entry = key(QUEUE_PK, sk.clone());
        entry.insert("tenant_id".into(), s(job.tenant.as_str()));
        entry.insert("job_id".into(), s(job.id.as_str()));
        entry.insert("queued_at".into(), s(job.requested_at.to_rfc3339()));
        let tx = vec![self.put_new(entry)?, self.put_new(job_item(job))?];
        match self.transact(tx).await? {
            Tx::Committed if usize::try_from(queued.count).unwrap_or(0) < cap => {
                Ok(Enqueued::Queued)
            }
            // Over the cap: taken back (the count and the put are not one step; the cap
            // is a bound on queued work, not an exact number).
            Tx::Committed => {
                self.client
                    .transact_write_items()
                    .transact_items(self.delete(key(QUEUE_PK, sk))?)
                    .transact_items(self.delete(key(job_pk(&job.tenant), job.id.clone()))?)
                    .send()
                    .await
                    .map_err(unavailable)?;
                Ok(Enqueued::Full)
            }
            Tx::Cancelled(r) if failed(r.first()) => {
                let existing = self.get(QUEUE_PK, sk).await?;
                match existing.as_ref().and_then(|e| opt_s(e, "job_id")) {
                    Some(id) => Ok(Enqueued::Already(id.to_owned())),
                    None => Err(StoreError::Unavailable("the queue moved; try again".into())),
                }
            }
            Tx::Cancelled(_) => Err(StoreError::Unavailable(
                "the job could not be recorded; try again".into(),
            )),
        }
    }

    async fn job(&self, tenant: &TenantId, id: &str) -> Result<Option<ErasureJob>, StoreError> {
        self.get_as(job_pk(tenant), id, job_from).await
    }

    async fn queued(&self, limit: usize) -> Result<Vec<(TenantId, String)>, StoreError> {
        let query = self
            .consistent_query()
            .key_condition_expression("pk = :pk")
            .set_expression_attribute_values(Some(values([(":pk", s(QUEUE_PK))])));
        let mut out = (self.first_page(query, limit).await?)
            .iter()
            .map(|i| {
                let tenant =
                    TenantId::parse(get_s(i, "tenant_id")?).map_err(|_| corrupt("tenant_id"))?;
                Ok((
                    get_s(i, "queued_at")?.to_owned(),
                    tenant,
                    get_s(i, "job_id")?.to_owned(),
                ))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        out.sort();
        Ok(out.into_iter().map(|(_, t, j)| (t, j)).collect())
    }

    async fn save_progress(&self, job: &ErasureJob) -> Result<(), StoreError> {
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(job_pk(&job.tenant), job.id.clone())))
            .update_expression("SET #status = :st, purged = :p, #items = :i, runs = :r")
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_names("#status", "status")
            .expression_attribute_names("#items", "items")
            .set_expression_attribute_values(Some(values([
                (":st", s(job.status.as_str())),
                (":p", n(job.purged)),
                (":i", n(job.items)),
                (":r", n(job.runs)),
            ])))
            .send()
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    async fn finish(&self, job: &ErasureJob) -> Result<(), StoreError> {
        let mut vals = values([
            (":st", s(JobStatus::Done.as_str())),
            (":p", n(job.purged)),
            (":i", n(job.items)),
            (":r", n(job.runs)),
            (":ttl", n(job.requested_at.unix_seconds() + DONE_KEPT_SECS)),
        ]);
        let mut set =
            "SET #status = :st, purged = :p, #items = :i, runs = :r, #ttl = :ttl".to_owned();
        if let Some(o) = &job.outcome {
            vals.insert(":o".into(), s(o.as_str()));
            set.push_str(", outcome = :o");
        }
        if let Some(r) = &job.receipt {
            vals.insert(":rc".into(), s(r.as_str()));
            set.push_str(", receipt = :rc");
        }
        let update = super::build(
            Update::builder()
                .table_name(&self.table)
                .set_key(Some(key(job_pk(&job.tenant), job.id.clone())))
                .update_expression(format!("{set} REMOVE person"))
                .expression_attribute_names("#status", "status")
                .expression_attribute_names("#items", "items")
                .expression_attribute_names("#ttl", TTL)
                .set_expression_attribute_values(Some(vals))
                .build(),
        )?;
        let tx = vec![
            TransactWriteItem::builder().update(update).build(),
            self.delete(key(QUEUE_PK, queue_sk(&job.tenant, &job.person)))?,
        ];
        match self.transact(tx).await? {
            Tx::Committed => Ok(()),
            Tx::Cancelled(_) => Err(StoreError::Unavailable(
                "the job's end could not be recorded; the next run tries again".into(),
            )),
        }
    }
}
