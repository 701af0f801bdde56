//! Building the admin API from the process environment: what `main` and the local dev
//! server share.

use countersign_admin::api::AdminState;
use countersign_admin::resolve::SystemResolver;
use countersign_aws::AwsSettings;
use countersign_aws::dynamo::DynamoStore;
use countersign_aws::kms::KmsProofSigner;
use countersign_aws::secrets::SecretsManagerStore;
use countersign_aws::system::{SystemClock, UlidIds};
use countersign_domain::config::UrlPolicy;
use std::sync::Arc;

/// The default `iss` of proofs when `COUNTERSIGN_ISSUER` is unset.
pub const DEFAULT_ISSUER: &str = "https://support.example.com/mcp-actions";

/// Environment variables the deployed function reads (the SAM template sets each).
pub const ENV: [&str; 5] = [
    AwsSettings::ENV[0],
    AwsSettings::ENV[1],
    AwsSettings::ENV[2],
    AwsSettings::ENV[3],
    "COUNTERSIGN_ISSUER",
];

/// Read only outside Lambda (the local stack); the template never sets them (D-5).
pub const LOCAL_ENV: [&str; 2] = [
    "COUNTERSIGN_ADMIN_ADDR",
    "COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER",
];

fn var(name: &str) -> Option<String> {
    debug_assert!(
        ENV.contains(&name) || LOCAL_ENV.contains(&name),
        "undeclared variable {name}"
    );
    std::env::var(name).ok()
}

/// The admin API's state, configured from the environment.
pub fn state_from_env(sdk: &aws_config::SdkConfig) -> AdminState {
    let settings = AwsSettings::from_env();
    let store = DynamoStore::new(
        DynamoStore::client(sdk, None),
        &settings.table,
        settings.retention_days,
    );
    AdminState {
        tenants: Arc::new(store.clone()),
        conversations: Arc::new(store),
        secrets: Arc::new(SecretsManagerStore::new(
            SecretsManagerStore::client(sdk, None),
            settings.secret_prefix.clone(),
        )),
        signer: Arc::new(KmsProofSigner::new(
            KmsProofSigner::client(sdk, None),
            settings.signing_key,
        )),
        // The proofs' `iss`, shown to tenants (C-5).
        issuer: var("COUNTERSIGN_ISSUER").unwrap_or_else(|| DEFAULT_ISSUER.into()),
        // D-5: COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER=1 is the local stack's one explicit
        // allowance for http://127.0.0.1 providers; the deployed template never sets it.
        url_policy: UrlPolicy {
            allow_loopback_http: var("COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER").as_deref() == Some("1"),
        },
        resolver: Arc::new(SystemResolver),
        ids: Arc::new(UlidIds::default()),
        clock: Arc::new(SystemClock),
    }
}
