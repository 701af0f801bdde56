//! Building the admin API: its typed configuration, read once from the environment
//! ([`Config`]), and the state built from it. What `main` and the local dev server share.

use countersign_admin::api::AdminState;
use countersign_aws::AwsSettings;
use countersign_aws::settings::{Env, EnvError, FromEnv};
use countersign_aws::system::{SystemClock, UlidIds};
use countersign_domain::config::UrlPolicy;
use countersign_provider_client::resolve::SystemResolver;
use countersign_provider_client::{HttpProvider, Settings as ProviderSettings};
use std::sync::Arc;

pub use countersign_aws::settings::DEFAULT_ISSUER;

/// Environment variables the deployed function reads besides [`AwsSettings::ENV`] (the
/// SAM template sets each).
pub const ENV: [&str; 2] = ["COUNTERSIGN_ISSUER", "COUNTERSIGN_STEP_UP_ORIGIN"];

/// Read only outside Lambda (the local stack); the template never sets them (D-5).
pub const LOCAL_ENV: [&str; 2] = [
    "COUNTERSIGN_ADMIN_ADDR",
    "COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER",
];

/// The admin function's configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The AWS resources.
    pub aws: AwsSettings,
    /// The proofs' `iss`, shown to tenants (C-5) (`COUNTERSIGN_ISSUER`).
    pub issuer: String,
    /// D-5: the local stack's one explicit allowance for `http://127.0.0.1` providers
    /// (`COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER=1`); the deployed template never sets it.
    pub allow_loopback_provider: bool,
    /// The local address outside Lambda (`COUNTERSIGN_ADMIN_ADDR`).
    pub addr: String,
    /// F-3: where the passkey ceremonies run (`COUNTERSIGN_STEP_UP_ORIGIN`): published in
    /// actionVerification and used by the certification's step-up series.
    pub step_up: Option<countersign_domain::stepup::Site>,
}

impl FromEnv for Config {
    fn read(env: &Env<'_>) -> Result<Self, EnvError> {
        let local = env.local_stack_flag("COUNTERSIGN_ALLOW_LOOPBACK_PROVIDER")?;
        Ok(Self {
            aws: AwsSettings::read(env)?,
            issuer: env.issuer(),
            allow_loopback_provider: local,
            step_up: env.step_up_site(local)?,
            addr: env
                .string("COUNTERSIGN_ADMIN_ADDR")
                .unwrap_or_else(|| "127.0.0.1:8788".into()),
        })
    }
}

/// One certification call's limit (the whole run has its own, `certify::RUN_LIMIT`).
pub const CERTIFICATION_CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The admin API's state over `config`.
pub fn state(sdk: &aws_config::SdkConfig, config: &Config) -> anyhow::Result<AdminState> {
    state_with(sdk, config, CERTIFICATION_CALL_TIMEOUT)
}

/// The admin state with provider calls limited to `call_timeout`: also what the messages
/// function serves the certification routes with (decision 0026), so the two cannot
/// drift.
pub fn state_with(
    sdk: &aws_config::SdkConfig,
    config: &Config,
    call_timeout: std::time::Duration,
) -> anyhow::Result<AdminState> {
    let settings = &config.aws;
    let store = settings.store(sdk);
    let url_policy = UrlPolicy {
        allow_loopback_http: config.allow_loopback_provider,
    };
    // A run checks the provider as it is now: no cached tools/list.
    let provider = HttpProvider::new(ProviderSettings {
        timeout: call_timeout,
        tools_ttl: std::time::Duration::ZERO,
        url_policy,
        ..ProviderSettings::default()
    })?;
    Ok(AdminState {
        // the admin use cases open and destroy people's keys.
        stores: countersign_admin::api::AdminStores::split(
            Arc::new(store.clone()),
            Arc::new(store.clone()),
        )
        .with_subjects(settings.subject_keys(sdk)),
        leases: Arc::new(store.clone()),
        sessions: Arc::new(store),
        secrets: Arc::new(settings.secrets(sdk)),
        signer: Arc::new(settings.signer(sdk)),
        checkpoint_signer: Arc::new(settings.checkpoint_signer(sdk)),
        issuer: config.issuer.clone(),
        url_policy,
        resolver: Arc::new(SystemResolver),
        provider: Arc::new(provider),
        ids: Arc::new(UlidIds::default()),
        clock: Arc::new(SystemClock),
        step_up: config.step_up.clone(),
    })
}

/// The admin API's state, configured from the environment.
pub fn state_from_env(sdk: &aws_config::SdkConfig) -> anyhow::Result<AdminState> {
    state(sdk, &Config::from_env()?)
}
