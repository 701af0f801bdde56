//! The public key sets (K-1, V-6): the platform signing keys and the audit checkpoint key.

use super::*;

/// The platform's signing keys as a JWK Set (K-1): public, cacheable for the key ring's
/// cache time. An empty set while no signing key is installed.
#[utoipa::path(get, path = "/.well-known/jwks.json", tag = "keys", security(()),
    responses((status = 200, description = "RFC 7517 JWK Set (application/jwk-set+json): keys with kty, use, alg, kid, n, e"),
        (status = 503, body = ErrorBody)))]
pub(super) async fn jwks(
    State(state): State<AdminState>,
) -> Result<axum::response::Response, ApiError> {
    let keys = crate::jwks::published(&state).await?;
    // With no key installed there is nothing to cache for long: one is expected soon.
    let max_age = keys.as_ref().map_or(60, |k| k.cache_seconds);
    Ok(public_jwk_set(
        &crate::jwks::document(keys.as_ref()),
        max_age,
    ))
}

/// V-6: the audit checkpoint key, published apart from the proofs' JWKS (a provider that
/// follows the JWKS never sees it), each key and the document marked
/// `"purpose": "audit-checkpoint"`. Verify checkpoints with it; never accept it for an
/// action proof.
#[utoipa::path(get, path = "/.well-known/countersign-audit-keys.json", tag = "keys", security(()),
    responses((status = 200, description = "A JWK Set marked purpose audit-checkpoint: the key that signs audit checkpoints, never action proofs"),
        (status = 503, body = ErrorBody)))]
pub(super) async fn audit_keys(
    State(state): State<AdminState>,
) -> Result<axum::response::Response, ApiError> {
    Ok(public_jwk_set(&crate::jwks::audit_keys(&state).await?, 300))
}

/// A JWK Set answer that anyone may cache for `max_age` seconds.
fn public_jwk_set(set: &Value, max_age: i64) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    (
        [
            (header::CONTENT_TYPE, "application/jwk-set+json".to_owned()),
            (header::CACHE_CONTROL, format!("public, max-age={max_age}")),
        ],
        set.to_string(),
    )
        .into_response()
}

/// V-3: the certification's untrusted key as a JWK Set — where its `jku` proof points. A
/// provider that follows `jku` finds here a key that verifies that proof, executes it, and
/// fails the check; one that uses only the installed key never reads it. Never a key of
/// the platform's.
#[utoipa::path(get, path = "/.well-known/countersign-certification/untrusted-jwks.json", tag = "keys", security(()),
    responses((status = 200, description = "A JWK Set of the certification's untrusted key (never trust it)")))]
pub(super) async fn untrusted_jwks() -> axum::response::Response {
    use axum::response::IntoResponse as _;
    (
        [(header::CONTENT_TYPE, "application/jwk-set+json")],
        crate::certify::untrusted_jwks().to_string(),
    )
        .into_response()
}

/// V-3: the certification's untrusted key as a self-signed certificate — where its `x5u`
/// proof points. Never a key of the platform's.
#[utoipa::path(get, path = "/.well-known/countersign-certification/untrusted-cert.pem", tag = "keys", security(()),
    responses((status = 200, description = "A self-signed certificate of the certification's untrusted key (never trust it)")))]
pub(super) async fn untrusted_cert() -> axum::response::Response {
    use axum::response::IntoResponse as _;
    (
        [(header::CONTENT_TYPE, "application/x-pem-file")],
        crate::certify::UNTRUSTED_CERT,
    )
        .into_response()
}
