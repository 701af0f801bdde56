//! Building the messages API: its typed configuration, read once from the environment
//! ([`Config`]), and the state built from it. What `main` and the local dev server share.

use countersign_aws::AwsSettings;
use countersign_aws::settings::{Env, EnvError, FromEnv};
use countersign_aws::system::{SystemClock, UlidIds};
use countersign_chat::api::AppState;
use countersign_chat::model::ScriptedModel;
use countersign_chat::widget::WidgetAuth;
use countersign_chat::{Chat, ChatParts};
use countersign_domain::config::UrlPolicy;
use countersign_domain::ports::Model;
use countersign_models::bedrock::BedrockModel;
use countersign_models::choice::{self, ModelChoice};
use countersign_models::openai::{ApiKey, Endpoint, OpenAiModel};
use countersign_tools::integration::IntegrationService;
use std::sync::Arc;
use std::time::Duration;

pub use countersign_aws::settings::DEFAULT_ISSUER;

/// Environment variables the deployed function reads besides [`AwsSettings::ENV`] (the
/// SAM template sets each).
pub const ENV: [&str; 14] = [
    "COUNTERSIGN_STEP_UP_ORIGIN",
    "COUNTERSIGN_ISSUER",
    "COUNTERSIGN_MODEL",
    "COUNTERSIGN_MODEL_BASE_URL",
    "COUNTERSIGN_MODEL_API_KEY_SECRET",
    "COUNTERSIGN_MODEL_MAX_OUTPUT_TOKENS",
    "COUNTERSIGN_PROVIDER_TIMEOUT_SECS",
    "COUNTERSIGN_EXECUTING_STUCK_AFTER_SECS",
    "COUNTERSIGN_FUNCTION_TIMEOUT_SECS",
    "COUNTERSIGN_TENANT_TURNS_PER_MINUTE",
    "COUNTERSIGN_TENANT_REQUESTS_PER_MINUTE",
    "COUNTERSIGN_PERSON_CASES_PER_MINUTE",
    "COUNTERSIGN_PERSON_MESSAGES_PER_MINUTE",
    "COUNTERSIGN_RESPONSE_STREAMING",
];

/// Time kept after a model turn's deadline, inside the function's timeout, to tell the
/// person and write what the turn left.
pub const TURN_MARGIN: Duration = Duration::from_secs(4);

/// Read only outside Lambda (the local stack); the template never sets them (D-5).
pub const LOCAL_ENV: [&str; 2] = [
    "COUNTERSIGN_MESSAGES_ADDR",
    "COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER",
];

/// The messages function's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The AWS resources.
    pub aws: AwsSettings,
    /// The proofs' `iss` (`COUNTERSIGN_ISSUER`).
    pub issuer: String,
    /// The model (M-1): `COUNTERSIGN_MODEL` (`scripted`, `bedrock:<id>`, `openai:<model>`)
    /// with `COUNTERSIGN_MODEL_BASE_URL` and `COUNTERSIGN_MODEL_API_KEY_SECRET`.
    pub model: ModelChoice,
    /// The output bound of each model step (`COUNTERSIGN_MODEL_MAX_OUTPUT_TOKENS`, 1024;
    /// M-4).
    pub max_output_tokens: u32,
    /// How long a provider call may take (`COUNTERSIGN_PROVIDER_TIMEOUT_SECS`, 10).
    pub provider_timeout: Duration,
    /// An `executing` proposal older than this is stuck
    /// (`COUNTERSIGN_EXECUTING_STUCK_AFTER_SECS`, 30).
    pub stuck_after: Duration,
    /// The function's own timeout, as the template sets it
    /// (`COUNTERSIGN_FUNCTION_TIMEOUT_SECS`, 29).
    pub function_timeout: Duration,
    /// Model turns each tenant may start per minute (`COUNTERSIGN_TENANT_TURNS_PER_MINUTE`,
    /// 60; decision 0021).
    pub tenant_turns_per_minute: u32,
    /// N-5: widget API requests each tenant's people may make per minute, all routes
    /// together (`COUNTERSIGN_TENANT_REQUESTS_PER_MINUTE`, 3000; decision 0063).
    pub tenant_requests_per_minute: u32,
    /// V-7: new cases one person may open a minute.
    pub person_cases_per_minute: u32,
    /// V-7: messages one person may send a minute.
    pub person_messages_per_minute: u32,
    /// D-5: admit `http://127.0.0.1` providers (`COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER=1`,
    /// the local stack only).
    pub allow_loopback_provider: bool,
    /// The local address outside Lambda (`COUNTERSIGN_MESSAGES_ADDR`).
    pub addr: String,
    /// S-1: this function answers through a function URL in `RESPONSE_STREAM` mode
    /// (`COUNTERSIGN_RESPONSE_STREAMING=1`, the template's stream function; decision
    /// 0046): it runs Lambda's streaming runner, which cannot serve buffered routes.
    pub response_streaming: bool,
    /// F-3: where the passkey ceremonies run (the confirmation page's origin), if set.
    pub step_up: Option<countersign_domain::stepup::Site>,
}

impl FromEnv for Config {
    fn read(env: &Env<'_>) -> Result<Self, EnvError> {
        let (model, base_url, key) = (
            env.string(choice::MODEL),
            env.string(choice::BASE_URL),
            env.string(choice::API_KEY_SECRET),
        );
        let model = ModelChoice::parse(model.as_deref(), base_url.as_deref(), key.as_deref())
            .map_err(|e| EnvError {
                name: e.variable,
                problem: e.problem,
                found: env.string(e.variable).unwrap_or_default(),
            })?;
        let max_output_tokens = env
            .parse::<u32>(
                "COUNTERSIGN_MODEL_MAX_OUTPUT_TOKENS",
                "a whole number of tokens from 64 to 32768",
            )?
            .unwrap_or(1024);
        if !(64..=32768).contains(&max_output_tokens) {
            return Err(EnvError {
                name: "COUNTERSIGN_MODEL_MAX_OUTPUT_TOKENS",
                problem: "a whole number of tokens from 64 to 32768",
                found: max_output_tokens.to_string(),
            });
        }
        let config = Self {
            model,
            max_output_tokens,
            aws: AwsSettings::read(env)?,
            issuer: env.issuer(),
            provider_timeout: env.seconds("COUNTERSIGN_PROVIDER_TIMEOUT_SECS", 10)?,
            stuck_after: env.seconds("COUNTERSIGN_EXECUTING_STUCK_AFTER_SECS", 30)?,
            function_timeout: env.seconds("COUNTERSIGN_FUNCTION_TIMEOUT_SECS", 29)?,
            tenant_turns_per_minute: env.per_minute("COUNTERSIGN_TENANT_TURNS_PER_MINUTE", 60)?,
            tenant_requests_per_minute: env
                .per_minute("COUNTERSIGN_TENANT_REQUESTS_PER_MINUTE", 3000)?,
            person_cases_per_minute: env.per_minute("COUNTERSIGN_PERSON_CASES_PER_MINUTE", 6)?,
            person_messages_per_minute: env
                .per_minute("COUNTERSIGN_PERSON_MESSAGES_PER_MINUTE", 20)?,
            allow_loopback_provider: env.local_stack_flag("COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER")?,
            addr: env
                .string("COUNTERSIGN_MESSAGES_ADDR")
                .unwrap_or_else(|| "127.0.0.1:8789".into()),
            response_streaming: env.flag("COUNTERSIGN_RESPONSE_STREAMING")?,
            step_up: env
                .step_up_site(env.local_stack_flag("COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER")?)?,
        };
        config.consistent()
    }
}

impl Config {
    /// The timeouts must nest: a provider exchange (handshake and call share one budget)
    /// ends, with the turn's margin, inside the function's timeout; an execution is
    /// called stuck only after the function that ran it is certainly gone.
    fn consistent(self) -> Result<Self, EnvError> {
        if self.provider_timeout + TURN_MARGIN > self.function_timeout {
            return Err(EnvError {
                name: "COUNTERSIGN_PROVIDER_TIMEOUT_SECS",
                problem: "must be at least 4 seconds below COUNTERSIGN_FUNCTION_TIMEOUT_SECS",
                found: self.provider_timeout.as_secs().to_string(),
            });
        }
        if self.stuck_after <= self.function_timeout {
            return Err(EnvError {
                name: "COUNTERSIGN_EXECUTING_STUCK_AFTER_SECS",
                problem: "must be above COUNTERSIGN_FUNCTION_TIMEOUT_SECS (an execution still running is not stuck)",
                found: self.stuck_after.as_secs().to_string(),
            });
        }
        Ok(self)
    }

    /// A model turn's deadline (M-4): the function's timeout less the margin.
    pub fn turn_deadline(&self) -> Duration {
        self.function_timeout.saturating_sub(TURN_MARGIN)
    }
}

/// The model `config` chose (M-1). Nothing is called here: the OpenAI-compatible
/// adapter reads its API key on its first step.
pub fn model(sdk: &aws_config::SdkConfig, config: &Config) -> anyhow::Result<Arc<dyn Model>> {
    Ok(match &config.model {
        ModelChoice::Scripted => Arc::new(ScriptedModel),
        ModelChoice::Bedrock { model_id } => Arc::new(BedrockModel::from_sdk(sdk, model_id)),
        ModelChoice::OpenAi {
            model,
            base_url,
            api_key_secret,
        } => {
            let key = api_key_secret.as_ref().map(|secret_id| ApiKey {
                store: Arc::new(config.aws.operator_secrets(sdk)),
                secret_id: secret_id.clone(),
            });
            let http = countersign_provider_client::roots::build_with_system_roots(|| {
                reqwest::Client::builder().redirect(reqwest::redirect::Policy::none())
            })?;
            Arc::new(OpenAiModel::new(http, Endpoint::new(base_url, model), key))
        }
    })
}

/// The messages API's state over `config`.
pub fn state(sdk: &aws_config::SdkConfig, config: &Config) -> anyhow::Result<AppState> {
    let settings = &config.aws;
    let store = settings.store(sdk);
    let secrets = Arc::new(settings.secrets(sdk));
    let provider =
        countersign_provider_client::HttpProvider::new(countersign_provider_client::Settings {
            timeout: config.provider_timeout,
            url_policy: UrlPolicy {
                allow_loopback_http: config.allow_loopback_provider,
            },
            ..countersign_provider_client::Settings::default()
        })?;
    let integration =
        IntegrationService::new(Arc::new(store.clone()), secrets.clone(), Arc::new(provider));
    let mut chat = Chat::new(ChatParts {
        conversations: Arc::new(store.clone()),
        proposals: Arc::new(store.clone()),
        unsettled: Arc::new(store.clone()),
        tenants: Arc::new(store.clone()),
        settings: Arc::new(store.clone()),
        integration: Arc::new(integration),
        signer: Arc::new(settings.signer(sdk)),
        model: model(sdk, config)?,
        registry: Arc::new(countersign_tools::builtins::registry()?),
        clock: Arc::new(SystemClock),
        ids: Arc::new(UlidIds::default()),
        issuer: config.issuer.clone(),
        stuck_after: config.stuck_after,
    });
    chat.turn_deadline = config.turn_deadline();
    chat.max_output_tokens = config.max_output_tokens;
    chat.turn_budget = Some((Arc::new(store.clone()), config.tenant_turns_per_minute));
    chat.request_budget = Some((Arc::new(store.clone()), config.tenant_requests_per_minute));
    chat.person_limits = Some((
        Arc::new(store.clone()),
        countersign_chat::PersonLimits {
            cases_per_minute: config.person_cases_per_minute,
            messages_per_minute: config.person_messages_per_minute,
        },
    ));
    // F-3: the passkey ceremonies, where the confirmation page's origin is configured.
    chat.step_up = config
        .step_up
        .as_ref()
        .map(|site| countersign_chat::stepup::StepUp {
            passkeys: Arc::new(store.clone()),
            nonces: Arc::new(store.clone()),
            clock: Arc::new(SystemClock),
            ids: Arc::new(UlidIds::default()),
            rp_id: site.rp_id.clone(),
            origins: site.origins.clone(),
        });
    // the gateway's own token key, read on the first token asked for.
    chat.mcp_tokens = Some(countersign_chat::mcp_token::McpTokens::lazy(
        secrets.clone(),
        countersign_tools::access::SECRET_NAME,
    ));
    Ok(AppState {
        chat: Arc::new(chat),
        auth: Arc::new(WidgetAuth::new(Arc::new(store), secrets)),
    })
}

/// The state of the admin API's certification routes, which this function serves
/// because the run signs test proofs (decision 0026): the same stores, signer and URL
/// rules as the chat, and a provider client that caches no `tools/list`.
pub fn certification_state(
    sdk: &aws_config::SdkConfig,
    config: &Config,
) -> anyhow::Result<countersign_admin::api::AdminState> {
    let admin = countersign_admin_fn::Config {
        aws: config.aws.clone(),
        issuer: config.issuer.clone(),
        allow_loopback_provider: config.allow_loopback_provider,
        addr: String::new(),
        step_up: config.step_up.clone(),
    };
    let call_timeout =
        countersign_admin_fn::CERTIFICATION_CALL_TIMEOUT.min(config.provider_timeout);
    countersign_admin_fn::state_with(sdk, &admin, call_timeout)
}

/// One certification call's limit (the whole run has its own, `certify::RUN_LIMIT`).
/// the confirmation page's state: the same chat and widget identity as the widget
/// API (`widget`), and the stores it reads.
pub fn page_state(
    sdk: &aws_config::SdkConfig,
    config: &Config,
    widget: &AppState,
) -> countersign_chat::page::PageState {
    let store = config.aws.store(sdk);
    countersign_chat::page::PageState {
        chat: widget.chat.clone(),
        auth: widget.auth.clone(),
        links: Arc::new(store.clone()),
        tenants: Arc::new(store.clone()),
        conversations: Arc::new(store),
        clock: Arc::new(SystemClock),
        local: config.allow_loopback_provider,
    }
}

/// The function's whole router: the widget API, its files, and the admin API's
/// certification routes.
pub fn app(sdk: &aws_config::SdkConfig, config: &Config) -> anyhow::Result<axum::Router> {
    let widget = state(sdk, config)?;
    let page = page_state(sdk, config, &widget);
    let chat = countersign_chat::api::router(widget);
    let certification = countersign_admin::certification_app(certification_state(sdk, config)?);
    Ok(chat
        .merge(countersign_chat::page::router(page))
        .merge(certification))
}

/// N-5: the stream function's router (`COUNTERSIGN_RESPONSE_STREAMING`): the streamed
/// post alone; everything else is a 404 there (the admin, erasure, certification, page and
/// JWKS routes are served only behind the throttled HTTP API).
pub fn stream_app(sdk: &aws_config::SdkConfig, config: &Config) -> anyhow::Result<axum::Router> {
    Ok(countersign_chat::api::stream_router(state(sdk, config)?))
}

/// The function's router, configured from the environment.
pub fn app_from_env(sdk: &aws_config::SdkConfig) -> anyhow::Result<axum::Router> {
    app(sdk, &Config::from_env()?)
}

/// The messages API's state, configured from the environment.
pub fn state_from_env(sdk: &aws_config::SdkConfig) -> anyhow::Result<AppState> {
    state(sdk, &Config::from_env()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<Config, EnvError> {
        Config::from_pairs(vars)
    }

    #[test]
    fn defaults_hold_without_any_variable() {
        let c = read(&[]).unwrap();
        assert_eq!(c.issuer, DEFAULT_ISSUER);
        assert_eq!(c.provider_timeout, Duration::from_secs(10));
        assert_eq!(c.stuck_after, Duration::from_secs(30));
        assert!(!c.allow_loopback_provider);
    }

    /// Issue 13: inconsistent timeouts are refused at start, naming the variable.
    #[test]
    fn timeouts_must_nest() {
        let e = read(&[("COUNTERSIGN_PROVIDER_TIMEOUT_SECS", "26")]).unwrap_err();
        assert_eq!(e.name, "COUNTERSIGN_PROVIDER_TIMEOUT_SECS");
        let e = read(&[("COUNTERSIGN_EXECUTING_STUCK_AFTER_SECS", "25")]).unwrap_err();
        assert_eq!(e.name, "COUNTERSIGN_EXECUTING_STUCK_AFTER_SECS");
        let ok = read(&[
            ("COUNTERSIGN_FUNCTION_TIMEOUT_SECS", "60"),
            ("COUNTERSIGN_PROVIDER_TIMEOUT_SECS", "20"),
            ("COUNTERSIGN_EXECUTING_STUCK_AFTER_SECS", "61"),
        ])
        .unwrap();
        assert_eq!(ok.turn_deadline(), Duration::from_secs(56));
    }

    /// M-1: the adapter is chosen by configuration and checked at start; building it
    /// calls nothing (the API key is read on the first step).
    #[tokio::test]
    async fn m1_the_model_is_chosen_by_configuration() {
        let c = read(&[(
            "COUNTERSIGN_MODEL",
            "bedrock:anthropic.claude-3-5-haiku-20241022-v1:0",
        )])
        .unwrap();
        assert_eq!(
            c.model.bedrock_model_id(),
            Some("anthropic.claude-3-5-haiku-20241022-v1:0")
        );
        let o = read(&[
            ("COUNTERSIGN_MODEL", "openai:llama3.1:8b"),
            ("COUNTERSIGN_MODEL_BASE_URL", "http://127.0.0.1:11434/v1"),
            ("COUNTERSIGN_MODEL_MAX_OUTPUT_TOKENS", "512"),
        ])
        .unwrap();
        assert_eq!(o.max_output_tokens, 512);
        let sdk = aws_config::SdkConfig::builder()
            .behavior_version(aws_config::BehaviorVersion::latest())
            .region(aws_config::Region::new("us-east-1"))
            .build();
        for config in [&c, &o, &read(&[]).unwrap()] {
            model(&sdk, config).unwrap();
        }
    }

    #[test]
    fn d5_the_loopback_allowance_is_ignored_inside_lambda() {
        let on = [("COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER", "1")];
        assert!(read(&on).unwrap().allow_loopback_provider);
        let in_lambda = [
            ("COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER", "1"),
            ("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9001"),
        ];
        assert!(!read(&in_lambda).unwrap().allow_loopback_provider);
    }

    #[test]
    fn each_wrong_variable_is_named() {
        for (name, value) in [
            ("COUNTERSIGN_MODEL", "gpt"),
            ("COUNTERSIGN_MODEL", "openai:"),
            ("COUNTERSIGN_MODEL_BASE_URL", "https://api.openai.com/v1"),
            ("COUNTERSIGN_MODEL_MAX_OUTPUT_TOKENS", "8"),
            ("COUNTERSIGN_MODEL_MAX_OUTPUT_TOKENS", "lots"),
            ("COUNTERSIGN_PROVIDER_TIMEOUT_SECS", "ten"),
            ("COUNTERSIGN_EXECUTING_STUCK_AFTER_SECS", "-1"),
            ("COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER", "true"),
            ("COUNTERSIGN_RETENTION_DAYS", "x"),
            ("COUNTERSIGN_TENANT_TURNS_PER_MINUTE", "0"),
            ("COUNTERSIGN_TENANT_TURNS_PER_MINUTE", "many"),
            ("COUNTERSIGN_PERSON_CASES_PER_MINUTE", "0"),
            ("COUNTERSIGN_PERSON_MESSAGES_PER_MINUTE", "x"),
        ] {
            let e = read(&[(name, value)]).unwrap_err();
            assert_eq!(e.name, name);
        }
    }
}
