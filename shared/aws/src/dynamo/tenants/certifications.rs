//! `Certifications`: the latest certification run.

use super::*;

#[async_trait]
impl Certifications for DynamoStore {
    async fn put_certification(
        &self,
        tenant: &TenantId,
        run: &Certification,
        audit: &AuditEntry,
    ) -> Result<(), StoreError> {
        let mut item = key(tenant_pk(tenant), CERTIFICATION_SK);
        let body = serde_json::to_string(run).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        item.insert("run".into(), s(body));
        let tx = vec![self.put(item)?];
        self.create_audited(tenant, tx, audit, || format!("audit record {}", audit.id))
            .await
    }

    async fn latest_certification(
        &self,
        tenant: &TenantId,
    ) -> Result<Option<Certification>, StoreError> {
        self.get_as(tenant_pk(tenant), CERTIFICATION_SK, |i| {
            serde_json::from_str(get_s(i, "run")?).map_err(|_| corrupt("run"))
        })
        .await
    }
}
