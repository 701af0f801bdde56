//! The admin API (SPEC §3): `GET | PUT | DELETE /api/admin/tenants/{id}/mcp`.
//!
//! Every request carries `Authorization: Bearer tsk_…`. The key identifies its own tenant
//! (admin-key index): a missing or wrong key is 401; a valid key on another tenant's id is
//! 404, and never shows that tenant's data (C-2, C-11). Errors are
//! `{"error": {"code", "message", "field"?}}`; nothing is ever partially saved.

use crate::keys;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use countersign_domain::config::{
    McpConfig, UrlPolicy, service_token_secret_name, validate_mcp_config,
};
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::TenantId;
use countersign_domain::ports::{
    AuditEntry, ConversationStore, ProofSigner, SecretStore, SignerError, StoredMcpConfig, Tenant,
    TenantStore, TransitionOutcome, VerificationKey,
};
use serde_json::{Value, json};
use std::sync::Arc;

/// Largest accepted request body.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// What the admin API needs.
#[derive(Clone)]
pub struct AdminState {
    /// Tenants and configurations.
    pub tenants: Arc<dyn TenantStore>,
    /// Conversations (C-8 invalidation).
    pub conversations: Arc<dyn ConversationStore>,
    /// Service tokens.
    pub secrets: Arc<dyn SecretStore>,
    /// The action signing key (C-5, C-6).
    pub signer: Arc<dyn ProofSigner>,
    /// The proofs' `iss` (C-5).
    pub issuer: String,
    /// D-5 local-stack allowance (off in deployments).
    pub url_policy: UrlPolicy,
    /// D-5: resolves `serverUrl` hosts on save.
    pub resolver: Arc<dyn crate::resolve::Resolver>,
    /// Fresh ids (widget credentials).
    pub ids: Arc<dyn countersign_domain::ports::Ids>,
    /// The clock.
    pub clock: Arc<dyn countersign_domain::ports::Clock>,
}

impl std::fmt::Debug for AdminState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdminState")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

/// An API error: status, code, message, and the field when one is to blame.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    field: Option<String>,
    extra: Option<Value>,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            field: None,
            extra: None,
        }
    }
    fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "UNAUTHORIZED",
            "a valid tenant admin key is required",
        )
    }
    /// Another change to the configuration came first (its version moved).
    fn conflict() -> Self {
        Self::new(
            StatusCode::CONFLICT,
            "CONFLICT",
            "the configuration changed meanwhile; reload and try again",
        )
    }
    fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "NOT_FOUND", "no such tenant")
    }
    fn unavailable(what: &str, cause: &dyn std::fmt::Display) -> Self {
        tracing::warn!(%cause, "{what} unavailable");
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "SERVICE_UNAVAILABLE",
            format!("{what} is unavailable; nothing was changed"),
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(f) = self.field {
            error["field"] = json!(f);
        }
        if let Some(Value::Object(extra)) = self.extra {
            for (k, v) in extra {
                error[k] = v;
            }
        }
        let mut r = (self.status, axum::Json(json!({ "error": error }))).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
        }
        r
    }
}

/// C-1, C-2: the tenant the presented key belongs to, if it is the one in the path.
async fn authorize(state: &AdminState, headers: &HeaderMap, id: &str) -> Result<Tenant, ApiError> {
    let key = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|k| k.starts_with(keys::PREFIX))
        .ok_or_else(ApiError::unauthorized)?;
    let owner = state
        .tenants
        .tenant_by_admin_key_hash(&Sha256Hex::digest(key))
        .await
        .map_err(|e| ApiError::unavailable("the tenant store", &e))?
        .ok_or_else(ApiError::unauthorized)?;
    // Another tenant's id (or a malformed one) answers 404, never its data.
    let path_id = TenantId::parse(id).map_err(|_| ApiError::not_found())?;
    if owner != path_id {
        return Err(ApiError::not_found());
    }
    let tenant = state
        .tenants
        .get_tenant(&owner)
        .await
        .map_err(|e| ApiError::unavailable("the tenant store", &e))?
        .ok_or_else(ApiError::not_found)?;
    if !keys::matches(key, &tenant.admin_key_hash) {
        return Err(ApiError::unauthorized());
    }
    Ok(tenant)
}

async fn verification(state: &AdminState) -> Result<Option<VerificationKey>, ApiError> {
    match state.signer.verification_key().await {
        Ok(k) => Ok(Some(k)),
        Err(SignerError::NotConfigured) => Ok(None),
        Err(e) => Err(ApiError::unavailable("the signing service", &e)),
    }
}

/// The tenant's stored MCP configuration, if any.
async fn current_config(
    state: &AdminState,
    tenant: &TenantId,
) -> Result<Option<StoredMcpConfig>, ApiError> {
    state
        .tenants
        .get_mcp_config(tenant)
        .await
        .map_err(|e| ApiError::unavailable("the tenant store", &e))
}

/// C-5: the configuration without the token, plus `actionVerification`.
async fn view(state: &AdminState, stored: Option<&StoredMcpConfig>) -> Result<Value, ApiError> {
    let verification = verification(state).await?.map(|k| {
        json!({"keyId": k.key_id, "algorithm": "RS256", "issuer": state.issuer, "publicKeyPem": k.public_key_pem})
    });
    Ok(match stored {
        None => json!({"configured": false, "actionVerification": verification}),
        Some(s) => json!({
            "configured": true,
            "version": s.version,
            "serverUrl": s.config.server_url.as_str(),
            "audience": s.config.audience,
            "allowedTools": s.config.allowed_tools.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "actionPolicy": {
                "contractVersion": 1,
                "enabled": s.config.action_policy.enabled,
                "operations": s.config.action_policy.operations.iter().map(ToString::to_string).collect::<Vec<_>>(),
            },
            "actionVerification": verification,
        }),
    })
}

async fn get_mcp(
    State(state): State<AdminState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let tenant = authorize(&state, &headers, &id).await?;
    let stored = current_config(&state, &tenant.id).await?;
    Ok(axum::Json(view(&state, stored.as_ref()).await?).into_response())
}

/// An audit record of a change made with this tenant's current admin key.
fn audit_entry(state: &AdminState, tenant: &Tenant, action: &str, changes: Value) -> AuditEntry {
    crate::audit::entry(
        state.ids.as_ref(),
        state.clock.as_ref(),
        crate::audit::admin_key_actor(&tenant.admin_key_hash),
        action,
        changes,
    )
}

/// What a PUT or DELETE changed: each changed field with its old and new value, the
/// service token only as `{"changed": true}`, and the versions.
fn config_changes(
    old: Option<&StoredMcpConfig>,
    new: Option<&StoredMcpConfig>,
    token_changed: bool,
) -> Value {
    fn fields(c: &StoredMcpConfig) -> [(&'static str, Value); 5] {
        let names = |v: &[_]| -> Vec<String> { v.iter().map(ToString::to_string).collect() };
        [
            ("serverUrl", json!(c.config.server_url.as_str())),
            ("audience", json!(c.config.audience)),
            ("allowedTools", json!(names(&c.config.allowed_tools))),
            (
                "actionPolicy.enabled",
                json!(c.config.action_policy.enabled),
            ),
            (
                "actionPolicy.operations",
                json!(
                    c.config
                        .action_policy
                        .operations
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                ),
            ),
        ]
    }
    let before = old.map(fields);
    let after = new.map(fields);
    let mut changes = serde_json::Map::new();
    for i in 0..5 {
        let from = before.as_ref().map_or(Value::Null, |f| f[i].1.clone());
        let to = after.as_ref().map_or(Value::Null, |f| f[i].1.clone());
        if from != to {
            let name = before.as_ref().or(after.as_ref()).map_or("", |f| f[i].0);
            changes.insert(name.to_owned(), json!({"from": from, "to": to}));
        }
    }
    if token_changed {
        changes.insert("serviceToken".into(), json!({"changed": true}));
    }
    changes.insert(
        "version".into(),
        json!({"from": old.map(|c| c.version), "to": new.map(|c| c.version)}),
    );
    Value::Object(changes)
}

/// C-8: whether a change invalidates pending proposals (URL, credential, policy, audience).
fn invalidates(old: &McpConfig, old_token: Option<&str>, new: &McpConfig) -> bool {
    old.server_url != new.server_url
        || old.action_policy != new.action_policy
        || old.audience != new.audience
        || old_token != Some(new.service_token.expose())
}

async fn put_mcp(
    State(state): State<AdminState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Result<Response, ApiError> {
    let tenant = authorize(&state, &headers, &id).await?;
    // Read here, not by an extractor, so that any oversized body (even a streamed one of
    // unknown length) gets the typed 413 rather than a plain-text rejection.
    let body: Bytes = axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "PAYLOAD_TOO_LARGE",
                format!("the body must be at most {MAX_BODY_BYTES} bytes"),
            )
        })?;
    let json: Value = serde_json::from_slice(&body).map_err(|_| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "INVALID_JSON",
            "the body must be a JSON object",
        )
    })?;
    let config = validate_mcp_config(&json, state.url_policy).map_err(|errors| {
        let first = errors.first().map(|e| e.field.clone()).unwrap_or_default();
        let message = errors.first().map(ToString::to_string).unwrap_or_default();
        ApiError {
            field: Some(first),
            extra: Some(json!({"errors": errors.iter().map(|e| json!({"field": e.field, "message": e.to_string()})).collect::<Vec<_>>()})),
            ..ApiError::new(StatusCode::BAD_REQUEST, "VALIDATION_ERROR", message)
        }
    })?;
    // D-5: the host must resolve only to public addresses (checked again at connect time).
    if let Err(e) = crate::resolve::check_public(
        state.resolver.as_ref(),
        &config.server_url,
        state.url_policy,
    )
    .await
    {
        return Err(ApiError {
            field: Some("serverUrl".into()),
            ..ApiError::new(
                StatusCode::BAD_REQUEST,
                "VALIDATION_ERROR",
                format!("serverUrl: {e}"),
            )
        });
    }
    // C-6: no enabling without a signing key; consultations stay configurable.
    if config.action_policy.enabled && verification(&state).await?.is_none() {
        return Err(ApiError {
            field: Some("actionPolicy.enabled".into()),
            ..ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "ACTION_SIGNING_UNAVAILABLE",
                "actions cannot be enabled: the platform has no signing key installed",
            )
        });
    }
    let current = current_config(&state, &tenant.id).await?;
    let secret_name = service_token_secret_name(&tenant.id);
    let old_token = match &current {
        Some(c) => state
            .secrets
            .get_version(&secret_name, &c.secret_version)
            .await
            .map_err(|e| ApiError::unavailable("the secret store", &e))?,
        None => None,
    };
    // The token first, as a new version: if anything after fails, the stored
    // configuration still points at the old version, so nothing is partially saved.
    let secret_version = state
        .secrets
        .put(&secret_name, &config.service_token)
        .await
        .map_err(|e| ApiError::unavailable("the secret store", &e))?;
    let version = current.as_ref().map_or(1, |c| c.version + 1);
    let must_invalidate = current
        .as_ref()
        .is_some_and(|c| invalidates(&c.config, old_token.as_ref().map(|t| t.expose()), &config));
    let token_changed =
        old_token.as_ref().map(|t| t.expose()) != Some(config.service_token.expose());
    let stored = StoredMcpConfig {
        config,
        version,
        secret_version,
    };
    let record = audit_entry(
        &state,
        &tenant,
        "mcp.put",
        config_changes(current.as_ref(), Some(&stored), token_changed),
    );
    match state
        .tenants
        .put_mcp_config(
            &tenant.id,
            &stored,
            current.as_ref().map(|c| c.version),
            &record,
        )
        .await
        .map_err(|e| ApiError::unavailable("the tenant store", &e))?
    {
        TransitionOutcome::Applied => {}
        TransitionOutcome::Conflict { .. } => {
            return Err(ApiError::conflict());
        }
    }
    if must_invalidate {
        // C-8: proposals not yet executing, prepared with an older version, are cancelled.
        if let Err(e) = state
            .conversations
            .invalidate_pending(&tenant.id, version)
            .await
        {
            // The confirm path also compares versions; log and carry on.
            tracing::warn!(error = %e, tenant = %tenant.id, "invalidating pending proposals failed");
        }
    }
    Ok(axum::Json(view(&state, Some(&stored)).await?).into_response())
}

async fn delete_mcp(
    State(state): State<AdminState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let tenant = authorize(&state, &headers, &id).await?;
    let current = current_config(&state, &tenant.id).await?;
    if let Some(c) = current {
        let record = audit_entry(
            &state,
            &tenant,
            "mcp.delete",
            config_changes(Some(&c), None, true),
        );
        match state
            .tenants
            .delete_mcp_config(&tenant.id, c.version, &record)
            .await
            .map_err(|e| ApiError::unavailable("the tenant store", &e))?
        {
            TransitionOutcome::Applied => {}
            TransitionOutcome::Conflict { .. } => {
                return Err(ApiError::conflict());
            }
        }
        // C-10: removing the connector disables actions; pending proposals are cancelled.
        // The token's secret versions stay, to reconcile `unknown` proposals (C-8).
        if let Err(e) = state
            .conversations
            .invalidate_pending(&tenant.id, u64::MAX)
            .await
        {
            tracing::warn!(error = %e, tenant = %tenant.id, "invalidating pending proposals failed");
        }
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// C-9: `POST widget-credentials` → `201 {keyId, secret, createdAt}`; the secret is shown
/// this once. The secret is stored first, then the credential: a credential never exists
/// without its secret.
async fn create_widget_credential(
    State(state): State<AdminState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let tenant = authorize(&state, &headers, &id).await?;
    let key = countersign_domain::ports::WidgetKey {
        id: state.ids.widget_key_id(),
        created_at: state.clock.now(),
    };
    let secret = keys::generate_widget_secret();
    state
        .secrets
        .put(
            &countersign_domain::config::widget_secret_name(&tenant.id, &key.id),
            &secret,
        )
        .await
        .map_err(|e| ApiError::unavailable("the secret store", &e))?;
    let record = audit_entry(
        &state,
        &tenant,
        "widgetCredential.create",
        json!({"keyId": key.id.as_str()}),
    );
    state
        .tenants
        .put_widget_key(&tenant.id, &key, &record)
        .await
        .map_err(|e| ApiError::unavailable("the tenant store", &e))?;
    let body = json!({"keyId": key.id.as_str(), "secret": secret.expose(), "createdAt": key.created_at.to_rfc3339()});
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

/// C-9: `GET widget-credentials` → ids and dates only.
async fn list_widget_credentials(
    State(state): State<AdminState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let tenant = authorize(&state, &headers, &id).await?;
    let items: Vec<Value> = state
        .tenants
        .list_widget_keys(&tenant.id)
        .await
        .map_err(|e| ApiError::unavailable("the tenant store", &e))?
        .into_iter()
        .map(|k| json!({"keyId": k.id.as_str(), "createdAt": k.created_at.to_rfc3339()}))
        .collect();
    Ok(axum::Json(json!({ "items": items })).into_response())
}

/// C-9, D-2: `DELETE widget-credentials/{keyId}` revokes: the credential goes first (its
/// tokens fail from then on), then its secret.
async fn revoke_widget_credential(
    State(state): State<AdminState>,
    Path((id, key_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let tenant = authorize(&state, &headers, &id).await?;
    let not_found = || {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            "no such widget credential",
        )
    };
    let key = countersign_domain::ids::WidgetKeyId::parse(key_id).map_err(|_| not_found())?;
    let record = audit_entry(
        &state,
        &tenant,
        "widgetCredential.revoke",
        json!({"keyId": key.as_str()}),
    );
    match state
        .tenants
        .delete_widget_key(&tenant.id, &key, &record)
        .await
        .map_err(|e| ApiError::unavailable("the tenant store", &e))?
    {
        TransitionOutcome::Applied => {}
        TransitionOutcome::Conflict { .. } => return Err(not_found()),
    }
    if let Err(e) = state
        .secrets
        .delete(&countersign_domain::config::widget_secret_name(
            &tenant.id, &key,
        ))
        .await
    {
        // Already revoked (the credential is gone); the orphan secret is never read.
        tracing::warn!(error = %e, "deleting a revoked widget secret failed");
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Audit page size when `limit` is absent, and the largest accepted.
pub const AUDIT_PAGE_DEFAULT: usize = 20;
/// The largest `limit` of `GET audit`.
pub const AUDIT_PAGE_MAX: usize = 100;

/// `GET audit?limit=&cursor=`: the tenant's audit records, newest first.
async fn list_audit(
    State(state): State<AdminState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    query: axum::extract::RawQuery,
) -> Result<Response, ApiError> {
    let tenant = authorize(&state, &headers, &id).await?;
    let invalid = |field: &str, message: String| ApiError {
        field: Some(field.to_owned()),
        ..ApiError::new(StatusCode::BAD_REQUEST, "VALIDATION_ERROR", message)
    };
    let mut limit = AUDIT_PAGE_DEFAULT;
    let mut cursor = None;
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query.0.as_deref().unwrap_or(""))
        .map_err(|_| invalid("query", "the query string is malformed".into()))?;
    for (name, value) in pairs {
        match name.as_str() {
            "limit" => {
                limit = value
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=AUDIT_PAGE_MAX).contains(n))
                    .ok_or_else(|| {
                        invalid(
                            "limit",
                            format!("limit must be an integer from 1 to {AUDIT_PAGE_MAX}"),
                        )
                    })?;
            }
            "cursor" => {
                cursor = Some(countersign_domain::ids::AuditId::parse(value).map_err(|_| {
                    invalid(
                        "cursor",
                        "cursor must be a nextCursor returned by this endpoint".into(),
                    )
                })?);
            }
            other => return Err(invalid(other, format!("unknown query parameter {other:?}"))),
        }
    }
    let page = state
        .tenants
        .list_audit(&tenant.id, cursor.as_ref(), limit)
        .await
        .map_err(|e| ApiError::unavailable("the tenant store", &e))?;
    let items: Vec<Value> = page
        .items
        .iter()
        .map(|a| {
            json!({"id": a.id.as_str(), "at": a.at.to_rfc3339(), "actor": a.actor, "action": a.action, "changes": a.changes})
        })
        .collect();
    Ok(
        axum::Json(json!({"items": items, "nextCursor": page.next.as_ref().map(|c| c.as_str())}))
            .into_response(),
    )
}

/// Every path the router serves, in axum's syntax: the OpenAPI document
/// (`docs/admin-api.openapi.json`) and the SAM template are checked against this list.
pub const PATHS: [&str; 4] = [
    "/api/admin/tenants/{id}/mcp",
    "/api/admin/tenants/{id}/widget-credentials",
    "/api/admin/tenants/{id}/widget-credentials/{key_id}",
    "/api/admin/tenants/{id}/audit",
];

/// Every route (method, path) the router serves: the SAM template is checked against it.
pub const ROUTES: [(&str, &str); 7] = [
    ("GET", PATHS[0]),
    ("PUT", PATHS[0]),
    ("DELETE", PATHS[0]),
    ("GET", PATHS[1]),
    ("POST", PATHS[1]),
    ("DELETE", PATHS[2]),
    ("GET", PATHS[3]),
];

/// The admin API router.
pub fn router(state: AdminState) -> Router {
    let [mcp, widgets, widget, audit] = PATHS;
    Router::new()
        .route(mcp, get(get_mcp).put(put_mcp).delete(delete_mcp))
        .route(
            widgets,
            get(list_widget_credentials).post(create_widget_credential),
        )
        .route(widget, axum::routing::delete(revoke_widget_credential))
        .route(audit, get(list_audit))
        .with_state(state)
}
