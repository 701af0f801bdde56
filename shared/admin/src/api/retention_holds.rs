//! Retention (R-2, R-3, N-3): legal holds and erasure jobs.

use super::*;

/// one legal hold.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct HoldView {
    /// `person` or `conversation`.
    #[schema(example = "person")]
    pub kind: &'static str,
    /// The held person (your user id) or conversation (`case_…`).
    #[schema(example = "driver-42")]
    pub id: String,
}

/// the tenant's legal holds.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct HoldsView {
    /// Every hold, people first.
    pub holds: Vec<HoldView>,
}

/// `PUT holds` body: places or lifts one hold.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HoldInput {
    /// What is held.
    pub kind: HoldKind,
    /// The person's id (as your site names them) or the conversation's id (`case_…`).
    pub id: String,
    /// `true` places the hold, `false` lifts it.
    pub held: bool,
}

/// What a hold is on.
#[derive(Debug, Clone, Copy, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum HoldKind {
    /// A person: every conversation of theirs, and their erasure.
    Person,
    /// One conversation.
    Conversation,
}

pub(super) fn holds_view(tenant: &Tenant) -> HoldsView {
    HoldsView {
        holds: tenant
            .holds
            .iter()
            .map(|h| HoldView {
                kind: h.kind(),
                id: h.id().to_owned(),
            })
            .collect(),
    }
}

/// the tenant's legal holds.
#[utoipa::path(get, path = "/api/admin/tenants/{id}/holds", tag = "retention", security(("adminKey" = [])),
    params(TenantPath),
    responses((status = 200, body = HoldsView), GuardErrors))]
pub(super) async fn get_holds(TenantAdmin(tenant): TenantAdmin) -> Json<HoldsView> {
    Json(holds_view(&tenant))
}

/// places or lifts a legal hold on a person or a conversation, audited as
/// `hold.placed` / `hold.lifted`. While it stands, neither the purge nor an erasure
/// removes what it covers. Placing a hold that stands (or lifting one that does not)
/// changes nothing.
#[utoipa::path(put, path = "/api/admin/tenants/{id}/holds", tag = "retention", security(("adminKey" = [])),
    params(TenantPath), request_body = HoldInput,
    responses((status = 200, body = HoldsView), (status = 400, body = ErrorBody), (status = 413, body = ErrorBody), GuardErrors))]
pub(super) async fn put_hold(
    State(state): State<AdminState>,
    TenantAdmin(mut tenant): TenantAdmin,
    Json(body): Json<HoldInput, MAX_BODY_BYTES>,
) -> Result<Json<HoldsView>, ApiError> {
    use countersign_domain::ids::{CaseId, UserId};
    use countersign_domain::retention::Hold;
    let hold = match body.kind {
        HoldKind::Person => UserId::parse(body.id.as_str()).map(Hold::Person),
        HoldKind::Conversation => CaseId::parse(body.id.as_str()).map(Hold::Conversation),
    }
    .map_err(|e| ApiError::validation("id", e.to_string()))?;
    crate::erasure::set_hold(&state, &tenant, &hold, body.held).await?;
    tenant.holds.set(&hold, body.held);
    Ok(Json(holds_view(&tenant)))
}

/// `POST erasures` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ErasureInput {
    /// The person to erase, as your site names them (the widget token's `sub`).
    #[schema(example = "driver-42")]
    pub person: String,
}

/// R-2, N-3: asks for a person's erasure. The request is recorded and queued (202, with
/// the job and its `Location`); the platform's worker carries it out within about a
/// minute: their conversations are purged (those with an unresolved proposal, or under a
/// conversation's hold, are purged once they can be), the personal fields of their audit
/// records become unreadable (their key is destroyed; every chain and checkpoint still
/// verifies), a `subject.erased` record is written, and the job's status carries a
/// receipt signed with the audit checkpoint key. Keep the receipt. Asking again while a
/// job for the person is queued answers that job.
#[utoipa::path(post, path = "/api/admin/tenants/{id}/erasures", tag = "retention", security(("adminKey" = [])),
    params(TenantPath), request_body = ErasureInput,
    responses((status = 202, body = crate::erasure::ErasureJobView), (status = 400, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "LEGAL_HOLD: a hold is on this person"),
        (status = 413, body = ErrorBody),
        (status = 429, body = ErrorBody, description = "RATE_LIMITED: this tenant has as many erasures queued as it may (20); retry after the time given"),
        GuardErrors))]
pub(super) async fn post_erasure(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
    Json(body): Json<ErasureInput, MAX_BODY_BYTES>,
) -> Result<
    (
        StatusCode,
        [(header::HeaderName, String); 1],
        Json<crate::erasure::ErasureJobView>,
    ),
    ApiError,
> {
    use crate::erasure::ErasureError;
    let user = countersign_domain::ids::UserId::parse(body.person.as_str())
        .map_err(|e| ApiError::validation("person", e.to_string()))?;
    match crate::erasure::request(&state, &tenant, &user).await {
        Ok(job) => {
            let at = format!("/api/admin/tenants/{}/erasures/{}", tenant.id, job.id);
            Ok((
                StatusCode::ACCEPTED,
                [(header::LOCATION, at)],
                Json((&job).into()),
            ))
        }
        Err(e @ ErasureError::Held) => Err(ApiError::conflict("LEGAL_HOLD", e.to_string())),
        Err(ErasureError::Admin(e)) => Err(e.into()),
    }
}

/// N-3: an erasure job: `queued`, `running` (a run stopped part-way; the next resumes
/// it) or `done`, with the erasure and its receipt (or `nothingStored`: nothing was
/// stored of the person; or `refused`). A done job is kept 30 days.
#[utoipa::path(get, path = "/api/admin/tenants/{id}/erasures/{jobId}", tag = "retention", security(("adminKey" = [])),
    params(TenantPath, ("jobId" = String, Path, description = "The job id")),
    responses((status = 200, body = crate::erasure::ErasureJobView), GuardErrors))]
pub(super) async fn get_erasure(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
    Path((_, job_id)): Path<(String, String)>,
) -> Result<Json<crate::erasure::ErasureJobView>, ApiError> {
    crate::erasure::status(&state, &tenant, &job_id)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found("no such erasure job"))
}
