//! `template.yaml` against the code (issue 8): every route of the three routers appears
//! in the template under the right function, and the other way round; each router serves
//! exactly those methods; every environment variable a function reads in Lambda is set by
//! the template for it, and the local-stack-only ones (D-5's loopback allowance) never are.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::sync::Arc;
use tower::ServiceExt as _;
use yaml_rust2::{Yaml, YamlLoader};

fn template() -> (Yaml, String) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../template.yaml");
    let text = std::fs::read_to_string(path).unwrap();
    (YamlLoader::load_from_str(&text).unwrap().remove(0), text)
}

/// `{id}`/`{key_id}` → `{}`.
fn shape(path: &str) -> String {
    let mut out = String::new();
    let mut skip = false;
    for c in path.chars() {
        match c {
            '{' => {
                skip = true;
                out.push_str("{}");
            }
            '}' => skip = false,
            _ if !skip => out.push(c),
            _ => {}
        }
    }
    out
}

fn function<'a>(t: &'a Yaml, binary: &str) -> &'a Yaml {
    t["Resources"]
        .as_hash()
        .unwrap()
        .values()
        .find(|r| {
            r["Type"].as_str() == Some("AWS::Serverless::Function")
                && r["Metadata"]["BuildProperties"]["Binary"].as_str() == Some(binary)
        })
        .unwrap_or_else(|| panic!("no function for {binary}"))
}

fn template_routes(f: &Yaml) -> BTreeSet<(String, String)> {
    f["Properties"]["Events"]
        .as_hash()
        .unwrap()
        .values()
        .filter(|e| e["Type"].as_str() == Some("HttpApi"))
        .map(|e| {
            (
                e["Properties"]["Method"].as_str().unwrap().to_owned(),
                shape(e["Properties"]["Path"].as_str().unwrap()),
            )
        })
        .collect()
}

fn code_routes(routes: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    routes
        .iter()
        .map(|(m, p)| ((*m).to_owned(), shape(p)))
        .collect()
}

fn template_env(t: &Yaml, f: &Yaml) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = BTreeSet::new();
    for vars in [
        &t["Globals"]["Function"]["Environment"]["Variables"],
        &f["Properties"]["Environment"]["Variables"],
    ] {
        if let Some(h) = vars.as_hash() {
            names.extend(h.keys().map(|k| k.as_str().unwrap().to_owned()));
        }
    }
    names.remove("RUST_LOG");
    names
}

const FUNCTIONS: [&str; 4] = [
    "countersign-messages",
    "countersign-admin",
    "countersign-gateway",
    "countersign-purge",
];

fn routes_of(binary: &str) -> &'static [(&'static str, &'static str)] {
    match binary {
        "countersign-messages" => &countersign_chat::api::ROUTES,
        "countersign-admin" => &countersign_admin::api::ROUTES,
        "countersign-purge" => &[],
        _ => &countersign_gateway_fn::ROUTES,
    }
}

#[test]
fn every_route_is_in_the_template_and_the_other_way_round() {
    let (t, _) = template();
    let mut all_template = BTreeSet::new();
    for binary in FUNCTIONS {
        let f = function(&t, binary);
        let in_template = template_routes(f);
        let mut in_code = code_routes(routes_of(binary));
        if binary == "countersign-messages" {
            in_code.extend(code_routes(&countersign_chat::api::ASSET_ROUTES));
            in_code.extend(code_routes(&countersign_chat::api::PREFLIGHT_ROUTES));
            in_code.extend(code_routes(&countersign_admin::api::CERTIFICATION_ROUTES));
            in_code.extend(code_routes(&countersign_admin::panel::CERTIFICATION_ROUTES));
            in_code.extend(code_routes(&countersign_chat::page::ROUTES));
        }
        if binary == "countersign-admin" {
            in_code.extend(code_routes(&countersign_admin::panel::ROUTES));
        }
        assert_eq!(in_template, in_code, "{binary}");
        all_template.extend(in_template);
    }
    // No route in the template belongs to no function.
    let events: usize = t["Resources"]
        .as_hash()
        .unwrap()
        .values()
        .filter_map(|r| r["Properties"]["Events"].as_hash())
        .flat_map(|e| e.values())
        .filter(|e| e["Type"].as_str() == Some("HttpApi"))
        .count();
    assert_eq!(events, all_template.len());
}

#[test]
fn every_variable_a_function_reads_is_set_by_the_template_and_no_local_one() {
    let (t, text) = template();
    let cases: [(&str, &[&str], &[&str]); 4] = [
        (
            "countersign-messages",
            &countersign_messages_fn::ENV,
            &countersign_messages_fn::LOCAL_ENV,
        ),
        (
            "countersign-admin",
            &countersign_admin_fn::ENV,
            &countersign_admin_fn::LOCAL_ENV,
        ),
        (
            "countersign-gateway",
            &countersign_gateway_fn::wiring::ENV,
            &countersign_gateway_fn::wiring::LOCAL_ENV,
        ),
        ("countersign-purge", &countersign_purge_fn::ENV, &[]),
    ];
    for (binary, own, local) in cases {
        let env: Vec<&str> = countersign_aws::AwsSettings::ENV
            .iter()
            .chain(own)
            .copied()
            .collect();
        let env = env.as_slice();
        let set = template_env(&t, function(&t, binary));
        let wanted: BTreeSet<String> = env.iter().map(|s| (*s).to_owned()).collect();
        assert_eq!(
            set, wanted,
            "{binary}: the template sets exactly what it reads"
        );
        for l in local {
            assert!(
                !text.contains(l),
                "{l} is local-stack only and must not be in template.yaml"
            );
        }
    }
}

fn dummy_sdk() -> aws_config::SdkConfig {
    aws_config::SdkConfig::builder()
        .behavior_version(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .build()
}

/// Each router serves exactly the declared methods: unauthenticated, a declared route
/// answers 401 (it exists), any other method on its path 405.
#[tokio::test]
async fn each_router_serves_exactly_its_declared_routes() {
    let sdk = dummy_sdk();
    let gateway = countersign_gateway_fn::Gateway {
        registry: countersign_tools::builtins::consultation_registry().unwrap(),
        services: countersign_tools::builtins::Services {
            conversations: Arc::new(countersign_testkit::MemoryStore::default()),
            tenants: Arc::new(countersign_testkit::MemoryStore::default()),
            actions: None,
        },
        token_key: countersign_gateway_fn::TokenKey::fixed(
            countersign_domain::secret::SecretString::new("k".repeat(32)),
        ),
        clock: Arc::new(countersign_aws::system::SystemClock),
        allowed_hosts: Vec::new(),
        integration: None,
        budget: None,
        links: None,
        public_url: None,
        page_url: None,
    };
    let routers = [
        (
            "countersign-messages",
            countersign_messages_fn::app_from_env(&sdk).unwrap(),
        ),
        (
            "countersign-admin",
            countersign_admin::app(countersign_admin_fn::state_from_env(&sdk).unwrap()),
        ),
        (
            "countersign-gateway",
            countersign_gateway_fn::router(gateway),
        ),
    ];
    for (binary, router) in routers {
        let routes = routes_of(binary);
        let paths: BTreeSet<&str> = routes.iter().map(|(_, p)| *p).collect();
        for path in paths {
            let uri = path
                .replace("{id}", "ten_01JDZ6Y5X1QW9T3V7N2K4M8P0R")
                .replace("{key_id}", "wk_01JDZ6Y5X1QW9T3V7N2K4M8P0R");
            for method in ["GET", "POST", "PUT", "DELETE", "PATCH"] {
                let req = http::Request::builder()
                    .method(method)
                    .uri(&uri)
                    .header("host", "127.0.0.1")
                    .header("accept", "application/json, text/event-stream")
                    .header("content-type", "application/json")
                    .body(axum::body::Body::from("{}"))
                    .unwrap();
                let status = router.clone().oneshot(req).await.unwrap().status().as_u16();
                let public = [
                    countersign_admin::jwks::JWKS_PATH,
                    countersign_admin::jwks::AUDIT_KEYS_PATH,
                ];
                if routes.contains(&(method, path)) && public.contains(&path) {
                    // Public (K-1, V-6): no key asked; here no KMS answers, so 503, never 401.
                    assert!(
                        status == 200 || status == 503,
                        "{binary} {method} {path}: {status}"
                    );
                } else if routes.contains(&(method, path)) {
                    assert_eq!(status, 401, "{binary} {method} {path}");
                } else if binary == "countersign-gateway" {
                    // The gateway's auth layer answers before routing (401); with a token,
                    // rmcp refuses every method but POST (the gateway's own tests).
                    assert!(
                        status == 401 || status == 405,
                        "{binary} {method} {path}: {status}"
                    );
                } else {
                    assert_eq!(
                        status, 405,
                        "{binary} {method} {path} is served but not declared"
                    );
                }
            }
        }
    }
}

/// Every scalar under `y`, flattened (tags such as `!Sub` / `!GetAtt` dropped by the
/// parser, their arguments kept).
fn scalars(y: &Yaml) -> Vec<String> {
    match y {
        Yaml::String(s) => vec![s.clone()],
        Yaml::Integer(i) => vec![i.to_string()],
        Yaml::Array(a) => a.iter().flat_map(scalars).collect(),
        Yaml::Hash(h) => h.values().flat_map(scalars).collect(),
        _ => Vec::new(),
    }
}

fn statements(policy_holder: &Yaml) -> Vec<&Yaml> {
    policy_holder
        .as_vec()
        .into_iter()
        .flatten()
        .flat_map(|p| p["Statement"].as_vec().into_iter().flatten())
        .collect()
}

/// The resources a function's role may use `action` on.
fn resources_for(f: &Yaml, action: &str) -> Vec<String> {
    statements(&f["Properties"]["Policies"])
        .into_iter()
        .filter(|s| s["Effect"].as_str() != Some("Deny"))
        .filter(|s| scalars(&s["Action"]).iter().any(|a| a == action))
        .flat_map(|s| scalars(&s["Resource"]))
        .collect()
}

/// V-5: no function's role may write the signing key ring (the `PLATFORM` partition): each
/// role that may write the table carries an explicit Deny of every write action on items
/// whose partition key is `PLATFORM`, so no Allow added later can open it.
#[test]
fn v5_no_function_role_may_write_the_key_ring() {
    const WRITES: [&str; 4] = [
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:BatchWriteItem",
    ];
    let (t, _) = template();
    for binary in FUNCTIONS {
        let f = function(&t, binary);
        let all = statements(&f["Properties"]["Policies"]);
        let writes_table = all.iter().any(|s| {
            s["Effect"].as_str() == Some("Allow")
                && scalars(&s["Resource"]).iter().any(|r| r == "Table.Arn")
                && scalars(&s["Action"])
                    .iter()
                    .any(|a| WRITES.contains(&a.as_str()) || a == "dynamodb:*")
        });
        assert!(writes_table, "{binary} writes the table");
        let denied = all.iter().any(|s| {
            let condition = &s["Condition"]["ForAnyValue:StringEquals"]["dynamodb:LeadingKeys"];
            s["Effect"].as_str() == Some("Deny")
                && scalars(&s["Resource"]) == ["Table.Arn"]
                && WRITES
                    .iter()
                    .all(|w| scalars(&s["Action"]).iter().any(|a| a == w))
                && scalars(condition) == ["PLATFORM"]
        });
        assert!(denied, "{binary} may write the key ring");
    }
}

/// Issue 13: only the messages function's role may sign proofs (the key policy names it,
/// and no statement grants `kms:Sign` to the account root or anyone else); no function's
/// IAM policy grants KMS at all.
#[test]
fn only_the_messages_function_may_sign() {
    let (t, _) = template();
    let key = &t["Resources"]["SigningKey"]["Properties"]["KeyPolicy"]["Statement"];
    let signers: Vec<Vec<String>> = key
        .as_vec()
        .unwrap()
        .iter()
        .filter(|s| {
            scalars(&s["Action"])
                .iter()
                .any(|a| a == "kms:Sign" || a == "kms:*")
        })
        .map(|s| scalars(&s["Principal"]))
        .collect();
    // N-8: the stream function has its own role; it confirms too.
    assert_eq!(
        signers,
        vec![vec![
            "MessagesFunctionRole.Arn".to_owned(),
            "MessagesStreamFunctionRole.Arn".to_owned()
        ]]
    );
    for binary in FUNCTIONS {
        let f = function(&t, binary);
        let kms = statements(&f["Properties"]["Policies"])
            .into_iter()
            .flat_map(|s| scalars(&s["Action"]))
            .any(|a| a.starts_with("kms:"));
        assert!(!kms, "{binary}: KMS access comes from the key policy only");
    }
}

/// Issue 13: each function reaches exactly the secrets it uses: the messages function
/// reads widget secrets, service tokens and the gateway token key; the admin function writes those two kinds;
/// the gateway reads its token key and service tokens. None has the whole prefix.
#[test]
fn each_function_reaches_exactly_its_secrets() {
    let (t, _) = template();
    let widget = "${SecretPrefix}tenants/*/widget/*";
    let token = "${SecretPrefix}tenants/*/mcp-service-token*";
    let ends = |rs: &[String], wanted: &[&str]| {
        let mut got: Vec<String> = rs
            .iter()
            .map(|r| {
                wanted
                    .iter()
                    .find(|w| r.ends_with(&format!(":secret:{w}")) || r == *w)
                    .map_or_else(|| r.clone(), |w| (*w).to_owned())
            })
            .collect();
        got.sort();
        let mut wanted: Vec<String> = wanted.iter().map(|w| (*w).to_owned()).collect();
        wanted.sort();
        assert_eq!(got, wanted);
    };
    let messages = function(&t, "countersign-messages");
    // and the gateway token key, to mint a person's token for their conversation.
    ends(
        &resources_for(messages, "secretsmanager:GetSecretValue"),
        &[widget, token, "GatewayTokenKey"],
    );
    let admin = function(&t, "countersign-admin");
    for action in [
        "secretsmanager:CreateSecret",
        "secretsmanager:PutSecretValue",
        "secretsmanager:GetSecretValue",
        "secretsmanager:DeleteSecret",
    ] {
        ends(&resources_for(admin, action), &[widget, token]);
    }
    let gateway = function(&t, "countersign-gateway");
    ends(
        &resources_for(gateway, "secretsmanager:GetSecretValue"),
        &["GatewayTokenKey", token],
    );
}

/// Issue 13: every function has reserved concurrency (unless the operator opts out with
/// -1) and the API is throttled, so one tenant cannot take every Lambda of the account.
#[test]
fn reserved_concurrency_and_api_throttling_are_set() {
    let (t, _) = template();
    for (binary, param) in [
        ("countersign-messages", "MessagesConcurrency"),
        ("countersign-admin", "AdminConcurrency"),
        ("countersign-gateway", "GatewayConcurrency"),
    ] {
        let f = function(&t, binary);
        let reserved = scalars(&f["Properties"]["ReservedConcurrentExecutions"]);
        assert!(
            reserved.contains(&param.to_owned()),
            "{binary}: {reserved:?}"
        );
        let default = t["Parameters"][param]["Default"].as_i64().unwrap();
        assert!(default > 0, "{param} reserves by default");
    }
    let settings = &t["Resources"]["HttpApi"]["Properties"]["DefaultRouteSettings"];
    assert_eq!(
        scalars(&settings["ThrottlingRateLimit"]),
        vec!["ApiRateLimit".to_owned()]
    );
    assert_eq!(
        scalars(&settings["ThrottlingBurstLimit"]),
        vec!["ApiBurstLimit".to_owned()]
    );
}

/// Issue 13: the template's timeouts nest: a provider exchange and the turn's margin fit
/// in the function timeout, and "stuck" means longer than any function can run. The
/// function is told its timeout and checks the same at start.
#[test]
fn the_templates_timeouts_nest() {
    let (t, _) = template();
    let timeout = t["Globals"]["Function"]["Timeout"].as_i64().unwrap();
    let p = &t["Parameters"];
    let provider_max = p["ProviderTimeoutSeconds"]["MaxValue"].as_i64().unwrap();
    let margin = i64::try_from(countersign_messages_fn::TURN_MARGIN.as_secs()).unwrap();
    assert!(provider_max + margin <= timeout);
    let stuck_min = p["ExecutingStuckAfterSeconds"]["MinValue"]
        .as_i64()
        .unwrap();
    assert!(stuck_min > timeout);
    let f = function(&t, "countersign-messages");
    let told = &f["Properties"]["Environment"]["Variables"]["COUNTERSIGN_FUNCTION_TIMEOUT_SECS"];
    assert_eq!(told.as_str(), Some(timeout.to_string().as_str()));
    assert!(
        f["Properties"]["Timeout"].is_badvalue(),
        "the Globals timeout applies"
    );
}

/// Issue 13: `countersign bootstrap --signer-role-arn …` creates the key with the same
/// policy as the template: the same statements, actions, conditions and principals.
#[test]
fn the_bootstrap_key_policy_is_the_templates() {
    let (t, _) = template();
    let users = countersign_aws::bootstrap::KeyUsers {
        signer: "arn:aws:iam::123456789012:role/messages".into(),
        stream: Some("arn:aws:iam::123456789012:role/stream".into()),
        reader: Some("arn:aws:iam::123456789012:role/admin".into()),
        gateway: Some("arn:aws:iam::123456789012:role/gateway".into()),
        administrator: Some("arn:aws:iam::123456789012:role/deployer".into()),
    };
    let policy = countersign_aws::bootstrap::signing_key_policy(&users).unwrap();
    let principal = |p: &str| match p {
        "MessagesFunctionRole.Arn" | "arn:aws:iam::123456789012:role/messages" => "signer",
        "MessagesStreamFunctionRole.Arn" | "arn:aws:iam::123456789012:role/stream" => "stream",
        "AdminFunctionRole.Arn" | "arn:aws:iam::123456789012:role/admin" => "reader",
        "GatewayFunctionRole.Arn" | "arn:aws:iam::123456789012:role/gateway" => "gateway",
        "KeyAdministratorArn" | "arn:aws:iam::123456789012:role/deployer" => "administrator",
        "arn:${AWS::Partition}:iam::${AWS::AccountId}:root" | "arn:aws:iam::123456789012:root" => {
            "root"
        }
        other => panic!("unexpected principal {other}"),
    };
    let from_template: BTreeSet<(String, String, Vec<String>, Vec<String>)> =
        t["Resources"]["SigningKey"]["Properties"]["KeyPolicy"]["Statement"]
            .as_vec()
            .unwrap()
            .iter()
            .map(|s| {
                let mut actions = scalars(&s["Action"]);
                actions.sort();
                (
                    s["Sid"].as_str().unwrap().to_owned(),
                    // Every principal (the stream role signs beside the messages role).
                    scalars(&s["Principal"])
                        .iter()
                        .map(|p| principal(p))
                        .collect::<Vec<_>>()
                        .join(","),
                    actions,
                    scalars(&s["Condition"]),
                )
            })
            .collect();
    let as_list = as_list_inner;
    let from_bootstrap: BTreeSet<(String, String, Vec<String>, Vec<String>)> = policy["Statement"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let mut actions = as_list(&s["Action"]);
            actions.sort();
            (
                s["Sid"].as_str().unwrap().to_owned(),
                as_list(&s["Principal"]["AWS"])
                    .iter()
                    .map(|p| principal(p))
                    .collect::<Vec<_>>()
                    .join(","),
                actions,
                as_list(&s["Condition"]),
            )
        })
        .collect();
    assert_eq!(from_bootstrap, from_template);
}

fn as_list_inner(v: &serde_json::Value) -> Vec<String> {
    match v {
        serde_json::Value::String(s) => vec![s.clone()],
        serde_json::Value::Array(a) => a.iter().flat_map(as_list_inner).collect(),
        serde_json::Value::Object(o) => o.values().flat_map(as_list_inner).collect(),
        _ => Vec::new(),
    }
}

/// The statements of `f`'s policies that hold only under `condition` (`!If [condition,
/// statement, AWS::NoValue]`).
fn conditional_statements<'a>(f: &'a Yaml, condition: &str) -> Vec<&'a Yaml> {
    f["Properties"]["Policies"]
        .as_vec()
        .into_iter()
        .flatten()
        .flat_map(|p| p["Statement"].as_vec().into_iter().flatten())
        .filter_map(|s| s.as_vec())
        .filter(|branches| branches.first().and_then(Yaml::as_str) == Some(condition))
        .filter_map(|branches| branches.get(1))
        .collect()
}

/// Issue 14 (M-1): the messages function may invoke exactly the configured Bedrock
/// model, and read exactly the configured API key secret, each only when that adapter is
/// chosen; no other function may do either.
#[test]
fn m1_the_model_permissions_are_scoped_to_the_configured_model() {
    let (t, _) = template();
    let messages = function(&t, "countersign-messages");
    let bedrock = conditional_statements(messages, "UseBedrock");
    assert_eq!(bedrock.len(), 1);
    // Converse and, for the streamed answer (S-1), ConverseStream.
    assert_eq!(
        scalars(&bedrock[0]["Action"]),
        [
            "bedrock:InvokeModel",
            "bedrock:InvokeModelWithResponseStream"
        ]
    );
    assert_eq!(
        scalars(&bedrock[0]["Resource"]),
        ["arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/${ModelId}"]
    );
    let key = conditional_statements(messages, "HasModelApiKey");
    assert_eq!(key.len(), 1);
    assert_eq!(
        scalars(&key[0]["Action"]),
        ["secretsmanager:GetSecretValue"]
    );
    assert_eq!(scalars(&key[0]["Resource"]), ["ModelApiKeySecretArn"]);
    for binary in FUNCTIONS {
        let f = function(&t, binary);
        let unconditional = statements(&f["Properties"]["Policies"])
            .into_iter()
            .flat_map(|s| scalars(&s["Action"]))
            .any(|a| a.starts_with("bedrock:"));
        assert!(!unconditional, "{binary}: no unconditional Bedrock access");
        if binary != "countersign-messages" {
            assert!(conditional_statements(f, "UseBedrock").is_empty());
            assert!(conditional_statements(f, "HasModelApiKey").is_empty());
        }
    }
}

/// V-6: audit checkpoints have their own KMS key, with the action key's policy (only the
/// messages function signs), and every function is told its alias.
#[test]
fn v6_checkpoints_have_their_own_key() {
    let (t, _) = template();
    let r = &t["Resources"];
    assert_eq!(r["CheckpointKey"]["Type"].as_str(), Some("AWS::KMS::Key"));
    // The action key's statements (by Sid and actions), and the erasure worker's
    // receipts (N-3) besides.
    let purge_sids = [
        "PurgeFunctionSignsReceipts",
        "PurgeFunctionReadsThePublicKey",
    ];
    let shape = |key: &str| -> Vec<(String, Vec<String>)> {
        r[key]["Properties"]["KeyPolicy"]["Statement"]
            .as_vec()
            .unwrap()
            .iter()
            .filter(|s| !purge_sids.contains(&s["Sid"].as_str().unwrap_or("")))
            .map(|s| (s["Sid"].as_str().unwrap().to_owned(), scalars(&s["Action"])))
            .collect()
    };
    assert_eq!(shape("CheckpointKey"), shape("SigningKey"));
    let signers: Vec<Vec<String>> = r["CheckpointKey"]["Properties"]["KeyPolicy"]["Statement"]
        .as_vec()
        .unwrap()
        .iter()
        .filter(|s| scalars(&s["Action"]).iter().any(|a| a == "kms:Sign"))
        .map(|s| scalars(&s["Principal"]))
        .collect();
    assert_eq!(
        signers,
        vec![
            vec!["MessagesFunctionRole.Arn".to_owned()],
            vec!["PurgeFunctionRole.Arn".to_owned()]
        ]
    );
    assert_eq!(
        scalars(&r["CheckpointKeyAlias"]["Properties"]["TargetKeyId"]),
        ["CheckpointKey"]
    );
    assert_eq!(
        scalars(
            &t["Globals"]["Function"]["Environment"]["Variables"]["COUNTERSIGN_CHECKPOINT_KEY"]
        ),
        ["CheckpointKeyAlias"]
    );
}

/// O-1: the alarms seed 000 asks for are in the template, each on a metric the code emits
/// (or AWS's own), with its threshold a parameter, notifying the optional SNS topic; the
/// dashboard shows the same signals.
#[test]
fn o1_alarms_and_the_dashboard_watch_what_the_seed_asks() {
    let (t, _) = template();
    let resources = &t["Resources"];
    let emitted = [
        "../../shared/tools/src/registry.rs",
        "../../shared/chat/src/metrics.rs",
        "../../shared/http/src/error.rs",
    ]
    .map(|p| std::fs::read_to_string(format!("{}/{p}", env!("CARGO_MANIFEST_DIR"))).unwrap())
    .join("\n");
    let alarms = [
        (
            "ToolErrorsAlarm",
            "mcp_tool_errors_total",
            Some("AlarmToolErrors"),
        ),
        (
            "UnknownOutcomesAlarm",
            "proposals_total",
            Some("AlarmUnknownOutcomes"),
        ),
        (
            "FailedOutcomesAlarm",
            "proposals_total",
            Some("AlarmFailedOutcomes"),
        ),
        (
            "ConfirmLatencyAlarm",
            "confirm_duration_seconds",
            Some("AlarmConfirmP99Seconds"),
        ),
        (
            "RateLimitedAlarm",
            "rate_limited_total",
            Some("AlarmRateLimited"),
        ),
        ("FunctionErrorsAlarm", "Errors", Some("AlarmFunctionErrors")),
        ("FunctionThrottlesAlarm", "Throttles", None),
        ("TableThrottlesAlarm", "WriteThrottleEvents", None),
    ];
    for (name, metric, threshold) in alarms {
        let a = &resources[name];
        assert_eq!(a["Type"].as_str(), Some("AWS::CloudWatch::Alarm"), "{name}");
        let props = scalars(&a["Properties"]);
        assert!(props.iter().any(|s| s == metric), "{name} watches {metric}");
        if a["Properties"]["Namespace"].as_str() == Some("Countersign") {
            assert!(
                emitted.contains(&format!("\"{metric}\"")),
                "{metric} is emitted by the code"
            );
        }
        match threshold {
            Some(p) => {
                assert!(
                    scalars(&a["Properties"]["Threshold"])
                        .iter()
                        .any(|s| s == p),
                    "{name}"
                );
                assert!(t["Parameters"][p]["Default"].as_i64().is_some(), "{p}");
            }
            None => assert_eq!(a["Properties"]["Threshold"].as_i64(), Some(1), "{name}"),
        }
        assert!(
            scalars(&a["Properties"]["AlarmActions"])
                .iter()
                .any(|s| s == "AlarmTopicArn"),
            "{name} notifies the topic when one is given"
        );
    }
    let body = scalars(&resources["OperationsDashboard"]["Properties"]["DashboardBody"]).join("");
    for metric in [
        "mcp_tool_duration_seconds",
        "error_type",
        "proposals_total",
        "confirm_duration_seconds",
        "rate_limited_total",
        "Throttles",
        "Errors",
        "ReadThrottleEvents",
    ] {
        assert!(body.contains(metric), "the dashboard shows {metric}");
    }
}

/// S-1 (decision 0046): the stream function is the messages function's code (N-8: with its
/// own role), run
/// in streaming mode behind a function URL in RESPONSE_STREAM mode (no IAM auth: the widget
/// JWT is checked by the function), with the same settings, its own reserved concurrency
/// (a function URL has no API throttling), no HTTP API route, and its URL as an output.
#[test]
fn s1_the_stream_function_streams_the_messages_functions_code() {
    let (t, _) = template();
    let stream = &t["Resources"]["MessagesStreamFunction"];
    let messages = &t["Resources"]["MessagesFunction"];
    assert_eq!(
        stream["Metadata"]["BuildProperties"]["Binary"].as_str(),
        Some("countersign-messages")
    );
    // N-8: its own role, narrower than the messages function's (checked below).
    assert!(stream["Properties"]["Role"].is_badvalue());
    assert!(!stream["Properties"]["Policies"].is_badvalue());
    let url = &stream["Properties"]["FunctionUrlConfig"];
    assert_eq!(url["InvokeMode"].as_str(), Some("RESPONSE_STREAM"));
    assert_eq!(url["AuthType"].as_str(), Some("NONE"));
    assert!(
        stream["Properties"]["Events"].is_badvalue(),
        "no HTTP API route"
    );
    assert_eq!(
        template_env(&t, stream),
        template_env(&t, messages),
        "the same settings"
    );
    let vars = |f: &Yaml| {
        f["Properties"]["Environment"]["Variables"]["COUNTERSIGN_RESPONSE_STREAMING"]
            .as_str()
            .map(str::to_owned)
    };
    assert_eq!(vars(stream).as_deref(), Some("1"));
    assert_eq!(vars(messages).as_deref(), Some("0"));
    for (k, v) in messages["Properties"]["Environment"]["Variables"]
        .as_hash()
        .unwrap()
    {
        if k.as_str() != Some("COUNTERSIGN_RESPONSE_STREAMING") {
            assert_eq!(
                &stream["Properties"]["Environment"]["Variables"][k.as_str().unwrap()],
                v,
                "{k:?}"
            );
        }
    }
    assert!(
        scalars(&stream["Properties"]["ReservedConcurrentExecutions"])
            .contains(&"StreamConcurrency".to_owned())
    );
    assert!(
        scalars(&t["Outputs"]["StreamUrl"]["Value"])
            .iter()
            .any(|v| v.contains("MessagesStreamFunctionUrl"))
    );
}

/// The function alarms watch every function of the template: the streamed-answer function
/// (S-1) was added without being watched once.
#[test]
fn o_the_function_alarms_watch_every_function() {
    let (t, _) = template();
    let resources = t["Resources"].as_hash().unwrap();
    let functions: Vec<&str> = resources
        .iter()
        .filter(|(_, r)| r["Type"].as_str() == Some("AWS::Serverless::Function"))
        .map(|(k, _)| k.as_str().unwrap())
        .collect();
    assert!(functions.len() >= 4, "{functions:?}");
    for alarm in ["FunctionErrorsAlarm", "FunctionThrottlesAlarm"] {
        let watched = scalars(&t["Resources"][alarm]["Properties"]["Metrics"]);
        for f in &functions {
            assert!(watched.iter().any(|s| s == f), "{alarm} watches {f}");
        }
    }
}

/// R-1 (decision 0052): the purge runs once a day, one run at a time, with the time its
/// run budget needs, and reaches no secret; N-3 (decision 0062): the same function runs
/// the erasure worker once a minute (its event asks for it), within a budget that ends
/// before the next.
#[test]
fn r1_the_purge_runs_daily_one_run_at_a_time() {
    let (t, _) = template();
    let f = function(&t, "countersign-purge");
    let events = f["Properties"]["Events"].as_hash().unwrap();
    assert_eq!(events.len(), 2);
    let event = |name: &str| &f["Properties"]["Events"][name];
    let input = |name: &str| -> serde_json::Value {
        event(name)["Properties"]["Input"]
            .as_str()
            .map_or(serde_json::Value::Null, |i| {
                serde_json::from_str(i).unwrap()
            })
    };
    let daily = event("Daily");
    assert_eq!(daily["Type"].as_str(), Some("ScheduleV2"));
    assert_eq!(
        daily["Properties"]["ScheduleExpression"].as_str(),
        Some("rate(1 day)")
    );
    assert!(!countersign_purge_fn::wants_erasures(&input("Daily")));
    let erasures = event("Erasures");
    assert_eq!(erasures["Type"].as_str(), Some("ScheduleV2"));
    assert_eq!(
        erasures["Properties"]["ScheduleExpression"].as_str(),
        Some("rate(1 minute)")
    );
    assert!(countersign_purge_fn::wants_erasures(&input("Erasures")));
    assert!(countersign_purge_fn::WORKER_BUDGET.as_secs() < 60);
    assert_eq!(
        f["Properties"]["ReservedConcurrentExecutions"].as_i64(),
        Some(1)
    );
    let timeout = f["Properties"]["Timeout"].as_i64().unwrap();
    let budget = i64::try_from(countersign_purge_fn::RUN_BUDGET.as_secs()).unwrap();
    assert!(
        budget + 60 <= timeout,
        "a run stops a minute before its timeout"
    );
    let secrets = statements(&f["Properties"]["Policies"])
        .into_iter()
        .flat_map(|s| scalars(&s["Action"]))
        .any(|a| a.starts_with("secretsmanager:"));
    assert!(!secrets);
}

/// A key policy's statements as the JSON `key_policy` reads (principals as their template
/// names: `!GetAtt X.Arn` is `X.Arn`, an `!If` its three parts).
fn key_policy_json(t: &Yaml, key: &str) -> String {
    let statements: Vec<serde_json::Value> =
        t["Resources"][key]["Properties"]["KeyPolicy"]["Statement"]
            .as_vec()
            .unwrap()
            .iter()
            .map(|s| {
                serde_json::json!({
                    "Sid": s["Sid"].as_str().unwrap(),
                    "Effect": s["Effect"].as_str().unwrap(),
                    "Principal": {"AWS": scalars(&s["Principal"])},
                    "Action": scalars(&s["Action"]),
                    "Resource": "*",
                })
            })
            .collect();
    serde_json::json!({"Version": "2012-10-17", "Statement": statements}).to_string()
}

/// N-8 (security review N7): no key policy lets anyone grant the key's use
/// (`kms:CreateGrant`: a grant is a signer no policy names), and only the key
/// administrator (`KeyAdministratorArn`, required: never the account) may change the
/// policy or move the alias; only the named roles sign.
#[test]
fn n8_no_key_policy_hands_its_power_to_iam() {
    use countersign_domain::key_policy::principals_granted;
    let (t, _) = template();
    // Decision 0081: the key administrator is required; the account never may.
    let administrator: BTreeSet<String> = ["KeyAdministratorArn"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    for key in ["SigningKey", "CheckpointKey", "SubjectKey"] {
        let policy = key_policy_json(&t, key);
        assert!(
            principals_granted(&policy, "kms:CreateGrant")
                .unwrap()
                .is_empty(),
            "{key}: CreateGrant is granted"
        );
        for action in ["kms:PutKeyPolicy", "kms:UpdateAlias"] {
            assert_eq!(
                principals_granted(&policy, action).unwrap(),
                administrator,
                "{key}: {action}"
            );
        }
    }
    let signers = |key: &str| principals_granted(&key_policy_json(&t, key), "kms:Sign").unwrap();
    assert!(signers("SubjectKey").is_empty());
    assert_eq!(
        signers("SigningKey"),
        ["MessagesFunctionRole.Arn", "MessagesStreamFunctionRole.Arn"]
            .into_iter()
            .map(str::to_owned)
            .collect()
    );
}

/// The write allow-list of a role (the `LeadingKeys` patterns of its conditioned Allow),
/// and its Deny statements' patterns.
fn write_scope(f: &Yaml) -> (Vec<String>, Vec<Vec<String>>) {
    let all = statements(&f["Properties"]["Policies"]);
    let allowed = all
        .iter()
        .filter(|s| s["Effect"].as_str() == Some("Allow"))
        .filter(|s| {
            scalars(&s["Action"])
                .iter()
                .any(|a| a == "dynamodb:PutItem")
        })
        .flat_map(|s| scalars(&s["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]))
        .collect();
    let denied = all
        .iter()
        .filter(|s| s["Effect"].as_str() == Some("Deny"))
        .map(|s| scalars(&s["Condition"]))
        .collect();
    (allowed, denied)
}

/// IAM's `StringLike` (`*` any run, `?` one character).
fn like(pattern: &str, value: &str) -> bool {
    fn go(p: &[u8], v: &[u8]) -> bool {
        match (p.first(), v.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], v) || (!v.is_empty() && go(p, &v[1..])),
            (Some(b'?'), Some(_)) => go(&p[1..], &v[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &v[1..]),
            _ => false,
        }
    }
    go(pattern.as_bytes(), value.as_bytes())
}

/// N-8 (security review N8), I-1: every function's role — the internet-facing ones (the
/// messages function's, the stream function's and the gateway's), the admin's and the
/// purge's — writes only into partitions the adapter builds,
/// never an admin key's (an explicit Deny, so no Allow added later opens it) nor the
/// tenant registry; the stream function and the gateway never a tenant's own partition
/// (tenant item, MCP settings, widget keys), only its index shards.
#[test]
fn n8_each_internet_facing_role_writes_only_its_partitions() {
    let (t, _) = template();
    let admin_key = "ADMINKEY#0123abcd";
    let tenant_item = "TENANT#ten_01JDZ6Y5X1QW9T3V7N2K4M8P0R";
    let shard = "TENANT#ten_01JDZ6Y5X1QW9T3V7N2K4M8P0R#07";
    let resources = t["Resources"].as_hash().unwrap();
    // I-1 (decision 0081): the admin and purge roles too, narrowed to what they write.
    for (name, own_partition) in [
        ("MessagesFunction", true),
        ("MessagesStreamFunction", false),
        ("GatewayFunction", false),
        ("AdminFunction", true),
        ("PurgeFunction", true),
    ] {
        let f = resources
            .iter()
            .find(|(k, _)| k.as_str() == Some(name))
            .map(|(_, v)| v)
            .unwrap();
        assert!(
            f["Properties"]["Role"].is_badvalue(),
            "{name} has its own role"
        );
        let (allowed, denied) = write_scope(f);
        assert!(!allowed.is_empty(), "{name}: writes are scoped");
        for pattern in &allowed {
            let prefix = pattern.split('*').next().unwrap();
            assert!(
                countersign_aws::dynamo::PARTITIONS
                    .iter()
                    .any(|(p, _)| prefix.starts_with(p)),
                "{name}: {pattern} is no partition the adapter builds"
            );
        }
        let may = |pk: &str| allowed.iter().any(|p| like(p, pk));
        assert!(!may(admin_key), "{name} may write an admin key");
        assert!(!may("TENANTS"), "{name} may write the tenant registry");
        assert!(
            denied.iter().any(|d| d.iter().any(|p| like(p, admin_key))),
            "{name}: no explicit Deny of the admin keys"
        );
        assert!(may(shard), "{name} writes the index shards");
        assert_eq!(
            may(tenant_item),
            own_partition,
            "{name}: the tenant's own partition"
        );
        if !own_partition {
            let denies_own = denied
                .iter()
                .any(|d| d.iter().any(|p| p == "TENANT#*") && d.iter().any(|p| p == "TENANT#*#*"));
            assert!(denies_own, "{name}: no Deny of the tenant's own partition");
        }
    }
}
