//! The widget API (D-1): `POST /api/cases`, `GET /api/cases/{id}/messages`,
//! `POST /api/cases/{id}/messages`, `POST /api/cases/{id}/close`.
//!
//! Every request carries `Authorization: Bearer <widget JWT>` (D-2). Errors are
//! `{"error": {"code", "message", "field"?}}`: 401 `UNAUTHORIZED`, 404 `NOT_FOUND` (also
//! another person's case), 409 `CASE_CLOSED`, 400 `INVALID_JSON` / `VALIDATION_ERROR`,
//! 413 `PAYLOAD_TOO_LARGE`, 503 `SERVICE_UNAVAILABLE`. Never internal text.

use crate::chat::{Chat, ChatError};
use crate::widget::{AuthError, WidgetAuth};
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use countersign_domain::conversation::{Message, MessageKind, Principal, Role};
use countersign_domain::ids::{CaseId, MessageId};
use countersign_domain::ports::NewMessage;
use countersign_domain::texts::{self, Language};
use serde_json::{Value, json};
use std::sync::Arc;

/// Largest request body.
pub const MAX_BODY_BYTES: usize = 32 * 1024;
/// Default and largest page of `GET messages`.
pub const PAGE_DEFAULT: usize = 100;
/// Largest page.
pub const PAGE_MAX: usize = 500;

/// Every path the router serves.
pub const PATHS: [&str; 3] = [
    "/api/cases",
    "/api/cases/{id}/messages",
    "/api/cases/{id}/close",
];

/// Every route (method, path) the router serves: the SAM template is checked against it.
pub const ROUTES: [(&str, &str); 4] = [
    ("POST", PATHS[0]),
    ("GET", PATHS[1]),
    ("POST", PATHS[1]),
    ("POST", PATHS[2]),
];

/// The router's state.
#[derive(Clone, Debug)]
pub struct AppState {
    /// The use cases.
    pub chat: Arc<Chat>,
    /// Widget identity.
    pub auth: Arc<WidgetAuth>,
}

struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    field: Option<&'static str>,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            field: None,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(f) = self.field {
            error["field"] = json!(f);
        }
        let mut r = (self.status, axum::Json(json!({"error": error}))).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
        }
        r
    }
}

impl From<ChatError> for ApiError {
    fn from(e: ChatError) -> Self {
        match e {
            ChatError::NotFound => Self::new(StatusCode::NOT_FOUND, "NOT_FOUND", "no such case"),
            ChatError::Closed => {
                Self::new(StatusCode::CONFLICT, "CASE_CLOSED", "this case is closed")
            }
            ChatError::Busy => Self::new(
                StatusCode::CONFLICT,
                "ACTION_IN_PROGRESS",
                "an action's outcome is still being checked; send a message to check it, then close",
            ),
            ChatError::Invalid { field, message } => Self {
                field: Some(field),
                ..Self::new(
                    StatusCode::BAD_REQUEST,
                    "VALIDATION_ERROR",
                    format!("{field}: {message}"),
                )
            },
            ChatError::Unavailable(cause) => {
                tracing::warn!(error = %cause, "store unavailable");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "SERVICE_UNAVAILABLE",
                    "a platform service is unavailable; try again",
                )
            }
        }
    }
}

async fn principal(state: &AppState, headers: &HeaderMap) -> Result<Principal, ApiError> {
    let unauthorized = || {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "UNAUTHORIZED",
            "a valid widget token is required",
        )
    };
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(unauthorized)?;
    match state.auth.authenticate(token).await {
        Ok(p) => Ok(p),
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

fn case_id(id: String) -> Result<CaseId, ApiError> {
    CaseId::parse(id).map_err(|_| ApiError::new(StatusCode::NOT_FOUND, "NOT_FOUND", "no such case"))
}

fn role(r: Role) -> &'static str {
    match r {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

fn kind(k: MessageKind) -> &'static str {
    match k {
        MessageKind::Text => "text",
        MessageKind::Proposal => "proposal",
        MessageKind::Instructions => "instructions",
        MessageKind::Result => "result",
        MessageKind::Notice => "notice",
    }
}

/// A message as the widget renders it. A proposal carries the fixed confirm/cancel
/// instructions as a separate field: its `content` is the summary, literally.
fn message_json(m: &Message, lang: Language) -> Value {
    let mut v = json!({
        "id": m.id.as_str(),
        "role": role(m.role),
        "kind": kind(m.kind),
        "content": m.content,
        "createdAt": m.created_at.to_rfc3339(),
    });
    if let Some(r) = &m.reply_to {
        v["replyToMessageId"] = json!(r.as_str());
    }
    if m.kind == MessageKind::Proposal {
        v["instructions"] = json!(texts::confirm_instructions(lang));
    }
    v
}

fn from_new(m: NewMessage) -> Message {
    Message {
        id: m.id,
        case: m.case,
        role: m.role,
        kind: m.kind,
        content: m.content,
        reply_to: m.reply_to,
        created_at: m.created_at,
    }
}

async fn create_case(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let who = principal(&state, &headers).await?;
    let case = state.chat.create_case(&who).await?;
    Ok((StatusCode::CREATED, axum::Json(json!({"caseId": case.id.as_str(), "status": "open", "createdAt": case.created_at.to_rfc3339()}))).into_response())
}

async fn list_messages(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Response, ApiError> {
    let who = principal(&state, &headers).await?;
    let case = case_id(id)?;
    let mut after = None;
    let mut limit = PAGE_DEFAULT;
    let invalid = |field: &'static str, message: &str| ApiError {
        field: Some(field),
        ..ApiError::new(StatusCode::BAD_REQUEST, "VALIDATION_ERROR", message)
    };
    for pair in query
        .as_deref()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        match k {
            "after" => {
                after = Some(
                    MessageId::parse(v)
                        .map_err(|_| invalid("after", "after must be a message id"))?,
                );
            }
            "limit" => {
                limit = v
                    .parse::<usize>()
                    .ok()
                    .filter(|n| (1..=PAGE_MAX).contains(n))
                    .ok_or_else(|| invalid("limit", "limit must be an integer from 1 to 500"))?;
            }
            _ => return Err(invalid("query", "unknown query parameter")),
        }
    }
    let (messages, lang) = state
        .chat
        .messages(&who, &case, after.as_ref(), limit)
        .await?;
    let items: Vec<Value> = messages.iter().map(|m| message_json(m, lang)).collect();
    Ok(axum::Json(json!({"items": items})).into_response())
}

async fn post_message(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let who = principal(&state, &headers).await?;
    let case = case_id(id)?;
    let bytes = axum::body::to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "PAYLOAD_TOO_LARGE",
                format!("the body must be at most {MAX_BODY_BYTES} bytes"),
            )
        })?;
    let invalid_json = || {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "INVALID_JSON",
            "the body must be a JSON object {content, replyToMessageId?}",
        )
    };
    let Ok(Value::Object(obj)) = serde_json::from_slice::<Value>(&bytes) else {
        return Err(invalid_json());
    };
    let invalid = |field: &'static str, message: &str| ApiError {
        field: Some(field),
        ..ApiError::new(StatusCode::BAD_REQUEST, "VALIDATION_ERROR", message)
    };
    if let Some(k) = obj
        .keys()
        .find(|k| *k != "content" && *k != "replyToMessageId")
    {
        return Err(ApiError {
            field: None,
            ..invalid("content", &format!("unknown field {k:?}"))
        });
    }
    let content = obj
        .get("content")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("content", "content must be a string"))?;
    let reply_to =
        match obj.get("replyToMessageId") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(MessageId::parse(s.clone()).map_err(|_| {
                invalid("replyToMessageId", "replyToMessageId must be a message id")
            })?),
            Some(_) => {
                return Err(invalid(
                    "replyToMessageId",
                    "replyToMessageId must be a string",
                ));
            }
        };
    let (stored, lang) = state.chat.post(&who, &case, content, reply_to).await?;
    let messages: Vec<Value> = stored
        .into_iter()
        .map(|m| message_json(&from_new(m), lang))
        .collect();
    Ok(axum::Json(json!({"messages": messages})).into_response())
}

async fn close_case(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let who = principal(&state, &headers).await?;
    let case = case_id(id)?;
    state.chat.close(&who, &case).await?;
    Ok(axum::Json(json!({"caseId": case.as_str(), "status": "closed"})).into_response())
}

/// The widget API router.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route(PATHS[0], post(create_case))
        .route(PATHS[1], get(list_messages).post(post_message))
        .route(PATHS[2], post(close_case))
        .with_state(state)
}
