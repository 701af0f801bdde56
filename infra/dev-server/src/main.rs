//! `countersign-dev`: the whole product on one local port (README "Run it").
//!
//! Runs inside `infra/scripts/run.sh`, which starts the local AWS emulator and exports
//! its endpoint. Then: bootstraps the table, signing key and gateway token key; registers
//! a demo tenant; starts the TrackShare demo provider on loopback with the platform's
//! public key installed; serves the messages, admin and gateway routers on one port; and,
//! through that port like a tenant administrator would, connects TrackShare (the seven
//! consultations, `reassign_session_car` enabled) and creates a widget credential. It
//! prints the URLs, a widget JWT for the demo person and the demo admin key.
//!
//! `COUNTERSIGN_DEV_ADDR` (default 127.0.0.1:8700), `DEMO_PROVIDER_ADDR` (default
//! 127.0.0.1:8790). The functions read their usual variables (README "Configure").

use anyhow::Context as _;
use countersign_admin::tenants;
use countersign_aws::AwsSettings;
use countersign_aws::dynamo::DynamoStore;
use countersign_aws::kms::KmsProofSigner;
use countersign_aws::system::{SystemClock, UlidIds};
use countersign_demo_provider::DemoConfig;
use countersign_domain::ids::{UserId, WidgetKeyId};
use countersign_domain::ports::ProofSigner;
use countersign_domain::secret::SecretString;
use countersign_domain::texts::Language;
use serde_json::{Value, json};
use std::io::Write as _;
use std::net::SocketAddr;

/// The demo person.
const DEMO_USER: &str = "u_alice";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_default();
    anyhow::ensure!(
        endpoint.starts_with("http://127.0.0.1:"),
        "countersign-dev runs against the local AWS emulator only: start it with infra/scripts/run.sh"
    );
    let addr: SocketAddr = std::env::var("COUNTERSIGN_DEV_ADDR")
        .unwrap_or_else(|_| "127.0.0.1:8700".into())
        .parse()
        .context("COUNTERSIGN_DEV_ADDR")?;
    let demo_addr: SocketAddr = std::env::var("DEMO_PROVIDER_ADDR")
        .unwrap_or_else(|_| "127.0.0.1:8790".into())
        .parse()
        .context("DEMO_PROVIDER_ADDR")?;
    let sdk = aws_config::load_from_env().await;
    let settings = AwsSettings::from_env()?;
    countersign_aws::bootstrap::bootstrap(&sdk, &settings)
        .await
        .context("bootstrapping the local AWS resources")?;

    // A demo tenant, as an operator registers one.
    let store = DynamoStore::new(
        DynamoStore::client(&sdk, None),
        &settings.table,
        settings.retention_days,
    );
    let registered = tenants::register(
        &store,
        &UlidIds::default(),
        &SystemClock,
        "TrackShare (demo)",
        Language::En,
    )
    .await?;
    let tenant = registered.tenant.id.clone();

    // TrackShare, with the platform's public key installed as its engineers would.
    let signer = KmsProofSigner::new(
        KmsProofSigner::client(&sdk, None),
        settings.signing_key.clone(),
    );
    let key = signer
        .verification_key()
        .await
        .context("reading the signing key")?;
    let demo_url = format!("http://{demo_addr}/mcp");
    let service_token = format!("svc_demo_{}", ulid::Ulid::new().to_string().to_lowercase());
    let issuer = std::env::var("COUNTERSIGN_ISSUER")
        .unwrap_or_else(|_| countersign_messages::DEFAULT_ISSUER.into());
    let mut demo = DemoConfig::new(service_token.clone(), issuer, demo_url.clone());
    demo.tenant_id = Some(tenant.to_string());
    demo.keys = vec![(key.key_id, key.public_key_pem)];
    countersign_demo_provider::spawn(demo, demo_addr)
        .await
        .with_context(|| format!("starting the demo provider on {demo_addr}"))?;

    // The three functions' routers on one port.
    let gateway = countersign_gateway::router(countersign_gateway::wiring::from_env(&sdk).await?);
    let app = countersign_chat::api::router(countersign_messages::state_from_env(&sdk)?)
        .merge(countersign_admin::api::router(
            countersign_admin_fn::state_from_env(&sdk)?,
        ))
        .merge(gateway);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    let base = format!("http://{addr}");
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    // The tenant administrator's part, over HTTP.
    let http = reqwest::Client::new();
    let admin_key = registered.admin_key.expose().to_owned();
    let admin = format!("{base}/api/admin/tenants/{tenant}");
    let res = http
        .put(format!("{admin}/mcp"))
        .bearer_auth(&admin_key)
        .json(&json!({
            "serverUrl": demo_url,
            "serviceToken": service_token,
            "allowedTools": countersign_demo_provider::tools::CONSULTATIONS,
            "actionPolicy": {"contractVersion": 1, "enabled": true, "operations": ["reassign_session_car"]}
        }))
        .send()
        .await?;
    anyhow::ensure!(
        res.status().is_success(),
        "configuring the demo tenant: {}",
        res.text().await?
    );
    let credential: Value = http
        .post(format!("{admin}/widget-credentials"))
        .bearer_auth(&admin_key)
        .send()
        .await?
        .json()
        .await?;
    let key_id = WidgetKeyId::parse(credential["keyId"].as_str().unwrap_or_default())?;
    let secret = SecretString::new(credential["secret"].as_str().unwrap_or_default());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs();
    let now = i64::try_from(now)?;
    let widget_jwt = countersign_chat::widget::sign_token(
        &secret,
        &key_id,
        &tenant,
        &UserId::parse(DEMO_USER)?,
        now,
        now + 12 * 3600,
    )?;

    let mut out = std::io::stdout().lock();
    writeln!(out, "Countersign is running on {base}")?;
    writeln!(out, "  widget API     {base}/api/cases")?;
    writeln!(
        out,
        "  admin API      {base}/api/admin/tenants/{tenant}/mcp"
    )?;
    writeln!(out, "  gateway (MCP)  {base}/mcp")?;
    writeln!(out, "  demo provider  {demo_url} (TrackShare)")?;
    writeln!(out)?;
    writeln!(out, "TENANT={tenant}")?;
    writeln!(out, "ADMIN_KEY={admin_key}")?;
    writeln!(out, "WIDGET_JWT={widget_jwt}")?;
    writeln!(
        out,
        "(the widget JWT is for the demo person {DEMO_USER}, valid 12 hours; local secrets only)"
    )?;
    writeln!(out)?;
    writeln!(out, "Press Ctrl-C to stop everything.")?;
    drop(out);
    server.await?.context("serving")
}
