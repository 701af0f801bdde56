//! The HTTP edge shared by the messages, admin and gateway routers.
//!
//! - [`ApiError`]: the one error type of every JSON API: an HTTP status, a stable `code`,
//!   a message written for the caller, and the field to blame. Causes are logged where
//!   the error is made, never returned.
//! - [`Json`] and [`Query`]: typed extractors whose every rejection is an [`ApiError`]
//!   (`INVALID_JSON`, `PAYLOAD_TOO_LARGE`, `VALIDATION_ERROR` naming the field), so a
//!   handler never sees raw bytes or a query string.
//! - [`bearer`]: the `Authorization: Bearer …` credential, parsed in one place.
//! - [`serve`]: how a function runs its router, in Lambda or on a local port.
//! - [`emf`]: the functions' metrics as CloudWatch EMF (G-8).
//! - [`pages`]: the server-rendered pages' security headers, cookies and origin check.

pub mod emf;
mod error;
mod extract;
pub mod language;
pub mod pages;
pub mod serve;

pub use error::{ApiError, ErrorBody, ErrorDetail, FieldError, GuardErrors};
pub use extract::{
    DEFAULT_BODY_LIMIT, Json, Query, bearer, page_limit, parse_json, parse_optional_json,
};

/// A JSON number that is a whole number, read as `i64`: JSON Schema's `integer` admits
/// `309.0` as well as `309`, so a body valid by the published schema is never refused for
/// writing its integer with a zero fraction. Anything else is refused with the field named.
pub fn whole_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    use serde::Deserialize as _;
    whole(serde_json::Number::deserialize(d)?)
}

fn whole<E: serde::de::Error>(n: serde_json::Number) -> Result<i64, E> {
    if let Some(i) = n.as_i64() {
        return Ok(i);
    }
    match n.as_f64() {
        // Within ±2^53 every whole f64 is exact, and the cast is lossless.
        #[allow(clippy::cast_possible_truncation)]
        Some(f) if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 => Ok(f as i64),
        _ => Err(serde::de::Error::custom(format!(
            "expected a whole number, found {n}"
        ))),
    }
}

/// [`whole_number`] for an optional field: absent (with `#[serde(default)]`) or `null` is
/// `None`, as the published schema (nullable) allows.
pub fn optional_whole_number<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<i64>, D::Error> {
    use serde::Deserialize as _;
    Option::<serde_json::Number>::deserialize(d)?
        .map(whole)
        .transpose()
}

/// Adds the API's `Authorization: Bearer` security scheme `name` (what its operations'
/// `security` name) to its OpenAPI document; `format` is the token's kind, when it has one.
pub fn add_bearer_scheme(
    openapi: &mut utoipa::openapi::OpenApi,
    name: &str,
    format: Option<&str>,
    description: &str,
) {
    use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
    let mut scheme = HttpBuilder::new()
        .scheme(HttpAuthScheme::Bearer)
        .description(Some(description));
    if let Some(format) = format {
        scheme = scheme.bearer_format(format);
    }
    if let Some(c) = openapi.components.as_mut() {
        c.add_security_scheme(name, SecurityScheme::Http(scheme.build()));
    }
}

#[cfg(test)]
mod whole_number_tests {
    #[derive(Debug, serde::Deserialize)]
    struct Body {
        #[serde(deserialize_with = "super::whole_number")]
        n: i64,
    }

    /// A body valid by the published schema (`integer`) is read: `309.0` is 309; a
    /// fraction, a string or a number beyond exact range is refused.
    #[test]
    fn a_whole_number_may_have_a_zero_fraction() {
        let read = |json: &str| serde_json::from_str::<Body>(json).map(|b| b.n);
        assert_eq!(read(r#"{"n": 309}"#).ok(), Some(309));
        assert_eq!(read(r#"{"n": 309.0}"#).ok(), Some(309));
        assert_eq!(read(r#"{"n": -2.0}"#).ok(), Some(-2));
        for bad in [
            r#"{"n": 309.5}"#,
            r#"{"n": "309"}"#,
            r#"{"n": 1e300}"#,
            r#"{"n": null}"#,
        ] {
            assert!(read(bad).is_err(), "{bad}");
        }
    }

    #[derive(Debug, serde::Deserialize)]
    struct Optional {
        #[serde(default, deserialize_with = "super::optional_whole_number")]
        n: Option<i64>,
    }

    /// Optional: absent or `null` is none (the schema says nullable); otherwise as above.
    #[test]
    fn an_optional_whole_number_may_be_null_or_absent() {
        let read = |json: &str| serde_json::from_str::<Optional>(json).map(|b| b.n);
        assert_eq!(read("{}").ok(), Some(None));
        assert_eq!(read(r#"{"n": null}"#).ok(), Some(None));
        assert_eq!(read(r#"{"n": 60.0}"#).ok(), Some(Some(60)));
        assert!(read(r#"{"n": 60.5}"#).is_err());
    }
}
