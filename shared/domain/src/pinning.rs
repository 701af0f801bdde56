//! V-2: tool pinning. A save records, for each allowed consultation, the part of its
//! descriptor the administrator approved (name, description, input and output schemas,
//! annotations) in a canonical form. At run time a tool whose live descriptor no longer
//! has that form is withheld until the administrator approves the change, having seen the
//! approved and the live descriptor side by side.
//!
//! Configurations saved before pinning have no approved forms: their tools are served
//! under V-1 alone until the next save pins them (decision 0036).

use crate::canonical::{KeyOrder, canonical_json};
use crate::hash::Sha256Hex;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The descriptor fields an approval covers.
pub const PINNED_FIELDS: [&str; 5] = [
    "name",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
];

/// Tool name → approved form ([`approved_form`]).
pub type Approved = BTreeMap<String, String>;

/// The canonical JSON of the pinned fields of `descriptor`: object keys sorted at every
/// depth, absent fields left out, no white space. Equal descriptors give equal strings
/// whatever order the provider wrote their keys in.
pub fn approved_form(descriptor: &Map<String, Value>) -> String {
    let pinned: Map<String, Value> = PINNED_FIELDS
        .iter()
        .filter_map(|f| descriptor.get(*f).map(|v| ((*f).to_owned(), v.clone())))
        .collect();
    canonical_json(&Value::Object(pinned), KeyOrder::CodePoint)
}

/// A short fingerprint of an approved form (for logs and the audit trail).
pub fn fingerprint(form: &str) -> String {
    Sha256Hex::digest(form).as_str()[..16].to_owned()
}

/// Whether tool `name`, as published now (`descriptor`), differs from what was approved
/// for it. A tool with no approval (a configuration saved before pinning) has not changed.
pub fn changed(name: &str, descriptor: &Map<String, Value>, approved: &Approved) -> bool {
    approved
        .get(name)
        .is_some_and(|form| *form != approved_form(descriptor))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn changed_now(d: Value, approved: &Approved) -> bool {
        changed(
            d["name"].as_str().unwrap(),
            d.as_object().unwrap(),
            approved,
        )
    }

    /// V-2: the form ignores key order and fields outside the pinned ones (`_meta`,
    /// `title`), and changes with any pinned field, nested ones included.
    #[test]
    fn v2_the_approved_form_covers_exactly_the_pinned_fields() {
        let a = json!({"name": "get_cars", "description": "Cars", "inputSchema": {"type": "object", "properties": {"a": {}, "b": {}}}, "annotations": {"readOnlyHint": true}});
        let b = json!({"annotations": {"readOnlyHint": true}, "inputSchema": {"properties": {"b": {}, "a": {}}, "type": "object"}, "description": "Cars", "name": "get_cars", "_meta": {"v": 2}, "title": "x"});
        let approved: Approved =
            [("get_cars".to_owned(), approved_form(a.as_object().unwrap()))].into();
        assert!(!changed_now(b, &approved));
        for change in [
            json!({"description": "Cars of everyone"}),
            json!({"inputSchema": {"type": "object", "properties": {"a": {}, "c": {}}}}),
            json!({"annotations": {"readOnlyHint": false}}),
            json!({"outputSchema": {"type": "object"}}),
        ] {
            let mut d = a.clone();
            for (k, v) in change.as_object().unwrap() {
                d[k] = v.clone();
            }
            assert!(changed_now(d, &approved), "{change}");
        }
        // No approval recorded (a configuration saved before pinning): not "changed".
        assert!(!changed_now(a, &Approved::new()));
    }
}
