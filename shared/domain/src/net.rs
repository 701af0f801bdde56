//! Which addresses and host names are internal. Used by the summary checker (A-20: no
//! internal URLs) and by the provider URL rules (D-5: public addresses only), so both
//! agree on one definition.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address or host is not public.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InternalReason {
    /// 127.0.0.0/8, ::1, `localhost`, `*.localhost`.
    Loopback,
    /// RFC 1918 (10/8, 172.16/12, 192.168/16) or IPv6 unique-local (fc00::/7).
    Private,
    /// 169.254/16 (this includes the cloud metadata address 169.254.169.254) or fe80::/10.
    LinkLocal,
    /// Carrier-grade NAT, 100.64/10 (RFC 6598).
    SharedAddressSpace,
    /// 0.0.0.0/8, ::.
    Unspecified,
    /// Multicast, broadcast, documentation, benchmarking and reserved ranges.
    Reserved,
    /// A host name under `.internal`, `.local` or `.localhost`.
    InternalSuffix,
    /// A host name without a dot (resolved through a local search domain).
    BareHostname,
    /// A URL that cannot be parsed, so its host cannot be shown to be public.
    Unparseable,
}

/// Classifies an IPv4 address; `None` when it is public.
pub fn ipv4_internal_reason(ip: Ipv4Addr) -> Option<InternalReason> {
    let [a, b, c, _] = ip.octets();
    if ip.is_loopback() {
        Some(InternalReason::Loopback)
    } else if ip.is_private() {
        Some(InternalReason::Private)
    } else if ip.is_link_local() {
        Some(InternalReason::LinkLocal)
    } else if a == 100 && (64..128).contains(&b) {
        Some(InternalReason::SharedAddressSpace)
    } else if a == 0 {
        Some(InternalReason::Unspecified)
    } else if ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a >= 240
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (b == 18 || b == 19))
    {
        Some(InternalReason::Reserved)
    } else {
        None
    }
}

/// Classifies an IPv6 address; `None` when it is public. IPv4-mapped (`::ffff:a.b.c.d`)
/// and NAT64 (`64:ff9b::/96`) addresses are judged by the IPv4 address they carry.
pub fn ipv6_internal_reason(ip: Ipv6Addr) -> Option<InternalReason> {
    let seg = ip.segments();
    if let Some(v4) = ip.to_ipv4_mapped() {
        return ipv4_internal_reason(v4);
    }
    if seg[0] == 0x64 && seg[1] == 0xff9b && seg[2..6].iter().all(|s| *s == 0) {
        let [a, b] = seg[6].to_be_bytes();
        let [c, d] = seg[7].to_be_bytes();
        return ipv4_internal_reason(Ipv4Addr::new(a, b, c, d));
    }
    if ip.is_loopback() {
        Some(InternalReason::Loopback)
    } else if ip.is_unspecified() {
        Some(InternalReason::Unspecified)
    } else if (seg[0] & 0xfe00) == 0xfc00 {
        Some(InternalReason::Private)
    } else if (seg[0] & 0xffc0) == 0xfe80 || (seg[0] & 0xffc0) == 0xfec0 {
        // fec0::/10 (deprecated site-local) is treated like link-local: never public.
        Some(InternalReason::LinkLocal)
    } else if ip.is_multicast() || (seg[0] == 0x2001 && seg[1] == 0x0db8) || seg[0] == 0 {
        // ff00::/8, 2001:db8::/32 (documentation), and the rest of ::/16 (IPv4-compatible
        // and other reserved forms).
        Some(InternalReason::Reserved)
    } else {
        None
    }
}

/// Classifies any IP address; `None` when it is public.
pub fn ip_internal_reason(ip: IpAddr) -> Option<InternalReason> {
    match ip {
        IpAddr::V4(v4) => ipv4_internal_reason(v4),
        IpAddr::V6(v6) => ipv6_internal_reason(v6),
    }
}

/// Classifies a DNS host name by its text alone (no resolution); `None` when the name
/// could be public. Resolution-time checks (D-5) are the provider client's job.
pub fn domain_internal_reason(domain: &str) -> Option<InternalReason> {
    let d = domain.trim_end_matches('.').to_ascii_lowercase();
    if d == "localhost" || d.ends_with(".localhost") {
        Some(InternalReason::Loopback)
    } else if d.ends_with(".internal") || d.ends_with(".local") || d == "internal" || d == "local" {
        Some(InternalReason::InternalSuffix)
    } else if !d.contains('.') {
        Some(InternalReason::BareHostname)
    } else {
        None
    }
}

/// Classifies a parsed URL host.
pub fn host_internal_reason(host: &url::Host<&str>) -> Option<InternalReason> {
    match host {
        url::Host::Domain(d) => domain_internal_reason(d),
        url::Host::Ipv4(v4) => ipv4_internal_reason(*v4),
        url::Host::Ipv6(v6) => ipv6_internal_reason(*v6),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn v(s: &str) -> Option<InternalReason> {
        ip_internal_reason(s.parse().unwrap())
    }

    #[test]
    fn ipv4_classes() {
        use InternalReason::*;
        assert_eq!(v("127.0.0.1"), Some(Loopback));
        assert_eq!(v("10.1.2.3"), Some(Private));
        assert_eq!(v("172.16.0.1"), Some(Private));
        assert_eq!(v("172.31.255.255"), Some(Private));
        assert_eq!(v("172.32.0.1"), None);
        assert_eq!(v("192.168.0.1"), Some(Private));
        assert_eq!(v("169.254.169.254"), Some(LinkLocal));
        assert_eq!(v("100.64.0.1"), Some(SharedAddressSpace));
        assert_eq!(v("100.128.0.1"), None);
        assert_eq!(v("0.0.0.0"), Some(Unspecified));
        assert_eq!(v("255.255.255.255"), Some(Reserved));
        assert_eq!(v("224.0.0.1"), Some(Reserved));
        assert_eq!(v("8.8.8.8"), None);
        assert_eq!(v("93.184.216.34"), None);
    }

    #[test]
    fn ipv6_classes() {
        use InternalReason::*;
        assert_eq!(v("::1"), Some(Loopback));
        assert_eq!(v("::"), Some(Unspecified));
        assert_eq!(v("fd00::1"), Some(Private));
        assert_eq!(v("fe80::1"), Some(LinkLocal));
        assert_eq!(v("::ffff:127.0.0.1"), Some(Loopback));
        assert_eq!(v("::ffff:169.254.169.254"), Some(LinkLocal));
        assert_eq!(v("64:ff9b::a00:1"), Some(Private));
        assert_eq!(v("ff02::1"), Some(Reserved));
        assert_eq!(v("2001:db8::1"), Some(Reserved));
        assert_eq!(v("2606:4700::1111"), None);
    }

    #[test]
    fn domain_classes() {
        use InternalReason::*;
        assert_eq!(domain_internal_reason("localhost"), Some(Loopback));
        assert_eq!(domain_internal_reason("api.localhost."), Some(Loopback));
        assert_eq!(
            domain_internal_reason("db.prod.internal"),
            Some(InternalSuffix)
        );
        assert_eq!(
            domain_internal_reason("printer.LOCAL"),
            Some(InternalSuffix)
        );
        assert_eq!(domain_internal_reason("intranet"), Some(BareHostname));
        assert_eq!(domain_internal_reason("example.com"), None);
        assert_eq!(domain_internal_reason("internal.example.com"), None);
    }
}
