//! Panel sessions (U-1): the `tsk_` key is exchanged once for a random session id in an
//! HttpOnly, SameSite=Strict cookie (Secure, with the `__Host-` prefix, outside the
//! local stack); the key itself is never kept by the browser. The store keeps only the
//! id's SHA-256. Sessions last [`SESSION_MINUTES`], with no renewal, and end when the
//! operator rotates the admin key that opened them.
//!
//! Cross-site requests (U-1): SameSite does not separate two ports of one host, nor
//! sibling subdomains, so every change also needs the session's form token (derived from
//! the session id, never stored) and, when the browser sends one, an `Origin` equal to
//! the panel's own.

use crate::keys;
use crate::state::{AdminError, AdminState, store_down};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ports::{PanelSession, Tenant};
use rand::RngCore as _;
use subtle::ConstantTimeEq as _;

/// How long a session lasts.
pub const SESSION_MINUTES: i64 = 30;

/// The cookie's name: with the `__Host-` prefix (Secure, `Path=/`, no `Domain`) outside
/// the local stack.
pub fn cookie_name(state: &AdminState) -> &'static str {
    if local(state) {
        "countersign-admin"
    } else {
        "__Host-countersign-admin"
    }
}

/// The local stack (plain http on loopback): the one case where the cookie is not
/// `Secure`.
pub(crate) fn local(state: &AdminState) -> bool {
    state.url_policy.allow_loopback_http
}

/// A signed-in administrator.
#[derive(Debug, Clone)]
pub struct Session {
    /// Their tenant.
    pub tenant: Tenant,
    /// The form token every change must carry.
    pub csrf: String,
    id_hash: Sha256Hex,
}

/// The form token of session `id`.
fn csrf_of(id: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256Hex::digest(format!("panel-form:{id}").as_bytes()).as_str())
}

impl FromRequestParts<AdminState> for Session {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AdminState) -> Result<Self, Response> {
        let to_sign_in = || Redirect::to("/admin").into_response();
        let id = countersign_http::pages::cookie(&parts.headers, cookie_name(state))
            .ok_or_else(to_sign_in)?;
        let id_hash = Sha256Hex::digest(id.as_bytes());
        let session = state
            .sessions
            .get_session(&id_hash)
            .await
            .map_err(|e| super::unavailable(&store_down(e)))?
            .filter(|s| s.expires_at > state.clock.now())
            .ok_or_else(to_sign_in)?;
        let tenant = state
            .stores
            .tenants
            .get_tenant(&session.tenant)
            .await
            .map_err(|e| super::unavailable(&store_down(e)))?
            .filter(|t| t.admin_key_hash == session.key_hash)
            .ok_or_else(to_sign_in)?;
        Ok(Self {
            tenant,
            csrf: csrf_of(&id),
            id_hash,
        })
    }
}

impl Session {
    /// U-1: a change is accepted only with the session's form token, and only from the
    /// panel's own origin when the browser names one.
    pub fn guard(&self, headers: &HeaderMap, token: Option<&str>) -> Result<(), CrossSite> {
        let token_ok = token.is_some_and(|t| bool::from(t.as_bytes().ct_eq(self.csrf.as_bytes())));
        if token_ok && same_origin(headers) {
            Ok(())
        } else {
            Err(CrossSite)
        }
    }

    /// Ends the session.
    pub async fn end(&self, state: &AdminState) -> Result<(), AdminError> {
        state
            .sessions
            .delete_session(&self.id_hash)
            .await
            .map_err(store_down)
    }
}

/// A change refused as cross-site (U-1): answered 403.
#[derive(Debug)]
pub struct CrossSite;

impl IntoResponse for CrossSite {
    fn into_response(self) -> Response {
        super::refused_cross_site()
    }
}

pub use countersign_http::pages::same_origin;

/// Why signing in failed.
#[derive(Debug)]
pub enum SignInError {
    /// Not a valid admin key.
    WrongKey,
    /// A service failed.
    Unavailable(AdminError),
}

/// U-1: checks `key` and opens a session; returns the `Set-Cookie` value.
pub async fn sign_in(state: &AdminState, key: &str) -> Result<HeaderValue, SignInError> {
    let key = key.trim();
    if !key.starts_with(keys::PREFIX) {
        return Err(SignInError::WrongKey);
    }
    let down = |e| SignInError::Unavailable(store_down(e));
    let owner = state
        .stores
        .tenants
        .tenant_by_admin_key_hash(&Sha256Hex::digest(key.as_bytes()))
        .await
        .map_err(down)?
        .ok_or(SignInError::WrongKey)?;
    let tenant = state
        .stores
        .tenants
        .get_tenant(&owner)
        .await
        .map_err(down)?
        .ok_or(SignInError::WrongKey)?;
    if !keys::matches(key, &tenant.admin_key_hash) {
        return Err(SignInError::WrongKey);
    }
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    let id = URL_SAFE_NO_PAD.encode(bytes);
    let session = PanelSession {
        key_hash: tenant.admin_key_hash.clone(),
        tenant: tenant.id,
        expires_at: state.clock.now().plus_seconds(SESSION_MINUTES * 60),
    };
    state
        .sessions
        .put_session(&Sha256Hex::digest(id.as_bytes()), &session)
        .await
        .map_err(down)?;
    Ok(set_cookie(state, &id, SESSION_MINUTES * 60))
}

/// The `Set-Cookie` value for `id` (an empty id with `max_age` 0 clears it).
pub fn set_cookie(state: &AdminState, id: &str, max_age: i64) -> HeaderValue {
    let secure = if local(state) { "" } else { "; Secure" };
    let value = format!(
        "{}={id}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}",
        cookie_name(state)
    );
    HeaderValue::from_str(&value).unwrap_or(HeaderValue::from_static(""))
}

/// The new widget secret, carried once across the redirect after it was created (issue 28:
/// a form posts and redirects, so a reload never creates a second credential): a cookie
/// for the credentials page only, HttpOnly, one minute long, cleared when read. The secret
/// is never stored by the platform in clear; this is the one-time display's transport.
pub fn secret_cookie(state: &AdminState, key_id: &str, secret: &str, max_age: i64) -> HeaderValue {
    let secure = if local(state) { "" } else { "; Secure" };
    let value = format!(
        "{}={key_id}.{secret}; Path=/admin/widgets; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}",
        secret_cookie_name(state)
    );
    HeaderValue::from_str(&value).unwrap_or(HeaderValue::from_static(""))
}

fn secret_cookie_name(state: &AdminState) -> &'static str {
    if local(state) {
        "countersign-new-secret"
    } else {
        "__Secure-countersign-new-secret"
    }
}

/// The `(key id, secret)` the request's one-time cookie carries, if any.
pub fn new_secret(state: &AdminState, headers: &HeaderMap) -> Option<(String, String)> {
    let value = countersign_http::pages::cookie(headers, secret_cookie_name(state))?;
    let (id, secret) = value.split_once('.')?;
    Some((id.to_owned(), secret.to_owned()))
}

/// 401 for a wrong key is the sign-in page with its error (see `super`).
pub const WRONG_KEY_STATUS: StatusCode = StatusCode::UNAUTHORIZED;
