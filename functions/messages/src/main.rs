//! The messages function: reads configuration once, builds clients once, then serves the
//! widget API (`countersign_chat::api`) through Lambda (when `AWS_LAMBDA_RUNTIME_API` is
//! set) or on a local port.
//!
//! Environment (besides the AWS settings of `countersign_aws::AwsSettings`):
//! `COUNTERSIGN_MESSAGES_ADDR` (local address, default 127.0.0.1:8789),
//! `COUNTERSIGN_ISSUER`, `COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER=1` (local stack only),
//! `COUNTERSIGN_PROVIDER_TIMEOUT_SECS` (default 10), `COUNTERSIGN_EXECUTING_STUCK_AFTER_SECS`
//! (default 30), `COUNTERSIGN_MODEL` (`scripted`, the only model until the model issue).

use anyhow::Context as _;
use countersign_aws::AwsSettings;
use countersign_aws::dynamo::DynamoStore;
use countersign_aws::kms::KmsProofSigner;
use countersign_aws::secrets::SecretsManagerStore;
use countersign_aws::system::{SystemClock, UlidIds};
use countersign_chat::api::{AppState, router};
use countersign_chat::model::ScriptedModel;
use countersign_chat::widget::WidgetAuth;
use countersign_chat::{Chat, ChatParts};
use countersign_domain::config::UrlPolicy;
use std::sync::Arc;
use std::time::Duration;

fn secs(name: &str, default: u64) -> anyhow::Result<Duration> {
    match std::env::var(name) {
        Ok(v) => {
            Ok(Duration::from_secs(v.parse().with_context(|| {
                format!("{name} must be whole seconds")
            })?))
        }
        Err(_) => Ok(Duration::from_secs(default)),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let sdk = aws_config::load_from_env().await;
    let settings = AwsSettings::from_env();
    let store = DynamoStore::new(
        DynamoStore::client(&sdk, None),
        &settings.table,
        settings.retention_days,
    );
    let secrets = Arc::new(SecretsManagerStore::new(
        SecretsManagerStore::client(&sdk, None),
        settings.secret_prefix.clone(),
    ));
    anyhow::ensure!(
        std::env::var("COUNTERSIGN_MODEL").map_or(true, |m| m == "scripted"),
        "COUNTERSIGN_MODEL: only `scripted` is available in this build"
    );
    let provider =
        countersign_provider_client::HttpProvider::new(countersign_provider_client::Settings {
            timeout: secs("COUNTERSIGN_PROVIDER_TIMEOUT_SECS", 10)?,
            url_policy: UrlPolicy {
                allow_loopback_http: std::env::var("COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER")
                    .as_deref()
                    == Ok("1"),
            },
            ..countersign_provider_client::Settings::default()
        })?;
    let chat = Chat::new(ChatParts {
        conversations: Arc::new(store.clone()),
        tenants: Arc::new(store.clone()),
        secrets: secrets.clone(),
        signer: Arc::new(KmsProofSigner::new(
            KmsProofSigner::client(&sdk, None),
            settings.signing_key.clone(),
        )),
        provider: Arc::new(provider),
        model: Arc::new(ScriptedModel),
        registry: Arc::new(countersign_tools::builtins::registry()?),
        clock: Arc::new(SystemClock),
        ids: Arc::new(UlidIds::default()),
        issuer: std::env::var("COUNTERSIGN_ISSUER")
            .unwrap_or_else(|_| "https://support.example.com/mcp-actions".into()),
        stuck_after: secs("COUNTERSIGN_EXECUTING_STUCK_AFTER_SECS", 30)?,
    });
    let app = router(AppState {
        chat: Arc::new(chat),
        auth: Arc::new(WidgetAuth::new(Arc::new(store), secrets)),
    });
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() {
        lambda_http::run(app).await.map_err(|e| anyhow::anyhow!(e))
    } else {
        let addr =
            std::env::var("COUNTERSIGN_MESSAGES_ADDR").unwrap_or_else(|_| "127.0.0.1:8789".into());
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        tracing::info!(%addr, "messages API listening");
        axum::serve(listener, app).await.context("serving")
    }
}
