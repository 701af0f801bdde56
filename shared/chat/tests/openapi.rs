//! `docs/widget-api.openapi.json`, generated from the widget API's types, against the
//! router: the checked-in file is the generated one, and it documents exactly the routes
//! the router serves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use countersign_chat::api::{ROUTES, openapi};
use std::collections::BTreeSet;

/// `UPDATE_OPENAPI=1 cargo test -p countersign-chat --test openapi` rewrites the file.
#[test]
fn the_checked_in_document_is_generated_from_the_code() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/widget-api.openapi.json"
    );
    let generated = openapi().to_pretty_json().unwrap() + "\n";
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        std::fs::write(path, &generated).unwrap();
    }
    let checked_in = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        checked_in == generated,
        "docs/widget-api.openapi.json is stale: run UPDATE_OPENAPI=1 cargo test -p countersign-chat --test openapi"
    );
}

#[test]
fn the_document_has_exactly_the_routers_routes() {
    let doc = serde_json::to_value(openapi()).unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1."));
    let mut documented = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            documented.insert((method.to_uppercase(), path.clone()));
        }
    }
    let routed: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|(m, p)| ((*m).to_owned(), (*p).to_owned()))
        .collect();
    assert_eq!(documented, routed);
    // Every operation documents its 401 (the widget JWT) and its success.
    for item in doc["paths"].as_object().unwrap().values() {
        for op in item.as_object().unwrap().values() {
            assert!(op["responses"]["401"].is_object(), "{op}");
            assert!(!op["security"].as_array().unwrap().is_empty());
        }
    }
}
