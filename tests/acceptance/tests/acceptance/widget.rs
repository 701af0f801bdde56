//! The widget API seen from a tenant's web page (decision 0025): CORS per widget
//! credential, end to end with the messages function as its own process; and the
//! widget's files served by it (W-1).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use countersign_acceptance::Stack;
use countersign_domain::ids::{UserId, WidgetKeyId};
use countersign_domain::secret::SecretString;
use serde_json::json;

const SHOP: &str = "https://shop.example.com";

/// A credential for `SHOP` and a token of it.
async fn shop_token(s: &Stack) -> String {
    let (status, created) = s
        .admin(
            "POST",
            "widget-credentials",
            Some(json!({"allowedOrigins": ["https://Shop.Example.com:443"]})),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["allowedOrigins"], json!([SHOP]), "normalised");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    countersign_chat::widget::sign_token(
        &SecretString::new(created["secret"].as_str().unwrap()),
        &WidgetKeyId::parse(created["keyId"].as_str().unwrap()).unwrap(),
        &s.tenant,
        &UserId::parse("u_alice").unwrap(),
        now,
        now + 600,
    )
    .unwrap()
}

#[tokio::test]
async fn cors_a_credentials_origins_may_use_it_and_no_other() {
    let s = Stack::start().await;
    let token = shop_token(&s).await;
    let url = format!("{}/api/cases", s.messages_url);
    // The preflight names no tenant: answered, and nothing happens.
    let pre = s
        .http
        .request(reqwest::Method::OPTIONS, &url)
        .header("Origin", "https://evil.example")
        .header("Access-Control-Request-Method", "POST")
        .header("Access-Control-Request-Headers", "authorization")
        .send()
        .await
        .unwrap();
    assert_eq!(pre.status(), 204);
    assert_eq!(
        pre.headers()["access-control-allow-origin"],
        "https://evil.example"
    );
    assert!(
        pre.headers()["access-control-allow-headers"]
            .to_str()
            .unwrap()
            .contains("authorization")
    );
    // From the shop: served, and readable by the page.
    let ok = s
        .http
        .post(&url)
        .bearer_auth(&token)
        .header("Origin", SHOP)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 201);
    assert_eq!(ok.headers()["access-control-allow-origin"], SHOP);
    // From another origin: refused before anything is written, and unreadable.
    let before = s.item_count().await;
    let evil = s
        .http
        .post(&url)
        .bearer_auth(&token)
        .header("Origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(evil.status(), 403);
    assert!(evil.headers().get("access-control-allow-origin").is_none());
    assert_eq!(
        evil.json::<serde_json::Value>().await.unwrap()["error"]["code"],
        "ORIGIN_NOT_ALLOWED"
    );
    assert_eq!(s.item_count().await, before, "no case was opened");
    // A bad token from the allowed origin is a readable 401 (the widget asks for a new
    // token); a bad token from any origin never learns about origins.
    let bad = s
        .http
        .post(&url)
        .bearer_auth("x.y.z")
        .header("Origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 401);
    assert_eq!(
        bad.headers()["access-control-allow-origin"],
        "https://evil.example"
    );
    // A credential without origins (the stack's own) works outside browsers only.
    let t = s.token("u_alice");
    let from_page = s
        .http
        .post(&url)
        .bearer_auth(&t)
        .header("Origin", SHOP)
        .send()
        .await
        .unwrap();
    assert_eq!(from_page.status(), 403);
    let server_side = s.http.post(&url).bearer_auth(&t).send().await.unwrap();
    assert_eq!(server_side.status(), 201);
    s.finish();
}

#[tokio::test]
async fn cors_origins_are_validated_when_a_credential_is_created() {
    let s = Stack::start().await;
    let (status, body) = s
        .admin(
            "POST",
            "widget-credentials",
            Some(json!({"allowedOrigins": ["https://ok.example", "http://shop.example.com", "*"]})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "VALIDATION_ERROR");
    let fields: Vec<&str> = body["error"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["allowedOrigins[1]", "allowedOrigins[2]"]);
    let (_, list) = s.admin("GET", "widget-credentials", None).await;
    assert_eq!(
        list["items"].as_array().unwrap().len(),
        1,
        "nothing was created"
    );
    s.finish();
}

#[tokio::test]
async fn w1_the_messages_function_serves_the_widget() {
    let s = Stack::start().await;
    let res = s
        .http
        .get(format!(
            "{}/widget/{}/countersign-widget.min.js",
            s.messages_url,
            countersign_chat::assets::WIDGET_VERSION
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(
        res.headers()["cache-control"],
        "public, max-age=31536000, immutable"
    );
    let body = res.text().await.unwrap();
    assert_eq!(body, countersign_chat::assets::CLASSIC);
    s.finish();
}
