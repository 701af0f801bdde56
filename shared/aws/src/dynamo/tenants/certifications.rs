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
        let put = build(
            Put::builder()
                .table_name(&self.table)
                .set_item(Some(item))
                .build(),
        )?;
        let tx = vec![TransactWriteItem::builder().put(put).build()];
        if self.commit_audited(tenant, tx, audit).await? {
            Ok(())
        } else {
            Err(StoreError::Corrupt(format!(
                "audit record {} already exists",
                audit.id
            )))
        }
    }

    async fn latest_certification(
        &self,
        tenant: &TenantId,
    ) -> Result<Option<Certification>, StoreError> {
        let Some(item) = self.get(tenant_pk(tenant), CERTIFICATION_SK).await? else {
            return Ok(None);
        };
        serde_json::from_str(get_s(&item, "run")?)
            .map(Some)
            .map_err(|_| corrupt("run"))
    }
}
