//! The provider client: Countersign's side of a tenant's MCP server (issue 6).
//!
//! - Streamable HTTP, protocol `2025-06-18`: one POST per JSON-RPC request, answered as
//!   `application/json` or as a `text/event-stream` whose events carry the answer.
//! - Stateless first: a server that needs a session answers a session-less request with
//!   HTTP 400/404 before running anything; the client then `initialize`s, remembers that
//!   this server needs it, and sends the request once more with the session. A call that
//!   carries a proof (`execute_action`) is never sent twice: it is preceded by
//!   `initialize` instead.
//! - The A-11 headers come from the [`ProviderContext`] (the authenticated context), never
//!   from tool arguments; `X-MCP-Confirmation` only with a proof.
//! - D-5 at connect time: the URL is re-checked under this deployment's policy, and host
//!   names resolve through [`resolve::GuardedDns`], so a DNS answer changed after the save
//!   (rebinding) cannot reach an internal address. No redirects, no proxies.
//! - Bounded: a whole-call timeout and a maximum answer size.
//! - `tools/list` is cached briefly per tenant and configuration version.

pub mod resolve;
mod wire;

use async_trait::async_trait;
use countersign_domain::config::{ServerUrl, UrlPolicy};
use countersign_domain::ids::{TenantId, ToolName};
use countersign_domain::net::ip_internal_reason;
use countersign_domain::ports::{Provider, ProviderContext, ProviderError, ProviderTool};
use countersign_domain::proof::Proof;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientJsonRpcMessage,
    ClientNotification, ClientRequest, Implementation, InitializeRequest, InitializeRequestParams,
    InitializedNotification, JsonObject, JsonRpcMessage, ListToolsRequest, NumberOrString,
    PaginatedRequestParams, ProtocolVersion, RequestId, Tool,
};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wire::Answer;

/// The MCP protocol revision spoken.
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// Pages of `tools/list` followed at most.
const MAX_TOOL_PAGES: usize = 10;

/// Client settings.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Whole-call limit (connect, send, whole answer).
    pub timeout: Duration,
    /// TCP + TLS connect limit.
    pub connect_timeout: Duration,
    /// Largest answer body accepted.
    pub max_answer_bytes: usize,
    /// How long a `tools/list` answer is reused for one configuration version.
    pub tools_ttl: Duration,
    /// D-5: the local-stack allowance (off in deployments).
    pub url_policy: UrlPolicy,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(3),
            max_answer_bytes: 1024 * 1024,
            tools_ttl: Duration::from_secs(60),
            url_policy: UrlPolicy::default(),
        }
    }
}

type ToolsKey = (TenantId, u64, String);
/// A cached `tools/list` answer and when it was fetched.
type CachedTools = (Instant, Arc<Vec<ProviderTool>>);

/// The [`Provider`] port over HTTP.
pub struct HttpProvider {
    http: reqwest::Client,
    settings: Settings,
    tools: Mutex<HashMap<ToolsKey, CachedTools>>,
    needs_session: Mutex<HashSet<String>>,
    next_id: AtomicI64,
}

impl std::fmt::Debug for HttpProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpProvider")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// The HTTP client could not be built (TLS roots).
#[derive(Debug, thiserror::Error)]
#[error("the HTTP client cannot be built")]
pub struct BuildError(#[source] reqwest::Error);

fn unreachable(why: impl Into<String>) -> ProviderError {
    ProviderError::Unreachable(why.into().into())
}

impl HttpProvider {
    /// A client resolving names with the system resolver.
    pub fn new(settings: Settings) -> Result<Self, BuildError> {
        Self::with_resolver(settings, Arc::new(resolve::SystemResolver))
    }

    /// A client resolving names with `resolver` (every answer still passes D-5).
    pub fn with_resolver(
        settings: Settings,
        resolver: Arc<dyn resolve::Resolver>,
    ) -> Result<Self, BuildError> {
        let http = reqwest::Client::builder()
            .dns_resolver(Arc::new(resolve::GuardedDns {
                inner: resolver,
                policy: settings.url_policy,
            }))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .connect_timeout(settings.connect_timeout)
            .user_agent(concat!("countersign/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(BuildError)?;
        Ok(Self {
            http,
            settings,
            tools: Mutex::new(HashMap::new()),
            needs_session: Mutex::new(HashSet::new()),
            next_id: AtomicI64::new(1),
        })
    }

    /// D-5 at connect time: the stored URL under this deployment's policy; IP literals
    /// checked here (names are checked by the resolver).
    fn checked_url(&self, url: &ServerUrl) -> Result<reqwest::Url, ProviderError> {
        let policy = self.settings.url_policy;
        let url = ServerUrl::parse(url.as_str(), policy)
            .map_err(|e| unreachable(format!("the provider URL is not allowed: {e}")))?;
        if let Some(ip) = url
            .as_url()
            .host_str()
            .map(|h| h.trim_start_matches('[').trim_end_matches(']'))
            .and_then(|h| h.parse::<std::net::IpAddr>().ok())
        {
            let loopback_ok =
                policy.allow_loopback_http && ip == std::net::IpAddr::from([127, 0, 0, 1]);
            if ip_internal_reason(ip).is_some() && !loopback_ok {
                return Err(unreachable("the provider address is not public"));
            }
        }
        reqwest::Url::parse(url.as_str()).map_err(|_| unreachable("the provider URL is invalid"))
    }

    fn session_needed(&self, url: &str) -> bool {
        self.needs_session
            .lock()
            .map(|s| s.contains(url))
            .unwrap_or(false)
    }

    fn remember_session_needed(&self, url: &str) {
        if let Ok(mut s) = self.needs_session.lock() {
            s.insert(url.to_owned());
        }
    }

    fn id(&self) -> RequestId {
        NumberOrString::Number(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// One POST; the answer read within the limits.
    async fn post(
        &self,
        ctx: &ProviderContext,
        url: &reqwest::Url,
        body: &ClientJsonRpcMessage,
        session: Option<&str>,
        confirmation: Option<&Proof>,
        expect_id: Option<&RequestId>,
    ) -> Result<Answer, ProviderError> {
        let body = serde_json::to_vec(body)
            .map_err(|e| ProviderError::Malformed(format!("encoding the request: {e}")))?;
        let mut req = self
            .http
            .post(url.clone())
            .timeout(self.settings.timeout)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL_VERSION)
            .bearer_auth(ctx.service_token.expose())
            .header("x-mcp-tenant-id", ctx.tenant.as_str())
            .header("x-mcp-user-id", ctx.user.as_str())
            .header("x-mcp-conversation-id", ctx.conversation.as_str())
            .body(body);
        if let Some(s) = session {
            req = req.header("mcp-session-id", s);
        }
        if let Some(p) = confirmation {
            req = req.header("x-mcp-confirmation", p.expose());
        }
        let response = req.send().await.map_err(|e| {
            if e.is_timeout() {
                ProviderError::Timeout
            } else if e.is_connect() {
                // Never connected: nothing was sent.
                unreachable(format!(
                    "cannot connect to the provider: {}",
                    wire::chain(&e)
                ))
            } else {
                // Sent, then lost: the provider may have acted on it.
                ProviderError::Interrupted
            }
        })?;
        wire::read_answer(response, expect_id, self.settings.max_answer_bytes).await
    }

    /// `initialize` + `notifications/initialized`; returns the session id, if any.
    async fn initialize(
        &self,
        ctx: &ProviderContext,
        url: &reqwest::Url,
    ) -> Result<Option<String>, ProviderError> {
        let id = self.id();
        let body = ClientJsonRpcMessage::request(initialize_request(), id.clone());
        let answer = self.post(ctx, url, &body, None, None, Some(&id)).await?;
        success(&answer)?;
        wire::result_of(answer.message)?;
        let session = answer.session;
        let note = ClientNotification::from(InitializedNotification::default());
        let note = ClientJsonRpcMessage::notification(note);
        let ack = self
            .post(ctx, url, &note, session.as_deref(), None, None)
            .await?;
        success(&ack)?;
        Ok(session)
    }

    /// A JSON-RPC request; its `result`.
    async fn request(
        &self,
        ctx: &ProviderContext,
        request: ClientRequest,
        confirmation: Option<&Proof>,
    ) -> Result<JsonObject, ProviderError> {
        let url = self.checked_url(&ctx.server_url)?;
        let key = url.as_str().to_owned();
        let mut session = None;
        // A call carrying a proof (execute_action) is sent exactly once: when it is
        // not known whether this server needs a session, initialize first (a stateless
        // server answers `initialize` too, without a session).
        if self.session_needed(&key) || confirmation.is_some() {
            session = self.initialize(ctx, &url).await?;
        }
        let id = self.id();
        let body = ClientJsonRpcMessage::request(request.clone(), id.clone());
        let mut answer = self
            .post(
                ctx,
                &url,
                &body,
                session.as_deref(),
                confirmation,
                Some(&id),
            )
            .await?;
        // 400/404 to a session-less request: the server wants `initialize` first. It ran
        // nothing (a tool's answer, even an error, comes with 200), so one more send with a
        // session is safe; never for a call carrying a proof, which is sent once.
        let not_a_result = !matches!(answer.message, Some(JsonRpcMessage::Response(_)));
        if session.is_none()
            && confirmation.is_none()
            && matches!(answer.status.as_u16(), 400 | 404)
            && not_a_result
        {
            self.remember_session_needed(&key);
            session = self.initialize(ctx, &url).await?;
            let id = self.id();
            let body = ClientJsonRpcMessage::request(request, id.clone());
            answer = self
                .post(ctx, &url, &body, session.as_deref(), None, Some(&id))
                .await?;
        }
        success(&answer)?;
        wire::result_of(answer.message)
    }
}

/// The HTTP status of an answer, as an error unless it is a success.
fn success(answer: &Answer) -> Result<(), ProviderError> {
    if answer.status.is_success() {
        return Ok(());
    }
    Err(ProviderError::Http {
        status: answer.status.as_u16(),
    })
}

/// `initialize`, as the protocol revision this client speaks.
fn initialize_request() -> ClientRequest {
    let client = Implementation::new("countersign", env!("CARGO_PKG_VERSION"));
    let params = InitializeRequestParams::new(ClientCapabilities::default(), client)
        .with_protocol_version(ProtocolVersion::V_2025_06_18);
    InitializeRequest::new(params).into()
}

/// One page of `tools/list`: the descriptors stay as published (G-6: passed through
/// unchanged), each checked against the MCP `Tool` type.
#[derive(Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolsPage {
    tools: Vec<Value>,
    #[serde(default)]
    next_cursor: Option<String>,
}

/// One `tools/list` entry, or `None` when it is not a valid MCP tool descriptor.
fn tool_of(v: Value) -> Option<ProviderTool> {
    let tool: Tool = serde_json::from_value(v.clone()).ok()?;
    let name = ToolName::parse(tool.name.as_ref()).ok()?;
    let descriptor = match v {
        Value::Object(descriptor) => descriptor,
        _ => return None,
    };
    let output_schema = tool.output_schema.map(|s| Value::Object((*s).clone()));
    Some(ProviderTool {
        name,
        descriptor,
        output_schema,
    })
}

#[async_trait]
impl Provider for HttpProvider {
    async fn list_tools(&self, ctx: &ProviderContext) -> Result<Vec<ProviderTool>, ProviderError> {
        let key = (
            ctx.tenant.clone(),
            ctx.config_version,
            ctx.server_url.as_str().to_owned(),
        );
        if let Ok(cache) = self.tools.lock()
            && let Some((at, tools)) = cache.get(&key)
            && at.elapsed() < self.settings.tools_ttl
        {
            return Ok(tools.as_ref().clone());
        }
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_TOOL_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor.take());
            let request = ListToolsRequest::with_param(params).into();
            let result = self.request(ctx, request, None).await?;
            let page: ToolsPage = serde_json::from_value(Value::Object(result))
                .map_err(|_| ProviderError::Malformed("tools/list without tools".into()))?;
            // A malformed entry is skipped, not fatal: the allowlist decides what is used.
            tools.extend(page.tools.into_iter().filter_map(tool_of));
            cursor = page.next_cursor;
            if cursor.is_none() {
                break;
            }
        }
        if let Ok(mut cache) = self.tools.lock() {
            cache.retain(|_, (at, _)| at.elapsed() < self.settings.tools_ttl);
            cache.insert(key, (Instant::now(), Arc::new(tools.clone())));
        }
        Ok(tools)
    }

    async fn call_tool(
        &self,
        ctx: &ProviderContext,
        tool: &str,
        arguments: &Map<String, Value>,
        confirmation: Option<&Proof>,
    ) -> Result<Value, ProviderError> {
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments.clone());
        let request = CallToolRequest::new(params).into();
        // The result object as the provider sent it: proxied answers pass through
        // unchanged (G-6); contract answers are read by the domain's parser.
        let result = self.request(ctx, request, confirmation).await?;
        Ok(Value::Object(result))
    }
}
