//! The audit trail (L-1 … L-3): pages, verification, checkpoints.

use super::*;

/// One audit record.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AuditRecord {
    /// Sorts by time.
    pub id: String,
    /// RFC 3339.
    pub at: String,
    /// `adminKey:<fingerprint>` or `operator`.
    pub actor: String,
    /// What kind of change, e.g. `mcp.put`.
    pub action: String,
    /// The change's fields (never a secret value).
    #[schema(value_type = Object)]
    pub changes: Value,
    /// `changes` with its sealed personal fields opened, or marked erased
    /// (`"personal": "[erased]"`, `"erased": true`) once the person was erased; absent
    /// when the record has none. `changes` stays as chained: the hash covers it.
    #[schema(value_type = Option<Object>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opened: Option<Value>,
    /// The record's place in its hash chain (L-3); `null` for a record written before
    /// chains existed.
    pub chain: Option<AuditLink>,
}

/// A record's place in its hash chain (L-2, L-3): with `prev` and `hash` an export can be
/// checked record by record, and against a checkpoint's heads, without the platform.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditLink {
    /// The chain: `tenant` (configuration) or `conv:<digest>` (one conversation; chains begun before decision 0055 are named `case:<caseId>`).
    pub id: String,
    /// The record's place in the chain, from 1.
    pub seq: u64,
    /// The previous record's hash (empty for the first).
    pub prev: String,
    /// This record's hash (SHA-256, hex), as `prev` of the next record names it.
    pub hash: String,
}

/// A page of the audit trail, newest first.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditPage {
    /// The records.
    pub items: Vec<AuditRecord>,
    /// Pass as `cursor` for the next (older) page; `null` on the last.
    pub next_cursor: Option<String>,
}

/// `GET audit` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// 1–100, default 20.
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<usize>,
    /// A `nextCursor` from this endpoint.
    #[param(value_type = Option<String>, pattern = "^aud_[0-7][0-9A-HJKMNP-TV-Z]{25}$")]
    pub cursor: Option<AuditId>,
}

/// Audit page size when `limit` is absent.
pub const AUDIT_PAGE_DEFAULT: usize = 20;
/// The largest `limit` of `GET audit`.
pub const AUDIT_PAGE_MAX: usize = 100;

/// The audit trail, newest first.
#[utoipa::path(get, path = "/api/admin/tenants/{id}/audit", tag = "audit", security(("adminKey" = [])),
    params(TenantPath, AuditQuery),
    responses((status = 200, body = AuditPage), (status = 400, body = ErrorBody), GuardErrors))]
pub(super) async fn list_audit(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
    Query(query): Query<AuditQuery>,
) -> Result<Json<AuditPage>, ApiError> {
    let limit = countersign_http::page_limit(query.limit, AUDIT_PAGE_DEFAULT, AUDIT_PAGE_MAX)?;
    let page = state
        .stores
        .audit
        .list_audit(&tenant.id, query.cursor.as_ref(), limit)
        .await
        .map_err(store_down)?;
    let mut items = Vec::with_capacity(page.items.len());
    for a in page.items.iter().cloned() {
        let opened =
            crate::audit::opened(state.stores.subjects.as_ref(), &tenant.id, &a.changes).await;
        items.push(AuditRecord {
            chain: page.links.get(&a.id).map(|l| AuditLink {
                id: l.chain.clone(),
                seq: l.seq,
                prev: l.prev.clone(),
                hash: l.hash.clone(),
            }),
            id: a.id.to_string(),
            at: a.at.to_rfc3339(),
            actor: a.actor,
            action: a.action,
            changes: a.changes,
            opened,
        });
    }
    let next_cursor = page.next.map(|c| c.to_string());
    Ok(Json(AuditPage { items, next_cursor }))
}

/// Verifies the audit trail's hash chains (L-2) and names the first broken link. One
/// verification in flight per tenant (V-7: 429 `ALREADY_RUNNING` with `Retry-After`), and
/// a few across tenants (429 `RATE_LIMITED` with `Retry-After`).
#[utoipa::path(get, path = "/api/admin/tenants/{id}/audit/verification", tag = "audit", security(("adminKey" = [])),
    params(TenantPath),
    responses((status = 200, body = crate::audit::Verification), (status = 429, body = ErrorBody), GuardErrors))]
pub(super) async fn verify_audit(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
) -> Result<Json<crate::audit::Verification>, ApiError> {
    Ok(Json(crate::audit::verify(&state, &tenant.id).await?))
}

/// Signs a checkpoint of the audit trail's heads (L-2), after verifying every chain.
/// Served by the messages function, which alone may use the signing key (decision 0026).
#[utoipa::path(post, path = "/api/admin/tenants/{id}/audit/checkpoints", tag = "audit", security(("adminKey" = [])),
    params(TenantPath),
    responses((status = 201, body = crate::audit::SignedCheckpoint), (status = 409, body = ErrorBody), (status = 429, body = ErrorBody),
        GuardErrors))]
pub(super) async fn post_checkpoint(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
) -> Result<(StatusCode, Json<crate::audit::SignedCheckpoint>), ApiError> {
    let signed = crate::audit::checkpoint(&state, &tenant.id).await?;
    Ok((StatusCode::CREATED, Json(signed)))
}
