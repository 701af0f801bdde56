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

/// N-5 (security review N2, decision 0063): each tenant's widget API requests are
/// counted right after the token; beyond the tenant's budget a request is a 429 with
/// `Retry-After` that reached nothing else (no model step, nothing stored), and another
/// tenant's budget is untouched.
#[tokio::test]
async fn n5_a_tenants_requests_are_counted_after_the_token_and_before_anything_else() {
    use countersign_domain::config::widget_secret_name;
    use countersign_domain::ports::{
        AuditEntry, Ids as _, SecretStore as _, WidgetKey, WidgetKeys as _,
    };
    use countersign_domain::secret::SecretString;
    let h = H::new().await;
    let tenant = h.who.tenant.clone();
    let kid = h.ids.widget_key_id();
    let key = WidgetKey {
        id: kid.clone(),
        created_at: h.clock_now(),
        allowed_origins: vec!["https://shop.example.com".into()],
        retires_at: None,
    };
    let record = AuditEntry {
        id: h.ids.audit_id(),
        at: h.clock_now(),
        actor: "tenant-admin".into(),
        action: "widget.create".into(),
        changes: serde_json::json!({}),
    };
    h.store
        .put_widget_key(&tenant, &key, &record)
        .await
        .unwrap();
    let secret = "widget-secret-0123456789abcdef0123456789abcdef";
    h.secrets
        .put(
            &widget_secret_name(&tenant, &kid),
            &SecretString::new(secret),
        )
        .await
        .unwrap();
    let now = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap();
    let token = countersign_chat::widget::sign_token(
        &SecretString::new(secret),
        &kid,
        &tenant,
        &h.who.user,
        now,
        now + 300,
    )
    .unwrap();
    let mut chat = Chat::new(h.parts.clone());
    chat.request_budget = Some((h.store.clone(), 2));
    let chat = Arc::new(chat);
    let app = router(AppState {
        chat: chat.clone(),
        auth: Arc::new(WidgetAuth::new(h.store.clone(), h.secrets.clone())),
    });
    let call = |method: &str, body: &str| {
        Request::builder()
            .method(method)
            .uri(format!("/api/cases/{}/messages", h.case))
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_owned()))
            .unwrap()
    };
    for _ in 0..2 {
        let answer = app.clone().oneshot(call("GET", "")).await.unwrap();
        assert_eq!(answer.status(), StatusCode::OK);
    }
    let (steps, stored) = (h.model_steps(), h.messages().len());
    let refused = app
        .clone()
        .oneshot(call("POST", r#"{"text": "please move my session"}"#))
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(refused.headers().contains_key(header::RETRY_AFTER));
    assert_eq!(h.model_steps(), steps, "the model was never asked");
    assert_eq!(h.messages().len(), stored, "nothing was stored");
    // An unauthenticated request spends nothing (it is refused before the counter).
    let anonymous = Request::builder()
        .uri(format!("/api/cases/{}/messages", h.case))
        .body(Body::empty())
        .unwrap();
    let answer = app.clone().oneshot(anonymous).await.unwrap();
    assert_eq!(answer.status(), StatusCode::UNAUTHORIZED);
    let other = countersign_domain::conversation::Principal {
        tenant: countersign_domain::ids::TenantId::from_ulid_text(&ulid::Ulid::new().to_string())
            .unwrap(),
        ..h.who.clone()
    };
    assert!(
        chat.spend_request(&other).await.is_ok(),
        "another tenant's own budget"
    );
}
