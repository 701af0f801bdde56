//! `WidgetKeys`: widget credentials and their origins.

use super::*;

#[async_trait]
impl WidgetKeys for DynamoStore {
    async fn put_widget_key(
        &self,
        tenant: &TenantId,
        k: &WidgetKey,
        audit: &AuditEntry,
    ) -> Result<(), StoreError> {
        let mut item = key(tenant_pk(tenant), format!("{WIDGET_KEY_PREFIX}{}", k.id));
        item.insert("key_id".into(), s(k.id.as_str()));
        item.insert("created_at".into(), s(k.created_at.to_rfc3339()));
        item.insert(
            "origins".into(),
            s(serde_json::Value::from(k.allowed_origins.clone()).to_string()),
        );
        let tx = vec![self.put_new(item)?];
        self.create_audited(tenant, tx, audit, || format!("widget key {}", k.id))
            .await
    }

    async fn get_widget_key(
        &self,
        tenant: &TenantId,
        id: &WidgetKeyId,
    ) -> Result<Option<WidgetKey>, StoreError> {
        self.get_as(
            tenant_pk(tenant),
            format!("{WIDGET_KEY_PREFIX}{id}"),
            widget_key,
        )
        .await
    }

    async fn list_widget_keys(&self, tenant: &TenantId) -> Result<Vec<WidgetKey>, StoreError> {
        self.tenant_items(tenant, WIDGET_KEY_PREFIX)
            .await?
            .iter()
            .map(widget_key)
            .collect()
    }

    async fn delete_widget_key(
        &self,
        tenant: &TenantId,
        id: &WidgetKeyId,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        let tx = vec![self.delete_where(
            key(tenant_pk(tenant), format!("{WIDGET_KEY_PREFIX}{id}")),
            Some("attribute_exists(pk)"),
            None,
        )?];
        self.apply_audited(tenant, tx, audit).await
    }

    async fn retire_widget_key(
        &self,
        tenant: &TenantId,
        id: &WidgetKeyId,
        at: Timestamp,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        let tx = vec![self.update(
            key(tenant_pk(tenant), format!("{WIDGET_KEY_PREFIX}{id}")),
            "SET retires_at = :at".to_owned(),
            "attribute_exists(pk) AND attribute_not_exists(retires_at)",
            values([(":at", s(at.to_rfc3339()))]),
        )?];
        self.apply_audited(tenant, tx, audit).await
    }
}

/// A widget credential item. One written before credentials had origins has none.
fn widget_key(
    i: &std::collections::HashMap<String, AttributeValue>,
) -> Result<WidgetKey, StoreError> {
    let allowed_origins = match i.get("origins").and_then(|v| v.as_s().ok()) {
        Some(json) => serde_json::from_str(json).map_err(|_| corrupt("origins"))?,
        None => Vec::new(),
    };
    Ok(WidgetKey {
        id: WidgetKeyId::parse(get_s(i, "key_id")?).map_err(|_| corrupt("key_id"))?,
        created_at: Timestamp::parse_utc(get_s(i, "created_at")?)
            .map_err(|_| corrupt("created_at"))?,
        allowed_origins,
        retires_at: i
            .get("retires_at")
            .and_then(|v| v.as_s().ok())
            .map(|t| Timestamp::parse_utc(t).map_err(|_| corrupt("retires_at")))
            .transpose()?,
    })
}
