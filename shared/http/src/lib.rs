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

pub mod emf;
mod error;
mod extract;
pub mod language;
pub mod serve;

pub use error::{ApiError, ErrorBody, ErrorDetail, FieldError};
pub use extract::{DEFAULT_BODY_LIMIT, Json, Query, bearer, parse_json};
