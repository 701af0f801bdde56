//! Building the gateway from the process environment: what `main` and the local dev
//! server share.

use crate::Gateway;
use anyhow::Context as _;
use countersign_aws::AwsSettings;
use countersign_aws::dynamo::DynamoStore;
use countersign_aws::secrets::SecretsManagerStore;
use countersign_aws::system::SystemClock;
use countersign_domain::ports::{SecretStore, TenantStore};
use countersign_tools::access;
use countersign_tools::builtins::{self, Services};
use countersign_tools::integration::IntegrationService;
use std::sync::Arc;

/// Environment variables the deployed function reads (the SAM template sets each).
pub const ENV: [&str; 5] = [
    AwsSettings::ENV[0],
    AwsSettings::ENV[1],
    AwsSettings::ENV[2],
    AwsSettings::ENV[3],
    "COUNTERSIGN_GATEWAY_HOSTS",
];

/// Read only outside Lambda (the local stack); the template never sets them (D-5).
pub const LOCAL_ENV: [&str; 2] = [
    "COUNTERSIGN_GATEWAY_ADDR",
    "COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER",
];

fn var(name: &str) -> Option<String> {
    debug_assert!(
        ENV.contains(&name) || LOCAL_ENV.contains(&name),
        "undeclared variable {name}"
    );
    std::env::var(name).ok()
}

/// The gateway, configured from the environment.
pub async fn from_env(sdk: &aws_config::SdkConfig) -> anyhow::Result<Gateway> {
    let settings = AwsSettings::from_env();
    let store = DynamoStore::new(
        DynamoStore::client(sdk, None),
        &settings.table,
        settings.retention_days,
    );
    let secrets = SecretsManagerStore::new(
        SecretsManagerStore::client(sdk, None),
        settings.secret_prefix.clone(),
    );
    let (token_key, _) = secrets
        .get_current(access::SECRET_NAME)
        .await
        .context("reading the gateway token key")?
        .context("the gateway token key is missing; run `countersign bootstrap`")?;
    let tenants: Arc<dyn TenantStore> = Arc::new(store.clone());
    Ok(Gateway {
        registry: builtins::registry()?,
        services: Services {
            conversations: Arc::new(store.clone()),
            tenants: tenants.clone(),
            actions: None,
        },
        token_key,
        clock: Arc::new(SystemClock),
        // The API's host names, comma-separated (rmcp refuses other Host headers).
        allowed_hosts: var("COUNTERSIGN_GATEWAY_HOSTS")
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .map(str::to_owned)
            .collect(),
        // Tenants' MCP servers, for proxied consultations (G-6). D-5 applies at connect
        // time; COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER=1 (local stack only) admits 127.0.0.1.
        integration: Some(Arc::new(IntegrationService::new(
            tenants,
            Arc::new(secrets),
            Arc::new(countersign_provider_client::HttpProvider::new(
                countersign_provider_client::Settings {
                    url_policy: countersign_domain::config::UrlPolicy {
                        allow_loopback_http: var("COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER")
                            .is_some_and(|v| v == "1"),
                    },
                    ..countersign_provider_client::Settings::default()
                },
            )?),
        ))),
    })
}
