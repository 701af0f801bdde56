//! W-1: the widget SDK, served by the messages function under a versioned path
//! (decision 0025). A version's bytes never change, so they are cached for a year; the
//! files are the ones `widget/build.mjs` writes (a test in the widget's test command
//! checks they are what the source builds), compiled into the binary.

use axum::extract::Path;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use countersign_http::ApiError;
use sha2::{Digest, Sha384};

/// The widget version this build serves.
pub const WIDGET_VERSION: &str = "1.0.0";

/// The path the assets are served under.
pub const ASSET_PATH: &str = "/widget/{version}/{file}";

/// The classic script (global `CountersignWidget`).
pub const CLASSIC: &str = include_str!("../../../widget/dist/countersign-widget.min.js");
/// The ES module.
pub const MODULE: &str = include_str!("../../../widget/dist/countersign-widget.min.mjs");

/// The files of [`WIDGET_VERSION`], by name.
pub const FILES: [(&str, &str); 2] = [
    ("countersign-widget.min.js", CLASSIC),
    ("countersign-widget.min.mjs", MODULE),
];

/// The Subresource Integrity value of `body` (`sha384-…`), as the README publishes it.
pub fn integrity(body: &str) -> String {
    use base64::Engine as _;
    let digest = Sha384::digest(body.as_bytes());
    format!(
        "sha384-{}",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// `GET /widget/{version}/{file}`.
pub async fn asset(Path((version, file)): Path<(String, String)>) -> Response {
    let body = FILES
        .iter()
        .find(|(name, _)| *name == file)
        .filter(|_| version == WIDGET_VERSION)
        .map(|(_, body)| *body);
    let Some(body) = body else {
        return ApiError::not_found("no such widget file").into_response();
    };
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/javascript; charset=utf-8"),
            ),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=31536000, immutable"),
            ),
            // A public file, the same for everyone and fetched without credentials:
            // any page may load it with `integrity` (which needs CORS).
            (
                header::ACCESS_CONTROL_ALLOW_ORIGIN,
                HeaderValue::from_static("*"),
            ),
            (
                header::HeaderName::from_static("cross-origin-resource-policy"),
                HeaderValue::from_static("cross-origin"),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        body,
    )
        .into_response()
}
