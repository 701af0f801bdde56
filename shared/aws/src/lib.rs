//! AWS adapters of the domain's ports:
//! - [`dynamo::DynamoStore`]: the conversation/proposal store and the tenant store on one
//!   DynamoDB table, where conditional writes are the conversation lock (P-2);
//! - [`kms::KmsProofSigner`]: RS256 proofs signed by KMS, public key cached;
//! - [`secrets::SecretsManagerStore`]: tenants' service tokens and widget secrets;
//! - [`bootstrap`]: creates the table, the signing key and its alias (idempotent);
//! - [`calls::CallLog`]: an SDK interceptor that counts AWS calls per operation.
//!
//! Attribute mapping stays here: the domain only ever sees domain types.

pub mod bootstrap;
pub mod calls;
pub mod dynamo;
mod key_setup;
pub mod kms;
pub mod rotation;
pub mod sdk;
pub mod secrets;
pub mod settings;
pub mod system;

pub use settings::{AwsSettings, Env, EnvError};

impl AwsSettings {
    /// O-3: a call counter that also emits metrics, when `call_metrics` is on.
    fn calls(&self) -> Option<calls::CallLog> {
        self.call_metrics.then(calls::CallLog::emitting)
    }

    /// The conversation and tenant store on these settings' table. It writes no
    /// retention TTL: conversations are removed by the purge (R-1, decision 0052), after
    /// each tenant's own retention; a deployment-wide TTL would remove a conversation
    /// before a tenant's longer retention, and leave its messages behind.
    ///
    /// With a people's key, it seals the personal fields of every audit record it
    /// writes under their person's data key.
    pub fn store(&self, sdk: &aws_config::SdkConfig) -> dynamo::DynamoStore {
        let client = dynamo::DynamoStore::client(sdk, self.calls().as_ref());
        let store = dynamo::DynamoStore::new(client, &self.table);
        match self.subject_keys_of(sdk, &store) {
            Some(keys) => store.with_subject_keys(std::sync::Arc::new(keys)),
            None => store,
        }
    }

    /// the people's keys on these settings' table, if a people's key is configured.
    pub fn subject_keys(
        &self,
        sdk: &aws_config::SdkConfig,
    ) -> Option<std::sync::Arc<dyn countersign_domain::ports::SubjectKeys>> {
        let client = dynamo::DynamoStore::client(sdk, self.calls().as_ref());
        let store = dynamo::DynamoStore::new(client, &self.table);
        let keys = self.subject_keys_of(sdk, &store)?;
        Some(std::sync::Arc::new(keys))
    }

    fn subject_keys_of(
        &self,
        sdk: &aws_config::SdkConfig,
        store: &dynamo::DynamoStore,
    ) -> Option<dynamo::EnvelopeKeys> {
        let key = self.subject_key.clone()?;
        let kms = kms::KmsProofSigner::client(sdk, self.calls().as_ref());
        let wrap = dynamo::KmsWrap::new(kms, key);
        Some(dynamo::EnvelopeKeys::new(
            store.clone(),
            std::sync::Arc::new(wrap),
        ))
    }

    /// The secret store under these settings' prefix.
    pub fn secrets(&self, sdk: &aws_config::SdkConfig) -> secrets::SecretsManagerStore {
        let client = secrets::SecretsManagerStore::client(sdk, self.calls().as_ref());
        secrets::SecretsManagerStore::new(client, self.secret_prefix.clone())
    }

    /// The operator's own secrets, named in full (a name or an ARN, outside the tenants'
    /// prefix): the model API key (M-1).
    pub fn operator_secrets(&self, sdk: &aws_config::SdkConfig) -> secrets::SecretsManagerStore {
        let client = secrets::SecretsManagerStore::client(sdk, self.calls().as_ref());
        secrets::SecretsManagerStore::new(client, String::new())
    }

    /// The proof signer of these settings' key.
    pub fn signer(&self, sdk: &aws_config::SdkConfig) -> kms::KmsProofSigner {
        let client = kms::KmsProofSigner::client(sdk, self.calls().as_ref());
        kms::KmsProofSigner::new(client, self.signing_key.clone())
            .with_refresh(self.signing_key_refresh)
            .with_ring(self.store(sdk))
    }

    /// The audit checkpoint key's signer (V-6): its own KMS key, never the action key.
    pub fn checkpoint_signer(&self, sdk: &aws_config::SdkConfig) -> kms::KmsProofSigner {
        let client = kms::KmsProofSigner::client(sdk, self.calls().as_ref());
        kms::KmsProofSigner::new(client, self.checkpoint_key.clone())
            .with_ring(self.store(sdk).for_checkpoint_ring())
    }
}
