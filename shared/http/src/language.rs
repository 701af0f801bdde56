//! S-4: error messages in the caller's language. The `code` of an error never changes; its
//! `message` follows `Accept-Language` when Portuguese is preferred to English there
//! (`pt`, `pt-BR`, any `pt-*`): a fixed Portuguese text per code. Anything else — another
//! language, no header, a code without a translation — keeps the English message, which
//! names the field or the limit more precisely.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

/// The largest error body rewritten (error bodies are small; anything larger is left).
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Whether `Accept-Language` prefers Portuguese to English (by weight, then by order).
pub fn prefers_portuguese(headers: &HeaderMap) -> bool {
    let mut best: Option<(f32, bool)> = None;
    for value in headers.get_all(header::ACCEPT_LANGUAGE) {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let tag = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
            let q = parts
                .find_map(|p| {
                    p.trim()
                        .strip_prefix("q=")
                        .and_then(|q| q.parse::<f32>().ok())
                })
                .unwrap_or(1.0);
            let pt = tag == "pt" || tag.starts_with("pt-");
            let en = tag == "en" || tag.starts_with("en-");
            if (pt || en) && q > 0.0 && best.is_none_or(|(b, _)| q > b) {
                best = Some((q, pt));
            }
        }
    }
    best.is_some_and(|(_, pt)| pt)
}

/// The Portuguese message of `code`, if it has one.
pub fn portuguese(code: &str) -> Option<&'static str> {
    Some(match code {
        "UNAUTHORIZED" => "É necessária uma credencial válida.",
        "NOT_FOUND" => "Não encontrado.",
        "CASE_CLOSED" => "Esta conversa está encerrada.",
        "ACTION_IN_PROGRESS" => {
            "O resultado de uma ação ainda está sendo verificado; envie uma mensagem para consultá-lo e depois encerre."
        }
        "INVALID_JSON" => "O corpo da requisição não é um JSON válido.",
        "VALIDATION_ERROR" => "A requisição tem um campo inválido (veja `field`).",
        "PAYLOAD_TOO_LARGE" => "O corpo da requisição é grande demais.",
        "RATE_LIMITED" => {
            "Muitas requisições agora; tente de novo após o tempo indicado em Retry-After."
        }
        "SERVICE_UNAVAILABLE" => "Um serviço da plataforma está indisponível; tente novamente.",
        "ORIGIN_NOT_ALLOWED" => {
            "Esta credencial do widget não pode ser usada a partir da origem desta página."
        }
        "CONFLICT" => "Outra alteração veio antes; leia de novo e tente outra vez.",
        _ => return None,
    })
}

/// The middleware: an error answer's message in Portuguese when the caller prefers it.
pub async fn localized_errors(req: Request, next: Next) -> Response {
    let portuguese_wanted = prefers_portuguese(req.headers());
    let res = next.run(req).await;
    if !portuguese_wanted || !(res.status().is_client_error() || res.status().is_server_error()) {
        return res;
    }
    let json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !json {
        return res;
    }
    let (mut parts, body) = res.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_ERROR_BODY).await else {
        return Response::from_parts(parts, Body::empty());
    };
    let mut value: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(_) => return Response::from_parts(parts, Body::from(bytes)),
    };
    let text = value
        .pointer("/error/code")
        .and_then(serde_json::Value::as_str)
        .and_then(portuguese);
    let Some(text) = text else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    value["error"]["message"] = text.into();
    let body = value.to_string();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts
        .headers
        .insert(header::CONTENT_LANGUAGE, HeaderValue::from_static("pt-BR"));
    parts
        .headers
        .append(header::VARY, HeaderValue::from_static("Accept-Language"));
    Response::from_parts(parts, Body::from(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT_LANGUAGE, v.parse().unwrap());
        h
    }

    #[test]
    fn portuguese_only_when_preferred_to_english() {
        assert!(prefers_portuguese(&accept("pt-BR")));
        assert!(prefers_portuguese(&accept("pt-BR,pt;q=0.9,en;q=0.8")));
        assert!(prefers_portuguese(&accept("fr, pt;q=0.5")));
        assert!(!prefers_portuguese(&accept("en-US,pt;q=0.5")));
        assert!(!prefers_portuguese(&accept("fr")));
        assert!(!prefers_portuguese(&accept("pt;q=0")));
        assert!(!prefers_portuguese(&HeaderMap::new()));
        assert!(prefers_portuguese(&accept("en;q=0.4, pt-PT;q=0.6")));
    }
}
