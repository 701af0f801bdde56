//! Tool definitions, the registry, and the dispatcher (G-2, G-3, G-12).
//!
//! A built-in tool is a typed handler `Fn(Invocation, Args) -> Result<Data, ToolError>`.
//! Registration derives the input schema from `Args` and the output schema from `Data`
//! (wrapped in the envelope); the version is a required field of [`ToolSpec`]. The
//! dispatcher parses arguments (unknown fields refused by one rule for every tool), runs
//! the handler, turns a panic into an `INTERNAL_ERROR`, seals the answer, and records
//! `mcp_tool_duration_seconds{tool, error_type}`.

use crate::envelope::{IntoData, Meta, Sealed, Success, seal};
use crate::errors::ToolError;
use crate::schema::{
    ENVELOPE_CONTRACT, canonical_json, envelope_schema, fingerprint, input_schema, schema_value,
    without_descriptions,
};
use futures::FutureExt as _;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

/// MCP tool annotations. Hints only: no safety rule relies on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// The tool changes nothing.
    pub read_only_hint: bool,
    /// The tool may destroy data.
    pub destructive_hint: bool,
    /// Repeating the call with the same arguments has no further effect.
    pub idempotent_hint: bool,
    /// The tool reaches systems outside the platform.
    pub open_world_hint: bool,
}

/// What a tool declares. `version` has no default (G-3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolSpec {
    /// Wire name.
    pub name: &'static str,
    /// Human title.
    pub title: &'static str,
    /// For the model; speaks of the enveloped answer (`data.items`, G-11).
    pub description: &'static str,
    /// The tool's version, published in `tools/list` (`_meta.version`) and in every
    /// answer (`meta.version`).
    pub version: &'static str,
    /// Hints.
    pub annotations: Annotations,
}

/// A tool's published descriptor.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDescriptor {
    /// The declaration.
    pub spec: ToolSpec,
    /// Derived from the argument type.
    pub input_schema: Value,
    /// The envelope around the data type's schema (G-10).
    pub output_schema: Value,
}

impl ToolDescriptor {
    /// The descriptor as `tools/list` and `describe_tool` publish it (G-3).
    pub fn published(&self) -> Value {
        let mut v = self.contract_part();
        if let Value::Object(m) = &mut v {
            m.insert("_meta".into(), json!({"version": self.spec.version}));
        }
        v
    }

    /// Everything but `_meta`: what the `contract` fingerprint covers.
    fn contract_part(&self) -> Value {
        json!({
            "name": self.spec.name,
            "title": self.spec.title,
            "description": self.spec.description,
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
            "annotations": self.spec.annotations,
        })
    }

    /// G-4 `schema`: SHA-256 (first 16 hex) of the input schema without descriptions.
    pub fn schema_fingerprint(&self) -> String {
        fingerprint(&canonical_json(&without_descriptions(&self.input_schema)))
    }

    /// G-4 `contract`: SHA-256 (first 16 hex) of the descriptor (not `_meta`) plus the
    /// envelope contract.
    pub fn contract_fingerprint(&self) -> String {
        fingerprint(&format!(
            "{}\n{ENVELOPE_CONTRACT}",
            canonical_json(&self.contract_part())
        ))
    }
}

/// What a handler may use: the caller's identity and conversation, the platform's
/// services, and the catalog (for `describe_tool`).
#[derive(Clone)]
pub struct Invocation<C> {
    /// The caller's context (principal, conversation, ports), fixed by the transport's
    /// authentication, never by arguments (D-4, A-11).
    pub ctx: C,
    /// Every registered tool's published descriptor, by name.
    pub catalog: Arc<BTreeMap<&'static str, Arc<RawValue>>>,
}

impl<C> std::fmt::Debug for Invocation<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Invocation")
            .field("tools", &self.catalog.len())
            .finish()
    }
}

type Handler<C> = Arc<
    dyn Fn(Invocation<C>, Value) -> BoxFuture<'static, Result<Success, ToolError>> + Send + Sync,
>;

/// A refused registration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// Two tools with one name.
    #[error("a tool named {0} is already registered")]
    Duplicate(&'static str),
    /// An empty version.
    #[error("tool {0} declares an empty version")]
    NoVersion(&'static str),
    /// The descriptor could not be written as JSON.
    #[error("tool {0}'s descriptor cannot be written as JSON")]
    Unwritable(&'static str),
}

/// The registry of built-in tools, generic over the caller context `C`.
pub struct Registry<C> {
    tools: BTreeMap<&'static str, (ToolDescriptor, Handler<C>)>,
    catalog: Arc<BTreeMap<&'static str, Arc<RawValue>>>,
}

impl<C> std::fmt::Debug for Registry<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl<C> Default for Registry<C> {
    fn default() -> Self {
        Self {
            tools: BTreeMap::new(),
            catalog: Arc::new(BTreeMap::new()),
        }
    }
}

/// Why arguments were refused, as a `VALIDATION_ERROR` naming the field (G-12).
fn parse_args<A: DeserializeOwned>(schema: &Value, args: Value) -> Result<A, ToolError> {
    let args = match args {
        Value::Null => Value::Object(Map::new()),
        Value::Object(m) => Value::Object(m),
        _ => return Err(ToolError::validation("", "arguments must be a JSON object")),
    };
    // One rule for every tool: a field the input schema does not declare is refused.
    if let (Value::Object(given), Some(Value::Object(props))) = (&args, schema.get("properties")) {
        let unknown: Vec<&String> = given.keys().filter(|k| !props.contains_key(*k)).collect();
        if let Some(first) = unknown.first() {
            return Err(
                ToolError::validation(first, format!("unknown argument `{first}`"))
                    .details(json!({"field": first, "unknownFields": unknown})),
            );
        }
    }
    serde_path_to_error::deserialize::<_, A>(args).map_err(|e| {
        let inner = e.inner().to_string();
        let path = e.path().to_string();
        // `missing field `x`` has no path yet: take the name from the message.
        let field = if path == "." {
            inner
                .split('`')
                .nth(1)
                .map_or_else(String::new, str::to_owned)
        } else {
            path
        };
        ToolError::validation(&field, format!("invalid arguments: {inner}"))
    })
}

impl<C: Clone + Send + Sync + 'static> Registry<C> {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a built-in tool. Refuses duplicate names and empty versions.
    pub fn register<A, D, F, Fut>(
        &mut self,
        spec: ToolSpec,
        handler: F,
    ) -> Result<(), RegistryError>
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        D: IntoData + JsonSchema + 'static,
        F: Fn(Invocation<C>, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<D, ToolError>> + Send + 'static,
    {
        if self.tools.contains_key(spec.name) {
            return Err(RegistryError::Duplicate(spec.name));
        }
        if spec.version.trim().is_empty() {
            return Err(RegistryError::NoVersion(spec.name));
        }
        let input = input_schema::<A>();
        let descriptor = ToolDescriptor {
            spec,
            output_schema: envelope_schema(spec.name, spec.version, schema_value::<D>()),
            input_schema: input.clone(),
        };
        let handler = Arc::new(handler);
        let erased: Handler<C> = Arc::new(move |inv: Invocation<C>, args: Value| {
            let parsed = parse_args::<A>(&input, args);
            let handler = handler.clone();
            async move {
                let args = parsed?;
                let data = handler(inv, args).await?;
                Success::from_data(data)
            }
            .boxed()
        });
        // Written once: `describe_tool` copies this text into its envelope (issue 26).
        let written = serde_json::value::to_raw_value(&descriptor.published())
            .map_err(|_| RegistryError::Unwritable(spec.name))?;
        let mut catalog = (*self.catalog).clone();
        catalog.insert(spec.name, Arc::from(written));
        self.catalog = Arc::new(catalog);
        self.tools.insert(spec.name, (descriptor, erased));
        Ok(())
    }

    /// Every descriptor, by name.
    pub fn descriptors(&self) -> impl Iterator<Item = &ToolDescriptor> {
        self.tools.values().map(|(d, _)| d)
    }

    /// One descriptor.
    pub fn get(&self, name: &str) -> Option<&ToolDescriptor> {
        self.tools.get(name).map(|(d, _)| d)
    }

    /// Calls a built-in tool and seals its answer. `None` when no such built-in exists
    /// (the transport answers a protocol error, or tries a proxied tool).
    pub async fn call(&self, ctx: C, name: &str, args: Value) -> Option<Sealed> {
        let (descriptor, handler) = self.tools.get(name)?;
        let started = Instant::now();
        let inv = Invocation {
            ctx,
            catalog: self.catalog.clone(),
        };
        // A panicking handler is sealed like any other failure (G-2).
        let outcome = match AssertUnwindSafe(handler(inv, args)).catch_unwind().await {
            Ok(r) => r,
            Err(panic) => {
                let msg = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".to_owned());
                Err(ToolError::internal(
                    name,
                    &format!("handler panicked: {msg}"),
                ))
            }
        };
        let meta = Meta {
            tool: descriptor.spec.name.to_owned(),
            version: descriptor.spec.version.to_owned(),
        };
        let sealed = seal(&meta, outcome);
        record_duration(descriptor.spec.name, sealed.error_type(), started);
        Some(sealed)
    }
}

/// G-8: `mcp_tool_duration_seconds{tool, error_type}`; `error_type` is the envelope's
/// `code` or `none`, spelled exactly as in the envelope. O-1: every error also counts in
/// `mcp_tool_errors_total` (no dimension: the alarm's metric; the dashboard breaks the
/// errors down by `error_type` from the histogram).
pub fn record_duration(tool: &str, error_type: &str, started: Instant) {
    if error_type != "none" {
        metrics::counter!("mcp_tool_errors_total").increment(1);
    }
    metrics::histogram!(
        "mcp_tool_duration_seconds",
        "tool" => tool.to_owned(),
        "error_type" => error_type.to_owned()
    )
    .record(started.elapsed().as_secs_f64());
}
