//! Signing in and out (U-1): the admin key exchanged for a session cookie.

use super::*;

pub(super) async fn home(session: Result<Session, Response>) -> Response {
    match session {
        Ok(_) => see_other("/admin/mcp"),
        Err(_) => html(StatusCode::OK, views::sign_in(None)),
    }
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
