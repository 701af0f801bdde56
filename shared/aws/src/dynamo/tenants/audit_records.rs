//! `AuditRecords`: the audit trail, its pages and chains.

use super::*;

#[async_trait]
impl AuditRecords for DynamoStore {
    async fn list_audit(
        &self,
        tenant: &TenantId,
        before: Option<&AuditId>,
        limit: usize,
    ) -> Result<AuditPage, StoreError> {
        let limit = limit.clamp(1, MAX_AUDIT_PAGE);
        // One more than asked tells whether an older page exists (no empty last page); one
        // more again with a cursor, because `BETWEEN` also returns the cursor's own record.
        let extra = if before.is_some() { 2 } else { 1 };
        let stored = self.newest_audit(tenant, before, limit + extra).await?;
        let mut items = stored
            .iter()
            .map(audit_from)
            .collect::<Result<Vec<_>, _>>()?;
        // `BETWEEN` is inclusive: drop the cursor's own record.
        if let Some(b) = before {
            items.retain(|a| &a.id != b);
        }
        let next = if items.len() > limit {
            items.truncate(limit);
            items.last().map(|a| a.id.clone())
        } else {
            None
        };
        let mut links = std::collections::BTreeMap::new();
        for (item, entry) in stored.iter().zip(stored.iter().map(audit_from)) {
            let (Some(record), Ok(entry)) = (chained_from(item)?, entry) else {
                continue;
            };
            if items.iter().any(|a| a.id == entry.id) {
                links.insert(entry.id, ChainLink::of(&record, tenant.as_str()));
            }
        }
        Ok(AuditPage { items, links, next })
    }

    /// L-3: a consistent view. The chain index and every head are read first, then the
    /// records; a record past its head was written after the heads were read and is left
    /// for the next verification (`verify_trail`). A chain with records but missing from
    /// the first read was created since (its index entry exists now: left for the next
    /// verification) or predates the index (its head is read now).
    async fn audit_trail(
        &self,
        tenant: &TenantId,
    ) -> Result<countersign_domain::ports::AuditTrail, StoreError> {
        use countersign_domain::audit_chain::TENANT_CHAIN;
        let index = self.chain_index(tenant).await?;
        let mut trail = countersign_domain::ports::AuditTrail {
            indexed: index.keys().cloned().collect(),
            ..Default::default()
        };
        let mut first: std::collections::BTreeSet<String> = trail.indexed.clone();
        first.insert(TENANT_CHAIN.to_owned());
        for chain in &first {
            let case = index.get(chain).and_then(Option::as_deref);
            if let Some(head) = self.head_named(tenant, chain, case).await? {
                trail.heads.insert(chain.clone(), head);
            }
        }
        for item in self.index_items(tenant, AUDIT_PREFIX).await? {
            match chained_from(&item)? {
                Some(r) => trail.records.push(r),
                None => trail.unchained += 1,
            }
        }
        let late: std::collections::BTreeSet<String> = trail
            .records
            .iter()
            .filter(|r| !first.contains(&r.chain))
            .map(|r| r.chain.clone())
            .collect();
        if !late.is_empty() {
            let indexed_now = self.chain_index(tenant).await?;
            for chain in late {
                if indexed_now.contains_key(&chain) {
                    trail.records.retain(|r| r.chain != chain);
                } else if let Some(head) = self.head_named(tenant, &chain, None).await? {
                    trail.heads.insert(chain, head);
                }
            }
        }
        Ok(trail)
    }
}
