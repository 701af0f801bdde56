//! G-8: the duration metric leaves as CloudWatch Embedded Metric Format, with `tool` and
//! `error_type` dimensions, through the `metrics_cloudwatch_embedded` crate the function
//! installs. (The recorder is process-global: nextest runs each test in its own process,
//! as the test command does; under plain `cargo test` it meets the fast path's.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use countersign_domain::conversation::Principal;
use countersign_domain::ids::{CaseId, TenantId, UserId};
use countersign_testkit::MemoryStore;
use countersign_tools::builtins::{self, CallContext, Services};
use serde_json::{Value, json};
use std::sync::Arc;

#[tokio::test]
async fn g8_duration_metric_is_written_as_emf() {
    let metrics = metrics_cloudwatch_embedded::Builder::new()
        .cloudwatch_namespace("Countersign")
        .init()
        .unwrap();
    let fake = Arc::new(MemoryStore::default());
    let ulid = "01JDZ6Y5X1QW9T3V7N2K4M8P0R";
    let ctx = CallContext {
        principal: Principal {
            tenant: TenantId::from_ulid_text(ulid).unwrap(),
            user: UserId::parse("driver-42").unwrap(),
        },
        case: CaseId::from_ulid_text(ulid).unwrap(),
        services: Services {
            conversations: fake.clone(),
            tenants: fake,
            actions: None,
        },
        consultations: Vec::new(),
    };
    let r = builtins::registry().unwrap();
    r.call(
        ctx.clone(),
        "describe_tool",
        json!({"name": "action_status"}),
    )
    .await
    .unwrap();
    r.call(ctx, "describe_tool", json!({"bogus": 1}))
        .await
        .unwrap();
    let mut out = Vec::new();
    metrics.flush(&mut out).unwrap();
    let docs: Vec<Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut seen = Vec::new();
    for d in &docs {
        let cw = &d["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(cw["Namespace"], "Countersign", "{d}");
        if cw["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["Name"] == "mcp_tool_duration_seconds")
        {
            let dims: Vec<&str> = cw["Dimensions"][0]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            assert!(
                dims.contains(&"tool") && dims.contains(&"error_type"),
                "{d}"
            );
            seen.push((
                d["tool"].as_str().unwrap().to_owned(),
                d["error_type"].as_str().unwrap().to_owned(),
            ));
        }
    }
    seen.sort();
    assert_eq!(
        seen,
        vec![
            ("describe_tool".to_owned(), "VALIDATION_ERROR".to_owned()),
            ("describe_tool".to_owned(), "none".to_owned())
        ]
    );
}
