//! The tenant integration service: the one place that turns "this person, in this
//! conversation" into a connection to the tenant's MCP server, used by the gateway and by
//! the messages function alike.
//!
//! - [`IntegrationService::current`]: the configuration in force and a provider context
//!   with its service token (C-8: the token of that configuration's secret version);
//! - [`IntegrationService::for_proposal`]: the integration a proposal was prepared with —
//!   URL, token version, audience — and no other (C-8, A-32);
//! - [`IntegrationService::tools`]: the provider's allowlisted consultations (A-3, G-6);
//! - [`route`] and [`IntegrationService::call`]: a tool call goes to a built-in, to an
//!   allowlisted consultation, or nowhere.
//!
//! Service tokens are cached by secret version: a version's value never changes, so the
//! cache is never stale, and a new configuration (a new version) is read once.

use crate::builtins::CallContext;
use crate::registry::Registry;
use countersign_domain::config::{ServerUrl, UrlPolicy, service_token_secret_name};
use countersign_domain::conversation::Principal;
use countersign_domain::ids::{CaseId, TenantId};
use countersign_domain::ports::{
    McpSettings, Provider, ProviderContext, ProviderError, ProviderTool, SecretError, SecretStore,
    StoreError, StoredMcpConfig,
};
use countersign_domain::proposal::Proposal;
use countersign_domain::secret::SecretString;
use rmcp::model::{CallToolResult, ResultType};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Why the integration could not be read.
#[derive(Debug, thiserror::Error)]
pub enum IntegrationError {
    /// The tenant store failed.
    #[error("the configuration is unavailable")]
    Store(#[from] StoreError),
    /// The secret store failed.
    #[error("the service token is unavailable")]
    Secrets(#[from] SecretError),
}

/// The configuration in force and a connection for one person's conversation.
#[derive(Debug, Clone)]
pub struct Connected {
    /// The stored configuration.
    pub config: StoredMcpConfig,
    /// Who the provider is called for, and with which token.
    pub ctx: ProviderContext,
}

/// What a tenant's `tools/list` offers a turn.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// The allowlisted consultations.
    pub allowed: Vec<ProviderTool>,
    /// The configured operations' argument schemas, by operation.
    pub schemas: std::collections::BTreeMap<String, Value>,
}

/// Where a tool call goes (D-3, A-3, G-6).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Route<'a> {
    /// A built-in tool of the registry.
    BuiltIn,
    /// One of the tenant's allowlisted consultations.
    Proxied(&'a ProviderTool),
    /// Neither: refused without calling anyone.
    Unknown,
}

/// Routes `name`: built-ins first (a provider tool can never shadow one), then the
/// allowlisted consultations.
pub fn route<'a, C: Clone + Send + Sync + 'static>(
    registry: &Registry<C>,
    proxied: &'a [ProviderTool],
    name: &str,
) -> Route<'a> {
    if registry.get(name).is_some() {
        return Route::BuiltIn;
    }
    proxied
        .iter()
        .find(|t| t.name.as_str() == name)
        .map_or(Route::Unknown, Route::Proxied)
}

/// A tool call's answer: a built-in's sealed envelope (its text is its
/// `structuredContent` serialised, G-1), or a consultation's result as the provider gave it.
#[derive(Debug, Clone)]
pub enum ToolAnswer {
    /// A built-in tool's envelope.
    Sealed(crate::envelope::Sealed),
    /// Any other result, passed on as it is (a consultation's, G-6).
    Plain(CallToolResult),
}

impl ToolAnswer {
    /// The MCP result.
    pub fn into_call_tool_result(self) -> CallToolResult {
        match self {
            Self::Sealed(sealed) => sealed.into_call_tool_result(),
            Self::Plain(result) => result,
        }
    }
}

/// The service. Cheap to share (`Arc`); one per process.
pub struct IntegrationService {
    tenants: Arc<dyn McpSettings>,
    secrets: Arc<dyn SecretStore>,
    provider: Arc<dyn Provider>,
    tokens: Mutex<HashMap<(TenantId, String), SecretString>>,
}

countersign_domain::debug_showing!(IntegrationService {});

impl IntegrationService {
    /// Over the tenant store, the secret store and the provider client.
    pub fn new(
        tenants: Arc<dyn McpSettings>,
        secrets: Arc<dyn SecretStore>,
        provider: Arc<dyn Provider>,
    ) -> Self {
        Self {
            tenants,
            secrets,
            provider,
            tokens: Mutex::new(HashMap::new()),
        }
    }

    /// The provider client.
    pub fn provider(&self) -> &dyn Provider {
        self.provider.as_ref()
    }

    /// The configuration in force for `who`'s tenant, connected for `case`; `None` when
    /// none is configured (or its token version is gone).
    pub async fn current(
        &self,
        who: &Principal,
        case: &CaseId,
    ) -> Result<Option<Connected>, IntegrationError> {
        let Some(config) = self.tenants.get_mcp_config(&who.tenant).await? else {
            return Ok(None);
        };
        let url = config.config.server_url.clone();
        let ctx = self
            .context(who, case, url, &config.secret_version, config.version)
            .await?;
        Ok(ctx.map(|ctx| Connected { config, ctx }))
    }

    /// C-8 (issue 27): whether the action settings `p` was prepared under — the actions
    /// version and the service token's version — are still the tenant's, by a consistent
    /// read. An execution runs only then, so no proposal runs under settings that changed
    /// after it was prepared, whether or not the save's sweep has reached it yet.
    pub async fn in_force(&self, who: &Principal, p: &Proposal) -> Result<bool, IntegrationError> {
        let Some(prepared_with) = &p.secret_version else {
            // Prepared without an integration: nothing to run it against anyway.
            return Ok(true);
        };
        let current = self.tenants.get_mcp_config(&who.tenant).await?;
        Ok(current.is_some_and(|c| {
            c.actions_version == p.config_version && &c.secret_version == prepared_with
        }))
    }

    /// The integration `p` was prepared with (C-8: an execution or a status query uses
    /// the original URL, token version and audience) and its proof audience.
    /// `None` when the proposal carries no integration or its token version is gone.
    pub async fn for_proposal(
        &self,
        who: &Principal,
        p: &Proposal,
    ) -> Result<Option<(ProviderContext, String)>, IntegrationError> {
        let (Some(url), Some(secret)) = (&p.server_url, &p.secret_version) else {
            return Ok(None);
        };
        // Stored URLs passed the save-time rules; the provider client re-checks D-5 at
        // connect time under this deployment's policy.
        let lenient = UrlPolicy {
            allow_loopback_http: true,
        };
        let Ok(server_url) = ServerUrl::parse(url, lenient) else {
            return Ok(None);
        };
        let audience = p
            .audience
            .clone()
            .unwrap_or_else(|| server_url.as_str().to_owned());
        let ctx = self
            .context(who, &p.case, server_url, secret, p.config_version)
            .await?;
        Ok(ctx.map(|ctx| (ctx, audience)))
    }

    /// The provider's tools that `connected`'s allowlist admits, in its order.
    pub async fn tools(&self, connected: &Connected) -> Result<Vec<ProviderTool>, ProviderError> {
        Ok(self.catalog(connected).await?.allowed)
    }

    /// One `tools/list` of the tenant's server, read two ways: the allowlisted
    /// consultations, and the argument schemas of the configured operations (decision
    /// 0024: the `inputSchema` of the server's tool named like the operation; that tool
    /// itself is never callable through the platform, H-2).
    pub async fn catalog(&self, connected: &Connected) -> Result<Catalog, ProviderError> {
        let published = self.provider.list_tools(&connected.ctx).await?;
        let operations = &connected.config.config.action_policy.operations;
        let schemas = published
            .iter()
            .filter(|t| operations.iter().any(|o| o.as_str() == t.name.as_str()))
            .filter_map(|t| {
                let schema = t.descriptor.get("inputSchema").filter(|s| s.is_object())?;
                Some((t.name.to_string(), schema.clone()))
            })
            .collect();
        Ok(Catalog {
            allowed: crate::proxy::allowed_tools(
                published,
                &connected.config.config.allowed_tools,
                operations,
                &connected.config.config.approved,
            ),
            schemas,
        })
    }

    /// Calls `name` for `ctx`: a built-in through the registry, an allowlisted
    /// consultation through the provider (checked against its `outputSchema`, G-6).
    /// Returns the answer, or `None` for a tool that is neither.
    pub async fn answer(
        &self,
        registry: &Registry<CallContext>,
        ctx: CallContext,
        proxied: Option<(&ProviderContext, &[ProviderTool])>,
        name: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Option<ToolAnswer> {
        let tools: &[ProviderTool] = proxied.map_or(&[], |(_, t)| t);
        match route(registry, tools, name) {
            Route::BuiltIn => {
                let args = arguments.map_or(Value::Null, Value::Object);
                let mut ctx = ctx;
                ctx.consultations = tools.iter().map(|t| t.descriptor.clone()).collect();
                registry.call(ctx, name, args).await.map(ToolAnswer::Sealed)
            }
            Route::Proxied(tool) => {
                let (pctx, _) = proxied?;
                let args = arguments.unwrap_or_default();
                let raw = crate::proxy::call(self.provider.as_ref(), pctx, tool, &args).await;
                let mut result: CallToolResult = serde_json::from_value(raw).unwrap_or_else(|_| {
                    let message = "The company's system answered with a malformed result.";
                    crate::proxy::violation(tool, message, Value::Null)
                });
                // The answer passes through unchanged (G-6), but its framing is ours: a
                // 2026-07-28 caller needs `resultType` on every result (rmcp removes it for
                // earlier protocol versions), and the platform answers only complete ones.
                result.result_type = Some(ResultType::COMPLETE);
                Some(ToolAnswer::Plain(result))
            }
            Route::Unknown => None,
        }
    }

    /// A provider context for `server_url` with the token of `secret_version`.
    async fn context(
        &self,
        who: &Principal,
        case: &CaseId,
        server_url: ServerUrl,
        secret_version: &str,
        config_version: u64,
    ) -> Result<Option<ProviderContext>, IntegrationError> {
        let Some(service_token) = self.token(&who.tenant, secret_version).await? else {
            return Ok(None);
        };
        Ok(Some(ProviderContext {
            tenant: who.tenant.clone(),
            user: who.user.clone(),
            conversation: case.clone(),
            server_url,
            service_token,
            config_version,
            // The use case that knows the conversation's language sets it.
            language: None,
        }))
    }

    /// The service token of `version`, cached (a version never changes).
    async fn token(
        &self,
        tenant: &TenantId,
        version: &str,
    ) -> Result<Option<SecretString>, IntegrationError> {
        let key = (tenant.clone(), version.to_owned());
        let cached = self
            .tokens
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
            .cloned();
        if cached.is_some() {
            return Ok(cached);
        }
        let read = self
            .secrets
            .get_version(&service_token_secret_name(tenant), version)
            .await?;
        if let Some(t) = &read {
            self.tokens
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(key, t.clone());
        }
        Ok(read)
    }
}
