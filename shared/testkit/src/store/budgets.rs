//! `Leases` and `RateLimiter`: one job per tenant and kind, the per-minute budgets.

use super::*;

/// The adapter's leases: free, or expired, or held by another until its expiry.
#[async_trait]
impl Leases for MemoryStore {
    async fn acquire(
        &self,
        tenant: &TenantId,
        kind: &str,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<Lease, StoreError> {
        yield_now().await;
        self.run(
            "acquire",
            || Lease::Busy {
                retry_after_secs: 1,
            },
            |s| {
                let slot = s.leases.entry((tenant.clone(), kind.to_owned()));
                let now = now.unix_seconds();
                if let std::collections::hash_map::Entry::Occupied(held) = &slot
                    && held.get().1 > now
                {
                    let left = u64::try_from(held.get().1 - now).unwrap_or(1).max(1);
                    return Ok(Lease::Busy {
                        retry_after_secs: left,
                    });
                }
                slot.insert_entry((owner.to_owned(), until.unix_seconds()));
                Ok(Lease::Held)
            },
        )
    }

    async fn release(&self, tenant: &TenantId, kind: &str, owner: &str) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "release",
            || (),
            |s| {
                let k = (tenant.clone(), kind.to_owned());
                if s.leases.get(&k).is_some_and(|(o, _)| o == owner) {
                    s.leases.remove(&k);
                }
                Ok(())
            },
        )
    }
}

/// The adapter's fixed one-minute windows.
#[async_trait]
impl RateLimiter for MemoryStore {
    async fn take(
        &self,
        tenant: &TenantId,
        bucket: &str,
        per_minute: u32,
        now: Timestamp,
    ) -> Result<Admission, StoreError> {
        yield_now().await;
        self.run(
            "take",
            || Admission::Admitted,
            |s| {
                let secs = now.unix_seconds();
                let start = secs - secs.rem_euclid(60);
                let used = s
                    .budgets
                    .entry((tenant.clone(), bucket.to_owned(), start))
                    .or_default();
                if *used >= per_minute {
                    let left = u64::try_from(start + 60 - secs).unwrap_or(1).max(1);
                    return Ok(Admission::Limited {
                        retry_after_secs: left,
                    });
                }
                *used += 1;
                Ok(Admission::Admitted)
            },
        )
    }
}
