//! `McpSettings`: the tenant's MCP configuration item.

use super::*;

#[async_trait]
impl McpSettings for DynamoStore {
    async fn get_mcp_config(&self, id: &TenantId) -> Result<Option<StoredMcpConfig>, StoreError> {
        self.get_as(tenant_pk(id), MCP_SK, mcp_from).await
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
        self.apply_audited(id, tx, audit).await
    }

    async fn delete_mcp_config(
        &self,
        id: &TenantId,
        expected: u64,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        let tx = vec![self.delete_where(
            key(tenant_pk(id), MCP_SK),
            Some("version = :v"),
            Some(values([(":v", n(expected))])),
        )?];
        self.apply_audited(id, tx, audit).await
    }
}
