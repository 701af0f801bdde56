//! The MCP connection (C-3 … C-8, C-10, V-2): read, save, remove, approve a changed tool.

use super::*;

// The body is parsed by the domain's rules (`McpConfigDraft`), which report every broken
// rule at once — a serde type would stop at the first — so this type is the document's
// only; `openapi::the_mcp_body_schema_names_exactly_the_fields_the_rules_take` holds the
// two together.
/// The body of `PUT mcp` (C-3, C-4, C-7). Every broken rule is reported at once.
#[derive(Debug, utoipa::ToSchema)]
#[schema(rename_all = "camelCase")]
#[expect(
    dead_code,
    reason = "the OpenAPI document's description of the body the domain parses"
)]
pub struct McpConfigInput {
    /// https only; the host must resolve only to public addresses (D-5).
    #[schema(min_length = 1, max_length = 2048)]
    server_url: String,
    /// Sent to your server as `Authorization: Bearer …`; stored as a secret, never returned.
    #[schema(write_only, min_length = 1, max_length = 4096)]
    service_token: String,
    /// The consultations the model may call (C-4): tool names of 1–128 characters of
    /// `[A-Za-z0-9_.-]`, each listed by the server's `tools/list` with
    /// `annotations.readOnlyHint: true`, not `destructiveHint: true`, and not an operation
    /// (V-1).
    #[schema(min_items = 1, max_items = 100)]
    allowed_tools: Vec<ToolNameInput>,
    /// The action policy (C-7: disabled when absent).
    action_policy: Option<ActionPolicyInput>,
    /// The proof's `aud`; defaults to `serverUrl`. When set, a URL with the `serverUrl`'s
    /// own scheme, host and port (any path): proofs are only ever addressed to this
    /// tenant's server.
    #[schema(min_length = 1, max_length = 512)]
    audience: Option<String>,
}

/// A tool or operation name as `PUT mcp` takes it.
#[derive(Debug, utoipa::ToSchema)]
#[schema(value_type = String, pattern = "^[A-Za-z0-9_.-]{1,128}$")]
#[expect(dead_code, reason = "the OpenAPI document's only")]
pub struct ToolNameInput(String);

/// The action policy of `PUT mcp`.
#[derive(Debug, utoipa::ToSchema)]
#[schema(rename_all = "camelCase")]
#[expect(dead_code, reason = "the OpenAPI document's only")]
pub struct ActionPolicyInput {
    /// 1.
    contract_version: Option<u32>,
    /// Whether writes may be prepared (needs a signing key, C-6).
    enabled: bool,
    /// The operations that may be prepared (at most 50).
    #[schema(max_items = 50)]
    operations: Vec<String>,
    /// F-1: per operation, `none` (the default) or `passkey` — confirming it then needs
    /// the person's passkey. An operation becomes `passkey` only after a passing
    /// certification of these settings that sent step-up proofs for it (`stepUp` in the
    /// certification's body); otherwise the save answers 409 `STEP_UP_NOT_CERTIFIED`.
    #[schema(value_type = Option<std::collections::BTreeMap<String, String>>)]
    step_up: Option<std::collections::BTreeMap<String, String>>,
    /// F-2 (recovery): whether a person who has no passkey for this tenant may confirm a
    /// `passkey` operation as a `none` one (a plain proof, which a provider that requires
    /// the step-up refuses). Off by default.
    step_up_fallback: Option<bool>,
}

/// The tenant's MCP configuration (C-5).
#[utoipa::path(get, path = "/api/admin/tenants/{id}/mcp", tag = "mcp", security(("adminKey" = [])),
    params(TenantPath),
    responses((status = 200, body = McpView), GuardErrors))]
pub(super) async fn get_mcp(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
) -> Result<Json<McpView>, ApiError> {
    let stored = mcp::current(&state, &tenant).await?;
    let live = mcp::live_tools(&state, &tenant, stored.as_ref()).await;
    Ok(Json(
        mcp::view(&state, &tenant, stored.as_ref(), live.as_deref()).await?,
    ))
}

/// V-2: approves the live descriptor of an allowed tool that changed since it was
/// approved (it was withheld from the model and the gateway until now). Audited as
/// `mcp.tool.approved`. A change that made the tool a write is refused with 400
/// `NOT_A_CONSULTATION`.
#[utoipa::path(post, path = "/api/admin/tenants/{id}/mcp/tools/{tool}/approval", tag = "mcp", security(("adminKey" = [])),
    params(TenantPath, ("tool" = String, Path, description = "An allowed tool")),
    responses((status = 200, body = McpView), (status = 400, body = ErrorBody), (status = 409, body = ErrorBody), (status = 422, body = ErrorBody),
        GuardErrors))]
pub(super) async fn approve_tool(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
    Path((_, tool)): Path<(String, String)>,
) -> Result<Json<McpView>, ApiError> {
    Ok(Json(mcp::approve(&state, &tenant, &tool).await?))
}

/// Saves the configuration (C-3 … C-8, D-5). V-1: the server's live `tools/list` is read
/// with the body's URL and token; an allowed tool that is not a consultation is 400
/// `NOT_A_CONSULTATION` (each tool named in `errors`), a server that cannot be read 422
/// `PROVIDER_UNREACHABLE`; neither saves anything.
#[utoipa::path(put, path = "/api/admin/tenants/{id}/mcp", tag = "mcp", security(("adminKey" = [])),
    params(TenantPath), request_body = McpConfigInput,
    responses((status = 200, body = McpView), (status = 400, body = ErrorBody), (status = 409, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 422, body = ErrorBody), GuardErrors))]
pub(super) async fn put_mcp(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
    Json(body): Json<Value, MAX_BODY_BYTES>,
) -> Result<Json<McpView>, ApiError> {
    Ok(Json(mcp::put(&state, &tenant, &body).await?))
}

/// Removes the connector (C-10).
#[utoipa::path(delete, path = "/api/admin/tenants/{id}/mcp", tag = "mcp", security(("adminKey" = [])),
    params(TenantPath),
    responses((status = 204), (status = 409, body = ErrorBody), GuardErrors))]
pub(super) async fn delete_mcp(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
) -> Result<StatusCode, ApiError> {
    mcp::delete(&state, &tenant).await?;
    Ok(StatusCode::NO_CONTENT)
}
