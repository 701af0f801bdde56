//! the gateway token key, as the messages function holds it to mint a person's
//! gateway token (`crate::mcp_token`).

use countersign_domain::ports::{SecretStore, StoreError};
use countersign_domain::secret::SecretString;
use countersign_tools::access::LazyKey;
use std::sync::Arc;

/// The gateway token key, read on first use and kept for the life of the process (a
/// failed read is tried again on the next request).
#[derive(Debug)]
pub struct McpTokens {
    key: LazyKey<SecretString>,
}

impl McpTokens {
    /// The key in secret `name` of `secrets` ([`countersign_tools::access::SECRET_NAME`] in a deployment).
    pub fn lazy(secrets: Arc<dyn SecretStore>, name: &str) -> Self {
        Self {
            key: LazyKey::lazy(secrets, name),
        }
    }

    /// A key known up front (tests, the local stack).
    pub fn fixed(key: SecretString) -> Self {
        Self {
            key: LazyKey::fixed(key),
        }
    }

    /// The key (read once; a failed read is tried again next time).
    pub(crate) async fn key(&self) -> Result<&SecretString, StoreError> {
        self.key
            .get(|key| key)
            .await
            .map_err(|e| StoreError::Unavailable(Box::new(e)))
    }
}
