//! B-1, B-2: the bridge's one configuration file (TOML). Which upstream tools are
//! consultations — published as read-only on the tenant's word, since many servers
//! publish no annotations — and which write tools become operations, with their summary
//! templates, read-tool lookups and guards; the arguments bound by configuration (never
//! chosen by the model, removed from the schemas the platform sees); and how the person
//! reaches the upstream. Validated at start: every error names its line.

use crate::template::Template;
use countersign_domain::ids::OperationName;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use toml::Spanned;

/// One thing wrong with the file, at its line (1-based).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ConfigError {
    /// The line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Every problem the file has (none is left for later: the bridge does not start).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
pub struct ConfigErrors(pub Vec<ConfigError>);

/// Where the upstream server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upstream {
    /// A command the bridge starts and supervises, spoken to over stdio.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// Its URL.
        url: String,
    },
}

/// How the person's identity reaches the upstream write.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Identity {
    /// As this argument, set to the person's id (from `X-MCP-User-Id` only).
    Argument {
        /// The argument's name.
        name: String,
    },
    /// As this header on the upstream call.
    Header {
        /// The header's name.
        name: String,
    },
    /// Not at all (the guards alone tie the write to the person).
    None,
}

/// A call of an upstream read tool, its arguments templates (`{order_id}`, `{person}`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lookup {
    /// The read tool.
    pub tool: String,
    /// Its arguments, as templates.
    #[serde(default)]
    pub arguments: BTreeMap<String, String>,
}

/// A guard: a lookup whose `field` must equal `equals` (a template, e.g. `{person}`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Guard {
    /// What to read.
    pub lookup: Lookup,
    /// The dotted field of its result.
    pub field: String,
    /// What it must equal.
    pub equals: String,
}

/// An upstream read tool the model may call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consultation {
    /// The upstream tool.
    pub tool: String,
    /// Guards that must hold for each call (so one person cannot read another's data).
    pub guards: Vec<String>,
    /// A dotted path into the tool's JSON result: only that part is answered (for a
    /// server whose results carry more than the answer, such as its whole state).
    pub result: Option<Vec<String>>,
    /// How the person reaches the upstream read (a server that keeps data per person);
    /// `none` unless set.
    pub identity: Identity,
}

/// Sample values for `countersign-bridge check`.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sample {
    /// The person.
    #[serde(default = "sample_person")]
    pub person: String,
    /// The model's arguments.
    #[serde(default)]
    pub arguments: serde_json::Map<String, serde_json::Value>,
    /// Each lookup's result.
    #[serde(default)]
    pub lookups: serde_json::Map<String, serde_json::Value>,
}

fn sample_person() -> String {
    "countersign-test:sample".into()
}

/// An operation: an upstream write tool the person countersigns.
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    /// The operation's name (what the platform's configuration enables).
    pub name: OperationName,
    /// The upstream write tool.
    pub tool: String,
    /// How the person reaches the upstream.
    pub identity: Identity,
    /// The summary, per language (`en` always).
    pub summary: BTreeMap<String, Template>,
    /// The read-tool lookups the summary names.
    pub lookups: BTreeMap<String, Lookup>,
    /// Guards checked at preparation and again at execution.
    pub guards: Vec<String>,
    /// Sample values for `check`.
    pub sample: Option<Sample>,
}

/// The whole, validated configuration.
/// B-3: what the certification's synthetic people (N-7's `countersign-test:` prefix) act
/// as upstream.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Certification {
    /// Each synthetic person the certification acts for, and the upstream test account
    /// it acts as (`accounts = { "countersign-test:u_test" = "…" }`). A synthetic person
    /// not named here is refused.
    pub accounts: BTreeMap<String, String>,
    /// Writes for synthetic people are checked (guards, summary) and not executed
    /// upstream; the answer says so (`dry_run = true`).
    pub dry_run: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The upstream server.
    pub upstream: Upstream,
    /// Arguments bound on every upstream call (removed from the schemas shown).
    pub bind: BTreeMap<String, String>,
    /// The consultations, published read-only on the tenant's word.
    pub consultations: Vec<Consultation>,
    /// The operations.
    pub operations: Vec<Operation>,
    /// The guards, by name.
    pub guards: BTreeMap<String, Guard>,
    /// What the certification's synthetic people act as.
    pub certification: Certification,
}

// What the file holds, before validation (spans kept for the errors).

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    upstream: Spanned<RawUpstream>,
    #[serde(default)]
    bind: BTreeMap<String, String>,
    #[serde(default, rename = "consultation")]
    consultations: Vec<Spanned<RawConsultation>>,
    #[serde(default, rename = "operation")]
    operations: Vec<Spanned<RawOperation>>,
    #[serde(default, rename = "guard")]
    guards: BTreeMap<String, Spanned<Guard>>,
    certification: Option<Spanned<RawCertification>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCertification {
    #[serde(default)]
    accounts: BTreeMap<String, String>,
    #[serde(default)]
    dry_run: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUpstream {
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    url: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConsultation {
    tool: String,
    /// Must be `true`: the tenant's word that the tool only reads (recorded here).
    read_only: bool,
    #[serde(default)]
    guards: Vec<String>,
    result: Option<String>,
    #[serde(default = "no_identity")]
    identity: Identity,
}

const fn no_identity() -> Identity {
    Identity::None
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOperation {
    name: String,
    tool: String,
    identity: Identity,
    summary: BTreeMap<String, String>,
    #[serde(default)]
    lookups: BTreeMap<String, Lookup>,
    #[serde(default)]
    guards: Vec<String>,
    sample: Option<Sample>,
}

/// The names the platform reserves (A-3): never an upstream tool's published name.
const RESERVED: [&str; 3] = ["prepare_action", "execute_action", "get_action_status"];
/// The languages a summary may have (the platform's).
const LANGUAGES: [&str; 2] = ["en", "pt"];

/// The 1-based line of byte `offset` in `src`.
fn line_of(src: &str, offset: usize) -> usize {
    src.get(..offset)
        .map_or(1, |before| before.matches('\n').count() + 1)
}

impl Config {
    /// Reads and validates the file's text: every error, each at its line.
    pub fn parse(src: &str) -> Result<Self, ConfigErrors> {
        let raw: RawConfig = toml::from_str(src).map_err(|e| {
            let line = e.span().map_or(1, |s| line_of(src, s.start));
            ConfigErrors(vec![ConfigError {
                line,
                message: e.message().to_owned(),
            }])
        })?;
        let mut errors = Vec::new();
        let mut error = |offset: usize, message: String| {
            errors.push(ConfigError {
                line: line_of(src, offset),
                message,
            });
        };
        let upstream = upstream(&raw.upstream, &mut error);
        let guards: BTreeMap<String, Guard> = raw
            .guards
            .iter()
            .map(|(k, g)| (k.clone(), g.get_ref().clone()))
            .collect();
        let mut seen_tools = BTreeSet::new();
        let consultations = consultations(&raw.consultations, &guards, &mut seen_tools, &mut error);
        let mut names = BTreeSet::new();
        let mut operations = Vec::new();
        for o in &raw.operations {
            let at = o.span().start;
            if let Some(op) = operation(
                o.get_ref(),
                at,
                &guards,
                &mut seen_tools,
                &mut names,
                &mut error,
            ) {
                operations.push(op);
            }
        }
        for (name, g) in &raw.guards {
            check_lookup(
                &g.get_ref().lookup,
                g.span().start,
                &format!("guard `{name}`"),
                &mut error,
            );
            if let Err(e) = Template::parse(&g.get_ref().equals) {
                error(g.span().start, format!("guard `{name}`: `equals`: {e}"));
            }
        }
        let certification = certification(raw.certification.as_ref(), &mut error);
        if raw.operations.is_empty() {
            error(
                0,
                "no `[[operation]]`: the bridge would countersign nothing".into(),
            );
        }
        if !errors.is_empty() {
            return Err(ConfigErrors(errors));
        }
        Ok(Self {
            upstream: upstream.unwrap_or(Upstream::Http { url: String::new() }),
            bind: raw.bind,
            consultations,
            operations,
            guards,
            certification,
        })
    }
}

fn certification(
    raw: Option<&Spanned<RawCertification>>,
    error: &mut impl FnMut(usize, String),
) -> Certification {
    let Some(raw) = raw else {
        return Certification::default();
    };
    let c = raw.get_ref();
    for (person, account) in &c.accounts {
        if !person.starts_with(countersign_domain::ids::UserId::TEST_PREFIX)
            || account.trim().is_empty()
        {
            error(
                raw.span().start,
                format!(
                    "[certification]: `{person}` is not a synthetic person (`countersign-test:…`) with a test account"
                ),
            );
        }
    }
    if c.accounts.is_empty() && !c.dry_run {
        error(
            raw.span().start,
            "[certification]: give `accounts`, `dry_run = true`, or both".into(),
        );
    }
    Certification {
        accounts: c.accounts.clone(),
        dry_run: c.dry_run,
    }
}

fn consultations(
    raw: &[Spanned<RawConsultation>],
    guards: &BTreeMap<String, Guard>,
    seen_tools: &mut BTreeSet<String>,
    error: &mut impl FnMut(usize, String),
) -> Vec<Consultation> {
    let mut out = Vec::new();
    for c in raw {
        let at = c.span().start;
        let c = c.get_ref();
        if !c.read_only {
            error(
                at,
                format!(
                    "consultation `{}`: `read_only = true` records the tenant's word that it only reads; a tool that writes is an operation",
                    c.tool
                ),
            );
        }
        check_tool(&c.tool, at, seen_tools, error);
        check_guards(&c.guards, guards, at, error);
        if c.result
            .as_ref()
            .is_some_and(|r| r.split('.').any(str::is_empty))
        {
            error(
                at,
                format!(
                    "consultation `{}`: `result` is a dotted path such as `parsed_content`",
                    c.tool
                ),
            );
        }
        out.push(Consultation {
            tool: c.tool.clone(),
            guards: c.guards.clone(),
            result: c
                .result
                .as_ref()
                .map(|r| r.split('.').map(str::to_owned).collect()),
            identity: c.identity.clone(),
        });
    }
    out
}

fn upstream(raw: &Spanned<RawUpstream>, error: &mut impl FnMut(usize, String)) -> Option<Upstream> {
    let at = raw.span().start;
    let u = raw.get_ref();
    match (&u.command, &u.url) {
        (Some(command), None) if !command.trim().is_empty() => Some(Upstream::Stdio {
            command: command.clone(),
            args: u.args.clone(),
        }),
        (None, Some(url)) if url.starts_with("http://") || url.starts_with("https://") => {
            if !u.args.is_empty() {
                error(at, "[upstream]: `args` go with `command`, not `url`".into());
            }
            Some(Upstream::Http { url: url.clone() })
        }
        (None, Some(_)) => {
            error(at, "[upstream]: `url` must be http:// or https://".into());
            None
        }
        _ => {
            error(
                at,
                "[upstream]: give exactly one of `command` (stdio) or `url` (Streamable HTTP)"
                    .into(),
            );
            None
        }
    }
}

fn check_tool(
    tool: &str,
    at: usize,
    seen: &mut BTreeSet<String>,
    error: &mut impl FnMut(usize, String),
) {
    if tool.trim().is_empty() {
        error(at, "a tool name is empty".into());
    } else if RESERVED.contains(&tool) {
        error(
            at,
            format!("`{tool}` is a name the platform reserves (A-3)"),
        );
    } else if !seen.insert(tool.to_owned()) {
        error(
            at,
            format!(
                "tool `{tool}` is configured twice (a tool is a consultation or an operation, once)"
            ),
        );
    }
}

fn check_guards(
    named: &[String],
    guards: &BTreeMap<String, Guard>,
    at: usize,
    error: &mut impl FnMut(usize, String),
) {
    for g in named {
        if !guards.contains_key(g) {
            error(at, format!("guard `{g}` is not defined (`[guard.{g}]`)"));
        }
    }
}

fn check_lookup(lookup: &Lookup, at: usize, what: &str, error: &mut impl FnMut(usize, String)) {
    if RESERVED.contains(&lookup.tool.as_str()) || lookup.tool.trim().is_empty() {
        error(at, format!("{what}: its lookup names no usable read tool"));
    }
    for (arg, t) in &lookup.arguments {
        if let Err(e) = Template::parse(t) {
            error(at, format!("{what}: lookup argument `{arg}`: {e}"));
        }
    }
}

fn operation(
    o: &RawOperation,
    at: usize,
    guards: &BTreeMap<String, Guard>,
    seen_tools: &mut BTreeSet<String>,
    names: &mut BTreeSet<String>,
    error: &mut impl FnMut(usize, String),
) -> Option<Operation> {
    let name = match OperationName::parse(o.name.as_str()) {
        Ok(n) => Some(n),
        Err(e) => {
            error(at, format!("operation `{}`: {e}", o.name));
            None
        }
    };
    if !names.insert(o.name.clone()) {
        error(at, format!("operation `{}` is configured twice", o.name));
    }
    check_tool(&o.tool, at, seen_tools, error);
    check_guards(&o.guards, guards, at, error);
    let what = format!("operation `{}`", o.name);
    for (l, lookup) in &o.lookups {
        check_lookup(lookup, at, &format!("{what}, lookup `{l}`"), error);
    }
    if !o.summary.contains_key("en") {
        error(
            at,
            format!("{what}: `summary.en` is required (the summary in English)"),
        );
    }
    let mut summary = BTreeMap::new();
    for (lang, text) in &o.summary {
        if !LANGUAGES.contains(&lang.as_str()) {
            error(
                at,
                format!("{what}: `summary.{lang}`: the languages are en and pt"),
            );
            continue;
        }
        match Template::parse(text) {
            Ok(t) => {
                for l in t.lookups() {
                    if !o.lookups.contains_key(l) {
                        error(
                            at,
                            format!(
                                "{what}: `summary.{lang}` names lookup `{l}`, which `lookups` does not define"
                            ),
                        );
                    }
                }
                summary.insert(lang.clone(), t);
            }
            Err(e) => error(at, format!("{what}: `summary.{lang}`: {e}")),
        }
    }
    if let Identity::Argument { name } | Identity::Header { name } = &o.identity
        && name.trim().is_empty()
    {
        error(at, format!("{what}: `identity.name` is empty"));
    }
    Some(Operation {
        name: name?,
        tool: o.tool.clone(),
        identity: o.identity.clone(),
        summary,
        lookups: o.lookups.clone(),
        guards: o.guards.clone(),
        sample: o.sample.clone(),
    })
}

/// `countersign-bridge check`: every operation's summary rendered, in each language,
/// against its `sample` (an operation without one is reported as not rendered).
pub fn check_samples(config: &Config) -> Vec<(String, String, Result<String, String>)> {
    let mut out = Vec::new();
    for op in &config.operations {
        for (lang, t) in &op.summary {
            let rendered = match &op.sample {
                None => Err("no `sample`: not rendered".to_owned()),
                Some(s) => t
                    .render_summary(&s.arguments, &s.lookups, &s.person)
                    .map(|s| s.as_str().to_owned())
                    .map_err(|e| e.to_string()),
            };
            out.push((op.name.to_string(), lang.clone(), rendered));
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const RETAIL: &str = include_str!("../examples/retail.toml");

    /// B-1, B-2: the retail example is valid: a stdio upstream, the bound `state_key`,
    /// consultations on the tenant's word, operations with lookups and guards, and every
    /// sample renders a summary the rules accept.
    #[test]
    fn b1_the_retail_configuration_is_valid_and_its_summaries_render() {
        let c = Config::parse(RETAIL).unwrap();
        assert!(matches!(c.upstream, Upstream::Stdio { .. }));
        assert!(c.bind.contains_key("state_key"));
        assert!(c.operations.len() >= 4);
        for (op, lang, rendered) in check_samples(&c) {
            assert!(rendered.is_ok(), "{op} ({lang}): {rendered:?}");
        }
    }

    /// B-4: the Lambda form's packaged configuration (an HTTP upstream) is valid too.
    #[test]
    fn b1_b4_the_lambda_forms_configuration_is_valid_and_its_summaries_render() {
        let c = Config::parse(include_str!("../deploy/bridge.toml")).unwrap();
        assert!(matches!(c.upstream, Upstream::Http { .. }));
        let rendered = check_samples(&c);
        assert_eq!(rendered.len(), 2, "both languages of the one operation");
        for (op, lang, rendered) in rendered {
            assert!(rendered.is_ok(), "{op} ({lang}): {rendered:?}");
        }
    }

    /// B-1 (bad input): each mistake is refused with its line, all of them at once.
    #[test]
    fn b1_a_bad_file_names_each_line_that_is_wrong() {
        let bad = r#"
[upstream]
command = "server"
url = "http://127.0.0.1:9/mcp"

[[consultation]]
tool = "get_order_details"
read_only = false

[[operation]]
name = "Not A Name"
tool = "get_order_details"
identity = { kind = "none" }
summary.pt = "Cancelar {lookup.order.items}"
guards = ["missing"]
"#;
        let errors = Config::parse(bad).unwrap_err().0;
        let lines: BTreeSet<usize> = errors.iter().map(|e| e.line).collect();
        // Each error names the line of the table it is in.
        assert!(lines.contains(&2), "{errors:?}"); // [upstream]: command and url
        assert!(lines.contains(&6), "{errors:?}"); // the consultation: read_only = false
        assert!(lines.contains(&10), "{errors:?}"); // the operation
        let text = ConfigErrors(errors).to_string();
        for expected in [
            "exactly one of",
            "read_only",
            "configured twice",
            "summary.en",
            "lookup `order`",
            "guard `missing`",
        ] {
            assert!(text.contains(expected), "{expected}: {text}");
        }
        let syntax = Config::parse("[upstream]\ncommand = \n").unwrap_err().0;
        assert_eq!(syntax[0].line, 2, "{syntax:?}");
        let reserved = Config::parse("[upstream]\ncommand = \"s\"\n[[operation]]\nname = \"x\"\ntool = \"execute_action\"\nidentity = { kind = \"none\" }\nsummary.en = \"x\"\n").unwrap_err();
        assert!(reserved.to_string().contains("reserves"), "{reserved}");
    }
}
