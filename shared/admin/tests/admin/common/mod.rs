//! Shared helpers of the admin API tests: a fresh table, key and secret prefix on the
//! local AWS emulator, the router over them, and a request helper.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use axum::body::Body;
use countersign_admin::api::{AdminState, router};
use countersign_aws::AwsSettings;
use countersign_aws::dynamo::DynamoStore;
use countersign_aws::kms::KmsProofSigner;
use countersign_aws::secrets::SecretsManagerStore;
use countersign_aws::system::{SystemClock, UlidIds};
use countersign_domain::config::UrlPolicy;
use countersign_domain::ports::SecretStore;
use countersign_testkit::ScriptedProvider;
use http::{Request, StatusCode};
use serde_json::{Value, json};
use std::sync::Arc;
use tower::ServiceExt as _;

pub(crate) struct Env {
    pub(crate) store: DynamoStore,
    pub(crate) secrets: Arc<SecretsManagerStore>,
    pub(crate) signer: Arc<KmsProofSigner>,
    /// The audit checkpoint key's signer (V-6).
    pub(crate) checkpoint_signer: Arc<KmsProofSigner>,
    /// The tenant's server as every save reads it (V-1): the consultations of
    /// [`config`], a destructive tool and one with no annotations.
    pub(crate) provider: Arc<ScriptedProvider>,
}

impl Env {
    /// A tenant registered by the operator (English), with its one-time admin key.
    #[allow(dead_code)] // not every test binary registers through here
    pub(crate) async fn tenant(&self, name: &str) -> countersign_admin::tenants::Registered {
        let language = countersign_domain::texts::Language::En;
        countersign_admin::tenants::register(
            &self.store,
            &UlidIds::default(),
            &SystemClock,
            name,
            language,
        )
        .await
        .unwrap()
    }
}

/// The tools the test provider publishes (V-1: only the first three are consultations).
pub(crate) fn published_tools() -> Vec<countersign_domain::ports::ProviderTool> {
    vec![
        countersign_testkit::tool("get_user_uploads"),
        countersign_testkit::tool("get_user_sessions"),
        countersign_testkit::tool("get_user_cars"),
        countersign_testkit::described(
            "delete_upload",
            json!({"readOnlyHint": false, "destructiveHint": true}),
        ),
        countersign_testkit::unannotated_tool("get_user_notes"),
    ]
}

pub(crate) async fn env(signing_key: bool) -> Env {
    countersign_testkit::local_aws_endpoint();
    let sdk = aws_config::load_from_env().await;
    let suffix = ulid::Ulid::new().to_string().to_lowercase();
    let settings = AwsSettings {
        table: format!("cs-api-{suffix}"),
        signing_key: signing_key.then(|| format!("alias/cs-api-{suffix}")),
        checkpoint_key: Some(format!("alias/cs-api-checkpoints-{suffix}")),
        call_metrics: false,
        secret_prefix: format!("cs-api-{suffix}/"),
        retention_days: None,
        ..AwsSettings::default()
    };
    countersign_aws::bootstrap::bootstrap(&sdk, &settings)
        .await
        .unwrap();
    let messages =
        countersign_aws::sdk::as_principal(&sdk, countersign_aws::sdk::Principal::Messages);
    Env {
        store: DynamoStore::new(DynamoStore::client(&sdk, None), &settings.table),
        secrets: Arc::new(SecretsManagerStore::new(
            SecretsManagerStore::client(&sdk, None),
            settings.secret_prefix.clone(),
        )),
        // I-1: proofs and checkpoints are signed by the messages function's role (the
        // key policies let no one else, the operator included).
        signer: Arc::new(KmsProofSigner::new(
            KmsProofSigner::client(&messages, None),
            settings.signing_key.clone(),
        )),
        checkpoint_signer: Arc::new(settings.checkpoint_signer(&messages)),
        provider: {
            let provider = Arc::new(ScriptedProvider::default());
            provider.publish(published_tools());
            provider
        },
    }
}

pub(crate) fn app(env: &Env, secrets: Arc<dyn SecretStore>) -> axum::Router {
    let state = AdminState {
        stores: countersign_admin::api::AdminStores::split(
            Arc::new(env.store.clone()),
            Arc::new(env.store.clone()),
        ),
        leases: Arc::new(env.store.clone()),
        step_up: None,
        sessions: Arc::new(env.store.clone()),
        secrets,
        signer: env.signer.clone(),
        checkpoint_signer: env.checkpoint_signer.clone(),
        issuer: "https://support.example.com/mcp-actions".into(),
        url_policy: UrlPolicy::default(),
        resolver: Arc::new(PublicDns),
        provider: env.provider.clone(),
        ids: Arc::new(UlidIds::default()),
        clock: Arc::new(SystemClock),
    };
    // The whole admin API, as the two functions serve it between them (decision 0026).
    router(state.clone()).merge(countersign_admin::api::certification_router(state))
}

/// DNS for the tests (no network): `*.internal-rebind.example.com` resolves to a
/// metadata address, every other name to a public one.
pub(crate) struct PublicDns;

#[async_trait::async_trait]
impl countersign_domain::ports::Resolver for PublicDns {
    async fn resolve(&self, host: &str, _: u16) -> std::io::Result<Vec<std::net::IpAddr>> {
        Ok(vec![if host.ends_with("internal-rebind.example.com") {
            "169.254.169.254".parse().unwrap()
        } else {
            "93.184.216.34".parse().unwrap()
        }])
    }
}

pub(crate) async fn send(
    app: axum::Router,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<String>,
) -> (StatusCode, Value) {
    let res = send_raw(app, method, path, key, body).await;
    (res.status(), body_json(res).await)
}

/// The whole answer, headers included.
pub(crate) async fn send_raw(
    app: axum::Router,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<String>,
) -> axum::response::Response {
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json");
    if let Some(k) = key {
        req = req.header("authorization", format!("Bearer {k}"));
    }
    app.oneshot(req.body(body.map_or_else(Body::empty, Body::from)).unwrap())
        .await
        .unwrap()
}

/// An answer's body as JSON (`null` when it is not JSON).
pub(crate) async fn body_json(res: axum::response::Response) -> Value {
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 20)
        .await
        .unwrap();
    serde_json::from_slice(&bytes).unwrap_or(Value::Null)
}

pub(crate) fn config(url: &str, enabled: bool) -> String {
    json!({
        "serverUrl": url,
        "serviceToken": "svc_secret_token_1",
        "allowedTools": ["get_user_uploads", "get_user_sessions"],
        "actionPolicy": {"contractVersion": 1, "enabled": enabled, "operations": ["reassign_session_car"]}
    })
    .to_string()
}
