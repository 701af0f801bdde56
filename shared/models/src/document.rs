//! JSON values ↔ the AWS SDK's `Document` (the Converse API's tool schemas, tool inputs
//! and JSON tool results). The released `aws-smithy-types` has no stable conversion; this
//! one is total both ways and held by a round-trip property test.

use aws_smithy_types::{Document, Number};
use serde_json::{Map, Value};

/// A JSON value as a `Document`.
pub fn to_document(value: &Value) -> Document {
    match value {
        Value::Null => Document::Null,
        Value::Bool(b) => Document::Bool(*b),
        Value::Number(n) => Document::Number(if let Some(u) = n.as_u64() {
            Number::PosInt(u)
        } else if let Some(i) = n.as_i64() {
            Number::NegInt(i)
        } else {
            Number::Float(n.as_f64().unwrap_or_default())
        }),
        Value::String(s) => Document::String(s.clone()),
        Value::Array(a) => Document::Array(a.iter().map(to_document).collect()),
        Value::Object(o) => {
            Document::Object(o.iter().map(|(k, v)| (k.clone(), to_document(v))).collect())
        }
    }
}

/// A `Document` as a JSON value. A float JSON cannot hold (NaN, infinity) becomes `null`,
/// as `serde_json` itself writes it.
pub fn to_value(document: &Document) -> Value {
    match document {
        Document::Null => Value::Null,
        Document::Bool(b) => Value::Bool(*b),
        Document::Number(Number::PosInt(u)) => Value::from(*u),
        Document::Number(Number::NegInt(i)) => Value::from(*i),
        Document::Number(Number::Float(f)) => {
            serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number)
        }
        Document::String(s) => Value::String(s.clone()),
        Document::Array(a) => Value::Array(a.iter().map(to_value).collect()),
        Document::Object(o) => {
            // Sorted keys: a stable order for the model and for tests.
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            let map: Map<String, Value> = keys
                .into_iter()
                .filter_map(|k| o.get(k).map(|v| (k.clone(), to_value(v))))
                .collect();
            Value::Object(map)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
            ".{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::btree_map(".{0,8}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// M-2 ("input schemas are passed as given"): any JSON value survives the trip
        /// through the SDK's document type unchanged.
        #[test]
        fn m2_json_round_trips_through_the_document_type(v in json()) {
            prop_assert_eq!(to_value(&to_document(&v)), v);
        }
    }

    #[test]
    fn numbers_keep_their_kind() {
        assert_eq!(
            to_document(&Value::from(3)),
            Document::Number(Number::PosInt(3))
        );
        assert_eq!(
            to_document(&Value::from(-3)),
            Document::Number(Number::NegInt(-3))
        );
        assert_eq!(
            to_value(&Document::Number(Number::Float(f64::NAN))),
            Value::Null
        );
    }
}
