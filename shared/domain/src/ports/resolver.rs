//! Host name resolution (D-5).

use async_trait::async_trait;

/// Resolves host names (D-5: a provider's host must resolve only to public addresses;
/// checked on save and again at connect time).
#[async_trait]
pub trait Resolver: Send + Sync {
    /// The addresses `host` resolves to.
    async fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<std::net::IpAddr>>;
}
