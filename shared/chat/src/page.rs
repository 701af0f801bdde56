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
use axum::extract::{Path, State};
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

mod stepup;

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

impl std::fmt::Debug for PageState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageState").finish_non_exhaustive()
    }
}

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

/// The page's fixed texts in the case's language.
struct Texts {
    title: &'static str,
    /// After the company's name: "TrackShare asks you to confirm a change".
    asks: &'static str,
    /// A settled change: the end of the page.
    close_tab: &'static str,
    not_found: &'static str,
    expired: &'static str,
    sign_in: &'static str,
    sign_in_at: &'static str,
    sign_in_button: &'static str,
    no_sign_in: &'static str,
    someone_else: &'static str,
    expires: &'static str,
    instructions: &'static str,
    confirm: &'static str,
    cancel: &'static str,
    refused: &'static str,
    unavailable: &'static str,
    already: &'static str,
    /// F-1: a typed or plain Confirm of an operation that needs the person's passkey.
    needs_passkey: &'static str,
    /// F-3, F-7: what the step-up is and what it proves (and does not).
    passkey_needed: &'static str,
    passkey_proves: &'static str,
    confirm_passkey: &'static str,
    passkey_failed: &'static str,
    no_webauthn: &'static str,
    /// F-2: enrolling.
    enrol_explain: &'static str,
    enrol_button: &'static str,
    enrol_sign_in: &'static str,
    enrol_sign_in_button: &'static str,
    /// F-3: why a step-up was refused.
    refused_again: &'static str,
    refused_not_enrolled: &'static str,
    refused_uv: &'static str,
    refused_check: &'static str,
    refused_too_many: &'static str,
    back: &'static str,
    /// F-2: the person's own passkeys.
    my_passkeys: &'static str,
    enrolled_on: &'static str,
    remove_passkey: &'static str,
    /// F-2: enrolling another passkey with one the person has.
    add_passkey: &'static str,
    add_explain: &'static str,
    enrol_another: &'static str,
}

const EN: Texts = Texts {
    title: "Confirm a change",
    asks: "asks you to confirm a change",
    close_tab: "You can close this tab now; the chat shows the outcome too.",
    not_found: "This confirmation link is not valid.",
    expired: "This request has expired. Nothing was done.",
    sign_in: "Sign in to see the change you were asked to confirm.",
    sign_in_at: "You will sign in at",
    sign_in_button: "Sign in",
    no_sign_in: "This company has not set up sign-in for confirmation pages. Confirm in the support chat instead.",
    someone_else: "This confirmation is for someone else. Nothing was done.",
    expires: "Expires at",
    instructions: "Check the change above. Confirm carries out exactly this change; Cancel drops it. Nothing changes until Confirm is pressed on this page, signed in as you: press it only if you asked for this change yourself.",
    confirm: "Confirm",
    cancel: "Cancel",
    refused: "This request could not be accepted. Reload the page and try again.",
    unavailable: "The service is unavailable. Try again in a moment.",
    already: "This change was already answered.",
    needs_passkey: "This change needs your passkey: a typed or plain Confirm cannot carry it out. Nothing was changed and it still waits; use “Confirm with your passkey” on this page.",
    passkey_needed: "This change needs your passkey. Your passkey signs exactly this change, and the company's own server checks that signature before anything happens.",
    passkey_proves: "It proves that you, on your device, approved this exact change; an app or a program acting in your browser cannot do it for you. It does not prove the change is right for you: read it before you confirm.",
    confirm_passkey: "Confirm with your passkey",
    passkey_failed: "The passkey check did not finish. Nothing was changed; you can try again.",
    no_webauthn: "This browser cannot use passkeys. Open this page in your device's main browser (not inside another app).",
    enrol_explain: "You have no passkey for this company yet. Create one on this device; the change keeps waiting meanwhile.",
    enrol_button: "Create a passkey",
    enrol_sign_in: "To create a passkey, sign in at the company again first (a fresh sign-in is needed to add a passkey).",
    enrol_sign_in_button: "Sign in to create a passkey",
    refused_again: "The passkey check took too long or was already used. Nothing was changed; go back and try again.",
    refused_not_enrolled: "That passkey is not one of yours for this company. Nothing was changed.",
    refused_uv: "Your passkey did not verify you (fingerprint, face or PIN). Nothing was changed.",
    refused_check: "The passkey's answer does not match this change. Nothing was changed.",
    refused_too_many: "You have as many passkeys for this company as allowed. Nothing was changed.",
    back: "Back to the change",
    my_passkeys: "Your passkeys for this company",
    enrolled_on: "Passkey created",
    remove_passkey: "Remove",
    add_passkey: "Add another passkey",
    add_explain: "Use a passkey you have to allow one more (a new phone or computer); then create it.",
    enrol_another: "Now create the new passkey: on this device, or choose another device in your browser's prompt. The change keeps waiting.",
};

const PT: Texts = Texts {
    title: "Confirmar uma alteração",
    asks: "pede que você confirme uma alteração",
    close_tab: "Você já pode fechar esta aba; o chat também mostra o resultado.",
    not_found: "Este link de confirmação não é válido.",
    expired: "Este pedido expirou. Nada foi feito.",
    sign_in: "Entre para ver a alteração que pediram que você confirme.",
    sign_in_at: "Você vai entrar em",
    sign_in_button: "Entrar",
    no_sign_in: "Esta empresa não configurou a entrada para páginas de confirmação. Confirme no chat de suporte.",
    someone_else: "Esta confirmação é de outra pessoa. Nada foi feito.",
    expires: "Expira em",
    instructions: "Confira a alteração acima. Confirmar realiza exatamente esta alteração; Cancelar a descarta. Nada muda até que Confirmar seja pressionado nesta página, com a sua entrada: pressione só se foi você quem pediu esta alteração.",
    confirm: "Confirmar",
    cancel: "Cancelar",
    refused: "Este pedido não pôde ser aceito. Recarregue a página e tente novamente.",
    unavailable: "O serviço está indisponível. Tente novamente em instantes.",
    already: "Esta alteração já foi respondida.",
    needs_passkey: "Esta alteração exige a sua passkey: um Confirmar digitado ou simples não a realiza. Nada foi alterado e ela continua aguardando; use “Confirmar com a sua passkey” nesta página.",
    passkey_needed: "Esta alteração exige a sua passkey. A sua passkey assina exatamente esta alteração, e o servidor da própria empresa confere essa assinatura antes que algo aconteça.",
    passkey_proves: "Ela prova que você, no seu dispositivo, aprovou exatamente esta alteração; um app ou programa agindo no seu navegador não consegue fazer isso por você. Ela não prova que a alteração é boa para você: leia antes de confirmar.",
    confirm_passkey: "Confirmar com a sua passkey",
    passkey_failed: "A verificação da passkey não terminou. Nada foi alterado; você pode tentar de novo.",
    no_webauthn: "Este navegador não usa passkeys. Abra esta página no navegador principal do seu dispositivo (não dentro de outro app).",
    enrol_explain: "Você ainda não tem uma passkey para esta empresa. Crie uma neste dispositivo; a alteração continua aguardando.",
    enrol_button: "Criar uma passkey",
    enrol_sign_in: "Para criar uma passkey, entre de novo na empresa antes (é preciso uma entrada recente para adicionar uma passkey).",
    enrol_sign_in_button: "Entrar para criar uma passkey",
    refused_again: "A verificação da passkey demorou demais ou já foi usada. Nada foi alterado; volte e tente de novo.",
    refused_not_enrolled: "Essa passkey não é uma das suas para esta empresa. Nada foi alterado.",
    refused_uv: "A sua passkey não verificou você (digital, rosto ou PIN). Nada foi alterado.",
    refused_check: "A resposta da passkey não corresponde a esta alteração. Nada foi alterado.",
    refused_too_many: "Você já tem o máximo de passkeys permitido para esta empresa. Nada foi alterado.",
    back: "Voltar para a alteração",
    my_passkeys: "As suas passkeys para esta empresa",
    enrolled_on: "Passkey criada em",
    remove_passkey: "Remover",
    add_passkey: "Adicionar outra passkey",
    add_explain: "Use uma passkey que você já tem para permitir mais uma (um celular ou computador novo); depois crie-a.",
    enrol_another: "Agora crie a nova passkey: neste dispositivo, ou escolha outro dispositivo no aviso do navegador. A alteração continua aguardando.",
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

/// `GET /confirm/{id}`.
async fn show(
    State(state): State<PageState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, Response> {
    let link = link(&state, &id).await?;
    let lang = language(&state, &link).await?;
    let t = texts(lang);
    let Some((who, session)) = person(&state, &id, &link, &headers).await? else {
        if state.clock.now() >= link.expires_at {
            return Err(notice(StatusCode::GONE, lang, t.expired));
        }
        return sign_in_step(&state, &id, &link, lang).await;
    };
    let (standing, summary) = what_stands(&state, &link).await?;
    // N-6: the page serves the presentation: its first serving starts a replacing
    // proposal's dwell.
    if standing.state == ProposalState::PendingConfirmation
        && let Err(e) = state
            .chat
            .presentation_served(&who, &link.case, &link.presented)
            .await
    {
        tracing::warn!(error = %e, "confirmation page: first serving not recorded");
    }
    // F-3: a passkey operation's answer is the passkey ceremony.
    let passkey = if standing.state == ProposalState::PendingConfirmation {
        stepup::section(&state, &id, &link, &who, &session, lang).await?
    } else {
        None
    };
    let view = View {
        lang,
        id: &id,
        summary: &summary,
        standing: &standing,
        csrf: &form_token(&id, &session),
    };
    let tenant = tenant_of(&state, &link).await?;
    let status = if standing.state == ProposalState::Expired {
        StatusCode::GONE
    } else {
        StatusCode::OK
    };
    Ok(fresh(branded(
        status,
        lang,
        Some(&tenant),
        proposal_view(&view, passkey),
    )))
}

/// Where the link's proposal stands, and its summary.
async fn what_stands(
    state: &PageState,
    link: &ConfirmationLink,
) -> Result<(Standing, String), Response> {
    let conversations = state.conversations.as_ref();
    let standing = match confirmation::standing(conversations, link, state.clock.now()).await {
        Ok(Some(s)) => s,
        Ok(None) => return Err(not_found()),
        Err(e) => return Err(unavailable(&e)),
    };
    match confirmation::summary(conversations, link).await {
        Ok(s) => Ok((standing, s.unwrap_or_default())),
        Err(e) => Err(unavailable(&e)),
    }
}

/// A page that shows what stands now: never stored by a cache (a gone one may be).
fn fresh(mut res: Response) -> Response {
    if res.status() == StatusCode::OK {
        res.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    res
}

/// What the proposal's page shows.
struct View<'a> {
    lang: Language,
    id: &'a str,
    summary: &'a str,
    standing: &'a Standing,
    csrf: &'a str,
}

fn proposal_view(v: &View<'_>, passkey: Option<Markup>) -> Markup {
    let View {
        lang,
        id,
        summary,
        standing,
        csrf,
    } = *v;
    let t = texts(lang);
    let pending = standing.state == ProposalState::PendingConfirmation;
    // Settled for good: nothing more will happen on this page.
    let ended = !matches!(
        standing.state,
        ProposalState::PendingConfirmation | ProposalState::Executing | ProposalState::Unknown
    );
    html! {
        @if pending {
            // The page's script shows it in the person's local time.
            p id="expiry" {
                (t.expires) " "
                time id="expires" datetime=(standing.expires_at.to_rfc3339()) {
                    (standing.expires_at.to_rfc3339().get(11..16).unwrap_or_default()) " UTC"
                }
            }
        }
        pre id="summary" class="summary" { (summary) }
        p id="state" class={"state " (standing.state.as_str())} data-state=(standing.state.as_str()) {
            (state_text(lang, standing.state))
        }
        @if let Some(result) = &standing.result {
            pre id="result" class="result" { (result) }
        }
        @if ended {
            p id="close-tab" class="instructions" { (t.close_tab) }
        }
        @if let Some(passkey) = passkey {
            (passkey)
        } @else if pending {
            p id="instructions" class="instructions" { (t.instructions) }
            form method="post" action={"/confirm/" (id)} {
                input type="hidden" name="csrf" value=(csrf);
                button type="submit" name="decision" value="confirm" class="confirm" { (t.confirm) }
                " "
                button type="submit" name="decision" value="cancel" class="cancel" { (t.cancel) }
            }
        }
    }
}

/// The tenant's sign-in URL, if it set one.
async fn sign_in_url(
    state: &PageState,
    link: &ConfirmationLink,
) -> Result<Option<String>, Response> {
    Ok(tenant_of(state, link).await?.sign_in_url)
}

/// The link's tenant.
async fn tenant_of(
    state: &PageState,
    link: &ConfirmationLink,
) -> Result<countersign_domain::ports::Tenant, Response> {
    match state.tenants.get_tenant(&link.tenant).await {
        Ok(Some(t)) => Ok(t),
        Ok(None) => Err(not_found()),
        Err(e) => Err(unavailable(&e)),
    }
}

/// The sign-in step: where the person will sign in, and a button that begins it (N-6: the
/// nonce is made only when it is pressed, by this browser).
async fn sign_in_step(
    state: &PageState,
    id: &str,
    link: &ConfirmationLink,
    lang: Language,
) -> Result<Response, Response> {
    let t = texts(lang);
    let tenant = tenant_of(state, link).await?;
    let Some(url) = tenant.sign_in_url.clone() else {
        return Err(notice(StatusCode::CONFLICT, lang, t.no_sign_in));
    };
    // F-2: a person who must enrol first signs in afresh for that, once.
    let enrol = stepup::needs_enrolment(state, link).await;
    let parsed = url::Url::parse(&url).ok();
    let host = parsed
        .as_ref()
        .and_then(|u| u.host_str().map(str::to_owned))
        .unwrap_or_default();
    let mut res = branded(
        StatusCode::OK,
        lang,
        Some(&tenant),
        html! {
            p { (t.sign_in) }
            p id="sign-in-host" { (t.sign_in_at) " " strong { (host) } "." }
            form method="post" action={"/confirm/" (id) "/sign-in"} {
                @if enrol {
                    input type="hidden" name="purpose" value=(stepup::ENROL);
                }
                button id="sign-in" type="submit" class="button" { (t.sign_in_button) }
            }
        },
    );
    // The Sign in form posts here and is redirected to the tenant's sign-in: browsers
    // hold form-action to the redirect's target too, so this page (only) allows it.
    let origin = parsed.map(|u| u.origin().ascii_serialization());
    let csp = origin
        .filter(|o| o != "null")
        .map(|o| CSP.replace("form-action 'self'", &format!("form-action 'self' {o}")))
        .and_then(|c| HeaderValue::from_str(&c).ok());
    if let Some(csp) = csp {
        res.headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    Ok(res)
}

/// `POST /confirm/{id}/sign-in`: a fresh nonce in this browser's cookie, and on to the
/// tenant's sign-in (303).
async fn begin_sign_in(
    State(state): State<PageState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Response> {
    let link = link(&state, &id).await?;
    if !pages::same_origin_strict(&headers) {
        return Err(notice(StatusCode::FORBIDDEN, Language::En, EN.refused));
    }
    let (sign_in_url, origin) = match (sign_in_url(&state, &link).await?, origin_of(&headers)) {
        (Some(url), Some(origin)) => (url, origin),
        _ => return Err(notice(StatusCode::CONFLICT, Language::En, EN.no_sign_in)),
    };
    let nonce = random_id();
    let return_to = format!("{origin}/confirm/{id}/return");
    let separator = if sign_in_url.contains('?') { '&' } else { '?' };
    // F-2: the page asks for a fresh sign-in to enrol a passkey (the tenant's sign-in puts
    // `purpose: "enrol"` in the token it hands back).
    let purpose = if form_value(&body, "purpose").as_deref() == Some(stepup::ENROL) {
        "&purpose=enrol"
    } else {
        ""
    };
    let href = format!(
        "{sign_in_url}{separator}return_to={}&nonce={nonce}&response_mode=form_post{purpose}",
        url::form_urlencoded::byte_serialize(return_to.as_bytes()).collect::<String>()
    );
    let mut res = see_other(href);
    res.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(&state, &headers, &id, NONCE_COOKIE, &nonce, 600),
    );
    Ok(res)
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

/// `GET /confirm/{id}/return`: the hand-off before N-6 (a token in the URL) opens nothing;
/// the URL is left at once.
async fn old_return(Path(id): Path<String>) -> Response {
    if !confirmation::well_formed(&id) {
        return not_found();
    }
    back_to_page(&id)
}

/// `POST /confirm/{id}/return` (form `token`): the tenant's sign-in hands the person back.
async fn signed_in(
    State(state): State<PageState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Response> {
    let link = link(&state, &id).await?;
    let refused = || notice(StatusCode::UNAUTHORIZED, Language::En, EN.refused);
    let token = form_value(&body, "token").ok_or_else(refused)?;
    let hand_off = match state.auth.authenticate_hand_off(&token).await {
        Ok(found) => found,
        Err(AuthError::Unavailable) => return Err(unavailable(&"identity service")),
        Err(_) => return Err(refused()),
    };
    let (who, nonce) = (&hand_off.who, &hand_off.nonce);
    // N-6: spent on its first presentation, whether or not this browser began the sign-in:
    // a token a person was made to hand over is already worthless.
    let spend = format!(
        "handoff-{}",
        Sha256Hex::digest(format!("countersign-hand-off\0{id}\0{nonce}").as_bytes())
    );
    let expires = state
        .clock
        .now()
        .plus_seconds(crate::widget::HAND_OFF_MAX_SECONDS + 60);
    let first = state
        .links
        .spend_state(&spend, expires)
        .await
        .map_err(|e| unavailable(&e))?;
    let began_here = pages::cookie(&headers, NONCE_COOKIE)
        .is_some_and(|c| bool::from(c.as_bytes().ct_eq(nonce.as_bytes())));
    if !first || !began_here {
        return Err(refused());
    }
    if !owns(&link, who) {
        return Err(notice(StatusCode::FORBIDDEN, Language::En, EN.someone_else));
    }
    let session = random_id();
    let until = state.clock.now().plus_seconds(SESSION_SECONDS);
    state
        .links
        .open_page_session(&session_key(&id, &session), until)
        .await
        .map_err(|e| unavailable(&e))?;
    // F-2: a fresh sign-in the tenant made for enrolling lets this session enrol one
    // passkey within 5 minutes.
    if hand_off.purpose.as_deref() == Some(stepup::ENROL) {
        stepup::grant_enrolment(&state, &id, &session)
            .await
            .map_err(|e| unavailable(&e))?;
    }
    let mut res = back_to_page(&id);
    let h = res.headers_mut();
    h.append(
        header::SET_COOKIE,
        set_cookie(
            &state,
            &headers,
            &id,
            PERSON_COOKIE,
            &session,
            SESSION_SECONDS,
        ),
    );
    h.append(
        header::SET_COOKIE,
        set_cookie(&state, &headers, &id, NONCE_COOKIE, "", 0),
    );
    Ok(res)
}

fn form_value(body: &[u8], name: &str) -> Option<String> {
    url::form_urlencoded::parse(body)
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// The page that says why the person's answer was not taken.
fn not_posted(id: &str, lang: Language, e: ChatError) -> Response {
    match e {
        ChatError::StepUpRefused(e) => stepup::refused_step_up(lang, id, &e),
        ChatError::Unavailable(e) => unavailable(&e),
        e @ (ChatError::RateLimited { retry_after_secs }
        | ChatError::PersonLimited {
            retry_after_secs, ..
        }) => {
            tracing::info!(error = %e, "confirmation page: limited");
            let mut res = notice(StatusCode::TOO_MANY_REQUESTS, lang, texts(lang).unavailable);
            // Security review N13: when to come back, as the API says it.
            res.headers_mut()
                .insert(header::RETRY_AFTER, retry_after_secs.into());
            res
        }
        ChatError::StepUpRequired => notice(StatusCode::CONFLICT, lang, texts(lang).needs_passkey),
        _ => notice(StatusCode::CONFLICT, lang, texts(lang).already),
    }
}

/// `POST /confirm/{id}`: the person's answer.
async fn decide(
    State(state): State<PageState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Response> {
    let link = link(&state, &id).await?;
    let Some((who, session)) = person(&state, &id, &link, &headers).await? else {
        return Err(notice(StatusCode::UNAUTHORIZED, Language::En, EN.refused));
    };
    let token_ok = form_value(&body, "csrf")
        .is_some_and(|t| bool::from(t.as_bytes().ct_eq(form_token(&id, &session).as_bytes())));
    if !token_ok || !pages::same_origin_strict(&headers) {
        return Err(notice(StatusCode::FORBIDDEN, Language::En, EN.refused));
    }
    let view = match state.conversations.load(&link.tenant, &link.case).await {
        Ok(Some(v)) => v,
        Ok(None) => return Err(not_found()),
        Err(e) => return Err(unavailable(&e)),
    };
    let lang = view.language;
    let word = match (form_value(&body, "decision").as_deref(), lang) {
        (Some("confirm"), Language::En) => "confirm",
        (Some("confirm"), Language::Pt) => "confirmar",
        (Some("cancel"), Language::En) => "cancel",
        (Some("cancel"), Language::Pt) => "cancelar",
        _ => return Err(notice(StatusCode::BAD_REQUEST, lang, texts(lang).refused)),
    };
    // Only while this very proposal waits: a double submit, an expired or replaced
    // proposal posts nothing (the chat would take the word as ordinary text).
    let standing =
        confirmation::standing(state.conversations.as_ref(), &link, state.clock.now()).await;
    match standing {
        Ok(Some(s)) if s.state == ProposalState::PendingConfirmation => {}
        Ok(Some(s)) if s.state == ProposalState::Expired => {
            return Err(notice(StatusCode::GONE, lang, texts(lang).expired));
        }
        Ok(Some(_)) => return Err(notice(StatusCode::CONFLICT, lang, texts(lang).already)),
        Ok(None) => return Err(not_found()),
        Err(e) => return Err(unavailable(&e)),
    }
    // F-3: a confirmation may carry the person's passkey answer.
    let answer = stepup::answer_in(&body).filter(|_| word.starts_with("confirm"));
    let to = Some(link.presented.clone());
    let posted = match &answer {
        Some(answer) => {
            let chat = &state.chat;
            chat.post_countersigned(&who, &link.case, word, to, answer)
                .await
        }
        None => state.chat.post(&who, &link.case, word, to).await,
    };
    posted.map_err(|e| not_posted(&id, lang, e))?;
    Ok(back_to_page(&id))
}
