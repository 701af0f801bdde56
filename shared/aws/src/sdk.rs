//! Issue 26 B: the one SDK configuration of a process, with one HTTP client whose TLS
//! roots are the CA bundle the process already read (`bundle_pem`), so the SDK does not
//! walk the certificate directory again at init.

use aws_smithy_http_client::Connector;
use aws_smithy_http_client::tls::{self, TlsContext, TrustStore, rustls_provider::CryptoMode};

/// The SDK configuration from the environment; with `bundle_pem`, every AWS client trusts
/// exactly those roots (else the SDK's own lookup of the platform's roots).
pub async fn sdk_config(bundle_pem: Option<&[u8]>) -> aws_config::SdkConfig {
    let mut loader = aws_config::from_env().timeout_config(timeouts());
    // Lambda (and the local stack) hand credentials in environment variables, which the
    // default chain tries first anyway; naming that provider skips building the rest of
    // the chain at init — its web-identity provider builds an STS client (issue 26 B).
    if std::env::var_os("AWS_ACCESS_KEY_ID").is_some() {
        loader = loader.credentials_provider(
            aws_config::environment::EnvironmentVariableCredentialsProvider::new(),
        );
    }
    let Some(pem) = bundle_pem else {
        return loader.load().await;
    };
    let store = TrustStore::empty()
        .with_native_roots(false)
        .with_pem_certificate(pem.to_vec());
    match TlsContext::builder().with_trust_store(store).build() {
        Ok(context) => loader.http_client(https_client(context)).load().await,
        Err(e) => {
            tracing::warn!(error = %e, "the CA bundle cannot serve the AWS SDK; it looks up the platform's roots");
            loader.load().await
        }
    }
}

/// The process's one HTTPS client for every AWS client (rustls with aws-lc, the stack the
/// SDK uses by default), trusting `context`.
///
/// Each SDK client's construction asks its HTTP client for a connector without settings
/// and discards it (smithy loads native roots early that way); with the stock builder
/// that builds a TLS configuration — every root of the bundle parsed — per SDK client
/// at init, a third of a function's init in the profile. Requests always pass their
/// settings, and the HTTP client caches the connector it builds per settings, so here
/// the settings-less check gets a plain connector and the TLS configuration is built
/// once, by the first request (which built one anyway).
fn https_client(context: TlsContext) -> aws_sdk_dynamodb::config::SharedHttpClient {
    aws_smithy_http_client::Builder::new().build_with_connector_fn(move |settings, components| {
        let Some(settings) = settings else {
            return Connector::builder().build_http();
        };
        let mut builder = Connector::builder().connector_settings(settings.clone());
        if let Some(components) = components {
            builder.set_sleep_impl(components.sleep_impl());
        }
        builder
            .tls_provider(tls::Provider::Rustls(CryptoMode::AwsLc))
            .tls_context(context.clone())
            .build()
    })
}

/// I-2: an attempt that gets no answer in this long is abandoned (the SDK's standard
/// retry then tries again)…
pub const ATTEMPT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);
/// …and the whole operation, its retries included, in this long: far below the functions'
/// 29 s timeout, so a stalled DynamoDB, KMS or Secrets Manager frees the invocation's slot
/// with an error the handler answers (503), instead of holding it until Lambda kills it.
pub const OPERATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(8);
/// A connection not made in this long is a failed attempt.
pub const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// The timeouts of every AWS client of every function ([`sdk_config`]).
pub fn timeouts() -> aws_config::timeout::TimeoutConfig {
    aws_config::timeout::TimeoutConfig::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .operation_attempt_timeout(ATTEMPT_TIMEOUT)
        .operation_timeout(OPERATION_TIMEOUT)
        .build()
}

/// I-1: who makes a call. On AWS, each function runs as its own role and the credentials
/// come from Lambda; the local stack gives each principal an access key id of its own, by
/// which the emulator's front finds the role from `template.yaml` it enforces
/// (`infra/local-aws/iam/enforce.py`, the same table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Principal {
    /// The operator: the CLI, `bootstrap`, test fixtures (the account's administrator,
    /// whom the key policies do not let sign).
    Operator,
    /// The messages function (`MessagesFunctionRole`).
    Messages,
    /// The streamed post (`MessagesStreamFunctionRole`).
    Stream,
    /// The admin API and panel (`AdminFunctionRole`).
    Admin,
    /// The MCP gateway (`GatewayFunctionRole`).
    Gateway,
    /// The purge function and the erasure worker it runs (`PurgeFunctionRole`).
    Purge,
    /// `countersign-bridge` on Lambda (`bridge/template.yaml`'s `BridgeFunctionRole`).
    Bridge,
}

impl Principal {
    /// Every principal.
    pub const ALL: [Self; 7] = [
        Self::Operator,
        Self::Messages,
        Self::Stream,
        Self::Admin,
        Self::Gateway,
        Self::Purge,
        Self::Bridge,
    ];

    /// Its access key id on the local stack.
    pub fn local_access_key_id(self) -> &'static str {
        match self {
            Self::Operator => "CSLOCALOPERATOR",
            Self::Messages => "CSLOCALMESSAGES",
            Self::Stream => "CSLOCALSTREAM",
            Self::Admin => "CSLOCALADMIN",
            Self::Gateway => "CSLOCALGATEWAY",
            Self::Purge => "CSLOCALPURGE",
            Self::Bridge => "CSLOCALBRIDGE",
        }
    }

    /// Its role's logical id in its template (`operator` has none).
    pub fn role(self) -> Option<&'static str> {
        match self {
            Self::Operator => None,
            Self::Messages => Some("MessagesFunctionRole"),
            Self::Stream => Some("MessagesStreamFunctionRole"),
            Self::Admin => Some("AdminFunctionRole"),
            Self::Gateway => Some("GatewayFunctionRole"),
            Self::Purge => Some("PurgeFunctionRole"),
            Self::Bridge => Some("BridgeFunctionRole"),
        }
    }
}

impl Principal {
    /// Its role's ARN as the local stack's evaluator names it (the account moto serves).
    pub fn local_role_arn(self) -> String {
        format!(
            "arn:aws:iam::123456789012:role/{}",
            self.role().unwrap_or("countersign-operator")
        )
    }
}

/// Whether this process runs against the local stack's emulator (`COUNTERSIGN_LOCAL_AWS=1`,
/// never inside Lambda).
pub fn local_stack() -> bool {
    std::env::var("COUNTERSIGN_LOCAL_AWS").is_ok_and(|v| v == "1")
        && std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_none()
}

/// `sdk` calling as `principal`: on the local stack, with that principal's access key id
/// (I-1); elsewhere `sdk` itself (on AWS, a function's credentials are its role's).
pub fn as_principal(sdk: &aws_config::SdkConfig, principal: Principal) -> aws_config::SdkConfig {
    if !local_stack() {
        return sdk.clone();
    }
    let credentials = aws_sdk_dynamodb::config::Credentials::new(
        principal.local_access_key_id(),
        "countersign-local",
        None,
        None,
        "countersign-local-principal",
    );
    sdk.to_builder()
        .credentials_provider(aws_sdk_dynamodb::config::SharedCredentialsProvider::new(
            credentials,
        ))
        .build()
}

/// [`sdk_config`] calling as `principal` ([`as_principal`]).
pub async fn sdk_config_as(
    principal: Principal,
    bundle_pem: Option<&[u8]>,
) -> aws_config::SdkConfig {
    as_principal(&sdk_config(bundle_pem).await, principal)
}
