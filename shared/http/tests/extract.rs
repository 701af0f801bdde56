//! The HTTP edge's rejections: every one is a typed `ApiError`, never a plain-text body.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use axum::Router;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use axum::routing::{get, post};
use countersign_http::{ApiError, Json, Query, bearer};
use serde::Deserialize;
use serde_json::{Value, json};
use tower::ServiceExt as _;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Body1 {
    content: String,
    #[serde(default)]
    reply_to: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Page {
    limit: Option<usize>,
}

async fn echo(Json(b): Json<Body1, 64>) -> Json<Value> {
    Json(json!({"content": b.content, "replyTo": b.reply_to}))
}

async fn page(Query(p): Query<Page>) -> Json<Value> {
    Json(json!({"limit": p.limit}))
}

fn app() -> Router {
    Router::new()
        .route("/echo", post(echo))
        .route("/page", get(page))
}

async fn send(req: Request<Body>) -> (StatusCode, Value, Option<String>) {
    let res = app().oneshot(req).await.unwrap();
    let status = res.status();
    let auth = res
        .headers()
        .get(header::WWW_AUTHENTICATE)
        .map(|v| v.to_str().unwrap().to_owned());
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 20)
        .await
        .unwrap();
    (status, serde_json::from_slice(&bytes).unwrap(), auth)
}

fn post_body(body: &str) -> Request<Body> {
    Request::post("/echo")
        .header("content-type", "application/json")
        .body(Body::from(body.to_owned()))
        .unwrap()
}

#[tokio::test]
async fn a_valid_body_reaches_the_handler_typed() {
    let (s, v, _) = send(post_body(r#"{"content": "hi", "replyTo": 3}"#)).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v, json!({"content": "hi", "replyTo": 3}));
}

#[tokio::test]
async fn each_bad_body_is_a_typed_error_naming_the_field() {
    for (body, status, code, field) in [
        ("{", StatusCode::BAD_REQUEST, "INVALID_JSON", None),
        ("[]", StatusCode::BAD_REQUEST, "INVALID_JSON", None),
        (
            r#"{"content": 5}"#,
            StatusCode::BAD_REQUEST,
            "VALIDATION_ERROR",
            Some("content"),
        ),
        (
            r#"{"content": "x", "replyTo": "a"}"#,
            StatusCode::BAD_REQUEST,
            "VALIDATION_ERROR",
            Some("replyTo"),
        ),
        (
            r#"{"content": "x", "other": 1}"#,
            StatusCode::BAD_REQUEST,
            "VALIDATION_ERROR",
            Some("other"),
        ),
        (r#"{}"#, StatusCode::BAD_REQUEST, "VALIDATION_ERROR", None),
        (
            &"x".repeat(65),
            StatusCode::PAYLOAD_TOO_LARGE,
            "PAYLOAD_TOO_LARGE",
            None,
        ),
    ] {
        let (s, v, _) = send(post_body(body)).await;
        assert_eq!(s, status, "{body}");
        assert_eq!(v["error"]["code"], code, "{body}");
        assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
        assert_eq!(v["error"]["field"].as_str(), field, "{body}: {v}");
    }
}

#[tokio::test]
async fn query_errors_name_the_parameter() {
    for (q, field) in [("limit=x", "limit"), ("colour=red", "colour")] {
        let req = Request::get(format!("/page?{q}"))
            .body(Body::empty())
            .unwrap();
        let (s, v, _) = send(req).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{q}");
        assert_eq!(v["error"]["field"], field, "{q}");
    }
    let req = Request::get("/page?limit=7").body(Body::empty()).unwrap();
    assert_eq!(send(req).await.1, json!({"limit": 7}));
}

#[test]
fn a_401_says_bearer_and_a_503_never_carries_its_cause() {
    use axum::response::IntoResponse as _;
    let r = ApiError::unauthorized("a key is required").into_response();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(r.headers()[header::WWW_AUTHENTICATE], "Bearer");
    let cause = std::io::Error::other("connect to 10.0.0.7:443 refused");
    let e = ApiError::unavailable("a platform service is unavailable", &cause);
    assert_eq!(e.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        !serde_json::to_string(&e.body())
            .unwrap()
            .contains("10.0.0.7")
    );
}

#[test]
fn bearer_reads_only_a_non_empty_bearer_credential() {
    let mut h = axum::http::HeaderMap::new();
    assert_eq!(bearer(&h), None);
    h.insert(header::AUTHORIZATION, "Basic abc".parse().unwrap());
    assert_eq!(bearer(&h), None);
    h.insert(header::AUTHORIZATION, "Bearer   ".parse().unwrap());
    assert_eq!(bearer(&h), None);
    h.insert(header::AUTHORIZATION, "Bearer tsk_1 ".parse().unwrap());
    assert_eq!(bearer(&h), Some("tsk_1"));
}

/// Decision 0021: a 429 carries `Retry-After` in seconds and the typed body.
#[tokio::test]
async fn a_rate_limited_answer_carries_retry_after() {
    use axum::response::IntoResponse as _;
    let r = ApiError::rate_limited("too many", 17).into_response();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(r.headers()[header::RETRY_AFTER], "17");
    let bytes = axum::body::to_bytes(r.into_body(), 1 << 16).await.unwrap();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(body["error"]["code"], "RATE_LIMITED");
}
