//! The provider certification (H-1 … H-4, V-3): runs and the latest result.

use super::*;

/// `POST …/mcp/certifications` body: what the run calls your server with (H-2, H-3, V-3,
/// V-4).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CertificationInput {
    /// A synthetic test person of your system the calls are made for (`X-MCP-User-Id`):
    /// the reserved prefix `countersign-test:` then visible ASCII characters (N-7: no real
    /// person of the chat can carry it; route it to a test account). With `consent`, one
    /// action per operation is executed for this person.
    #[schema(pattern = "^countersign-test:[!-~]{1,239}$")]
    pub test_user: String,
    /// Optional second synthetic person (the same prefix): their call for the first
    /// person's resource (the same sample arguments) must be refused.
    #[schema(pattern = "^countersign-test:[!-~]{1,239}$")]
    pub second_test_user: Option<String>,
    /// With `secondTestUser`: the consultations whose sample arguments name a resource of
    /// the test person (an upload, a session): the second person's same call must be
    /// refused.
    #[serde(default)]
    pub personal_consultations: Vec<String>,
    /// Sample arguments for each allowed consultation, by tool name; each is called once.
    #[serde(default)]
    #[schema(value_type = Object, additional_properties)]
    pub consultations: std::collections::BTreeMap<String, serde_json::Map<String, Value>>,
    /// Sample arguments for every configured operation, by operation name: each is
    /// prepared, and with `consent` executed once.
    #[serde(default)]
    #[schema(value_type = Object, additional_properties)]
    pub actions: std::collections::BTreeMap<String, serde_json::Map<String, Value>>,
    /// Deprecated single-operation form of `actions`; merged into it.
    pub action: Option<TestActionInput>,
    /// Your consent that this run executes one action per configured operation for the
    /// test person (a real write in your system, with a valid proof). Without it the run
    /// sends no valid proof and nothing the platform signed — only proofs no verifier of
    /// its signature accepts (a server that verifies nothing executes those) — the checks
    /// that need more are skipped, and the run does not pass.
    #[serde(default)]
    pub consent: bool,
    /// F-6: operations to certify with the passkey step-up (they can then be set to
    /// `passkey`); operations the saved settings already make passkey ones always are.
    #[serde(default)]
    pub step_up: Vec<String>,
}

/// One operation and its sample arguments (the deprecated `action` field).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TestActionInput {
    /// One of the configured operations.
    #[schema(value_type = String, pattern = "^[A-Za-z0-9_.-]{1,128}$")]
    pub operation: String,
    /// Its arguments.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub arguments: serde_json::Map<String, Value>,
}

/// One check of a certification run.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckView {
    /// Stable id, e.g. `consultation.get_car.call` or `proof.alg_none`.
    pub id: String,
    /// The requirement it holds (`H-2`, `H-3`).
    pub requirement: String,
    /// `passed`, `failed` or `skipped` (not run because an earlier check failed).
    #[schema(value_type = String, pattern = "^(passed|failed|skipped)$")]
    pub status: countersign_domain::certification::CheckStatus,
    /// What was seen, and for a failure what to change.
    pub reason: String,
}

/// The configuration a run checked.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CertifiedView {
    /// The configuration version read.
    pub config_version: u64,
    /// Its `serverUrl`.
    pub server_url: String,
    /// The audience its proofs carry.
    pub audience: String,
    /// Its operations.
    pub operations: Vec<String>,
}

/// A certification run (H-1).
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CertificationView {
    /// RFC 3339.
    pub at: String,
    /// Every check passed.
    pub passed: bool,
    /// Whether it allows enabling actions on the configuration saved now (H-4).
    pub current: bool,
    /// The configuration it checked.
    pub checked: CertifiedView,
    /// The test user.
    pub test_user: String,
    /// Every check, in the order run.
    pub checks: Vec<CheckView>,
}

/// Runs the provider certification on the saved configuration (H-1 … H-3) and stores it.
#[utoipa::path(post, path = "/api/admin/tenants/{id}/mcp/certifications", tag = "mcp", security(("adminKey" = [])),
    params(TenantPath), request_body = CertificationInput,
    responses((status = 201, body = CertificationView), (status = 400, body = ErrorBody), (status = 409, body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 429, body = ErrorBody), GuardErrors))]
pub(super) async fn post_certification(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
    headers: axum::http::HeaderMap,
    Json(body): Json<CertificationInput, MAX_BODY_BYTES>,
) -> Result<(StatusCode, Json<CertificationView>), ApiError> {
    let mut request = certification_request(body)?;
    // V-3: the jku and x5u proofs point at this deployment's untrusted key.
    request.key_urls = Some(countersign_http::pages::origin_of(&headers));
    let run = certify::run(&state, &tenant, &request).await?;
    let view = certification_view(&state, &tenant, run).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// The latest certification run.
#[utoipa::path(get, path = "/api/admin/tenants/{id}/mcp/certifications/latest", tag = "mcp", security(("adminKey" = [])),
    params(TenantPath),
    responses((status = 200, body = CertificationView), GuardErrors))]
pub(super) async fn latest_certification(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
) -> Result<Json<CertificationView>, ApiError> {
    let run = certify::latest(&state, &tenant).await?;
    Ok(Json(certification_view(&state, &tenant, run).await?))
}

pub(super) fn certification_request(
    body: CertificationInput,
) -> Result<certify::CertifyRequest, ApiError> {
    use countersign_domain::ids::UserId;
    let test_user = UserId::parse(body.test_user)
        .map_err(|e| ApiError::validation("testUser", e.to_string()))?;
    let second_user = body
        .second_test_user
        .map(UserId::parse)
        .transpose()
        .map_err(|e| ApiError::validation("secondTestUser", e.to_string()))?;
    let mut actions = body.actions;
    if let Some(a) = body.action {
        if actions.contains_key(&a.operation) {
            return Err(ApiError::validation(
                "action",
                "give each operation once: in actions",
            ));
        }
        actions.insert(a.operation, a.arguments);
    }
    let step_up = body
        .step_up
        .into_iter()
        .map(countersign_domain::ids::OperationName::parse)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ApiError::validation("stepUp", e.to_string()))?;
    Ok(certify::CertifyRequest {
        test_user,
        second_user,
        personal: body.personal_consultations,
        consultations: body.consultations,
        actions,
        consent: body.consent,
        key_urls: None,
        step_up,
    })
}

pub(super) async fn certification_view(
    state: &AdminState,
    tenant: &Tenant,
    run: countersign_domain::certification::Certification,
) -> Result<CertificationView, ApiError> {
    use countersign_domain::certification::CertifiedSubject;
    let saved = mcp::current(state, tenant).await?;
    let current = saved.is_some_and(|s| run.certifies(&CertifiedSubject::of(&s)));
    Ok(CertificationView {
        at: run.at.to_rfc3339(),
        passed: run.passed(),
        current,
        checked: CertifiedView {
            config_version: run.subject.config_version,
            server_url: run.subject.server_url,
            audience: run.subject.audience,
            operations: run.subject.operations,
        },
        test_user: run.test_user,
        checks: run
            .checks
            .into_iter()
            .map(|c| CheckView {
                id: c.id,
                requirement: c.requirement,
                status: c.status,
                reason: c.reason,
            })
            .collect(),
    })
}
