//! B-1, B-2: the bridge's core, transport-free. It knows the configuration, the upstream's
//! tools (read once at start) and the store; [`Bridge::call`] answers one `tools/call`
//! of the platform for an authenticated identity.
//!
//! What the platform sees: each configured consultation, published read-only on the
//! tenant's word with the bound arguments removed from its schema, and the three tools
//! of the actions protocol. Nothing else is callable: the upstream's write tools are
//! reached only through a countersigned `execute_action`.

use crate::config::{Config, Guard, Identity as Binding, Lookup};
use crate::store::Store;
use crate::template::Template;
use crate::upstream::{CallHeader, Upstream, UpstreamError, result_json};
use countersign_domain::ids::UserId;
use countersign_provider_kit::{Identity, Verifier};
use rmcp::model::{CallToolResult, ContentBlock, Tool};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// Counters for `/metrics`.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Consultations answered.
    pub consultations: AtomicU64,
    /// Proposals prepared.
    pub prepared: AtomicU64,
    /// Preparations or consultations a guard refused.
    pub guard_refusals: AtomicU64,
    /// Proofs refused (bad, replayed, for another action).
    pub proof_refusals: AtomicU64,
    /// Executions that ended in `conflict`.
    pub conflicts: AtomicU64,
    /// Upstream write calls sent (each at most once per action).
    pub upstream_writes: AtomicU64,
    /// Writes whose answer was lost (left `executing` for `settle`).
    pub in_doubt: AtomicU64,
}

impl Metrics {
    /// Prometheus text exposition.
    pub fn render(&self) -> String {
        let rows = [
            ("consultations", &self.consultations),
            ("prepared", &self.prepared),
            ("guard_refusals", &self.guard_refusals),
            ("proof_refusals", &self.proof_refusals),
            ("conflicts", &self.conflicts),
            ("upstream_writes", &self.upstream_writes),
            ("in_doubt", &self.in_doubt),
        ];
        rows.iter()
            .map(|(name, v)| {
                format!(
                    "# TYPE countersign_bridge_{name}_total counter\ncountersign_bridge_{name}_total {}\n",
                    v.load(Ordering::Relaxed)
                )
            })
            .collect()
    }
}

/// Why the bridge does not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The upstream's tools could not be read.
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// The configuration does not fit the upstream (each problem listed).
    #[error("the configuration does not fit the upstream server:\n{}", .0.join("\n"))]
    Mismatch(Vec<String>),
}

/// Settings that are not the configuration file's.
#[derive(Debug, Clone)]
pub struct Settings {
    /// A proposal's lifetime (at most 5 minutes, A-14).
    pub proposal_ttl: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            proposal_ttl: Duration::from_secs(240),
        }
    }
}

/// One person's lock (per tenant and person).
type PersonLock = Arc<tokio::sync::Mutex<()>>;

/// The bridge.
pub struct Bridge {
    pub(crate) config: Config,
    pub(crate) digest: String,
    pub(crate) upstream: Arc<dyn Upstream>,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) verifier: Verifier,
    pub(crate) settings: Settings,
    /// The upstream's tools by name, as read at start.
    pub(crate) tools: HashMap<String, Tool>,
    pub(crate) validators: HashMap<String, jsonschema::Validator>,
    locks: Mutex<HashMap<(String, String), PersonLock>>,
    /// The counters.
    pub metrics: Metrics,
}

countersign_domain::debug_showing!(Bridge { digest });

/// A refusal for the platform: a tool error with safe text.
pub(crate) fn refuse(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// Why a guard or a lookup did not give its answer.
#[derive(Debug)]
pub(crate) enum Check {
    /// The guard does not hold (or its lookup found nothing): refused.
    Refused(String),
    /// The upstream could not be asked.
    Unavailable(UpstreamError),
}

impl Check {
    pub(crate) fn into_result(self) -> CallToolResult {
        match self {
            Self::Refused(why) => refuse(&why),
            Self::Unavailable(e) => {
                tracing::warn!(error = %e, "upstream lookup failed");
                refuse("the system behind this assistant is unavailable; nothing was changed")
            }
        }
    }
}

/// Who the person is upstream: themselves, or the certification's test account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Upstreamed {
    pub person: String,
    pub dry_run: bool,
}

impl Bridge {
    /// Reads the upstream's tools and checks the configuration against them: every
    /// configured tool exists, and no consultation is one the upstream itself declares
    /// destructive or not read-only (B-1).
    pub async fn start(
        config: Config,
        digest: String,
        upstream: Arc<dyn Upstream>,
        store: Arc<dyn Store>,
        verifier: Verifier,
        settings: Settings,
    ) -> Result<Self, StartError> {
        let listed = upstream.tools().await?;
        let tools: HashMap<String, Tool> = listed
            .into_iter()
            .map(|t| (t.name.to_string(), t))
            .collect();
        let problems = mismatches(&config, &tools);
        if !problems.is_empty() {
            return Err(StartError::Mismatch(problems));
        }
        let validators = tools
            .iter()
            .filter_map(|(name, t)| {
                let schema = Value::Object((*t.input_schema).clone());
                jsonschema::validator_for(&schema)
                    .ok()
                    .map(|v| (name.clone(), v))
            })
            .collect();
        Ok(Self {
            config,
            digest,
            upstream,
            store,
            verifier,
            settings,
            tools,
            validators,
            locks: Mutex::new(HashMap::new()),
            metrics: Metrics::default(),
        })
    }

    /// Whether the upstream answers `tools/list` now.
    pub async fn upstream_health(&self) -> Result<(), UpstreamError> {
        self.upstream.tools().await.map(|_| ())
    }

    /// The configuration's digest (SHA-256 of the file): recorded with each action.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The lock one person's preparations and executions take (per tenant and person):
    /// a guard checked at execution and the write it allows run under it.
    pub(crate) fn lock_for(&self, who: &Identity) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        locks
            .entry((who.tenant_id.clone(), who.user_id.clone()))
            .or_default()
            .clone()
    }

    /// The person as the upstream knows them (N-7: the certification's synthetic people
    /// map to the configured test account, or to a dry run).
    pub(crate) fn upstreamed(&self, person: &str) -> Result<Upstreamed, CallToolResult> {
        let certification = &self.config.certification;
        if !person.starts_with(UserId::TEST_PREFIX) {
            return Ok(Upstreamed {
                person: person.to_owned(),
                dry_run: false,
            });
        }
        match certification.accounts.get(person) {
            Some(account) => Ok(Upstreamed {
                person: account.clone(),
                dry_run: certification.dry_run,
            }),
            None if certification.dry_run && certification.accounts.is_empty() => Ok(Upstreamed {
                person: person.to_owned(),
                dry_run: true,
            }),
            None => Err(refuse(
                "this bridge maps no upstream account to this certification person",
            )),
        }
    }

    /// The consultations the platform sees (the catalog adds the protocol's tools:
    /// `Bridge::catalog`, in `actions`).
    pub(crate) fn published_consultations(&self) -> Vec<Tool> {
        self.config
            .consultations
            .iter()
            .filter_map(|c| {
                self.tools
                    .get(&c.tool)
                    .map(|t| self.published_consultation(c, t))
            })
            .collect()
    }

    fn published_consultation(
        &self,
        consultation: &crate::config::Consultation,
        upstream: &Tool,
    ) -> Tool {
        let mut t = serde_json::to_value(upstream).unwrap_or(Value::Null);
        if let Some(schema) = t.get_mut("inputSchema") {
            let hidden = match &consultation.identity {
                Binding::Argument { name } => Some(name.as_str()),
                _ => None,
            };
            strip(
                schema,
                self.config.bind.keys().map(String::as_str).chain(hidden),
            );
        }
        if wrapped(consultation, upstream) {
            // H-2: an answer the platform can check; the upstream declares none (or only
            // part of its answer is given): `{"result": …}`.
            t["outputSchema"] =
                json!({"type": "object", "properties": {"result": {}}, "required": ["result"]});
        }
        // B-1: read-only on the tenant's word (`read_only = true` in the file).
        t["annotations"] = json!({"readOnlyHint": true, "destructiveHint": false});
        serde_json::from_value(t).unwrap_or_else(|_| upstream.clone())
    }

    /// The upstream's input schema of `tool`, without the bound arguments and `hidden`.
    pub(crate) fn visible_schema(&self, tool: &str, hidden: Option<&str>) -> Value {
        let mut schema = self.tools.get(tool).map_or(json!({"type": "object"}), |t| {
            Value::Object((*t.input_schema).clone())
        });
        strip(
            &mut schema,
            self.config.bind.keys().map(String::as_str).chain(hidden),
        );
        schema
    }

    /// Answers one `tools/call` for `who`. `proof` is `X-MCP-Confirmation`, `language`
    /// the optional `X-MCP-Language`.
    pub async fn call(
        &self,
        who: &Identity,
        name: &str,
        args: Map<String, Value>,
        proof: Option<&str>,
        language: Option<&str>,
    ) -> CallToolResult {
        match name {
            "prepare_action" => self.prepare(who, &args, language).await,
            "execute_action" => self.execute(who, &args, proof).await,
            "get_action_status" => self.status(who, &args).await,
            _ => match self.config.consultations.iter().find(|c| c.tool == name) {
                Some(c) => self.consult(who, c, args).await,
                None => refuse(&format!("unknown tool: {name}")),
            },
        }
    }

    async fn consult(
        &self,
        who: &Identity,
        consultation: &crate::config::Consultation,
        args: Map<String, Value>,
    ) -> CallToolResult {
        let (tool, guards) = (consultation.tool.as_str(), &consultation.guards);
        let person = match self.upstreamed(&who.user_id) {
            Ok(p) => p,
            Err(refusal) => return refusal,
        };
        let (identity, header) = Self::identity_of(&consultation.identity, &person.person);
        let full = match self.with_bound(tool, args, identity) {
            Ok(a) => a,
            Err(refusal) => return refusal,
        };
        if let Err(c) = self.check_guards(guards, &full, &person.person).await {
            self.metrics.guard_refusals.fetch_add(1, Ordering::Relaxed);
            return c.into_result();
        }
        self.metrics.consultations.fetch_add(1, Ordering::Relaxed);
        let declared = self.tools.get(tool);
        match self.upstream.call(tool, full, header).await {
            Ok(result) if result.is_error == Some(true) => result,
            Ok(result) if declared.is_some_and(|t| wrapped(consultation, t)) => {
                project(&result, consultation.result.as_deref().unwrap_or_default())
            }
            Ok(result) => result,
            Err(e) => Check::Unavailable(e).into_result(),
        }
    }

    /// The model's `args` with the bound arguments (and the person, as `identity`)
    /// added, validated against the upstream tool's input schema. The model may not set
    /// a bound argument or the identity itself.
    pub(crate) fn with_bound(
        &self,
        tool: &str,
        mut args: Map<String, Value>,
        identity: Option<(&str, &str)>,
    ) -> Result<Map<String, Value>, CallToolResult> {
        let bound = self.config.bind.keys().map(String::as_str);
        if let Some(name) = bound
            .chain(identity.map(|(n, _)| n))
            .find(|n| args.contains_key(*n))
        {
            return Err(refuse(&format!(
                "argument `{name}` is set by the bridge, never by the assistant"
            )));
        }
        for (k, v) in &self.config.bind {
            args.insert(k.clone(), Value::String(v.clone()));
        }
        if let Some((name, person)) = identity {
            args.insert(name.to_owned(), Value::String(person.to_owned()));
        }
        let instance = Value::Object(args);
        if let Some(v) = self.validators.get(tool)
            && let Some(e) = v.iter_errors(&instance).next()
        {
            let at = e.instance_path.to_string();
            return Err(refuse(&format!(
                "the arguments do not fit `{tool}`: {}{}",
                if at.is_empty() { "" } else { "at " },
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            )));
        }
        match instance {
            Value::Object(m) => Ok(m),
            _ => Err(refuse("arguments must be an object")),
        }
    }

    /// Runs each named guard: its lookup, then its field against its `equals`.
    pub(crate) async fn check_guards(
        &self,
        names: &[String],
        args: &Map<String, Value>,
        person: &str,
    ) -> Result<(), Check> {
        for name in names {
            let Some(guard) = self.config.guards.get(name) else {
                return Err(Check::Refused(format!("guard `{name}` is not defined")));
            };
            self.check_guard(name, guard, args, person).await?;
        }
        Ok(())
    }

    async fn check_guard(
        &self,
        name: &str,
        guard: &Guard,
        args: &Map<String, Value>,
        person: &str,
    ) -> Result<(), Check> {
        let refused = || Check::Refused("not found".to_owned());
        let found = self.lookup(&guard.lookup, args, person).await?;
        let path: Vec<String> = guard.field.split('.').map(str::to_owned).collect();
        let actual = crate::template::resolve(&found, &path).ok_or_else(refused)?;
        let expected = Template::parse(&guard.equals)
            .and_then(|t| {
                t.render(args, &Map::new(), person)
                    .map_err(|e| e.to_string())
            })
            .map_err(|_| refused())?;
        let actual = match actual {
            Value::String(s) => s,
            other => other.to_string(),
        };
        if actual == expected {
            Ok(())
        } else {
            tracing::info!(guard = name, "guard refused");
            // The same answer as a resource that does not exist: another person's
            // order is not shown to exist.
            Err(refused())
        }
    }

    /// Calls a lookup's read tool with its rendered arguments (and the bound ones).
    pub(crate) async fn lookup(
        &self,
        lookup: &Lookup,
        args: &Map<String, Value>,
        person: &str,
    ) -> Result<Value, Check> {
        let mut call = Map::new();
        for (k, t) in &lookup.arguments {
            let rendered = Template::parse(t)
                .and_then(|t| {
                    t.render(args, &Map::new(), person)
                        .map_err(|e| e.to_string())
                })
                .map_err(|e| Check::Refused(format!("lookup argument `{k}`: {e}")))?;
            call.insert(k.clone(), Value::String(rendered));
        }
        for (k, v) in &self.config.bind {
            call.insert(k.clone(), Value::String(v.clone()));
        }
        let result = self
            .upstream
            .call(&lookup.tool, call, None)
            .await
            .map_err(Check::Unavailable)?;
        if result.is_error == Some(true) {
            return Err(Check::Refused("not found".to_owned()));
        }
        Ok(result_json(&result))
    }

    /// The header or argument through which `binding` carries `person` upstream.
    pub(crate) fn identity_of<'a>(
        binding: &'a Binding,
        person: &'a str,
    ) -> (Option<(&'a str, &'a str)>, CallHeader<'a>) {
        match binding {
            Binding::Argument { name } => (Some((name.as_str(), person)), None),
            Binding::Header { name } => (None, Some((name.as_str(), person))),
            Binding::None => (None, None),
        }
    }
}

/// Whether a consultation's answer is given as `{"result": …}`: when only part of the
/// upstream's answer is given, or the upstream declares no output schema.
fn wrapped(consultation: &crate::config::Consultation, upstream: &Tool) -> bool {
    consultation.result.is_some() || upstream.output_schema.is_none()
}

/// `{"result": <the part of the answer at path>}` as structured content and as its one
/// text block: nothing else of the upstream's answer reaches the model.
fn project(result: &CallToolResult, path: &[String]) -> CallToolResult {
    let part = crate::template::resolve(&result_json(result), path).unwrap_or(Value::Null);
    CallToolResult::structured(json!({ "result": part }))
}

/// Removes `names` from a JSON schema's `properties` and `required`.
fn strip<'a>(schema: &mut Value, names: impl Iterator<Item = &'a str> + Clone) {
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        for n in names.clone() {
            props.remove(n);
        }
    }
    if let Some(req) = schema.get_mut("required").and_then(Value::as_array_mut) {
        req.retain(|r| r.as_str().is_none_or(|r| !names.clone().any(|n| n == r)));
    }
}

/// What in `config` the upstream's `tools` contradict.
fn mismatches(config: &Config, tools: &HashMap<String, Tool>) -> Vec<String> {
    let mut out = Vec::new();
    for c in &config.consultations {
        match tools.get(&c.tool) {
            None => out.push(format!(
                "consultation `{}`: the upstream has no such tool",
                c.tool
            )),
            Some(t) => {
                let a = t.annotations.as_ref();
                let writes = a.and_then(|a| a.read_only_hint) == Some(false)
                    || a.and_then(|a| a.destructive_hint) == Some(true);
                if writes {
                    out.push(format!(
                        "consultation `{}`: the upstream declares it a write (readOnlyHint false or destructiveHint true); configure it as an operation",
                        c.tool
                    ));
                }
            }
        }
    }
    let lookups = config
        .guards
        .values()
        .map(|g| &g.lookup)
        .chain(config.operations.iter().flat_map(|o| o.lookups.values()));
    for l in lookups {
        if !tools.contains_key(&l.tool) {
            out.push(format!(
                "lookup tool `{}`: the upstream has no such tool",
                l.tool
            ));
        }
    }
    for o in &config.operations {
        if !tools.contains_key(&o.tool) {
            out.push(format!(
                "operation `{}`: the upstream has no tool `{}`",
                o.name, o.tool
            ));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The operations by name, for `prepare_action`.
pub(crate) fn operations(config: &Config) -> BTreeMap<&str, &crate::config::Operation> {
    config
        .operations
        .iter()
        .map(|o| (o.name.as_str(), o))
        .collect()
}
