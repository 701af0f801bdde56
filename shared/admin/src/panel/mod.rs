//! The `/admin` panel (U-1 … U-3): server-rendered pages over the same use cases as the
//! admin API (`mcp`, `widgets`, `certify`, the audit trail), never a second
//! implementation of them. Forms post and redirect; the only script is the panel's own
//! copy buttons. Every page is `no-store` under a strict Content-Security-Policy.
//!
//! The admin function serves [`router`]; the messages function serves
//! [`certification_router`] (the run signs test proofs, decision 0026).

pub mod audit_view;
pub mod i18n;
mod samples;
pub mod session;
pub mod views;

use crate::certify::{self, CertifyRequest};
use crate::mcp;
use crate::state::{AdminError, AdminState, store_down};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use countersign_domain::certification::{Certification, CertifiedSubject};
use countersign_domain::ids::{AuditId, OperationName, ToolName, UserId};
use countersign_domain::ports::{StoredMcpConfig, Tenant};
use countersign_domain::vetting;
use i18n::t;
use maud::Markup;
use serde_json::{Map, Value, json};
use session::{Session, SignInError};
use std::collections::HashMap;
use views::{Errors, McpForm, McpPage, ToolChoice};

/// Every route of [`router`]: the SAM template is checked against it.
pub const ROUTES: [(&str, &str); 24] = [
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
];

/// The routes of [`certification_router`] (the messages function: it runs the
/// certification, which signs test proofs).
pub const CERTIFICATION_ROUTES: [(&str, &str); 1] = [("POST", "/admin/certification")];

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
        .route("/admin/certification", post(certification))
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

/// An admin error as the fields it names.
fn errors_of(e: &AdminError) -> Errors {
    match e {
        AdminError::Invalid { errors, .. } => errors.iter().cloned().collect(),
        // V-1: every refused tool, by the tools field.
        AdminError::NotConsultations(errors) => {
            let all: Vec<&str> = errors.iter().map(|(_, m)| m.as_str()).collect();
            [("allowedTools".to_owned(), all.join(" "))].into()
        }
        AdminError::ProviderUnreachable(_) => [("serverUrl".to_owned(), i18n::error(e))].into(),
        AdminError::SigningUnavailable | AdminError::CertificationRequired => {
            [("actionPolicy.enabled".to_owned(), i18n::error(e))].into()
        }
        other => [(String::new(), i18n::error(other))].into(),
    }
}

async fn home(session: Result<Session, Response>) -> Response {
    match session {
        Ok(_) => see_other("/admin/mcp"),
        Err(_) => html(StatusCode::OK, views::sign_in(None)),
    }
}

async fn login(State(state): State<AdminState>, headers: HeaderMap, body: Bytes) -> Response {
    if !session::same_origin(&headers) {
        return refused_cross_site();
    }
    let form = Form::parse(&body);
    match session::sign_in(&state, form.get("key").unwrap_or("")).await {
        Ok(cookie) => {
            let mut res = see_other("/admin/mcp");
            res.headers_mut().insert(header::SET_COOKIE, cookie);
            res
        }
        Err(SignInError::WrongKey) => html(
            session::WRONG_KEY_STATUS,
            views::sign_in(Some(t("That admin key is not valid."))),
        ),
        Err(SignInError::Unavailable(e)) => unavailable(&e),
    }
}

async fn logout(State(state): State<AdminState>, Guarded { session, .. }: Guarded) -> Response {
    if let Err(e) = session.end(&state).await {
        return unavailable(&e);
    }
    let mut res = see_other("/admin");
    res.headers_mut()
        .insert(header::SET_COOKIE, session::set_cookie(&state, "", 0));
    res
}

/// The saved configuration and the latest run.
async fn saved(
    state: &AdminState,
    tenant: &Tenant,
) -> Result<(Option<StoredMcpConfig>, Option<Certification>), AdminError> {
    let stored = mcp::current(state, tenant).await?;
    let run = state
        .stores
        .certifications
        .latest_certification(&tenant.id)
        .await
        .map_err(store_down)?;
    Ok((stored, run))
}

fn form_of(stored: Option<&StoredMcpConfig>) -> McpForm {
    let Some(s) = stored else {
        return McpForm::default();
    };
    let c = &s.config;
    McpForm {
        server_url: c.server_url.to_string(),
        audience: c.audience.clone().unwrap_or_default(),
        allowed_tools: c.allowed_tools.iter().map(ToString::to_string).collect(),
        operations: c
            .action_policy
            .operations
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        enabled: c.action_policy.enabled,
    }
}

/// Why actions cannot be enabled on the saved settings now, if they cannot (C-6, H-4).
fn enable_blocked(
    view: &mcp::McpView,
    stored: Option<&StoredMcpConfig>,
    run: Option<&Certification>,
) -> Option<&'static str> {
    if view.action_verification.is_none() {
        return Some(t(
            "The platform has no signing key installed: actions cannot be enabled.",
        ));
    }
    let certified =
        stored.is_some_and(|s| run.is_some_and(|r| r.certifies(&CertifiedSubject::of(s))));
    (!certified).then(|| {
        t("Save the settings, install the key on your server, then run the certification below: actions can be enabled once it passes on the saved settings.")
    })
}

/// The live tools of the saved server, as the consultation picker shows them (H-2: a
/// write, an operation or an action tool cannot be chosen).
async fn live_tools(
    state: &AdminState,
    tenant: &Tenant,
    stored: &StoredMcpConfig,
) -> Result<Vec<ToolChoice>, String> {
    let token = mcp::token_of(state, tenant, Some(stored))
        .await
        .map_err(|e| e.to_string())?
        .ok_or("no service token is saved")?;
    let ctx = mcp::admin_context(
        state,
        tenant,
        &stored.config.server_url,
        token,
        stored.version,
    )
    .map_err(|e| e.to_string())?;
    let tools = state
        .provider
        .list_tools(&ctx)
        .await
        .map_err(|e| format!("your server's tools/list failed: {e}"))?;
    let config = &stored.config;
    Ok(tools
        .iter()
        .map(|t| {
            let name = t.name.as_str();
            // V-1: the rule the save and the run time apply.
            let blocked = vetting::refusal(t, &config.action_policy.operations)
                .map(|why| format!("{why}: cannot be a consultation"));
            ToolChoice {
                name: name.to_owned(),
                description: t
                    .descriptor
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                allowed: blocked.is_none()
                    && config.allowed_tools.iter().any(|a| a.as_str() == name),
                blocked,
            }
        })
        .collect())
}

async fn mcp_page(State(state): State<AdminState>, session: Session, uri: Uri) -> Response {
    let q = query(&uri);
    let notice = match q.get("done").map(String::as_str) {
        Some("saved") => Some(t("Saved.")),
        Some("removed") => Some(t("The connector was removed; actions stopped.")),
        Some("approved") => Some(t(
            "Approved: the tool is offered again as your server lists it now.",
        )),
        _ => None,
    };
    render_mcp(
        &state,
        &session,
        None,
        Errors::new(),
        q.contains_key("tools"),
        notice,
        StatusCode::OK,
    )
    .await
}

/// The Tenant MCP page, with `form` (else the saved values) and `errors`.
async fn render_mcp(
    state: &AdminState,
    session: &Session,
    form: Option<McpForm>,
    mut errors: Errors,
    load_tools: bool,
    notice: Option<&str>,
    status: StatusCode,
) -> Response {
    let (stored, run) = match saved(state, &session.tenant).await {
        Ok(s) => s,
        Err(e) => return unavailable(&e),
    };
    let live = mcp::live_tools(state, &session.tenant, stored.as_ref()).await;
    let view = match mcp::view(state, &session.tenant, stored.as_ref(), live.as_deref()).await {
        Ok(v) => v,
        Err(e) => return unavailable(&e),
    };
    let tools = match (&stored, load_tools) {
        (Some(s), true) => match live_tools(state, &session.tenant, s).await {
            Ok(t) => Some(t),
            Err(why) => {
                errors.insert("allowedTools".into(), why);
                None
            }
        },
        _ => None,
    };
    let form = form.unwrap_or_else(|| form_of(stored.as_ref()));
    let certification = stored
        .as_ref()
        .zip(run.as_ref())
        .map(|(s, r)| (r, r.certifies(&CertifiedSubject::of(s))));
    let samples = stored.as_ref().map_or_else(
        || "{}".to_owned(),
        |s| samples::consultation_samples(&s.config),
    );
    let page = McpPage {
        session,
        view: &view,
        form: &form,
        errors: &errors,
        tools: tools.as_deref(),
        enable_blocked: enable_blocked(&view, stored.as_ref(), run.as_ref()),
        certification,
        notice,
        samples: &samples,
    };
    html(status, views::mcp(&page))
}

async fn mcp_save(State(state): State<AdminState>, Guarded { session, form }: Guarded) -> Response {
    let mut tools: Vec<String> = form.all("allowedTools").map(str::to_owned).collect();
    tools.extend(form.lines("allowedToolsText"));
    let operations: Vec<String> = form
        .get("operations")
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|o| !o.is_empty())
        .map(str::to_owned)
        .collect();
    let values = McpForm {
        server_url: form.get("serverUrl").unwrap_or("").trim().to_owned(),
        audience: form.get("audience").unwrap_or("").trim().to_owned(),
        allowed_tools: tools.clone(),
        operations: operations.join(", "),
        enabled: form.get("enabled") == Some("true"),
    };
    let (token, withheld) =
        match token_to_send(&state, &session, &values, form.get("serviceToken")).await {
            Ok(sent) => sent,
            Err(e) => return unavailable(&e),
        };
    let mut body = json!({
        "serverUrl": values.server_url,
        "serviceToken": token,
        "allowedTools": tools,
        "actionPolicy": {"contractVersion": 1, "enabled": values.enabled, "operations": operations},
    });
    if !values.audience.is_empty() {
        body["audience"] = json!(values.audience);
    }
    match mcp::put(&state, &session.tenant, &body).await {
        Ok(_) => see_other("/admin/mcp?done=saved"),
        Err(e @ AdminError::Unavailable { .. }) => unavailable(&e),
        Err(e) => {
            let status = match e {
                AdminError::Invalid { .. } | AdminError::NotConsultations(_) => {
                    StatusCode::BAD_REQUEST
                }
                AdminError::ProviderUnreachable(_) => StatusCode::UNPROCESSABLE_ENTITY,
                _ => StatusCode::CONFLICT,
            };
            let mut errors = errors_of(&e);
            if let Some(m) = errors.get_mut("serviceToken").filter(|_| withheld) {
                NEW_SERVER_NEEDS_TOKEN.clone_into(m);
            }
            render_mcp(&state, &session, Some(values), errors, false, None, status).await
        }
    }
}

/// Shown when the server URL changes and the token field is empty.
const NEW_SERVER_NEEDS_TOKEN: &str = "A new server URL needs its service token again: the saved token is never sent to another server.";

/// The token a save sends, and whether the saved one was withheld: the field's token, or,
/// when the field is left empty (it is write-only), the saved one — but only to the server
/// it was saved for. A new URL sends no token, so the API refuses the save as it refuses
/// any body without one (C-3), with every other error of the form.
async fn token_to_send(
    state: &AdminState,
    session: &Session,
    values: &McpForm,
    field: Option<&str>,
) -> Result<(String, bool), AdminError> {
    if let Some(t) = field.filter(|t| !t.is_empty()) {
        return Ok((t.to_owned(), false));
    }
    let Some(stored) = mcp::current(state, &session.tenant).await? else {
        return Ok((String::new(), false));
    };
    if stored.config.server_url.as_str() != values.server_url {
        return Ok((String::new(), true));
    }
    let kept = mcp::token_of(state, &session.tenant, Some(&stored)).await?;
    Ok((
        kept.map(|t| t.expose().to_owned()).unwrap_or_default(),
        false,
    ))
}

/// V-2: approves a changed tool's live descriptor (the button next to it).
async fn mcp_approve(
    State(state): State<AdminState>,
    Guarded { session, form }: Guarded,
) -> Response {
    let tool = form.get("tool").unwrap_or("").to_owned();
    match mcp::approve(&state, &session.tenant, &tool).await {
        Ok(_) => see_other("/admin/mcp?done=approved"),
        Err(e @ AdminError::Unavailable { .. }) => unavailable(&e),
        Err(e) => {
            let status = if matches!(e, AdminError::Conflict) {
                StatusCode::CONFLICT
            } else {
                StatusCode::BAD_REQUEST
            };
            render_mcp(&state, &session, None, errors_of(&e), false, None, status).await
        }
    }
}

async fn mcp_remove(State(state): State<AdminState>, Guarded { session, .. }: Guarded) -> Response {
    match mcp::delete(&state, &session.tenant).await {
        Ok(()) => see_other("/admin/mcp?done=removed"),
        Err(e @ AdminError::Unavailable { .. }) => unavailable(&e),
        Err(e) => {
            render_mcp(
                &state,
                &session,
                None,
                errors_of(&e),
                false,
                None,
                StatusCode::CONFLICT,
            )
            .await
        }
    }
}

async fn render_widgets(
    state: &AdminState,
    session: &Session,
    new_secret: Option<(&str, &str)>,
    errors: &Errors,
    notice: Option<&str>,
    status: StatusCode,
) -> Response {
    match crate::widgets::list(state, &session.tenant).await {
        Ok(keys) => html(
            status,
            views::widgets(session, &keys, new_secret, errors, notice),
        ),
        Err(e) => unavailable(&e),
    }
}

/// The credentials; after a creation (`?created=<keyId>`), its secret, once, from the
/// one-time cookie, which the answer clears.
async fn widgets_page(
    State(state): State<AdminState>,
    session: Session,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let created = query(&uri).get("created").cloned();
    let carried = session::new_secret(&state, &headers);
    let shown = match (&created, &carried) {
        (Some(id), Some((carried_id, secret))) if id == carried_id => {
            Some((id.as_str(), secret.as_str()))
        }
        _ => None,
    };
    let notice = (created.is_some() && shown.is_none()).then(|| {
        t("That credential's secret was shown once, right after it was created. If it was not stored, replace the credential.")
    });
    let mut res = render_widgets(
        &state,
        &session,
        shown,
        &Errors::new(),
        notice,
        StatusCode::OK,
    )
    .await;
    if carried.is_some() {
        res.headers_mut().append(
            header::SET_COOKIE,
            session::secret_cookie(&state, "", "", 0),
        );
    }
    res
}

/// After a credential was made: to its page, the secret carried once (post, redirect, get).
fn show_new_secret(
    state: &AdminState,
    key: &countersign_domain::ports::WidgetKey,
    secret: &str,
) -> Response {
    let mut res = see_other(&format!("/admin/widgets?created={}", key.id));
    res.headers_mut().insert(
        header::SET_COOKIE,
        session::secret_cookie(state, key.id.as_str(), secret, 60),
    );
    res
}

async fn widget_create(
    State(state): State<AdminState>,
    Guarded { session, form }: Guarded,
) -> Response {
    let origins = form.lines("origins");
    match crate::widgets::create(&state, &session.tenant, &origins).await {
        Ok((key, secret)) => show_new_secret(&state, &key, secret.expose()),
        Err(e @ AdminError::Unavailable { .. }) => unavailable(&e),
        Err(e) => {
            let mut errors = errors_of(&e);
            if let Some(m) = errors.remove("") {
                errors.insert("allowedOrigins".into(), m);
            }
            let errors = errors
                .into_iter()
                .map(|(f, m)| {
                    if f.starts_with("allowedOrigins") {
                        ("allowedOrigins".to_owned(), m)
                    } else {
                        (f, m)
                    }
                })
                .collect();
            render_widgets(
                &state,
                &session,
                None,
                &errors,
                None,
                StatusCode::BAD_REQUEST,
            )
            .await
        }
    }
}

/// The server-rendered step before a revocation (issue 28: not one click from the list).
async fn confirm_revoke(
    State(state): State<AdminState>,
    session: Session,
    Path(key_id): Path<String>,
) -> Response {
    widget_confirm(&state, &session, &key_id, "revoke").await
}

/// The server-rendered step before a replacement.
async fn confirm_replace(
    State(state): State<AdminState>,
    session: Session,
    Path(key_id): Path<String>,
) -> Response {
    widget_confirm(&state, &session, &key_id, "replace").await
}

/// What a revocation or replacement does, and the button that does it.
async fn widget_confirm(
    state: &AdminState,
    session: &Session,
    key_id: &str,
    what: &str,
) -> Response {
    let keys = match crate::widgets::list(state, &session.tenant).await {
        Ok(k) => k,
        Err(e) => return unavailable(&e),
    };
    let Some(key) = keys.iter().find(|k| k.id.as_str() == key_id) else {
        let errors = errors_of(&AdminError::NoSuchCredential);
        return render_widgets(state, session, None, &errors, None, StatusCode::NOT_FOUND).await;
    };
    html(StatusCode::OK, views::widget_confirm(session, key, what))
}

async fn widget_revoke(
    State(state): State<AdminState>,
    Path(key_id): Path<String>,
    Guarded { session, .. }: Guarded,
) -> Response {
    match crate::widgets::revoke(&state, &session.tenant, &key_id).await {
        Ok(()) => see_other("/admin/widgets"),
        Err(e @ AdminError::Unavailable { .. }) => unavailable(&e),
        Err(e) => {
            render_widgets(
                &state,
                &session,
                None,
                &errors_of(&e),
                None,
                StatusCode::NOT_FOUND,
            )
            .await
        }
    }
}

/// U-3 "replace" (decision 0047): a new credential with the same origins; the old one
/// keeps working for the grace period chosen on the confirmation step.
async fn widget_replace(
    State(state): State<AdminState>,
    Path(key_id): Path<String>,
    Guarded { session, form }: Guarded,
) -> Response {
    // An unreadable choice is refused rather than read as "at once".
    let grace = form
        .get("graceSeconds")
        .and_then(|g| g.parse::<i64>().ok())
        .unwrap_or(-1);
    match crate::widgets::replace(&state, &session.tenant, &key_id, grace).await {
        Ok((key, secret)) => show_new_secret(&state, &key, secret.expose()),
        Err(e @ AdminError::Unavailable { .. }) => unavailable(&e),
        Err(e) => {
            let status = match e {
                AdminError::NoSuchCredential => StatusCode::NOT_FOUND,
                AdminError::AlreadyReplaced(_) => StatusCode::CONFLICT,
                _ => StatusCode::BAD_REQUEST,
            };
            // The choice of grace period is not on the list page: its refusal is the form's.
            let errors: Errors = errors_of(&e)
                .into_iter()
                .map(|(field, m)| {
                    (
                        if field == "graceSeconds" {
                            String::new()
                        } else {
                            field
                        },
                        m,
                    )
                })
                .collect();
            render_widgets(&state, &session, None, &errors, None, status).await
        }
    }
}

/// The audit trail, newest first, 20 records a page; with filters, up to five pages of the
/// trail are read to fill one page of matches (the link goes on from where it stopped).
async fn audit_page(State(state): State<AdminState>, session: Session, uri: Uri) -> Response {
    let q = query(&uri);
    let mut cursor = q
        .get("cursor")
        .and_then(|c| AuditId::parse(c.as_str()).ok());
    let filters = audit_view::Filters {
        event: q.get("event").cloned().unwrap_or_default(),
        from: q.get("from").cloned().unwrap_or_default(),
        to: q.get("to").cloned().unwrap_or_default(),
    };
    let mut kept = Vec::new();
    for _ in 0..5 {
        let page = match state
            .stores
            .audit
            .list_audit(&session.tenant.id, cursor.as_ref(), 20)
            .await
        {
            Ok(page) => page,
            Err(e) => return unavailable(&store_down(e)),
        };
        kept.extend(page.items.into_iter().filter(|e| filters.keep(e)));
        cursor = page.next;
        if kept.len() >= 20 || cursor.is_none() || !filters.any() {
            break;
        }
    }
    let next = cursor.map(|c| format!("/admin/audit?cursor={c}&{}", filters.query()));
    // personal fields shown opened, or marked erased.
    for e in &mut kept {
        let keys = state.stores.subjects.as_ref();
        if let Some(opened) = crate::audit::opened(keys, &session.tenant.id, &e.changes).await {
            e.changes = opened;
        }
    }
    let items: Vec<_> = kept.iter().collect();
    html(
        StatusCode::OK,
        views::audit(&session, &items, next.as_deref(), &filters),
    )
}

async fn render_unsettled(
    state: &AdminState,
    session: &Session,
    errors: &Errors,
    notice: Option<&str>,
    status: StatusCode,
) -> Response {
    match crate::unsettled::list(state, &session.tenant).await {
        Ok(items) => html(status, views::unsettled(session, &items, errors, notice)),
        Err(e) => unavailable(&e),
    }
}

async fn unsettled_page(State(state): State<AdminState>, session: Session, uri: Uri) -> Response {
    let notice = query(&uri)
        .get("done")
        .map(|_| t("Recorded. The person was told, and the conversation is unblocked."));
    render_unsettled(&state, &session, &Errors::new(), notice, StatusCode::OK).await
}

async fn settle(State(state): State<AdminState>, Guarded { session, form }: Guarded) -> Response {
    use countersign_domain::ids::{ActionId, CaseId};
    let outcome = match form.get("outcome") {
        Some("completed") => crate::unsettled::Outcome::Completed,
        Some("failed") => crate::unsettled::Outcome::Failed,
        _ => {
            let errors = [(
                String::new(),
                t("Choose what your system shows.").to_owned(),
            )]
            .into();
            return render_unsettled(&state, &session, &errors, None, StatusCode::BAD_REQUEST)
                .await;
        }
    };
    let ids = CaseId::parse(form.get("caseId").unwrap_or(""))
        .ok()
        .zip(ActionId::parse(form.get("actionId").unwrap_or("")).ok());
    let Some((case, action)) = ids else {
        let errors = errors_of(&AdminError::NoSuchAction);
        return render_unsettled(&state, &session, &errors, None, StatusCode::NOT_FOUND).await;
    };
    let reason = form.get("reason").unwrap_or("");
    match crate::unsettled::settle(&state, &session.tenant, &case, &action, outcome, reason).await {
        Ok(_) => see_other("/admin/actions?done=1"),
        Err(e @ AdminError::Unavailable { .. }) => unavailable(&e),
        Err(e) => {
            let status = match e {
                AdminError::Invalid { .. } => StatusCode::BAD_REQUEST,
                AdminError::NoSuchAction => StatusCode::NOT_FOUND,
                _ => StatusCode::CONFLICT,
            };
            render_unsettled(&state, &session, &errors_of(&e), None, status).await
        }
    }
}

async fn settings_page(session: Session, uri: Uri) -> Response {
    let notice =
        (query(&uri).get("done").map(String::as_str) == Some("saved")).then(|| t("Saved."));
    html(
        StatusCode::OK,
        views::settings(&session, notice, &Errors::new()),
    )
}

/// The settings form, checked whole before anything is saved.
struct SettingsForm {
    language: countersign_domain::texts::Language,
    sign_in_url: Option<String>,
    retention: Option<countersign_domain::retention::RetentionDays>,
}

fn settings_form(
    form: &Form,
    policy: countersign_domain::config::UrlPolicy,
) -> Result<SettingsForm, Errors> {
    let field_error = |field: &str, text: String| -> Errors { [(field.to_owned(), text)].into() };
    let Some(language) = form
        .get("language")
        .and_then(countersign_domain::texts::Language::from_tag)
    else {
        return Err(field_error(
            "language",
            t("Choose English or Português (Brasil).").to_owned(),
        ));
    };
    //
    let sign_in_url =
        crate::tenants::parse_sign_in_url(form.get("signInUrl").unwrap_or(""), policy)
            .map_err(|m| field_error("signInUrl", format!("{}: {m}", t("Sign-in hand-off URL"))))?;
    // empty leaves it unset (or as it is).
    let retention = match form
        .get("retentionDays")
        .map(str::trim)
        .filter(|v| !v.is_empty())
    {
        None => None,
        Some(v) => Some(
            v.parse::<i64>()
                .ok()
                .and_then(|d| countersign_domain::retention::RetentionDays::new(d).ok())
                .ok_or_else(|| {
                    field_error(
                        "retentionDays",
                        t("Retention: a whole number of days from 1 to 3650.").to_owned(),
                    )
                })?,
        ),
    };
    Ok(SettingsForm {
        language,
        sign_in_url,
        retention,
    })
}

/// S-4, X-3, R-1: saves the tenant's settings, then redirects (a reload never posts again).
async fn settings_save(
    State(state): State<AdminState>,
    Guarded { session, form }: Guarded,
) -> Response {
    let settings = match settings_form(&form, state.url_policy) {
        Ok(s) => s,
        Err(errors) => {
            return html(
                StatusCode::BAD_REQUEST,
                views::settings(&session, None, &errors),
            );
        }
    };
    let tenant = &session.tenant;
    if let Err(e) = crate::tenants::set_language(&state, tenant, settings.language).await {
        return unavailable(&e);
    }
    let url = settings.sign_in_url.as_deref();
    if let Err(e) = crate::tenants::set_sign_in_url(&state, tenant, url).await {
        return unavailable(&e);
    }
    if let Some(days) = settings.retention
        && let Err(e) = crate::retention::set_retention_days(&state, tenant, days).await
    {
        return unavailable(&e);
    }
    see_other("/admin/settings?done=saved")
}

async fn retention_page(session: Session, uri: Uri) -> Response {
    let notice =
        (query(&uri).get("done").map(String::as_str) == Some("saved")).then(|| t("Saved."));
    html(
        StatusCode::OK,
        views::retention(&session, notice, &Errors::new(), None),
    )
}

/// places or lifts a hold, then redirects.
async fn hold_save(
    State(state): State<AdminState>,
    Guarded { session, form }: Guarded,
) -> Response {
    use countersign_domain::ids::{CaseId, UserId};
    use countersign_domain::retention::Hold;
    let id = form.get("id").unwrap_or("").trim();
    let hold = match form.get("kind") {
        Some("person") => UserId::parse(id).ok().map(Hold::Person),
        Some("conversation") => CaseId::parse(id).ok().map(Hold::Conversation),
        _ => None,
    };
    let Some(hold) = hold else {
        let errors: Errors = [(
            "id".to_owned(),
            t("Give a person's user id, or a conversation id (case_…).").to_owned(),
        )]
        .into();
        return html(
            StatusCode::BAD_REQUEST,
            views::retention(&session, None, &errors, None),
        );
    };
    let on = form.get("held") != Some("false");
    match crate::erasure::set_hold(&state, &session.tenant, &hold, on).await {
        Ok(()) => see_other("/admin/retention?done=saved"),
        Err(e) => unavailable(&e),
    }
}

/// R-2, N-3: queues a person's erasure, then shows its job (a page of its own, so a
/// reload reads the job and never asks again).
async fn erasure(State(state): State<AdminState>, Guarded { session, form }: Guarded) -> Response {
    use crate::erasure::ErasureError;
    let field = |text: &str| -> Errors { [("person".to_owned(), text.to_owned())].into() };
    let Ok(user) = countersign_domain::ids::UserId::parse(form.get("person").unwrap_or("").trim())
    else {
        let errors = field(t("Give the person's user id, as your site names them."));
        return html(
            StatusCode::BAD_REQUEST,
            views::retention(&session, None, &errors, None),
        );
    };
    match crate::erasure::request(&state, &session.tenant, &user).await {
        Ok(job) => see_other(&format!("/admin/erasure/{}", job.id)),
        Err(ErasureError::Held) => html(
            StatusCode::CONFLICT,
            views::retention(
                &session,
                None,
                &field(t(
                    "A legal hold is on this person; lift it before erasing them.",
                )),
                None,
            ),
        ),
        Err(ErasureError::Admin(e)) => unavailable(&e),
    }
}

/// N-3: an erasure job's page: where it stands, and once done its receipt.
async fn erasure_job(
    State(state): State<AdminState>,
    session: Session,
    Path(job_id): Path<String>,
) -> Response {
    match crate::erasure::status(&state, &session.tenant, &job_id).await {
        Ok(Some(job)) => html(
            StatusCode::OK,
            views::retention(&session, None, &Errors::new(), Some(&job)),
        ),
        Ok(None) => html(
            StatusCode::NOT_FOUND,
            views::retention(
                &session,
                None,
                &[(String::new(), t("No such erasure.").to_owned())].into(),
                None,
            ),
        ),
        Err(e) => unavailable(&e),
    }
}

async fn static_file(Path(file): Path<String>) -> Response {
    let (body, kind) = match file.as_str() {
        "panel.css" => (CSS, "text/css; charset=utf-8"),
        "panel.js" => (JS, "text/javascript; charset=utf-8"),
        "favicon.svg" => (ICON, "image/svg+xml"),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    let mut res = body.into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    res
}

/// The certification run started from the panel (H-1), served by the messages function.
async fn certification(
    State(state): State<AdminState>,
    Guarded { session, form }: Guarded,
) -> Response {
    let request = match certification_request(&form) {
        Ok(r) => r,
        Err(errors) => {
            return html(
                StatusCode::BAD_REQUEST,
                views::certification_result(&session, None, &errors),
            );
        }
    };
    match certify::run(&state, &session.tenant, &request).await {
        Ok(run) => {
            let current = match mcp::current(&state, &session.tenant).await {
                Ok(s) => s.is_some_and(|s| run.certifies(&CertifiedSubject::of(&s))),
                Err(e) => return unavailable(&e),
            };
            html(
                StatusCode::OK,
                views::certification_result(&session, Some((&run, current)), &Errors::new()),
            )
        }
        Err(e @ AdminError::Unavailable { .. }) => unavailable(&e),
        Err(e) => html(
            StatusCode::BAD_REQUEST,
            views::certification_result(&session, None, &errors_of(&e)),
        ),
    }
}

/// The run's request from the panel's form; errors by field.
fn certification_request(form: &Form) -> Result<CertifyRequest, Errors> {
    let mut errors = Errors::new();
    let test_user = UserId::parse(form.get("testUser").unwrap_or("").trim())
        .map_err(|e| errors.insert("testUser".into(), e.to_string()))
        .ok();
    let object = |field: &str, errors: &mut Errors| -> Option<Map<String, Value>> {
        let raw = form.get(field).unwrap_or("").trim();
        let raw = if raw.is_empty() { "{}" } else { raw };
        match serde_json::from_str::<Value>(raw) {
            Ok(Value::Object(m)) => Some(m),
            _ => {
                errors.insert(field.into(), "must be a JSON object".into());
                None
            }
        }
    };
    let samples = object("consultations", &mut errors);
    let mut consultations = std::collections::BTreeMap::new();
    for (tool, args) in samples.unwrap_or_default() {
        match (ToolName::parse(tool.as_str()), args) {
            (Ok(_), Value::Object(a)) => {
                consultations.insert(tool, a);
            }
            _ => {
                errors.insert(
                    format!("consultations.{tool}"),
                    "a tool name with a JSON object of arguments".into(),
                );
            }
        }
    }
    let mut actions = std::collections::BTreeMap::new();
    for (op, args) in object("actions", &mut errors).unwrap_or_default() {
        match (OperationName::parse(op.as_str()), args) {
            (Ok(_), Value::Object(a)) => {
                actions.insert(op, a);
            }
            _ => {
                errors.insert(
                    format!("actions.{op}"),
                    "an operation name with a JSON object of arguments".into(),
                );
            }
        }
    }
    let second = form.get("secondTestUser").unwrap_or("").trim();
    let second_user = if second.is_empty() {
        None
    } else {
        UserId::parse(second)
            .map_err(|e| errors.insert("secondTestUser".into(), e.to_string()))
            .ok()
    };
    let personal: Vec<String> = form
        .get("personalConsultations")
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect();
    match test_user {
        Some(test_user) if errors.is_empty() => Ok(CertifyRequest {
            test_user,
            second_user,
            personal,
            consultations,
            actions,
            consent: form.get("consent") == Some("yes"),
        }),
        _ => Err(errors),
    }
}
