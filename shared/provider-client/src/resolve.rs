//! D-5: a provider URL's host must resolve only to public addresses. Checked when an
//! administrator saves the URL (the admin API calls [`check_public`]) and again at connect
//! time by the provider client ([`GuardedDns`]: the addresses it checks are the very ones
//! the connection uses), so that a DNS answer changed in between (rebinding) cannot reach
//! inside.

use async_trait::async_trait;
use countersign_domain::config::{ServerUrl, UrlPolicy};
use countersign_domain::net::{InternalReason, ip_internal_reason};
use std::net::IpAddr;

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

/// Why a URL's host is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// The host does not resolve.
    #[error("the host does not resolve")]
    Unresolvable,
    /// An address of the host is not public.
    #[error("the host resolves to a non-public address ({address}: {reason:?})")]
    NotPublic {
        /// The address.
        address: IpAddr,
        /// Its class.
        reason: InternalReason,
    },
}

/// D-5: every address the host resolves to must be public, unless the explicit
/// local-stack setting allows this loopback URL.
pub async fn check_public(
    resolver: &dyn Resolver,
    url: &ServerUrl,
    policy: UrlPolicy,
) -> Result<Vec<IpAddr>, HostError> {
    let u = url.as_url();
    let host = u
        .host_str()
        .unwrap_or_default()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = u.port_or_known_default().unwrap_or(443);
    let addrs = match host.parse::<IpAddr>() {
        Ok(ip) => vec![ip],
        Err(_) => resolver
            .resolve(host, port)
            .await
            .map_err(|_| HostError::Unresolvable)?,
    };
    check_addresses(&addrs, policy)?;
    Ok(addrs)
}

/// Every address must be public; the local-stack setting admits `127.0.0.1` only.
pub fn check_addresses(addrs: &[IpAddr], policy: UrlPolicy) -> Result<(), HostError> {
    if addrs.is_empty() {
        return Err(HostError::Unresolvable);
    }
    for a in addrs {
        if let Some(reason) = ip_internal_reason(*a) {
            let loopback_allowed = policy.allow_loopback_http && *a == IpAddr::from([127, 0, 0, 1]);
            if !loopback_allowed {
                return Err(HostError::NotPublic {
                    address: *a,
                    reason,
                });
            }
        }
    }
    Ok(())
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

impl std::fmt::Debug for GuardedDns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedDns")
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

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
