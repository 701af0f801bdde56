//! Actions whose outcome the provider never settled: the list and a settlement.

use super::*;

/// An action whose outcome the provider never settled.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnsettledActionView {
    /// Its conversation.
    pub case_id: String,
    /// The action.
    pub action_id: String,
    /// The person who confirmed it.
    pub user_id: String,
    /// The operation.
    pub operation: String,
    /// The summary the person confirmed.
    pub summary: String,
    /// `executing` or `unknown`.
    pub state: String,
    /// When it was confirmed (RFC 3339).
    pub since: String,
    /// Seconds since then.
    pub age_seconds: i64,
    /// Your server's last answer to `get_action_status` that settled nothing; `null`
    /// when none was asked or recorded.
    pub last_status_answer: Option<StatusAnswerView>,
    /// Whether it may be settled now (`unknown`, or `executing` for over 120 s).
    pub settleable: bool,
}

/// A status answer that settled nothing.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct StatusAnswerView {
    /// A non-final status (`executing`, `pending_confirmation`), `isError`, or
    /// `no valid answer` (a timeout, a dropped connection, an answer breaking the contract).
    pub answer: String,
    /// When (RFC 3339).
    pub at: String,
}

/// The tenant's unsettled actions, oldest first.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct UnsettledActions {
    /// The actions.
    pub items: Vec<UnsettledActionView>,
}

/// `POST …/actions/{actionId}/settlement` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SettlementInput {
    /// The action's conversation.
    #[schema(pattern = "^case_[0-7][0-9A-HJKMNP-TV-Z]{25}$")]
    pub case_id: String,
    /// What your own system shows: `completed` or `failed`.
    #[schema(pattern = "^(completed|failed)$")]
    pub outcome: String,
    /// Why (kept in the audit trail, not shown to the person): 1–500 characters.
    #[schema(min_length = 1, max_length = 500)]
    pub reason: String,
}

/// The settled action's state.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Settled {
    /// `completed` or `failed`.
    pub state: String,
}

/// The tenant's actions whose outcome the provider never settled.
#[utoipa::path(get, path = "/api/admin/tenants/{id}/actions/unsettled", tag = "actions", security(("adminKey" = [])),
    params(TenantPath),
    responses((status = 200, body = UnsettledActions), GuardErrors))]
pub(super) async fn list_unsettled(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
) -> Result<Json<UnsettledActions>, ApiError> {
    let items = crate::unsettled::list(&state, &tenant)
        .await?
        .into_iter()
        .map(|u| UnsettledActionView {
            case_id: u.case.to_string(),
            action_id: u.action_id.to_string(),
            user_id: u.user,
            operation: u.operation,
            summary: u.summary,
            state: u.state.as_str().to_owned(),
            since: u.since.to_rfc3339(),
            age_seconds: u.age_seconds,
            last_status_answer: u.last_status.map(|(answer, at)| StatusAnswerView {
                answer,
                at: at.to_rfc3339(),
            }),
            settleable: u.settleable,
        })
        .collect();
    Ok(Json(UnsettledActions { items }))
}

/// Records what your own system shows for an unsettled action: the person gets a fixed
/// notice, the conversation is unblocked, the change is audited. Nothing is executed.
#[utoipa::path(post, path = "/api/admin/tenants/{id}/actions/{actionId}/settlement", tag = "actions", security(("adminKey" = [])),
    params(TenantPath, ("actionId" = String, Path, description = "The action id")),
    request_body = SettlementInput,
    responses((status = 200, body = Settled), (status = 400, body = ErrorBody), (status = 409, body = ErrorBody), (status = 413, body = ErrorBody),
        GuardErrors))]
pub(super) async fn settle_action(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
    Path((_, action_id)): Path<(String, String)>,
    Json(body): Json<SettlementInput, MAX_BODY_BYTES>,
) -> Result<Json<Settled>, ApiError> {
    use countersign_domain::ids::{ActionId, CaseId};
    let action = ActionId::parse(action_id)
        .map_err(|_| ApiError::not_found(AdminError::NoSuchAction.to_string()))?;
    let case =
        CaseId::parse(body.case_id).map_err(|e| ApiError::validation("caseId", e.to_string()))?;
    let outcome = match body.outcome.as_str() {
        "completed" => crate::unsettled::Outcome::Completed,
        "failed" => crate::unsettled::Outcome::Failed,
        _ => return Err(ApiError::validation("outcome", "`completed` or `failed`")),
    };
    let to =
        crate::unsettled::settle(&state, &tenant, &case, &action, outcome, &body.reason).await?;
    Ok(Json(Settled {
        state: to.as_str().to_owned(),
    }))
}
