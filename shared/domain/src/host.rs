//! D-5: a provider URL's host must resolve only to public addresses — checked when an
//! administrator saves the URL and again at connect time by the provider client (whose
//! DNS hands the connection only addresses that pass [`check_addresses`]). The rule over
//! the [`Resolver`] port; resolution itself is an adapter's.

use crate::config::{ServerUrl, UrlPolicy};
use crate::net::{InternalReason, ip_internal_reason};
use crate::ports::Resolver;
use std::net::IpAddr;

/// Why a provider URL's host is refused (D-5).
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
