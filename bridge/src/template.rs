//! B-2: summary templates. Plain text with placeholders — `{argument}`, `{person}`, and
//! `{lookup.<name>.<path>}` (a value from one of the operation's read-tool lookups,
//! dotted into its JSON) — and `{{` / `}}` for braces. An optional argument is written
//! `{name?text}`: when the model leaves it out (or null) the summary says `text` instead
//! (`{cc?nobody}`), so a summary can state every argument a write takes. A rendered summary is checked
//! against the summary rules (A-20) exactly as the platform checks a provider's: a
//! summary that breaks them refuses the preparation, never gets edited.

use countersign_domain::text::SafeText;
use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// One piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    /// An argument, and what to say when it is absent (`{name?text}`).
    Argument(String, Option<String>),
    Person,
    Lookup {
        name: String,
        path: Vec<String>,
    },
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

/// Why a template cannot be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// A placeholder has no value (an argument not given, a lookup field absent).
    #[error("{{{0}}} has no value")]
    Missing(String),
    /// The rendered summary breaks the summary rules (A-20): the preparation is refused.
    #[error("the rendered summary breaks the summary rules: {0}")]
    Rules(String),
}

impl Template {
    /// Parses `src`; the error says what is wrong (an unclosed or empty placeholder, a
    /// stray `}`, a lookup without a field).
    pub fn parse(src: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut text = String::new();
        let mut chars = src.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    text.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    text.push('}');
                }
                '}' => return Err("a `}` without its `{` (write `}}` for a brace)".into()),
                '{' => {
                    let mut name = String::new();
                    let mut fallback: Option<String> = None;
                    loop {
                        match chars.next() {
                            Some('}') => break,
                            Some('{') => return Err("a `{` inside a placeholder".into()),
                            Some(c) if fallback.is_some() => {
                                fallback.get_or_insert_with(String::new).push(c);
                            }
                            Some('?') => fallback = Some(String::new()),
                            Some(c)
                                if c.is_ascii_alphanumeric()
                                    || c == '_'
                                    || c == '.'
                                    || c == '*' =>
                            {
                                name.push(c);
                            }
                            Some(c) => return Err(format!("`{c}` inside a placeholder")),
                            None => return Err("a `{` that is never closed".into()),
                        }
                    }
                    if !text.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut text)));
                    }
                    let part = placeholder(&name)?;
                    parts.push(match (part, fallback) {
                        (Part::Argument(a, None), Some(f)) => Part::Argument(a, Some(f)),
                        (_, Some(_)) => {
                            return Err(format!(
                                "`{{{name}?…}}`: only an argument may have a text for when it is absent"
                            ));
                        }
                        (part, None) => part,
                    });
                }
                c => text.push(c),
            }
        }
        if !text.is_empty() {
            parts.push(Part::Text(text));
        }
        Ok(Self { parts })
    }

    /// The arguments the template names.
    pub fn arguments(&self) -> BTreeSet<&str> {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Argument(a, _) => Some(a.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The lookups the template names.
    pub fn lookups(&self) -> BTreeSet<&str> {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Lookup { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The text with every placeholder filled: `arguments` by name, `lookups` by lookup
    /// name (each its tool's JSON result), `person` for `{person}`.
    pub fn render(
        &self,
        arguments: &Map<String, Value>,
        lookups: &Map<String, Value>,
        person: &str,
    ) -> Result<String, RenderError> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Person => out.push_str(person),
                Part::Argument(a, fallback) => match (arguments.get(a), fallback) {
                    (None | Some(Value::Null), Some(f)) => out.push_str(f),
                    (value, _) => out.push_str(&text_of(a, value)?),
                },
                Part::Lookup { name, path } => {
                    let shown = format!("lookup.{name}.{}", path.join("."));
                    let value = lookups.get(name).and_then(|v| resolve(v, path));
                    out.push_str(&text_of(&shown, value.as_ref())?);
                }
            }
        }
        Ok(out)
    }

    /// [`Self::render`], then the summary rules (A-20): the text as it will be shown,
    /// byte for byte, or the refusal.
    pub fn render_summary(
        &self,
        arguments: &Map<String, Value>,
        lookups: &Map<String, Value>,
        person: &str,
    ) -> Result<SafeText, RenderError> {
        let text = self.render(arguments, lookups, person)?;
        SafeText::check(text).map_err(|v| {
            RenderError::Rules(
                v.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })
    }
}

fn placeholder(name: &str) -> Result<Part, String> {
    if name.is_empty() {
        return Err("an empty placeholder `{}`".into());
    }
    if name == "person" {
        return Ok(Part::Person);
    }
    match name.strip_prefix("lookup.") {
        Some(rest) => {
            let mut segments = rest.split('.').map(str::to_owned);
            let lookup = segments.next().unwrap_or_default();
            let path: Vec<String> = segments.collect();
            if lookup.is_empty() || path.is_empty() || path.iter().any(String::is_empty) {
                return Err(format!(
                    "`{{{name}}}`: a lookup placeholder is `{{lookup.<name>.<field>}}`"
                ));
            }
            Ok(Part::Lookup { name: lookup, path })
        }
        None if name.contains('.') || name.contains('*') => Err(format!(
            "`{{{name}}}`: only lookups have dotted names (`{{lookup.<name>.<field>}}`)"
        )),
        None => Ok(Part::Argument(name.to_owned(), None)),
    }
}

/// The value at `path` in `value`; a `*` segment maps the rest of the path over an
/// array (`items.*.name`: every item's name).
pub fn resolve(value: &Value, path: &[String]) -> Option<Value> {
    let Some((first, rest)) = path.split_first() else {
        return Some(value.clone());
    };
    if first == "*" {
        let items = value.as_array()?;
        return items
            .iter()
            .map(|v| resolve(v, rest))
            .collect::<Option<Vec<_>>>()
            .map(Value::Array);
    }
    resolve(value.get(first.as_str())?, rest)
}

/// A value as the person reads it: text as it is, numbers and booleans as JSON writes
/// them, a list's items joined by ", ", and anything structured (an email attachment) as
/// compact JSON — every byte that will be sent is shown, nothing is summarised away.
fn text_of(name: &str, value: Option<&Value>) -> Result<String, RenderError> {
    fn item(v: &Value) -> String {
        match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }
    match value {
        None | Some(Value::Null) => Err(RenderError::Missing(name.to_owned())),
        Some(Value::Array(items)) => Ok(items.iter().map(item).collect::<Vec<_>>().join(", ")),
        Some(v) => Ok(item(v)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    /// B-2: arguments, the person and lookups are filled; braces escape; lists join.
    #[test]
    fn b2_a_template_renders_arguments_lookups_and_the_person() {
        let t = Template::parse(
            "Cancel order {order_id} of {person} ({lookup.order.items.*.name}, total {lookup.order.payment.total} USD) {{ok}}",
        )
        .unwrap();
        assert_eq!(t.arguments(), BTreeSet::from(["order_id"]));
        assert_eq!(t.lookups(), BTreeSet::from(["order"]));
        let text = t
            .render(
                &map(json!({"order_id": "#W123"})),
                &map(json!({"order": {"items": [{"name": "Lamp"}, {"name": "Kettle"}], "payment": {"total": 42.5}}})),
                "u_alice",
            )
            .unwrap();
        assert_eq!(
            text,
            "Cancel order #W123 of u_alice (Lamp, Kettle, total 42.5 USD) {ok}"
        );
    }

    /// B-2 (bad input): a malformed template is refused with why; a missing value
    /// refuses the rendering (a structured one is shown whole); a summary that breaks the rules (a link here) is
    /// refused, never edited.
    #[test]
    fn b2_bad_templates_and_summaries_are_refused() {
        for bad in [
            "{",
            "}",
            "{}",
            "{a b}",
            "{lookup.order}",
            "{a.b}",
            "x {order",
            "{person?someone}",
            "{lookup.order.id?none}",
            "{a?b{c}",
        ] {
            assert!(Template::parse(bad).is_err(), "{bad}");
        }
        let t = Template::parse("Cancel {order_id} ({lookup.order.items})").unwrap();
        let none = Map::new();
        assert_eq!(
            t.render(&none, &none, "u"),
            Err(RenderError::Missing("order_id".into()))
        );
        // Something structured is shown whole, as compact JSON.
        let t = Template::parse("Attach {attachments}").unwrap();
        let args = map(json!({"attachments": [{"type": "file", "file_id": "19"}]}));
        assert_eq!(
            t.render(&args, &none, "u").unwrap(),
            r#"Attach {"file_id":"19","type":"file"}"#
        );
        // A bidirectional override smuggled in through an argument (A-20).
        let t = Template::parse("Send the refund to {name}").unwrap();
        let args = map(json!({"name": "Alice \u{202E}gnp.exe"}));
        assert!(matches!(
            t.render_summary(&args, &none, "u"),
            Err(RenderError::Rules(_))
        ));
    }

    /// B-2: an optional argument (`{name?text}`) says its text when the model leaves it
    /// out or sends null, and its value otherwise; booleans read as `true` / `false`.
    #[test]
    fn b2_an_optional_argument_says_its_text_when_absent() {
        let t = Template::parse("Send to {to}; copy to {cc?nobody}; urgent: {urgent?no}").unwrap();
        assert_eq!(t.arguments(), BTreeSet::from(["cc", "to", "urgent"]));
        let none = Map::new();
        let absent = map(json!({"to": "a@x.example"}));
        assert_eq!(
            t.render(&absent, &none, "u").unwrap(),
            "Send to a@x.example; copy to nobody; urgent: no"
        );
        let null = map(json!({"to": "a@x.example", "cc": null, "urgent": true}));
        assert_eq!(
            t.render(&null, &none, "u").unwrap(),
            "Send to a@x.example; copy to nobody; urgent: true"
        );
        let given = map(json!({"to": "a@x.example", "cc": ["b@x.example", "c@x.example"]}));
        assert_eq!(
            t.render(&given, &none, "u").unwrap(),
            "Send to a@x.example; copy to b@x.example, c@x.example; urgent: no"
        );
        // Without a text, an absent argument still refuses the rendering.
        assert_eq!(
            t.render(&map(json!({"cc": "b@x.example"})), &none, "u"),
            Err(RenderError::Missing("to".into()))
        );
    }
}
