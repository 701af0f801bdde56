//! The panel in the administrator's language (S-4): English or Brazilian Portuguese,
//! switched by a link on every page and remembered in a cookie for a year; until one is
//! chosen, `Accept-Language` decides. A request's language is set once by [`middleware`]
//! (a task-local), so every view reads it without it being passed through each call.
//!
//! Texts are looked up by their English wording: [`t`] gives the Portuguese one when the
//! request's language is Portuguese, and a unit test checks that every `t("…")` in the
//! panel's sources has one, so a new English text cannot ship untranslated. The use
//! cases' refusals carry both languages (`Said`; the configuration rules' reasons and
//! field labels come from the domain, decision 0048 as revisited by 0078): the API
//! answers the English, the panel the administrator's; the API's `code`s never change.

use crate::state::AdminError;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use countersign_domain::texts::Language;

tokio::task_local! {
    static LANG: Language;
}

/// The cookie that remembers the administrator's choice (not a secret; readable by the
/// panel only: `HttpOnly`, `SameSite=Lax`).
pub const COOKIE: &str = "countersign-panel-lang";

/// The language of the request being answered (English outside one).
pub fn lang() -> Language {
    LANG.try_with(|l| *l).unwrap_or(Language::En)
}

/// `en` in the request's language.
pub fn t(en: &'static str) -> &'static str {
    match lang() {
        Language::En => en,
        Language::Pt => portuguese(en).unwrap_or(en),
    }
}

/// The language of a request: the remembered choice, else `Accept-Language`, else English.
pub fn of_request(headers: &HeaderMap) -> Language {
    let chosen =
        countersign_http::pages::cookie(headers, COOKIE).and_then(|v| Language::from_tag(&v));
    chosen.unwrap_or_else(|| {
        if countersign_http::language::prefers_portuguese(headers) {
            Language::Pt
        } else {
            Language::En
        }
    })
}

/// Sets the request's language for everything that answers it.
pub async fn middleware(req: Request, next: Next) -> Response {
    let lang = of_request(req.headers());
    LANG.scope(lang, next.run(req)).await
}

/// `GET /admin/language?to=pt-BR|en`: remembers the choice and goes back to the page it
/// was made on (its same-origin `Referer`; the panel's home otherwise). A plain link, so
/// it works without script; it changes nothing but the cookie.
pub async fn switch(
    axum::extract::State(state): axum::extract::State<crate::state::AdminState>,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    let to = uri
        .query()
        .into_iter()
        .flat_map(|q| url::form_urlencoded::parse(q.as_bytes()))
        .find(|(k, _)| k == "to")
        .and_then(|(_, v)| Language::from_tag(&v));
    let Some(to) = to else {
        return (StatusCode::BAD_REQUEST, "to: en or pt-BR").into_response();
    };
    let back = back_to(&headers).unwrap_or_else(|| "/admin".to_owned());
    let mut res = axum::response::Redirect::to(&back).into_response();
    // Secure outside the local stack (plain http on loopback), like the session's.
    let secure = if super::session::local(&state) {
        ""
    } else {
        "; Secure"
    };
    let cookie = format!(
        "{COOKIE}={}; Path=/admin; Max-Age=31536000; HttpOnly; SameSite=Lax{secure}",
        to.tag()
    );
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        res.headers_mut().insert(header::SET_COOKIE, v);
    }
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
}

/// The panel page the switch was clicked on: a path under `/admin` of the same host, never
/// another site (no open redirect).
fn back_to(headers: &HeaderMap) -> Option<String> {
    let referer = headers.get(header::REFERER)?.to_str().ok()?;
    let host = headers.get(header::HOST)?.to_str().ok()?;
    let url = url::Url::parse(referer).ok()?;
    let same_host = match url.port() {
        Some(p) => format!("{}:{p}", url.host_str()?) == host,
        None => url.host_str()? == host,
    };
    let path = url.path();
    let ours = path == "/admin" || path.starts_with("/admin/");
    (same_host && ours && !path.starts_with("/admin/language")).then(|| match url.query() {
        Some(q) => format!("{path}?{q}"),
        None => path.to_owned(),
    })
}

/// An error of the use cases as the panel shows it.
pub fn error(e: &AdminError) -> String {
    if lang() == Language::En {
        return e.to_string();
    }
    match e {
        AdminError::ProviderUnreachable(cause) => format!(
            "não foi possível ler o tools/list do seu servidor para verificar as ferramentas permitidas ({cause}); nada foi salvo"
        ),
        AdminError::Busy {
            what,
            retry_after_secs,
        } => format!(
            "já há uma execução ({what}) em andamento para este tenant; tente de novo em {retry_after_secs} s"
        ),
        AdminError::PlatformBusy {
            what,
            retry_after_secs,
        } => format!(
            "a plataforma já está com o máximo de execuções ({what}) ao mesmo tempo, somando todos os tenants; nada foi iniciado: tente de novo em {retry_after_secs} s"
        ),
        AdminError::QueueFull {
            what,
            retry_after_secs,
        } => format!(
            "este tenant já tem o máximo de pedidos ({what}) na fila; nada foi registrado: tente de novo em {retry_after_secs} s"
        ),
        AdminError::SigningUnavailable => {
            "as ações não podem ser ativadas: a plataforma não tem uma chave de assinatura instalada".into()
        }
        AdminError::CertificationRequired => {
            "as ações não podem ser ativadas: rode antes a certificação destas configurações, e ela precisa passar (uma mudança da URL do servidor, do token de serviço, da audiência ou das operações pede uma nova execução)".into()
        }
        AdminError::StepUpNotCertified(op) => format!(
            "{op} ainda não pode exigir uma passkey: uma operação só passa a exigir passkey depois de uma certificação que enviou provas com step-up, e a certificação ainda não as envia"
        ),
        AdminError::NotConfigured => {
            "salve antes a configuração MCP: a certificação verifica a configuração salva".into()
        }
        AdminError::NoCertification => "nenhuma certificação foi executada ainda".into(),
        AdminError::Conflict => {
            "a configuração mudou enquanto isso; recarregue e tente de novo".into()
        }
        AdminError::NoSuchAction => {
            "não existe essa ação pendente de resolução (ela pode ter sido resolvida enquanto isso)".into()
        }
        AdminError::StillRunning(secs) => format!(
            "a ação começou há menos de {secs} segundos e ainda pode estar em execução; tente mais tarde"
        ),
        AdminError::NoSuchCredential => "não existe essa credencial do widget".into(),
        AdminError::AlreadyReplaced(at) => format!(
            "esta credencial já foi substituída; o período de carência termina em {at}"
        ),
        AdminError::Unfinished(_) => {
            "as configurações foram salvas e estão em vigor: nenhuma proposta preparada com as antigas pode ser executada; algumas dessas propostas ainda não foram canceladas com um aviso à pessoa; salve de novo para concluir".into()
        }
        AdminError::Unavailable { .. } => {
            "um serviço da plataforma está indisponível; nada foi alterado".into()
        }
        // Invalid and NotConsultations carry both languages and are placed by field
        // (`errors_of`); anything else is the English text.
        other => other.to_string(),
    }
}

/// The Portuguese of an English panel text.
fn portuguese(en: &str) -> Option<&'static str> {
    PORTUGUESE.iter().find(|(e, _)| *e == en).map(|(_, pt)| *pt)
}

mod portuguese;
use portuguese::PORTUGUESE;

#[cfg(test)]
mod tests;
