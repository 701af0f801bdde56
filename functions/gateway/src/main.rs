//! The gateway function: reads configuration once, builds clients once, then serves the
//! router through Lambda (when `AWS_LAMBDA_RUNTIME_API` is set) or on a local port.

use anyhow::Context as _;
use countersign_aws::AwsSettings;
use countersign_aws::dynamo::DynamoStore;
use countersign_aws::secrets::SecretsManagerStore;
use countersign_aws::system::SystemClock;
use countersign_domain::ports::SecretStore;
use countersign_gateway::{Gateway, router};
use countersign_tools::access;
use countersign_tools::builtins::{self, Services};
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
    let secrets = SecretsManagerStore::new(
        SecretsManagerStore::client(&sdk, None),
        settings.secret_prefix.clone(),
    );
    let (token_key, _) = secrets
        .get_current(access::SECRET_NAME)
        .await
        .context("reading the gateway token key")?
        .context("the gateway token key is missing; run `countersign bootstrap`")?;
    let secrets = Arc::new(secrets);
    let gateway = Gateway {
        registry: builtins::registry()?,
        services: Services {
            conversations: Arc::new(store.clone()),
            tenants: Arc::new(store),
            actions: None,
        },
        token_key,
        clock: Arc::new(SystemClock),
        // COUNTERSIGN_GATEWAY_HOSTS: the API's host names, comma-separated (rmcp refuses
        // other Host headers).
        allowed_hosts: std::env::var("COUNTERSIGN_GATEWAY_HOSTS")
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .map(str::to_owned)
            .collect(),
        // Tenants' MCP servers, for proxied consultations (G-6). D-5 applies at connect
        // time; COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER=1 (local stack only) admits 127.0.0.1.
        provider: Some(Arc::new(countersign_provider_client::HttpProvider::new(
            countersign_provider_client::Settings {
                url_policy: countersign_domain::config::UrlPolicy {
                    allow_loopback_http: std::env::var("COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER")
                        .is_ok_and(|v| v == "1"),
                },
                ..countersign_provider_client::Settings::default()
            },
        )?)),
        secrets,
    };
    // G-8: metrics leave as CloudWatch Embedded Metric Format lines on stdout, flushed
    // after every request (so each Lambda invocation writes its own document).
    let metrics = metrics_cloudwatch_embedded::Builder::new()
        .cloudwatch_namespace("Countersign")
        .init()
        .map_err(|e| anyhow::anyhow!("installing the EMF metrics recorder: {e}"))?;
    let app = router(gateway).layer(axum::middleware::from_fn(
        move |req: axum::extract::Request, next: axum::middleware::Next| async move {
            let res = next.run(req).await;
            if let Err(e) = metrics.flush(std::io::stdout()) {
                tracing::warn!(error = %e, "flushing metrics failed");
            }
            res
        },
    ));
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() {
        lambda_http::run(app).await.map_err(|e| anyhow::anyhow!(e))
    } else {
        let addr =
            std::env::var("COUNTERSIGN_GATEWAY_ADDR").unwrap_or_else(|_| "127.0.0.1:8787".into());
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        tracing::info!(%addr, "gateway listening");
        axum::serve(listener, app).await.context("serving")
    }
}
