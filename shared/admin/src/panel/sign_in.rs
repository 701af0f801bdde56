//! Signing in and out (U-1): the admin key exchanged for a session cookie.

use super::*;

/// `/admin`: signed in, the overview (issue 50: where the tenant stands, first); else the
/// sign-in form.
pub(super) async fn home(
    State(state): State<AdminState>,
    headers: HeaderMap,
    session: Result<Session, Response>,
) -> Response {
    let Ok(session) = session else {
        return html(StatusCode::OK, views::sign_in(None));
    };
    match overview_of(&state, &session, &headers).await {
        Ok(o) => html(StatusCode::OK, views::overview(&session, &o)),
        Err(e) => unavailable(&e),
    }
}

/// What the overview shows: four reads, each of them a page of its own too.
async fn overview_of(
    state: &AdminState,
    session: &Session,
    headers: &HeaderMap,
) -> Result<views::Overview, AdminError> {
    let tenant = &session.tenant;
    let (stored, latest) = saved(state, tenant).await?;
    let certification = latest.map(|run| {
        let current = stored
            .as_ref()
            .is_some_and(|s| run.subject.covers(&CertifiedSubject::of(s)));
        (run.passed(), run.at.to_rfc3339(), current)
    });
    Ok(views::Overview {
        server_url: stored
            .as_ref()
            .map(|s| s.config.server_url.as_str().to_owned()),
        audience: stored.as_ref().map(|s| s.config.audience().to_owned()),
        actions_on: stored
            .as_ref()
            .is_some_and(|s| s.config.action_policy.enabled),
        certification,
        unsettled: crate::unsettled::list(state, tenant).await?.len(),
        credentials: crate::widgets::list(state, tenant).await?.len(),
        issuer: state.issuer.clone(),
        // The JWKS as the administrator reaches this host (https; http on loopback).
        jwks_url: format!(
            "{}{}",
            countersign_http::pages::origin_of(headers),
            crate::jwks::JWKS_PATH
        ),
    })
}

pub(super) async fn login(
    State(state): State<AdminState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if !session::same_origin(&headers) {
        return refused_cross_site();
    }
    let form = Form::parse(&body);
    match session::sign_in(&state, form.get("key").unwrap_or("")).await {
        Ok(cookie) => {
            let mut res = see_other("/admin");
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

pub(super) async fn logout(
    State(state): State<AdminState>,
    Guarded { session, .. }: Guarded,
) -> Response {
    if let Err(e) = session.end(&state).await {
        return unavailable(&e);
    }
    let mut res = see_other("/admin");
    res.headers_mut()
        .insert(header::SET_COOKIE, session::set_cookie(&state, "", 0));
    res
}
