//! Canonical JSON text: the same bytes for the same value, whatever order its objects'
//! keys were written in. The provider kit's `argumentsHash` (A-14), tool pinning (V-2) and
//! the tools' schema fingerprints (G-4) need it; they differ only in how keys compare
//! ([`KeyOrder`]).

use serde_json::Value;
use std::cmp::Ordering;

/// How object keys are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyOrder {
    /// By UTF-16 code units, as RFC 8785, so that another language can reproduce the text.
    Utf16,
    /// By Unicode scalar value (Rust's `str` order). V-2 keeps it: its approved forms are
    /// stored, and keys mixing U+E000–U+FFFF with characters beyond U+FFFF sort otherwise
    /// under [`KeyOrder::Utf16`], which would withhold tools nobody changed.
    CodePoint,
}

impl KeyOrder {
    fn compare(self, a: &str, b: &str) -> Ordering {
        match self {
            Self::Utf16 => a.encode_utf16().cmp(b.encode_utf16()),
            Self::CodePoint => a.cmp(b),
        }
    }
}

/// `v` with every object's keys in `order`, no insignificant white space, and strings
/// escaped by `serde_json`.
pub fn canonical_json(v: &Value, order: KeyOrder) -> String {
    let mut out = String::new();
    write_canonical(v, order, &mut out);
    out
}

fn write_canonical(v: &Value, order: KeyOrder, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|(a, _), (b, _)| order.compare(a, b));
            out.push('{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(value, order, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, order, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_at_every_depth_without_white_space() {
        let v = json!({"b": [1, {"y": null, "x": "\""}], "a": true});
        for order in [KeyOrder::Utf16, KeyOrder::CodePoint] {
            assert_eq!(
                canonical_json(&v, order),
                r#"{"a":true,"b":[1,{"x":"\"","y":null}]}"#
            );
        }
    }

    #[test]
    fn the_orders_differ_only_past_the_basic_plane() {
        let v = json!({"\u{E000}": 1, "\u{10000}": 2});
        assert_eq!(
            canonical_json(&v, KeyOrder::Utf16),
            "{\"\u{10000}\":2,\"\u{E000}\":1}"
        );
        assert_eq!(
            canonical_json(&v, KeyOrder::CodePoint),
            "{\"\u{E000}\":1,\"\u{10000}\":2}"
        );
    }
}
