//! The admin API on in-memory ports (no emulator): answers that carry a secret are never
//! cached.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use async_trait::async_trait;
use axum::body::Body;
use countersign_admin::api::{AdminState, router};
use countersign_admin::tenants;
use countersign_domain::config::UrlPolicy;
use countersign_domain::ports::Resolver;
use countersign_domain::texts::Language;
use countersign_testkit::{FakeSigner, MemorySecrets, MemoryStore, SeqIds, TestClock};
use http::{Request, StatusCode, header};
use std::net::IpAddr;
use std::sync::Arc;
use tower::ServiceExt as _;

struct Public;

#[async_trait]
impl Resolver for Public {
    async fn resolve(&self, _: &str, _: u16) -> std::io::Result<Vec<IpAddr>> {
        Ok(vec![IpAddr::from([93, 184, 216, 34])])
    }
}

#[tokio::test]
async fn c9_a_new_widget_secret_is_never_cached_and_a_listing_carries_none() {
    let clock = Arc::new(TestClock::default());
    let ids = Arc::new(SeqIds::new(clock.clone()));
    let store = Arc::new(MemoryStore::default());
    let registered = tenants::register(&*store, &*ids, &*clock, "A", Language::En)
        .await
        .unwrap();
    let app = router(AdminState {
        tenants: store.clone(),
        conversations: store,
        secrets: Arc::new(MemorySecrets::default()),
        signer: Arc::new(FakeSigner::default()),
        issuer: "https://support.example.com/mcp-actions".into(),
        url_policy: UrlPolicy::default(),
        resolver: Arc::new(Public),
        ids,
        clock,
    });
    let uri = format!(
        "/api/admin/tenants/{}/widget-credentials",
        registered.tenant.id
    );
    let key = format!("Bearer {}", registered.admin_key.expose());
    let request = |method: &str| {
        Request::builder()
            .method(method)
            .uri(&uri)
            .header(header::AUTHORIZATION, &key)
            .body(Body::empty())
            .unwrap()
    };
    let created = app.clone().oneshot(request("POST")).await.unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    assert_eq!(created.headers()[header::CACHE_CONTROL], "no-store");
    let bytes = axum::body::to_bytes(created.into_body(), 1 << 16)
        .await
        .unwrap();
    let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let secret = body["secret"].as_str().unwrap().to_owned();
    let listed = app.oneshot(request("GET")).await.unwrap();
    assert_eq!(listed.status(), StatusCode::OK);
    let bytes = axum::body::to_bytes(listed.into_body(), 1 << 16)
        .await
        .unwrap();
    assert!(!String::from_utf8_lossy(&bytes).contains(&secret));
}
