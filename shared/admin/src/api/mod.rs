//! The admin API, one module per resource: the MCP connection, its certification, widget
//! credentials, the audit trail, unsettled actions, the tenant's settings, retention
//! (holds and erasures) and the public key sets. Handlers are thin: the [`TenantAdmin`]
//! extractor authenticates, the use cases (`mcp`, `widgets`, `audit`, …) decide,
//! [`ApiError`] answers. This module holds what they share — the extractor, the error
//! mapping, the paths, the routers and the OpenAPI document.
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
use countersign_http::{ApiError, ErrorBody, FieldError, GuardErrors, Json, Query, bearer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::OpenApi;

pub use crate::state::{AdminState, AdminStores};

mod audit_trail;
mod certification;
mod connection;
mod public_keys;
mod retention_holds;
mod tenant_settings;
mod unsettled_actions;
mod widget_credentials;

pub use audit_trail::*;
pub use certification::*;
pub use connection::*;
pub use public_keys::*;
pub use retention_holds::*;
pub use tenant_settings::*;
pub use unsettled_actions::*;
pub use widget_credentials::*;

/// Largest accepted request body.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// Every `(field, message)` a refusal names, as the error body lists them.
fn field_errors(errors: Vec<(String, crate::state::Said)>) -> Vec<FieldError> {
    errors
        .into_iter()
        .map(|(field, message)| FieldError {
            field,
            message: message.en,
        })
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
            // V-7: past a limit the answer is 429 with `Retry-After` (decision 0034 as
            // amended); the code says which limit.
            e @ AdminError::Busy {
                retry_after_secs, ..
            } => ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "ALREADY_RUNNING",
                e.to_string(),
            )
            .with_retry_after(retry_after_secs),
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
            e @ AdminError::StepUpNotCertified(_) => {
                ApiError::conflict("STEP_UP_NOT_CERTIFIED", e.to_string())
                    .with_field("actionPolicy.stepUp")
            }
            e @ (AdminError::NotConfigured
            | AdminError::StillRunning(_)
            | AdminError::Conflict
            | AdminError::AlreadyReplaced(_)
            | AdminError::AuditBroken { .. }) => {
                ApiError::conflict(conflict_code(&e), e.to_string())
            }
            e @ (AdminError::NoCertification | AdminError::NoSuchAction) => {
                ApiError::not_found(e.to_string())
            }
            AdminError::NoSuchCredential => ApiError::not_found("no such widget credential"),
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

/// The code of a conflict (409): what the client can tell apart.
fn conflict_code(e: &AdminError) -> &'static str {
    match e {
        AdminError::NotConfigured => "MCP_NOT_CONFIGURED",
        AdminError::StillRunning(_) => "ACTION_STILL_RUNNING",
        AdminError::AlreadyReplaced(_) => "CREDENTIAL_ALREADY_REPLACED",
        AdminError::AuditBroken { .. } => "AUDIT_CHAIN_BROKEN",
        _ => "CONFLICT",
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

/// The tenant id every route behind [`TenantAdmin`] takes in its path, as the OpenAPI
/// document describes it (`params(TenantPath, …)`).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[expect(dead_code, reason = "the OpenAPI document's only")]
struct TenantPath {
    // The doc comment is the parameter's description in the document, word for word.
    /// The tenant id
    id: String,
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

/// Every path the router serves, in axum's syntax: the OpenAPI document and the SAM
/// template are checked against this list.
pub const PATHS: [&str; 20] = [
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
    crate::certify::UNTRUSTED_JWKS_PATH,
    crate::certify::UNTRUSTED_CERT_PATH,
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
pub const CERTIFICATION_ROUTES: [(&str, &str); 7] = [
    ("POST", PATHS[4]),
    ("GET", PATHS[5]),
    ("POST", PATHS[10]),
    ("GET", PATHS[8]),
    ("GET", PATHS[11]),
    ("GET", PATHS[18]),
    ("GET", PATHS[19]),
];

/// The admin API's OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    info(title = "Countersign tenant admin API", version = "1",
        description = "Connect your MCP server, manage widget credentials and read the audit trail. Requirement IDs (C-5, D-5, …) are explained in docs/requirements.md."),
    paths(get_settings, put_settings, get_holds, put_hold, post_erasure, get_erasure, get_mcp, put_mcp, delete_mcp, approve_tool, post_certification, latest_certification, list_unsettled, settle_action, create_widget_credential, list_widget_credentials, revoke_widget_credential, replace_widget_credential, list_audit, verify_audit, post_checkpoint, jwks, audit_keys, untrusted_jwks, untrusted_cert),
    components(schemas(ErrorBody, HoldView, HoldsView, HoldInput, HoldKind, ErasureInput, crate::erasure::ErasureJobView, crate::erasure::Erasure, crate::erasure::ErasedConversations, crate::erasure::Backups, TenantSettings, TenantSettingsInput, WelcomeSettings, WelcomeFields, LanguageInput, McpView, crate::mcp::ToolChange, McpConfigInput, ActionPolicyInput, CertificationInput, TestActionInput, CertificationView, CertifiedView, CheckView, UnsettledActionView, StatusAnswerView, UnsettledActions, SettlementInput, Settled, WidgetCredential, CreateWidgetCredential, ReplaceWidgetCredential, OriginInput, NewWidgetCredential, WidgetCredentials, AuditRecord, AuditLink, AuditPage, crate::jwks::PublishedKeyView, crate::audit::Verification, crate::audit::BrokenLink, crate::audit::SignedCheckpoint, crate::audit::CheckpointHead)),
    modifiers(&AdminKey),
    security(("adminKey" = []))
)]
struct AdminApi;

struct AdminKey;

impl utoipa::Modify for AdminKey {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        countersign_http::add_bearer_scheme(
            openapi,
            "adminKey",
            None,
            "The tenant admin key, `tsk_` + 43 base64url characters.",
        );
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
        .route(PATHS[18], get(untrusted_jwks))
        .route(PATHS[19], get(untrusted_cert))
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
        _,
        _,
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
