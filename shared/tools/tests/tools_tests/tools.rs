//! The registry's rules (G-1 … G-14), tool by tool. G-rules are named in the test names.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    unreachable_pub
)]

use countersign_domain::config::{UrlPolicy, validate_mcp_config};
use countersign_domain::conversation::{Case, CaseStatus, Principal};
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::{ActionId, CaseId, MessageId, OperationName, TenantId, UserId};
use countersign_domain::ports::StoredMcpConfig;
use countersign_domain::proposal::{Presentation, Proposal, ProposalState};
use countersign_domain::text::SafeText;
use countersign_domain::texts::Language;
use countersign_domain::time::Timestamp;
use countersign_testkit::MemoryStore;
use countersign_tools::builtins::{self, CallContext, Services};
use countersign_tools::catalog;
use countersign_tools::errors::{ToolError, code};
use countersign_tools::registry::{Annotations, Registry, RegistryError, ToolSpec};
use serde_json::{Value, json};
use std::sync::Arc;

const ULID: &str = "01JDZ6Y5X1QW9T3V7N2K4M8P0R";

fn tenant() -> TenantId {
    TenantId::from_ulid_text(ULID).unwrap()
}
fn case_id() -> CaseId {
    CaseId::from_ulid_text(ULID).unwrap()
}
fn now() -> Timestamp {
    Timestamp::from_unix_seconds(1_795_986_900).unwrap()
}

fn principal() -> Principal {
    Principal {
        tenant: tenant(),
        user: UserId::parse("driver-42").unwrap(),
    }
}

fn proposal() -> Proposal {
    let summary = "Move session 4812 to car GR86.";
    Proposal {
        action_id: ActionId::parse("act_1").unwrap(),
        tenant: tenant(),
        user: principal().user,
        case: case_id(),
        operation: OperationName::parse("reassign_session_car").unwrap(),
        summary: SafeText::check(summary).unwrap(),
        summary_hash: Sha256Hex::digest(summary),
        arguments_hash: Sha256Hex::digest("{}"),
        expires_at: now().plus_seconds(240),
        prepared_at: now(),
        state: ProposalState::PendingConfirmation,
        presented: Presentation {
            replaced: None,
            first_served_at: None,
            message_id: MessageId::from_ulid_text(ULID).unwrap(),
        },
        confirmation_message_id: None,
        confirm_attempt: None,
        config_version: 1,
        secret_version: None,
        server_url: None,
        audience: None,
        needs_passkey: false,
        prepared_outside: false,
    }
}

/// A context whose stores hold a conversation with a pending proposal and an enabled
/// policy (`fail` makes every store call fail).
fn ctx(fail: bool, enabled: bool) -> CallContext {
    let config = validate_mcp_config(
        &json!({
            "serverUrl": "https://mcp.trackshare.example.com/mcp",
            "serviceToken": "svc_123456",
            "allowedTools": ["get_user_uploads"],
            "actionPolicy": {"contractVersion": 1, "enabled": enabled, "operations": ["reassign_session_car", "change_date"]}
        }),
        UrlPolicy::default(),
    )
    .unwrap();
    let store = Arc::new(MemoryStore::default());
    let case = Case {
        id: case_id(),
        tenant: tenant(),
        user: principal().user,
        status: CaseStatus::Open,
        created_at: now(),
    };
    store.seed_conversation(case, Language::En, Some(proposal()));
    store.seed_mcp_config(
        &tenant(),
        StoredMcpConfig {
            config,
            version: 1,
            actions_version: 1,
            secret_version: "v1".into(),
        },
    );
    store.faults.set_down(fail);
    CallContext {
        principal: principal(),
        case: case_id(),
        services: Services {
            conversations: store.clone(),
            tenants: store,
            actions: None,
        },
        consultations: Vec::new(),
    }
}

fn call(name: &str, args: Value) -> countersign_tools::envelope::Sealed {
    call_with(ctx(false, true), name, args)
}

fn call_with(c: CallContext, name: &str, args: Value) -> countersign_tools::envelope::Sealed {
    let r = builtins::registry().unwrap();
    pollster::block_on(r.call(c, name, args)).expect("a built-in")
}

/// Each built-in tool with arguments that succeed (where it can succeed here).
fn good_args(name: &str) -> Value {
    match name {
        "describe_tool" => json!({"name": "list_operations"}),
        "prepare_action" => {
            json!({"operation": "reassign_session_car", "arguments": {"sessionId": 4812}})
        }
        _ => json!({}),
    }
}

/// G-1, G-3, G-13: every answer of every built-in: text ≡ structuredContent,
/// isError == !ok, meta = {tool, version}.
#[test]
fn g1_g13_every_builtin_answer_is_sealed() {
    let r = builtins::registry().unwrap();
    for d in r.descriptors() {
        for args in [good_args(d.spec.name), json!({"bogus": 1})] {
            let s = call(d.spec.name, args);
            // The text is the envelope written as a JSON value is (members in key order),
            // and the result's structuredContent is that same envelope.
            let parsed = serde_json::from_str::<Value>(&s.text).unwrap();
            assert_eq!(serde_json::to_string(&parsed).unwrap(), s.text);
            let result = serde_json::to_value(s.to_call_tool_result()).unwrap();
            assert_eq!(result["structuredContent"], parsed);
            assert_eq!(s.is_error, !s.structured()["ok"].as_bool().unwrap());
            assert_eq!(
                s.structured()["meta"],
                json!({"tool": d.spec.name, "version": d.spec.version})
            );
        }
    }
}

/// G-2, G-13: a panicking handler is sealed as INTERNAL_ERROR with an errorId.
#[test]
fn g2_panics_are_sealed() {
    let mut r: Registry<()> = Registry::new();
    let spec = ToolSpec {
        name: "boom",
        title: "Boom",
        description: "Returns `data`.",
        version: "2.1.0",
        annotations: Annotations {
            read_only_hint: true,
            destructive_hint: false,
            idempotent_hint: true,
            open_world_hint: false,
        },
    };
    r.register(spec, |_, _: builtins::NoArgs| async move {
        if true {
            panic!("kaboom with secret 10.0.0.9");
        }
        Ok::<_, ToolError>(json!({}))
    })
    .unwrap();
    let s = pollster::block_on(r.call((), "boom", json!({}))).unwrap();
    assert!(s.is_error);
    assert_eq!(s.structured()["error"]["code"], code::INTERNAL_ERROR);
    assert_eq!(
        s.structured()["error"]["errorId"].as_str().map(str::len),
        Some(26)
    );
    assert_eq!(
        s.structured()["meta"],
        json!({"tool": "boom", "version": "2.1.0"})
    );
    assert!(!s.text.contains("kaboom") && !s.text.contains("10.0.0.9"));
}

/// G-3: the registry refuses duplicate names and empty versions.
#[test]
fn g3_registry_refuses_duplicates_and_missing_versions() {
    let mut r: Registry<CallContext> = builtins::registry().unwrap();
    let again = r.register(builtins::DESCRIBE_TOOL, |_, _: builtins::NoArgs| async {
        Ok::<_, ToolError>(json!({}))
    });
    assert_eq!(again, Err(RegistryError::Duplicate("describe_tool")));
    let mut spec = builtins::DESCRIBE_TOOL;
    spec.name = "versionless";
    spec.version = " ";
    assert_eq!(
        r.register(spec, |_, _: builtins::NoArgs| async {
            Ok::<_, ToolError>(json!({}))
        }),
        Err(RegistryError::NoVersion("versionless"))
    );
}

/// G-3: `describe_tool` returns the published descriptor, version included, for every tool.
#[test]
fn g3_describe_tool_returns_the_published_descriptor() {
    let r = builtins::registry().unwrap();
    for d in r.descriptors() {
        let s = call("describe_tool", json!({"name": d.spec.name}));
        assert!(!s.is_error, "{}", s.text);
        assert_eq!(s.structured()["data"], d.published());
        assert_eq!(s.structured()["data"]["_meta"]["version"], d.spec.version);
    }
    let missing = call("describe_tool", json!({"name": "nope"}));
    assert_eq!(missing.error_type(), code::NOT_FOUND);
}

/// G-12: unknown arguments are refused with VALIDATION_ERROR naming the field, for every
/// built-in alike; so are missing and mistyped ones.
#[test]
fn g12_unknown_missing_and_mistyped_arguments_name_the_field() {
    let r = builtins::registry().unwrap();
    for d in r.descriptors() {
        let mut args = good_args(d.spec.name);
        args["confirmed"] = json!(true);
        let s = call(d.spec.name, args);
        assert_eq!(s.error_type(), code::VALIDATION_ERROR, "{}", d.spec.name);
        assert_eq!(
            s.structured()["error"]["details"]["field"],
            "confirmed",
            "{}",
            d.spec.name
        );
    }
    let s = call("describe_tool", json!({}));
    assert_eq!(s.structured()["error"]["details"]["field"], "name");
    let s = call("describe_tool", json!({"name": 5}));
    assert_eq!(s.structured()["error"]["details"]["field"], "name");
    let s = call("prepare_action", json!({"operation": "x", "arguments": []}));
    assert_eq!(s.structured()["error"]["details"]["field"], "arguments");
    let s = call("list_operations", json!([1]));
    assert_eq!(s.error_type(), code::VALIDATION_ERROR);
}

/// G-10: every answer, success and error, validates against the tool's published
/// outputSchema.
#[test]
fn g10_every_answer_validates_against_its_output_schema() {
    let r = builtins::registry().unwrap();
    for d in r.descriptors() {
        let validator = jsonschema::validator_for(&d.output_schema).unwrap();
        let answers = [
            call(d.spec.name, good_args(d.spec.name)),
            call(d.spec.name, json!({"bogus": 1})),
            call_with(ctx(true, true), d.spec.name, good_args(d.spec.name)),
        ];
        for s in answers {
            let errors: Vec<String> = validator
                .iter_errors(&s.structured())
                .map(|e| e.to_string())
                .collect();
            assert!(
                errors.is_empty(),
                "{}: {} -> {errors:?}",
                d.spec.name,
                s.text
            );
        }
        // And the schema is not vacuous: a wrong meta fails it.
        let mut wrong = call(d.spec.name, good_args(d.spec.name)).structured();
        wrong["meta"]["version"] = json!("0.0.0");
        assert!(!validator.is_valid(&wrong), "{}", d.spec.name);
    }
}

/// G-11: each description speaks of the enveloped answer: every top-level property of
/// `data` is named as `data.<property>`.
#[test]
fn g11_descriptions_describe_the_enveloped_answer() {
    let r = builtins::registry().unwrap();
    for d in r.descriptors() {
        let data = &d.output_schema["properties"]["data"];
        let props = data
            .get("properties")
            .and_then(Value::as_object)
            .expect("data schema has properties");
        for p in props.keys() {
            assert!(
                d.spec.description.contains(&format!("`data.{p}")),
                "{}: description must mention `data.{p}`",
                d.spec.name
            );
        }
    }
}

/// `prepare_action` is published with readOnlyHint false; the others are read-only.
#[test]
fn a12_prepare_action_is_not_read_only() {
    let r = builtins::registry().unwrap();
    let prepare = r.get("prepare_action").unwrap().published();
    assert_eq!(prepare["annotations"]["readOnlyHint"], false);
    for name in ["describe_tool", "list_operations", "action_status"] {
        assert_eq!(
            r.get(name).unwrap().published()["annotations"]["readOnlyHint"],
            true
        );
    }
    // Without a preparer wired in, the tool says so instead of pretending.
    let s = call("prepare_action", good_args("prepare_action"));
    assert_eq!(s.error_type(), code::TOOL_ERROR);
}

/// `list_operations` offers only configured and enabled operations.
#[test]
fn a2_list_operations_offers_only_enabled_operations() {
    let s = call("list_operations", json!({}));
    assert_eq!(
        s.structured()["data"],
        json!({"items": [{"operation": "reassign_session_car"}, {"operation": "change_date"}], "actionsEnabled": true})
    );
    let s = call_with(ctx(false, false), "list_operations", json!({}));
    assert_eq!(
        s.structured()["data"],
        json!({"items": [], "actionsEnabled": false})
    );
}

/// `action_status` reads the local proposal, and store failures are classified (G-5).
#[test]
fn action_status_reads_the_local_proposal() {
    let s = call("action_status", json!({}));
    assert_eq!(
        s.structured()["data"]["proposal"],
        json!({"actionId": "act_1", "operation": "reassign_session_car", "state": "pending_confirmation", "expiresAt": "2026-11-29T21:19:00Z"})
    );
    let s = call_with(ctx(true, true), "action_status", json!({}));
    assert_eq!(s.error_type(), code::SERVICE_UNAVAILABLE);
    assert_eq!(s.structured()["error"]["retryable"], true);
    assert!(
        !s.text.contains("planned fault"),
        "internal cause leaked: {}",
        s.text
    );
}

/// G-4: the snapshot matches the registry; a changed contract without a version bump, or
/// a changed schema, fails naming the tool and both hashes.
#[test]
fn g4_snapshot_guards_contracts_and_schemas() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let file = std::fs::read_to_string(root.join(catalog::SNAPSHOT_PATH)).unwrap();
    let r = builtins::registry().unwrap();
    let problems = catalog::check_snapshot(&r, &file);
    assert!(
        problems.is_empty(),
        "{problems:#?}\nregenerate with: cargo run -p countersign-tools --bin tools-catalog"
    );

    // A description edited without a version bump.
    let mut edited: Registry<()> = Registry::new();
    let mut spec = builtins::LIST_OPERATIONS;
    spec.description =
        "Lists operations. Returns `data.items` and `data.actionsEnabled`, now reworded.";
    edited
        .register(spec, |_, _: builtins::NoArgs| async {
            Ok::<_, ToolError>(json!({}))
        })
        .unwrap();
    let mut original: Registry<()> = Registry::new();
    original
        .register(builtins::LIST_OPERATIONS, |_, _: builtins::NoArgs| async {
            Ok::<_, ToolError>(json!({}))
        })
        .unwrap();
    let old = catalog::snapshot(&original);
    let problems = catalog::check_snapshot(&edited, &old);
    let old_contract = original
        .get("list_operations")
        .unwrap()
        .contract_fingerprint();
    let new_contract = edited
        .get("list_operations")
        .unwrap()
        .contract_fingerprint();
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("list_operations: contract changed")
                && p.contains(&old_contract)
                && p.contains(&new_contract)),
        "{problems:#?}"
    );

    // A changed input schema.
    let mut changed: Registry<()> = Registry::new();
    changed
        .register(
            builtins::LIST_OPERATIONS,
            |_, _: builtins::DescribeToolArgs| async { Ok::<_, ToolError>(json!({})) },
        )
        .unwrap();
    let problems = catalog::check_snapshot(&changed, &old);
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("list_operations: input schema changed")),
        "{problems:#?}"
    );
}

/// G-14: docs/tools.md is generated from the registry and current.
#[test]
fn g14_tool_docs_are_current() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let file = std::fs::read_to_string(root.join(catalog::DOCS_PATH)).unwrap();
    let r = builtins::registry().unwrap();
    assert!(
        file == catalog::markdown(&r),
        "docs/tools.md is stale; regenerate with: cargo run -p countersign-tools --bin tools-catalog"
    );
}

/// G-8: every call records mcp_tool_duration_seconds{tool, error_type}, with the same
/// spelling as the envelope's code.
#[test]
fn g8_duration_metric_has_tool_and_error_type_labels() {
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        call("list_operations", json!({}));
        call("describe_tool", json!({"bogus": true}));
    });
    let mut seen: Vec<(String, String, usize)> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(k, _, _, _)| k.key().name() == "mcp_tool_duration_seconds")
        .map(|(k, _, _, v)| {
            let label = |n: &str| {
                k.key()
                    .labels()
                    .find(|l| l.key() == n)
                    .map(|l| l.value().to_owned())
                    .unwrap_or_default()
            };
            let n = match v {
                DebugValue::Histogram(h) => h.len(),
                _ => 0,
            };
            (label("tool"), label("error_type"), n)
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        vec![
            ("describe_tool".into(), code::VALIDATION_ERROR.into(), 1),
            ("list_operations".into(), "none".into(), 1)
        ]
    );
}
