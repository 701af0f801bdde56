//! The gateway: `POST /mcp`, the tool registry over MCP Streamable HTTP (stateless, JSON
//! responses), for model runtimes and agents.
//!
//! Every request carries a bearer token minted for one conversation (D-4); the auth layer
//! refuses a missing, expired or bad token with 401 before MCP sees the request, and hands
//! the verified grant to the MCP handler through the request's extensions. The principal
//! is therefore fixed by the token, never by arguments.

pub mod confirm;
mod fast;
pub mod token_key;
pub mod wiring;

pub use token_key::TokenKey;

use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use countersign_domain::ports::{
    Admission, Clock, ConfirmationLinks, ProviderContext, ProviderTool, RateLimiter,
};
use countersign_http::{ApiError, bearer};
use countersign_tools::access::{self, Grant};
use countersign_tools::builtins::{CallContext, DESCRIBE_TOOL, Services};
use countersign_tools::integration::IntegrationService;
use countersign_tools::integration::ToolAnswer;
use countersign_tools::registry::Registry;
use rmcp::ErrorData as McpError;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, InitializeRequestParams,
    InitializeResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities,
    Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;

/// Everything the gateway needs, built once per process.
pub struct Gateway {
    /// The built-in tools.
    pub registry: Registry<CallContext>,
    /// Stores the tools use.
    pub services: Services,
    /// Verifies access tokens (D-4); read on first use.
    pub token_key: TokenKey,
    /// The clock tokens are checked against.
    pub clock: Arc<dyn Clock>,
    /// Host names the deployed API answers on (besides loopback), for rmcp's Host check;
    /// `*` turns the check off (behind API Gateway).
    pub allowed_hosts: Vec<String>,
    /// The tenants' MCP servers, for proxied consultations (G-6), through the same
    /// integration service the messages function uses; `None` serves built-ins only.
    pub integration: Option<Arc<IntegrationService>>,
    /// Each tenant's budget of proxied consultations per minute (decision 0021); `None`
    /// admits every call. Built-ins, which never reach a tenant's server, are not counted.
    pub budget: Option<(Arc<dyn RateLimiter>, u32)>,
    /// confirmation links for what `prepare_action` prepares; `None`: the person
    /// confirms in the chat only (no page).
    pub links: Option<Arc<dyn ConfirmationLinks>>,
    /// The public origin of the confirmation page (`https://host`); `None`: the origin
    /// the request reached (its `Host`).
    pub public_url: Option<String>,
    /// F-3: where confirmation links point when that is not the API's own origin (the
    /// local stack's `localhost`, where passkey ceremonies can run); `None`: as above.
    pub page_url: Option<String>,
}

/// Security review N11: a person's share of their tenant's gateway calls a minute.
#[must_use]
pub fn person_share(per_minute: u32) -> u32 {
    (per_minute / 4).max(per_minute.min(10))
}

impl Gateway {
    /// Decision 0021: one unit of the tenant's budget of proxied consultations; the
    /// refusal to return instead of calling, when it is spent.
    async fn spend(
        &self,
        grant: &Grant,
        tool: &str,
        builtin_version: Option<&str>,
    ) -> Result<Option<ToolAnswer>, McpError> {
        let Some((limiter, per_minute)) = &self.budget else {
            return Ok(None);
        };
        let started = std::time::Instant::now();
        let tenant = &grant.principal.tenant;
        let unavailable = |e: countersign_domain::ports::StoreError| {
            tracing::warn!(error = %e, "the tenant budget could not be read");
            McpError::internal_error("a platform service is unavailable", None)
        };
        // Security review N11: one person's token takes at most a quarter of the tenant's
        // calls a minute (and never fewer than 10, or the whole of a smaller budget), so
        // it cannot spend every other client's share (keyed by a digest: the window item
        // outlives an erasure until its TTL).
        let person = countersign_domain::hash::Sha256Hex::digest(format!(
            "countersign person budget\n{tenant}\n{}",
            grant.principal.user
        ));
        let bucket = format!("person:gateway:{}", &person.as_str()[..32]);
        let now = self.clock.now();
        let admission = match limiter
            .take(tenant, &bucket, person_share(*per_minute), now)
            .await
            .map_err(unavailable)?
        {
            Admission::Admitted => limiter
                .take(tenant, "gateway", *per_minute, now)
                .await
                .map_err(unavailable)?,
            limited @ Admission::Limited { .. } => limited,
        };
        Ok(match admission {
            Admission::Admitted => None,
            Admission::Limited { retry_after_secs } => {
                tracing::info!(%tenant, retry_after_secs, "tenant gateway budget spent");
                // G-8: a refused call is measured too, with the code it answers.
                countersign_tools::registry::record_duration(
                    tool,
                    countersign_tools::errors::code::SERVICE_UNAVAILABLE,
                    started,
                );
                Some(match builtin_version {
                    Some(version) => {
                        ToolAnswer::Sealed(countersign_tools::proxy::budget_spent_builtin(
                            tool,
                            version,
                            retry_after_secs,
                        ))
                    }
                    None => ToolAnswer::Plain(countersign_tools::proxy::budget_spent(
                        tool,
                        retry_after_secs,
                    )),
                })
            }
        })
    }

    /// The caller's tenant's provider context and allowed proxied tools (G-6, A-3), or
    /// nothing when no provider or configuration exists.
    async fn proxied(
        &self,
        grant: &Grant,
    ) -> Result<Option<(ProviderContext, Vec<ProviderTool>)>, McpError> {
        let Some(integration) = &self.integration else {
            return Ok(None);
        };
        let unavailable = |_| McpError::internal_error("configuration unavailable", None);
        let Some(connected) = integration
            .current(&grant.principal, &grant.case)
            .await
            .map_err(unavailable)?
        else {
            return Ok(None);
        };
        let tools = integration
            .tools(&connected)
            .await
            .map_err(|_| McpError::internal_error("the company's system did not answer", None))?;
        Ok(Some((connected.ctx, tools)))
    }
}

countersign_domain::debug_showing!(Gateway { registry });

/// The MCP handler: one per process, shared by every request.
#[derive(Clone)]
struct Handler(Arc<Gateway>);

/// Whether `request` is `describe_tool` naming a tool that is not built in.
fn describes_a_consultation(
    registry: &Registry<CallContext>,
    request: &CallToolRequestParams,
) -> bool {
    request.name == DESCRIBE_TOOL.name
        && request
            .arguments
            .as_ref()
            .and_then(|a| a.get("name"))
            .and_then(serde_json::Value::as_str)
            .is_some_and(|name| registry.get(name).is_none())
}

/// The protocol versions the gateway implements and advertises (decision 0029): the two
/// `initialize` eras and the stateless one. rmcp validates each request's version against
/// this list, bounds `initialize` negotiation by it, and publishes it in `server/discover`.
pub const PROTOCOL_VERSIONS: [ProtocolVersion; 3] = [
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

fn grant_of(ctx: &RequestContext<RoleServer>) -> Result<Grant, McpError> {
    ctx.extensions
        .get::<http::request::Parts>()
        .and_then(|p| p.extensions.get::<Grant>())
        .cloned()
        // Unreachable behind the auth layer; refuse rather than guess a principal.
        .ok_or_else(|| McpError::invalid_request("unauthenticated", None))
}

impl ServerHandler for Handler {
    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(&PROTOCOL_VERSIONS)
    }

    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "countersign-gateway",
                env!("CARGO_PKG_VERSION"),
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.0.list_tools(&grant_of(&ctx)?).await
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        // the `initialize` eras declare capabilities only here, and the gateway is
        // stateless: what this token's client declared is kept for its `prepare_action`.
        if let (Some(links), Some(caller)) = (&self.0.links, caller_of(&ctx)) {
            let declared = request
                .capabilities
                .elicitation
                .as_ref()
                .is_some_and(|e| e.url.is_some());
            let until = self.0.clock.now().plus_seconds(access::MAX_TTL_SECONDS);
            if let Err(e) = links
                .set_url_elicitation(&caller.token_hash, declared, until)
                .await
            {
                // The client is then sent the link in a plain result: never stranded.
                tracing::warn!(error = %e, "what the client declared could not be kept");
            }
        }
        ctx.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let grant = grant_of(&ctx)?;
        if request.name == countersign_tools::builtins::PREPARE_ACTION.name {
            let parts = ctx.extensions.get::<http::request::Parts>();
            let header = parts
                .and_then(|p| p.headers.get("mcp-protocol-version"))
                .and_then(|v| v.to_str().ok());
            let caller = caller_of(&ctx);
            return self
                .0
                .prepare_by_era(&grant, caller.as_ref(), header, Some(&ctx.meta), request)
                .await;
        }
        self.0.call_tool(&grant, request).await
    }
}

fn caller_of(ctx: &RequestContext<RoleServer>) -> Option<confirm::Caller> {
    ctx.extensions
        .get::<http::request::Parts>()
        .and_then(|p| p.extensions.get::<confirm::Caller>())
        .cloned()
}

impl Gateway {
    /// `tools/list` for `grant`: the built-ins, then the tenant's allowed consultations.
    /// Shared by rmcp's handler and the stateless fast path ([`fast`]).
    pub(crate) async fn list_tools(&self, grant: &Grant) -> Result<ListToolsResult, McpError> {
        let mut published: Vec<serde_json::Value> =
            self.registry.descriptors().map(|d| d.published()).collect();
        // Proxied consultations exactly as the provider publishes them (G-6).
        if let Some((_, proxied)) = self.proxied(grant).await? {
            published.extend(
                proxied
                    .into_iter()
                    .map(|t| serde_json::Value::Object(t.descriptor)),
            );
        }
        let tools = published
            .into_iter()
            .map(serde_json::from_value::<Tool>)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| McpError::internal_error(format!("descriptor: {e}"), None))?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    /// `tools/call` for `grant` (rmcp's handler).
    pub(crate) async fn call_tool(
        &self,
        grant: &Grant,
        request: CallToolRequestParams,
    ) -> Result<CallToolResponse, McpError> {
        let answer = self.answer_tool(grant, request).await?;
        Ok(CallToolResponse::Complete(answer.into_call_tool_result()))
    }

    /// `tools/call` for `grant`, a built-in's answer still sealed (the stateless fast path
    /// writes its envelope text once, decision 0038).
    pub(crate) async fn answer_tool(
        &self,
        grant: &Grant,
        mut request: CallToolRequestParams,
    ) -> Result<ToolAnswer, McpError> {
        let call_ctx = CallContext {
            principal: grant.principal.clone(),
            case: grant.case.clone(),
            services: self.services.clone(),
            consultations: Vec::new(),
        };
        // Built-ins never need the provider's list; anything else is looked up among the
        // tenant's allowlisted consultations. What reaches the tenant's server (a
        // consultation, or `prepare_action`, whose hint says it is open-world) spends the
        // tenant's budget: a client retrying a thousand times is bounded.
        let described = self.registry.get(&request.name);
        let builtin = described.is_some();
        let reaches_provider = described.is_none_or(|d| d.spec.annotations.open_world_hint);
        let version = described.map(|d| d.spec.version);
        if reaches_provider && let Some(spent) = self.spend(grant, &request.name, version).await? {
            return Ok(spent);
        }
        // `describe_tool` of a name that is not built in describes a consultation, so it
        // needs the list (cached); describing a built-in reaches nobody.
        let needs_list = !builtin || describes_a_consultation(&self.registry, &request);
        let proxied = match &self.integration {
            Some(_) if needs_list => self.proxied(grant).await?,
            _ => None,
        };
        let raw = match &self.integration {
            Some(integration) => {
                let proxied = proxied.as_ref().map(|(c, t)| (c, t.as_slice()));
                let (registry, name) = (&self.registry, request.name.as_ref());
                integration
                    .answer(registry, call_ctx, proxied, name, request.arguments.take())
                    .await
            }
            None if builtin => {
                let args = request
                    .arguments
                    .take()
                    .map_or(serde_json::Value::Null, serde_json::Value::Object);
                self.registry
                    .call(call_ctx, &request.name, args)
                    .await
                    .map(ToolAnswer::Sealed)
            }
            None => None,
        };
        // A tool neither built in nor allowed is a protocol error, not a result (-32602).
        let result = raw.ok_or_else(|| {
            McpError::invalid_params(format!("unknown tool: {}", request.name), None)
        })?;
        Ok(result)
    }
}

/// D-4: 401 unless the request carries a valid token; the grant goes into extensions.
async fn authenticate(State(gw): State<Arc<Gateway>>, mut req: Request, next: Next) -> Response {
    let Some(token) = bearer(req.headers()) else {
        return ApiError::unauthorized("a bearer token is required").into_response();
    };
    let key = match gw.token_key.get().await {
        Ok(key) => key,
        Err(e) => {
            return ApiError::unavailable("access tokens cannot be checked right now", &e)
                .into_response();
        }
    };
    match key.verify(token, gw.clock.now()) {
        Ok(grant) => {
            let caller = confirm::Caller {
                origin: gw
                    .page_url
                    .clone()
                    .or_else(|| gw.public_url.clone())
                    .unwrap_or_else(|| origin_of(req.headers())),
                token_hash: countersign_domain::hash::Sha256Hex::digest(token.as_bytes()),
            };
            req.extensions_mut().insert(grant);
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
        Err(access::AccessError::Expired) => {
            ApiError::unauthorized("the token has expired").into_response()
        }
        Err(_) => ApiError::unauthorized("the token is not valid").into_response(),
    }
}

/// The origin a request reached, from its `Host`: `http` on loopback (the local stack),
/// `https` anywhere else (API Gateway serves only https).
fn origin_of(headers: &http::HeaderMap) -> String {
    countersign_http::pages::origin_of(headers)
}

/// Every route (method, path) the router serves: the SAM template is checked against it.
pub const ROUTES: [(&str, &str); 1] = [("POST", "/mcp")];

/// The gateway's router: `POST /mcp` (stateless MCP Streamable HTTP, JSON responses),
/// plain stateless tool requests on the fast path (decision 0038), the rest through rmcp.
pub fn router(gateway: Gateway) -> axum::Router {
    build(gateway, true)
}

/// The router with every request through rmcp's own service: the reference the fast path
/// is held against in tests (an answer from both must be the same).
pub fn router_without_fast_path(gateway: Gateway) -> axum::Router {
    build(gateway, false)
}

fn build(gateway: Gateway, fast_path: bool) -> axum::Router {
    let gateway = Arc::new(gateway);
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    hosts.extend(gateway.allowed_hosts.iter().cloned());
    let mut config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_allowed_hosts(hosts.clone());
    // `*`: behind API Gateway, which routes only its own domains to this function, the
    // Host check (a guard against DNS rebinding of local servers) has nothing to add.
    let any_host = gateway.allowed_hosts.iter().any(|h| h == "*");
    if any_host {
        config = config.disable_allowed_hosts();
    }
    let handler = Handler(gateway.clone());
    let rmcp = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let router = if fast_path {
        let mcp = Arc::new(fast::Mcp {
            gateway: gateway.clone(),
            rmcp,
            hosts: (!any_host).then_some(hosts),
        });
        axum::Router::new().nest_service("/mcp", axum::routing::any(fast::serve).with_state(mcp))
    } else {
        axum::Router::new().nest_service("/mcp", rmcp)
    };
    router
        .layer(middleware::from_fn_with_state(
            gateway.clone(),
            authenticate,
        ))
        .layer(middleware::from_fn_with_state(gateway, origin_check))
}

/// N-6, MCP Streamable HTTP: a request whose `Origin` is present and not allowed is
/// answered 403 before anything else (a web page, or a DNS-rebinding one, driving a
/// person's browser). Allowed: the gateway's own origin (its public URL, or the origin the
/// request reached) and `https://` (`http://` on loopback) origins of the configured hosts.
/// MCP clients that are not browsers send no `Origin` and are unaffected.
async fn origin_check(State(gw): State<Arc<Gateway>>, req: Request, next: Next) -> Response {
    let Some(origin) = req.headers().get(http::header::ORIGIN) else {
        return next.run(req).await;
    };
    let allowed = origin
        .to_str()
        .is_ok_and(|o| origin_allowed(o, &gw, req.headers()));
    if allowed {
        return next.run(req).await;
    }
    ApiError::new(
        http::StatusCode::FORBIDDEN,
        "ORIGIN_NOT_ALLOWED",
        "requests from this web origin are not accepted",
    )
    .into_response()
}

fn origin_allowed(origin: &str, gw: &Gateway, headers: &http::HeaderMap) -> bool {
    let own = gw.public_url.clone().unwrap_or_else(|| origin_of(headers));
    if origin.eq_ignore_ascii_case(own.trim_end_matches('/')) {
        return true;
    }
    // An origin is `scheme://host[:port]`, nothing more.
    let (https, rest) = match (
        origin.strip_prefix("https://"),
        origin.strip_prefix("http://"),
    ) {
        (Some(rest), _) => (true, rest),
        (None, Some(rest)) => (false, rest),
        _ => return false,
    };
    if rest.is_empty() || rest.contains(['/', '@', '[']) {
        return false;
    }
    let host = rest.split_once(':').map_or(rest, |(h, _)| h);
    let loopback = matches!(host, "127.0.0.1" | "localhost");
    (https || loopback)
        && gw
            .allowed_hosts
            .iter()
            .any(|h| h != "*" && h.eq_ignore_ascii_case(host))
}
