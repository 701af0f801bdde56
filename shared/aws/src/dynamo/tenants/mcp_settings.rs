//! `McpSettings`: the tenant's MCP configuration item, and its mapping to and from the
//! table (the token itself lives in Secrets Manager).

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

fn list(v: impl IntoIterator<Item = String>) -> AttributeValue {
    AttributeValue::L(v.into_iter().map(AttributeValue::S).collect())
}

fn str_list(i: &Item, k: &str) -> Result<Vec<String>, StoreError> {
    match i.get(k) {
        None => Ok(Vec::new()),
        Some(AttributeValue::L(items)) => items
            .iter()
            .map(|v| v.as_s().cloned().map_err(|_| corrupt(k)))
            .collect(),
        Some(_) => Err(corrupt(k)),
    }
}

fn mcp_item(tenant: &TenantId, c: &StoredMcpConfig) -> Item {
    let mut i = key(tenant_pk(tenant), MCP_SK);
    i.insert("server_url".into(), s(c.config.server_url.as_str()));
    i.insert(
        "allowed_tools".into(),
        list(c.config.allowed_tools.iter().map(ToString::to_string)),
    );
    i.insert(
        "actions_enabled".into(),
        AttributeValue::Bool(c.config.action_policy.enabled),
    );
    i.insert(
        "operations".into(),
        list(
            c.config
                .action_policy
                .operations
                .iter()
                .map(ToString::to_string),
        ),
    );
    if !c.config.action_policy.step_up.is_empty() {
        let passkey = c
            .config
            .action_policy
            .step_up
            .iter()
            .map(ToString::to_string);
        i.insert("step_up_passkey".into(), list(passkey));
    }
    if c.config.action_policy.step_up_fallback {
        i.insert("step_up_fallback".into(), AttributeValue::Bool(true));
    }
    if let Some(a) = &c.config.audience {
        i.insert("audience".into(), s(a.as_str()));
    }
    if !c.config.approved.is_empty() {
        let forms = c
            .config
            .approved
            .iter()
            .map(|(tool, form)| (tool.clone(), s(form.as_str())))
            .collect();
        i.insert("approved_tools".into(), AttributeValue::M(forms));
    }
    i.insert("version".into(), n(c.version));
    i.insert("actions_version".into(), n(c.actions_version));
    i.insert("secret_version".into(), s(c.secret_version.as_str()));
    i
}

/// V-2: the approved descriptor forms (absent before pinning: none).
fn approved_from(i: &Item) -> Result<countersign_domain::pinning::Approved, StoreError> {
    match i.get("approved_tools") {
        None => Ok(countersign_domain::pinning::Approved::new()),
        Some(AttributeValue::M(m)) => m
            .iter()
            .map(|(k, v)| {
                v.as_s()
                    .map(|s| (k.clone(), s.clone()))
                    .map_err(|_| corrupt("approved_tools"))
            })
            .collect(),
        Some(_) => Err(corrupt("approved_tools")),
    }
}

fn mcp_from(i: &Item) -> Result<StoredMcpConfig, StoreError> {
    // Stored URLs passed the save-time rules; the loopback allowance only lets a local
    // stack's configuration be read back. Connect-time checks (D-5) still apply.
    let url_policy = UrlPolicy {
        allow_loopback_http: true,
    };
    Ok(StoredMcpConfig {
        config: McpConfig {
            server_url: ServerUrl::parse(get_s(i, "server_url")?, url_policy)
                .map_err(|_| corrupt("server_url"))?,
            service_token: SecretString::new(""),
            allowed_tools: str_list(i, "allowed_tools")?
                .into_iter()
                .map(|t| ToolName::parse(t).map_err(|_| corrupt("allowed_tools")))
                .collect::<Result<_, _>>()?,
            action_policy: ActionPolicy {
                enabled: i
                    .get("actions_enabled")
                    .and_then(|v| v.as_bool().ok())
                    .copied()
                    .unwrap_or(false),
                operations: str_list(i, "operations")?
                    .into_iter()
                    .map(|o| OperationName::parse(o).map_err(|_| corrupt("operations")))
                    .collect::<Result<_, _>>()?,
                // F-1: absent before step-up existed: every operation `none`.
                step_up: match i.get("step_up_passkey") {
                    None => Default::default(),
                    Some(_) => str_list(i, "step_up_passkey")?
                        .into_iter()
                        .map(|o| OperationName::parse(o).map_err(|_| corrupt("step_up_passkey")))
                        .collect::<Result<_, _>>()?,
                },
                step_up_fallback: i
                    .get("step_up_fallback")
                    .and_then(|v| v.as_bool().ok())
                    .copied()
                    .unwrap_or(false),
            },
            audience: opt_s(i, "audience").map(str::to_owned),
            approved: approved_from(i)?,
        },
        version: get_n(i, "version")?,
        // Written since C-8's fence moved to preparation; before, every change counted.
        actions_version: get_n(i, "actions_version").or_else(|_| get_n(i, "version"))?,
        secret_version: get_s(i, "secret_version")?.to_owned(),
    })
}
