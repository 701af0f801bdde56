//! `POST /confirm/{id}`: the person's confirm or cancel, as the chat's reply.

use super::*;

/// The page that says why the person's answer was not taken.
pub(super) fn not_posted(id: &str, lang: Language, e: ChatError) -> Response {
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
pub(super) async fn decide(
    State(state): State<PageState>,
    Linked { id, link }: Linked,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Response> {
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
