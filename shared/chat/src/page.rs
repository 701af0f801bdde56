//! the confirmation page — the third front door of the chat's confirm use case (after
//! the widget API), for a write an MCP client prepared through the gateway (decision 0051).
//!
//! - `GET /confirm/{id}`: the URL carries only the link's random id. A person not signed
//!   in sees a Sign in button.
//! - `POST /confirm/{id}/sign-in` (N-6): pressing it makes a fresh nonce, kept in a cookie
//!   of this browser, and sends the person to the tenant's sign-in hand-off
//!   (`signInUrl?return_to=…&nonce=…`).
//! - `POST /confirm/{id}/return` (N-6): the tenant's sign-in posts back a form with
//!   `token`, a widget-style token (the same claims, signed with its widget secret, plus
//!   the nonce) — never in a URL. The token's nonce is spent server-side on its first
//!   presentation, whatever follows; it must equal this browser's nonce cookie and name
//!   the link's person. Only then the page opens a session of its own: a random id in a
//!   cookie, recorded under a digest bound to this link. Then 303 to the clean page URL.
//!   (The old `GET …/return?token=…` opens nothing: 303 to the clean URL.)
//! - `POST /confirm/{id}`: `confirm` or `cancel`, with the session's form token (keyed by
//!   the session's secret id and bound to the link) and from the page's own origin
//!   (`Origin`, or `Sec-Fetch-Site: same-origin`), posted as the person's message
//!   replying to the presentation: the proof and the execution are exactly the chat's
//!   (A-23 … A-35). Then 303 back to the page, which shows the outcome.
//!
//! Server-rendered, no script at all, a strict Content-Security-Policy; cookies HttpOnly,
//! scoped to the link's path, and Secure outside the local stack; the session SameSite=Lax,
//! the nonce SameSite=None outside the local stack (the tenant's form post back is a
//! cross-site POST, which a Lax cookie does not follow).

use crate::service::{Chat, ChatError};
use crate::widget::{AuthError, WidgetAuth};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_domain::conversation::Principal;
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ports::{
    Clock, ConfirmationLink, ConfirmationLinks, Conversations, Tenants,
};
use countersign_domain::proposal::ProposalState;
use countersign_domain::texts::Language;
use countersign_http::pages;
use countersign_tools::confirmation::{self, Standing};
use maud::{DOCTYPE, Markup, html};
use rand::RngCore as _;
use std::sync::Arc;
use subtle::ConstantTimeEq as _;

mod decide;
mod show;
mod sign_in;
mod stepup;
mod words;

use decide::*;
use show::*;
use sign_in::*;
use words::*;

/// Every route (method, path) the page serves: the SAM template is checked against it.
pub const ROUTES: [(&str, &str); 14] = [
    ("GET", "/confirm/{id}"),
    ("POST", "/confirm/{id}"),
    ("POST", "/confirm/{id}/sign-in"),
    ("GET", "/confirm/{id}/return"),
    ("POST", "/confirm/{id}/return"),
    ("POST", "/confirm/{id}/challenge"),
    ("POST", "/confirm/{id}/enrol-challenge"),
    ("POST", "/confirm/{id}/enrol"),
    ("POST", "/confirm/{id}/passkeys/remove"),
    ("POST", "/confirm/{id}/add-challenge"),
    ("POST", "/confirm/{id}/add"),
    ("GET", STYLE_PATH),
    ("GET", ICON_PATH),
    ("GET", stepup::SCRIPT_PATH),
];

/// The page's stylesheet.
pub const STYLE_PATH: &str = "/confirm-page.css";

/// The page's icon: without one, the browser asks for `/favicon.ico`, which no route
/// serves (a 401 and a console error on every page).
pub const ICON_PATH: &str = "/confirm-page.svg";

/// no frame, forms only to itself; F-3: one script of its own (the passkey
/// ceremonies, which only a script can run), which may fetch only from the page's origin.
pub const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; \
    script-src 'self'; connect-src 'self'; \
    form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const CSS: &str = include_str!("page.css");
const ICON: &str = include_str!("page-icon.svg");
const NONCE_COOKIE: &str = "countersign-confirm-nonce";
const PERSON_COOKIE: &str = "countersign-confirm";
/// N-6: how long a page session lives (a link lives at most 5 minutes).
const SESSION_SECONDS: i64 = 600;

/// What the page needs.
#[derive(Clone)]
pub struct PageState {
    /// The confirm use case.
    pub chat: Arc<Chat>,
    /// Verifies the sign-in hand-off token.
    pub auth: Arc<WidgetAuth>,
    /// The links.
    pub links: Arc<dyn ConfirmationLinks>,
    /// The tenants (their sign-in URL and name).
    pub tenants: Arc<dyn Tenants>,
    /// The conversations (where a proposal stands).
    pub conversations: Arc<dyn Conversations>,
    /// Time.
    pub clock: Arc<dyn Clock>,
    /// The local stack (plain http on loopback): the one case where cookies are not
    /// `Secure`.
    pub local: bool,
}

countersign_domain::debug_showing!(PageState {});

/// The page's router.
pub fn router(state: PageState) -> Router {
    Router::new()
        .route("/confirm/{id}", get(show).post(decide))
        .route("/confirm/{id}/sign-in", post(begin_sign_in))
        .route("/confirm/{id}/return", get(old_return).post(signed_in))
        .route("/confirm/{id}/challenge", post(stepup::challenge))
        .route(
            "/confirm/{id}/enrol-challenge",
            post(stepup::enrol_challenge),
        )
        .route("/confirm/{id}/enrol", post(stepup::enrol))
        .route("/confirm/{id}/passkeys/remove", post(stepup::remove))
        .route("/confirm/{id}/add-challenge", post(stepup::add_challenge))
        .route("/confirm/{id}/add", post(stepup::add))
        .route(
            stepup::SCRIPT_PATH,
            get(|| async { asset(stepup::SCRIPT, "text/javascript; charset=utf-8") }),
        )
        .route(
            STYLE_PATH,
            get(|| async { asset(CSS, "text/css; charset=utf-8") }),
        )
        .route(ICON_PATH, get(|| async { asset(ICON, "image/svg+xml") }))
        .with_state(state)
}

/// A page with the security headers.
fn page(status: StatusCode, lang: Language, body: Markup) -> Response {
    branded(status, lang, None, body)
}

/// A page that names the company asking (issue 50: a person who follows a link must see
/// who asks before they sign in or confirm), with the security headers.
/// `company`: the tenant, whose name heads the page and whose accent (issue 50) the page's
/// script applies (the CSP allows no inline style, and a script's CSSOM write is not one).
fn branded(
    status: StatusCode,
    lang: Language,
    company: Option<&countersign_domain::ports::Tenant>,
    body: Markup,
) -> Response {
    let t = texts(lang);
    let accent = company.and_then(|c| c.appearance.accent.as_deref());
    let heading = html! {
        @if let Some(company) = company {
            span id="company" { (company.name) } " " (t.asks)
        } @else {
            (t.title)
        }
    };
    let markup = html! {
        (DOCTYPE)
        html lang=(lang.tag()) data-accent=[accent] {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="same-origin";
                title { (heading.clone()) }
                link rel="stylesheet" href=(STYLE_PATH);
                link rel="icon" type="image/svg+xml" href=(ICON_PATH);
            }
            body {
                main { h1 { (heading) } (body) }
                @if company.is_some() { script src=(stepup::SCRIPT_PATH) {} }
            }
        }
    };
    countersign_http::pages::html(status, markup.into_string(), CSP)
}

fn secure_headers(h: &mut HeaderMap) {
    countersign_http::pages::secure_headers(h, CSP);
}

fn notice(status: StatusCode, lang: Language, text: &str) -> Response {
    page(
        status,
        lang,
        html! { p class="notice" role="alert" { (text) } },
    )
}

fn not_found() -> Response {
    notice(StatusCode::NOT_FOUND, Language::En, EN.not_found)
}

fn unavailable(e: &dyn std::fmt::Display) -> Response {
    tracing::warn!(error = %e, "confirmation page: a platform service failed");
    notice(
        StatusCode::SERVICE_UNAVAILABLE,
        Language::En,
        EN.unavailable,
    )
}

/// A static asset of the page (cached for an hour).
fn asset(body: &'static str, content_type: &'static str) -> Response {
    countersign_http::pages::asset(body, content_type, "max-age=3600")
}

fn set_cookie(
    state: &PageState,
    headers: &HeaderMap,
    id: &str,
    name: &str,
    value: &str,
    max_age: i64,
) -> HeaderValue {
    // Secure outside the local stack, and on it where the page is reached at `localhost`
    // (which browsers treat as secure: where the passkey ceremonies run, while the demo
    // site is on 127.0.0.1).
    let secure_context = !state.local || reached_at_localhost(headers);
    // N-6: the nonce must follow the tenant's cross-site form post back (SameSite=None,
    // which browsers take only with Secure); on plain local http the sign-in is same-site.
    let same_site = if name == NONCE_COOKIE && secure_context {
        "None"
    } else {
        "Lax"
    };
    let secure = if secure_context { "; Secure" } else { "" };
    let v = format!(
        "{name}={value}; Path=/confirm/{id}; Max-Age={max_age}; HttpOnly; SameSite={same_site}{secure}"
    );
    HeaderValue::from_str(&v).unwrap_or_else(|_| HeaderValue::from_static("x=; Max-Age=0"))
}

/// Whether the request reached the page at `localhost` (the local stack's passkey origin).
fn reached_at_localhost(headers: &HeaderMap) -> bool {
    headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|h| h == "localhost" || h.starts_with("localhost:"))
}

/// The origin a request reached (`http` only on loopback); none without a readable `Host`.
fn origin_of(headers: &HeaderMap) -> Option<String> {
    headers.get(header::HOST)?.to_str().ok()?;
    Some(countersign_http::pages::origin_of(headers))
}

/// The link a request's path names (`/confirm/{id}…`), read before anything else: a
/// malformed or unknown id is the page's 404, a store failure its 503. Every handler of a
/// link takes it, so none repeats the read.
pub(super) struct Linked {
    /// The link's id (the path's, the page's secret).
    pub(super) id: String,
    /// The link.
    pub(super) link: ConfirmationLink,
}

impl FromRequestParts<PageState> for Linked {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &PageState) -> Result<Self, Response> {
        let Path(id) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| not_found())?;
        let link = link(state, &id).await?;
        Ok(Self { id, link })
    }
}

/// The link `id` opens, if it is one (malformed ids are refused before any read).
async fn link(state: &PageState, id: &str) -> Result<ConfirmationLink, Response> {
    if !confirmation::well_formed(id) {
        return Err(not_found());
    }
    state
        .links
        .get_link(&confirmation::id_hash(id))
        .await
        .map_err(|e| unavailable(&e))?
        .ok_or_else(not_found)
}

/// N-6: the key a page session is recorded under: bound to the link (a session opened
/// for one link opens no other) and to the session's random id (only in the cookie).
fn session_key(id: &str, session: &str) -> Sha256Hex {
    Sha256Hex::digest(format!("countersign-page-session\0{id}\0{session}").as_bytes())
}

/// Who the page's session cookie names: the link's person, while a session the page itself
/// opened for this link lives. Never a token: a widget or hand-off token in the cookie is
/// just an unknown session id.
async fn person(
    state: &PageState,
    id: &str,
    link: &ConfirmationLink,
    headers: &HeaderMap,
) -> Result<Option<(Principal, String)>, Response> {
    let Some(session) = pages::cookie(headers, PERSON_COOKIE).filter(|s| well_formed_session(s))
    else {
        return Ok(None);
    };
    let until = state
        .links
        .page_session(&session_key(id, &session))
        .await
        .map_err(|e| unavailable(&e))?;
    Ok(until.filter(|until| state.clock.now() < *until).map(|_| {
        (
            Principal {
                tenant: link.tenant.clone(),
                user: link.user.clone(),
            },
            session,
        )
    }))
}

/// A session id's shape (32 random bytes, base64url): anything else is refused before any
/// read.
fn well_formed_session(s: &str) -> bool {
    s.len() == 43
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn random_id() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// N-6: the form token of a session: keyed by the session's secret id (which only the
/// person's browser holds) and bound to the link, never stored.
fn form_token(id: &str, session: &str) -> String {
    URL_SAFE_NO_PAD.encode(
        Sha256Hex::digest(format!("countersign-confirm-form\0{session}\0{id}").as_bytes()).as_str(),
    )
}

fn owns(link: &ConfirmationLink, who: &Principal) -> bool {
    who.tenant == link.tenant && who.user == link.user
}

/// The language of the link's conversation.
async fn language(state: &PageState, link: &ConfirmationLink) -> Result<Language, Response> {
    match state.conversations.load(&link.tenant, &link.case).await {
        Ok(Some(v)) => Ok(v.language),
        Ok(None) => Err(not_found()),
        Err(e) => Err(unavailable(&e)),
    }
}

/// A 303 to `location`, with the page's headers.
fn see_other(location: String) -> Response {
    let mut res = (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response();
    secure_headers(res.headers_mut());
    res
}

/// A 303 to the page's own clean URL.
fn back_to_page(id: &str) -> Response {
    see_other(format!("/confirm/{id}"))
}

fn form_value(body: &[u8], name: &str) -> Option<String> {
    url::form_urlencoded::parse(body)
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}
