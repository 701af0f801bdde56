//! A tenant MCP server with scripted answers, a call log and a hook that runs at the
//! moment a call arrives.

use crate::faults::{Fault, Faults};
use async_trait::async_trait;
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::ToolName;
use countersign_domain::ports::{
    Confirmation, Opened, Provider, ProviderContext, ProviderError, ProviderTool,
};
use serde_json::{Map, Value, json};
use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};

/// One scripted answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A `CallToolResult` JSON.
    Result(Value),
    /// No answer in time.
    Timeout,
    /// Not reachable.
    Unreachable,
    /// An HTTP error status.
    Http(u16),
}

/// A call the provider received.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderCall {
    /// The tool.
    pub tool: String,
    /// Its arguments.
    pub arguments: Map<String, Value>,
    /// The `X-MCP-Confirmation` proof, if one was sent.
    pub proof: Option<String>,
    /// `X-MCP-User-Id`.
    pub user: String,
    /// `X-MCP-Conversation-Id`.
    pub conversation: String,
    /// The service token used.
    pub service_token: String,
    /// The endpoint called.
    pub server_url: String,
    /// `X-MCP-Language` (B-2), if sent.
    pub language: Option<String>,
}

type Hook = Box<dyn Fn(&ProviderCall) + Send + Sync>;
type Responder = Box<dyn Fn(&ProviderCall) -> Reply + Send + Sync>;

/// The provider. Tools it publishes are set with [`ScriptedProvider::publish`]; answers
/// per tool are queued with [`ScriptedProvider::answer`] (then the default for that tool,
/// then a plain text result). `faults` plans failures for `tools/list` and per tool name.
#[derive(Default)]
pub struct ScriptedProvider {
    tools: Mutex<Vec<ProviderTool>>,
    queued: Mutex<HashMap<String, VecDeque<Reply>>>,
    defaults: Mutex<HashMap<String, Reply>>,
    responders: Mutex<HashMap<String, Responder>>,
    calls: Mutex<Vec<ProviderCall>>,
    hook: Mutex<Option<Hook>>,
    /// Fault switches (operation `tools/list`, or a tool's name).
    pub faults: Faults,
}

impl std::fmt::Debug for ScriptedProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedProvider").finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A published read-only tool descriptor (a consultation by V-1): `name`, a description,
/// an open input schema and `readOnlyHint: true`.
pub fn tool(name: &str) -> ProviderTool {
    described(name, json!({"readOnlyHint": true}))
}

/// A published tool with no annotations: by V-1 never a consultation (no claim of reading
/// is not read-only).
pub fn unannotated_tool(name: &str) -> ProviderTool {
    let mut t = described(name, Value::Null);
    t.descriptor.remove("annotations");
    t
}

/// A published tool with the given `annotations` object.
pub fn described(name: &str, annotations: Value) -> ProviderTool {
    let descriptor = json!({
        "name": name,
        "description": format!("{name} (test tool)"),
        "inputSchema": {"type": "object"},
        "annotations": annotations,
    });
    ProviderTool {
        name: ToolName::parse(name).unwrap_or_else(|_| unreachable!("test tool names are valid")),
        descriptor: descriptor.as_object().cloned().unwrap_or_default(),
        output_schema: None,
    }
}

/// A contract-conforming `prepare_action` answer, with the summary's hash.
pub fn prepare_answer(action_id: &str, operation: &str, summary: &str, expires_at: &str) -> Value {
    let payload = json!({
        "contractVersion": 1,
        "actionId": action_id,
        "status": "pending_confirmation",
        "operation": operation,
        "summary": summary,
        "argumentsHash": Sha256Hex::digest("{}").as_str(),
        "summaryHash": Sha256Hex::digest(summary.as_bytes()).as_str(),
        "expiresAt": expires_at,
    });
    json!({"content": [{"type": "text", "text": payload.to_string()}], "structuredContent": payload})
}

/// A contract-conforming `execute_action` / `get_action_status` answer.
pub fn action_answer(action_id: &str, status: &str, message: Option<&str>) -> Value {
    let mut payload = json!({"contractVersion": 1, "actionId": action_id, "status": status});
    if let Some(m) = message {
        payload["message"] = json!(m);
    }
    json!({"content": [{"type": "text", "text": payload.to_string()}], "structuredContent": payload})
}

impl ScriptedProvider {
    /// A provider publishing read-only tools (consultations by V-1) with these names.
    pub fn with_read_only(names: &[&str]) -> Self {
        let provider = Self::default();
        provider.publish(names.iter().map(|n| tool(n)).collect());
        provider
    }

    /// Sets the tools `tools/list` returns.
    pub fn publish(&self, tools: Vec<ProviderTool>) {
        *lock(&self.tools) = tools;
    }

    /// Queues the next answer of `tool`.
    pub fn answer(&self, tool: &str, reply: Reply) {
        lock(&self.queued)
            .entry(tool.to_owned())
            .or_default()
            .push_back(reply);
    }

    /// The answer of `tool` when nothing is queued.
    pub fn answer_always(&self, tool: &str, reply: Reply) {
        lock(&self.defaults).insert(tool.to_owned(), reply);
    }

    /// Answers every call of `tool` that has no queued answer with `responder`'s reply
    /// to it (an answer that depends on the arguments, e.g. a fresh action id).
    pub fn answer_with(
        &self,
        tool: &str,
        responder: impl Fn(&ProviderCall) -> Reply + Send + Sync + 'static,
    ) {
        lock(&self.responders).insert(tool.to_owned(), Box::new(responder));
    }

    /// Runs `hook` on every call, as it arrives, before the answer.
    pub fn on_call(&self, hook: impl Fn(&ProviderCall) + Send + Sync + 'static) {
        *lock(&self.hook) = Some(Box::new(hook));
    }

    /// Every `tools/call` received, in order.
    pub fn calls(&self) -> Vec<ProviderCall> {
        lock(&self.calls).clone()
    }

    /// The calls of one tool.
    pub fn calls_of(&self, tool: &str) -> Vec<ProviderCall> {
        self.calls()
            .into_iter()
            .filter(|c| c.tool == tool)
            .collect()
    }

    fn reply_for(&self, call: &ProviderCall) -> Reply {
        let tool = call.tool.as_str();
        if let Some(r) = lock(&self.queued)
            .get_mut(tool)
            .and_then(VecDeque::pop_front)
        {
            return r;
        }
        if let Some(respond) = lock(&self.responders).get(tool) {
            return respond(call);
        }
        lock(&self.defaults).get(tool).cloned().unwrap_or_else(|| {
            Reply::Result(
                json!({"content": [{"type": "text", "text": format!("{tool} answered")}]}),
            )
        })
    }
}

fn planned(fault: Option<Fault>) -> Result<(), ProviderError> {
    match fault {
        Some(Fault::Unavailable) => Err(ProviderError::Unreachable("planned fault".into())),
        Some(Fault::Timeout | Fault::LostResponse | Fault::Hang) => Err(ProviderError::Timeout),
        Some(Fault::Conflict) | None => Ok(()),
    }
}

#[async_trait]
impl Provider for ScriptedProvider {
    async fn list_tools(&self, _: &ProviderContext) -> Result<Vec<ProviderTool>, ProviderError> {
        let fault = self.faults.take("tools/list");
        if fault == Some(Fault::Hang) {
            std::future::pending::<()>().await;
        }
        planned(fault)?;
        Ok(lock(&self.tools).clone())
    }

    /// Planned faults of the handshake go under `open`.
    async fn open(&self, _: &ProviderContext) -> Result<Opened, ProviderError> {
        planned(self.faults.take("open"))?;
        Ok(Opened::default())
    }

    async fn call_tool(
        &self,
        ctx: &ProviderContext,
        tool: &str,
        arguments: &Map<String, Value>,
        confirmation: Option<Confirmation<'_>>,
    ) -> Result<Value, ProviderError> {
        let fault = self.faults.take(tool);
        if fault == Some(Fault::Hang) {
            std::future::pending::<()>().await;
        }
        if fault == Some(Fault::Unavailable) {
            return planned(fault).map(|()| Value::Null);
        }
        let call = ProviderCall {
            tool: tool.to_owned(),
            arguments: arguments.clone(),
            proof: confirmation.map(|c| c.proof.expose().to_owned()),
            user: ctx.user.to_string(),
            conversation: ctx.conversation.to_string(),
            service_token: ctx.service_token.expose().to_owned(),
            server_url: ctx.server_url.to_string(),
            language: ctx.language.map(|l| l.tag().to_owned()),
        };
        if let Some(hook) = lock(&self.hook).as_ref() {
            hook(&call);
        }
        let reply = planned(fault).map(|()| self.reply_for(&call));
        lock(&self.calls).push(call);
        match reply? {
            Reply::Result(v) => Ok(v),
            Reply::Timeout => Err(ProviderError::Timeout),
            Reply::Unreachable => Err(ProviderError::Unreachable("scripted".into())),
            Reply::Http(status) => Err(ProviderError::Http { status }),
        }
    }
}
