//! Typed extractors whose rejections are [`ApiError`]s, and bearer parsing.

use crate::ApiError;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The largest body a [`Json`] reads unless its `LIMIT` says otherwise.
pub const DEFAULT_BODY_LIMIT: usize = 64 * 1024;

/// A JSON object body of type `T`, at most `LIMIT` bytes; also a JSON response.
///
/// Rejections: a body over the limit → 413 `PAYLOAD_TOO_LARGE`; not JSON, or not an
/// object → 400 `INVALID_JSON`; an object that does not fit `T` (a wrong type, a missing
/// or unknown field) → 400 `VALIDATION_ERROR` naming the field.
#[derive(Debug, Clone, Copy, Default)]
pub struct Json<T, const LIMIT: usize = DEFAULT_BODY_LIMIT>(pub T);

/// The 400 for a body that is not JSON, or not an object.
fn invalid_json() -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "INVALID_JSON",
        "the body must be a JSON object",
    )
}

/// Parses a JSON object body into `T` with the rejections of [`Json`].
pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let value: Value = serde_json::from_slice(bytes).map_err(|_| invalid_json())?;
    object_into(value)
}

/// A parsed body into `T`: a non-object is `INVALID_JSON`, an object that does not fit
/// `T` is `VALIDATION_ERROR` naming the field.
fn object_into<T: DeserializeOwned>(value: Value) -> Result<T, ApiError> {
    if !value.is_object() {
        return Err(invalid_json());
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." { String::new() } else { path };
        let message = if field.is_empty() {
            e.inner().to_string()
        } else {
            format!("{field}: {}", e.inner())
        };
        let err = ApiError::new(StatusCode::BAD_REQUEST, "VALIDATION_ERROR", message);
        if field.is_empty() {
            err
        } else {
            err.with_field(field)
        }
    })
}

/// [`parse_json`] for an optional body: absent (empty or white space) or `null` is
/// `T::default()`.
pub fn parse_optional_json<T: DeserializeOwned + Default>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    // Parsed once: `null` is absent, anything else goes on as `parse_json` would.
    match serde_json::from_slice::<Value>(bytes).map_err(|_| invalid_json())? {
        Value::Null => Ok(T::default()),
        value => object_into(value),
    }
}

impl<T, S, const LIMIT: usize> FromRequest<S> for Json<T, LIMIT>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, _: &S) -> Result<Self, ApiError> {
        // Read here rather than by axum's extractor, so that any oversized body (even a
        // streamed one of unknown length) gets the typed 413.
        let bytes = axum::body::to_bytes(req.into_body(), LIMIT)
            .await
            .map_err(|_| {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "PAYLOAD_TOO_LARGE",
                    format!("the body must be at most {LIMIT} bytes"),
                )
            })?;
        parse_json(&bytes).map(Json)
    }
}

impl<T: Serialize, const LIMIT: usize> IntoResponse for Json<T, LIMIT> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}

/// A query string of type `T`. Rejection: 400 `VALIDATION_ERROR` naming the parameter
/// (unknown parameters are refused when `T` denies them).
#[derive(Debug, Clone, Copy, Default)]
pub struct Query<T>(pub T);

impl<T, S> FromRequestParts<S> for Query<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or_default();
        let de = serde_urlencoded::Deserializer::new(form_urlencoded_parse(query));
        serde_path_to_error::deserialize(de)
            .map(Query)
            .map_err(|e| {
                let message = e.inner().to_string();
                let field = unknown_field(&message)
                    .or_else(|| Some(e.path().to_string()).filter(|p| p != "."))
                    .unwrap_or_else(|| "query".to_owned());
                ApiError::validation(field, message)
            })
    }
}

/// A page size from a list's `limit` query parameter: `default` when absent, else 1 to
/// `max` (400 `VALIDATION_ERROR` naming `limit`).
pub fn page_limit(limit: Option<usize>, default: usize, max: usize) -> Result<usize, ApiError> {
    let limit = limit.unwrap_or(default);
    if !(1..=max).contains(&limit) {
        let message = format!("limit must be an integer from 1 to {max}");
        return Err(ApiError::validation("limit", message));
    }
    Ok(limit)
}

/// The form pairs of a query string (the parser serde_urlencoded itself uses).
fn form_urlencoded_parse(query: &str) -> form_urlencoded::Parse<'_> {
    form_urlencoded::parse(query.as_bytes())
}

/// The name in serde's "unknown field `x`, expected …".
fn unknown_field(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    rest.split_once('`').map(|(name, _)| name.to_owned())
}

/// The credential of `Authorization: Bearer <credential>`, if present and non-empty.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
}
