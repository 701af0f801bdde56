//! Widget credentials (C-9, decision 0047): create, replace, list, revoke.

use super::*;

/// A widget credential (ids and dates only).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WidgetCredential {
    /// The widget JWT's `kid`.
    pub key_id: String,
    /// RFC 3339.
    pub created_at: String,
    /// The origins whose pages may use it from a browser.
    pub allowed_origins: Vec<String>,
    /// RFC 3339: when a replaced credential's tokens stop being accepted (its grace
    /// period's end); absent while it is not replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retires_at: Option<String>,
}

/// `POST …/widget-credentials` body (optional).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateWidgetCredential {
    /// The web origins whose pages may use the credential from a browser, e.g.
    /// `https://shop.example.com` (https; http on localhost only); at most 20. Without
    /// any, the widget API refuses browser requests from other origins with this
    /// credential's tokens.
    #[serde(default)]
    #[schema(max_items = 20)]
    pub allowed_origins: Vec<OriginInput>,
}

/// A web origin: `https://host[:port]`, or `http://` on `localhost`, `127.0.0.1` or
/// `[::1]`; no path. (The documented pattern is a simple subset: the server also accepts
/// upper-case hosts, IP addresses, longer labels and the default port, normalising them.)
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(transparent)]
#[schema(
    value_type = String,
    pattern = r"^(https://([a-z0-9]{1,20}(-[a-z0-9]{1,20}){0,3}\.){0,4}[a-z][a-z0-9]{0,20}|http://(localhost|127\.0\.0\.1|\[::1\]))(:[1-9][0-9]{0,3})?$",
    example = "https://shop.example.com"
)]
pub struct OriginInput(pub String);

/// A new widget credential: the secret is shown this once.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewWidgetCredential {
    /// The widget JWT's `kid`.
    pub key_id: String,
    /// The HS256 secret; store it in your backend.
    pub secret: String,
    /// RFC 3339.
    pub created_at: String,
    /// The origins whose pages may use it from a browser.
    pub allowed_origins: Vec<String>,
}

/// The tenant's widget credentials.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WidgetCredentials {
    /// Oldest first.
    pub items: Vec<WidgetCredential>,
}

/// Creates a widget credential (C-9); the secret is shown this once.
#[utoipa::path(post, path = "/api/admin/tenants/{id}/widget-credentials", tag = "widget", security(("adminKey" = [])),
    params(TenantPath),
    request_body(content = Option<CreateWidgetCredential>, content_type = "application/json"),
    responses((status = 201, body = NewWidgetCredential), (status = 400, body = ErrorBody), (status = 413, body = ErrorBody), GuardErrors))]
pub(super) async fn create_widget_credential(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
    body: axum::body::Bytes,
) -> Result<impl axum::response::IntoResponse, ApiError> {
    at_most_max_body(&body)?;
    // The body is optional (absent or `null`): then a credential for server-side use only.
    let request: CreateWidgetCredential = countersign_http::parse_optional_json(&body)?;
    let origins: Vec<String> = request.allowed_origins.into_iter().map(|o| o.0).collect();
    let (key, secret) = crate::widgets::create(&state, &tenant, &origins).await?;
    Ok(new_credential(&key, &secret))
}

/// A new credential's answer: 201, its secret shown this once, so no cache may keep it.
pub(super) fn new_credential(
    key: &countersign_domain::ports::WidgetKey,
    secret: &countersign_domain::secret::SecretString,
) -> impl axum::response::IntoResponse + use<> {
    let body = NewWidgetCredential {
        key_id: key.id.to_string(),
        secret: secret.expose().to_owned(),
        created_at: key.created_at.to_rfc3339(),
        allowed_origins: key.allowed_origins.clone(),
    };
    let no_store = [(header::CACHE_CONTROL, "no-store")];
    (StatusCode::CREATED, no_store, axum::Json(body))
}

/// `POST …/widget-credentials/{keyId}/replacement` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplaceWidgetCredential {
    /// How long the old credential's tokens stay accepted, in seconds (0: revoked at
    /// once; at most 604800, a week), so the new secret can be deployed first.
    #[schema(minimum = 0, maximum = 604_800)]
    #[serde(deserialize_with = "countersign_http::whole_number")]
    pub grace_seconds: i64,
}

/// Replaces a widget credential (decision 0047): a new one with the same origins, its
/// secret shown this once; the old one's tokens stay accepted for the grace period.
#[utoipa::path(post, path = "/api/admin/tenants/{id}/widget-credentials/{keyId}/replacement", tag = "widget", security(("adminKey" = [])),
    params(TenantPath, ("keyId" = String, Path, description = "The credential to replace")),
    request_body(content = ReplaceWidgetCredential, content_type = "application/json"),
    responses((status = 201, body = NewWidgetCredential), (status = 400, body = ErrorBody), (status = 409, body = ErrorBody),
        (status = 413, body = ErrorBody), GuardErrors))]
pub(super) async fn replace_widget_credential(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
    Path((_, key_id)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Result<impl axum::response::IntoResponse, ApiError> {
    at_most_max_body(&body)?;
    let request: ReplaceWidgetCredential = countersign_http::parse_json(&body)?;
    let (key, secret) =
        crate::widgets::replace(&state, &tenant, &key_id, request.grace_seconds).await?;
    Ok(new_credential(&key, &secret))
}

/// The widget credentials: ids and dates only (C-9).
#[utoipa::path(get, path = "/api/admin/tenants/{id}/widget-credentials", tag = "widget", security(("adminKey" = [])),
    params(TenantPath),
    responses((status = 200, body = WidgetCredentials), GuardErrors))]
pub(super) async fn list_widget_credentials(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
) -> Result<Json<WidgetCredentials>, ApiError> {
    let items = crate::widgets::list(&state, &tenant)
        .await?
        .into_iter()
        .map(|k| WidgetCredential {
            key_id: k.id.to_string(),
            created_at: k.created_at.to_rfc3339(),
            allowed_origins: k.allowed_origins,
            retires_at: k.retires_at.map(Timestamp::to_rfc3339),
        })
        .collect();
    Ok(Json(WidgetCredentials { items }))
}

/// Revokes a widget credential: its tokens fail from then on (C-9, D-2).
#[utoipa::path(delete, path = "/api/admin/tenants/{id}/widget-credentials/{keyId}", tag = "widget", security(("adminKey" = [])),
    params(TenantPath, ("keyId" = String, Path, description = "The credential id")),
    responses((status = 204), GuardErrors))]
pub(super) async fn revoke_widget_credential(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
    Path((_, key_id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    crate::widgets::revoke(&state, &tenant, &key_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
