//! What the server-rendered pages (the `/admin` panel, the confirmation page) share: their
//! security headers, their static files, reading a cookie, and the same-origin check of
//! their form posts.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// A page's static file (style sheet, script, icon), built into the binary: its type, how
/// long a browser may keep it (`cache_control`), and `nosniff` so it is never read as
/// another type.
pub fn asset(
    body: &'static str,
    content_type: &'static str,
    cache_control: &'static str,
) -> Response {
    let mut res = body.into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(cache_control),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    res
}

/// An HTML page answered with [`secure_headers`].
pub fn html(status: StatusCode, body: String, csp: &'static str) -> Response {
    let mut res = (status, body).into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    secure_headers(h, csp);
    res
}

/// A page's security headers: its Content-Security-Policy, never cached, never sniffed,
/// never framed.
pub fn secure_headers(h: &mut HeaderMap, csp: &'static str) {
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(csp),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // Not `no-referrer`: with it Chromium sends `Origin: null` on a page's own posts.
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
}

/// The value of the request's cookie `name`, if any.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

/// Whether the request's `Origin`, if any, is the page's own (`Host`): a form post from
/// another site is refused (with SameSite cookies and a form token, the third guard).
pub fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    match (origin.to_str().ok(), host) {
        (Some(o), Some(h)) => {
            o.strip_prefix("https://")
                .or_else(|| o.strip_prefix("http://"))
                == Some(h)
        }
        _ => false,
    }
}

/// N-6: a state-changing POST comes from this very origin — its `Origin` names it, or,
/// without an `Origin`, the browser's `Sec-Fetch-Site` says `same-origin`. A request with
/// neither (any non-browser client) is refused: the form's own token is not enough alone.
pub fn same_origin_strict(headers: &HeaderMap) -> bool {
    if headers.get(header::ORIGIN).is_some() {
        return same_origin(headers);
    }
    headers
        .get("sec-fetch-site")
        .is_some_and(|v| v.as_bytes() == b"same-origin")
}

/// The origin a request was addressed to, as a link back to this deployment: `Host`,
/// over https — http only on loopback (the local stack). For a page or a URL this
/// deployment hands out when no public URL is configured.
pub fn origin_of(headers: &axum::http::HeaderMap) -> String {
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let name = host.rsplit_once(':').map_or(host, |(name, _)| name);
    let loopback = matches!(name, "127.0.0.1" | "localhost" | "[::1]");
    format!("{}://{host}", if loopback { "http" } else { "https" })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                k.clone(),
                HeaderValue::from_str(v).unwrap_or(HeaderValue::from_static("")),
            );
        }
        h
    }

    #[test]
    fn a_cookie_is_read_by_its_exact_name() {
        let h = headers(&[
            (header::COOKIE, "a=1; countersign-x=2"),
            (header::COOKIE, "countersign-xy=3"),
        ]);
        assert_eq!(cookie(&h, "countersign-x").as_deref(), Some("2"));
        assert_eq!(cookie(&h, "countersign-xy").as_deref(), Some("3"));
        assert_eq!(cookie(&h, "countersign"), None);
    }

    #[test]
    fn only_the_pages_own_origin_posts() {
        let host = (header::HOST, "support.example.com");
        assert!(same_origin(&headers(std::slice::from_ref(&host))));
        assert!(same_origin(&headers(&[
            host.clone(),
            (header::ORIGIN, "https://support.example.com")
        ])));
        for other in [
            "https://evil.example",
            "null",
            "https://support.example.com.evil.example",
        ] {
            assert!(
                !same_origin(&headers(&[host.clone(), (header::ORIGIN, other)])),
                "{other}"
            );
        }
        assert!(!same_origin(&headers(&[(
            header::ORIGIN,
            "https://support.example.com"
        )])));
    }

    /// N-6: without an `Origin`, only the browser's own `Sec-Fetch-Site: same-origin`
    /// lets a post through; a bare request (curl, an agent's HTTP client) is refused.
    #[test]
    fn n6_a_post_without_origin_needs_the_browsers_same_origin_mark() {
        let host = (header::HOST, "support.example.com");
        assert!(!same_origin_strict(&headers(std::slice::from_ref(&host))));
        for site in ["cross-site", "same-site", "none"] {
            assert!(!same_origin_strict(&headers(&[
                host.clone(),
                (header::HeaderName::from_static("sec-fetch-site"), site)
            ])));
        }
        assert!(same_origin_strict(&headers(&[
            host.clone(),
            (
                header::HeaderName::from_static("sec-fetch-site"),
                "same-origin"
            )
        ])));
        assert!(same_origin_strict(&headers(&[
            host.clone(),
            (header::ORIGIN, "https://support.example.com")
        ])));
        assert!(!same_origin_strict(&headers(&[
            host,
            (header::ORIGIN, "https://evil.example"),
            (
                header::HeaderName::from_static("sec-fetch-site"),
                "same-origin"
            )
        ])));
    }
}
