//! How a run reads the provider's answers: what each one says, in words a provider
//! engineer can act on.

use countersign_domain::config::McpConfig;
use countersign_domain::ports::{ProviderError, ProviderTool};
use countersign_domain::text::SafeText;
use countersign_domain::vetting;
use serde_json::Value;

/// Why a provider call gave no usable answer, for a reason.
pub(super) fn call_failure(e: &ProviderError) -> String {
    match e {
        ProviderError::Unreachable(_) => "your server could not be reached".into(),
        ProviderError::Timeout => "your server did not answer in time".into(),
        ProviderError::Interrupted => "the connection dropped before the whole answer".into(),
        other => other.to_string(),
    }
}

/// H-2: a consultation is listed with an `outputSchema` and is not a write.
pub(super) fn listed(tool: &ProviderTool, config: &McpConfig) -> Result<String, String> {
    let name = tool.name.as_str();
    let mut problems = Vec::new();
    if tool.output_schema.is_none() {
        problems.push(format!("`{name}` declares no outputSchema: declare one, and answer structuredContent that matches it"));
    }
    // H-2 by V-1's rule, the one the save and the run time apply.
    if let Some(why) = vetting::refusal(tool, &config.action_policy.operations) {
        problems.push(format!(
            "`{name}` {why}: a consultation must only read; remove it from allowedTools"
        ));
    }
    if problems.is_empty() {
        Ok(format!(
            "`{name}` is listed, read-only, with an outputSchema"
        ))
    } else {
        Err(problems.join("; "))
    }
}

/// Whether a consultation's answer is a result whose `structuredContent` matches the
/// tool's `outputSchema`.
pub(super) fn conforms(tool: &ProviderTool, raw: &Value) -> Result<(), String> {
    let obj = raw
        .as_object()
        .ok_or("the answer is not a CallToolResult object")?;
    if let Some(words) = refusal_text(raw) {
        return Err(format!(
            "the call answered isError ({words}): check the sample arguments and that the test person exists in your system"
        ));
    }
    let Some(schema) = &tool.output_schema else {
        return Err("no outputSchema".into());
    };
    let Some(sc) = obj.get("structuredContent") else {
        return Err(
            "the answer has no structuredContent although the tool declares an outputSchema".into(),
        );
    };
    let validator = jsonschema::validator_for(schema)
        .map_err(|_| "the tool's outputSchema is not a valid JSON Schema".to_owned())?;
    let problems: Vec<String> = validator
        .iter_errors(sc)
        .take(3)
        .map(|e| {
            let at = e.instance_path.as_str();
            format!("{} at `{}`", e, if at.is_empty() { "/" } else { at })
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "structuredContent does not match the outputSchema: {}",
            problems.join("; ")
        ))
    }
}

/// What is wrong with action tool `name` in `tools`, if anything.
pub(super) fn action_tool_problem(
    tools: &[ProviderTool],
    name: &str,
    args: &[&str],
) -> Option<String> {
    let Some(tool) = tools.iter().find(|t| t.name.as_str() == name) else {
        return Some(format!("`{name}` is not in tools/list"));
    };
    let properties = tool
        .descriptor
        .get("inputSchema")
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    let missing: Vec<&str> = args
        .iter()
        .copied()
        .filter(|a| properties.is_none_or(|p| !p.contains_key(*a)))
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "`{name}`'s inputSchema does not declare {}",
            missing.join(", ")
        )
    })
}

/// The provider's own words when `raw` is an `isError` result: its first text block, shown
/// only when it passes the rules a summary must pass (no control or invisible characters,
/// no internal address, nothing shaped like a secret) and cut to 300 characters; `None`
/// when `raw` is not an error.
pub(super) fn refusal_text(raw: &Value) -> Option<String> {
    if raw.get("isError").and_then(Value::as_bool) != Some(true) {
        return None;
    }
    let text = raw
        .get("content")
        .and_then(|c| c.get(0))
        .and_then(|c| c.get("text"))
        .and_then(Value::as_str)
        .unwrap_or("");
    Some(match SafeText::check(text) {
        Ok(_) if text.chars().count() > 300 => {
            let cut: String = text.chars().take(300).collect();
            format!("your server said: \"{cut}…\"")
        }
        Ok(_) => format!("your server said: \"{text}\""),
        Err(v) => format!(
            "its text is not shown: {}",
            countersign_domain::text::ViolationList(&v)
        ),
    })
}
