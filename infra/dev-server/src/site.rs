//! The demo tenant site of the local run (issue 15): a fake TrackShare page on its own
//! origin (another port than the API's, so the widget works across origins as on a real
//! tenant's site, CORS included), with the widget open on it under a strict
//! Content-Security-Policy, and the "backend" route that mints a widget JWT for a demo
//! person, as a tenant's own backend would (docs/widget-guide.md). Local only: it signs
//! with the demo credential's secret.

use anyhow::Context as _;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use countersign_domain::ids::{TenantId, UserId, WidgetKeyId};
use countersign_domain::secret::SecretString;
use countersign_http::Query;
use serde::Deserialize;
use std::sync::{Arc, OnceLock};

const PAGE: &str = include_str!("../demo/index.html");
const SCRIPT: &str = include_str!("../demo/demo.js");
const STYLE: &str = include_str!("../demo/demo.css");

/// The demo people the page may mint tokens for (`?user=`).
const PEOPLE: [&str; 3] = ["u_alice", "u_bruno", "u_mallory"];

/// More demo people, comma-separated (local only): to try the widget as the people of
/// another tenant system — the bridged retail domain's customers, for instance
/// (docs/bridge.md, "Try it in the local stack").
const MORE_PEOPLE: &str = "COUNTERSIGN_DEMO_PEOPLE";

/// The demo credential, set once the tenant administrator's part has created it.
#[derive(Debug)]
pub(crate) struct Credential {
    /// The tenant.
    pub(crate) tenant: TenantId,
    /// The widget credential id.
    pub(crate) key_id: WidgetKeyId,
    /// Its secret.
    pub(crate) secret: SecretString,
}

/// Shared with the router: empty until the demo tenant is connected.
pub(crate) type Slot = Arc<OnceLock<Credential>>;

#[derive(Clone)]
struct Site {
    slot: Slot,
    /// The page for each published widget version (S-5: a site may pin an older one;
    /// `?widget=1.2.0`), with the API's origin and the widget's integrity filled in.
    pages: Arc<std::collections::BTreeMap<&'static str, String>>,
    /// Its policy: its own files, the widget from the API's origin, calls to the API;
    /// no inline script or style, no eval.
    csp: HeaderValue,
    /// The API's origin: the only place the sign-in hand-off returns people to.
    api: Arc<String>,
    /// Who the page may sign in: [`PEOPLE`] and [`MORE_PEOPLE`].
    people: Arc<Vec<UserId>>,
}

/// The site's routes (`/`, its script and style, `/token`), for the API at `api`.
pub(crate) fn router(slot: Slot, api: &str) -> anyhow::Result<Router> {
    let pages = countersign_chat::assets::VERSIONS
        .iter()
        .map(|(version, files)| {
            let html = PAGE
                .replace("{{API}}", api)
                .replace("{{VERSION}}", version)
                .replace(
                    "{{INTEGRITY}}",
                    &countersign_chat::assets::integrity(files[0].1),
                );
            (*version, html)
        })
        .collect();
    let csp = format!(
        "default-src 'none'; script-src 'self' {api}; style-src 'self'; connect-src 'self' {api}; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    );
    let more = std::env::var(MORE_PEOPLE).unwrap_or_default();
    let people = PEOPLE
        .into_iter()
        .chain(more.split(',').map(str::trim).filter(|p| !p.is_empty()))
        .map(|p| UserId::parse(p).with_context(|| format!("{MORE_PEOPLE}: `{p}`")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let site = Site {
        slot,
        pages: Arc::new(pages),
        csp: HeaderValue::from_str(&csp)?,
        api: Arc::new(api.to_owned()),
        people: Arc::new(people),
    };
    Ok(Router::new()
        .route("/", get(page))
        .route(
            "/demo.js",
            get(|| file(SCRIPT, "text/javascript; charset=utf-8")),
        )
        .route("/demo.css", get(|| file(STYLE, "text/css; charset=utf-8")))
        .route("/token", get(token))
        .route("/sign-in", get(sign_in))
        // Browsers ask for one; a 404 would be a console error on every page.
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .with_state(site))
}

/// `?widget=`: the widget version the page pins (the current one by default).
#[derive(Deserialize)]
struct Pinned {
    widget: Option<String>,
}

async fn page(State(site): State<Site>, Query(pinned): Query<Pinned>) -> Response {
    let version = pinned
        .widget
        .unwrap_or_else(|| countersign_chat::assets::WIDGET_VERSION.to_owned());
    let Some(html) = site.pages.get(version.as_str()) else {
        return (StatusCode::NOT_FOUND, "no such widget version").into_response();
    };
    let mut r = (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        html.clone(),
    )
        .into_response();
    r.headers_mut()
        .insert(header::CONTENT_SECURITY_POLICY, site.csp);
    r
}

async fn file(body: &'static str, kind: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

#[derive(Debug, Deserialize)]
struct SignInQuery {
    return_to: Option<String>,
    nonce: Option<String>,
    user: Option<String>,
    /// F-2: `enrol` when the page asks for a fresh sign-in to enrol a passkey.
    purpose: Option<String>,
}

/// The cookie a test browser sets to be signed in as another demo person (the page's
/// Sign in reaches here by a redirect, whose URL a test cannot change).
const DEMO_USER_COOKIE: &str = "countersign-demo-user";

/// the demo tenant's sign-in hand-off (docs/widget-guide.md, “Confirmation page”).
/// A real tenant signs the person in first; the demo person is signed in already (`user=`,
/// or the `countersign-demo-user` cookie, picks another demo person). Back to the
/// confirmation page, and only there, with a widget token carrying the page's nonce, valid
/// 2 minutes, in a form post (N-6).
async fn sign_in(
    State(site): State<Site>,
    Query(q): Query<SignInQuery>,
    headers: axum::http::HeaderMap,
) -> Response {
    let c = match connected(&site) {
        Ok(c) => c,
        Err(r) => return r.into_response(),
    };
    let (Some(return_to), Some(nonce)) = (q.return_to, q.nonce) else {
        return (StatusCode::BAD_REQUEST, "return_to and nonce are required").into_response();
    };
    // Never an open redirect: only back to the platform's confirmation pages (reached at
    // 127.0.0.1, or at localhost where the passkey ceremonies run).
    let on_platform = [
        site.api.to_string(),
        site.api.replace("//127.0.0.1:", "//localhost:"),
    ]
    .iter()
    .any(|api| return_to.starts_with(&format!("{api}/confirm/")));
    if !on_platform || return_to.contains('?') {
        return (
            StatusCode::BAD_REQUEST,
            "return_to is not a confirmation page",
        )
            .into_response();
    }
    let chosen = q
        .user
        .or_else(|| countersign_http::pages::cookie(&headers, DEMO_USER_COOKIE));
    let user = match demo_person(&site, chosen.as_deref()) {
        Ok(u) => u,
        Err(r) => return r.into_response(),
    };
    let now = unix_now();
    let who = countersign_domain::conversation::Principal {
        tenant: c.tenant.clone(),
        user,
    };
    // F-2: a real tenant signs the person in afresh for `enrol`; the demo person is.
    let purpose = q.purpose.filter(|p| p == "enrol");
    match countersign_chat::widget::sign_hand_off_for(
        &c.secret,
        &c.key_id,
        &who,
        &nonce,
        purpose.as_deref(),
        now,
        now + 120,
    ) {
        // N-6: the token goes back by a form post (never in a URL), as a real tenant's
        // sign-in must send it (docs/widget-guide.md, "Confirmation page").
        Ok(jwt) => (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (header::CACHE_CONTROL, "no-store"),
                (header::REFERRER_POLICY, "no-referrer"),
            ],
            form_post(&return_to, &jwt),
        )
            .into_response(),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "could not sign").into_response(),
    }
}

/// A page that posts `token` to `to` at once (and offers a button without script).
fn form_post(to: &str, token: &str) -> String {
    let esc = |v: &str| {
        v.replace('&', "&amp;")
            .replace('"', "&quot;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Signing you in</title></head>\
         <body><form method=\"post\" action=\"{}\"><input type=\"hidden\" name=\"token\" value=\"{}\">\
         <noscript><button type=\"submit\">Continue</button></noscript></form>\
         <script>document.forms[0].submit()</script></body></html>",
        esc(to),
        esc(token)
    )
}

/// The demo credential, once the tenant administrator's part has created it.
fn connected(site: &Site) -> Result<&Credential, Refusal> {
    site.slot.get().ok_or((
        StatusCode::SERVICE_UNAVAILABLE,
        "the demo tenant is not connected yet",
    ))
}

/// Why the demo site refused.
type Refusal = (StatusCode, &'static str);

/// The demo person `user` names (the first one by default); no one else.
fn demo_person(site: &Site, user: Option<&str>) -> Result<UserId, Refusal> {
    let user = user.unwrap_or(PEOPLE[0]);
    site.people
        .iter()
        .find(|p| p.as_str() == user)
        .cloned()
        .ok_or((StatusCode::BAD_REQUEST, "not a demo person"))
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or_default())
}

#[derive(Debug, Deserialize)]
struct TokenQuery {
    user: Option<String>,
    expired: Option<String>,
}

/// A widget JWT for a demo person, valid 10 minutes; `expired=1` gives one that expired
/// two minutes ago (the widget must then ask for another).
async fn token(State(site): State<Site>, Query(q): Query<TokenQuery>) -> Response {
    let c = match connected(&site) {
        Ok(c) => c,
        Err(r) => return r.into_response(),
    };
    let user = match demo_person(&site, q.user.as_deref()) {
        Ok(u) => u,
        Err(r) => return r.into_response(),
    };
    let now = unix_now();
    let (iat, exp) = if q.expired.as_deref() == Some("1") {
        (now - 720, now - 120)
    } else {
        (now, now + 600)
    };
    match countersign_chat::widget::sign_token(&c.secret, &c.key_id, &c.tenant, &user, iat, exp) {
        Ok(jwt) => ([(header::CACHE_CONTROL, "no-store")], jwt).into_response(),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "could not sign").into_response(),
    }
}
