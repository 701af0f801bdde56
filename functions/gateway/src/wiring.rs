//! Building the gateway: its typed configuration, read once from the environment
//! ([`Config`]), and the gateway built from it. What `main` and the local dev server share.

use crate::{Gateway, TokenKey};
use countersign_aws::AwsSettings;
use countersign_aws::settings::{Env, EnvError, FromEnv};
use countersign_aws::system::{SystemClock, UlidIds};
use countersign_domain::ports::TenantStore;
use countersign_tools::access;
use countersign_tools::builtins::{self, Services};
use countersign_tools::integration::IntegrationService;
use countersign_tools::prepare::{ConnectingPreparer, Preparation};
use std::sync::Arc;

/// Environment variables the deployed function reads besides [`AwsSettings::ENV`] (the
/// SAM template sets each).
pub const ENV: [&str; 3] = [
    "COUNTERSIGN_GATEWAY_HOSTS",
    "COUNTERSIGN_TENANT_GATEWAY_CALLS_PER_MINUTE",
    "COUNTERSIGN_PUBLIC_URL",
];

/// Read only outside Lambda (the local stack); the template never sets them (D-5).
pub const LOCAL_ENV: [&str; 2] = [
    "COUNTERSIGN_GATEWAY_ADDR",
    "COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER",
];

/// The gateway's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The AWS resources.
    pub aws: AwsSettings,
    /// The API's host names (`COUNTERSIGN_GATEWAY_HOSTS`, comma-separated; rmcp refuses
    /// other Host headers; `*` turns the check off behind API Gateway).
    pub hosts: Vec<String>,
    /// D-5: admit `http://127.0.0.1` providers (`COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER=1`,
    /// the local stack only).
    pub allow_loopback_provider: bool,
    /// The local address outside Lambda (`COUNTERSIGN_GATEWAY_ADDR`).
    pub addr: String,
    /// Proxied consultations each tenant may make per minute
    /// (`COUNTERSIGN_TENANT_GATEWAY_CALLS_PER_MINUTE`, 120; decision 0021).
    pub tenant_calls_per_minute: u32,
    /// The public origin of the confirmation page (`COUNTERSIGN_PUBLIC_URL`, e.g. a custom
    /// domain); unset or empty: the origin each request reached.
    pub public_url: Option<String>,
}

impl FromEnv for Config {
    fn read(env: &Env<'_>) -> Result<Self, EnvError> {
        Ok(Self {
            aws: AwsSettings::read(env)?,
            hosts: env.list("COUNTERSIGN_GATEWAY_HOSTS"),
            allow_loopback_provider: env.local_stack_flag("COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER")?,
            addr: env
                .string("COUNTERSIGN_GATEWAY_ADDR")
                .unwrap_or_else(|| "127.0.0.1:8787".into()),
            tenant_calls_per_minute: env
                .per_minute("COUNTERSIGN_TENANT_GATEWAY_CALLS_PER_MINUTE", 120)?,
            public_url: env
                .string("COUNTERSIGN_PUBLIC_URL")
                .filter(|u| !u.is_empty())
                .map(|u| u.trim_end_matches('/').to_owned()),
        })
    }
}

/// The gateway, configured from the environment.
pub async fn from_env(sdk: &aws_config::SdkConfig) -> anyhow::Result<Gateway> {
    gateway(sdk, &Config::from_env()?).await
}

/// The gateway over `config`.
pub async fn gateway(sdk: &aws_config::SdkConfig, config: &Config) -> anyhow::Result<Gateway> {
    let settings = &config.aws;
    let store = settings.store(sdk);
    let secrets = settings.secrets(sdk);
    // Read on the first request, not here: no network call at init (issue 17).
    let token_key = TokenKey::lazy(Arc::new(secrets.clone()), access::SECRET_NAME);
    let tenants: Arc<dyn TenantStore> = Arc::new(store.clone());
    let budget: Arc<dyn countersign_domain::ports::RateLimiter> = Arc::new(store.clone());
    // Tenants' MCP servers, for proxied consultations (G-6) and preparations. D-5
    // applies at connect time; COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER=1 (local stack only)
    // admits 127.0.0.1.
    let integration = Arc::new(IntegrationService::new(
        tenants.clone(),
        Arc::new(secrets),
        Arc::new(countersign_provider_client::HttpProvider::new(
            countersign_provider_client::Settings {
                url_policy: countersign_domain::config::UrlPolicy {
                    allow_loopback_http: config.allow_loopback_provider,
                },
                ..countersign_provider_client::Settings::default()
            },
        )?),
    ));
    // X-1 (decision 0050): `prepare_action` for the token's person and conversation, as in
    // a chat turn; the signer is asked only whether a key can sign (C-6), never to sign.
    let preparer = ConnectingPreparer {
        preparation: Preparation {
            conversations: Arc::new(store.clone()),
            proposals: Arc::new(store.clone()),
            integration: integration.clone(),
            signer: Arc::new(settings.signer(sdk)),
            clock: Arc::new(SystemClock),
            ids: Arc::new(UlidIds::default()),
            passkeys: Some(Arc::new(store.clone())),
        },
    };
    Ok(Gateway {
        registry: builtins::registry()?,
        links: Some(Arc::new(store.clone())),
        public_url: config.public_url.clone(),
        page_url: None,
        services: Services {
            conversations: Arc::new(store),
            tenants,
            actions: Some(Arc::new(preparer)),
        },
        token_key,
        clock: Arc::new(SystemClock),
        allowed_hosts: config.hosts.clone(),
        integration: Some(integration),
        budget: Some((budget, config.tenant_calls_per_minute)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<Config, EnvError> {
        Config::from_pairs(vars)
    }

    /// Decision 0021: the gateway budget defaults to 120 a minute; 0 or a non-number is
    /// refused, naming the variable.
    #[test]
    fn the_gateway_budget_is_read_and_checked() {
        assert_eq!(read(&[]).unwrap().tenant_calls_per_minute, 120);
        let name = "COUNTERSIGN_TENANT_GATEWAY_CALLS_PER_MINUTE";
        assert_eq!(read(&[(name, "30")]).unwrap().tenant_calls_per_minute, 30);
        for bad in ["0", "many", "-1"] {
            assert_eq!(read(&[(name, bad)]).unwrap_err().name, name);
        }
    }
}
