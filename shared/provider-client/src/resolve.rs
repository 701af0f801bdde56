//! D-5: a provider URL's host must resolve only to public addresses. Checked when an
//! administrator saves the URL (the admin use case calls [`check_public`], the domain's) and again at connect
//! time by the provider client ([`GuardedDns`]: the addresses it checks are the very ones
//! the connection uses), so that a DNS answer changed in between (rebinding) cannot reach
//! inside.

use async_trait::async_trait;
use countersign_domain::config::UrlPolicy;
use std::net::IpAddr;

pub use countersign_domain::host::{HostError, check_addresses, check_public};
pub use countersign_domain::ports::Resolver;

/// The system resolver (tokio's `lookup_host`).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

#[async_trait]
impl Resolver for SystemResolver {
    async fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<IpAddr>> {
        Ok(tokio::net::lookup_host((host, port))
            .await?
            .map(|a| a.ip())
            .collect())
    }
}

/// The provider client's DNS: resolves with the inner [`Resolver`] and hands the HTTP
/// connector only addresses that pass [`check_addresses`]; otherwise the connection fails
/// before any byte is sent.
#[derive(Clone)]
pub struct GuardedDns {
    /// The resolver.
    pub inner: std::sync::Arc<dyn Resolver>,
    /// The D-5 setting.
    pub policy: UrlPolicy,
}

countersign_domain::debug_showing!(GuardedDns { policy });

impl reqwest::dns::Resolve for GuardedDns {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let this = self.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs = this.inner.resolve(&host, 0).await?;
            check_addresses(&addrs, this.policy)?;
            let out: reqwest::dns::Addrs = Box::new(
                addrs
                    .into_iter()
                    .map(|ip| std::net::SocketAddr::new(ip, 0))
                    .collect::<Vec<_>>()
                    .into_iter(),
            );
            Ok(out)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use countersign_domain::config::ServerUrl;

    struct Fixed(Vec<IpAddr>);

    #[async_trait]
    impl Resolver for Fixed {
        async fn resolve(&self, _: &str, _: u16) -> std::io::Result<Vec<IpAddr>> {
            if self.0.is_empty() {
                Err(std::io::Error::other("nxdomain"))
            } else {
                Ok(self.0.clone())
            }
        }
    }

    fn url(s: &str, policy: UrlPolicy) -> ServerUrl {
        ServerUrl::parse(s, policy).unwrap()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    /// D-5: a public-looking name resolving to any internal address is refused
    /// (metadata, private, loopback, CGNAT, IPv6 ULA), even mixed with public ones.
    #[tokio::test]
    async fn d5_names_must_resolve_only_to_public_addresses() {
        let u = url(
            "https://mcp.trackshare.example.com/mcp",
            UrlPolicy::default(),
        );
        assert!(
            check_public(&Fixed(vec![ip("93.184.216.34")]), &u, UrlPolicy::default())
                .await
                .is_ok()
        );
        for bad in [
            "169.254.169.254",
            "10.0.0.8",
            "127.0.0.1",
            "100.64.1.1",
            "fd00::1",
            "::ffff:192.168.1.1",
        ] {
            let r = check_public(
                &Fixed(vec![ip("93.184.216.34"), ip(bad)]),
                &u,
                UrlPolicy::default(),
            )
            .await;
            assert!(
                matches!(r, Err(HostError::NotPublic { .. })),
                "{bad}: {r:?}"
            );
        }
        assert_eq!(
            check_public(&Fixed(vec![]), &u, UrlPolicy::default()).await,
            Err(HostError::Unresolvable)
        );
    }

    /// D-5: the local-stack setting admits 127.0.0.1 and nothing else.
    #[tokio::test]
    async fn d5_local_stack_setting_admits_only_loopback() {
        let local = UrlPolicy {
            allow_loopback_http: true,
        };
        let u = url("http://127.0.0.1:9100/mcp", local);
        assert!(check_public(&Fixed(vec![]), &u, local).await.is_ok());
        assert!(
            check_public(&Fixed(vec![]), &u, UrlPolicy::default())
                .await
                .is_err()
        );
        let named = url("https://mcp.example.com/mcp", local);
        assert!(
            check_public(&Fixed(vec![ip("10.0.0.1")]), &named, local)
                .await
                .is_err()
        );
    }
}
