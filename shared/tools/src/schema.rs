//! JSON Schemas of tools: input schemas derived from typed argument structs, output
//! schemas that wrap a tool's `data` schema in the envelope (G-10), and canonical JSON
//! for fingerprints (G-4).

use schemars::JsonSchema;
use serde_json::{Value, json};

/// The input schema of `T`: an object schema, unknown fields disallowed (G-12), without
/// the generator's `$schema` and `title` keys.
pub fn input_schema<T: JsonSchema>() -> Value {
    let mut v = schema_value::<T>();
    if let Value::Object(m) = &mut v {
        m.entry("properties").or_insert_with(|| json!({}));
        m.insert("additionalProperties".into(), Value::Bool(false));
    }
    v
}

/// The schema of `T` as a plain JSON value (draft 2020-12), without `$schema`/`title`.
pub fn schema_value<T: JsonSchema>() -> Value {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    let mut v = schema.to_value();
    if let Value::Object(m) = &mut v {
        m.remove("$schema");
        m.remove("title");
    }
    v
}

/// The envelope contract (G-4: part of every `contract` fingerprint). Change it when the
/// envelope's shape changes; every tool's contract changes with it.
pub const ENVELOPE_CONTRACT: &str = "countersign-envelope/1: {ok, data | error{code,message,details?,retryable?,hint?,errorId?}, meta{tool,version}}";

/// The output schema of a built-in tool (G-10): the envelope, with `data` as given. Only
/// `ok` and `meta` are required, so error envelopes validate too (official clients check
/// `isError` results against it).
pub fn envelope_schema(tool: &str, version: &str, data: Value) -> Value {
    let mut data = data;
    // `$defs` of the data schema must live at the root for `#/$defs/...` refs to resolve.
    let defs = match &mut data {
        Value::Object(m) => m.remove("$defs"),
        _ => None,
    };
    let mut root = json!({
        "type": "object",
        "required": ["ok", "meta"],
        "additionalProperties": false,
        "properties": {
            "ok": {"type": "boolean"},
            "data": data,
            "error": {
                "type": "object",
                "required": ["code", "message"],
                "additionalProperties": false,
                "properties": {
                    "code": {"type": "string", "pattern": "^[A-Z][A-Z_]*$"},
                    "message": {"type": "string"},
                    "details": {},
                    "retryable": {"type": "boolean"},
                    "hint": {"type": "string"},
                    "errorId": {"type": "string"}
                }
            },
            "meta": {
                "type": "object",
                "required": ["tool", "version"],
                "additionalProperties": false,
                "properties": {
                    "tool": {"const": tool},
                    "version": {"const": version}
                }
            }
        }
    });
    if let (Some(defs), Value::Object(m)) = (defs, &mut root) {
        m.insert("$defs".into(), defs);
    }
    root
}

/// `value` with every `description` member removed, at any depth (G-4 `schema`).
pub fn without_descriptions(value: &Value) -> Value {
    match value {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| k.as_str() != "description")
                .map(|(k, v)| (k.clone(), without_descriptions(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_descriptions).collect()),
        other => other.clone(),
    }
}

/// JSON with object keys sorted at every depth and no white space: the same bytes for
/// the same value, whatever order a map was built in. Keys sort as Rust's `str` does
/// (G-4's fingerprints are compared with stored ones, so the order may not change).
pub fn canonical_json(value: &Value) -> String {
    use countersign_domain::canonical::{KeyOrder, canonical_json};
    canonical_json(value, KeyOrder::CodePoint)
}

/// First 16 hex characters of SHA-256 (G-4 fingerprints).
pub fn fingerprint(text: &str) -> String {
    use sha2::{Digest, Sha256};
    let d = Sha256::digest(text.as_bytes());
    // A digest has 32 bytes, so the first 8 are always there.
    countersign_domain::hash::hex(d.get(..8).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Args {
        /// The name.
        name: String,
    }

    #[test]
    fn input_schema_is_a_closed_object() {
        let s = input_schema::<Args>();
        assert_eq!(s["type"], "object");
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(s["properties"]["name"]["type"], "string");
        assert!(s.get("$schema").is_none());
    }

    #[test]
    fn canonical_json_ignores_key_order_and_descriptions_are_stripped() {
        let a = json!({"b": 1, "a": {"d": 2, "c": 3}});
        let b = json!({"a": {"c": 3, "d": 2}, "b": 1});
        assert_eq!(canonical_json(&a), canonical_json(&b));
        assert_eq!(canonical_json(&a), r#"{"a":{"c":3,"d":2},"b":1}"#);
        let with = json!({"description": "x", "properties": {"n": {"description": "y", "type": "string"}}});
        assert_eq!(
            without_descriptions(&with),
            json!({"properties": {"n": {"type": "string"}}})
        );
        assert_eq!(fingerprint("abc"), "ba7816bf8f01cfea");
    }
}
