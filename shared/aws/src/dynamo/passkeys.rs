//! F-2: people's passkeys on DynamoDB, in the person's own partition (the person index's,
//! keyed by a digest of the person: their id is never a key).
//!
//! | item | pk | sk |
//! |---|---|---|
//! | a passkey | `PERSON#<tenant>#<digest of the person>` | `PASSKEY#<SHA-256 of the credential id>` |
//! | its holder entry | `PASSKEYHOLDERS#<tenant>` | `<digest of the person>#<SHA-256 of the credential id>` |
//!
//! The holder entry is written and deleted in the same transaction as its passkey, so the
//! tenant's count of people with a passkey (F-1, the panel's) is one query of one
//! partition, keys only.
//! The sort key holds a digest of the credential id because an id may be up to 1,023
//! bytes (1,364 in base64url), more than a sort key takes.

use super::erasure::{digest, person_pk};
use super::items::*;
use super::{DynamoStore, values, written};
use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;
use countersign_domain::audit_chain::AuditEntry;
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::{TenantId, UserId};
use countersign_domain::ports::{Passkey, Passkeys, StoreError};
use countersign_domain::stepup::CredentialKey;
use countersign_domain::time::Timestamp;

/// The sort key prefix of a passkey.
pub(crate) const PASSKEY_PREFIX: &str = "PASSKEY#";

fn passkey_key(tenant: &TenantId, user: &UserId, id: &str) -> Item {
    key(
        person_pk(tenant, user),
        format!("{PASSKEY_PREFIX}{}", Sha256Hex::digest(id.as_bytes())),
    )
}

pub(crate) fn holders_pk(tenant: &TenantId) -> String {
    format!("PASSKEYHOLDERS#{tenant}")
}

fn holder_key(tenant: &TenantId, user: &UserId, id: &str) -> Item {
    key(
        holders_pk(tenant),
        format!(
            "{}#{}",
            digest(tenant, user),
            Sha256Hex::digest(id.as_bytes())
        ),
    )
}

fn passkey_item(tenant: &TenantId, user: &UserId, p: &Passkey) -> Item {
    let mut item = passkey_key(tenant, user, &p.id);
    item.insert("credential_id".into(), s(&p.id));
    item.insert("public_key".into(), s(p.key.to_jwk().to_string()));
    item.insert("sign_count".into(), n(p.sign_count));
    item.insert(
        "transports".into(),
        AttributeValue::L(p.transports.iter().map(s).collect()),
    );
    item.insert("created_at".into(), s(p.created_at.to_rfc3339()));
    if let Some(at) = p.last_used_at {
        item.insert("last_used_at".into(), s(at.to_rfc3339()));
    }
    item
}

fn passkey_from(i: &Item) -> Result<Passkey, StoreError> {
    let jwk: serde_json::Value =
        serde_json::from_str(get_s(i, "public_key")?).map_err(|_| corrupt("public_key"))?;
    let time = |k: &'static str| Timestamp::parse_utc(get_s(i, k)?).map_err(|_| corrupt(k));
    Ok(Passkey {
        id: get_s(i, "credential_id")?.to_owned(),
        key: CredentialKey::from_jwk(&jwk).map_err(|_| corrupt("public_key"))?,
        sign_count: get_n(i, "sign_count")?,
        transports: i
            .get("transports")
            .and_then(|v| v.as_l().ok())
            .map(|l| l.iter().filter_map(|v| v.as_s().ok().cloned()).collect())
            .unwrap_or_default(),
        created_at: time("created_at")?,
        last_used_at: opt_s(i, "last_used_at")
            .map(|_| time("last_used_at"))
            .transpose()?,
    })
}

#[async_trait]
impl Passkeys for DynamoStore {
    async fn add_passkey(
        &self,
        tenant: &TenantId,
        user: &UserId,
        passkey: &Passkey,
        audit: &AuditEntry,
    ) -> Result<bool, StoreError> {
        let tx = vec![
            self.put_new(passkey_item(tenant, user, passkey))?,
            self.put_new(holder_key(tenant, user, &passkey.id))?,
        ];
        self.commit_audited(tenant, tx, audit).await
    }

    async fn passkeys(&self, tenant: &TenantId, user: &UserId) -> Result<Vec<Passkey>, StoreError> {
        let query = self.prefix_query(person_pk(tenant, user), PASSKEY_PREFIX);
        let mut found: Vec<Passkey> = self
            .query_all(query)
            .await?
            .iter()
            .map(passkey_from)
            .collect::<Result<_, _>>()?;
        found.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(found)
    }

    async fn record_passkey_use(
        &self,
        tenant: &TenantId,
        user: &UserId,
        id: &str,
        from: u32,
        to: u32,
        at: Timestamp,
    ) -> Result<bool, StoreError> {
        let update = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(passkey_key(tenant, user, id)))
            .update_expression("SET sign_count = :to, last_used_at = :at")
            .condition_expression("attribute_exists(pk) AND sign_count = :from")
            .set_expression_attribute_values(Some(values([
                (":to", n(to)),
                (":from", n(from)),
                (":at", s(at.to_rfc3339())),
            ])))
            .send()
            .await;
        written(update)
    }

    async fn revoke_passkey(
        &self,
        tenant: &TenantId,
        user: &UserId,
        id: &str,
        audit: &AuditEntry,
    ) -> Result<bool, StoreError> {
        let tx = vec![
            self.delete_where(
                passkey_key(tenant, user, id),
                Some("attribute_exists(pk)"),
                None,
            )?,
            self.delete(holder_key(tenant, user, id))?,
        ];
        self.commit_audited(tenant, tx, audit).await
    }

    async fn passkey_holders(&self, tenant: &TenantId) -> Result<usize, StoreError> {
        let query = self
            .consistent_query()
            .key_condition_expression("pk = :pk")
            .projection_expression("sk")
            .set_expression_attribute_values(Some(values([(":pk", s(holders_pk(tenant)))])));
        let people: std::collections::BTreeSet<String> = self
            .query_all(query)
            .await?
            .iter()
            .filter_map(|i| get_s(i, "sk").ok())
            .filter_map(|sk| sk.split_once('#').map(|(person, _)| person.to_owned()))
            .collect();
        Ok(people.len())
    }

    async fn forget_passkeys(&self, tenant: &TenantId, user: &UserId) -> Result<usize, StoreError> {
        let query = self
            .prefix_query(person_pk(tenant, user), PASSKEY_PREFIX)
            .projection_expression("pk, sk");
        let mut keys = self.query_all(query).await?;
        let count = keys.len();
        let holders = self
            .prefix_query(holders_pk(tenant), &format!("{}#", digest(tenant, user)))
            .projection_expression("pk, sk");
        keys.extend(self.query_all(holders).await?);
        self.delete_keys(keys).await?;
        Ok(count)
    }
}
