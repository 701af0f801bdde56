//! N-5 (security review N2): the stream function's public URL (no API Gateway throttle in
//! front of it) serves the streamed post and nothing else.

use crate::harness::H;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use countersign_chat::Chat;
use countersign_chat::api::{AppState, STREAM_PATH, router, stream_router};
use countersign_chat::widget::WidgetAuth;
use std::sync::Arc;
use tower::ServiceExt as _;

async fn status(app: &axum::Router, method: &str, path: &str) -> StatusCode {
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, "stream.lambda-url.example")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from("{}"))
        .unwrap();
    app.clone().oneshot(req).await.unwrap().status()
}

/// N-5: on the stream router, the admin, erasure, certification, checkpoint, page, JWKS,
/// widget-file and every other widget route is a 404; the streamed post is routed (401
/// without a token, as on the HTTP API) and so is its CORS preflight.
#[tokio::test]
async fn n5_the_stream_url_serves_only_the_streamed_post() {
    let h = H::new().await;
    let state = || AppState {
        chat: Arc::new(Chat::new(h.parts.clone())),
        auth: Arc::new(WidgetAuth::new(h.store.clone(), h.secrets.clone())),
    };
    let stream = stream_router(state());
    let case = h.case.as_str();
    let streamed = STREAM_PATH.replace("{id}", case);
    assert_eq!(
        status(&stream, "POST", &streamed).await,
        StatusCode::UNAUTHORIZED
    );
    let preflight = Request::builder()
        .method("OPTIONS")
        .uri(&streamed)
        .header(header::ORIGIN, "https://shop.example.com")
        .header(header::ACCESS_CONTROL_REQUEST_METHOD, "POST")
        .body(Body::empty())
        .unwrap();
    let answer = stream.clone().oneshot(preflight).await.unwrap().status();
    assert_ne!(answer, StatusCode::NOT_FOUND, "the preflight is answered");
    for (method, path) in [
        ("POST", "/api/admin/tenants/ten_x/erasures".to_owned()),
        (
            "POST",
            "/api/admin/tenants/ten_x/mcp/certifications".to_owned(),
        ),
        (
            "POST",
            "/api/admin/tenants/ten_x/audit/checkpoints".to_owned(),
        ),
        ("GET", "/.well-known/jwks.json".to_owned()),
        ("GET", "/confirm/abc".to_owned()),
        ("POST", "/admin/erasure".to_owned()),
        ("POST", "/api/cases".to_owned()),
        ("POST", format!("/api/cases/{case}/messages")),
        ("POST", format!("/api/cases/{case}/mcp-token")),
        ("GET", "/widget/1.2.0/countersign-widget.min.js".to_owned()),
    ] {
        assert_eq!(
            status(&stream, method, &path).await,
            StatusCode::NOT_FOUND,
            "{method} {path}"
        );
    }
    // The HTTP API's router still serves the widget routes.
    let api = router(state());
    assert_eq!(
        status(&api, "POST", "/api/cases").await,
        StatusCode::UNAUTHORIZED
    );
}
