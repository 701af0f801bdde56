//! `GET /confirm/{id}`: what stands now, and the proposal's page.

use super::*;

/// `GET /confirm/{id}`.
pub(super) async fn show(
    State(state): State<PageState>,
    Linked { id, link }: Linked,
    headers: HeaderMap,
) -> Result<Response, Response> {
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
pub(super) async fn what_stands(
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
pub(super) fn fresh(mut res: Response) -> Response {
    if res.status() == StatusCode::OK {
        res.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    res
}

/// What the proposal's page shows.
pub(super) struct View<'a> {
    pub(super) lang: Language,
    pub(super) id: &'a str,
    pub(super) summary: &'a str,
    pub(super) standing: &'a Standing,
    pub(super) csrf: &'a str,
}

pub(super) fn proposal_view(v: &View<'_>, passkey: Option<Markup>) -> Markup {
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
