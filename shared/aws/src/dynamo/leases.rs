//! V-7: per-tenant leases, so that one tenant has at most one job of a kind in flight. One
//! item per tenant and kind (`LEASE#<tenant>#<kind>` / `LEASE`), taken by a conditional
//! `PutItem` (free, or expired) and given back by a `DeleteItem` conditioned on its owner;
//! the TTL attribute removes a lease a crashed holder left, a day after it expired. Never
//! in a transaction, so it cannot make one conflict.

use super::items::{TTL, key, n, s};
use super::{DynamoStore, unavailable, written};
use async_trait::async_trait;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use countersign_domain::ids::TenantId;
use countersign_domain::ports::{Lease, Leases, StoreError};
use countersign_domain::time::Timestamp;

pub(super) fn lease_key(tenant: &TenantId, kind: &str) -> super::items::Item {
    key(format!("LEASE#{tenant}#{kind}"), "LEASE".to_owned())
}

#[async_trait]
impl Leases for DynamoStore {
    async fn acquire(
        &self,
        tenant: &TenantId,
        kind: &str,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<Lease, StoreError> {
        let mut item = lease_key(tenant, kind);
        item.insert("owner".into(), s(owner));
        item.insert("until".into(), n(until.unix_seconds()));
        item.insert(TTL.into(), n(until.unix_seconds() + 86_400));
        let answer = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(pk) OR #until <= :now")
            .expression_attribute_names("#until", "until")
            .expression_attribute_values(":now", n(now.unix_seconds()))
            .return_values_on_condition_check_failure(
                aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure::AllOld,
            )
            .send()
            .await;
        match answer {
            Ok(_) => Ok(Lease::Held),
            Err(SdkError::ServiceError(e))
                if matches!(e.err(), PutItemError::ConditionalCheckFailedException(_)) =>
            {
                let held_until = match e.err() {
                    PutItemError::ConditionalCheckFailedException(c) => c
                        .item()
                        .and_then(|i| i.get("until"))
                        .and_then(|v| v.as_n().ok())
                        .and_then(|v| v.parse::<i64>().ok()),
                    _ => None,
                };
                let left = held_until.map_or(1, |u| u - now.unix_seconds());
                Ok(Lease::Busy {
                    retry_after_secs: u64::try_from(left.max(1)).unwrap_or(1),
                })
            }
            Err(e) => Err(unavailable(e)),
        }
    }

    async fn release(&self, tenant: &TenantId, kind: &str, owner: &str) -> Result<(), StoreError> {
        let answer = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(lease_key(tenant, kind)))
            .condition_expression("#owner = :owner")
            .expression_attribute_names("#owner", "owner")
            .expression_attribute_values(":owner", s(owner))
            .send()
            .await;
        // Not deleted: it expired and another took it, or it was removed; nothing of ours
        // to give back.
        written(answer)?;
        Ok(())
    }
}
