//! The provider client: Countersign's side of a tenant's MCP server (issue 6).
//!
//! - Streamable HTTP, protocol `2025-06-18`: one POST per JSON-RPC request, answered as
//!   `application/json` or as a `text/event-stream` whose events carry the answer.
//! - Stateless first: a server that needs a session answers a session-less request with
//!   HTTP 400/404 before running anything; the client then `initialize`s, remembers that
//!   this server needs it, and sends the request once more with the session. One session
//!   per (tenant, server URL) is kept and reused while it lives; when the server drops it
//!   (404 to a request carrying it) the client initializes again, and a session the client
//!   drops (the tenant's configuration changed) is closed with `DELETE`.
//! - A call that carries a proof (`execute_action`) is never sent twice: [`Provider::open`]
//!   runs the handshake on a fresh session first (so a failure there is "nothing sent"),
//!   the proof is signed only then, and the session is closed after the answer.
//! - One budget per exchange: the handshake and the request share one
//!   [`Settings::timeout`], so an exchange never takes more than that, however many
//!   requests it needs.
//! - The A-11 headers come from the [`ProviderContext`] (the authenticated context), never
//!   from tool arguments; `X-MCP-Confirmation` only with a proof; `X-MCP-Language`
//!   when the context knows the person's language (B-2).
//! - D-5 at connect time: the URL is re-checked under this deployment's policy, and host
//!   names resolve through [`resolve::GuardedDns`], so a DNS answer changed after the save
//!   (rebinding) cannot reach an internal address. No redirects, no proxies.
//! - Bounded: a whole-call timeout and a maximum answer size.
//! - Resumable: an event stream the server closes before its answer, after numbered
//!   events, is picked up with `GET` and `Last-Event-ID` (never by sending the request
//!   again).
//! - `tools/list` is cached briefly per tenant and configuration version.

pub mod resolve;
pub mod roots;
mod sessions;
mod wire;

use async_trait::async_trait;
use countersign_domain::config::{ServerUrl, UrlPolicy};
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::{TenantId, ToolName};
use countersign_domain::net::ip_internal_reason;
use countersign_domain::ports::{
    Confirmation, Opened, Provider, ProviderContext, ProviderError, ProviderTool,
};
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
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use wire::Answer;

/// The MCP protocol revision spoken.
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// Times a broken event stream is resumed for one request.
const MAX_RESUMES: u32 = 3;
/// The wait before resuming when the server sent no `retry`.
const DEFAULT_RETRY_MS: u64 = 1_000;
/// The longest wait before resuming, whatever the server's `retry` says.
const MAX_RETRY_MS: u64 = 5_000;
/// Pages of `tools/list` followed at most.
const MAX_TOOL_PAGES: usize = 10;

/// Client settings.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Whole-exchange limit: handshake and request together (connect, send, answer).
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
/// One kept session per (tenant, server URL): the configuration version it was opened
/// under and its id.
type SessionKey = (TenantId, String);
/// A cached `tools/list` answer and when it was fetched.
type CachedTools = (Instant, Arc<Vec<ProviderTool>>);

/// The [`Provider`] port over HTTP.
pub struct HttpProvider {
    /// Built on the first call, not at init (issue 26 B: its TLS roots are the largest
    /// part of a function's init, and a request that reaches no provider never needs it).
    http: OnceLock<Result<reqwest::Client, String>>,
    /// Resolves names for the client, under D-5.
    guard: Arc<resolve::GuardedDns>,
    settings: Settings,
    tools: Mutex<HashMap<ToolsKey, CachedTools>>,
    needs_session: Mutex<HashSet<String>>,
    /// Kept sessions, tagged with the digest of the service token they were opened with.
    sessions: Mutex<HashMap<SessionKey, (Sha256Hex, String)>>,
    next_id: AtomicI64,
}

countersign_domain::debug_showing!(HttpProvider { settings });

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
        let guard = Arc::new(resolve::GuardedDns {
            inner: resolver,
            policy: settings.url_policy,
        });
        Ok(Self {
            http: OnceLock::new(),
            guard,
            settings,
            tools: Mutex::new(HashMap::new()),
            needs_session: Mutex::new(HashSet::new()),
            sessions: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(1),
        })
    }

    /// The HTTP client, built once on first use; a build failure (TLS roots) answers every
    /// call as unreachable.
    fn http(&self) -> Result<&reqwest::Client, ProviderError> {
        let built = self.http.get_or_init(|| {
            let settings = &self.settings;
            roots::build_with_system_roots(|| {
                reqwest::Client::builder()
                    .dns_resolver(self.guard.clone())
                    .redirect(reqwest::redirect::Policy::none())
                    .no_proxy()
                    .connect_timeout(settings.connect_timeout)
                    .user_agent(concat!("countersign/", env!("CARGO_PKG_VERSION")))
            })
            .map_err(|e| BuildError(e).to_string())
        });
        built.as_ref().map_err(|e| unreachable(e.clone()))
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

    fn id(&self) -> RequestId {
        NumberOrString::Number(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// One POST within what is left of the exchange's budget; the answer read within the
    /// limits.
    #[allow(clippy::too_many_arguments)]
    async fn post(
        &self,
        ctx: &ProviderContext,
        url: &reqwest::Url,
        body: &ClientJsonRpcMessage,
        session: Option<&str>,
        confirmation: Option<&Proof>,
        expect_id: Option<&RequestId>,
        until: Instant,
    ) -> Result<Answer, ProviderError> {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ProviderError::Timeout);
        }
        let body = serde_json::to_vec(body)
            .map_err(|e| ProviderError::Malformed(format!("encoding the request: {e}")))?;
        let req = self
            .http()?
            .post(url.clone())
            .timeout(left)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body);
        let mut req = contract_headers(req, ctx, session);
        if let Some(p) = confirmation {
            req = req.header("x-mcp-confirmation", p.expose());
        }
        let response = req.send().await.map_err(|e| {
            if e.is_timeout() {
                ProviderError::Timeout
            } else if e.is_connect() {
                // Never connected: nothing was sent. The error names the URL reduced to
                // scheme, host and path (a query may carry a secret; errors are logged).
                unreachable(format!(
                    "cannot connect to the provider at {}: {}",
                    loggable(url),
                    wire::chain(&e.without_url())
                ))
            } else {
                // Sent, then lost: the provider may have acted on it.
                ProviderError::Interrupted
            }
        })?;
        let answer = wire::read_answer(response, expect_id, self.settings.max_answer_bytes).await?;
        self.resumed(ctx, url, session, answer, expect_id, until)
            .await
    }

    /// Resumability: an event stream that ended before its answer, after events the
    /// server numbered, is picked up with `GET` and `Last-Event-ID` once the server's
    /// `retry` has passed — at most [`MAX_RESUMES`] times, within the exchange's budget.
    /// The request is never sent again: the `GET` asks only for what the server
    /// still has to say about it, and carries no proof.
    async fn resumed(
        &self,
        ctx: &ProviderContext,
        url: &reqwest::Url,
        session: Option<&str>,
        mut answer: Answer,
        expect_id: Option<&RequestId>,
        until: Instant,
    ) -> Result<Answer, ProviderError> {
        let mut resumes = 0;
        while let Some(resume) = answer.resume.take() {
            resumes += 1;
            if resumes > MAX_RESUMES {
                return Err(ProviderError::Interrupted);
            }
            let wait = Duration::from_millis(
                resume
                    .retry_ms
                    .unwrap_or(DEFAULT_RETRY_MS)
                    .min(MAX_RETRY_MS),
            );
            if until.saturating_duration_since(Instant::now()) <= wait {
                // No time left to ask again: the answer is lost, as before resuming.
                return Err(ProviderError::Interrupted);
            }
            tokio::time::sleep(wait).await;
            let left = until.saturating_duration_since(Instant::now());
            let kept = answer.session.take();
            let req = self
                .http()?
                .get(url.clone())
                .timeout(left)
                .header("accept", "text/event-stream")
                .header("last-event-id", resume.last_event_id.as_str());
            let req = contract_headers(req, ctx, session.or(kept.as_deref()));
            let response = req.send().await.map_err(|e| {
                if e.is_timeout() {
                    ProviderError::Timeout
                } else {
                    ProviderError::Interrupted
                }
            })?;
            if !response.status().is_success() {
                // The server cannot resume it: the answer is lost, the outcome unknown.
                return Err(ProviderError::Interrupted);
            }
            answer = wire::read_answer(response, expect_id, self.settings.max_answer_bytes).await?;
            answer.session = answer.session.or(kept);
        }
        Ok(answer)
    }

    /// `initialize` + `notifications/initialized`; returns the session id, if any.
    async fn initialize(
        &self,
        ctx: &ProviderContext,
        url: &reqwest::Url,
        until: Instant,
    ) -> Result<Option<String>, ProviderError> {
        let id = self.id();
        let body = ClientJsonRpcMessage::request(initialize_request(), id.clone());
        let answer = self
            .post(ctx, url, &body, None, None, Some(&id), until)
            .await?;
        success(&answer)?;
        wire::result_of(answer.message)?;
        let session = answer.session;
        let note = ClientNotification::from(InitializedNotification::default());
        let note = ClientJsonRpcMessage::notification(note);
        let ack = self
            .post(ctx, url, &note, session.as_deref(), None, None, until)
            .await?;
        success(&ack)?;
        Ok(session)
    }

    /// A JSON-RPC request without a proof, over the kept session if any, within the
    /// exchange's budget (`until`); its `result`.
    async fn request(
        &self,
        ctx: &ProviderContext,
        request: ClientRequest,
        until: Instant,
    ) -> Result<JsonObject, ProviderError> {
        let url = self.checked_url(&ctx.server_url)?;
        let key = url.as_str().to_owned();
        let mut session = self.kept_session(ctx, &url);
        if session.is_none() && self.session_needed(&key) {
            session = self.initialize(ctx, &url, until).await?;
            self.keep_session(ctx, &url, session.as_deref());
        }
        let send = |session: Option<String>| {
            let request = request.clone();
            let url = url.clone();
            async move {
                let id = self.id();
                let body = ClientJsonRpcMessage::request(request, id.clone());
                self.post(ctx, &url, &body, session.as_deref(), None, Some(&id), until)
                    .await
            }
        };
        let mut answer = send(session.clone()).await?;
        // 400/404 that is not a JSON-RPC answer: the server wants a session (or dropped
        // the one sent). It ran nothing (a tool's answer, even an error, comes with 200),
        // so one more send with a new session is safe.
        let not_a_result = !matches!(answer.message, Some(JsonRpcMessage::Response(_)));
        let refused = matches!(answer.status.as_u16(), 400 | 404) && not_a_result;
        let dropped = session.is_some() && answer.status.as_u16() == 404 && not_a_result;
        if (session.is_none() && refused) || dropped {
            if let Some(old) = &session {
                self.forget_session(ctx, &url, old);
            }
            self.remember_session_needed(&key);
            session = self.initialize(ctx, &url, until).await?;
            self.keep_session(ctx, &url, session.as_deref());
            answer = send(session).await?;
        }
        success(&answer)?;
        wire::result_of(answer.message)
    }

    /// The countersigned call, sent exactly once over the connection opened for it; its
    /// session is closed afterwards.
    async fn request_once(
        &self,
        ctx: &ProviderContext,
        request: ClientRequest,
        confirmation: Confirmation<'_>,
    ) -> Result<JsonObject, ProviderError> {
        let url = self.checked_url(&ctx.server_url)?;
        let opened = confirmation.opened;
        let until = opened
            .until
            .unwrap_or_else(|| Instant::now() + self.settings.timeout);
        let id = self.id();
        let body = ClientJsonRpcMessage::request(request, id.clone());
        let session = opened.session.as_deref();
        let proof = Some(confirmation.proof);
        let answer = self
            .post(ctx, &url, &body, session, proof, Some(&id), until)
            .await;
        if let Some(s) = &opened.session {
            self.close(ctx, &url, s.clone());
        }
        let answer = answer?;
        success(&answer)?;
        wire::result_of(answer.message)
    }
}

/// A provider URL as it may appear in logs and errors: scheme, host, port and path; never
/// a query or user information.
pub fn loggable(url: &reqwest::Url) -> String {
    let host = url.host_str().unwrap_or("");
    match url.port() {
        Some(port) => format!("{}://{host}:{port}{}", url.scheme(), url.path()),
        None => format!("{}://{host}{}", url.scheme(), url.path()),
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
/// The headers of every request to the provider: its protocol revision, the service
/// token, the A-11 context (never from tool arguments), the session if any and, when
/// known, the person's language (B-2: a BCP 47 tag, `en` or `pt-BR`).
fn contract_headers(
    req: reqwest::RequestBuilder,
    ctx: &ProviderContext,
    session: Option<&str>,
) -> reqwest::RequestBuilder {
    let mut req = req
        .header("mcp-protocol-version", PROTOCOL_VERSION)
        .bearer_auth(ctx.service_token.expose())
        .header("x-mcp-tenant-id", ctx.tenant.as_str())
        .header("x-mcp-user-id", ctx.user.as_str())
        .header("x-mcp-conversation-id", ctx.conversation.as_str());
    if let Some(s) = session {
        req = req.header("mcp-session-id", s);
    }
    if let Some(l) = ctx.language {
        req = req.header("x-mcp-language", l.tag());
    }
    req
}

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
        // Every page shares one budget: a server cannot hold each of ten pages for the
        // whole timeout.
        let until = Instant::now() + self.settings.timeout;
        for _ in 0..MAX_TOOL_PAGES {
            let params = PaginatedRequestParams::default().with_cursor(cursor.take());
            let request = ListToolsRequest::with_param(params).into();
            let result = self.request(ctx, request, until).await?;
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

    /// The handshake on a fresh session (never a kept one: a kept session the server has
    /// dropped would refuse the countersigned call, which cannot be sent again).
    async fn open(&self, ctx: &ProviderContext) -> Result<Opened, ProviderError> {
        let url = self.checked_url(&ctx.server_url)?;
        let until = Instant::now() + self.settings.timeout;
        let session = self.initialize(ctx, &url, until).await?;
        Ok(Opened {
            session,
            until: Some(until),
        })
    }

    async fn call_tool(
        &self,
        ctx: &ProviderContext,
        tool: &str,
        arguments: &Map<String, Value>,
        confirmation: Option<Confirmation<'_>>,
    ) -> Result<Value, ProviderError> {
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments.clone());
        let request = CallToolRequest::new(params).into();
        // The result object as the provider sent it: proxied answers pass through
        // unchanged (G-6); contract answers are read by the domain's parser.
        let result = match confirmation {
            Some(c) => self.request_once(ctx, request, c).await?,
            None => {
                let until = Instant::now() + self.settings.timeout;
                self.request(ctx, request, until).await?
            }
        };
        Ok(Value::Object(result))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use countersign_domain::ids::{CaseId, UserId};
    use countersign_domain::secret::SecretString;

    /// A client admitting loopback providers, with `settings`' other fields.
    fn loopback_client(settings: Settings) -> HttpProvider {
        HttpProvider::new(Settings {
            url_policy: UrlPolicy {
                allow_loopback_http: true,
            },
            ..settings
        })
        .unwrap()
    }

    /// A context for `url` (loopback allowed) with `token` under settings `version`.
    fn context(url: &str, version: u64, token: &str) -> ProviderContext {
        let policy = UrlPolicy {
            allow_loopback_http: true,
        };
        ProviderContext {
            tenant: TenantId::from_ulid_text("01JDZ6Y5X1QW9T3V7N2K4M8P0R").unwrap(),
            user: UserId::parse("u_alice").unwrap(),
            conversation: CaseId::from_ulid_text("01JDZ6Y5X1QW9T3V7N2K4M8P0R").unwrap(),
            server_url: ServerUrl::parse(url, policy).unwrap(),
            service_token: SecretString::new(token),
            config_version: version,
            language: None,
        }
    }

    /// Issue 13: a provider URL in an error (and so in a log line) is reduced to scheme,
    /// host, port and path: a query string may carry a secret.
    #[tokio::test]
    async fn errors_name_the_provider_url_without_its_query() {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = probe.local_addr().unwrap().port();
        drop(probe);
        let client = loopback_client(Settings::default());
        let url = format!("http://127.0.0.1:{port}/mcp?apiKey=s3cr3t-value");
        let ctx = context(&url, 1, "token");
        let e = client.list_tools(&ctx).await.unwrap_err();
        let shown = e.to_string() + &format!("{e:?}");
        assert!(shown.contains(&format!("127.0.0.1:{port}/mcp")), "{shown}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
    }

    /// A provider that answers `tools/call` with an event stream it closes after its
    /// priming event (numbered, with `retry`); a `GET` with `Last-Event-ID` gets the
    /// answer when `resumable`, 405 otherwise. Counts POSTs and GETs, keeps the GETs'
    /// headers.
    async fn closing_provider(
        resumable: bool,
    ) -> (
        String,
        Arc<Mutex<Vec<axum::http::HeaderMap>>>,
        Arc<AtomicI64>,
    ) {
        use axum::http::{HeaderMap, StatusCode};
        use axum::response::IntoResponse;
        let gets: Arc<Mutex<Vec<HeaderMap>>> = Arc::default();
        let posts = Arc::new(AtomicI64::new(0));
        let (g, p) = (gets.clone(), posts.clone());
        let app = axum::Router::new().route(
            "/mcp",
            axum::routing::post(move |body: axum::Json<Value>| {
                let p = p.clone();
                async move {
                    p.fetch_add(1, Ordering::SeqCst);
                    let id = body["id"].to_string();
                    let sse = [("content-type", "text/event-stream")];
                    // The request's id, so the GET can answer it.
                    (
                        sse,
                        format!("id: ev-1\nretry: 20\ndata: \n\n: for {id}\n\n"),
                    )
                        .into_response()
                }
            })
            .get(move |headers: HeaderMap| {
                let g = g.clone();
                async move {
                    g.lock().unwrap().push(headers);
                    if !resumable {
                        return StatusCode::METHOD_NOT_ALLOWED.into_response();
                    }
                    let answer = serde_json::json!({"jsonrpc": "2.0", "id": 1,
                        "result": {"content": [{"type": "text", "text": "resumed"}]}});
                    (
                        [("content-type", "text/event-stream")],
                        format!("id: ev-2\ndata: {answer}\n\n"),
                    )
                        .into_response()
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await });
        (format!("http://127.0.0.1:{port}/mcp"), gets, posts)
    }

    /// E-3 (the conformance suite's `sse-retry`): an event stream that ends before its
    /// answer, after numbered events, is resumed with `GET` and `Last-Event-ID` after the
    /// server's `retry`; the request is sent once, and the `GET` carries the contract's
    /// headers and no proof.
    #[tokio::test]
    async fn e3_a_broken_event_stream_is_resumed_by_get_and_the_request_sent_once() {
        let (url, gets, posts) = closing_provider(true).await;
        let client = loopback_client(Settings::default());
        let ctx = context(&url, 1, "token");
        client.next_id.store(1, Ordering::SeqCst);
        let answer = client
            .call_tool(&ctx, "test_reconnection", &Map::new(), None)
            .await
            .unwrap();
        assert_eq!(answer["content"][0]["text"], "resumed", "{answer}");
        assert_eq!(posts.load(Ordering::SeqCst), 1);
        let gets = gets.lock().unwrap();
        assert_eq!(gets.len(), 1);
        assert_eq!(gets[0]["last-event-id"], "ev-1");
        assert_eq!(gets[0]["x-mcp-user-id"], "u_alice");
        assert!(gets[0].get("x-mcp-confirmation").is_none());
    }

    /// a server that cannot resume (its `GET` is refused) leaves the answer lost —
    /// `Interrupted`, an unknown outcome — and the request is never sent again.
    #[tokio::test]
    async fn a43_a_stream_that_cannot_be_resumed_is_interrupted_and_never_resent() {
        let (url, gets, posts) = closing_provider(false).await;
        let client = loopback_client(Settings::default());
        let ctx = context(&url, 1, "token");
        let e = client
            .call_tool(&ctx, "test_reconnection", &Map::new(), None)
            .await
            .unwrap_err();
        assert!(matches!(e, ProviderError::Interrupted), "{e:?}");
        assert_eq!(posts.load(Ordering::SeqCst), 1);
        assert_eq!(gets.lock().unwrap().len(), 1);
    }

    /// Issue 13: the pages of one `tools/list` share one budget: a server that answers
    /// each page just inside the timeout, and always has another page, is cut off at the
    /// timeout, not after ten timeouts.
    #[tokio::test]
    async fn tools_list_pages_share_one_time_budget() {
        use axum::routing::post;
        let app = axum::Router::new().route(
            "/mcp",
            post(|body: axum::Json<Value>| async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                axum::Json(serde_json::json!({"jsonrpc": "2.0", "id": body["id"],
                    "result": {"tools": [], "nextCursor": "more"}}))
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let client = loopback_client(Settings {
            timeout: Duration::from_millis(1000),
            ..Settings::default()
        });
        let ctx = context(&format!("http://127.0.0.1:{port}/mcp"), 1, "token");
        assert!(matches!(
            client.list_tools(&ctx).await,
            Err(ProviderError::Timeout)
        ));
    }

    /// Issue 27: a consultation (tagged with the settings' version) and a status query
    /// (the action settings' version) share the kept session: one `initialize`, no close.
    /// A rotated service token opens a new one and closes the old.
    #[tokio::test]
    async fn consultations_and_status_queries_share_one_kept_session() {
        use axum::http::{HeaderMap, StatusCode};
        use axum::response::IntoResponse;
        use std::sync::atomic::AtomicUsize;
        #[derive(Default)]
        struct Seen {
            initializes: AtomicUsize,
            deletes: AtomicUsize,
        }
        let seen = Arc::new(Seen::default());
        let (post_seen, delete_seen) = (seen.clone(), seen.clone());
        let app = axum::Router::new().route(
            "/mcp",
            axum::routing::post(move |headers: HeaderMap, body: axum::Json<Value>| {
                let seen = post_seen.clone();
                async move {
                    let id = body["id"].clone();
                    match body["method"].as_str().unwrap_or_default() {
                        "initialize" => {
                            let n = seen.initializes.fetch_add(1, Ordering::SeqCst);
                            let result = serde_json::json!({"protocolVersion": PROTOCOL_VERSION,
                                "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}});
                            (
                                [("mcp-session-id", format!("s{n}"))],
                                axum::Json(serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result})),
                            )
                                .into_response()
                        }
                        "notifications/initialized" => StatusCode::ACCEPTED.into_response(),
                        _ if headers.get("mcp-session-id").is_none() => {
                            (StatusCode::BAD_REQUEST, "a session is required").into_response()
                        }
                        "tools/list" => axum::Json(serde_json::json!({"jsonrpc": "2.0", "id": id,
                            "result": {"tools": []}}))
                        .into_response(),
                        _ => axum::Json(serde_json::json!({"jsonrpc": "2.0", "id": id,
                            "result": {"content": [{"type": "text", "text": "{}"}], "structuredContent": {}}}))
                        .into_response(),
                    }
                }
            })
            .delete(move || {
                let seen = delete_seen.clone();
                async move {
                    seen.deletes.fetch_add(1, Ordering::SeqCst);
                    StatusCode::OK
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let client = loopback_client(Settings::default());
        let url = format!("http://127.0.0.1:{port}/mcp");
        let ctx = |version: u64, token: &str| context(&url, version, token);
        let args = serde_json::Map::new();
        client.list_tools(&ctx(3, "token")).await.unwrap();
        client
            .call_tool(&ctx(1, "token"), "get_action_status", &args, None)
            .await
            .unwrap();
        client.list_tools(&ctx(3, "token")).await.unwrap();
        assert_eq!(seen.initializes.load(Ordering::SeqCst), 1, "one session");
        assert_eq!(seen.deletes.load(Ordering::SeqCst), 0, "none closed");
        // A rotated token comes with a new settings version (no cached tool list).
        client.list_tools(&ctx(4, "rotated")).await.unwrap();
        assert_eq!(
            seen.initializes.load(Ordering::SeqCst),
            2,
            "a new token, a new session"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(seen.deletes.load(Ordering::SeqCst), 1, "the old one closed");
    }
}
