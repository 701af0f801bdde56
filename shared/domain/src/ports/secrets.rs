//! The secret store.

use super::store::Cause;
use crate::secret::SecretString;
use async_trait::async_trait;

/// A secret store failure.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// The store could not be reached or refused.
    #[error("the secret store is unavailable")]
    Unavailable(#[source] Cause),
}

/// Where tenants' secrets live (service tokens, widget secrets), encrypted at rest.
#[async_trait]
pub trait SecretStore: Send + Sync {
    /// Stores a new version of secret `name` (creating it if needed); returns the version id.
    async fn put(&self, name: &str, value: &SecretString) -> Result<String, SecretError>;
    /// The current version and its id; `None` when the secret does not exist.
    async fn get_current(&self, name: &str) -> Result<Option<(SecretString, String)>, SecretError>;
    /// A given version (C-8: reconcile with the integration that executed); `None` when
    /// absent.
    async fn get_version(
        &self,
        name: &str,
        version: &str,
    ) -> Result<Option<SecretString>, SecretError>;
    /// Deletes the secret and all its versions. Deleting an absent secret succeeds.
    async fn delete(&self, name: &str) -> Result<(), SecretError>;
}

/// The name, under the deployment's secret prefix, of the one platform secret: the key
/// that signs gateway access tokens (D-4). Bootstrap creates it and the gateway reads
/// it — one name, here, so the two cannot disagree.
pub const GATEWAY_TOKEN_KEY: &str = "platform/gateway-token-key";
