//! `countersign-dev`: the whole product on one local port (README "Run it").
//!
//! Runs inside `infra/scripts/run.sh`, which starts the local AWS emulator and exports
//! its endpoint. Then: bootstraps the table, signing key and gateway token key; registers
//! a demo tenant; starts the TrackShare demo provider on loopback, following the
//! platform's JWKS; serves the messages, admin and gateway routers on one port; and,
//! through that port like a tenant administrator would, connects TrackShare (the seven
//! consultations, `reassign_session_car` enabled) and creates a widget credential. It
//! prints the URLs, a widget JWT for the demo person and the demo admin key.
//!
//! `COUNTERSIGN_DEV_ADDR` (default 127.0.0.1:8700), `DEMO_PROVIDER_ADDR` (default
//! 127.0.0.1:8790), `COUNTERSIGN_DEMO_SITE_ADDR` (the demo tenant's site with the
//! widget, default 127.0.0.1:8701). The functions read their usual variables (README "Configure").

use anyhow::Context as _;
use countersign_admin::tenants;
use countersign_aws::AwsSettings;
use countersign_aws::dynamo::DynamoStore;
use countersign_aws::system::{SystemClock, UlidIds};
use countersign_demo_provider::DemoConfig;
use countersign_domain::ids::{TenantId, UserId, WidgetKeyId};
use countersign_domain::secret::SecretString;
use countersign_domain::texts::Language;
use serde_json::{Value, json};
use std::io::Write as _;
use std::net::SocketAddr;

mod site;

/// The demo person.
const DEMO_USER: &str = "u_alice";

/// What the demo tenant's administrator and person need, printed at the end.
struct Demo {
    site: String,
    base: String,
    tenant: TenantId,
    admin_key: String,
    demo_url: String,
    widget_jwt: String,
}

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
    let addr = address("COUNTERSIGN_DEV_ADDR", "127.0.0.1:8700")?;
    let demo_addr = address("DEMO_PROVIDER_ADDR", "127.0.0.1:8790")?;
    let site_addr = address("COUNTERSIGN_DEMO_SITE_ADDR", "127.0.0.1:8701")?;
    let sdk =
        countersign_aws::sdk::sdk_config(countersign_provider_client::roots::system_bundle_pem())
            .await;
    let settings = AwsSettings::from_env()?;
    countersign_aws::bootstrap::bootstrap(&sdk, &settings)
        .await
        .context("bootstrapping the local AWS resources")?;
    // A demo tenant, as an operator registers one.
    let store = DynamoStore::new(DynamoStore::client(&sdk, None), &settings.table);
    let registered = tenants::register(
        &store,
        &UlidIds::default(),
        &SystemClock,
        "TrackShare (demo)",
        Language::En,
    )
    .await?;
    let tenant = registered.tenant.id.clone();
    // F-3: the confirmation page's passkey ceremonies run on `localhost` (the one plain
    // http origin browsers treat as secure; an IP address cannot be an RP ID).
    let step_up = countersign_domain::stepup::Site::from_origin(
        &format!("http://localhost:{}", addr.port()),
        true,
    )
    .map_err(anyhow::Error::msg)?;
    let (demo_url, service_token) = start_demo_provider(&tenant, demo_addr, addr, &step_up).await?;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr}"))?;
    let app = routers(&sdk, &settings, &step_up).await?;
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    // The demo tenant's site, on its own origin.
    let slot = site::Slot::default();
    let site_app = site::router(slot.clone(), &format!("http://{addr}"))?;
    let site_listener = tokio::net::TcpListener::bind(site_addr)
        .await
        .with_context(|| format!("binding {site_addr}"))?;
    tokio::spawn(async move { axum::serve(site_listener, site_app).await });
    let mut demo = Demo {
        site: format!("http://{site_addr}"),
        base: format!("http://{addr}"),
        tenant,
        admin_key: registered.admin_key.expose().to_owned(),
        demo_url,
        widget_jwt: String::new(),
    };
    let credential = connect_demo_tenant(&demo, &service_token).await?;
    demo.widget_jwt = demo_jwt(&credential)?;
    // The demo site mints tokens from now on.
    let _ = slot.set(credential);
    print_banner(&demo, &service_token)?;
    server.await?.context("serving")
}

fn address(name: &str, default: &str) -> anyhow::Result<SocketAddr> {
    std::env::var(name)
        .unwrap_or_else(|_| default.into())
        .parse()
        .with_context(|| format!("{name} must be an address such as {default}"))
}

/// TrackShare on loopback, following the platform's JWKS (served on `platform_addr`) as
/// its engineers would set it up (K-2). Returns its URL and service token.
async fn start_demo_provider(
    tenant: &TenantId,
    demo_addr: SocketAddr,
    platform_addr: SocketAddr,
    step_up: &countersign_domain::stepup::Site,
) -> anyhow::Result<(String, String)> {
    let demo_url = format!("http://{demo_addr}/mcp");
    let service_token = format!("svc_demo_{}", ulid::Ulid::new().to_string().to_lowercase());
    let issuer = std::env::var("COUNTERSIGN_ISSUER")
        .unwrap_or_else(|_| countersign_messages_fn::DEFAULT_ISSUER.into());
    let mut demo = DemoConfig::new(service_token.clone(), issuer, demo_url.clone());
    demo.tenant_id = Some(tenant.to_string());
    demo.step_up = Some((step_up.rp_id.clone(), step_up.origins.clone()));
    demo.jwks_url = Some(format!(
        "http://{platform_addr}{}",
        countersign_admin::jwks::JWKS_PATH
    ));
    countersign_demo_provider::spawn(demo, demo_addr)
        .await
        .with_context(|| format!("starting the demo provider on {demo_addr}"))?;
    Ok((demo_url, service_token))
}

/// The local run's own convenience for a real model endpoint (README "Point the local
/// run at a real model"): a key given in this variable is stored in the local Secrets
/// Manager, as an operator stores it in theirs, and the messages API reads it from there.
const LOCAL_MODEL_KEY: &str = "COUNTERSIGN_MODEL_API_KEY";

/// The messages function's configuration, with [`LOCAL_MODEL_KEY`] stored as its secret.
async fn messages_config(
    sdk: &aws_config::SdkConfig,
    settings: &AwsSettings,
    step_up: &countersign_domain::stepup::Site,
) -> anyhow::Result<countersign_messages_fn::Config> {
    use countersign_aws::settings::FromEnv as _;
    use countersign_domain::ports::SecretStore as _;
    use countersign_models::choice::ModelChoice;
    let mut config = countersign_messages_fn::Config::from_env()?;
    config.step_up.get_or_insert_with(|| step_up.clone());
    let Ok(key) = std::env::var(LOCAL_MODEL_KEY) else {
        return Ok(config);
    };
    let ModelChoice::OpenAi { api_key_secret, .. } = &mut config.model else {
        anyhow::bail!("{LOCAL_MODEL_KEY} is for COUNTERSIGN_MODEL=openai:<model> only");
    };
    let name = format!("{}platform/model-api-key", settings.secret_prefix);
    settings
        .operator_secrets(sdk)
        .put(&name, &countersign_domain::secret::SecretString::new(key))
        .await
        .context("storing the model API key in the local Secrets Manager")?;
    *api_key_secret = Some(name);
    Ok(config)
}

/// The three functions' routers on one port.
async fn routers(
    sdk: &aws_config::SdkConfig,
    settings: &AwsSettings,
    step_up: &countersign_domain::stepup::Site,
) -> anyhow::Result<axum::Router> {
    use countersign_aws::sdk::{Principal, as_principal};
    // I-1: each function calls AWS as its own role, as deployed; the operator's `sdk`
    // (bootstrap, the demo tenant) serves none of them.
    let as_role = |principal| as_principal(sdk, principal);
    // F-3: confirmation links point where the passkey ceremonies can run (unless the
    // operator named another public origin).
    let mut gateway =
        countersign_gateway_fn::wiring::from_env(&as_role(Principal::Gateway)).await?;
    if gateway.public_url.is_none() {
        gateway.page_url = step_up.origins.first().cloned();
    }
    let gateway = countersign_gateway_fn::router(gateway);
    let config = messages_config(sdk, settings, step_up).await?;
    let messages = countersign_messages_fn::app(&as_role(Principal::Messages), &config)?;
    // S-1: the streamed post is the stream function's, with its own role.
    let stream = countersign_messages_fn::stream_app(&as_role(Principal::Stream), &config)?;
    let mut admin_state = countersign_admin_fn::state_from_env(&as_role(Principal::Admin))?;
    admin_state.step_up.get_or_insert_with(|| step_up.clone());
    let admin = countersign_admin::app(admin_state);
    // N-3: the erasure worker, as the purge function's minute schedule runs it deployed
    // (here once a second: the local stack has no scheduler), with the purge role.
    let certification =
        countersign_messages_fn::certification_state(&as_role(Principal::Purge), &config)?;
    let worker = countersign_admin::erasure::Worker::of(&certification);
    tokio::spawn(async move {
        use countersign_admin::erasure::{Budget, run_queued};
        loop {
            let budget = Budget::lasting(std::time::Duration::from_secs(10));
            if let Err(e) = run_queued(&worker, budget).await {
                tracing::warn!(error = %e, "the erasure worker's run failed");
            }
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        }
    });
    Ok(streamed_apart(stream, messages.merge(admin).merge(gateway)))
}

/// `rest`, but the streamed post goes to `stream` (the stream function's own router and
/// role, as the function URL sends it on AWS).
fn streamed_apart(stream: axum::Router, rest: axum::Router) -> axum::Router {
    use tower::ServiceExt as _;
    let route: Vec<&str> = countersign_chat::api::STREAM_PATH.split('/').collect();
    let is_stream = move |path: &str| {
        let parts: Vec<&str> = path.split('/').collect();
        parts.len() == route.len()
            && parts
                .iter()
                .zip(&route)
                .all(|(p, r)| r.starts_with('{') || p == r)
    };
    axum::Router::new().fallback_service(tower::service_fn(
        move |request: axum::extract::Request| {
            let to = if request.method() == http::Method::POST && is_stream(request.uri().path()) {
                stream.clone()
            } else {
                rest.clone()
            };
            to.oneshot(request)
        },
    ))
}

/// The tenant administrator's part, over HTTP: connects TrackShare and creates a widget
/// credential, which it returns.
async fn connect_demo_tenant(demo: &Demo, service_token: &str) -> anyhow::Result<site::Credential> {
    let http = reqwest::Client::new();
    let admin = format!("{}/api/admin/tenants/{}", demo.base, demo.tenant);
    // As an administrator would (H-4): save with actions off, run the certification on
    // the saved settings, then turn actions on.
    let config = |enabled: bool| {
        json!({
            "serverUrl": demo.demo_url,
            "serviceToken": service_token,
            "allowedTools": countersign_demo_provider::tools::CONSULTATIONS,
            "actionPolicy": {"contractVersion": 1, "enabled": enabled, "operations": ["reassign_session_car"]}
        })
    };
    for (step, request) in [
        (
            "saving the demo tenant's MCP settings",
            http.put(format!("{admin}/mcp")).json(&config(false)),
        ),
        (
            "certifying the demo provider",
            http.post(format!("{admin}/mcp/certifications"))
                .json(&countersign_demo_provider::tools::certification_request()),
        ),
        (
            "enabling the demo tenant's actions",
            http.put(format!("{admin}/mcp")).json(&config(true)),
        ),
    ] {
        let res = request.bearer_auth(&demo.admin_key).send().await?;
        let status = res.status();
        let body: Value = res.json().await.unwrap_or_default();
        anyhow::ensure!(
            status.is_success() && body["passed"] != false,
            "{step}: HTTP {status} {body}"
        );
    }
    // the demo site's sign-in hand-off, for the confirmation page.
    let res = http
        .put(format!("{admin}/settings"))
        .bearer_auth(&demo.admin_key)
        .json(&json!({
            "signInUrl": format!("{}/sign-in", demo.site),
            // Issue 50: what a person meets first, with starters the scripted model
            // understands.
            "welcome": {
                "en": {
                    "greeting": "Hi! I'm TrackShare's assistant. Ask about your sessions and cars, or ask for a change: I prepare it, and nothing happens until you confirm it.",
                    "assistantName": "TrackShare support",
                    "starters": ["Show my sessions", "Show my cars", "Move ses_a2 to car_a3"]
                },
                "pt-BR": {
                    "greeting": "Olá! Sou o assistente da TrackShare. Peça uma alteração: eu a preparo, e nada acontece até você confirmar.",
                    "assistantName": "Suporte TrackShare",
                    "starters": ["Mover ses_a2 para car_a3"]
                }
            }
        }))
        .send()
        .await?;
    anyhow::ensure!(
        res.status().is_success(),
        "setting the demo sign-in hand-off and welcome: HTTP {}",
        res.status()
    );
    // The widget credential of the demo site's origin (decision 0025).
    let credential: Value = http
        .post(format!("{admin}/widget-credentials"))
        .bearer_auth(&demo.admin_key)
        .json(&json!({"allowedOrigins": [demo.site]}))
        .send()
        .await?
        .json()
        .await?;
    Ok(site::Credential {
        tenant: demo.tenant.clone(),
        key_id: WidgetKeyId::parse(credential["keyId"].as_str().unwrap_or_default())?,
        secret: SecretString::new(credential["secret"].as_str().unwrap_or_default()),
    })
}

/// A widget JWT for the demo person, valid 12 hours (printed for curl).
fn demo_jwt(c: &site::Credential) -> anyhow::Result<String> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs();
    let now = i64::try_from(now)?;
    let user = UserId::parse(DEMO_USER)?;
    Ok(countersign_chat::widget::sign_token(
        &c.secret,
        &c.key_id,
        &c.tenant,
        &user,
        now,
        now + 12 * 3600,
    )?)
}

fn print_banner(demo: &Demo, service_token: &str) -> std::io::Result<()> {
    let Demo {
        site,
        base,
        tenant,
        admin_key,
        demo_url,
        widget_jwt,
    } = demo;
    let mut out = std::io::stdout().lock();
    writeln!(out, "Countersign is running on {base}")?;
    writeln!(
        out,
        "  demo site      {site}/ (TrackShare's page with the chat widget: open it)"
    )?;
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
    writeln!(out, "DEMO_SERVICE_TOKEN={service_token}")?;
    writeln!(
        out,
        "(the widget JWT is for the demo person {DEMO_USER}, valid 12 hours; the service token opens the demo provider's /_demo/control; local secrets only)"
    )?;
    writeln!(out)?;
    writeln!(out, "Press Ctrl-C to stop everything.")
}
