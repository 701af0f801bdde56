//! W-1: the widget SDK's files, served under a versioned path with long-lived caching,
//! and the integrity hashes the README publishes are theirs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::routing::get;
use countersign_chat::assets::{
    ASSET_PATH, CLASSIC, FILES, MODULE, VERSIONS, WIDGET_VERSION, asset, integrity,
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

/// Every published file's integrity, frozen when it was published: pages pin these
/// (Subresource Integrity), so a published file may never change — not even together
/// with the README and `widget/dist/`. Publishing a new version adds its lines here.
const PUBLISHED: [(&str, &str); 10] = [
    (
        "/widget/1.0.0/countersign-widget.min.js",
        "sha384-SnTDj6XUaQ/61avxulJGbVqOv7+h/AsGPGOwCW+m2TbVg/+7B3vCpQhMu/L6dabu",
    ),
    (
        "/widget/1.0.0/countersign-widget.min.mjs",
        "sha384-B/bQ2nt05ifnIxLpZI1XX6TTBLCjWta5T4BX2r2jTXff3bcsQSsdz/61pKKDijvd",
    ),
    (
        "/widget/1.1.0/countersign-widget.min.js",
        "sha384-qIUnSk0h0T8b4MvC7jxIqtVR+0LhFbaJ6aGxhd57c4aHG5fzYO8WeY2VLmNHXxhL",
    ),
    (
        "/widget/1.1.0/countersign-widget.min.mjs",
        "sha384-BMGHeuM4FQmPgERonVvEXHMcdw+nKG7EgULtvnJdKmtfrHLasDs2gWG5j5fTYxh6",
    ),
    (
        "/widget/1.2.0/countersign-widget.min.js",
        "sha384-2phAlCeCfmpTV0eancSR82p3J5aDRHdpxMYNiNAH9CSq7nRFwbWKr9qlAhnrrudX",
    ),
    (
        "/widget/1.2.0/countersign-widget.min.mjs",
        "sha384-6vf0IS8AcbMmjj9jZyU5L/aSs1Oxxs14p7+7PMms2jG0OLhpWFTIYCRRVRHL9KBU",
    ),
    (
        "/widget/1.3.0/countersign-widget.min.js",
        "sha384-PQ2twbUTxeyKMyyYGqdoPKHsYm5lkbwk69WvSD9eySQLD/ZS7OFs428MGpc/VYFc",
    ),
    (
        "/widget/1.3.0/countersign-widget.min.mjs",
        "sha384-DniOp+QnXTqUhV80ZnULR7IlG73kK/LrIgAWHMXgpzeAZMDLLgdxP2x7UKcrgJZL",
    ),
    (
        "/widget/1.4.0/countersign-widget.min.js",
        "sha384-brw0riQJhytCgI1C1JHt661X26sIiBiCvGTnsKrJSFEK2atuz7jSv3VyhNWya2Ld",
    ),
    (
        "/widget/1.4.0/countersign-widget.min.mjs",
        "sha384-cifwJA0QLQ0nRECwhVspn6nwPvUrIO7SGPpVeuZ01We5ZQyU0QtWfBBAAhGCe2q9",
    ),
];

/// S-5: every published file is served with the integrity frozen when it was published
/// ([`PUBLISHED`]), whatever the README and `widget/dist/` say now.
#[tokio::test]
async fn s5_a_published_file_never_changes() {
    for (path, frozen) in PUBLISHED {
        let (status, _, got) = fetch(path).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert_eq!(
            integrity(&got),
            frozen,
            "{path} changed after it was published"
        );
    }
    let served: Vec<String> = VERSIONS
        .iter()
        .flat_map(|(v, files)| {
            files
                .iter()
                .map(move |(name, _)| format!("/widget/{v}/{name}"))
        })
        .collect();
    for path in &served {
        assert!(
            PUBLISHED.iter().any(|(p, _)| p == path),
            "{path} is served but its integrity is not frozen in PUBLISHED"
        );
    }
}

/// S-5: every version the README lists is served at its path, and its bytes have the
/// integrity the README publishes for it; the list is exactly `widget/dist/`'s versions,
/// and each names itself in its banner.
#[tokio::test]
async fn s5_every_published_version_stays_served_with_its_integrity() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).unwrap();
    let mut on_disk: Vec<String> = std::fs::read_dir(format!("{root}/widget/dist"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    on_disk.sort();
    let served: Vec<&str> = VERSIONS.iter().map(|(v, _)| *v).collect();
    assert_eq!(on_disk, served, "widget/dist/ and VERSIONS differ");
    assert_eq!(served.last(), Some(&WIDGET_VERSION));
    for (version, files) in VERSIONS {
        for (name, body) in files {
            let path = format!("/widget/{version}/{name}");
            let row = readme
                .lines()
                .find(|l| l.contains(&format!("`{path}`")))
                .unwrap_or_else(|| panic!("README.md does not list {path}"));
            let (status, _, got) = fetch(&path).await;
            assert_eq!(status, StatusCode::OK, "{path}");
            assert!(
                row.contains(&integrity(&got)),
                "{path}: README's integrity is not the served bytes'"
            );
            assert_eq!(got, body);
            let on_disk =
                std::fs::read_to_string(format!("{root}/widget/dist/{version}/{name}")).unwrap();
            assert_eq!(got, on_disk, "{path}");
            assert!(
                got.contains(&format!("Countersign widget {version}")),
                "{path}"
            );
        }
    }
}
