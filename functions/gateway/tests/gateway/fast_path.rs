//! Issue 26 C (decision 0038): the stateless fast path answers exactly what rmcp's own
//! service answers. Every request here goes to the gateway's router and to the same
//! gateway served by rmcp alone; status, content type and JSON body must be the same, and
//! the `mcp_requests_total` counter shows which requests the fast path took (so this test
//! fails if the fast path silently stopped being used). Its own test binary: the metrics
//! recorder is process-global.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::*;
use axum::body::Body;
use countersign_domain::ports::Provider;
use countersign_gateway_fn::{TokenKey, router, router_without_fast_path};
use http::Request;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tower::ServiceExt as _;

fn gateway() -> countersign_gateway_fn::Gateway {
    let provider: Arc<dyn Provider> = Arc::new(TrackShare {
        seen_tokens: Mutex::default(),
    });
    gateway_keyed(Some(provider), None, TokenKey::fixed(key()))
}

/// One request as a client sends it: the plain headers, with `changes` applied
/// (`None` removes a header).
fn request(body: &str, changes: &[(&'static str, Option<&str>)]) -> Request<Body> {
    let mut headers: BTreeMap<&str, String> = [
        ("host", "127.0.0.1:8787".to_owned()),
        ("content-type", "application/json".to_owned()),
        ("accept", "application/json, text/event-stream".to_owned()),
        ("mcp-protocol-version", "2025-06-18".to_owned()),
        ("authorization", format!("Bearer {}", token())),
        ("content-length", body.len().to_string()),
    ]
    .into_iter()
    .collect();
    for (name, value) in changes {
        match value {
            Some(v) => headers.insert(name, (*v).to_owned()),
            None => headers.remove(name),
        };
    }
    let mut req = Request::post("/mcp");
    for (name, value) in headers {
        req = req.header(name, value);
    }
    req.body(Body::from(body.to_owned())).unwrap()
}

async fn answer(app: axum::Router, req: Request<Body>) -> (u16, Option<String>, Value) {
    let res = app.oneshot(req).await.unwrap();
    let status = res.status().as_u16();
    let content_type = res
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned());
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 20)
        .await
        .unwrap();
    let body = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| json!({"raw": String::from_utf8_lossy(&bytes)}));
    (status, content_type, body)
}

fn calls() -> Vec<Value> {
    let call = |id: u64, name: &str, args: Value| {
        rpc(id, "tools/call", json!({"name": name, "arguments": args}))
    };
    vec![
        rpc(1, "tools/list", json!({})),
        json!({"jsonrpc": "2.0", "id": "text-id", "method": "tools/list"}),
        call(2, "action_status", json!({})),
        call(3, "describe_tool", json!({"name": "action_status"})),
        call(4, "describe_tool", json!({"name": "get_user_uploads"})),
        call(5, "describe_tool", json!({"name": "no_such_tool"})),
        call(6, "describe_tool", json!({"bogus": 1})),
        call(7, "get_user_uploads", json!({})),
        call(8, "get_user_cars", json!({})),
        call(9, "get_matching_sessions", json!({})),
        call(10, "execute_action", json!({})),
        call(11, "prepare_action", json!({})),
        call(12, "no_such_tool", json!({})),
        rpc(13, "tools/call", json!({"arguments": {}})),
        rpc(14, "ping", json!({})),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!([rpc(15, "tools/list", json!({}))]),
        // Unusual but perhaps valid: left to rmcp by the fast path's reader.
        json!({"jsonrpc": "2.0", "id": 16, "method": "tools/list", "params": null}),
        json!({"jsonrpc": "1.0", "id": 17, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 18, "method": "tools/list", "extra": true}),
        json!({"jsonrpc": "2.0", "id": 20, "method": "tools/call", "params": null}),
    ]
}

fn fast_and_slow(docs: &str) -> (u64, u64) {
    let (mut fast, mut slow) = (0, 0);
    for line in docs.lines() {
        let d: Value = serde_json::from_str(line).unwrap();
        let Some(n) = d["mcp_requests_total"].as_f64() else {
            continue;
        };
        match d["path"].as_str() {
            Some("fast") => fast += n as u64,
            Some("rmcp") => slow += n as u64,
            other => panic!("unexpected path {other:?}: {d}"),
        }
    }
    (fast, slow)
}

#[tokio::test]
async fn the_fast_path_answers_what_rmcp_answers() {
    let metrics = metrics_cloudwatch_embedded::Builder::new()
        .cloudwatch_namespace("Countersign")
        .init()
        .unwrap();
    let variants: Vec<Vec<(&'static str, Option<&str>)>> = vec![
        vec![],
        vec![("mcp-protocol-version", Some("2025-11-25"))],
        vec![("content-length", None)],
        // Left to rmcp by the fast path; the answers must still agree.
        vec![("mcp-protocol-version", Some("2025-03-26"))],
        vec![("mcp-protocol-version", Some("1999-01-01"))],
        vec![("mcp-protocol-version", None)],
        vec![("accept", Some("application/json"))],
        vec![("accept", Some("application/json;q=1, text/event-stream"))],
        vec![("content-type", Some("text/plain"))],
        vec![("host", Some("evil.example"))],
        vec![("origin", Some("https://evil.example"))],
    ];
    let mut sent = 0;
    for changes in &variants {
        // N-6: a foreign Origin is answered 403 before either path (and not counted).
        let refused = changes.iter().any(|(h, _)| *h == "origin");
        for call in calls() {
            let body = call.to_string();
            let fast = answer(router(gateway()), request(&body, changes)).await;
            let slow = answer(router_without_fast_path(gateway()), request(&body, changes)).await;
            assert_eq!(fast, slow, "{changes:?} {body}");
            if refused {
                assert_eq!(fast.0, 403, "{body}");
            } else {
                sent += 1;
            }
        }
    }
    let mut out = Vec::new();
    metrics.flush(&mut out).unwrap();
    let (fast, slow) = fast_and_slow(&String::from_utf8(out).unwrap());
    // Plain tools/list and tools/call (12 of the 21 bodies: the call without a name is not
    // a valid request, `prepare_action` is answered by era by rmcp's handler, the
    // last four are left to rmcp) under the three plain variants.
    assert_eq!(fast, 3 * 12, "fast answers");
    assert_eq!(
        fast + slow,
        sent,
        "every request through the fast router is counted"
    );
}
