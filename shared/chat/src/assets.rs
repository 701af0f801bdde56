//! W-1, S-5: the widget SDK, served by the messages function under a versioned path
//! (decisions 0025, 0045). A version's bytes never change, so they are cached for a year;
//! every published version stays served (a page pinned to an older one with SRI keeps
//! loading after an upgrade). The files are the ones `widget/build.mjs` wrote into
//! `widget/dist/<version>/` (the widget's test command checks the current one is what the
//! source builds; earlier ones are frozen), compiled into the binary.

use axum::extract::Path;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use countersign_http::ApiError;
use sha2::{Digest, Sha384};

/// The current widget version (the one the README and the guide show).
pub const WIDGET_VERSION: &str = "1.4.0";

/// The path the assets are served under.
pub const ASSET_PATH: &str = "/widget/{version}/{file}";

/// The current version's classic script (global `CountersignWidget`).
pub const CLASSIC: &str = include_str!("../../../widget/dist/1.4.0/countersign-widget.min.js");
/// The current version's ES module.
pub const MODULE: &str = include_str!("../../../widget/dist/1.4.0/countersign-widget.min.mjs");

/// The files of [`WIDGET_VERSION`], by name.
pub const FILES: [(&str, &str); 2] = [
    ("countersign-widget.min.js", CLASSIC),
    ("countersign-widget.min.mjs", MODULE),
];

/// Every published version and its files, oldest first (S-5). Publishing a version adds a
/// line here; none is ever removed or changed (a test holds this list to `widget/dist/`).
pub const VERSIONS: [(&str, [(&str, &str); 2]); 5] = [
    (
        "1.0.0",
        [
            (
                "countersign-widget.min.js",
                include_str!("../../../widget/dist/1.0.0/countersign-widget.min.js"),
            ),
            (
                "countersign-widget.min.mjs",
                include_str!("../../../widget/dist/1.0.0/countersign-widget.min.mjs"),
            ),
        ],
    ),
    (
        "1.1.0",
        [
            (
                "countersign-widget.min.js",
                include_str!("../../../widget/dist/1.1.0/countersign-widget.min.js"),
            ),
            (
                "countersign-widget.min.mjs",
                include_str!("../../../widget/dist/1.1.0/countersign-widget.min.mjs"),
            ),
        ],
    ),
    (
        "1.2.0",
        [
            (
                "countersign-widget.min.js",
                include_str!("../../../widget/dist/1.2.0/countersign-widget.min.js"),
            ),
            (
                "countersign-widget.min.mjs",
                include_str!("../../../widget/dist/1.2.0/countersign-widget.min.mjs"),
            ),
        ],
    ),
    (
        "1.3.0",
        [
            (
                "countersign-widget.min.js",
                include_str!("../../../widget/dist/1.3.0/countersign-widget.min.js"),
            ),
            (
                "countersign-widget.min.mjs",
                include_str!("../../../widget/dist/1.3.0/countersign-widget.min.mjs"),
            ),
        ],
    ),
    (WIDGET_VERSION, FILES),
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
    let body = VERSIONS
        .iter()
        .find(|(v, _)| *v == version)
        .and_then(|(_, files)| files.iter().find(|(name, _)| *name == file))
        .map(|(_, body)| *body);
    let Some(body) = body else {
        return ApiError::not_found("no such widget file").into_response();
    };
    let mut res = countersign_http::pages::asset(
        body,
        "text/javascript; charset=utf-8",
        "public, max-age=31536000, immutable",
    );
    // A public file, the same for everyone and fetched without credentials: any page may
    // load it with `integrity` (which needs CORS).
    let h = res.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h.insert(
        header::HeaderName::from_static("cross-origin-resource-policy"),
        HeaderValue::from_static("cross-origin"),
    );
    res
}
