//! The key that verifies gateway access tokens (D-4), read on first use and kept for the
//! life of the process: the function makes no network call at init (issue 17's cold start),
//! and a container reads the secret once, not once per request.

use countersign_domain::ports::SecretStore;
use countersign_domain::secret::SecretString;
use countersign_tools::access::{LazyKey, Verifier};
use countersign_tools::request_state::StateKey;
use std::sync::Arc;

/// Why the key could not be had.
pub use countersign_tools::access::KeyError as TokenKeyError;

/// Where the key comes from.
#[derive(Debug)]
pub struct TokenKey {
    /// The key, prepared once, with the tokens it verified (issue 26), and the
    /// request-state key derived from it.
    keys: LazyKey<(Verifier, StateKey)>,
}

/// What the gateway keeps of the key: its verifier and the request-state key.
fn prepare(key: SecretString) -> (Verifier, StateKey) {
    (Verifier::new(&key), StateKey::derive(&key))
}

impl TokenKey {
    /// A key known up front (tests, tools).
    pub fn fixed(key: SecretString) -> Self {
        Self {
            keys: LazyKey::fixed(prepare(key)),
        }
    }

    /// The current version of secret `name`, read on the first request that needs it. A
    /// failed read is not kept: the next request tries again.
    pub fn lazy(secrets: Arc<dyn SecretStore>, name: &str) -> Self {
        Self {
            keys: LazyKey::lazy(secrets, name),
        }
    }

    /// The key's verifier.
    pub async fn get(&self) -> Result<&Verifier, TokenKeyError> {
        Ok(&self.keys.get(prepare).await?.0)
    }

    /// The request-state key.
    pub async fn state_key(&self) -> Result<&StateKey, TokenKeyError> {
        Ok(&self.keys.get(prepare).await?.1)
    }
}
