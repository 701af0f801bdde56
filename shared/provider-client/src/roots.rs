//! Issue 26 B: the TLS roots every reqwest client of a process trusts, read once from the
//! system's CA bundle file.
//!
//! Left alone, each client finds the platform's roots itself: on Linux that reads the
//! bundle file and then every file of the hashed certificate directory (about 150 opens
//! before a Lambda function's first Runtime API call, the largest part of its init). The
//! bundle holds the same roots (both come from the system's trust store), so one read of
//! it serves every client. When no bundle file is found the clients keep the platform's
//! own lookup, and so does a client whose build rejects a certificate of the bundle.

use std::sync::OnceLock;

/// Where Linux distributions keep the PEM bundle (Debian/Ubuntu, Amazon Linux/Fedora,
/// Alpine and others), after `SSL_CERT_FILE` when it is set.
const BUNDLES: [&str; 4] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// The system's CA bundle (PEM) and its roots, read and parsed once for this process.
struct Bundle {
    pem: Vec<u8>,
    roots: Vec<reqwest::Certificate>,
}

fn bundle() -> Option<&'static Bundle> {
    static BUNDLE: OnceLock<Option<Bundle>> = OnceLock::new();
    BUNDLE
        .get_or_init(|| {
            let from_env = std::env::var_os("SSL_CERT_FILE").map(std::path::PathBuf::from);
            let paths = from_env
                .into_iter()
                .chain(BUNDLES.iter().map(std::path::PathBuf::from));
            paths
                .filter_map(|p| std::fs::read(p).ok())
                .find_map(|pem| {
                    let roots = reqwest::Certificate::from_pem_bundle(&pem).ok()?;
                    Some(Bundle { pem, roots })
                })
                .filter(|b| !b.roots.is_empty())
        })
        .as_ref()
}

/// The system's roots as parsed once for this process; `None` when no usable bundle file
/// was found.
pub fn system_roots() -> Option<&'static [reqwest::Certificate]> {
    bundle().map(|b| b.roots.as_slice())
}

/// The same bundle as PEM, for the AWS SDK's HTTP client (so that it does not read the
/// certificate directory again); `None` when no usable bundle file was found.
pub fn system_bundle_pem() -> Option<&'static [u8]> {
    bundle().map(|b| b.pem.as_slice())
}

/// A client from `builder` (a function, since a builder cannot be cloned) trusting
/// exactly the system's roots read once ([`system_roots`]); when there is no bundle file,
/// or a certificate in it is one rustls cannot take as a root (the build fails), the
/// client keeps the platform's own lookup. Each parse of the roots costs init time, so
/// the bundle is not checked ahead of this one build.
pub fn build_with_system_roots(
    builder: impl Fn() -> reqwest::ClientBuilder,
) -> reqwest::Result<reqwest::Client> {
    if let Some(roots) = system_roots()
        && let Ok(client) = builder().tls_certs_only(roots.iter().cloned()).build()
    {
        return Ok(client);
    }
    builder().build()
}

#[cfg(test)]
mod tests {
    /// Issue 26 B: on this machine kind (Debian) the bundle is found, parsed once, and the
    /// same slice is served to every caller.
    #[test]
    fn the_system_bundle_is_read_once_and_shared() {
        let first = super::system_roots().expect("a CA bundle on this machine");
        assert!(first.len() > 50, "{} roots", first.len());
        let again = super::system_roots().expect("cached");
        assert!(std::ptr::eq(first, again));
    }
}
