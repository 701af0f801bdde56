//! The acceptance suite's stack: for each test, a fresh table, signing key and secret
//! prefix on the local AWS emulator; a tenant registered with the operator's library; the
//! TrackShare demo provider on loopback with the platform's public key installed; the
//! admin API on loopback (configured over HTTP like a tenant administrator would); and
//! the **messages function as its own process** (the real binary), whose logs are
//! captured and scanned for secrets when the test finishes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use countersign_admin::api::AdminState;
use countersign_admin::tenants;
use countersign_aws::AwsSettings;
use countersign_aws::dynamo::DynamoStore;
use countersign_aws::kms::KmsProofSigner;
use countersign_aws::sdk::Principal;
use countersign_aws::secrets::SecretsManagerStore;
use countersign_aws::system::{SystemClock, UlidIds};
use countersign_demo_provider::{Demo, DemoConfig};
use countersign_domain::config::UrlPolicy;
use countersign_domain::ids::{TenantId, UserId, WidgetKeyId};
use countersign_domain::ports::{ProofSigner, SecretStore};
use countersign_domain::secret::SecretString;
use countersign_domain::texts::Language;
use countersign_testkit::model_server::{Brain, ModelServer, Wire};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Once};
use std::time::Duration;

/// The issuer of every stack.
pub const ISSUER: &str = "https://support.example.com/mcp-actions";
/// The seven consultations of the TrackShare demo.
pub const CONSULTATIONS: [&str; 7] = countersign_demo_provider::tools::CONSULTATIONS;

/// Knobs of one stack.
#[derive(Debug, Clone)]
pub struct Options {
    /// The demo provider's proposal lifetime.
    pub proposal_ttl: Duration,
    /// `COUNTERSIGN_EXECUTING_STUCK_AFTER_SECS` of the messages process.
    pub stuck_after_secs: u64,
    /// `COUNTERSIGN_PROVIDER_TIMEOUT_SECS` of the messages process.
    pub provider_timeout_secs: u64,
    /// `COUNTERSIGN_FUNCTION_TIMEOUT_SECS` of the messages process.
    pub function_timeout_secs: u64,
    /// The model adapter of the messages process (M-6).
    pub model: ModelWire,
    /// The demo provider follows the platform's JWKS (K-2) instead of a key installed
    /// by hand.
    pub follow_jwks: bool,
    /// `COUNTERSIGN_SIGNING_KEY_REFRESH_SECS` of the messages process, when set.
    pub signing_key_refresh_secs: Option<u64>,
    /// The key ring's JWKS cache time, set before anything reads the JWKS.
    pub jwks_cache_seconds: Option<i64>,
    /// V-7: `COUNTERSIGN_PERSON_MESSAGES_PER_MINUTE` (the suites' races send many messages
    /// as one person: high unless a test is about the limit).
    pub person_messages_per_minute: u32,
    /// More environment for the messages process (a suite that needs other limits).
    pub extra_env: Vec<(String, String)>,
}

/// A second tenant of a [`Stack`] ([`Stack::second_tenant`]).
#[derive(Debug)]
pub struct OtherTenant {
    /// Its id.
    pub tenant: TenantId,
    /// Its widget credential.
    pub widget_key: WidgetKeyId,
    /// The credential's secret.
    pub widget_secret: SecretString,
}

/// Which model adapter the messages process runs. With an adapter, a local model
/// service of that wire format answers (`countersign_testkit::model_server`), thinking
/// like the scripted model, so a row reads the same through any adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelWire {
    /// The scripted model, in process.
    Scripted,
    /// `openai:…` against a local chat-completions server, with its API key in the
    /// local Secrets Manager.
    OpenAi,
    /// `bedrock:…` against a local Converse server (an endpoint override).
    Bedrock,
}

/// The API key of the local OpenAI-compatible service.
pub const MODEL_API_KEY: &str = "sk-countersign-e2e-model-key";

impl Default for Options {
    fn default() -> Self {
        Self {
            proposal_ttl: Duration::from_secs(240),
            stuck_after_secs: 30,
            provider_timeout_secs: 3,
            function_timeout_secs: 29,
            model: ModelWire::Scripted,
            follow_jwks: false,
            signing_key_refresh_secs: None,
            jwks_cache_seconds: None,
            person_messages_per_minute: 100_000,
            extra_env: Vec::new(),
        }
    }
}

/// One running stack.
pub struct Stack {
    /// Table, key alias, secret prefix.
    pub settings: AwsSettings,
    /// The store (for assertions only; the product's reads and writes go over HTTP).
    pub store: DynamoStore,
    /// The tenant.
    pub tenant: TenantId,
    /// Its admin key.
    pub admin_key: SecretString,
    /// Its widget credential.
    pub widget_key: WidgetKeyId,
    /// Its widget secret.
    pub widget_secret: SecretString,
    /// The service token configured for the demo provider.
    pub service_token: String,
    /// The demo provider.
    pub demo: Arc<Demo>,
    /// Its MCP URL.
    pub demo_url: String,
    /// The admin API's base URL.
    pub admin_url: String,
    /// The messages function's base URL.
    pub messages_url: String,
    /// HTTP client.
    pub http: reqwest::Client,
    child: Option<Child>,
    log: PathBuf,
    env: Vec<(String, String)>,
    /// Widget tokens handed out (scanned for in the logs).
    tokens: std::sync::Mutex<Vec<String>>,
    /// The local model service, when an adapter runs.
    pub model: Option<ModelServer>,
}

impl std::fmt::Debug for Stack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stack")
            .field("tenant", &self.tenant)
            .field("messages_url", &self.messages_url)
            .finish_non_exhaustive()
    }
}

fn free_addr() -> SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The messages binary, built once per test process so the suite never runs a stale
/// binary; skipped when the test command says it built every binary just before
/// (`COUNTERSIGN_BINS_BUILT`): nextest runs each test in its own process, and a cargo call
/// per test would serialise them on cargo's build-directory lock.
fn messages_binary() -> PathBuf {
    static BUILD: Once = Once::new();
    BUILD.call_once(|| {
        if std::env::var_os("COUNTERSIGN_BINS_BUILT").is_some() {
            return;
        }
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args([
                "build",
                "-q",
                "-p",
                "countersign-messages-fn",
                "--bin",
                "countersign-messages",
            ])
            .current_dir(workspace())
            .status()
            .unwrap();
        assert!(status.success(), "building the messages function failed");
    });
    let target = std::env::var("CARGO_TARGET_DIR")
        .map_or_else(|_| workspace().join("target"), PathBuf::from);
    target.join("debug/countersign-messages")
}

/// The stack's own table, signing and checkpoint keys and secret prefix, bootstrapped on
/// the emulator as the operator; its store and signer (fixtures, as the operator).
async fn backing(
    sdk: &aws_config::SdkConfig,
    suffix: &str,
    options: &Options,
) -> (AwsSettings, DynamoStore, Arc<KmsProofSigner>) {
    let settings = AwsSettings {
        table: format!("cs-e2e-{suffix}"),
        signing_key: Some(format!("alias/cs-e2e-{suffix}")),
        checkpoint_key: Some(format!("alias/cs-e2e-checkpoints-{suffix}")),
        call_metrics: false,
        secret_prefix: format!("cs-e2e-{suffix}/"),
        retention_days: None,
        ..AwsSettings::default()
    };
    countersign_aws::bootstrap::bootstrap(sdk, &settings)
        .await
        .unwrap();
    let store = DynamoStore::new(DynamoStore::client(sdk, None), &settings.table);
    if let Some(seconds) = options.jwks_cache_seconds {
        let kms = KmsProofSigner::client(sdk, None);
        let alias = settings.signing_key.clone().unwrap();
        countersign_aws::rotation::Rotation::new(&kms, &store, &alias)
            .set_cache_seconds(seconds)
            .await
            .unwrap();
    }
    let (store, _, signer) = clients(sdk, &settings, options);
    (settings, store, signer)
}

/// The stack's store, secret store and signer, calling AWS as `sdk`'s principal (I-1).
fn clients(
    sdk: &aws_config::SdkConfig,
    settings: &AwsSettings,
    options: &Options,
) -> (DynamoStore, Arc<SecretsManagerStore>, Arc<KmsProofSigner>) {
    let store = DynamoStore::new(DynamoStore::client(sdk, None), &settings.table);
    let secrets = Arc::new(SecretsManagerStore::new(
        SecretsManagerStore::client(sdk, None),
        settings.secret_prefix.clone(),
    ));
    let refresh = Duration::from_secs(options.signing_key_refresh_secs.unwrap_or(60));
    let signer = Arc::new(
        KmsProofSigner::new(
            KmsProofSigner::client(sdk, None),
            settings.signing_key.clone(),
        )
        .with_refresh(refresh)
        .with_ring(store.clone()),
    );
    (store, secrets, signer)
}

/// F-3: where the stack's passkey ceremonies run (its confirmation page's public origin,
/// as an operator sets `COUNTERSIGN_STEP_UP_ORIGIN`; nothing is served there).
pub const STEP_UP_ORIGIN: &str = "https://confirm.countersign.test";

/// The stack's step-up site.
pub fn step_up_site() -> countersign_domain::stepup::Site {
    countersign_domain::stepup::Site::from_origin(STEP_UP_ORIGIN, false).unwrap()
}

/// The demo provider for `tenant`, with the platform's public key installed (as a tenant
/// would from `actionVerification`), or following the JWKS; and its URL.
async fn demo_provider(
    options: &Options,
    signer: &KmsProofSigner,
    tenant: &TenantId,
    admin_url: &str,
    service_token: &str,
) -> (Arc<Demo>, String) {
    let demo_addr = free_addr();
    let demo_url = format!("http://{demo_addr}/mcp");
    let mut demo_config = DemoConfig::new(service_token.to_owned(), ISSUER, demo_url.clone());
    demo_config.tenant_id = Some(tenant.to_string());
    demo_config.proposal_ttl = options.proposal_ttl;
    let site = step_up_site();
    demo_config.step_up = Some((site.rp_id, site.origins));
    if options.follow_jwks {
        demo_config.jwks_url = Some(format!("{admin_url}{}", countersign_admin::jwks::JWKS_PATH));
    } else {
        let key = signer.verification_key().await.unwrap();
        demo_config.keys = vec![(key.key_id, key.public_key_pem)];
    }
    let (_, demo) = countersign_demo_provider::spawn(demo_config, demo_addr)
        .await
        .unwrap();
    (demo, demo_url)
}

/// The admin API's ports over the stack's store, secrets and keys (loopback providers
/// allowed, no tool-list cache), calling AWS as `sdk`'s principal (I-1: the admin role
/// for the admin API, the messages role for the certification routes it serves).
fn admin_state(
    sdk: &aws_config::SdkConfig,
    settings: &AwsSettings,
    options: &Options,
) -> AdminState {
    let (store, secrets, signer) = clients(sdk, settings, options);
    let (store, secrets, signer) = (&store, &secrets, &signer);
    let loopback = UrlPolicy {
        allow_loopback_http: true,
    };
    let provider =
        countersign_provider_client::HttpProvider::new(countersign_provider_client::Settings {
            tools_ttl: Duration::ZERO,
            url_policy: loopback,
            ..countersign_provider_client::Settings::default()
        })
        .unwrap();
    AdminState {
        stores: countersign_admin::api::AdminStores::split(
            Arc::new(store.clone()),
            Arc::new(store.clone()),
        ),
        leases: Arc::new(store.clone()),
        sessions: Arc::new(store.clone()),
        secrets: secrets.clone(),
        signer: signer.clone(),
        checkpoint_signer: Arc::new(settings.checkpoint_signer(sdk)),
        issuer: ISSUER.into(),
        url_policy: loopback,
        resolver: Arc::new(countersign_provider_client::resolve::SystemResolver),
        provider: Arc::new(provider),
        ids: Arc::new(UlidIds::default()),
        clock: Arc::new(SystemClock),
        step_up: Some(step_up_site()),
    }
}

/// The messages process's environment: the stack's table, keys and secrets, its address,
/// and the options' limits and timeouts.
fn messages_env(
    settings: &AwsSettings,
    options: &Options,
    addr: SocketAddr,
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = [
        ("COUNTERSIGN_TABLE", settings.table.clone()),
        (
            "COUNTERSIGN_SIGNING_KEY",
            settings.signing_key.clone().unwrap(),
        ),
        (
            "COUNTERSIGN_CHECKPOINT_KEY",
            settings.checkpoint_key.clone().unwrap(),
        ),
        ("COUNTERSIGN_SECRET_PREFIX", settings.secret_prefix.clone()),
        ("COUNTERSIGN_MESSAGES_ADDR", addr.to_string()),
        ("COUNTERSIGN_ISSUER", ISSUER.to_owned()),
        ("COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER", "1".to_owned()),
        ("COUNTERSIGN_STEP_UP_ORIGIN", STEP_UP_ORIGIN.to_owned()),
        (
            "COUNTERSIGN_EXECUTING_STUCK_AFTER_SECS",
            options.stuck_after_secs.to_string(),
        ),
        (
            "COUNTERSIGN_PROVIDER_TIMEOUT_SECS",
            options.provider_timeout_secs.to_string(),
        ),
        (
            "COUNTERSIGN_FUNCTION_TIMEOUT_SECS",
            options.function_timeout_secs.to_string(),
        ),
        (
            "COUNTERSIGN_PERSON_MESSAGES_PER_MINUTE",
            options.person_messages_per_minute.to_string(),
        ),
        ("RUST_LOG", "info".to_owned()),
        // I-1: the messages function's own role (its main asks for it too).
        (
            "AWS_ACCESS_KEY_ID",
            Principal::Messages.local_access_key_id().to_owned(),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    env.extend(options.extra_env.iter().cloned());
    if let Some(secs) = options.signing_key_refresh_secs {
        env.push((
            "COUNTERSIGN_SIGNING_KEY_REFRESH_SECS".to_owned(),
            secs.to_string(),
        ));
    }
    env
}

impl Stack {
    /// A stack with default options.
    pub async fn start() -> Self {
        Self::with(Options::default()).await
    }

    /// A stack with `options`: its own table, keys and secrets on the emulator, a
    /// registered tenant, the demo provider, the admin API in process and the messages
    /// function as a process, the tenant connected, certified and enabled.
    pub async fn with(options: Options) -> Self {
        countersign_testkit::local_aws_endpoint();
        let sdk = aws_config::load_from_env().await;
        let suffix = ulid::Ulid::new().to_string().to_lowercase();
        let (settings, store, signer) = backing(&sdk, &suffix, &options).await;
        let registered = tenants::register(
            &store,
            &UlidIds::default(),
            &SystemClock,
            "TrackShare",
            Language::En,
        )
        .await
        .unwrap();
        let tenant = registered.tenant.id.clone();

        // The admin API's address (its JWKS is what a JWKS-following provider reads).
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let admin_url = format!("http://{}", listener.local_addr().unwrap());
        let service_token = format!("svc_trackshare_{suffix}");
        let (demo, demo_url) =
            demo_provider(&options, &signer, &tenant, &admin_url, &service_token).await;
        // I-1: the admin API as the admin function's role; the certification routes,
        // which the messages function serves (decision 0026), as its role, beside it.
        let roles = |p| countersign_aws::sdk::as_principal(&sdk, p);
        let certification = admin_state(&roles(Principal::Messages), &settings, &options);
        let admin =
            countersign_admin::app(admin_state(&roles(Principal::Admin), &settings, &options))
                .merge(countersign_admin::certification_app(certification));
        tokio::spawn(async move { axum::serve(listener, admin).await });

        let log = workspace().join(format!("target/acceptance-logs/{suffix}.log"));
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        let messages_addr = free_addr();
        let mut env = messages_env(&settings, &options, messages_addr);
        let (model, model_env) = model_service(options.model, &sdk, &settings).await;
        env.extend(model_env);
        let mut stack = Self {
            settings,
            store,
            tenant,
            admin_key: registered.admin_key,
            // Replaced by the credential the administrator creates.
            widget_key: ids_widget(),
            widget_secret: SecretString::new(""),
            service_token,
            demo,
            demo_url,
            admin_url,
            messages_url: format!("http://{messages_addr}"),
            http: reqwest::Client::new(),
            child: None,
            log,
            env,
            tokens: std::sync::Mutex::new(Vec::new()),
            model,
        };
        stack.enroll().await;
        stack.spawn_messages().await;
        stack
    }

    /// The tenant administrator connects TrackShare, certifies it, enables actions (H-4),
    /// and creates a widget credential.
    async fn enroll(&mut self) {
        let token = self.service_token.clone();
        let (status, body) = self.put_mcp(self.mcp_config(&token, false)).await;
        assert_eq!(status, 200, "{body}");
        let (status, run) = self.certify().await;
        assert_eq!((status, &run["passed"]), (201, &json!(true)), "{run:#}");
        // The tests count the provider's calls and verified proofs from here on (the run
        // made ~70 calls and executed one action for its synthetic person).
        self.demo.store.lock().unwrap().stats = Default::default();
        self.demo.verified_kids.lock().unwrap().clear();
        let (status, body) = self.put_mcp(self.mcp_config(&token, true)).await;
        assert_eq!(status, 200, "{body}");
        let (status, created) = self.admin("POST", "widget-credentials", None).await;
        assert_eq!(status, 201, "{created}");
        self.widget_key = WidgetKeyId::parse(created["keyId"].as_str().unwrap()).unwrap();
        self.widget_secret = SecretString::new(created["secret"].as_str().unwrap());
    }

    /// The configuration a tenant administrator saves: the seven consultations, and
    /// `reassign_session_car` enabled or not.
    pub fn mcp_config(&self, token: &str, enabled: bool) -> Value {
        json!({
            "serverUrl": self.demo_url,
            "serviceToken": token,
            "allowedTools": CONSULTATIONS,
            "actionPolicy": {"contractVersion": 1, "enabled": enabled, "operations": ["reassign_session_car"]}
        })
    }

    /// `POST …/mcp/certifications` with the demo's sample arguments (H-1).
    pub async fn certify(&self) -> (u16, Value) {
        let body = countersign_demo_provider::tools::certification_request();
        self.admin("POST", "mcp/certifications", Some(body)).await
    }

    /// The same, also certifying `operations` with the passkey step-up (F-6).
    pub async fn certify_step_up(&self, operations: &[&str]) -> (u16, Value) {
        let mut body = countersign_demo_provider::tools::certification_request();
        body["stepUp"] = json!(operations);
        self.admin("POST", "mcp/certifications", Some(body)).await
    }

    /// `PUT /api/admin/tenants/{id}/mcp`.
    pub async fn put_mcp(&self, config: Value) -> (u16, Value) {
        self.admin("PUT", "mcp", Some(config)).await
    }

    /// An admin API call with the tenant's admin key.
    pub async fn admin(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        self.admin_with(self.admin_key.expose(), method, path, body)
            .await
    }

    /// An admin API call with any key.
    pub async fn admin_with(
        &self,
        key: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let url = format!(
            "{}/api/admin/tenants/{}/{path}",
            self.admin_url, self.tenant
        );
        let mut req = self
            .http
            .request(method.parse().unwrap(), url)
            .bearer_auth(key);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap();
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    /// Starts (or restarts) the messages function's process and waits until it says it
    /// listens. Readiness is read from this process's own log, never from a connection
    /// (another test's process may hold the port); a port taken between choosing it and
    /// binding it is replaced by a fresh one.
    pub async fn spawn_messages(&mut self) {
        for _ in 0..5 {
            let seen = self.output().len();
            let mut cmd = Command::new(messages_binary());
            let out = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.log)
                .unwrap();
            let err = out.try_clone().unwrap();
            cmd.envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .stdout(Stdio::from(out))
                .stderr(Stdio::from(err));
            let mut child = cmd.spawn().unwrap();
            for _ in 0..200 {
                let new = self.output().get(seen..).unwrap_or_default().to_owned();
                if new.contains("messages API listening") {
                    self.child = Some(child);
                    return;
                }
                if child.try_wait().unwrap().is_some() {
                    assert!(
                        new.contains("Address already in use"),
                        "the messages function stopped; see {}",
                        self.log.display()
                    );
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            if child.try_wait().unwrap().is_none() {
                child.kill().unwrap();
                child.wait().unwrap();
                panic!(
                    "the messages function did not start; see {}",
                    self.log.display()
                );
            }
            // The port was taken: another one.
            let addr = free_addr().to_string();
            for (k, v) in &mut self.env {
                if k == "COUNTERSIGN_MESSAGES_ADDR" {
                    v.clone_from(&addr);
                }
            }
            self.messages_url = format!("http://{addr}");
        }
        panic!("no free port for the messages function");
    }

    /// Kills the messages process at once (SIGKILL: no cleanup, like a crashed Lambda).
    pub fn kill_messages(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }

    /// A widget JWT for `user`, as the tenant's backend signs it (D-2).
    pub fn token(&self, user: &str) -> String {
        self.token_signed(user, &self.widget_secret, 0)
    }

    /// A widget JWT with any secret; `renew` shifts `iat` (a renewed token).
    pub fn token_signed(&self, user: &str, secret: &SecretString, renew: i64) -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
            + renew;
        let t = countersign_chat::widget::sign_token(
            secret,
            &self.widget_key,
            &self.tenant,
            &UserId::parse(user).unwrap(),
            now,
            now + 600,
        )
        .unwrap();
        self.tokens.lock().unwrap().push(t.clone());
        t
    }

    /// A second tenant on the same stack (V-7): registered, connected to the same demo
    /// provider for consultations (actions off), with its own widget credential.
    pub async fn second_tenant(&self) -> OtherTenant {
        let registered = tenants::register(
            &self.store,
            &UlidIds::default(),
            &SystemClock,
            "Other",
            Language::En,
        )
        .await
        .unwrap();
        let tenant = registered.tenant.id.clone();
        let key = registered.admin_key.expose().to_owned();
        let url = |path: &str| format!("{}/api/admin/tenants/{tenant}/{path}", self.admin_url);
        let res = self
            .http
            .put(url("mcp"))
            .bearer_auth(&key)
            .json(&self.mcp_config(&self.service_token, false))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
        let res = self
            .http
            .post(url("widget-credentials"))
            .bearer_auth(&key)
            .send()
            .await
            .unwrap();
        let created: Value = res.json().await.unwrap();
        OtherTenant {
            tenant,
            widget_key: WidgetKeyId::parse(created["keyId"].as_str().unwrap()).unwrap(),
            widget_secret: SecretString::new(created["secret"].as_str().unwrap()),
        }
    }

    /// A widget JWT for `user` of `other`.
    pub fn other_token(&self, other: &OtherTenant, user: &str) -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        countersign_chat::widget::sign_token(
            &other.widget_secret,
            &other.widget_key,
            &other.tenant,
            &UserId::parse(user).unwrap(),
            now,
            now + 600,
        )
        .unwrap()
    }

    /// `POST /api/cases` → the case id.
    pub async fn create_case(&self, token: &str) -> String {
        let res = self
            .http
            .post(format!("{}/api/cases", self.messages_url))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201);
        res.json::<Value>().await.unwrap()["caseId"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// `POST /api/cases/{case}/messages` → (status, body).
    pub async fn post(
        &self,
        token: &str,
        case: &str,
        content: &str,
        reply_to: Option<&str>,
    ) -> (u16, Value) {
        let mut body = json!({"content": content});
        if let Some(r) = reply_to {
            body["replyToMessageId"] = json!(r);
        }
        let res = self
            .http
            .post(format!("{}/api/cases/{case}/messages", self.messages_url))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or(Value::Null))
    }

    /// Posts and expects 200; returns the new messages.
    pub async fn say(
        &self,
        token: &str,
        case: &str,
        content: &str,
        reply_to: Option<&str>,
    ) -> Vec<Value> {
        let (status, body) = self.post(token, case, content, reply_to).await;
        assert_eq!(status, 200, "{content}: {body}");
        body["messages"].as_array().unwrap().clone()
    }

    /// Asks for `move <session> to <car>` and returns the presentation message.
    pub async fn propose(&self, token: &str, case: &str, session: &str, car: &str) -> Value {
        let messages = self
            .say(token, case, &format!("move {session} to {car}"), None)
            .await;
        let last = messages.last().unwrap().clone();
        assert_eq!(last["kind"], "proposal", "{messages:?}");
        last
    }

    /// `GET /api/cases/{case}/messages`.
    pub async fn history(&self, token: &str, case: &str) -> Vec<Value> {
        let res = self
            .http
            .get(format!("{}/api/cases/{case}/messages", self.messages_url))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        res.json::<Value>().await.unwrap()["messages"]
            .as_array()
            .unwrap()
            .clone()
    }

    /// The demo provider's counters.
    pub fn stats(&self) -> Value {
        self.demo.stats()["stats"].clone()
    }

    /// How many items the stack's table holds (a request that must write nothing
    /// leaves it unchanged).
    pub async fn item_count(&self) -> i32 {
        let sdk = aws_config::load_from_env().await;
        let client = DynamoStore::client(&sdk, None);
        let mut total = 0;
        let mut start = None;
        loop {
            let page = client
                .scan()
                .table_name(&self.settings.table)
                .select(aws_sdk_dynamodb::types::Select::Count)
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .unwrap();
            total += page.count();
            start = page.last_evaluated_key().cloned();
            if start.is_none() {
                return total;
            }
        }
    }

    /// Every item of the stack's table, rendered as text (A-34: what a scan for a secret
    /// reads).
    pub async fn table_text(&self) -> String {
        let sdk = aws_config::load_from_env().await;
        let client = DynamoStore::client(&sdk, None);
        let mut text = String::new();
        let mut start = None;
        loop {
            let page = client
                .scan()
                .table_name(&self.settings.table)
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .unwrap();
            for item in page.items() {
                text.push_str(&format!("{item:?}\n"));
            }
            start = page.last_evaluated_key().cloned();
            if start.is_none() {
                return text;
            }
        }
    }

    /// Sets a demo provider fault.
    pub fn fault(&self, fault: Value) {
        let f = fault["fault"].as_str().unwrap().to_owned();
        let mut faults = self.demo.faults.lock().unwrap();
        match f.as_str() {
            "delay" => faults.delay_ms = fault["ms"].as_u64().unwrap(),
            "drop_after_execute" => faults.drop_after_execute = true,
            "garbage" => faults.garbage = true,
            "cars_turn_write" => faults.cars_turn_write = true,
            "cars_description_changed" => faults.cars_description_changed = true,
            "unsafe_summary" => faults.unsafe_summary = true,
            "clock_skew" => faults.clock_skew_secs = fault["secs"].as_i64().unwrap(),
            "skip_proof_verification" => faults.skip_proof_verification = true,
            "accept_expired_proofs" => faults.accept_expired_proofs = true,
            "accept_unsigned_proofs" => faults.accept_unsigned_proofs = true,
            "require_step_up" => faults.require_step_up = true,
            "reset" => *faults = countersign_demo_provider::Faults::default(),
            other => {
                drop(faults);
                let mut store = self.demo.store.lock().unwrap();
                let user = fault["user"].as_str().unwrap_or_default();
                match other {
                    "revoke_permission" => {
                        store.data.users.get_mut(user).unwrap().can_reassign = false;
                    }
                    "block_account" => store.data.users.get_mut(user).unwrap().blocked = true,
                    _ => panic!("unknown fault {other}"),
                }
            }
        }
    }

    /// The session's car at the provider (business data).
    pub fn car_of(&self, user: &str, session: &str) -> String {
        let store = self.demo.store.lock().unwrap();
        store.data.users[user]
            .session(session)
            .unwrap()
            .car_id
            .clone()
    }

    /// What the messages process wrote so far (logs and EMF metric documents, G-8).
    pub fn output(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Stops the messages process and scans everything it logged: no proof, service
    /// token, admin key, widget secret or widget token may appear (A-34, security).
    pub fn finish(mut self) {
        self.kill_messages();
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        assert!(
            log.contains("messages API listening"),
            "the log was captured: {}",
            self.log.display()
        );
        let mut secrets = vec![
            self.service_token.clone(),
            self.admin_key.expose().to_owned(),
            self.widget_secret.expose().to_owned(),
            // Any RS256 JWS header: the start of every proof.
            "eyJhbGciOiJSUzI1NiIs".to_owned(),
            MODEL_API_KEY.to_owned(),
        ];
        secrets.extend(self.tokens.lock().unwrap().iter().cloned());
        if let Some(p) = self.demo.last_proof.lock().unwrap().clone() {
            secrets.push(p);
        }
        // M-3: what the model service was sent holds none of them either.
        let sent: String = self
            .model
            .as_ref()
            .map(|m| m.seen().iter().map(|r| r.raw.to_string()).collect())
            .unwrap_or_default();
        for s in secrets {
            assert!(
                !log.contains(&s),
                "a secret appeared in the messages function's log {}",
                self.log.display()
            );
            assert!(!sent.contains(&s), "a secret was sent to the model");
        }
    }
}

/// Starts the local model service `wire` asks for, thinking like the scripted model,
/// and the messages process's variables that select its adapter.
async fn model_service(
    wire: ModelWire,
    sdk: &aws_config::SdkConfig,
    settings: &AwsSettings,
) -> (Option<ModelServer>, Vec<(String, String)>) {
    let brain: Brain =
        Arc::new(|seen| countersign_chat::model::reply_to(&seen.messages, &seen.offered()));
    match wire {
        ModelWire::Scripted => (None, Vec::new()),
        ModelWire::OpenAi => {
            let server = ModelServer::start(Wire::OpenAi, brain).await.unwrap();
            // The operator's secret, named in full (M-1).
            let name = format!("{}platform/model-api-key", settings.secret_prefix);
            SecretsManagerStore::new(SecretsManagerStore::client(sdk, None), String::new())
                .put(&name, &SecretString::new(MODEL_API_KEY))
                .await
                .unwrap();
            let env = vec![
                (
                    "COUNTERSIGN_MODEL".to_owned(),
                    "openai:e2e-double".to_owned(),
                ),
                (
                    "COUNTERSIGN_MODEL_BASE_URL".to_owned(),
                    server.openai_base(),
                ),
                ("COUNTERSIGN_MODEL_API_KEY_SECRET".to_owned(), name),
            ];
            (Some(server), env)
        }
        ModelWire::Bedrock => {
            let server = ModelServer::start(Wire::Converse, brain).await.unwrap();
            let env = vec![
                (
                    "COUNTERSIGN_MODEL".to_owned(),
                    format!("bedrock:{BEDROCK_MODEL_ID}"),
                ),
                (
                    "AWS_ENDPOINT_URL_BEDROCK_RUNTIME".to_owned(),
                    server.endpoint(),
                ),
            ];
            (Some(server), env)
        }
    }
}

/// The Bedrock model id the local Converse service is called with.
pub const BEDROCK_MODEL_ID: &str = "anthropic.claude-e2e-v1:0";

fn ids_widget() -> WidgetKeyId {
    WidgetKeyId::parse("wk_01JDZ6Y5X1QW9T3V7N2K4M8P0R").unwrap()
}

impl Drop for Stack {
    fn drop(&mut self) {
        self.kill_messages();
    }
}

/// The id of the last assistant message among `messages` (what a widget replies to).
pub fn last_assistant(messages: &[Value]) -> String {
    messages
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The texts of `messages`, joined (for assertions).
pub fn texts(messages: &[Value]) -> String {
    messages
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}
