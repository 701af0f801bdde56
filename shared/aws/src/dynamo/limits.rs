//! Per-tenant request budgets (decision 0021): a fixed one-minute window per tenant and
//! bucket, one conditional `UpdateItem` per admitted request. Each window is its own item
//! (`RATE#<tenant>#<bucket>` / `<window start>`), expiring by TTL two minutes after it
//! ends; it is never in a transaction, so it cannot make one conflict.

use super::items::{TTL, key, n};
use super::{DynamoStore, written};
use async_trait::async_trait;
use countersign_domain::ids::TenantId;
use countersign_domain::ports::{Admission, RateLimiter, StoreError};
use countersign_domain::time::Timestamp;

/// The window's length in seconds.
const WINDOW: i64 = 60;

#[async_trait]
impl RateLimiter for DynamoStore {
    async fn take(
        &self,
        tenant: &TenantId,
        bucket: &str,
        per_minute: u32,
        now: Timestamp,
    ) -> Result<Admission, StoreError> {
        let secs = now.unix_seconds();
        let start = secs - secs.rem_euclid(WINDOW);
        let answer = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(
                format!("RATE#{tenant}#{bucket}"),
                start.to_string(),
            )))
            .update_expression("ADD used :one SET #ttl = :ttl")
            .condition_expression("attribute_not_exists(used) OR used < :limit")
            .expression_attribute_names("#ttl", TTL)
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":limit", n(per_minute))
            .expression_attribute_values(":ttl", n(start + 3 * WINDOW))
            .send()
            .await;
        if written(answer)? {
            return Ok(Admission::Admitted);
        }
        let left = start + WINDOW - secs;
        Ok(Admission::Limited {
            retry_after_secs: u64::try_from(left.max(1)).unwrap_or(1),
        })
    }
}
