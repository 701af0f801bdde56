//! The widget credentials page (U-3, C-9, decision 0047): create, confirm, revoke, replace.

use super::*;

pub(super) async fn render_widgets(
    state: &AdminState,
    session: &Session,
    new_secret: Option<(&str, &str)>,
    errors: &Errors,
    notice: Option<&str>,
    status: StatusCode,
) -> Response {
    match crate::widgets::list(state, &session.tenant).await {
        Ok(keys) => html(
            status,
            views::widgets(session, &keys, new_secret, errors, notice),
        ),
        Err(e) => unavailable(&e),
    }
}

/// The credentials; after a creation (`?created=<keyId>`), its secret, once, from the
/// one-time cookie, which the answer clears.
pub(super) async fn widgets_page(
    State(state): State<AdminState>,
    session: Session,
    headers: HeaderMap,
    uri: Uri,
) -> Response {
    let created = query(&uri).get("created").cloned();
    let carried = session::new_secret(&state, &headers);
    let shown = match (&created, &carried) {
        (Some(id), Some((carried_id, secret))) if id == carried_id => {
            Some((id.as_str(), secret.as_str()))
        }
        _ => None,
    };
    let notice = (created.is_some() && shown.is_none()).then(|| {
        t("That credential's secret was shown once, right after it was created. If it was not stored, replace the credential.")
    });
    let mut res = render_widgets(
        &state,
        &session,
        shown,
        &Errors::new(),
        notice,
        StatusCode::OK,
    )
    .await;
    if carried.is_some() {
        res.headers_mut().append(
            header::SET_COOKIE,
            session::secret_cookie(&state, "", "", 0),
        );
    }
    res
}

/// After a credential was made: to its page, the secret carried once (post, redirect, get).
pub(super) fn show_new_secret(
    state: &AdminState,
    key: &countersign_domain::ports::WidgetKey,
    secret: &str,
) -> Response {
    let mut res = see_other(&format!("/admin/widgets?created={}", key.id));
    res.headers_mut().insert(
        header::SET_COOKIE,
        session::secret_cookie(state, key.id.as_str(), secret, 60),
    );
    res
}

pub(super) async fn widget_create(
    State(state): State<AdminState>,
    Guarded { session, form }: Guarded,
) -> Response {
    let origins = form.lines("origins");
    match crate::widgets::create(&state, &session.tenant, &origins).await {
        Ok((key, secret)) => show_new_secret(&state, &key, secret.expose()),
        Err(e) => {
            // Every refusal of the origins is the origins field's.
            let page = |mut errors: Errors, status| async move {
                if let Some(m) = errors.remove("") {
                    errors.insert("allowedOrigins".into(), m);
                }
                let errors = errors
                    .into_iter()
                    .map(|(f, m)| {
                        if f.starts_with("allowedOrigins") {
                            ("allowedOrigins".to_owned(), m)
                        } else {
                            (f, m)
                        }
                    })
                    .collect();
                render_widgets(&state, &session, None, &errors, None, status).await
            };
            PanelError::from(e).answer(page).await
        }
    }
}

/// The server-rendered step before a revocation (issue 28: not one click from the list).
pub(super) async fn confirm_revoke(
    State(state): State<AdminState>,
    session: Session,
    Path(key_id): Path<String>,
) -> Response {
    widget_confirm(&state, &session, &key_id, "revoke").await
}

/// The server-rendered step before a replacement.
pub(super) async fn confirm_replace(
    State(state): State<AdminState>,
    session: Session,
    Path(key_id): Path<String>,
) -> Response {
    widget_confirm(&state, &session, &key_id, "replace").await
}

/// What a revocation or replacement does, and the button that does it.
pub(super) async fn widget_confirm(
    state: &AdminState,
    session: &Session,
    key_id: &str,
    what: &str,
) -> Response {
    let keys = match crate::widgets::list(state, &session.tenant).await {
        Ok(k) => k,
        Err(e) => return unavailable(&e),
    };
    let Some(key) = keys.iter().find(|k| k.id.as_str() == key_id) else {
        let errors = errors_of(&AdminError::NoSuchCredential);
        return render_widgets(state, session, None, &errors, None, StatusCode::NOT_FOUND).await;
    };
    html(StatusCode::OK, views::widget_confirm(session, key, what))
}

pub(super) async fn widget_revoke(
    State(state): State<AdminState>,
    Path(key_id): Path<String>,
    Guarded { session, .. }: Guarded,
) -> Response {
    match crate::widgets::revoke(&state, &session.tenant, &key_id).await {
        Ok(()) => see_other("/admin/widgets"),
        Err(e) => {
            let page = |errors: Errors, status| async move {
                render_widgets(&state, &session, None, &errors, None, status).await
            };
            PanelError::from(e).answer(page).await
        }
    }
}

/// U-3 "replace" (decision 0047): a new credential with the same origins; the old one
/// keeps working for the grace period chosen on the confirmation step.
pub(super) async fn widget_replace(
    State(state): State<AdminState>,
    Path(key_id): Path<String>,
    Guarded { session, form }: Guarded,
) -> Response {
    // An unreadable choice is refused rather than read as "at once".
    let grace = form
        .get("graceSeconds")
        .and_then(|g| g.parse::<i64>().ok())
        .unwrap_or(-1);
    match crate::widgets::replace(&state, &session.tenant, &key_id, grace).await {
        Ok((key, secret)) => show_new_secret(&state, &key, secret.expose()),
        Err(e) => {
            // The choice of grace period is not on the list page: its refusal is the form's.
            let page = |errors: Errors, status| async move {
                let errors: Errors = errors
                    .into_iter()
                    .map(|(field, m)| {
                        (
                            if field == "graceSeconds" {
                                String::new()
                            } else {
                                field
                            },
                            m,
                        )
                    })
                    .collect();
                render_widgets(&state, &session, None, &errors, None, status).await
            };
            PanelError::from(e).answer(page).await
        }
    }
}
