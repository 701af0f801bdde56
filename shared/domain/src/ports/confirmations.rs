//! Confirmation links and the MCP client state the gateway keeps for them.
//!
//! A proposal prepared through the gateway gets a link to the platform's confirmation
//! page. The link's id is random and travels only in the URL; the store keeps its SHA-256
//! (like panel sessions), so a table read never yields a working URL. What the id opens —
//! tenant, person, conversation, proposal, presentation, hashes — stays server-side.

use super::store::StoreError;
use crate::hash::Sha256Hex;
use crate::ids::{ActionId, CaseId, MessageId, OperationName, TenantId, UserId};
use crate::time::Timestamp;
use async_trait::async_trait;

/// What a confirmation page's URL opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfirmationLink {
    /// The tenant.
    pub tenant: TenantId,
    /// The gateway token's person: the only one the page serves (`sub` equality).
    pub user: UserId,
    /// The conversation the proposal lives in.
    pub case: CaseId,
    /// The proposal.
    pub action_id: ActionId,
    /// Its operation (the page names it).
    pub operation: OperationName,
    /// The message presenting its summary (the person's answer replies to it, A-22).
    pub presented: MessageId,
    /// The proposal's summary hash (binds a request state to this exact summary).
    pub summary_hash: Sha256Hex,
    /// The proposal's arguments hash.
    pub arguments_hash: Sha256Hex,
    /// The proposal's expiry: the link is refused from then on.
    pub expires_at: Timestamp,
}

/// Confirmation links, single-use request states and what each MCP client declared.
#[async_trait]
pub trait ConfirmationLinks: Send + Sync {
    /// Records `link` under `id_hash` (the SHA-256 of the URL's id).
    async fn put_link(
        &self,
        id_hash: &Sha256Hex,
        link: &ConfirmationLink,
    ) -> Result<(), StoreError>;

    /// The link under `id_hash`, if any (expired ones may still be returned: check the
    /// time).
    async fn get_link(&self, id_hash: &Sha256Hex) -> Result<Option<ConfirmationLink>, StoreError>;

    /// spends request state `state_id` (its random id) once: `true` the first time,
    /// `false` for a replay. Kept until `expires_at`, after which the state is refused on
    /// its own expiry.
    async fn spend_state(&self, state_id: &str, expires_at: Timestamp) -> Result<bool, StoreError>;

    /// records whether the client holding the gateway token with this hash declared
    /// URL-mode elicitation in its `initialize` (the `initialize` eras carry capabilities
    /// only there, and the gateway is stateless). Kept until `expires_at` (the token's).
    async fn set_url_elicitation(
        &self,
        token_hash: &Sha256Hex,
        declared: bool,
        expires_at: Timestamp,
    ) -> Result<(), StoreError>;

    /// Whether that client declared URL-mode elicitation (`false` when nothing is known).
    async fn url_elicitation(&self, token_hash: &Sha256Hex) -> Result<bool, StoreError>;

    /// N-6: opens a confirmation page's session under `key` (a digest over the link and
    /// the session's random id, so a session is good for its one link only), until
    /// `expires_at`. The session's id itself is only ever in the person's cookie.
    async fn open_page_session(
        &self,
        key: &Sha256Hex,
        expires_at: Timestamp,
    ) -> Result<(), StoreError>;

    /// N-6: until when the page session under `key` lives, if it was opened (expired ones
    /// may still be returned: check the time).
    async fn page_session(&self, key: &Sha256Hex) -> Result<Option<Timestamp>, StoreError>;
}
