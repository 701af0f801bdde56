//! Building the messages API from the process environment: what `main` and the local dev
//! server share.

use anyhow::Context as _;
use countersign_aws::AwsSettings;
use countersign_aws::dynamo::DynamoStore;
use countersign_aws::kms::KmsProofSigner;
use countersign_aws::secrets::SecretsManagerStore;
use countersign_aws::system::{SystemClock, UlidIds};
use countersign_chat::api::AppState;
use countersign_chat::model::ScriptedModel;
use countersign_chat::widget::WidgetAuth;
use countersign_chat::{Chat, ChatParts};
use countersign_domain::config::UrlPolicy;
use std::sync::Arc;
use std::time::Duration;

/// The default `iss` of proofs when `COUNTERSIGN_ISSUER` is unset.
pub const DEFAULT_ISSUER: &str = "https://support.example.com/mcp-actions";

/// Environment variables the deployed function reads (the SAM template sets each).
pub const ENV: [&str; 8] = [
    AwsSettings::ENV[0],
    AwsSettings::ENV[1],
    AwsSettings::ENV[2],
    AwsSettings::ENV[3],
    "COUNTERSIGN_ISSUER",
    "COUNTERSIGN_MODEL",
    "COUNTERSIGN_PROVIDER_TIMEOUT_SECS",
    "COUNTERSIGN_EXECUTING_STUCK_AFTER_SECS",
];

/// Read only outside Lambda (the local stack); the template never sets them (D-5).
pub const LOCAL_ENV: [&str; 2] = [
    "COUNTERSIGN_MESSAGES_ADDR",
    "COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER",
];

fn var(name: &str) -> Option<String> {
    debug_assert!(
        ENV.contains(&name) || LOCAL_ENV.contains(&name),
        "undeclared variable {name}"
    );
    std::env::var(name).ok()
}

fn secs(name: &str, default: u64) -> anyhow::Result<Duration> {
    match var(name) {
        Some(v) => {
            Ok(Duration::from_secs(v.parse().with_context(|| {
                format!("{name} must be whole seconds")
            })?))
        }
        None => Ok(Duration::from_secs(default)),
    }
}

/// The messages API's state, configured from the environment.
pub fn state_from_env(sdk: &aws_config::SdkConfig) -> anyhow::Result<AppState> {
    let settings = AwsSettings::from_env();
    let store = DynamoStore::new(
        DynamoStore::client(sdk, None),
        &settings.table,
        settings.retention_days,
    );
    let secrets = Arc::new(SecretsManagerStore::new(
        SecretsManagerStore::client(sdk, None),
        settings.secret_prefix.clone(),
    ));
    anyhow::ensure!(
        var("COUNTERSIGN_MODEL").is_none_or(|m| m == "scripted"),
        "COUNTERSIGN_MODEL: only `scripted` is available in this build"
    );
    let provider =
        countersign_provider_client::HttpProvider::new(countersign_provider_client::Settings {
            timeout: secs("COUNTERSIGN_PROVIDER_TIMEOUT_SECS", 10)?,
            url_policy: UrlPolicy {
                allow_loopback_http: var("COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER").as_deref()
                    == Some("1"),
            },
            ..countersign_provider_client::Settings::default()
        })?;
    let chat = Chat::new(ChatParts {
        conversations: Arc::new(store.clone()),
        tenants: Arc::new(store.clone()),
        integration: Arc::new(countersign_tools::integration::IntegrationService::new(
            Arc::new(store.clone()),
            secrets.clone(),
            Arc::new(provider),
        )),
        signer: Arc::new(KmsProofSigner::new(
            KmsProofSigner::client(sdk, None),
            settings.signing_key,
        )),
        model: Arc::new(ScriptedModel),
        registry: Arc::new(countersign_tools::builtins::registry()?),
        clock: Arc::new(SystemClock),
        ids: Arc::new(UlidIds::default()),
        issuer: var("COUNTERSIGN_ISSUER").unwrap_or_else(|| DEFAULT_ISSUER.into()),
        stuck_after: secs("COUNTERSIGN_EXECUTING_STUCK_AFTER_SECS", 30)?,
    });
    Ok(AppState {
        chat: Arc::new(chat),
        auth: Arc::new(WidgetAuth::new(Arc::new(store), secrets)),
    })
}
