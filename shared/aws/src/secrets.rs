//! The Secrets Manager adapter of the secret store: tenants' MCP service tokens and widget
//! secrets, encrypted at rest by Secrets Manager, each change a new version (C-3, C-8).

use crate::calls::CallLog;
use async_trait::async_trait;
use aws_sdk_secretsmanager::Client;
use countersign_domain::ports::{SecretError, SecretStore};
use countersign_domain::secret::SecretString;

/// Secrets under one name prefix (so IAM policies can be scoped to it).
#[derive(Debug, Clone)]
pub struct SecretsManagerStore {
    client: Client,
    prefix: String,
}

fn unavailable<E: std::error::Error + Send + Sync + 'static>(e: E) -> SecretError {
    SecretError::Unavailable(Box::new(e))
}

impl SecretsManagerStore {
    /// A store whose secret names all start with `prefix`.
    pub fn new(client: Client, prefix: impl Into<String>) -> Self {
        Self {
            client,
            prefix: prefix.into(),
        }
    }

    /// Builds the SDK client from the shared AWS configuration, optionally counting calls.
    pub fn client(sdk: &aws_config::SdkConfig, calls: Option<&CallLog>) -> Client {
        let mut b = aws_sdk_secretsmanager::config::Builder::from(sdk);
        if let Some(c) = calls {
            b = b.interceptor(c.clone());
        }
        Client::from_conf(b.build())
    }

    fn full(&self, name: &str) -> String {
        format!("{}{}", self.prefix, name)
    }
}

/// The answer of one call, or `None` when it failed with the one error `expected` names
/// (a secret that is not there, or already there); any other failure is `Unavailable`.
fn unless<O, E>(
    r: Result<O, aws_sdk_secretsmanager::error::SdkError<E>>,
    expected: impl Fn(&E) -> bool,
) -> Result<Option<O>, SecretError>
where
    E: std::error::Error + Send + Sync + 'static,
{
    match r {
        Ok(out) => Ok(Some(out)),
        Err(e) if e.as_service_error().is_some_and(&expected) => Ok(None),
        Err(e) => Err(unavailable(e)),
    }
}

#[async_trait]
impl SecretStore for SecretsManagerStore {
    async fn put(&self, name: &str, value: &SecretString) -> Result<String, SecretError> {
        let id = self.full(name);
        // Two attempts: a concurrent writer may create the secret between our two calls.
        for _ in 0..2 {
            let put = (self.client.put_secret_value())
                .secret_id(&id)
                .secret_string(value.expose())
                .send()
                .await;
            if let Some(out) = unless(put, |e| e.is_resource_not_found_exception())? {
                return Ok(out.version_id.unwrap_or_default());
            }
            let created = (self.client.create_secret())
                .name(&id)
                .secret_string(value.expose())
                .send()
                .await;
            if let Some(out) = unless(created, |e| e.is_resource_exists_exception())? {
                return Ok(out.version_id.unwrap_or_default());
            }
        }
        Err(SecretError::Unavailable(
            "the secret kept changing while it was written".into(),
        ))
    }

    async fn get_current(&self, name: &str) -> Result<Option<(SecretString, String)>, SecretError> {
        let got = (self.client.get_secret_value())
            .secret_id(self.full(name))
            .send()
            .await;
        Ok(
            unless(got, |e| e.is_resource_not_found_exception())?.map(|out| {
                (
                    SecretString::new(out.secret_string.unwrap_or_default()),
                    out.version_id.unwrap_or_default(),
                )
            }),
        )
    }

    async fn get_version(
        &self,
        name: &str,
        version: &str,
    ) -> Result<Option<SecretString>, SecretError> {
        let got = (self.client.get_secret_value())
            .secret_id(self.full(name))
            .version_id(version)
            .send()
            .await;
        Ok(unless(got, |e| e.is_resource_not_found_exception())?
            .map(|out| SecretString::new(out.secret_string.unwrap_or_default())))
    }

    async fn delete(&self, name: &str) -> Result<(), SecretError> {
        let deleted = (self.client.delete_secret())
            .secret_id(self.full(name))
            .force_delete_without_recovery(true)
            .send()
            .await;
        unless(deleted, |e| e.is_resource_not_found_exception()).map(|_| ())
    }
}
