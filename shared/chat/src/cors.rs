//! CORS for the widget API (decision 0025). The widget runs in a tenant's page, another
//! origin than the API's, and sends a bearer token (never cookies). Each widget
//! credential lists the origins whose pages may use it; the `WidgetPrincipal` extractor
//! refuses a valid token from any other origin (403 `ORIGIN_NOT_ALLOWED`), before
//! anything is read or written.
//!
//! A preflight carries no token, so it cannot name a tenant: it is answered for any
//! origin, and does nothing. Every other answer to a request with an `Origin` carries
//! that origin, so the widget can read a 401 and ask for a new token; a refused origin's
//! 403 does not, so the page cannot even read the refusal.

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The `Origin` of a cross-origin browser request: `None` when absent, or when it is
/// the API's own origin (its host is the request's `Host`).
pub fn cross_origin(headers: &HeaderMap) -> Option<&str> {
    let origin = headers.get(header::ORIGIN)?.to_str().ok()?;
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let origin_host = origin.split_once("://").map(|(_, h)| h);
    match (origin_host, host) {
        (Some(o), Some(h)) if o.eq_ignore_ascii_case(h) => None,
        _ => Some(origin),
    }
}

/// The middleware.
pub async fn cors(request: Request, next: Next) -> Response {
    let origin = request.headers().get(header::ORIGIN).cloned();
    let preflight = request.method() == Method::OPTIONS
        && request
            .headers()
            .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD);
    if preflight {
        let mut res = StatusCode::NO_CONTENT.into_response();
        if let Some(origin) = origin {
            let h = res.headers_mut();
            h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
            h.insert(
                header::ACCESS_CONTROL_ALLOW_METHODS,
                HeaderValue::from_static("GET, POST"),
            );
            h.insert(
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                HeaderValue::from_static("authorization, content-type"),
            );
            h.insert(
                header::ACCESS_CONTROL_MAX_AGE,
                HeaderValue::from_static("600"),
            );
            h.insert(header::VARY, HeaderValue::from_static("Origin"));
        }
        return res;
    }
    let mut res = next.run(request).await;
    if let Some(origin) = origin
        && res.status() != StatusCode::FORBIDDEN
    {
        let h = res.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        h.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("retry-after"),
        );
        h.append(header::VARY, HeaderValue::from_static("Origin"));
    }
    res
}
