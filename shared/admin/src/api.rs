//! The admin API: `GET | PUT | DELETE /api/admin/tenants/{id}/mcp`, widget credentials
//! and the audit trail. Handlers are thin: the [`TenantAdmin`] extractor authenticates,
//! the use cases (`mcp`, `widgets`, `audit`) decide, [`ApiError`] answers.
//!
//! Every request carries `Authorization: Bearer tsk_…`. The key identifies its own tenant
//! (admin-key index): a missing or wrong key is 401; a valid key on another tenant's id is
//! 404, and never shows that tenant's data (C-2, C-11). Errors are
//! `{"error": {"code", "message", "field"?, "errors"?}}`; nothing is ever partially saved.
//! The OpenAPI document (`docs/admin-api.openapi.json`) is generated from these types
//! ([`openapi`]).

use crate::mcp::{self, McpView};
use crate::state::{AdminError, store_down};
use crate::{certify, keys};
use axum::Router;
use axum::extract::{FromRequestParts, Path, RawPathParams, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::routing::get;
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::{AuditId, TenantId};
use countersign_domain::ports::Tenant;
use countersign_domain::retention::RetentionDays;
use countersign_domain::time::Timestamp;
use countersign_http::{ApiError, ErrorBody, FieldError, Json, Query, bearer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::OpenApi;

pub use crate::state::{AdminState, AdminStores};

/// Largest accepted request body.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// Every `(field, message)` a refusal names, as the error body lists them.
fn field_errors(errors: Vec<(String, String)>) -> Vec<FieldError> {
    errors
        .into_iter()
        .map(|(field, message)| FieldError { field, message })
        .collect()
}

impl From<AdminError> for ApiError {
    fn from(e: AdminError) -> Self {
        match e {
            AdminError::Invalid {
                field,
                message,
                errors,
            } => ApiError::validation(field, message).with_errors(field_errors(errors)),
            AdminError::NotConsultations(errors) => {
                let message = crate::state::first_message(&errors).to_owned();
                ApiError::new(StatusCode::BAD_REQUEST, "NOT_A_CONSULTATION", message)
                    .with_field("allowedTools")
                    .with_errors(field_errors(errors))
            }
            e @ AdminError::ProviderUnreachable(_) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "PROVIDER_UNREACHABLE",
                e.to_string(),
            )
            .with_field("serverUrl"),
            AdminError::Busy {
                what,
                retry_after_secs,
            } => {
                let message = AdminError::Busy {
                    what,
                    retry_after_secs,
                }
                .to_string();
                ApiError::conflict("ALREADY_RUNNING", message).with_retry_after(retry_after_secs)
            }
            // V-7, N-7: the cross-tenant cap is a limit (429), not this tenant's conflict.
            e @ (AdminError::PlatformBusy {
                retry_after_secs, ..
            }
            | AdminError::QueueFull {
                retry_after_secs, ..
            }) => ApiError::rate_limited(e.to_string(), retry_after_secs),
            AdminError::SigningUnavailable => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "ACTION_SIGNING_UNAVAILABLE",
                AdminError::SigningUnavailable.to_string(),
            )
            .with_field("actionPolicy.enabled"),
            AdminError::CertificationRequired => ApiError::conflict(
                "CERTIFICATION_REQUIRED",
                AdminError::CertificationRequired.to_string(),
            )
            .with_field("actionPolicy.enabled"),
            AdminError::NotConfigured => {
                ApiError::conflict("MCP_NOT_CONFIGURED", AdminError::NotConfigured.to_string())
            }
            AdminError::NoCertification => {
                ApiError::not_found(AdminError::NoCertification.to_string())
            }
            AdminError::NoSuchAction => ApiError::not_found(AdminError::NoSuchAction.to_string()),
            e @ AdminError::StillRunning(_) => {
                ApiError::conflict("ACTION_STILL_RUNNING", e.to_string())
            }
            AdminError::Conflict => {
                ApiError::conflict("CONFLICT", AdminError::Conflict.to_string())
            }
            AdminError::NoSuchCredential => ApiError::not_found("no such widget credential"),
            e @ AdminError::AlreadyReplaced(_) => {
                ApiError::conflict("CREDENTIAL_ALREADY_REPLACED", e.to_string())
            }
            e @ AdminError::AuditBroken { .. } => {
                ApiError::conflict("AUDIT_CHAIN_BROKEN", e.to_string())
            }
            e @ AdminError::Unavailable { .. } => ApiError::unavailable(e.to_string(), &e),
            AdminError::Unfinished(cause) => {
                tracing::warn!(%cause, "cancelling invalidated proposals failed");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "SAVED_UNFINISHED",
                    AdminError::Unfinished(cause).to_string(),
                )
            }
        }
    }
}

/// The tenant whose admin key the request presents, when it is the tenant in the path
/// (C-1, C-2). A handler that takes it never runs otherwise.
#[derive(Debug, Clone)]
pub struct TenantAdmin(pub Tenant);

impl FromRequestParts<AdminState> for TenantAdmin {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AdminState) -> Result<Self, ApiError> {
        let unauthorized = || ApiError::unauthorized("a valid tenant admin key is required");
        let not_found = || ApiError::not_found("no such tenant");
        let key = bearer(&parts.headers)
            .filter(|k| k.starts_with(keys::PREFIX))
            .ok_or_else(unauthorized)?
            .to_owned();
        let owner = state
            .stores
            .tenants
            .tenant_by_admin_key_hash(&Sha256Hex::digest(&key))
            .await
            .map_err(|e| ApiError::from(store_down(e)))?
            .ok_or_else(unauthorized)?;
        // Another tenant's id (or a malformed one) answers 404, never its data.
        let params = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(|_| not_found())?;
        let path_id = params
            .iter()
            .find(|(name, _)| *name == "id")
            .and_then(|(_, v)| TenantId::parse(v).ok())
            .ok_or_else(not_found)?;
        if owner != path_id {
            return Err(not_found());
        }
        let tenant = state
            .stores
            .tenants
            .get_tenant(&owner)
            .await
            .map_err(|e| ApiError::from(store_down(e)))?
            .ok_or_else(not_found)?;
        if !keys::matches(&key, &tenant.admin_key_hash) {
            return Err(unauthorized());
        }
        Ok(Self(tenant))
    }
}

/// The body of `PUT mcp` (C-3, C-4, C-7). Validated by the configuration rules, which
/// report every broken rule at once; this type documents it.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
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
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[schema(value_type = String, pattern = "^[A-Za-z0-9_.-]{1,128}$")]
#[allow(dead_code)]
pub struct ToolNameInput(String);

/// The action policy of `PUT mcp`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct ActionPolicyInput {
    /// 1.
    contract_version: Option<u32>,
    /// Whether writes may be prepared (needs a signing key, C-6).
    enabled: bool,
    /// The operations that may be prepared (at most 50).
    #[schema(max_items = 50)]
    operations: Vec<String>,
}

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
    /// R-2: `changes` with its sealed personal fields opened, or marked erased
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

/// Audit page size when `limit` is absent.
pub const AUDIT_PAGE_DEFAULT: usize = 20;
/// The largest `limit` of `GET audit`.
pub const AUDIT_PAGE_MAX: usize = 100;

/// The tenant's own settings (S-4).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TenantSettings {
    /// The tenant's display name (set by the operator).
    pub name: String,
    /// The default language of the chat's fixed texts, its widget and the model's
    /// instructions: `en` or `pt-BR`. A case keeps the language it was opened with.
    #[schema(example = "pt-BR")]
    pub language: String,
    /// X-3: where the confirmation page sends a person to sign in (your sign-in hand-off,
    /// widget guide “Confirmation page”); null until set.
    #[serde(rename = "signInUrl")]
    #[schema(example = "https://www.example.com/countersign/sign-in")]
    pub sign_in_url: Option<String>,
    /// R-1: days a conversation is kept after its last activity (1 to 3650); null until
    /// set (the deployment's default applies, if it has one).
    #[serde(rename = "retentionDays")]
    #[schema(example = 90)]
    pub retention_days: Option<u32>,
}

/// `PUT settings` body: each member absent (or null) is left as it is; at least one is
/// given.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantSettingsInput {
    /// The default language of new conversations.
    #[serde(default)]
    pub language: Option<LanguageInput>,
    /// X-3: the sign-in hand-off URL (`https`); the empty string removes it.
    #[serde(default, rename = "signInUrl")]
    pub sign_in_url: Option<String>,
    /// R-1: days a conversation is kept after its last activity, 1 to 3650.
    #[serde(
        default,
        rename = "retentionDays",
        deserialize_with = "countersign_http::optional_whole_number"
    )]
    #[schema(value_type = Option<u32>, minimum = 1, maximum = 3650)]
    pub retention_days: Option<i64>,
}

/// A language of the chat's fixed texts (S-4), as a BCP 47 tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
pub enum LanguageInput {
    /// English.
    #[serde(rename = "en")]
    En,
    /// Brazilian Portuguese (`pt` is read as this too).
    #[serde(rename = "pt-BR", alias = "pt")]
    PtBr,
}

fn settings_view(tenant: &Tenant) -> TenantSettings {
    TenantSettings {
        name: tenant.name.clone(),
        language: tenant.language.tag().to_owned(),
        sign_in_url: tenant.sign_in_url.clone(),
        retention_days: tenant.retention_days.map(RetentionDays::days),
    }
}

/// R-3: one legal hold.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct HoldView {
    /// `person` or `conversation`.
    #[schema(example = "person")]
    pub kind: &'static str,
    /// The held person (your user id) or conversation (`case_…`).
    #[schema(example = "driver-42")]
    pub id: String,
}

/// R-3: the tenant's legal holds.
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

fn holds_view(tenant: &Tenant) -> HoldsView {
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

/// R-3: the tenant's legal holds.
#[utoipa::path(get, path = "/api/admin/tenants/{id}/holds", tag = "retention", security(("adminKey" = [])),
    params(("id" = String, Path, description = "The tenant id")),
    responses((status = 200, body = HoldsView), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn get_holds(TenantAdmin(tenant): TenantAdmin) -> Json<HoldsView> {
    Json(holds_view(&tenant))
}

/// R-3: places or lifts a legal hold on a person or a conversation, audited as
/// `hold.placed` / `hold.lifted`. While it stands, neither the purge nor an erasure
/// removes what it covers. Placing a hold that stands (or lifting one that does not)
/// changes nothing.
#[utoipa::path(put, path = "/api/admin/tenants/{id}/holds", tag = "retention", security(("adminKey" = [])),
    params(("id" = String, Path, description = "The tenant id")), request_body = HoldInput,
    responses((status = 200, body = HoldsView), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 413, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn put_hold(
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
    params(("id" = String, Path, description = "The tenant id")), request_body = ErasureInput,
    responses((status = 202, body = crate::erasure::ErasureJobView), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "LEGAL_HOLD: a hold is on this person"),
        (status = 413, body = ErrorBody),
        (status = 429, body = ErrorBody, description = "RATE_LIMITED: this tenant has as many erasures queued as it may (20); retry after the time given"),
        (status = 503, body = ErrorBody)))]
async fn post_erasure(
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
    params(("id" = String, Path, description = "The tenant id"), ("jobId" = String, Path, description = "The job id")),
    responses((status = 200, body = crate::erasure::ErasureJobView), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn get_erasure(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
    Path((_, job_id)): Path<(String, String)>,
) -> Result<Json<crate::erasure::ErasureJobView>, ApiError> {
    crate::erasure::status(&state, &tenant, &job_id)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::not_found("no such erasure job"))
}

/// The tenant's settings (S-4).
#[utoipa::path(get, path = "/api/admin/tenants/{id}/settings", tag = "tenant", security(("adminKey" = [])),
    params(("id" = String, Path, description = "The tenant id")),
    responses((status = 200, body = TenantSettings), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn get_settings(TenantAdmin(tenant): TenantAdmin) -> Json<TenantSettings> {
    Json(settings_view(&tenant))
}

/// Sets the tenant's default language (S-4), audited as `tenant.language`, its sign-in
/// hand-off URL (X-3), audited as `tenant.sign_in_url`, and its retention (R-1), audited as
/// `tenant.retention_days`; every value is checked before anything is saved. New cases take the language; open
/// cases keep theirs.
#[utoipa::path(put, path = "/api/admin/tenants/{id}/settings", tag = "tenant", security(("adminKey" = [])),
    params(("id" = String, Path, description = "The tenant id")), request_body = TenantSettingsInput,
    responses((status = 200, body = TenantSettings), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 413, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn put_settings(
    State(state): State<AdminState>,
    TenantAdmin(mut tenant): TenantAdmin,
    Json(body): Json<TenantSettingsInput, MAX_BODY_BYTES>,
) -> Result<Json<TenantSettings>, ApiError> {
    if body.language.is_none() && body.sign_in_url.is_none() && body.retention_days.is_none() {
        return Err(ApiError::validation(
            "language",
            "name at least one setting to change: language, signInUrl or retentionDays",
        ));
    }
    let retention = match body.retention_days {
        Some(days) => Some(
            RetentionDays::new(days)
                .map_err(|e| ApiError::validation("retentionDays", e.to_string()))?,
        ),
        None => None,
    };
    // Checked before anything is written: a bad URL saves nothing.
    let sign_in_url = match &body.sign_in_url {
        Some(raw) => Some(
            crate::tenants::parse_sign_in_url(raw, state.url_policy)
                .map_err(|m| ApiError::validation("signInUrl", format!("signInUrl: {m}")))?,
        ),
        None => None,
    };
    if let Some(language) = body.language {
        let language = match language {
            LanguageInput::En => countersign_domain::texts::Language::En,
            LanguageInput::PtBr => countersign_domain::texts::Language::Pt,
        };
        crate::tenants::set_language(&state, &tenant, language).await?;
        tenant.language = language;
    }
    if let Some(url) = sign_in_url {
        crate::tenants::set_sign_in_url(&state, &tenant, url.as_deref()).await?;
        tenant.sign_in_url = url;
    }
    if let Some(days) = retention {
        crate::retention::set_retention_days(&state, &tenant, days).await?;
        tenant.retention_days = Some(days);
    }
    Ok(Json(settings_view(&tenant)))
}

/// The tenant's MCP configuration (C-5).
#[utoipa::path(get, path = "/api/admin/tenants/{id}/mcp", tag = "mcp", security(("adminKey" = [])),
    params(("id" = String, Path, description = "The tenant id")),
    responses((status = 200, body = McpView), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn get_mcp(
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
    params(("id" = String, Path, description = "The tenant id"), ("tool" = String, Path, description = "An allowed tool")),
    responses((status = 200, body = McpView), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 422, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn approve_tool(
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
    params(("id" = String, Path, description = "The tenant id")), request_body = McpConfigInput,
    responses((status = 200, body = McpView), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn put_mcp(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
    Json(body): Json<Value, MAX_BODY_BYTES>,
) -> Result<Json<McpView>, ApiError> {
    Ok(Json(mcp::put(&state, &tenant, &body).await?))
}

/// Removes the connector (C-10).
#[utoipa::path(delete, path = "/api/admin/tenants/{id}/mcp", tag = "mcp", security(("adminKey" = [])),
    params(("id" = String, Path, description = "The tenant id")),
    responses((status = 204), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn delete_mcp(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
) -> Result<StatusCode, ApiError> {
    mcp::delete(&state, &tenant).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Creates a widget credential (C-9); the secret is shown this once.
#[utoipa::path(post, path = "/api/admin/tenants/{id}/widget-credentials", tag = "widget", security(("adminKey" = [])),
    params(("id" = String, Path, description = "The tenant id")),
    request_body(content = Option<CreateWidgetCredential>, content_type = "application/json"),
    responses((status = 201, body = NewWidgetCredential), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 413, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn create_widget_credential(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
    body: axum::body::Bytes,
) -> Result<impl axum::response::IntoResponse, ApiError> {
    at_most_max_body(&body)?;
    // The body is optional (absent or `null`): then a credential for server-side use only.
    let absent = body.iter().all(u8::is_ascii_whitespace)
        || serde_json::from_slice::<Value>(&body).is_ok_and(|v| v.is_null());
    let request: CreateWidgetCredential = if absent {
        CreateWidgetCredential::default()
    } else {
        countersign_http::parse_json(&body)?
    };
    let origins: Vec<String> = request.allowed_origins.into_iter().map(|o| o.0).collect();
    let (key, secret) = crate::widgets::create(&state, &tenant, &origins).await?;
    Ok(new_credential(&key, &secret))
}

/// 413 for a body over [`MAX_BODY_BYTES`].
fn at_most_max_body(body: &[u8]) -> Result<(), ApiError> {
    if body.len() > MAX_BODY_BYTES {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "PAYLOAD_TOO_LARGE",
            format!("the body must be at most {MAX_BODY_BYTES} bytes"),
        ));
    }
    Ok(())
}

/// A new credential's answer: 201, its secret shown this once, so no cache may keep it.
fn new_credential(
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
    params(("id" = String, Path, description = "The tenant id"), ("keyId" = String, Path, description = "The credential to replace")),
    request_body(content = ReplaceWidgetCredential, content_type = "application/json"),
    responses((status = 201, body = NewWidgetCredential), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 413, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn replace_widget_credential(
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
    params(("id" = String, Path, description = "The tenant id")),
    responses((status = 200, body = WidgetCredentials), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn list_widget_credentials(
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
    params(("id" = String, Path, description = "The tenant id"), ("keyId" = String, Path, description = "The credential id")),
    responses((status = 204), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn revoke_widget_credential(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
    Path((_, key_id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    crate::widgets::revoke(&state, &tenant, &key_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The audit trail, newest first.
#[utoipa::path(get, path = "/api/admin/tenants/{id}/audit", tag = "audit", security(("adminKey" = [])),
    params(("id" = String, Path, description = "The tenant id"), AuditQuery),
    responses((status = 200, body = AuditPage), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn list_audit(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
    Query(query): Query<AuditQuery>,
) -> Result<Json<AuditPage>, ApiError> {
    let limit = query.limit.unwrap_or(AUDIT_PAGE_DEFAULT);
    if !(1..=AUDIT_PAGE_MAX).contains(&limit) {
        let message = format!("limit must be an integer from 1 to {AUDIT_PAGE_MAX}");
        return Err(ApiError::validation("limit", message));
    }
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
/// verification in flight per tenant (V-7: 409 `ALREADY_RUNNING` with `Retry-After`), and
/// a few across tenants (429 `RATE_LIMITED` with `Retry-After`).
#[utoipa::path(get, path = "/api/admin/tenants/{id}/audit/verification", tag = "audit", security(("adminKey" = [])),
    params(("id" = String, Path, description = "The tenant id")),
    responses((status = 200, body = crate::audit::Verification), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn verify_audit(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
) -> Result<Json<crate::audit::Verification>, ApiError> {
    Ok(Json(crate::audit::verify(&state, &tenant.id).await?))
}

/// Signs a checkpoint of the audit trail's heads (L-2), after verifying every chain.
/// Served by the messages function, which alone may use the signing key (decision 0026).
#[utoipa::path(post, path = "/api/admin/tenants/{id}/audit/checkpoints", tag = "audit", security(("adminKey" = [])),
    params(("id" = String, Path, description = "The tenant id")),
    responses((status = 201, body = crate::audit::SignedCheckpoint), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn post_checkpoint(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
) -> Result<(StatusCode, Json<crate::audit::SignedCheckpoint>), ApiError> {
    let signed = crate::audit::checkpoint(&state, &tenant.id).await?;
    Ok((StatusCode::CREATED, Json(signed)))
}

/// Runs the provider certification on the saved configuration (H-1 … H-3) and stores it.
#[utoipa::path(post, path = "/api/admin/tenants/{id}/mcp/certifications", tag = "mcp", security(("adminKey" = [])),
    params(("id" = String, Path, description = "The tenant id")), request_body = CertificationInput,
    responses((status = 201, body = CertificationView), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn post_certification(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
    Json(body): Json<CertificationInput, MAX_BODY_BYTES>,
) -> Result<(StatusCode, Json<CertificationView>), ApiError> {
    let request = certification_request(body)?;
    let run = certify::run(&state, &tenant, &request).await?;
    let view = certification_view(&state, &tenant, run).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// The latest certification run.
#[utoipa::path(get, path = "/api/admin/tenants/{id}/mcp/certifications/latest", tag = "mcp", security(("adminKey" = [])),
    params(("id" = String, Path, description = "The tenant id")),
    responses((status = 200, body = CertificationView), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn latest_certification(
    State(state): State<AdminState>,
    TenantAdmin(tenant): TenantAdmin,
) -> Result<Json<CertificationView>, ApiError> {
    let run = certify::latest(&state, &tenant).await?;
    Ok(Json(certification_view(&state, &tenant, run).await?))
}

fn certification_request(body: CertificationInput) -> Result<certify::CertifyRequest, ApiError> {
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
    Ok(certify::CertifyRequest {
        test_user,
        second_user,
        personal: body.personal_consultations,
        consultations: body.consultations,
        actions,
        consent: body.consent,
    })
}

async fn certification_view(
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

/// The tenant's actions whose outcome the provider never settled.
#[utoipa::path(get, path = "/api/admin/tenants/{id}/actions/unsettled", tag = "actions", security(("adminKey" = [])),
    params(("id" = String, Path, description = "The tenant id")),
    responses((status = 200, body = UnsettledActions), (status = 401, body = ErrorBody), (status = 404, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn list_unsettled(
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
    params(("id" = String, Path, description = "The tenant id"), ("actionId" = String, Path, description = "The action id")),
    request_body = SettlementInput,
    responses((status = 200, body = Settled), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody), (status = 409, body = ErrorBody), (status = 413, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn settle_action(
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

/// The platform's signing keys as a JWK Set (K-1): public, cacheable for the key ring's
/// cache time. An empty set while no signing key is installed.
#[utoipa::path(get, path = "/.well-known/jwks.json", tag = "keys", security(()),
    responses((status = 200, description = "RFC 7517 JWK Set (application/jwk-set+json): keys with kty, use, alg, kid, n, e"),
        (status = 503, body = ErrorBody)))]
async fn jwks(State(state): State<AdminState>) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse as _;
    let keys = crate::jwks::published(&state).await?;
    // With no key installed there is nothing to cache for long: one is expected soon.
    let max_age = keys.as_ref().map_or(60, |k| k.cache_seconds);
    let body = crate::jwks::document(keys.as_ref()).to_string();
    Ok((
        [
            (header::CONTENT_TYPE, "application/jwk-set+json".to_owned()),
            (header::CACHE_CONTROL, format!("public, max-age={max_age}")),
        ],
        body,
    )
        .into_response())
}

/// V-6: the audit checkpoint key, published apart from the proofs' JWKS (a provider that
/// follows the JWKS never sees it), each key and the document marked
/// `"purpose": "audit-checkpoint"`. Verify checkpoints with it; never accept it for an
/// action proof.
#[utoipa::path(get, path = "/.well-known/countersign-audit-keys.json", tag = "keys", security(()),
    responses((status = 200, description = "A JWK Set marked purpose audit-checkpoint: the key that signs audit checkpoints, never action proofs"),
        (status = 503, body = ErrorBody)))]
async fn audit_keys(State(state): State<AdminState>) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse as _;
    let body = crate::jwks::audit_keys(&state).await?.to_string();
    Ok((
        [
            (header::CONTENT_TYPE, "application/jwk-set+json".to_owned()),
            (header::CACHE_CONTROL, "public, max-age=300".to_owned()),
        ],
        body,
    )
        .into_response())
}

/// Every path the router serves, in axum's syntax: the OpenAPI document and the SAM
/// template are checked against this list.
pub const PATHS: [&str; 18] = [
    "/api/admin/tenants/{id}/mcp",
    "/api/admin/tenants/{id}/widget-credentials",
    "/api/admin/tenants/{id}/widget-credentials/{key_id}",
    "/api/admin/tenants/{id}/audit",
    "/api/admin/tenants/{id}/mcp/certifications",
    "/api/admin/tenants/{id}/mcp/certifications/latest",
    "/api/admin/tenants/{id}/actions/unsettled",
    "/api/admin/tenants/{id}/actions/{action_id}/settlement",
    crate::jwks::JWKS_PATH,
    "/api/admin/tenants/{id}/audit/verification",
    "/api/admin/tenants/{id}/audit/checkpoints",
    crate::jwks::AUDIT_KEYS_PATH,
    "/api/admin/tenants/{id}/mcp/tools/{tool}/approval",
    "/api/admin/tenants/{id}/settings",
    "/api/admin/tenants/{id}/widget-credentials/{key_id}/replacement",
    "/api/admin/tenants/{id}/holds",
    "/api/admin/tenants/{id}/erasures",
    "/api/admin/tenants/{id}/erasures/{job_id}",
];

/// Every route (method, path) [`router`] serves (the admin function): the SAM template
/// is checked against it.
pub const ROUTES: [(&str, &str); 18] = [
    ("GET", PATHS[0]),
    ("PUT", PATHS[0]),
    ("DELETE", PATHS[0]),
    ("GET", PATHS[1]),
    ("POST", PATHS[1]),
    ("DELETE", PATHS[2]),
    ("GET", PATHS[3]),
    ("GET", PATHS[6]),
    ("POST", PATHS[7]),
    ("GET", PATHS[9]),
    ("POST", PATHS[12]),
    ("GET", PATHS[13]),
    ("PUT", PATHS[13]),
    ("POST", PATHS[14]),
    ("GET", PATHS[15]),
    ("PUT", PATHS[15]),
    ("POST", PATHS[16]),
    ("GET", PATHS[17]),
];

/// The routes of [`certification_router`], served by the messages function: the
/// certification run and checkpoints sign with keys only that function may use (issue 13,
/// decision 0026); and the two public key sets (V-7), so that a flood of admin API calls,
/// which share the admin function's few reserved slots, cannot starve the JWKS every
/// provider follows.
pub const CERTIFICATION_ROUTES: [(&str, &str); 5] = [
    ("POST", PATHS[4]),
    ("GET", PATHS[5]),
    ("POST", PATHS[10]),
    ("GET", PATHS[8]),
    ("GET", PATHS[11]),
];

/// The admin API's OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    info(title = "Countersign tenant admin API", version = "1",
        description = "Connect your MCP server, manage widget credentials and read the audit trail. Requirement IDs (C-5, D-5, …) are explained in docs/requirements.md."),
    paths(get_settings, put_settings, get_holds, put_hold, post_erasure, get_erasure, get_mcp, put_mcp, delete_mcp, approve_tool, post_certification, latest_certification, list_unsettled, settle_action, create_widget_credential, list_widget_credentials, revoke_widget_credential, replace_widget_credential, list_audit, verify_audit, post_checkpoint, jwks, audit_keys),
    components(schemas(ErrorBody, HoldView, HoldsView, HoldInput, HoldKind, ErasureInput, crate::erasure::ErasureJobView, crate::erasure::Erasure, crate::erasure::ErasedConversations, crate::erasure::Backups, TenantSettings, TenantSettingsInput, LanguageInput, McpView, crate::mcp::ToolChange, McpConfigInput, ActionPolicyInput, CertificationInput, TestActionInput, CertificationView, CertifiedView, CheckView, UnsettledActionView, StatusAnswerView, UnsettledActions, SettlementInput, Settled, WidgetCredential, CreateWidgetCredential, ReplaceWidgetCredential, OriginInput, NewWidgetCredential, WidgetCredentials, AuditRecord, AuditLink, AuditPage, crate::jwks::PublishedKeyView, crate::audit::Verification, crate::audit::BrokenLink, crate::audit::SignedCheckpoint, crate::audit::CheckpointHead)),
    modifiers(&AdminKey),
    security(("adminKey" = []))
)]
struct AdminApi;

struct AdminKey;

impl utoipa::Modify for AdminKey {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let scheme = HttpBuilder::new()
            .scheme(HttpAuthScheme::Bearer)
            .description(Some(
                "The tenant admin key, `tsk_` + 43 base64url characters.",
            ))
            .build();
        if let Some(c) = openapi.components.as_mut() {
            c.add_security_scheme("adminKey", SecurityScheme::Http(scheme));
        }
    }
}

/// The OpenAPI document of [`router`].
pub fn openapi() -> utoipa::openapi::OpenApi {
    AdminApi::openapi()
}

/// The certification routes of the admin API ([`CERTIFICATION_ROUTES`]).
pub fn certification_router(state: AdminState) -> Router {
    let (certifications, latest, checkpoints) = (PATHS[4], PATHS[5], PATHS[10]);
    let (jwks_path, audit_keys_path) = (PATHS[8], PATHS[11]);
    Router::new()
        .route(jwks_path, get(jwks))
        .route(audit_keys_path, get(audit_keys))
        .route(certifications, axum::routing::post(post_certification))
        .route(latest, get(latest_certification))
        .route(checkpoints, axum::routing::post(post_checkpoint))
        .with_state(state)
}

/// The admin API router (the admin function): everything but [`certification_router`].
pub fn router(state: AdminState) -> Router {
    let [
        mcp,
        widgets,
        widget,
        audit,
        _,
        _,
        unsettled,
        settlement,
        _,
        verification,
        _,
        _,
        approval,
        settings,
        replacement,
        holds,
        erasures,
        erasure,
    ] = PATHS;
    Router::new()
        .route(settings, get(get_settings).put(put_settings))
        .route(holds, get(get_holds).put(put_hold))
        // N-3: queued here, carried out by the worker (the checkpoint key signs there).
        .route(erasures, axum::routing::post(post_erasure))
        .route(erasure, get(get_erasure))
        .route(verification, get(verify_audit))
        .route(mcp, get(get_mcp).put(put_mcp).delete(delete_mcp))
        .route(unsettled, get(list_unsettled))
        .route(settlement, axum::routing::post(settle_action))
        .route(
            widgets,
            get(list_widget_credentials).post(create_widget_credential),
        )
        .route(widget, axum::routing::delete(revoke_widget_credential))
        .route(replacement, axum::routing::post(replace_widget_credential))
        .route(audit, get(list_audit))
        .route(approval, axum::routing::post(approve_tool))
        // S-4: error messages in Portuguese for a caller who prefers it (codes unchanged).
        .layer(axum::middleware::from_fn(
            countersign_http::language::localized_errors,
        ))
        .with_state(state)
}
