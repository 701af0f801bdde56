//! W-1: the widget SDK's files, served under a versioned path with long-lived caching,
//! and the integrity hashes the README publishes are theirs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::routing::get;
use countersign_chat::assets::{
    ASSET_PATH, CLASSIC, FILES, MODULE, WIDGET_VERSION, asset, integrity,
};
use tower::ServiceExt as _;

async fn fetch(path: &str) -> (StatusCode, axum::http::HeaderMap, String) {
    let app = Router::new().route(ASSET_PATH, get(asset));
    let res = app
        .oneshot(Request::get(path).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let body = axum::body::to_bytes(res.into_body(), 1 << 20)
        .await
        .unwrap();
    (status, headers, String::from_utf8(body.to_vec()).unwrap())
}

#[tokio::test]
async fn w1_each_file_is_served_versioned_and_cached_for_a_year() {
    for (name, body) in FILES {
        let (status, headers, got) = fetch(&format!("/widget/{WIDGET_VERSION}/{name}")).await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(got, body);
        assert_eq!(
            headers["cache-control"],
            "public, max-age=31536000, immutable"
        );
        assert_eq!(headers["content-type"], "text/javascript; charset=utf-8");
        assert_eq!(headers["x-content-type-options"], "nosniff");
    }
    for path in [
        "/widget/0.9.0/countersign-widget.min.js",
        "/widget/1.0.0/other.js",
    ] {
        let (status, _, body) = fetch(path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert!(body.contains("NOT_FOUND"));
    }
}

/// W-1: the README publishes each file's Subresource Integrity value; a change to the
/// SDK that is not republished fails here.
#[test]
fn w1_the_readme_publishes_each_files_integrity() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    for body in [CLASSIC, MODULE] {
        let sri = integrity(body);
        assert!(readme.contains(&sri), "README.md lacks {sri}");
    }
    assert!(CLASSIC.contains(&format!("Countersign widget {WIDGET_VERSION}")));
    // W-6: no eval or Function constructor in what the browser runs.
    for body in [CLASSIC, MODULE] {
        assert!(!body.contains("eval(") && !body.contains("new Function"));
    }
}
