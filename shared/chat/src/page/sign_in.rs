//! N-6: the person's sign-in through the tenant's hand-off: the nonce, the way out, and
//! the way back that opens the page's own session.

use super::*;

/// The tenant's sign-in URL, if it set one.
pub(super) async fn sign_in_url(
    state: &PageState,
    link: &ConfirmationLink,
) -> Result<Option<String>, Response> {
    Ok(tenant_of(state, link).await?.sign_in_url)
}

/// The link's tenant.
pub(super) async fn tenant_of(
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
pub(super) async fn sign_in_step(
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
pub(super) async fn begin_sign_in(
    State(state): State<PageState>,
    Linked { id, link }: Linked,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Response> {
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

/// `GET /confirm/{id}/return`: the hand-off before N-6 (a token in the URL) opens nothing;
/// the URL is left at once.
pub(super) async fn old_return(Path(id): Path<String>) -> Response {
    if !confirmation::well_formed(&id) {
        return not_found();
    }
    back_to_page(&id)
}

/// `POST /confirm/{id}/return` (form `token`): the tenant's sign-in hands the person back.
pub(super) async fn signed_in(
    State(state): State<PageState>,
    Linked { id, link }: Linked,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Response> {
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
