//! Confirmation links, spent request states and what each MCP client declared:
//! small items in their own partitions, each removed by the table's TTL once useless.

use super::DynamoStore;
use super::items::*;
use async_trait::async_trait;
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::{ActionId, CaseId, MessageId, OperationName, TenantId, UserId};
use countersign_domain::ports::{ConfirmationLink, ConfirmationLinks, StoreError};
use countersign_domain::time::Timestamp;

/// A link, under the SHA-256 of its id (the id itself is only ever in the URL).
pub(super) const LINK_PREFIX: &str = "CONFIRMLINK#";
const LINK_SK: &str = "LINK";
/// A spent request state, under its random id.
pub(super) const STATE_PREFIX: &str = "REQUESTSTATE#";
const STATE_SK: &str = "SPENT";
/// What the client holding a gateway token declared at `initialize`, under the token's
/// SHA-256.
pub(super) const CLIENT_PREFIX: &str = "MCPCLIENT#";
const CLIENT_SK: &str = "CAPABILITIES";
/// N-6: a confirmation page's session, under a digest of its link and its random id.
pub(super) const PAGE_SESSION_PREFIX: &str = "PAGESESSION#";
const PAGE_SESSION_SK: &str = "SESSION";
/// a link's pointer in its conversation's partition (decision 0055): the purge deletes
/// the link with the conversation instead of leaving it to the TTL.
const LINK_POINTER_PREFIX: &str = "LINK#";

/// The key of the link a conversation's pointer item (sort key `sk`) names.
pub(crate) fn link_key_of_pointer(sk: &str) -> Option<Item> {
    let hash = sk.strip_prefix(LINK_POINTER_PREFIX)?;
    Some(key(format!("{LINK_PREFIX}{hash}"), LINK_SK))
}

/// Items outlive their use by a day (TTL deletion is lazy anyway; reads check the time).
const GRACE_SECONDS: i64 = 86_400;

fn link_from(i: &Item) -> Result<ConfirmationLink, StoreError> {
    let hash = |k: &'static str| Sha256Hex::parse(get_s(i, k)?).map_err(|_| corrupt(k));
    Ok(ConfirmationLink {
        tenant: TenantId::parse(get_s(i, "tenant_id")?).map_err(|_| corrupt("tenant_id"))?,
        user: UserId::parse(get_s(i, "user_id")?).map_err(|_| corrupt("user_id"))?,
        case: CaseId::parse(get_s(i, "case_id")?).map_err(|_| corrupt("case_id"))?,
        action_id: ActionId::parse(get_s(i, "action_id")?).map_err(|_| corrupt("action_id"))?,
        operation: OperationName::parse(get_s(i, "operation")?)
            .map_err(|_| corrupt("operation"))?,
        presented: MessageId::parse(get_s(i, "presented")?).map_err(|_| corrupt("presented"))?,
        summary_hash: hash("summary_hash")?,
        arguments_hash: hash("arguments_hash")?,
        expires_at: Timestamp::parse_utc(get_s(i, "expires_at")?)
            .map_err(|_| corrupt("expires_at"))?,
    })
}

#[async_trait]
impl ConfirmationLinks for DynamoStore {
    async fn put_link(
        &self,
        id_hash: &Sha256Hex,
        link: &ConfirmationLink,
    ) -> Result<(), StoreError> {
        let mut item = key(format!("{LINK_PREFIX}{id_hash}"), LINK_SK);
        item.insert("tenant_id".into(), s(link.tenant.as_str()));
        item.insert("user_id".into(), s(link.user.as_str()));
        item.insert("case_id".into(), s(link.case.as_str()));
        item.insert("action_id".into(), s(link.action_id.as_str()));
        item.insert("operation".into(), s(link.operation.as_str()));
        item.insert("presented".into(), s(link.presented.as_str()));
        item.insert("summary_hash".into(), s(link.summary_hash.as_str()));
        item.insert("arguments_hash".into(), s(link.arguments_hash.as_str()));
        item.insert("expires_at".into(), s(link.expires_at.to_rfc3339()));
        item.insert(
            TTL.into(),
            n(link.expires_at.unix_seconds() + GRACE_SECONDS),
        );
        let pointer = key(
            conv_pk(&link.tenant, &link.case),
            format!("{LINK_POINTER_PREFIX}{id_hash}"),
        );
        // N-4: the link and its pointer only into a conversation that exists.
        let tx = vec![self.put_new(item)?, self.put_new(pointer)?];
        self.write_into(&link.tenant, &link.case, tx, None).await
    }

    async fn get_link(&self, id_hash: &Sha256Hex) -> Result<Option<ConfirmationLink>, StoreError> {
        self.get_as(format!("{LINK_PREFIX}{id_hash}"), LINK_SK, link_from)
            .await
    }

    async fn spend_state(&self, state_id: &str, expires_at: Timestamp) -> Result<bool, StoreError> {
        let mut item = key(format!("{STATE_PREFIX}{state_id}"), STATE_SK);
        item.insert(TTL.into(), n(expires_at.unix_seconds() + GRACE_SECONDS));
        self.put_if_new(item).await
    }

    async fn set_url_elicitation(
        &self,
        token_hash: &Sha256Hex,
        declared: bool,
        expires_at: Timestamp,
    ) -> Result<(), StoreError> {
        let mut item = key(format!("{CLIENT_PREFIX}{token_hash}"), CLIENT_SK);
        item.insert(
            "url_elicitation".into(),
            aws_sdk_dynamodb::types::AttributeValue::Bool(declared),
        );
        item.insert(TTL.into(), n(expires_at.unix_seconds() + GRACE_SECONDS));
        self.put_plain(item).await
    }

    async fn open_page_session(
        &self,
        key_hash: &Sha256Hex,
        expires_at: Timestamp,
    ) -> Result<(), StoreError> {
        let mut item = key(format!("{PAGE_SESSION_PREFIX}{key_hash}"), PAGE_SESSION_SK);
        item.insert("expires_at".into(), s(expires_at.to_rfc3339()));
        item.insert(TTL.into(), n(expires_at.unix_seconds() + GRACE_SECONDS));
        // A new random id never meets an existing item; the condition keeps it so.
        self.put_fresh(item).await
    }

    async fn page_session(&self, key_hash: &Sha256Hex) -> Result<Option<Timestamp>, StoreError> {
        self.get_as(
            format!("{PAGE_SESSION_PREFIX}{key_hash}"),
            PAGE_SESSION_SK,
            |i| Timestamp::parse_utc(get_s(i, "expires_at")?).map_err(|_| corrupt("expires_at")),
        )
        .await
    }

    async fn url_elicitation(&self, token_hash: &Sha256Hex) -> Result<bool, StoreError> {
        Ok(self
            .get(format!("{CLIENT_PREFIX}{token_hash}"), CLIENT_SK)
            .await?
            .and_then(|i| {
                i.get("url_elicitation")
                    .and_then(|v| v.as_bool().ok())
                    .copied()
            })
            .unwrap_or(false))
    }
}
