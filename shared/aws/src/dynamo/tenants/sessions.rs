//! `SessionStore`: the panel's sessions.

use super::*;

/// Panel sessions: one item each, removed by the table's TTL a day after they end (they
/// are refused from their `expires_at` on).
#[async_trait]
impl SessionStore for DynamoStore {
    async fn put_session(
        &self,
        id_hash: &Sha256Hex,
        session: &PanelSession,
    ) -> Result<(), StoreError> {
        let mut item = key(format!("{SESSION_PREFIX}{id_hash}"), SESSION_SK);
        item.insert("tenant_id".into(), s(session.tenant.as_str()));
        item.insert("key_hash".into(), s(session.key_hash.as_str()));
        item.insert("expires_at".into(), s(session.expires_at.to_rfc3339()));
        item.insert(TTL.into(), n(session.expires_at.unix_seconds() + 86_400));
        self.put_plain(item).await
    }

    async fn get_session(&self, id_hash: &Sha256Hex) -> Result<Option<PanelSession>, StoreError> {
        self.get_as(format!("{SESSION_PREFIX}{id_hash}"), SESSION_SK, |i| {
            Ok(PanelSession {
                tenant: TenantId::parse(get_s(i, "tenant_id")?)
                    .map_err(|_| corrupt("tenant_id"))?,
                key_hash: Sha256Hex::parse(get_s(i, "key_hash")?)
                    .map_err(|_| corrupt("key_hash"))?,
                expires_at: Timestamp::parse_utc(get_s(i, "expires_at")?)
                    .map_err(|_| corrupt("expires_at"))?,
            })
        })
        .await
    }

    async fn delete_session(&self, id_hash: &Sha256Hex) -> Result<(), StoreError> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(key(format!("{SESSION_PREFIX}{id_hash}"), SESSION_SK)))
            .send()
            .await
            .map_err(unavailable)?;
        Ok(())
    }
}
