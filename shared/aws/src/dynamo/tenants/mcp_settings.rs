//! `McpSettings`: the tenant's MCP configuration item.

use super::*;

#[async_trait]
impl McpSettings for DynamoStore {
    async fn get_mcp_config(&self, id: &TenantId) -> Result<Option<StoredMcpConfig>, StoreError> {
        self.get(tenant_pk(id), MCP_SK)
            .await?
            .as_ref()
            .map(mcp_from)
            .transpose()
    }

    async fn put_mcp_config(
        &self,
        id: &TenantId,
        config: &StoredMcpConfig,
        expected: Option<u64>,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        let mut put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(mcp_item(id, config)));
        put = match expected {
            None => put.condition_expression("attribute_not_exists(pk)"),
            Some(v) => put
                .condition_expression("version = :v")
                .expression_attribute_values(":v", n(v)),
        };
        // The configuration and its audit record commit together or not at all.
        let tx = vec![
            TransactWriteItem::builder()
                .put(build(put.build())?)
                .build(),
        ];
        if self.commit_audited(id, tx, audit).await? {
            Ok(TransitionOutcome::Applied)
        } else {
            Ok(TransitionOutcome::Conflict { current: None })
        }
    }

    async fn delete_mcp_config(
        &self,
        id: &TenantId,
        expected: u64,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        let delete = build(
            Delete::builder()
                .table_name(&self.table)
                .set_key(Some(key(tenant_pk(id), MCP_SK)))
                .condition_expression("version = :v")
                .expression_attribute_values(":v", n(expected))
                .build(),
        )?;
        let tx = vec![TransactWriteItem::builder().delete(delete).build()];
        if self.commit_audited(id, tx, audit).await? {
            Ok(TransitionOutcome::Applied)
        } else {
            Ok(TransitionOutcome::Conflict { current: None })
        }
    }
}
