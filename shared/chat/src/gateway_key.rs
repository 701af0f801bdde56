//! the gateway token key, as the messages function holds it to mint a person's
//! gateway token (`crate::mcp_token`).

use countersign_domain::ports::{SecretStore, StoreError};
use countersign_domain::secret::SecretString;
use countersign_tools::access;
use std::sync::Arc;
use tokio::sync::OnceCell;

/// The gateway token key, read on first use and kept for the life of the process (a
/// failed read is tried again on the next request).
pub struct McpTokens {
    source: Option<(Arc<dyn SecretStore>, String)>,
    key: OnceCell<SecretString>,
}

impl std::fmt::Debug for McpTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTokens")
            .field("loaded", &self.key.initialized())
            .finish_non_exhaustive()
    }
}

impl McpTokens {
    /// The key in secret `name` of `secrets` ([`countersign_tools::access::SECRET_NAME`] in a deployment).
    pub fn lazy(secrets: Arc<dyn SecretStore>, name: &str) -> Self {
        Self {
            source: Some((secrets, name.to_owned())),
            key: OnceCell::new(),
        }
    }

    /// A key known up front (tests, the local stack).
    pub fn fixed(key: SecretString) -> Self {
        Self {
            source: None,
            key: OnceCell::new_with(Some(key)),
        }
    }

    /// The key (read once; a failed read is tried again next time).
    pub(crate) async fn key(&self) -> Result<&SecretString, StoreError> {
        self.key
            .get_or_try_init(|| async {
                let Some((secrets, name)) = &self.source else {
                    return Err(StoreError::Unavailable(Box::new(access::KeyError::Missing)));
                };
                access::read_key(secrets.as_ref(), name)
                    .await
                    .map_err(|e| StoreError::Unavailable(Box::new(e)))
            })
            .await
    }
}
