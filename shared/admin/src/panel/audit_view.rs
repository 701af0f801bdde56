//! The audit trail as an administrator reads it (issue 28): who in words, each change as
//! field: before → after, filters by event and date, and a layout that fits a laptop and
//! a phone. The API (`GET …/audit`) keeps the records as stored.

use super::i18n::t;
use countersign_domain::ports::AuditEntry;
use maud::{Markup, html};
use serde_json::Value;

/// The filters of the page (`event` prefix, `from` / `to` dates as `YYYY-MM-DD`, UTC).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filters {
    /// Only records whose action starts with this (`mcp.`, `widgetCredential`, …).
    pub event: String,
    /// From this day on (inclusive).
    pub from: String,
    /// Up to this day (inclusive).
    pub to: String,
}

impl Filters {
    /// Whether `entry` passes. A malformed date filters nothing out.
    pub fn keep(&self, entry: &AuditEntry) -> bool {
        let day = entry.at.to_rfc3339();
        let day = day.get(..10).unwrap_or_default();
        entry.action.starts_with(self.event.trim())
            && (!is_day(&self.from) || day >= self.from.as_str())
            && (!is_day(&self.to) || day <= self.to.as_str())
    }

    /// Whether any filter is set.
    pub fn any(&self) -> bool {
        !self.event.trim().is_empty() || is_day(&self.from) || is_day(&self.to)
    }

    /// The query string of these filters, for the next page's link.
    pub fn query(&self) -> String {
        url::form_urlencoded::Serializer::new(String::new())
            .append_pair("event", &self.event)
            .append_pair("from", &self.from)
            .append_pair("to", &self.to)
            .finish()
    }
}

fn is_day(s: &str) -> bool {
    s.len() == 10
        && s.bytes().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        })
}

/// Who did it, in words: the tenant's administrator (by key fingerprint), the operator,
/// the platform, or the person.
pub fn actor(actor: &str) -> String {
    if let Some(fingerprint) = actor.strip_prefix("adminKey:") {
        let short: String = fingerprint.chars().take(8).collect();
        return format!("{} {short}…)", t("Administrator (key"));
    }
    match actor {
        "operator" => t("Platform operator").into(),
        "platform" => t("Platform").into(),
        "person" => t("The person in the chat").into(),
        other => other.to_owned(),
    }
}

/// The events the filter offers (prefixes of the actions the platform records).
pub const EVENTS: [(&str, &str); 9] = [
    ("", "All events"),
    ("mcp.", "MCP settings"),
    ("widgetCredential.", "Widget credentials"),
    ("tenant.", "Tenant settings"),
    ("adminKey.", "Admin key"),
    ("certification", "Certification"),
    ("action.", "Actions"),
    ("proposal.", "Proposals"),
    ("checkpoint", "Checkpoints"),
];

/// One change, field by field: `{"field": {"from": a, "to": b}}` as "field: a → b", any
/// other value as "field: value".
pub fn changes(changes: &Value) -> Markup {
    let Some(fields) = changes.as_object().filter(|o| !o.is_empty()) else {
        return html! { span.none { "—" } };
    };
    html! {
        ul.changes {
            @for (field, v) in fields {
                li {
                    span.field { (field) } ": "
                    @match (v.get("from"), v.get("to")) {
                        (Some(from), Some(to)) if v.as_object().is_some_and(|o| o.len() == 2) => {
                            span.from { (short(from)) } " → " span.to { (short(to)) }
                        }
                        (None, Some(to)) if v.as_object().is_some_and(|o| o.len() == 1) => {
                            span.to { (short(to)) }
                        }
                        _ => { span.value { (short(v)) } }
                    }
                }
            }
        }
    }
}

/// A value as text, at most 200 characters.
fn short(v: &Value) -> String {
    let text = match v {
        Value::String(s) => s.clone(),
        Value::Null => t("none").into(),
        other => other.to_string(),
    };
    if text.chars().count() > 200 {
        let cut: String = text.chars().take(200).collect();
        format!("{cut}…")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn actors_and_changes_read_as_words() {
        assert_eq!(
            actor("adminKey:0123456789abcdef"),
            "Administrator (key 01234567…)"
        );
        assert_eq!(actor("operator"), "Platform operator");
        let markup = changes(&json!({"language": {"from": "en", "to": "pt-BR"}, "keyId": "wk_1"}))
            .into_string();
        assert!(
            markup.contains("en</span> → <span class=\"to\">pt-BR"),
            "{markup}"
        );
        assert!(markup.contains("keyId"));
        assert!(changes(&json!({})).into_string().contains('—'));
    }

    #[test]
    fn filters_keep_by_event_prefix_and_day() {
        let entry = |action: &str, at: &str| AuditEntry {
            id: countersign_domain::ids::AuditId::parse("aud_01J00000000000000000000000").unwrap(),
            at: countersign_domain::time::Timestamp::parse_utc(at).unwrap(),
            actor: "operator".into(),
            action: action.into(),
            changes: json!({}),
        };
        let f = Filters {
            event: "mcp.".into(),
            from: "2026-12-01".into(),
            to: "2026-12-01".into(),
        };
        assert!(f.keep(&entry("mcp.put", "2026-12-01T10:00:00Z")));
        assert!(!f.keep(&entry("mcp.put", "2026-12-02T00:00:00Z")));
        assert!(!f.keep(&entry("widgetCredential.create", "2026-12-01T10:00:00Z")));
        let sloppy = Filters {
            from: "yesterday".into(),
            ..Filters::default()
        };
        assert!(sloppy.keep(&entry("x", "2020-01-01T00:00:00Z")));
        assert!(!sloppy.any());
    }
}
