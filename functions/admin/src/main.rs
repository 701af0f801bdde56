//! The admin function: reads configuration once, builds clients once, then serves the
//! admin router (`countersign_admin::api`) through Lambda (when `AWS_LAMBDA_RUNTIME_API`
//! is set) or on a local port.

use anyhow::Context as _;
use countersign_admin::api::{AdminState, router};
use countersign_admin::resolve::SystemResolver;
use countersign_aws::AwsSettings;
use countersign_aws::dynamo::DynamoStore;
use countersign_aws::kms::KmsProofSigner;
use countersign_aws::secrets::SecretsManagerStore;
use countersign_aws::system::{SystemClock, UlidIds};
use countersign_domain::config::UrlPolicy;
use std::sync::Arc;

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
    let state = AdminState {
        tenants: Arc::new(store.clone()),
        conversations: Arc::new(store),
        secrets: Arc::new(SecretsManagerStore::new(
            SecretsManagerStore::client(&sdk, None),
            settings.secret_prefix.clone(),
        )),
        signer: Arc::new(KmsProofSigner::new(
            KmsProofSigner::client(&sdk, None),
            settings.signing_key.clone(),
        )),
        // COUNTERSIGN_ISSUER: the proofs' `iss`, shown to tenants (C-5).
        issuer: std::env::var("COUNTERSIGN_ISSUER")
            .unwrap_or_else(|_| "https://support.example.com/mcp-actions".into()),
        // D-5: COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER=1 is the local stack's one explicit
        // allowance for http://127.0.0.1 providers; the deployed template never sets it.
        url_policy: UrlPolicy {
            allow_loopback_http: std::env::var("COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER").as_deref()
                == Ok("1"),
        },
        resolver: Arc::new(SystemResolver),
        ids: Arc::new(UlidIds::default()),
        clock: Arc::new(SystemClock),
    };
    let app = router(state);
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() {
        lambda_http::run(app).await.map_err(|e| anyhow::anyhow!(e))
    } else {
        let addr =
            std::env::var("COUNTERSIGN_ADMIN_ADDR").unwrap_or_else(|_| "127.0.0.1:8788".into());
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        tracing::info!(%addr, "admin API listening");
        axum::serve(listener, app).await.context("serving")
    }
}
