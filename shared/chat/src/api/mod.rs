//! The widget API (D-1): `POST /api/cases`, `GET /api/cases/{id}`,
//! `GET /api/cases/{id}/messages`, `POST /api/cases/{id}/messages` (and its streamed twin
//! `…/messages/stream`, S-1, in [`stream`]), `POST /api/cases/{id}/close`.
//!
//! Every request carries `Authorization: Bearer <widget JWT>` (D-2), read by the
//! [`WidgetPrincipal`] extractor. Errors are `{"error": {"code", "message", "field"?}}`:
//! 401 `UNAUTHORIZED`, 404 `NOT_FOUND` (also another person's case), 409 `CASE_CLOSED` /
//! `ACTION_IN_PROGRESS`, 400 `INVALID_JSON` / `VALIDATION_ERROR`, 413
//! `PAYLOAD_TOO_LARGE`, 503 `SERVICE_UNAVAILABLE`. Never internal text. The OpenAPI
//! document (`docs/widget-api.openapi.json`) is generated from these types ([`openapi`]).

use crate::service::{Chat, ChatError};
use crate::stream::{Event, Sink};
use crate::widget::{AuthError, WidgetAuth};
use axum::Router;
use axum::body::Body;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use countersign_domain::conversation::{CaseStatus, Message, MessageKind, Principal};
use countersign_domain::ids::{CaseId, MessageId};
use countersign_domain::ports::{NewMessage, ProposalOutcome};
use countersign_domain::texts::{self, Language};
use countersign_http::{ApiError, ErrorBody, GuardErrors, Json, Query, bearer};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::HashSet;
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;
use utoipa::OpenApi;

mod cases;
mod stream;
mod views;

use cases::*;
pub use stream::STREAM_PATH;
use stream::*;
pub use views::*;

/// Largest request body.
pub const MAX_BODY_BYTES: usize = 32 * 1024;
/// Default page of `GET messages`.
pub const PAGE_DEFAULT: usize = 100;
/// Largest page.
pub const PAGE_MAX: usize = 500;

/// Every path the router serves.
pub const PATHS: [&str; 7] = [
    "/api/cases",
    "/api/cases/{id}/messages",
    "/api/cases/{id}/close",
    "/api/cases/{id}",
    STREAM_PATH,
    "/api/cases/{id}/mcp-token",
    "/api/cases/{id}/step-up",
];

/// Every route (method, path) the router serves: the SAM template and the OpenAPI
/// document are checked against it.
pub const ROUTES: [(&str, &str); 8] = [
    ("POST", PATHS[0]),
    ("GET", PATHS[1]),
    ("POST", PATHS[1]),
    ("POST", PATHS[2]),
    ("GET", PATHS[3]),
    ("POST", PATHS[4]),
    ("POST", PATHS[5]),
    ("POST", PATHS[6]),
];

/// The CORS preflights of the API's paths (decision 0025), answered by the function.
pub const PREFLIGHT_ROUTES: [(&str, &str); 7] = [
    ("OPTIONS", PATHS[0]),
    ("OPTIONS", PATHS[1]),
    ("OPTIONS", PATHS[2]),
    ("OPTIONS", PATHS[3]),
    ("OPTIONS", PATHS[4]),
    ("OPTIONS", PATHS[5]),
    ("OPTIONS", PATHS[6]),
];

/// Routes outside the API (not in its OpenAPI document): the widget SDK's files (W-1).
pub const ASSET_ROUTES: [(&str, &str); 1] = [("GET", crate::assets::ASSET_PATH)];

/// The router's state.
#[derive(Clone, Debug)]
pub struct AppState {
    /// The use cases.
    pub chat: Arc<Chat>,
    /// Widget identity.
    pub auth: Arc<WidgetAuth>,
}

impl From<ChatError> for ApiError {
    fn from(e: ChatError) -> Self {
        match e {
            ChatError::NotFound => ApiError::not_found("no such case"),
            ChatError::Closed => ApiError::conflict("CASE_CLOSED", "this case is closed"),
            ChatError::Busy => ApiError::conflict(
                "ACTION_IN_PROGRESS",
                "an action's outcome is still being checked; send a message to check it, then close",
            ),
            e @ ChatError::StepUpRequired => ApiError::conflict("STEP_UP_REQUIRED", e.to_string()),
            e @ ChatError::StepUpRefused(_) => ApiError::conflict("STEP_UP_REFUSED", e.to_string()),
            e @ ChatError::NoStepUpPending => {
                ApiError::conflict("NO_STEP_UP_PENDING", e.to_string())
            }
            ChatError::Invalid { field, message } => {
                ApiError::validation(field, format!("{field}: {message}"))
            }
            e @ (ChatError::RateLimited { retry_after_secs }
            | ChatError::PersonLimited {
                retry_after_secs, ..
            }) => ApiError::rate_limited(e.to_string(), retry_after_secs),
            ChatError::Unavailable(cause) => {
                ApiError::unavailable("a platform service is unavailable; try again", &cause)
            }
        }
    }
}

/// The person behind a request: a verified widget JWT (D-2). A handler that takes it
/// never runs for an unauthenticated request.
#[derive(Debug, Clone)]
pub struct WidgetPrincipal(pub Principal);

impl FromRequestParts<AppState> for WidgetPrincipal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let unauthorized = || ApiError::unauthorized("a valid widget token is required");
        let token = bearer(&parts.headers).ok_or_else(unauthorized)?;
        let origin = crate::cors::cross_origin(&parts.headers);
        match state.auth.authenticate_from(token, origin).await {
            // N-5: the tenant's own request budget, after the token and before anything
            // else (the model, the provider, the conversation's reads).
            Ok(p) => {
                state.chat.spend_request(&p).await.map_err(ApiError::from)?;
                Ok(Self(p))
            }
            Err(AuthError::Origin) => Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "ORIGIN_NOT_ALLOWED",
                "this widget credential may not be used from this web page's origin",
            )),
            Err(AuthError::Unavailable) => Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "SERVICE_UNAVAILABLE",
                "identity service unavailable; try again",
            )),
            Err(e) => {
                tracing::info!(reason = %e, "widget token refused");
                Err(unauthorized())
            }
        }
    }
}

/// The case id of the path (`/api/cases/{id}/…`); a malformed one is an absent case.
#[derive(Debug, Clone)]
pub struct CasePath(pub CaseId);

impl<S: Send + Sync> FromRequestParts<S> for CasePath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let not_found = || ApiError::not_found("no such case");
        let Path(id) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| not_found())?;
        CaseId::parse(id).map(Self).map_err(|_| not_found())
    }
}

/// The case id every route of one case takes in its path, as the OpenAPI document
/// describes it (`params(CaseIdPath, …)`); [`CasePath`] reads it.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[expect(dead_code, reason = "the OpenAPI document's only")]
struct CaseIdPath {
    // The doc comment is the parameter's description in the document, word for word.
    /// The case id
    id: String,
}

/// 201 with a body no cache may keep (a credential or a one-person link).
pub(super) fn created_no_store(body: impl Serialize) -> Response {
    let no_store = [(header::CACHE_CONTROL, "no-store")];
    (StatusCode::CREATED, no_store, axum::Json(body)).into_response()
}

/// The widget API's OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    info(title = "Countersign widget API", version = "1",
        description = "The chat widget's API: cases and messages of one end user, authenticated by a widget JWT the tenant's backend signs (requirement IDs such as A-22 are explained in docs/requirements.md)."),
    paths(create_case, get_case, list_messages, post_message, post_message_stream, close_case, mint_mcp_token, step_up_link),
    components(schemas(ErrorBody, Messages, MessageView, ProposalView, CaseView, WelcomeView, CaseInclude, CreateCase, LanguageTag, PostMessage, McpTokenRequest, McpToken)),
    modifiers(&WidgetJwt)
)]
struct WidgetApi;

struct WidgetJwt;

impl utoipa::Modify for WidgetJwt {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        countersign_http::add_bearer_scheme(
            openapi,
            "widgetJwt",
            Some("JWT"),
            "A widget JWT (HS256) minted by the tenant's backend.",
        );
    }
}

/// The OpenAPI document of [`router`].
pub fn openapi() -> utoipa::openapi::OpenApi {
    WidgetApi::openapi()
}

/// The widget API router.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route(PATHS[0], post(create_case))
        .route(PATHS[1], get(list_messages).post(post_message))
        .route(PATHS[2], post(close_case))
        .route(PATHS[3], get(get_case))
        .route(PATHS[4], post(post_message_stream))
        .route(PATHS[5], post(mint_mcp_token))
        .route(PATHS[6], post(step_up_link))
        // S-4: error messages in Portuguese for a caller who prefers it (codes unchanged).
        .layer(axum::middleware::from_fn(
            countersign_http::language::localized_errors,
        ))
        .layer(axum::middleware::from_fn(crate::cors::cors))
        .route(crate::assets::ASSET_PATH, get(crate::assets::asset))
        .with_state(state)
}

/// N-5: the stream function's router — only the streamed post (with its CORS preflight),
/// the same middleware as [`router`]; every other path is a 404 answered before any I/O.
/// The stream function's public URL has no API Gateway throttle in front of it: it must
/// not serve the admin, erasure, certification, page or JWKS routes.
pub fn stream_router(state: AppState) -> Router {
    Router::new()
        .route(STREAM_PATH, post(post_message_stream))
        .layer(axum::middleware::from_fn(
            countersign_http::language::localized_errors,
        ))
        .layer(axum::middleware::from_fn(crate::cors::cors))
        .fallback(|| async { ApiError::not_found("no such route on the stream URL") })
        .with_state(state)
}
