//! M-2: tool names as a model API takes them. MCP names may hold `.` or `/` and run to
//! 128 characters; model APIs take `[A-Za-z0-9_-]{1,64}`. Each turn maps its tools' names
//! one to one: a name that already fits is kept; any other becomes its fitting characters
//! (others as `_`, cut to 55) plus `_` and 8 hex digits of its SHA-256, lengthened on the
//! rare collision. A name the model sends back that the turn did not give it maps to
//! nothing (an unknown tool).

use countersign_domain::hash::Sha256Hex;
use std::collections::HashMap;

/// Longest name a model API accepts.
pub const MAX: usize = 64;

/// Whether `name` is usable by a model API as it is.
pub fn fits(name: &str) -> bool {
    (1..=MAX).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// One turn's mapping, both ways.
#[derive(Debug, Default, Clone)]
pub struct ToolNames {
    to_model: HashMap<String, String>,
    from_model: HashMap<String, String>,
}

impl ToolNames {
    /// The mapping of `names` (duplicates are mapped once).
    pub fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut map = Self::default();
        let names: Vec<&str> = names.into_iter().collect();
        // Names that fit first: they keep their own name whatever the others map to.
        for name in names.iter().copied().filter(|n| fits(n)) {
            map.insert(name, name.to_owned());
        }
        for name in names.iter().copied().filter(|n| !fits(n)) {
            if map.to_model.contains_key(name) {
                continue;
            }
            let hash = Sha256Hex::digest(name);
            let stem: String = name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .take(MAX - 9)
                .collect();
            let mut digits = 8;
            let mapped = loop {
                let hex = &hash.as_str()[..digits];
                let stem: String = stem.chars().take(MAX - 1 - digits).collect();
                let candidate = format!("{stem}_{hex}");
                if !map.from_model.contains_key(&candidate) || digits == 32 {
                    break candidate;
                }
                digits += 4;
            };
            map.insert(name, mapped);
        }
        map
    }

    fn insert(&mut self, original: &str, mapped: String) {
        self.from_model.insert(mapped.clone(), original.to_owned());
        self.to_model.insert(original.to_owned(), mapped);
    }

    /// The name the model is given for `original`.
    pub fn for_model(&self, original: &str) -> Option<&str> {
        self.to_model.get(original).map(String::as_str)
    }

    /// The tool a name from the model stands for; `None` when this turn gave no such name.
    pub fn original(&self, from_model: &str) -> Option<&str> {
        self.from_model.get(from_model).map(String::as_str)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn m2_fitting_names_are_kept_and_others_mapped_reversibly() {
        let names = [
            "get_user_cars",
            "billing.get/invoice",
            "billing_get_invoice",
        ];
        let map = ToolNames::new(names);
        assert_eq!(map.for_model("get_user_cars"), Some("get_user_cars"));
        assert_eq!(
            map.for_model("billing_get_invoice"),
            Some("billing_get_invoice")
        );
        let mapped = map.for_model("billing.get/invoice").unwrap();
        assert!(fits(mapped) && mapped != "billing_get_invoice", "{mapped}");
        assert_eq!(map.original(mapped), Some("billing.get/invoice"));
        assert_eq!(map.original("not_given"), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1024, failure_persistence: None, ..ProptestConfig::default() })]

        /// M-2: for any set of MCP tool names, every mapped name fits a model API, no two
        /// tools share one, and each maps back to its own tool.
        #[test]
        fn m2_any_names_map_one_to_one_and_back(
            names in prop::collection::vec("[A-Za-z0-9_./-]{1,128}", 1..20)
        ) {
            let map = ToolNames::new(names.iter().map(String::as_str));
            let mut seen = std::collections::HashSet::new();
            for name in &names {
                let mapped = map.for_model(name).unwrap();
                prop_assert!(fits(mapped), "{}", mapped);
                prop_assert_eq!(map.original(mapped), Some(name.as_str()));
                seen.insert((name.clone(), mapped.to_owned()));
            }
            let mapped: std::collections::HashSet<&str> = seen.iter().map(|(_, m)| m.as_str()).collect();
            let originals: std::collections::HashSet<&str> = seen.iter().map(|(n, _)| n.as_str()).collect();
            prop_assert_eq!(mapped.len(), originals.len());
        }
    }
}
