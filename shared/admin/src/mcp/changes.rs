//! What a save changes (C-8, L-1): whether the stored fields, and the action-relevant
//! ones, are the same, and the audit record's list of changed fields.

use super::view::names;
use countersign_domain::config::McpConfig;
use countersign_domain::pinning;
use countersign_domain::ports::StoredMcpConfig;
use serde_json::{Value, json};

/// C-8: whether the action-relevant fields are equal (URL, policy, audience; the token
/// is compared apart).
pub(super) fn same_action_fields(old: &McpConfig, new: &McpConfig) -> bool {
    old.server_url == new.server_url
        && old.action_policy == new.action_policy
        && old.audience == new.audience
}

/// Whether every stored field is equal (the token is compared apart).
pub(super) fn same_fields(old: &McpConfig, new: &McpConfig) -> bool {
    same_action_fields(old, new)
        && old.allowed_tools == new.allowed_tools
        && old.approved == new.approved
}

/// How many fields a configuration's audit record compares.
const AUDITED: usize = 8;

/// The audited fields of a configuration, by name.
fn audited_fields(c: &StoredMcpConfig) -> [(&'static str, Value); AUDITED] {
    let policy = &c.config.action_policy;
    let approved: serde_json::Map<String, Value> = c
        .config
        .approved
        .iter()
        .map(|(tool, form)| (tool.clone(), json!(pinning::fingerprint(form))))
        .collect();
    [
        ("serverUrl", json!(c.config.server_url.as_str())),
        ("audience", json!(c.config.audience)),
        ("allowedTools", json!(names(&c.config.allowed_tools))),
        ("actionPolicy.enabled", json!(policy.enabled)),
        ("actionPolicy.operations", json!(names(&policy.operations))),
        (
            "actionPolicy.stepUp",
            json!(names(&policy.step_up.iter().collect::<Vec<_>>())),
        ),
        (
            "actionPolicy.stepUpFallback",
            json!(policy.step_up_fallback),
        ),
        ("approvedTools", Value::Object(approved)),
    ]
}

/// What a PUT or DELETE changed: each changed field with its old and new value, the
/// service token only as `{"changed": true}`, and the versions.
pub(super) fn config_changes(
    old: Option<&StoredMcpConfig>,
    new: Option<&StoredMcpConfig>,
    token_changed: bool,
) -> Value {
    let before = old.map(audited_fields);
    let after = new.map(audited_fields);
    let mut changes = serde_json::Map::new();
    for i in 0..AUDITED {
        let field = |f: &Option<[(&'static str, Value); AUDITED]>| f.as_ref().map(|f| f[i].clone());
        let (from, to) = (field(&before), field(&after));
        let name = from.as_ref().or(to.as_ref()).map_or("", |(n, _)| *n);
        let (from, to) = (
            from.map_or(Value::Null, |f| f.1),
            to.map_or(Value::Null, |f| f.1),
        );
        if from != to {
            changes.insert(name.to_owned(), json!({"from": from, "to": to}));
        }
    }
    if token_changed {
        changes.insert("serviceToken".into(), json!({"changed": true}));
    }
    let versions = json!({"from": old.map(|c| c.version), "to": new.map(|c| c.version)});
    changes.insert("version".into(), versions);
    Value::Object(changes)
}
