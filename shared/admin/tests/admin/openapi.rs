//! `docs/admin-api.openapi.json`, generated from the API's types, against the router: the
//! checked-in file is the generated one; the same paths; every
//! documented operation routed and every other method refused; and the answers of a real
//! session on the local AWS emulator valid against the documented schema for their
//! status, with their request bodies valid against the documented request schema.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::*;
use countersign_admin::api::PATHS;
use countersign_admin::tenants;
use countersign_aws::system::{SystemClock, UlidIds};
use countersign_domain::texts::Language;
use http::StatusCode;
use serde_json::{Value, json};
use std::collections::BTreeSet;

const METHODS: [&str; 5] = ["get", "put", "post", "delete", "patch"];

fn doc() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/admin-api.openapi.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `{id}`, `{key_id}`, `{keyId}` → `{}`: parameter names differ between the two syntaxes.
fn shape(path: &str) -> String {
    let mut out = String::new();
    let mut in_param = false;
    for c in path.chars() {
        match c {
            '{' => {
                in_param = true;
                out.push_str("{}");
            }
            '}' => in_param = false,
            _ if !in_param => out.push(c),
            _ => {}
        }
    }
    out
}

/// Follows a local `$ref` (`#/components/...`).
fn resolve<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => doc.pointer(r.trim_start_matches('#')).unwrap(),
        None => v,
    }
}

/// Validates `instance` against `schema`, a schema inside the document (its `$ref`s
/// resolve against the document's components).
fn check(doc: &Value, schema: &Value, instance: &Value, what: &str) {
    let mut root = schema.clone();
    root["components"] = doc["components"].clone();
    let validator = jsonschema::draft202012::new(&root).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{what}: {errors:?}\n{instance}");
}

fn concrete(path: &str, tenant: &str, key_id: &str) -> String {
    path.replace("{id}", tenant)
        .replace("{keyId}", key_id)
        .replace("{key_id}", key_id)
}

/// The checked-in document is the one the code generates (`UPDATE_OPENAPI=1 cargo test
/// -p countersign-admin --test openapi` rewrites it).
#[test]
fn the_checked_in_document_is_generated_from_the_code() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/admin-api.openapi.json"
    );
    let generated = countersign_admin::api::openapi().to_pretty_json().unwrap() + "\n";
    if std::env::var_os("UPDATE_OPENAPI").is_some() {
        std::fs::write(path, &generated).unwrap();
    }
    let checked_in = std::fs::read_to_string(path).unwrap();
    assert!(
        checked_in == generated,
        "docs/admin-api.openapi.json is stale: run UPDATE_OPENAPI=1 cargo test -p countersign-admin --test openapi"
    );
}

#[test]
fn the_document_is_openapi_3_1_with_the_routers_paths() {
    let doc = doc();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1."));
    let documented: BTreeSet<String> = doc["paths"]
        .as_object()
        .unwrap()
        .keys()
        .map(|p| shape(p))
        .collect();
    let routed: BTreeSet<String> = PATHS.iter().map(|p| shape(p)).collect();
    assert_eq!(documented, routed);
    // Every $ref points at something.
    fn refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.push(r.clone());
                }
                m.values().for_each(|v| refs(v, out));
            }
            Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    refs(&doc, &mut all);
    assert!(!all.is_empty());
    for r in all {
        assert!(doc.pointer(r.trim_start_matches('#')).is_some(), "{r}");
    }
}

/// Every documented operation is routed (no key → the documented 401, not 404/405), and
/// every undocumented method on a documented path is 405.
#[tokio::test]
async fn every_documented_operation_exists_and_no_other() {
    let env = env(true).await;
    let tenant = UlidIds::default();
    let t = countersign_domain::ports::Ids::tenant_id(&tenant);
    let k = countersign_domain::ports::Ids::widget_key_id(&tenant);
    let doc = doc();
    for (path, item) in doc["paths"].as_object().unwrap() {
        let uri = concrete(path, t.as_str(), k.as_str());
        for method in METHODS {
            let (status, body) = send(
                app(&env, env.secrets.clone()),
                &method.to_uppercase(),
                &uri,
                None,
                Some("{}".into()),
            )
            .await;
            match item.get(method) {
                // A public operation (the JWKS, K-1): documented with an empty
                // security requirement, answered without a key.
                Some(op) if op["security"] == json!([{}]) => {
                    assert_eq!(status, StatusCode::OK, "{method} {path} is public");
                }
                Some(op) => {
                    assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path}");
                    let documented = resolve(&doc, &op["responses"]["401"]);
                    check(
                        &doc,
                        &documented["content"]["application/json"]["schema"],
                        &body,
                        &format!("{method} {path} 401"),
                    );
                }
                None => assert_eq!(
                    status,
                    StatusCode::METHOD_NOT_ALLOWED,
                    "{method} {path} is routed but not documented"
                ),
            }
        }
    }
}

/// A whole session: each answer's status is documented for its operation, and its body
/// matches the documented schema.
#[tokio::test]
async fn real_answers_match_the_documented_schemas() {
    let env = env(true).await;
    let ids = UlidIds::default();
    let a = tenants::register(&env.store, &ids, &SystemClock, "A", Language::En)
        .await
        .unwrap();
    let b = tenants::register(&env.store, &ids, &SystemClock, "B", Language::En)
        .await
        .unwrap();
    let doc = doc();
    let t = a.tenant.id.as_str().to_owned();
    let key = a.admin_key.expose().to_owned();
    let mut key_id = String::from("wk_01JDZ6Y5X1QW9T3V7N2K4M8P0R");
    let mcp = "/api/admin/tenants/{id}/mcp";
    let widgets = "/api/admin/tenants/{id}/widget-credentials";
    let widget = "/api/admin/tenants/{id}/widget-credentials/{keyId}";
    let audit = "/api/admin/tenants/{id}/audit";
    let valid = config("https://mcp.trackshare.example.com/mcp", false);
    let certifications = "/api/admin/tenants/{id}/mcp/certifications";
    let latest = "/api/admin/tenants/{id}/mcp/certifications/latest";
    let run =
        json!({"testUser": "countersign-test:u_test", "action": {"operation": "reassign_session_car"}}).to_string();
    /// Method, documented path, body, query string, another tenant's key.
    type Step<'a> = (&'a str, &'a str, Option<String>, &'a str, Option<&'a str>);
    let steps: Vec<Step<'_>> = vec![
        ("get", mcp, None, "", None),
        ("put", mcp, Some(valid.clone()), "", None),
        ("get", latest, None, "", None),
        ("post", certifications, Some(run.clone()), "", None),
        (
            "post",
            certifications,
            Some(json!({"testUser": "two words"}).to_string()),
            "",
            None,
        ),
        ("get", latest, None, "", None),
        (
            "get",
            "/api/admin/tenants/{id}/actions/unsettled",
            None,
            "",
            None,
        ),
        ("get", mcp, None, "", None),
        ("put", mcp, Some("{not json".into()), "", None),
        (
            "put",
            mcp,
            Some(json!({"serverUrl": "http://x"}).to_string()),
            "",
            None,
        ),
        ("put", mcp, Some("x".repeat(70_000)), "", None),
        ("get", mcp, None, "", Some(b.admin_key.expose())),
        ("post", widgets, None, "", None),
        ("get", widgets, None, "", None),
        ("delete", widget, None, "", None),
        ("delete", widget, None, "", None),
        ("get", audit, None, "?limit=2", None),
        ("get", audit, None, "?limit=0", None),
        ("delete", mcp, None, "", None),
        ("get", mcp, None, "", None),
    ];
    let mut seen = BTreeSet::new();
    for (method, path, body, query, other_key) in steps {
        let uri = format!("{}{query}", concrete(path, &t, &key_id));
        let (status, answer) = send(
            app(&env, env.secrets.clone()),
            &method.to_uppercase(),
            &uri,
            Some(other_key.unwrap_or(&key)),
            body.clone(),
        )
        .await;
        let op = &doc["paths"][path][method];
        let code = status.as_u16().to_string();
        let documented = resolve(&doc, &op["responses"][&code]);
        assert!(
            documented.is_object(),
            "{method} {uri} answered {code}, which is not documented"
        );
        match documented.pointer("/content/application~1json/schema") {
            Some(schema) => check(&doc, schema, &answer, &format!("{method} {path} {code}")),
            None => assert_eq!(answer, Value::Null, "{method} {path} {code} has no body"),
        }
        if status.is_success()
            && let (Some(body), Some(schema)) = (
                &body,
                op.pointer("/requestBody/content/application~1json/schema"),
            )
        {
            check(
                &doc,
                schema,
                &serde_json::from_str(body).unwrap(),
                &format!("{method} {path} request"),
            );
        }
        if method == "post" && path == widgets {
            key_id = answer["keyId"].as_str().unwrap().to_owned();
        }
        seen.insert(format!("{method} {path} {code}"));
    }
    // The session covered each operation's success and the main refusals.
    for expected in [
        "get /api/admin/tenants/{id}/mcp 200",
        "put /api/admin/tenants/{id}/mcp 200",
        "put /api/admin/tenants/{id}/mcp 400",
        "put /api/admin/tenants/{id}/mcp 413",
        "get /api/admin/tenants/{id}/mcp 404",
        "post /api/admin/tenants/{id}/widget-credentials 201",
        "get /api/admin/tenants/{id}/widget-credentials 200",
        "delete /api/admin/tenants/{id}/widget-credentials/{keyId} 204",
        "delete /api/admin/tenants/{id}/widget-credentials/{keyId} 404",
        "get /api/admin/tenants/{id}/audit 200",
        "get /api/admin/tenants/{id}/audit 400",
        "delete /api/admin/tenants/{id}/mcp 204",
        "post /api/admin/tenants/{id}/mcp/certifications 201",
        "post /api/admin/tenants/{id}/mcp/certifications 400",
        "get /api/admin/tenants/{id}/mcp/certifications/latest 200",
        "get /api/admin/tenants/{id}/mcp/certifications/latest 404",
        "get /api/admin/tenants/{id}/actions/unsettled 200",
    ] {
        assert!(
            seen.contains(expected),
            "{expected} not exercised: {seen:?}"
        );
    }
}

/// Decision 0025: every origin the document's pattern admits is accepted by the server
/// (what schemathesis checks from the outside, here over many more strings).
#[test]
fn every_origin_the_document_admits_is_accepted() {
    use proptest::test_runner::{Config, TestRunner};
    let doc = serde_json::to_value(countersign_admin::api::openapi()).unwrap();
    let pattern = doc["components"]["schemas"]["OriginInput"]["pattern"]
        .as_str()
        .unwrap()
        .to_owned();
    // The generator takes the pattern without its anchors (it generates whole strings).
    let bare = pattern.trim_start_matches('^').trim_end_matches('$');
    let strategy = proptest::string::string_regex(bare).unwrap();
    let mut runner = TestRunner::new(Config {
        cases: 2000,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&strategy, |origin| {
            proptest::prop_assert!(
                countersign_domain::config::parse_origin(&origin).is_ok(),
                "{origin}"
            );
            Ok(())
        })
        .unwrap();
}

/// The `PUT mcp` body is parsed by the domain's rules, not by serde: its schema in the
/// document names exactly the fields those rules take (a field added to one and not the
/// other fails here).
#[test]
fn the_mcp_body_schema_names_exactly_the_fields_the_rules_take() {
    use countersign_domain::config::{POLICY_FIELDS, TOP_FIELDS};
    let doc = serde_json::to_value(countersign_admin::api::openapi()).unwrap();
    let schemas = &doc["components"]["schemas"];
    let names = |schema: &Value| -> std::collections::BTreeSet<String> {
        schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    let top: std::collections::BTreeSet<String> =
        TOP_FIELDS.iter().map(|f| (*f).to_owned()).collect();
    let policy: std::collections::BTreeSet<String> =
        POLICY_FIELDS.iter().map(|f| (*f).to_owned()).collect();
    assert_eq!(names(&schemas["McpConfigInput"]), top);
    assert_eq!(names(&schemas["ActionPolicyInput"]), policy);
}
