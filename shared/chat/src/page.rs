//! the confirmation page — the third front door of the chat's confirm use case (after
//! the widget API), for a write an MCP client prepared through the gateway (decision 0051).
//!
//! - `GET /confirm/{id}`: the URL carries only the link's random id. A person not signed
//!   in is sent to the tenant's sign-in hand-off (`signInUrl?return_to=…&nonce=…`) with a
//!   fresh nonce in a cookie; the tenant's backend sends them back to
//!   `GET /confirm/{id}/return?token=…` with a widget-style token (the same claims, signed
//!   with its widget secret, plus the nonce), which becomes the page's session cookie and
//!   leaves the URL at once (303). The page serves only the gateway token's person (`sub`
//!   and tenant equal): it shows the operation, the summary byte for byte, the expiry and
//!   the instructions.
//! - `POST /confirm/{id}`: `confirm` or `cancel`, with the form token and from the page's
//!   own origin, posted as the person's message replying to the presentation: the proof
//!   and the execution are exactly the chat's (A-23 … A-35). Then 303 back to the page,
//!   which shows the outcome.
//!
//! Server-rendered, no script at all, a strict Content-Security-Policy; cookies HttpOnly,
//! SameSite=Lax (the return from the tenant's sign-in is a cross-site navigation), scoped
//! to the link's path, and Secure outside the local stack.

use crate::chat::{Chat, ChatError};
use crate::widget::{AuthError, WidgetAuth};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_domain::conversation::Principal;
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ports::{
    Clock, ConfirmationLink, ConfirmationLinks, Conversations, Tenants,
};
use countersign_domain::proposal::ProposalState;
use countersign_domain::texts::Language;
use countersign_http::{Query, pages};
use countersign_tools::confirmation::{self, Standing};
use maud::{DOCTYPE, Markup, html};
use rand::RngCore as _;
use std::sync::Arc;
use subtle::ConstantTimeEq as _;

/// Every route (method, path) the page serves: the SAM template is checked against it.
pub const ROUTES: [(&str, &str); 5] = [
    ("GET", "/confirm/{id}"),
    ("POST", "/confirm/{id}"),
    ("GET", "/confirm/{id}/return"),
    ("GET", STYLE_PATH),
    ("GET", ICON_PATH),
];

/// The page's stylesheet.
pub const STYLE_PATH: &str = "/confirm-page.css";

/// The page's icon: without one, the browser asks for `/favicon.ico`, which no route
/// serves (a 401 and a console error on every page).
pub const ICON_PATH: &str = "/confirm-page.svg";

/// no script, no frame, forms only to itself.
pub const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; \
    form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const CSS: &str = include_str!("page.css");
const ICON: &str = include_str!("page-icon.svg");
const NONCE_COOKIE: &str = "countersign-confirm-nonce";
const PERSON_COOKIE: &str = "countersign-confirm";

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

impl std::fmt::Debug for PageState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageState").finish_non_exhaustive()
    }
}

/// The page's router.
pub fn router(state: PageState) -> Router {
    Router::new()
        .route("/confirm/{id}", get(show).post(decide))
        .route("/confirm/{id}/return", get(signed_in))
        .route(
            STYLE_PATH,
            get(|| async { asset(CSS, "text/css; charset=utf-8") }),
        )
        .route(ICON_PATH, get(|| async { asset(ICON, "image/svg+xml") }))
        .with_state(state)
}

/// The page's fixed texts in the case's language.
struct Texts {
    title: &'static str,
    not_found: &'static str,
    expired: &'static str,
    sign_in: &'static str,
    sign_in_button: &'static str,
    no_sign_in: &'static str,
    someone_else: &'static str,
    operation: &'static str,
    expires: &'static str,
    instructions: &'static str,
    confirm: &'static str,
    cancel: &'static str,
    refused: &'static str,
    unavailable: &'static str,
    already: &'static str,
}

const EN: Texts = Texts {
    title: "Confirm a change",
    not_found: "This confirmation link is not valid.",
    expired: "This request has expired. Nothing was done.",
    sign_in: "Sign in to see the change you were asked to confirm.",
    sign_in_button: "Sign in",
    no_sign_in: "This company has not set up sign-in for confirmation pages. Confirm in the support chat instead.",
    someone_else: "This confirmation is for someone else. Nothing was done.",
    operation: "Operation",
    expires: "Expires",
    instructions: "Read the change below. Press Confirm to carry out exactly this change, or Cancel. Nothing changes until you press Confirm; an assistant cannot press it for you.",
    confirm: "Confirm",
    cancel: "Cancel",
    refused: "This request could not be accepted. Reload the page and try again.",
    unavailable: "The service is unavailable. Try again in a moment.",
    already: "This change was already answered.",
};

const PT: Texts = Texts {
    title: "Confirmar uma alteração",
    not_found: "Este link de confirmação não é válido.",
    expired: "Este pedido expirou. Nada foi feito.",
    sign_in: "Entre para ver a alteração que pediram que você confirme.",
    sign_in_button: "Entrar",
    no_sign_in: "Esta empresa não configurou a entrada para páginas de confirmação. Confirme no chat de suporte.",
    someone_else: "Esta confirmação é de outra pessoa. Nada foi feito.",
    operation: "Operação",
    expires: "Expira em",
    instructions: "Leia a alteração abaixo. Pressione Confirmar para realizar exatamente esta alteração, ou Cancelar. Nada muda até você pressionar Confirmar; um assistente não pode pressionar por você.",
    confirm: "Confirmar",
    cancel: "Cancelar",
    refused: "Este pedido não pôde ser aceito. Recarregue a página e tente novamente.",
    unavailable: "O serviço está indisponível. Tente novamente em instantes.",
    already: "Esta alteração já foi respondida.",
};

fn texts(lang: Language) -> &'static Texts {
    match lang {
        Language::Pt => &PT,
        Language::En => &EN,
    }
}

fn state_text(lang: Language, state: ProposalState) -> &'static str {
    use ProposalState as S;
    match (lang, state) {
        (Language::En, S::PendingConfirmation) => "Waiting for your answer.",
        (Language::En, S::Executing) => "Being carried out…",
        (Language::En, S::Completed) => "Done.",
        (Language::En, S::Failed) => "It could not be done.",
        (Language::En, S::Conflict) => "It was not done: something changed in the meantime.",
        (Language::En, S::Expired) => "It expired. Nothing was done.",
        (Language::En, S::Cancelled) => "Cancelled. Nothing was done.",
        (Language::En, S::Unknown) => "The outcome is being checked.",
        (Language::En, S::Superseded) => "It was replaced by a newer request. Nothing was done.",
        (Language::Pt, S::PendingConfirmation) => "Aguardando a sua resposta.",
        (Language::Pt, S::Executing) => "Sendo realizada…",
        (Language::Pt, S::Completed) => "Feito.",
        (Language::Pt, S::Failed) => "Não foi possível realizar.",
        (Language::Pt, S::Conflict) => "Não foi feito: algo mudou nesse meio-tempo.",
        (Language::Pt, S::Expired) => "Expirou. Nada foi feito.",
        (Language::Pt, S::Cancelled) => "Cancelada. Nada foi feito.",
        (Language::Pt, S::Unknown) => "O resultado está sendo verificado.",
        (Language::Pt, S::Superseded) => "Foi substituída por um pedido mais novo. Nada foi feito.",
    }
}

/// A page with the security headers.
fn page(status: StatusCode, lang: Language, body: Markup) -> Response {
    let t = texts(lang);
    let markup = html! {
        (DOCTYPE)
        html lang=(lang.tag()) {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="same-origin";
                title { (t.title) }
                link rel="stylesheet" href=(STYLE_PATH);
                link rel="icon" type="image/svg+xml" href=(ICON_PATH);
            }
            body { main { h1 { (t.title) } (body) } }
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
    let mut res = body.into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("max-age=3600"),
    );
    res
}

fn set_cookie(state: &PageState, id: &str, name: &str, value: &str, max_age: i64) -> HeaderValue {
    let secure = if state.local { "" } else { "; Secure" };
    let v = format!(
        "{name}={value}; Path=/confirm/{id}; Max-Age={max_age}; HttpOnly; SameSite=Lax{secure}"
    );
    HeaderValue::from_str(&v).unwrap_or_else(|_| HeaderValue::from_static("x=; Max-Age=0"))
}

/// The origin a request reached (`http` only on loopback).
fn origin_of(headers: &HeaderMap) -> Option<String> {
    let host = headers.get(header::HOST)?.to_str().ok()?;
    let name = host.rsplit_once(':').map_or(host, |(name, _)| name);
    let loopback = matches!(name, "127.0.0.1" | "localhost" | "[::1]");
    Some(format!(
        "{}://{host}",
        if loopback { "http" } else { "https" }
    ))
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

/// Who the page's session cookie names, if anyone valid.
async fn person(state: &PageState, headers: &HeaderMap) -> Option<(Principal, String)> {
    let token = pages::cookie(headers, PERSON_COOKIE)?;
    match state.auth.authenticate(&token).await {
        Ok(p) => Some((p, token)),
        Err(_) => None,
    }
}

/// The form token of a session (derived from its cookie, never stored).
fn form_token(session: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256Hex::digest(format!("confirm-form:{session}").as_bytes()).as_str())
}

fn owns(link: &ConfirmationLink, who: &Principal) -> bool {
    who.tenant == link.tenant && who.user == link.user
}

#[derive(serde::Deserialize)]
struct Return {
    token: Option<String>,
}

/// `GET /confirm/{id}`.
async fn show(
    State(state): State<PageState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let link = match link(&state, &id).await {
        Ok(l) => l,
        Err(r) => return r,
    };
    let lang = match state.conversations.load(&link.tenant, &link.case).await {
        Ok(Some(v)) => v.language,
        Ok(None) => return not_found(),
        Err(e) => return unavailable(&e),
    };
    let t = texts(lang);
    let Some((who, session)) = person(&state, &headers).await else {
        if state.clock.now() >= link.expires_at {
            return notice(StatusCode::GONE, lang, t.expired);
        }
        return sign_in(&state, &id, &link, lang, &headers).await;
    };
    if !owns(&link, &who) {
        return notice(StatusCode::FORBIDDEN, lang, t.someone_else);
    }
    let standing = match confirmation::standing(
        state.conversations.as_ref(),
        &link,
        state.clock.now(),
    )
    .await
    {
        Ok(Some(s)) => s,
        Ok(None) => return not_found(),
        Err(e) => return unavailable(&e),
    };
    let summary = match confirmation::summary(state.conversations.as_ref(), &link).await {
        Ok(s) => s.unwrap_or_default(),
        Err(e) => return unavailable(&e),
    };
    let status = if standing.state == ProposalState::Expired {
        StatusCode::GONE
    } else {
        StatusCode::OK
    };
    page(
        status,
        lang,
        proposal_view(lang, &id, &link, &summary, &standing, &session),
    )
}

fn proposal_view(
    lang: Language,
    id: &str,
    link: &ConfirmationLink,
    summary: &str,
    standing: &Standing,
    session: &str,
) -> Markup {
    let t = texts(lang);
    let pending = standing.state == ProposalState::PendingConfirmation;
    html! {
        dl {
            dt { (t.operation) } dd { code id="operation" { (link.operation.as_str()) } }
            dt { (t.expires) } dd { time id="expires" datetime=(standing.expires_at.to_rfc3339()) { (standing.expires_at.to_rfc3339()) } }
        }
        pre id="summary" class="summary" { (summary) }
        p id="state" class={"state " (standing.state.as_str())} data-state=(standing.state.as_str()) {
            (state_text(lang, standing.state))
        }
        @if let Some(result) = &standing.result {
            pre id="result" class="result" { (result) }
        }
        @if pending {
            p id="instructions" class="instructions" { (t.instructions) }
            form method="post" action={"/confirm/" (id)} {
                input type="hidden" name="csrf" value=(form_token(session));
                button type="submit" name="decision" value="confirm" class="confirm" { (t.confirm) }
                " "
                button type="submit" name="decision" value="cancel" class="cancel" { (t.cancel) }
            }
        }
    }
}

/// The sign-in step: a fresh nonce in a cookie, and the way to the tenant's sign-in.
async fn sign_in(
    state: &PageState,
    id: &str,
    link: &ConfirmationLink,
    lang: Language,
    headers: &HeaderMap,
) -> Response {
    let t = texts(lang);
    let tenant = match state.tenants.get_tenant(&link.tenant).await {
        Ok(Some(t)) => t,
        Ok(None) => return not_found(),
        Err(e) => return unavailable(&e),
    };
    let (Some(sign_in_url), Some(origin)) = (tenant.sign_in_url, origin_of(headers)) else {
        return notice(StatusCode::CONFLICT, lang, t.no_sign_in);
    };
    let mut bytes = [0u8; 24];
    rand::rng().fill_bytes(&mut bytes);
    let nonce = URL_SAFE_NO_PAD.encode(bytes);
    let return_to = format!("{origin}/confirm/{id}/return");
    let separator = if sign_in_url.contains('?') { '&' } else { '?' };
    let href = format!(
        "{sign_in_url}{separator}return_to={}&nonce={nonce}",
        url::form_urlencoded::byte_serialize(return_to.as_bytes()).collect::<String>()
    );
    let mut res = page(
        StatusCode::OK,
        lang,
        html! {
            p { (t.sign_in) }
            p { a id="sign-in" class="button" href=(href) { (t.sign_in_button) } }
        },
    );
    res.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(state, id, NONCE_COOKIE, &nonce, 600),
    );
    res
}

/// `GET /confirm/{id}/return?token=…`: the tenant's sign-in hands the person back.
async fn signed_in(
    State(state): State<PageState>,
    Path(id): Path<String>,
    Query(q): Query<Return>,
    headers: HeaderMap,
) -> Response {
    let link = match link(&state, &id).await {
        Ok(l) => l,
        Err(r) => return r,
    };
    let refused = || notice(StatusCode::UNAUTHORIZED, Language::En, EN.refused);
    let (Some(token), Some(nonce)) = (q.token, pages::cookie(&headers, NONCE_COOKIE)) else {
        return refused();
    };
    let who = match state.auth.authenticate_hand_off(&token, &nonce).await {
        Ok(who) => who,
        Err(AuthError::Unavailable) => return unavailable(&"identity service"),
        Err(_) => return refused(),
    };
    if !owns(&link, &who) {
        return notice(StatusCode::FORBIDDEN, Language::En, EN.someone_else);
    }
    let mut res = (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, format!("/confirm/{id}"))],
    )
        .into_response();
    secure_headers(res.headers_mut());
    let h = res.headers_mut();
    h.append(
        header::SET_COOKIE,
        set_cookie(
            &state,
            &id,
            PERSON_COOKIE,
            &token,
            crate::widget::HAND_OFF_MAX_SECONDS,
        ),
    );
    // The nonce is spent: a second return with it is refused.
    h.append(
        header::SET_COOKIE,
        set_cookie(&state, &id, NONCE_COOKIE, "", 0),
    );
    res
}

fn form_value(body: &[u8], name: &str) -> Option<String> {
    url::form_urlencoded::parse(body)
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// `POST /confirm/{id}`: the person's answer.
async fn decide(
    State(state): State<PageState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let link = match link(&state, &id).await {
        Ok(l) => l,
        Err(r) => return r,
    };
    let Some((who, session)) = person(&state, &headers).await else {
        return notice(StatusCode::UNAUTHORIZED, Language::En, EN.refused);
    };
    if !owns(&link, &who) {
        return notice(StatusCode::FORBIDDEN, Language::En, EN.someone_else);
    }
    let token_ok = form_value(&body, "csrf")
        .is_some_and(|t| bool::from(t.as_bytes().ct_eq(form_token(&session).as_bytes())));
    if !token_ok || !pages::same_origin(&headers) {
        return notice(StatusCode::FORBIDDEN, Language::En, EN.refused);
    }
    let view = match state.conversations.load(&link.tenant, &link.case).await {
        Ok(Some(v)) => v,
        Ok(None) => return not_found(),
        Err(e) => return unavailable(&e),
    };
    let lang = view.language;
    let word = match (form_value(&body, "decision").as_deref(), lang) {
        (Some("confirm"), Language::En) => "confirm",
        (Some("confirm"), Language::Pt) => "confirmar",
        (Some("cancel"), Language::En) => "cancel",
        (Some("cancel"), Language::Pt) => "cancelar",
        _ => return notice(StatusCode::BAD_REQUEST, lang, texts(lang).refused),
    };
    // Only while this very proposal waits: a double submit, an expired or replaced
    // proposal posts nothing (the chat would take the word as ordinary text).
    let standing =
        confirmation::standing(state.conversations.as_ref(), &link, state.clock.now()).await;
    match standing {
        Ok(Some(s)) if s.state == ProposalState::PendingConfirmation => {}
        Ok(Some(s)) if s.state == ProposalState::Expired => {
            return notice(StatusCode::GONE, lang, texts(lang).expired);
        }
        Ok(Some(_)) => return notice(StatusCode::CONFLICT, lang, texts(lang).already),
        Ok(None) => return not_found(),
        Err(e) => return unavailable(&e),
    }
    match state
        .chat
        .post(&who, &link.case, word, Some(link.presented.clone()))
        .await
    {
        Ok(_) => {}
        Err(ChatError::Unavailable(e)) => return unavailable(&e),
        Err(e @ (ChatError::RateLimited { .. } | ChatError::PersonLimited { .. })) => {
            tracing::info!(error = %e, "confirmation page: limited");
            return notice(StatusCode::TOO_MANY_REQUESTS, lang, texts(lang).unavailable);
        }
        Err(_) => return notice(StatusCode::CONFLICT, lang, texts(lang).already),
    }
    let mut res = (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, format!("/confirm/{id}"))],
    )
        .into_response();
    secure_headers(res.headers_mut());
    res
}
