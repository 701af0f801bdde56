//! The tenant store on the same table: tenant items, a registry partition for listing,
//! and each tenant's MCP configuration (without its token, which lives in Secrets
//! Manager).

use super::items::*;
use super::{DynamoStore, Tx, build, unavailable, values};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use countersign_domain::audit_chain::ChainLink;
use countersign_domain::certification::Certification;
use countersign_domain::config::{ActionPolicy, McpConfig, ServerUrl, UrlPolicy};
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::{AuditId, OperationName, TenantId, ToolName, WidgetKeyId};
use countersign_domain::ports::{
    AuditEntry, AuditPage, AuditRecords, Certifications, McpSettings, PanelSession, SessionStore,
    StoreError, StoredMcpConfig, Tenant, Tenants, TransitionOutcome, WidgetKey, WidgetKeys,
};
use countersign_domain::retention::RetentionDays;
use countersign_domain::secret::SecretString;
use countersign_domain::time::Timestamp;
use std::collections::HashMap;

mod audit_records;
mod certifications;
mod mcp_settings;
mod sessions;
mod widget_keys;

pub(crate) const TENANT_SK: &str = "TENANT";
pub(crate) const MCP_SK: &str = "MCP";
const REGISTRY_PK: &str = "TENANTS";
const ADMIN_KEY_SK: &str = "ADMINKEY";
const WIDGET_KEY_PREFIX: &str = "WIDGETKEY#";
/// The latest certification run (H-1), as one JSON document.
const CERTIFICATION_SK: &str = "CERTIFICATION";
/// A panel session (U-1): its own partition, keyed by the hash of its id.
pub(super) const SESSION_PREFIX: &str = "PANELSESSION#";
const SESSION_SK: &str = "SESSION";
/// Largest page of audit records one request may ask for.
const MAX_AUDIT_PAGE: usize = 100;

fn audit_from(i: &Item) -> Result<AuditEntry, StoreError> {
    Ok(AuditEntry {
        id: AuditId::parse(get_s(i, "audit_id")?).map_err(|_| corrupt("audit_id"))?,
        at: Timestamp::parse_utc(get_s(i, "at")?).map_err(|_| corrupt("at"))?,
        actor: get_s(i, "actor")?.to_owned(),
        action: get_s(i, "action")?.to_owned(),
        changes: serde_json::from_str(get_s(i, "changes")?).map_err(|_| corrupt("changes"))?,
    })
}

impl DynamoStore {
    /// The tenant's `take` newest audit records at or before `before`, newest first: the
    /// newest `take` of each of its partitions (decision 0043), merged.
    async fn newest_audit(
        &self,
        tenant: &TenantId,
        before: Option<&AuditId>,
        take: usize,
    ) -> Result<Vec<Item>, StoreError> {
        let queries = index_pks(tenant).into_iter().map(|pk| {
            let query = self
                .consistent_query()
                .scan_index_forward(false)
                .limit(i32::try_from(take).unwrap_or(i32::MAX));
            let query = match before {
                None => query
                    .key_condition_expression("pk = :pk AND begins_with(sk, :a)")
                    .set_expression_attribute_values(Some(values([
                        (":pk", s(pk)),
                        (":a", s(AUDIT_PREFIX)),
                    ]))),
                Some(b) => query
                    .key_condition_expression("pk = :pk AND sk BETWEEN :a AND :b")
                    .set_expression_attribute_values(Some(values([
                        (":pk", s(pk)),
                        (":a", s(AUDIT_PREFIX)),
                        (":b", s(format!("{AUDIT_PREFIX}{b}"))),
                    ]))),
            };
            async move {
                let page = query.send().await.map_err(super::unavailable)?;
                Ok::<_, StoreError>(page.items.unwrap_or_default())
            }
        });
        let mut all: Vec<Item> = futures::future::try_join_all(queries)
            .await?
            .into_iter()
            .flatten()
            .collect();
        let sk = |i: &Item| opt_s(i, SK).unwrap_or_default().to_owned();
        all.sort_by_key(|i| std::cmp::Reverse(sk(i)));
        all.truncate(take);
        Ok(all)
    }

    /// The conversation chains the tenant's chain index names (L-3), each with the case
    /// its entry names while the conversation lives (decision 0055).
    async fn chain_index(
        &self,
        tenant: &TenantId,
    ) -> Result<std::collections::BTreeMap<String, Option<String>>, StoreError> {
        let prefix = super::chain::CHAIN_INDEX_PREFIX;
        self.index_items(tenant, prefix)
            .await?
            .iter()
            .map(|i| {
                let chain = get_s(i, "chain")?.to_owned();
                Ok((chain, opt_s(i, "case").map(str::to_owned)))
            })
            .collect()
    }

    /// Commits `tx` with its configuration audit record appended to the tenant's chain
    /// in the same transaction (issue 5, L-2). `false` when a condition of `tx` failed.
    pub(in crate::dynamo) async fn commit_audited(
        &self,
        tenant: &TenantId,
        tx: Vec<TransactWriteItem>,
        audit: &AuditEntry,
    ) -> Result<bool, StoreError> {
        let chain = super::chain::ChainRef::tenant(tenant);
        let tx = self
            .transact_chained(&chain, tx, std::slice::from_ref(audit))
            .await?;
        Ok(matches!(tx, Tx::Committed))
    }

    /// [`Self::commit_audited`] of a write that creates what `what` names (the text is built
    /// only on failure): a failed condition means it exists already, which no caller does on
    /// purpose (its id is fresh), so the store is reported inconsistent.
    pub(in crate::dynamo) async fn create_audited(
        &self,
        tenant: &TenantId,
        tx: Vec<TransactWriteItem>,
        audit: &AuditEntry,
        what: impl FnOnce() -> String + Send,
    ) -> Result<(), StoreError> {
        if self.commit_audited(tenant, tx, audit).await? {
            Ok(())
        } else {
            Err(StoreError::Corrupt(format!("{} already exists", what())))
        }
    }

    /// [`Self::commit_audited`] as a transition's outcome: a failed condition of `tx` is a
    /// `Conflict` (nothing written; the caller may read again and retry).
    pub(in crate::dynamo) async fn apply_audited(
        &self,
        tenant: &TenantId,
        tx: Vec<TransactWriteItem>,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        Ok(if self.commit_audited(tenant, tx, audit).await? {
            TransitionOutcome::Applied
        } else {
            TransitionOutcome::Conflict { current: None }
        })
    }
}

/// The index item from an admin key's hash to its tenant (C-2).
pub(super) fn admin_key_pk(hash: &Sha256Hex) -> String {
    format!("ADMINKEY#{hash}")
}

fn admin_key_item(hash: &Sha256Hex, tenant: &TenantId) -> Item {
    let mut i = key(admin_key_pk(hash), ADMIN_KEY_SK);
    i.insert("tenant_id".into(), s(tenant.as_str()));
    i
}

fn tenant_item(t: &Tenant) -> Item {
    let mut i = key(tenant_pk(&t.id), TENANT_SK);
    i.insert("tenant_id".into(), s(t.id.as_str()));
    i.insert("name".into(), s(t.name.as_str()));
    i.insert("admin_key_hash".into(), s(t.admin_key_hash.as_str()));
    i.insert("lang".into(), s(lang_str(t.language)));
    i.insert("created_at".into(), s(t.created_at.to_rfc3339()));
    if let Some(url) = &t.sign_in_url {
        i.insert("sign_in_url".into(), s(url.as_str()));
    }
    if let Some(days) = t.retention_days {
        i.insert("retention_days".into(), n(days.days()));
    }
    if t.appearance != Default::default() {
        i.insert(APPEARANCE.into(), s(appearance_json(&t.appearance)));
    }
    i
}

/// Issue 50: the tenant's appearance attribute.
const APPEARANCE: &str = "appearance";

fn appearance_json(a: &countersign_domain::appearance::Appearance) -> String {
    // A plain struct of strings: serialising it cannot fail.
    serde_json::to_string(a).unwrap_or_default()
}

fn tenant_from(i: &Item) -> Result<Tenant, StoreError> {
    Ok(Tenant {
        id: TenantId::parse(get_s(i, "tenant_id")?).map_err(|_| corrupt("tenant_id"))?,
        name: get_s(i, "name")?.to_owned(),
        admin_key_hash: Sha256Hex::parse(get_s(i, "admin_key_hash")?)
            .map_err(|_| corrupt("admin_key_hash"))?,
        language: match opt_s(i, "lang") {
            Some("pt") => countersign_domain::texts::Language::Pt,
            _ => countersign_domain::texts::Language::En,
        },
        created_at: Timestamp::parse_utc(get_s(i, "created_at")?)
            .map_err(|_| corrupt("created_at"))?,
        sign_in_url: opt_s(i, "sign_in_url").map(str::to_owned),
        retention_days: match i.get("retention_days") {
            Some(_) => Some(
                RetentionDays::new(get_n::<i64>(i, "retention_days")?)
                    .map_err(|_| corrupt("retention_days"))?,
            ),
            None => None,
        },
        holds: holds_from(i)?,
        purge_cursor: opt_s(i, "purge_cursor").map(str::to_owned),
        // Issue 50: one JSON attribute, read whole (an absent one is the default).
        appearance: match opt_s(i, APPEARANCE) {
            Some(json) => serde_json::from_str(json).map_err(|_| corrupt(APPEARANCE))?,
            None => Default::default(),
        },
        erasing: match i.get(ERASING) {
            Some(AttributeValue::Ss(v)) => v
                .iter()
                .map(|u| {
                    countersign_domain::ids::UserId::parse(u.as_str()).map_err(|_| corrupt(ERASING))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(corrupt(ERASING)),
            None => std::collections::BTreeSet::new(),
        },
    })
}

/// the held people and conversations (string sets; an empty set is no attribute).
fn holds_from(i: &Item) -> Result<countersign_domain::retention::Holds, StoreError> {
    use countersign_domain::ids::{CaseId, UserId};
    let set = |k: &str| match i.get(k) {
        Some(AttributeValue::Ss(v)) => Ok(v.clone()),
        Some(_) => Err(corrupt(k)),
        None => Ok(Vec::new()),
    };
    Ok(countersign_domain::retention::Holds {
        people: set(HELD_PEOPLE)?
            .into_iter()
            .map(|u| UserId::parse(u).map_err(|_| corrupt(HELD_PEOPLE)))
            .collect::<Result<_, _>>()?,
        conversations: set(HELD_CASES)?
            .into_iter()
            .map(|c| CaseId::parse(c).map_err(|_| corrupt(HELD_CASES)))
            .collect::<Result<_, _>>()?,
    })
}

#[async_trait]
impl Tenants for DynamoStore {
    async fn create_tenant(&self, tenant: &Tenant) -> Result<(), StoreError> {
        let mut entry = key(REGISTRY_PK, tenant.id.as_str());
        entry.insert("name".into(), s(tenant.name.as_str()));
        let tx = vec![
            self.put_new(tenant_item(tenant))?,
            self.put_new(entry)?,
            self.put_new(admin_key_item(&tenant.admin_key_hash, &tenant.id))?,
        ];
        match self.transact(tx).await? {
            Tx::Committed => Ok(()),
            Tx::Cancelled(_) => Err(StoreError::Corrupt(format!(
                "tenant {} already exists",
                tenant.id
            ))),
        }
    }

    async fn get_tenant(&self, id: &TenantId) -> Result<Option<Tenant>, StoreError> {
        self.get_as(tenant_pk(id), TENANT_SK, tenant_from).await
    }

    async fn list_tenants(&self) -> Result<Vec<Tenant>, StoreError> {
        let query = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk")
            .set_expression_attribute_values(Some(values([(":pk", s(REGISTRY_PK))])));
        let ids = self
            .query_all(query)
            .await?
            .iter()
            .map(|item| TenantId::parse(get_s(item, SK)?).map_err(|_| corrupt("registry")))
            .collect::<Result<Vec<_>, _>>()?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(t) = self.get_tenant(&id).await? {
                out.push(t);
            }
        }
        Ok(out)
    }

    async fn tenant_by_admin_key_hash(
        &self,
        hash: &Sha256Hex,
    ) -> Result<Option<TenantId>, StoreError> {
        self.get_as(admin_key_pk(hash), ADMIN_KEY_SK, |i| {
            TenantId::parse(get_s(i, "tenant_id")?).map_err(|_| corrupt("tenant_id"))
        })
        .await
    }

    async fn set_admin_key_hash(
        &self,
        id: &TenantId,
        hash: &Sha256Hex,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        let Some(current) = self.get_tenant(id).await? else {
            return Ok(TransitionOutcome::Conflict { current: None });
        };
        let old = current.admin_key_hash;
        let tx = vec![
            self.update(
                key(tenant_pk(id), TENANT_SK),
                "SET admin_key_hash = :h".to_owned(),
                "admin_key_hash = :old",
                values([(":h", s(hash.as_str())), (":old", s(old.as_str()))]),
            )?,
            self.delete(key(admin_key_pk(&old), ADMIN_KEY_SK))?,
            self.put_new(admin_key_item(hash, id))?,
        ];
        // A conflict: another rotation came first; the caller may retry.
        self.apply_audited(id, tx, audit).await
    }

    async fn set_language(
        &self,
        id: &TenantId,
        language: countersign_domain::texts::Language,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        let tx = vec![self.update(
            key(tenant_pk(id), TENANT_SK),
            "SET lang = :l".to_owned(),
            "attribute_exists(pk)",
            values([(":l", s(lang_str(language)))]),
        )?];
        self.apply_audited(id, tx, audit).await
    }

    async fn set_sign_in_url(
        &self,
        id: &TenantId,
        url: Option<&str>,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        // Every update expression here carries a value (DynamoDB refuses an empty value
        // map), so a removal also records when the setting changed.
        let changed = (":c", s(audit.at.to_rfc3339()));
        let (expression, vals) = match url {
            Some(url) => (
                "SET sign_in_url = :u, sign_in_changed_at = :c",
                values([(":u", s(url)), changed]),
            ),
            None => (
                "SET sign_in_changed_at = :c REMOVE sign_in_url",
                values([changed]),
            ),
        };
        self.update_tenant_audited(id, expression, vals, audit)
            .await
    }

    async fn set_appearance(
        &self,
        id: &TenantId,
        appearance: &countersign_domain::appearance::Appearance,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        let vals = values([(":a", s(appearance_json(appearance)))]);
        self.update_tenant_audited(id, "SET appearance = :a", vals, audit)
            .await
    }

    async fn set_retention_days(
        &self,
        id: &TenantId,
        days: RetentionDays,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        let vals = values([(":d", n(days.days()))]);
        self.update_tenant_audited(id, "SET retention_days = :d", vals, audit)
            .await
    }

    async fn set_hold(
        &self,
        id: &TenantId,
        hold: &countersign_domain::retention::Hold,
        on: bool,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        use countersign_domain::retention::Hold;
        let set = match hold {
            Hold::Person(_) => HELD_PEOPLE,
            Hold::Conversation(_) => HELD_CASES,
        };
        self.update_set(id, set, hold.id(), on, audit).await
    }

    async fn set_purge_cursor(
        &self,
        id: &TenantId,
        cursor: Option<&str>,
    ) -> Result<(), StoreError> {
        let mut update = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(tenant_pk(id), TENANT_SK)))
            .condition_expression("attribute_exists(pk)");
        update = match cursor {
            Some(c) => update
                .update_expression("SET purge_cursor = :c")
                .expression_attribute_values(":c", s(c)),
            None => update.update_expression("REMOVE purge_cursor"),
        };
        // Not written: the tenant is gone.
        super::written(update.send().await)?;
        Ok(())
    }

    async fn set_erasing(
        &self,
        id: &TenantId,
        user: &countersign_domain::ids::UserId,
        pending: bool,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        self.update_set(id, ERASING, user.as_str(), pending, audit)
            .await
    }
}

impl DynamoStore {
    /// Adds `value` to (`on`) or removes it from the tenant item's string set `set`, with
    /// its audit record. A set's ADD and DELETE are atomic: two administrators changing
    /// it at once both keep their change.
    async fn update_set(
        &self,
        id: &TenantId,
        set: &str,
        value: &str,
        on: bool,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        let verb = if on { "ADD" } else { "DELETE" };
        let vals = values([(":v", AttributeValue::Ss(vec![value.to_owned()]))]);
        self.update_tenant_audited(id, &format!("{verb} {set} :v"), vals, audit)
            .await
    }

    /// A tenant-item update with its audit record, in one transaction.
    async fn update_tenant_audited(
        &self,
        id: &TenantId,
        expression: &str,
        vals: HashMap<String, AttributeValue>,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        let tx = vec![self.update(
            key(tenant_pk(id), TENANT_SK),
            expression.to_owned(),
            "attribute_exists(pk)",
            vals,
        )?];
        self.apply_audited(id, tx, audit).await
    }
}
