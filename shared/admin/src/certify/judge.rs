//! How a run reads the provider's answers: what each one says, in words a provider
//! engineer can act on.

use super::forge::BadProof;
use countersign_domain::config::McpConfig;
use countersign_domain::ids::ActionId;
use countersign_domain::language::Translated;
use countersign_domain::outcome::{ActionAnswer, parse_action_answer};
use countersign_domain::ports::{ProviderError, ProviderTool};
use countersign_domain::proposal::RemoteStatus;
use countersign_domain::text::SafeText;
use countersign_domain::texts::Said;
use countersign_domain::tool_result::ToolResult;
use countersign_domain::{said, vetting};
use serde_json::{Map, Value, json};

/// Why a provider call gave no usable answer, for a reason.
pub(super) fn call_failure(e: &ProviderError) -> Said {
    match e {
        ProviderError::Unreachable(_) => said!(
            "your server could not be reached",
            "não foi possível alcançar o seu servidor"
        ),
        ProviderError::Timeout => said!(
            "your server did not answer in time",
            "o seu servidor não respondeu a tempo"
        ),
        ProviderError::Interrupted => said!(
            "the connection dropped before the whole answer",
            "a conexão caiu antes da resposta completa"
        ),
        ProviderError::Http { status } => said!(
            "the provider answered HTTP {status}",
            "o provedor respondeu HTTP {status}"
        ),
        ProviderError::Malformed(_) => said!(
            "the provider's answer is malformed",
            "a resposta do provedor está malformada"
        ),
        ProviderError::Protocol { code } => said!(
            "the provider answered a protocol error {code}",
            "o provedor respondeu um erro de protocolo {code}"
        ),
    }
}

/// H-2: a consultation is listed with an `outputSchema` and is not a write.
pub(super) fn listed(tool: &ProviderTool, config: &McpConfig) -> Result<Said, Said> {
    let name = tool.name.as_str();
    let mut problems = Vec::new();
    if tool.output_schema.is_none() {
        problems.push(said!(
            "`{name}` declares no outputSchema: declare one, and answer structuredContent that matches it",
            "`{name}` não declara outputSchema: declare um e responda structuredContent de acordo com ele"
        ));
    }
    // H-2 by V-1's rule, the one the save and the run time apply.
    if let Some(why) = vetting::refusal(tool, &config.action_policy.operations) {
        problems.push(said!(
            "`{name}` {why}: a consultation must only read; remove it from allowedTools",
            "`{name}`: {why}; uma consulta só pode ler: remova-a de allowedTools",
            why = Said::each(|lang| why.message(lang))
        ));
    }
    if problems.is_empty() {
        Ok(said!(
            "`{name}` is listed, read-only, with an outputSchema",
            "`{name}` está listada, só de leitura, com um outputSchema"
        ))
    } else {
        Err(Said::join(&problems, "; "))
    }
}

/// Whether a consultation's answer is a result whose `structuredContent` matches the
/// tool's `outputSchema`.
pub(super) fn conforms(tool: &ProviderTool, raw: &Value) -> Result<(), Said> {
    let obj = raw.as_object().ok_or_else(|| {
        said!(
            "the answer is not a CallToolResult object",
            "a resposta não é um objeto CallToolResult"
        )
    })?;
    if let Some(words) = refusal_text(raw) {
        return Err(said!(
            "the call answered isError ({words}): check the sample arguments and that the test person exists in your system",
            "a chamada respondeu isError ({words}): confira os argumentos de exemplo e se a pessoa de teste existe no seu sistema",
            words = words
        ));
    }
    let Some(schema) = &tool.output_schema else {
        return Err(said!("no outputSchema", "sem outputSchema"));
    };
    let Some(sc) = obj.get("structuredContent") else {
        return Err(said!(
            "the answer has no structuredContent although the tool declares an outputSchema",
            "a resposta não tem structuredContent, embora a ferramenta declare um outputSchema"
        ));
    };
    let validator = jsonschema::validator_for(schema).map_err(|_| {
        said!(
            "the tool's outputSchema is not a valid JSON Schema",
            "o outputSchema da ferramenta não é um JSON Schema válido"
        )
    })?;
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
        // The validator's own words (a library's, in English) are quoted as they are.
        Err(said!(
            "structuredContent does not match the outputSchema: {problems}",
            "structuredContent não corresponde ao outputSchema; o validador diz (em inglês): {problems}",
            problems = Said::verbatim(problems.join("; "))
        ))
    }
}

/// What is wrong with action tool `name` in `tools`, if anything.
pub(super) fn action_tool_problem(
    tools: &[ProviderTool],
    name: &str,
    args: &[&str],
) -> Option<Said> {
    let Some(tool) = tools.iter().find(|t| t.name.as_str() == name) else {
        return Some(said!(
            "`{name}` is not in tools/list",
            "`{name}` não está em tools/list"
        ));
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
        let missing = missing.join(", ");
        said!(
            "`{name}`'s inputSchema does not declare {missing}",
            "o inputSchema de `{name}` não declara {missing}"
        )
    })
}

/// The provider's own words when `raw` is an `isError` result: its first text block, shown
/// only when it passes the rules a summary must pass (no control or invisible characters,
/// no internal address, nothing shaped like a secret) and cut to 300 characters; `None`
/// when `raw` is not an error.
pub(super) fn refusal_text(raw: &Value) -> Option<Said> {
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
            said!(
                "your server said: \"{cut}…\"",
                "o seu servidor disse: \"{cut}…\""
            )
        }
        Ok(_) => said!(
            "your server said: \"{text}\"",
            "o seu servidor disse: \"{text}\""
        ),
        Err(v) => {
            let list = countersign_domain::text::ViolationList(&v);
            said!(
                "its text is not shown: {list}",
                "o texto não é mostrado: {list}",
                list = list.said()
            )
        }
    })
}

/// How a check that the provider must refuse something ended.
pub(super) enum Refusal {
    /// Refused: how.
    Refused(Said),
    /// Not refused: what it answered.
    Accepted(Said),
    /// No answer to judge (skipped, never a pass).
    NoAnswer(Said),
}

/// What `get_action_status` said about an action.
pub(super) enum Seen {
    Status(RemoteStatus),
    /// No usable answer: why.
    Unusable(Said),
}

/// N-7: whether `second` carries the first person's data: the same `structuredContent`, or
/// at least half (and at least one)
/// of the distinctive values of `first`'s answer — its strings of 3 or more characters and
/// its numbers of 3 or more digits, leaving out what the request itself named (`sample`) —
/// appear among `second`'s values.
pub(super) fn leaked(first: &Value, second: &Value, sample: &Map<String, Value>) -> bool {
    fn leaves(v: &Value, out: &mut std::collections::BTreeSet<String>) {
        match v {
            Value::String(s) if s.chars().count() >= 3 => {
                out.insert(s.clone());
            }
            Value::Number(n) if n.to_string().chars().filter(char::is_ascii_digit).count() >= 3 => {
                out.insert(n.to_string());
            }
            Value::Array(a) => a.iter().for_each(|v| leaves(v, out)),
            Value::Object(o) => o.values().for_each(|v| leaves(v, out)),
            _ => {}
        }
    }
    let data = |raw: &Value| {
        let mut out = std::collections::BTreeSet::new();
        leaves(
            raw.get("structuredContent").unwrap_or(&Value::Null),
            &mut out,
        );
        for c in raw["content"].as_array().into_iter().flatten() {
            if let Some(text) = c["text"].as_str() {
                match serde_json::from_str::<Value>(text) {
                    Ok(v) => leaves(&v, &mut out),
                    Err(_) => leaves(&json!(text), &mut out),
                }
            }
        }
        out
    };
    let mut asked = std::collections::BTreeSet::new();
    leaves(&Value::Object(sample.clone()), &mut asked);
    let theirs: Vec<String> = data(first).difference(&asked).cloned().collect();
    let seen = data(second);
    let found = theirs.iter().filter(|v| seen.contains(*v)).count();
    let same = first.get("structuredContent").is_some()
        && first.get("structuredContent") == second.get("structuredContent");
    same || (found > 0 && found * 2 >= theirs.len())
}

/// Whether a call the provider must refuse was refused: an HTTP 4xx or an `isError`
/// answer is a refusal; a normal answer is not (`accepted` says what to fix); no answer
/// cannot be judged.
pub(super) fn refused(
    answer: Result<Value, ProviderError>,
    what: &Said,
    accepted: impl FnOnce(&Value) -> Said,
) -> Refusal {
    match answer {
        Err(ProviderError::Http { status }) if (400..500).contains(&status) => {
            Refusal::Refused(said!(
                "{what} was refused (HTTP {status})",
                "{what}: recusada (HTTP {status})",
                what = what
            ))
        }
        Err(e) => Refusal::NoAnswer(said!(
            "{what} got no answer: {e}",
            "{what}: sem resposta: {e}",
            what = what,
            e = call_failure(&e)
        )),
        Ok(raw) => match refusal_text(&raw) {
            Some(words) => Refusal::Refused(said!(
                "{what} was refused with isError ({words})",
                "{what}: recusada com isError ({words})",
                what = what,
                words = words
            )),
            None => Refusal::Accepted(said!(
                "{what} was not refused: {why}",
                "{what}: não foi recusada: {why}",
                what = what,
                why = accepted(&raw)
            )),
        },
    }
}

/// A bad proof's verdict: its `execute_action` answer, then what `get_action_status` said
/// after it (the action must still be `pending_confirmation`).
pub(super) fn after_bad_proof(execute: Refusal, seen: Seen, bad: &BadProof) -> Refusal {
    let (what, fix) = (bad.what(), bad.fix());
    match (execute, seen) {
        (Refusal::Accepted(what), _) => Refusal::Accepted(what),
        (_, Seen::Status(s)) if s != RemoteStatus::PendingConfirmation => {
            let executed = matches!(s, RemoteStatus::Completed | RemoteStatus::Executing);
            let then = if executed {
                said!("the action was executed", "a ação foi executada")
            } else {
                said!(
                    "the action must still be pending_confirmation",
                    "a ação ainda deve estar pending_confirmation"
                )
            };
            Refusal::Accepted(said!(
                "given {what}, get_action_status says `{s}`: {then}: {fix}",
                "com {what}, get_action_status diz `{s}`: {then}: {fix}",
                what = what,
                s = s.as_str(),
                then = then,
                fix = fix
            ))
        }
        (Refusal::NoAnswer(why), _) | (_, Seen::Unusable(why)) => Refusal::NoAnswer(why),
        (Refusal::Refused(how), Seen::Status(_)) => Refusal::Refused(said!(
            "{how}; get_action_status says `pending_confirmation`",
            "{how}; get_action_status diz `pending_confirmation`",
            how = how
        )),
    }
}

/// An `execute_action` answer read as a status report.
pub(super) fn read_report(
    raw: &Value,
    id: &ActionId,
) -> Result<countersign_domain::outcome::ActionReport, Said> {
    let result = ToolResult::from_mcp_json(raw).map_err(|_| not_a_result("execute_action"))?;
    match parse_action_answer(&result, id) {
        Ok(ActionAnswer::Reported(r)) => Ok(r),
        Ok(ActionAnswer::ToolError) => Err(said!(
            "execute_action answered isError",
            "execute_action respondeu isError"
        )),
        Err(v) => Err(breaks_contract("execute_action", &v)),
    }
}

/// `tool`'s answer is not a `CallToolResult`.
pub(super) fn not_a_result(tool: &str) -> Said {
    said!(
        "{tool}'s answer is not an MCP tool result",
        "a resposta de {tool} não é um resultado de ferramenta MCP"
    )
}

/// `tool`'s answer breaks the actions contract: each rule it breaks, once.
pub(super) fn breaks_contract(
    tool: &str,
    v: &[countersign_domain::contract::ContractViolation],
) -> Said {
    said!(
        "{tool}'s answer breaks the contract: {rules}",
        "a resposta de {tool} viola o contrato: {rules}",
        rules = countersign_domain::contract::ContractViolation::all_said(v)
    )
}
