//! Issue 26 B: the one SDK configuration of a process, with one HTTP client whose TLS
//! roots are the CA bundle the process already read (`bundle_pem`), so the SDK does not
//! walk the certificate directory again at init.

use aws_smithy_http_client::Connector;
use aws_smithy_http_client::tls::{self, TlsContext, TrustStore, rustls_provider::CryptoMode};

/// The SDK configuration from the environment; with `bundle_pem`, every AWS client trusts
/// exactly those roots (else the SDK's own lookup of the platform's roots).
pub async fn sdk_config(bundle_pem: Option<&[u8]>) -> aws_config::SdkConfig {
    let mut loader = aws_config::from_env();
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
