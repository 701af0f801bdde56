//! The key that verifies gateway access tokens (D-4), read on first use and kept for the
//! life of the process: the function makes no network call at init (issue 17's cold start),
//! and a container reads the secret once, not once per request.

use countersign_domain::ports::SecretStore;
use countersign_domain::secret::SecretString;
use countersign_tools::access::{self, Verifier};
use countersign_tools::request_state::StateKey;
use std::sync::Arc;
use tokio::sync::OnceCell;

/// Why the key could not be had.
pub use countersign_tools::access::KeyError as TokenKeyError;

/// Where the key comes from.
pub struct TokenKey {
    source: Option<(Arc<dyn SecretStore>, String)>,
    /// The key, prepared once, with the tokens it verified (issue 26), and the
    /// request-state key derived from it.
    cell: OnceCell<(Verifier, StateKey)>,
}

impl std::fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenKey")
            .field("loaded", &self.cell.initialized())
            .finish_non_exhaustive()
    }
}

impl TokenKey {
    /// A key known up front (tests, tools).
    pub fn fixed(key: SecretString) -> Self {
        Self {
            source: None,
            cell: OnceCell::new_with(Some((Verifier::new(&key), StateKey::derive(&key)))),
        }
    }

    /// The current version of secret `name`, read on the first request that needs it. A
    /// failed read is not kept: the next request tries again.
    pub fn lazy(secrets: Arc<dyn SecretStore>, name: &str) -> Self {
        Self {
            source: Some((secrets, name.to_owned())),
            cell: OnceCell::new(),
        }
    }

    /// The key's verifier.
    pub async fn get(&self) -> Result<&Verifier, TokenKeyError> {
        Ok(&self.keys().await?.0)
    }

    /// The request-state key.
    pub async fn state_key(&self) -> Result<&StateKey, TokenKeyError> {
        Ok(&self.keys().await?.1)
    }

    async fn keys(&self) -> Result<&(Verifier, StateKey), TokenKeyError> {
        self.cell
            .get_or_try_init(|| async {
                let Some((secrets, name)) = &self.source else {
                    return Err(TokenKeyError::Missing);
                };
                let key = access::read_key(secrets.as_ref(), name).await?;
                Ok((Verifier::new(&key), StateKey::derive(&key)))
            })
            .await
    }
}
