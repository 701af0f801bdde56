//! The `/admin` panel (U-1 … U-3): server-rendered pages over the same use cases as the
//! admin API (`mcp`, `widgets`, `certify`, the audit trail), never a second
//! implementation of them. Forms post and redirect; the only script is the panel's own
//! copy buttons. Every page is `no-store` under a strict Content-Security-Policy.
//!
//! The admin function serves [`router`]; the messages function serves
//! [`certification_router`] (the run signs test proofs, decision 0026).

mod audit_trail;
pub mod audit_view;
mod certification;
mod connection;
pub mod i18n;
mod retention_holds;
mod samples;
pub mod session;
mod sign_in;
mod tenant_settings;
mod unsettled_actions;
pub mod views;
mod widget_credentials;

use crate::certify::{self, CertifyRequest};
use crate::mcp;
use crate::state::{AdminError, AdminState, store_down};
use audit_trail::*;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use certification::*;
use connection::*;
use countersign_domain::certification::{Certification, CertifiedSubject};
use countersign_domain::ids::{AuditId, OperationName, ToolName, UserId};
use countersign_domain::ports::{StoredMcpConfig, Tenant};
use countersign_domain::vetting;
use i18n::t;
use maud::Markup;
use retention_holds::*;
use serde_json::{Map, Value};
use session::{Session, SignInError};
use sign_in::*;
use std::collections::HashMap;
use tenant_settings::*;
use unsettled_actions::*;
use views::{Errors, McpForm, McpPage, ToolChoice};
use widget_credentials::*;

/// Every route of [`router`]: the SAM template is checked against it.
pub const ROUTES: [(&str, &str); 25] = [
    ("GET", "/admin"),
    ("GET", "/admin/language"),
    ("GET", "/admin/settings"),
    ("POST", "/admin/settings"),
    ("GET", "/admin/widgets/{key_id}/revoke"),
    ("GET", "/admin/widgets/{key_id}/replace"),
    ("GET", "/admin/static/{file}"),
    ("POST", "/admin/login"),
    ("POST", "/admin/logout"),
    ("GET", "/admin/mcp"),
    ("POST", "/admin/mcp"),
    ("POST", "/admin/mcp/remove"),
    ("POST", "/admin/mcp/approve"),
    ("GET", "/admin/widgets"),
    ("POST", "/admin/widgets"),
    ("POST", "/admin/widgets/{key_id}/revoke"),
    ("POST", "/admin/widgets/{key_id}/replace"),
    ("GET", "/admin/audit"),
    ("GET", "/admin/actions"),
    ("POST", "/admin/actions/settle"),
    ("GET", "/admin/retention"),
    ("POST", "/admin/holds"),
    ("POST", "/admin/erasure"),
    ("GET", "/admin/erasure/{job_id}"),
    ("POST", "/admin/passkeys/revoke"),
];

/// The routes of [`certification_router`] (the messages function: it runs the
/// certification, which signs test proofs).
pub const CERTIFICATION_ROUTES: [(&str, &str); 2] = [
    ("GET", "/admin/certification"),
    ("POST", "/admin/certification"),
];

/// The panel's Content-Security-Policy: its own stylesheet and script, forms to itself.
pub const CSP: &str = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; \
    connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const CSS: &str = include_str!("panel.css");
const JS: &str = include_str!("panel.js");
/// The panel's icon: without one, every page made the browser ask for `/favicon.ico`, which
/// the API answered 401 (a console error on every page).
const ICON: &str = include_str!("favicon.svg");

/// The panel as the admin function serves it.
pub fn router(state: AdminState) -> Router {
    Router::new()
        .route("/admin", get(home))
        .route("/admin/login", post(login))
        .route("/admin/logout", post(logout))
        .route("/admin/mcp", get(mcp_page).post(mcp_save))
        .route("/admin/mcp/remove", post(mcp_remove))
        .route("/admin/mcp/approve", post(mcp_approve))
        .route("/admin/widgets", get(widgets_page).post(widget_create))
        .route(
            "/admin/widgets/{key_id}/revoke",
            get(confirm_revoke).post(widget_revoke),
        )
        .route(
            "/admin/widgets/{key_id}/replace",
            get(confirm_replace).post(widget_replace),
        )
        .route("/admin/audit", get(audit_page))
        .route("/admin/settings", get(settings_page).post(settings_save))
        .route("/admin/retention", get(retention_page))
        .route("/admin/holds", post(hold_save))
        .route("/admin/erasure", post(erasure))
        .route("/admin/erasure/{job_id}", get(erasure_job))
        .route("/admin/passkeys/revoke", post(passkey_revoke))
        .route("/admin/static/{file}", get(static_file))
        .route("/admin/actions", get(unsettled_page))
        .route("/admin/actions/settle", post(settle))
        .route("/admin/language", get(i18n::switch))
        .layer(axum::middleware::from_fn(i18n::middleware))
        .with_state(state)
}

/// The panel's certification form target (the messages function).
pub fn certification_router(state: AdminState) -> Router {
    Router::new()
        .route(
            "/admin/certification",
            get(latest_certification).post(certification),
        )
        .layer(axum::middleware::from_fn(i18n::middleware))
        .with_state(state)
}

/// A page with the panel's security headers.
fn html(status: StatusCode, markup: Markup) -> Response {
    countersign_http::pages::html(status, markup.into_string(), CSP)
}

fn secure_headers(h: &mut HeaderMap) {
    countersign_http::pages::secure_headers(h, CSP);
}

/// 503: a platform service failed (the cause is logged, never shown).
pub(crate) fn unavailable(e: &AdminError) -> Response {
    tracing::warn!(error = %e, "panel request failed");
    html(
        StatusCode::SERVICE_UNAVAILABLE,
        views::message(
            t("Unavailable"),
            None,
            t("A platform service is unavailable; nothing was changed. Try again shortly."),
        ),
    )
}

/// A use case's error as a panel page answers it: a platform failure is the panel's 503
/// page (the cause logged, never shown); a refusal re-renders the page it came from with
/// the errors under their fields, at the status the JSON API gives the same error — one
/// table, the API's, so the panel and the API cannot disagree (429 for a job already
/// running, V-7; 404 for what is not there; 409 for a conflict).
pub(crate) enum PanelError {
    /// The 503 page.
    Unavailable(Response),
    /// The refusal's errors by field, and its status.
    Refused { errors: Errors, status: StatusCode },
}

impl From<AdminError> for PanelError {
    fn from(e: AdminError) -> Self {
        if matches!(e, AdminError::Unavailable { .. }) {
            return Self::Unavailable(unavailable(&e));
        }
        let errors = errors_of(&e);
        let status = countersign_http::ApiError::from(e).status();
        Self::Refused { errors, status }
    }
}

impl PanelError {
    /// The answer: the 503 page, or `page` rendered with the errors at the status.
    pub(crate) async fn answer<F>(self, page: impl FnOnce(Errors, StatusCode) -> F) -> Response
    where
        F: std::future::Future<Output = Response>,
    {
        match self {
            Self::Unavailable(res) => res,
            Self::Refused { errors, status } => page(errors, status).await,
        }
    }
}

/// 403: a change without the session's form token or from another origin (U-1).
pub(crate) fn refused_cross_site() -> Response {
    html(
        StatusCode::FORBIDDEN,
        views::message(
            t("Refused"),
            None,
            t(
                "This request did not come from the panel's own pages and was refused; nothing was changed.",
            ),
        ),
    )
}

fn see_other(to: &str) -> Response {
    let mut res = Redirect::to(to).into_response();
    secure_headers(res.headers_mut());
    res
}

/// A change's form, past the session and its cross-site guard (U-1): what every panel
/// handler that changes something takes, so none repeats the check. A request without a
/// session goes to sign-in; a cross-site one is refused before any handler runs.
struct Guarded {
    session: Session,
    form: Form,
}

impl axum::extract::FromRequest<AdminState> for Guarded {
    type Rejection = Response;

    async fn from_request(
        req: axum::extract::Request,
        state: &AdminState,
    ) -> Result<Self, Response> {
        use axum::extract::FromRequestParts as _;
        let (mut parts, body) = req.into_parts();
        let session = Session::from_request_parts(&mut parts, state).await?;
        let headers = parts.headers.clone();
        let req = axum::extract::Request::from_parts(parts, body);
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let form =
            Form::guarded(&session, &headers, &bytes).map_err(IntoResponse::into_response)?;
        Ok(Self { session, form })
    }
}

/// The body of a form post.
struct Form(Vec<(String, String)>);

impl Form {
    fn parse(body: &[u8]) -> Self {
        Self(url::form_urlencoded::parse(body).into_owned().collect())
    }
    /// A change's form, once the session's cross-site guard (U-1) let it through.
    fn guarded(
        session: &Session,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<Self, session::CrossSite> {
        let form = Self::parse(body);
        session.guard(headers, form.get("csrf"))?;
        Ok(form)
    }
    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    fn all(&self, name: &str) -> impl Iterator<Item = &str> {
        self.0
            .iter()
            .filter(move |(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
    fn lines(&self, name: &str) -> Vec<String> {
        self.get(name)
            .unwrap_or("")
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    }
}

/// The query string's parameters (a malformed one is simply absent).
fn query(uri: &Uri) -> HashMap<String, String> {
    url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
        .into_owned()
        .collect()
}

/// The notice a redirect asked for with `?done=<what>`, from the page's own `notices`.
fn done_notice(
    q: &HashMap<String, String>,
    notices: &[(&str, &'static str)],
) -> Option<&'static str> {
    let done = q.get("done")?;
    notices
        .iter()
        .find(|(what, _)| what == done)
        .map(|(_, n)| *n)
}

/// An admin error as the fields it names.
/// Issue 50: `errors` with every field a page does not show (`shown`, or under a shown
/// prefix ending in `.`) moved to the top (""), so no refusal is invisible.
fn placed(errors: Errors, shown: &[&str]) -> Errors {
    let mut out = Errors::new();
    for (field, message) in errors {
        let on_page = shown
            .iter()
            .any(|s| field == *s || (s.ends_with('.') && field.starts_with(s)));
        let key = if on_page { field } else { String::new() };
        out.entry(key)
            .and_modify(|m: &mut String| {
                m.push(' ');
                m.push_str(&message);
            })
            .or_insert(message);
    }
    out
}

fn errors_of(e: &AdminError) -> Errors {
    match e {
        // Issue 50: in the administrator's language, each under its field; several
        // entries of one list field (`allowedOrigins[2]`) under that field, together.
        AdminError::Invalid { errors, .. } => {
            let mut by_field = Errors::new();
            for (field, said) in errors {
                let field = field.split('[').next().unwrap_or_default().to_owned();
                let text = said.get(i18n::lang());
                by_field
                    .entry(field)
                    .and_modify(|m: &mut String| {
                        m.push(' ');
                        m.push_str(text);
                    })
                    .or_insert_with(|| text.to_owned());
            }
            by_field
        }
        // V-1: every refused tool, by the tools field.
        AdminError::NotConsultations(errors) => {
            let all: Vec<&str> = errors.iter().map(|(_, m)| m.get(i18n::lang())).collect();
            [("allowedTools".to_owned(), all.join(" "))].into()
        }
        AdminError::ProviderUnreachable(_) => [("serverUrl".to_owned(), i18n::error(e))].into(),
        AdminError::StepUpNotCertified(_) => {
            [("actionPolicy.stepUp".to_owned(), i18n::error(e))].into()
        }
        AdminError::SigningUnavailable | AdminError::CertificationRequired => {
            [("actionPolicy.enabled".to_owned(), i18n::error(e))].into()
        }
        other => [(String::new(), i18n::error(other))].into(),
    }
}

async fn static_file(Path(file): Path<String>) -> Response {
    let (body, kind) = match file.as_str() {
        "panel.css" => (CSS, "text/css; charset=utf-8"),
        "panel.js" => (JS, "text/javascript; charset=utf-8"),
        "favicon.svg" => (ICON, "image/svg+xml"),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    countersign_http::pages::asset(body, kind, "public, max-age=300")
}
