//! Issue 26 B: the one SDK configuration of a process, with one HTTP client whose TLS
//! roots are the CA bundle the process already read (`bundle_pem`), so the SDK does not
//! walk the certificate directory again at init.

use aws_smithy_http_client::tls::{self, TlsContext, TrustStore, rustls_provider::CryptoMode};

/// The SDK configuration from the environment; with `bundle_pem`, every AWS client trusts
/// exactly those roots (else the SDK's own lookup of the platform's roots).
pub async fn sdk_config(bundle_pem: Option<&[u8]>) -> aws_config::SdkConfig {
    let loader = aws_config::from_env();
    let Some(pem) = bundle_pem else {
        return loader.load().await;
    };
    let store = TrustStore::empty()
        .with_native_roots(false)
        .with_pem_certificate(pem.to_vec());
    match TlsContext::builder().with_trust_store(store).build() {
        Ok(context) => {
            let client = aws_smithy_http_client::Builder::new()
                .tls_provider(tls::Provider::Rustls(CryptoMode::AwsLc))
                .tls_context(context)
                .build_https();
            loader.http_client(client).load().await
        }
        Err(e) => {
            tracing::warn!(error = %e, "the CA bundle cannot serve the AWS SDK; it looks up the platform's roots");
            loader.load().await
        }
    }
}
