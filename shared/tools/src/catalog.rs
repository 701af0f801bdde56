//! Files generated from the registry: the contract snapshot (G-4) and the tool
//! documentation (G-14). `cargo run -p countersign-tools --bin tools-catalog` rewrites
//! both; tests fail when either is stale.

use crate::registry::{Registry, ToolDescriptor};
use serde_json::{Value, json};

/// Where the snapshot lives, relative to the workspace root.
pub const SNAPSHOT_PATH: &str = "tests/snapshots/mcp-tools.json";
/// Where the generated documentation lives, relative to the workspace root.
pub const DOCS_PATH: &str = "docs/tools.md";

/// One snapshot line per tool: `version`, `schema`, `contract` (G-4).
pub fn snapshot_entry(d: &ToolDescriptor) -> Value {
    json!({"version": d.spec.version, "schema": d.schema_fingerprint(), "contract": d.contract_fingerprint()})
}

/// The snapshot file: a JSON object with one line per tool, sorted by name.
pub fn snapshot<C: Clone + Send + Sync + 'static>(r: &Registry<C>) -> String {
    let lines: Vec<String> = r
        .descriptors()
        .map(|d| format!("  {}: {}", Value::from(d.spec.name), snapshot_entry(d)))
        .collect();
    format!("{{\n{}\n}}\n", lines.join(",\n"))
}

/// Compares the registry with a snapshot. Returns one message per problem, naming the
/// tool and both hashes.
pub fn check_snapshot<C: Clone + Send + Sync + 'static>(
    r: &Registry<C>,
    snapshot: &str,
) -> Vec<String> {
    let old: serde_json::Map<String, Value> = match serde_json::from_str(snapshot) {
        Ok(Value::Object(m)) => m,
        _ => {
            return vec![format!(
                "{SNAPSHOT_PATH} is not a JSON object; regenerate it"
            )];
        }
    };
    let mut problems = Vec::new();
    for d in r.descriptors() {
        let name = d.spec.name;
        let Some(o) = old.get(name) else {
            problems.push(format!(
                "{name}: new tool, not in the snapshot; regenerate it"
            ));
            continue;
        };
        let (schema, contract) = (d.schema_fingerprint(), d.contract_fingerprint());
        let field = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        if field("contract") != contract && field("version") == d.spec.version {
            problems.push(format!(
                "{name}: contract changed ({} -> {contract}) but version {} did not; bump the version",
                field("contract"),
                d.spec.version
            ));
        }
        if field("schema") != schema {
            problems.push(format!("{name}: input schema changed ({} -> {schema}); regenerate the snapshot deliberately", field("schema")));
        }
        if field("version") != d.spec.version || field("contract") != contract {
            problems.push(format!(
                "{name}: snapshot is stale (version {} -> {}, contract {} -> {contract}); regenerate it",
                field("version"),
                d.spec.version,
                field("contract")
            ));
        }
    }
    for name in old.keys() {
        if r.get(name).is_none() {
            problems.push(format!(
                "{name}: in the snapshot but no longer registered; regenerate it"
            ));
        }
    }
    problems
}

/// `docs/tools.md`, generated from the registry (G-14).
pub fn markdown<C: Clone + Send + Sync + 'static>(r: &Registry<C>) -> String {
    let mut out = String::from(
        "# Built-in tools\n\nGenerated from the registry by `cargo run -p countersign-tools --bin tools-catalog`; do not edit.\n\n\
         Every built-in tool answers one envelope (G-1): `{\"ok\": true, \"data\": …, \"meta\": {\"tool\", \"version\"}}` or \
         `{\"ok\": false, \"error\": {\"code\", \"message\", \"details\"?, \"retryable\"?, \"hint\"?, \"errorId\"?}, \"meta\": …}`. \
         The same object is the `structuredContent` and, serialised, the one text block; `isError` is true exactly when `ok` is false.\n\n\
         Error codes: ",
    );
    out.push_str(
        &crate::errors::code::ALL
            .iter()
            .map(|c| format!("`{c}`"))
            .collect::<Vec<_>>()
            .join(", "),
    );
    out.push_str(".\n");
    for d in r.descriptors() {
        let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default();
        out.push_str(&format!(
            "\n## `{}` — {} (version {})\n\n{}\n\nAnnotations: `{}`\n\n### Input schema\n\n```json\n{}\n```\n\n### Output schema\n\n```json\n{}\n```\n",
            d.spec.name,
            d.spec.title,
            d.spec.version,
            d.spec.description,
            serde_json::to_string(&d.spec.annotations).unwrap_or_default(),
            pretty(&d.input_schema),
            pretty(&d.output_schema),
        ));
    }
    out
}
