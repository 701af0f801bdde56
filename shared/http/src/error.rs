//! The one API error type.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// One field's problem, when a request breaks several rules at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct FieldError {
    /// The field (a dotted path, e.g. `actionPolicy.operations[0]`).
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

/// What a route behind an authenticating, resource-scoping extractor can answer before
/// its own work, for its OpenAPI `responses(…, GuardErrors)`: 401 without valid
/// credentials, 404 for a resource that is not the caller's (never 403: that would
/// confirm it exists), 503 when a platform service fails. The admin API's tenant routes
/// and the widget API's case routes both answer so. The variants carry no doc comments on
/// purpose: utoipa would make them the responses' descriptions, which are empty.
#[derive(Debug, utoipa::IntoResponses)]
pub enum GuardErrors {
    #[response(status = 401)]
    Unauthorized(ErrorBody),
    #[response(status = 404)]
    NotFound(ErrorBody),
    #[response(status = 503)]
    Unavailable(ErrorBody),
}

/// The body of every error answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct ErrorDetail {
    /// A stable, machine-readable code (`UNAUTHORIZED`, `NOT_FOUND`, `VALIDATION_ERROR`, …).
    pub code: String,
    /// A message for the caller.
    pub message: String,
    /// The field to blame, when one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Every broken rule, when the request broke several.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldError>,
}

/// An API error: status, code, message, and the field when one is to blame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    status: StatusCode,
    detail: ErrorDetail,
    retry_after: Option<u64>,
}

impl ApiError {
    /// Any error.
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        Self {
            status,
            detail: ErrorDetail {
                code: code.to_owned(),
                message: message.into(),
                field: None,
                errors: Vec::new(),
            },
            retry_after: None,
        }
    }

    /// 429 `RATE_LIMITED` with `Retry-After: seconds`.
    pub fn rate_limited(message: impl Into<String>, seconds: u64) -> Self {
        // O-1: the 429s alarm's metric.
        metrics::counter!("rate_limited_total").increment(1);
        let mut e = Self::new(StatusCode::TOO_MANY_REQUESTS, "RATE_LIMITED", message);
        e.retry_after = Some(seconds.max(1));
        e
    }

    /// Adds `Retry-After: seconds` (a 429 past a limit, V-7).
    #[must_use]
    pub fn with_retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds.max(1));
        self
    }

    /// The `Retry-After` seconds, when the answer carries one.
    pub fn retry_after(&self) -> Option<u64> {
        self.retry_after
    }

    /// Names the field to blame.
    #[must_use]
    pub fn with_field(mut self, field: impl Into<String>) -> Self {
        self.detail.field = Some(field.into());
        self
    }

    /// Lists every broken rule.
    #[must_use]
    pub fn with_errors(mut self, errors: Vec<FieldError>) -> Self {
        self.detail.errors = errors;
        self
    }

    /// 401 `UNAUTHORIZED` (with `WWW-Authenticate: Bearer`).
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", message)
    }

    /// 404 `NOT_FOUND`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "NOT_FOUND", message)
    }

    /// 400 `VALIDATION_ERROR` blaming `field`.
    pub fn validation(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "VALIDATION_ERROR", message).with_field(field)
    }

    /// 409 with `code`.
    pub fn conflict(code: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }

    /// 503 `SERVICE_UNAVAILABLE`: `cause` is logged here and never returned.
    pub fn unavailable(message: impl Into<String>, cause: &dyn std::fmt::Display) -> Self {
        tracing::warn!(%cause, "a platform service is unavailable");
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "SERVICE_UNAVAILABLE",
            message,
        )
    }

    /// The status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The code.
    pub fn code(&self) -> &str {
        &self.detail.code
    }

    /// The body.
    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            error: self.detail.clone(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status;
        let retry_after = self.retry_after;
        let mut r = (status, axum::Json(ErrorBody { error: self.detail })).into_response();
        if let Some(s) = retry_after {
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        if status == StatusCode::UNAUTHORIZED {
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        r
    }
}
