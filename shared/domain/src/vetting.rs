//! V-1: which of a provider's tools may be a consultation — called by the model or an MCP
//! client with no countersign. Only a tool the provider itself declares read-only
//! (`readOnlyHint: true`) and not destructive, that is neither a configured operation nor
//! one of the actions protocol's tools, and that the provider still lists.
//!
//! The same rule runs at save (the admin API and the panel refuse the tool, naming it) and
//! at run time (the tool is never offered nor proxied), so a configuration saved before the
//! rule, or a provider whose descriptor changed since, cannot let a write through.

use crate::config::{BUILT_IN_TOOLS, RESERVED_TOOLS};
use crate::ids::{OperationName, ToolName};
use crate::ports::provider::ProviderTool;
use serde_json::Value;
use std::fmt;

/// Why a tool cannot be a consultation (V-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotAConsultation {
    /// The provider's `tools/list` does not list it.
    NotListed,
    /// Its descriptor lacks `annotations.readOnlyHint: true`.
    NotDeclaredReadOnly,
    /// Its descriptor declares `annotations.destructiveHint: true`.
    DeclaredDestructive,
    /// It is one of the tenant's configured operations (a write through confirmation).
    IsOperation,
    /// It is an actions-protocol tool or a built-in's name.
    IsActionTool,
}

impl fmt::Display for NotAConsultation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message(crate::language::Language::En))
    }
}

impl NotAConsultation {
    /// Why, in `lang` (issue 50: the panel speaks the administrator's language).
    #[must_use]
    pub fn message(self, lang: crate::language::Language) -> &'static str {
        if lang == crate::language::Language::En {
            return match self {
                Self::NotListed => "is not listed by the provider's tools/list",
                Self::NotDeclaredReadOnly => {
                    "is not declared read-only (its annotations need readOnlyHint: true)"
                }
                Self::DeclaredDestructive => "is declared destructive (destructiveHint: true)",
                Self::IsOperation => "is a configured operation: writes go through confirmation",
                Self::IsActionTool => "is an actions-protocol or built-in tool name",
            };
        }
        match self {
            Self::NotListed => "não aparece no tools/list do seu servidor",
            Self::NotDeclaredReadOnly => {
                "não se declara somente leitura (as anotações dela precisam de readOnlyHint: true)"
            }
            Self::DeclaredDestructive => "se declara destrutiva (destructiveHint: true)",
            Self::IsOperation => "é uma operação configurada: escritas passam por confirmação",
            Self::IsActionTool => "tem o nome de uma ferramenta do protocolo de ações ou embutida",
        }
    }
}

/// V-1: whether the tool named `name` (by the protocol's rules, before looking at any
/// descriptor) can never be a consultation.
fn name_refusal(name: &str, operations: &[OperationName]) -> Option<NotAConsultation> {
    if RESERVED_TOOLS
        .iter()
        .chain(BUILT_IN_TOOLS.iter())
        .any(|r| r.eq_ignore_ascii_case(name))
    {
        return Some(NotAConsultation::IsActionTool);
    }
    if operations.iter().any(|o| o.as_str() == name) {
        return Some(NotAConsultation::IsOperation);
    }
    None
}

/// V-1: why `tool`, as the provider publishes it now, cannot be a consultation, or `None`
/// when it can.
pub fn refusal(tool: &ProviderTool, operations: &[OperationName]) -> Option<NotAConsultation> {
    if let Some(r) = name_refusal(tool.name.as_str(), operations) {
        return Some(r);
    }
    let hints = tool.descriptor.get("annotations");
    let hint = |h: &str| hints.and_then(|a| a.get(h)).and_then(Value::as_bool);
    if hint("destructiveHint") == Some(true) {
        return Some(NotAConsultation::DeclaredDestructive);
    }
    if hint("readOnlyHint") != Some(true) {
        return Some(NotAConsultation::NotDeclaredReadOnly);
    }
    None
}

/// V-1 at save: every allowed tool that cannot be a consultation, with its index in
/// `allowed` and the reason, in the order given. `published` is the provider's live
/// `tools/list`.
pub fn refusals(
    allowed: &[ToolName],
    published: &[ProviderTool],
    operations: &[OperationName],
) -> Vec<(usize, ToolName, NotAConsultation)> {
    allowed
        .iter()
        .enumerate()
        .filter_map(|(i, name)| {
            let why = match published.iter().find(|t| &t.name == name) {
                Some(tool) => refusal(tool, operations),
                None => {
                    name_refusal(name.as_str(), operations).or(Some(NotAConsultation::NotListed))
                }
            };
            why.map(|w| (i, name.clone(), w))
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, annotations: Value) -> ProviderTool {
        let mut descriptor = serde_json::Map::new();
        descriptor.insert("name".into(), json!(name));
        if !annotations.is_null() {
            descriptor.insert("annotations".into(), annotations);
        }
        ProviderTool {
            name: ToolName::parse(name).unwrap(),
            descriptor,
            output_schema: None,
        }
    }

    fn ops(names: &[&str]) -> Vec<OperationName> {
        names
            .iter()
            .map(|n| OperationName::parse(*n).unwrap())
            .collect()
    }

    /// V-1: only a tool declared read-only, not destructive, not an operation nor an action
    /// tool is a consultation; no annotation is not a claim of reading.
    #[test]
    fn v1_only_declared_read_only_tools_are_consultations() {
        let none = ops(&[]);
        let ro = json!({"readOnlyHint": true});
        assert_eq!(refusal(&tool("get_cars", ro.clone()), &none), None);
        assert_eq!(
            refusal(&tool("get_cars", Value::Null), &none),
            Some(NotAConsultation::NotDeclaredReadOnly)
        );
        assert_eq!(
            refusal(&tool("get_cars", json!({"readOnlyHint": false})), &none),
            Some(NotAConsultation::NotDeclaredReadOnly)
        );
        assert_eq!(
            refusal(&tool("get_cars", json!({"readOnlyHint": "true"})), &none),
            Some(NotAConsultation::NotDeclaredReadOnly),
            "only the JSON boolean true counts"
        );
        assert_eq!(
            refusal(
                &tool(
                    "wipe",
                    json!({"readOnlyHint": true, "destructiveHint": true})
                ),
                &none
            ),
            Some(NotAConsultation::DeclaredDestructive)
        );
        assert_eq!(
            refusal(&tool("reassign", ro.clone()), &ops(&["reassign"])),
            Some(NotAConsultation::IsOperation),
            "an operation is a write even when annotated read-only"
        );
        assert_eq!(
            refusal(&tool("Execute_Action", ro), &none),
            Some(NotAConsultation::IsActionTool)
        );
    }

    /// V-1 at save: each refused tool is named with its index; a tool the provider does not
    /// list is refused too.
    #[test]
    fn v1_refusals_name_each_tool_in_order() {
        let published = vec![
            tool("get_cars", json!({"readOnlyHint": true})),
            tool("delete_car", json!({"destructiveHint": true})),
        ];
        let allowed: Vec<ToolName> = ["delete_car", "get_cars", "ghost"]
            .iter()
            .map(|n| ToolName::parse(*n).unwrap())
            .collect();
        let got = refusals(&allowed, &published, &ops(&[]));
        assert_eq!(
            got.iter()
                .map(|(i, n, w)| (*i, n.as_str(), *w))
                .collect::<Vec<_>>(),
            vec![
                (0, "delete_car", NotAConsultation::DeclaredDestructive),
                (2, "ghost", NotAConsultation::NotListed),
            ]
        );
    }
}
