//! Retention (R-2, R-3, N-3): holds and erasure jobs.

use super::*;

/// The Retention page refusing what was typed in `field`, with `why`.
fn refused(session: &Session, status: StatusCode, field: &str, why: &str) -> Response {
    let errors: Errors = [(field.to_owned(), why.to_owned())].into();
    html(status, views::retention(session, None, &errors, None))
}

pub(super) async fn retention_page(
    State(state): State<AdminState>,
    session: Session,
    uri: Uri,
) -> Response {
    let q = query(&uri);
    let notice = done_notice(
        &q,
        &[("saved", t("Saved.")), ("revoked", t("Passkey revoked."))],
    );
    // F-2: a person's passkeys, when asked for.
    let person = q.get("passkeys").map(|p| p.trim().to_owned());
    let Some(person) = person else {
        return html(
            StatusCode::OK,
            views::retention(&session, notice, &Errors::new(), None),
        );
    };
    let Ok(user) = countersign_domain::ids::UserId::parse(&person) else {
        return refused(
            &session,
            StatusCode::BAD_REQUEST,
            "passkeys",
            t("Give the person's user id, as your site names them."),
        );
    };
    match crate::passkeys::list(&state, &session.tenant, &user).await {
        Ok(passkeys) => {
            let shown = views::PasskeysOf {
                person: &person,
                passkeys: &passkeys,
            };
            html(
                StatusCode::OK,
                views::retention_with(&session, notice, &Errors::new(), None, Some(&shown)),
            )
        }
        Err(e) => unavailable(&e),
    }
}

/// F-2: revokes one of a person's passkeys, then shows the person's passkeys again.
pub(super) async fn passkey_revoke(
    State(state): State<AdminState>,
    Guarded { session, form }: Guarded,
) -> Response {
    let person = form.get("person").unwrap_or("").trim();
    let (Ok(user), Some(id)) = (
        countersign_domain::ids::UserId::parse(person),
        form.get("id").filter(|i| !i.is_empty() && i.len() <= 1400),
    ) else {
        return refused(
            &session,
            StatusCode::BAD_REQUEST,
            "passkeys",
            t("Give the person's user id, as your site names them."),
        );
    };
    match crate::passkeys::revoke(&state, &session.tenant, &user, id).await {
        Ok(_) => {
            let person: String = url::form_urlencoded::byte_serialize(person.as_bytes()).collect();
            see_other(&format!("/admin/retention?passkeys={person}&done=revoked"))
        }
        Err(e) => unavailable(&e),
    }
}

/// places or lifts a hold, then redirects.
pub(super) async fn hold_save(
    State(state): State<AdminState>,
    Guarded { session, form }: Guarded,
) -> Response {
    use countersign_domain::ids::{CaseId, UserId};
    use countersign_domain::retention::Hold;
    let id = form.get("id").unwrap_or("").trim();
    let hold = match form.get("kind") {
        Some("person") => UserId::parse(id).ok().map(Hold::Person),
        Some("conversation") => CaseId::parse(id).ok().map(Hold::Conversation),
        _ => None,
    };
    let Some(hold) = hold else {
        return refused(
            &session,
            StatusCode::BAD_REQUEST,
            "id",
            t("Give a person's user id, or a conversation id (case_…)."),
        );
    };
    let on = form.get("held") != Some("false");
    match crate::erasure::set_hold(&state, &session.tenant, &hold, on).await {
        Ok(()) => see_other("/admin/retention?done=saved"),
        Err(e) => unavailable(&e),
    }
}

/// R-2, N-3: queues a person's erasure, then shows its job (a page of its own, so a
/// reload reads the job and never asks again).
pub(super) async fn erasure(
    State(state): State<AdminState>,
    Guarded { session, form }: Guarded,
) -> Response {
    use crate::erasure::ErasureError;
    let Ok(user) = countersign_domain::ids::UserId::parse(form.get("person").unwrap_or("").trim())
    else {
        let why = t("Give the person's user id, as your site names them.");
        return refused(&session, StatusCode::BAD_REQUEST, "person", why);
    };
    // Issue 50: an erasure cannot be undone: the first post shows what it does and asks;
    // only the confirmation's post (`confirmed=yes`) queues it.
    let held = session
        .tenant
        .holds
        .contains(&countersign_domain::retention::Hold::Person(user.clone()));
    if form.get("confirmed") != Some("yes") && !held {
        return html(
            StatusCode::OK,
            views::confirm_erasure(&session, user.as_str()),
        );
    }
    match crate::erasure::request(&state, &session.tenant, &user).await {
        Ok(job) => see_other(&format!("/admin/erasure/{}", job.id)),
        Err(ErasureError::Held) => refused(
            &session,
            StatusCode::CONFLICT,
            "person",
            t("A legal hold is on this person; lift it before erasing them."),
        ),
        Err(ErasureError::Admin(e)) => unavailable(&e),
    }
}

/// N-3: an erasure job's page: where it stands, and once done its receipt.
pub(super) async fn erasure_job(
    State(state): State<AdminState>,
    session: Session,
    Path(job_id): Path<String>,
    uri: Uri,
) -> Response {
    let download = query(&uri).get("download").map(String::as_str) == Some("receipt");
    match crate::erasure::status(&state, &session.tenant, &job_id).await {
        // Issue 50: the receipt as a file to keep (`?download=receipt`), once there is one.
        Ok(Some(job)) if download => match &job.erasure {
            Some(e) => receipt_file(&job.job_id, &e.receipt),
            None => html(
                StatusCode::NOT_FOUND,
                views::retention(&session, None, &Errors::new(), Some(&job)),
            ),
        },
        Ok(Some(job)) => html(
            StatusCode::OK,
            views::retention(&session, None, &Errors::new(), Some(&job)),
        ),
        Ok(None) => html(
            StatusCode::NOT_FOUND,
            views::retention(
                &session,
                None,
                &[(String::new(), t("No such erasure.").to_owned())].into(),
                None,
            ),
        ),
        Err(e) => unavailable(&e),
    }
}

/// The erasure's receipt as a download (a JWS, `application/jose`), named by its job.
fn receipt_file(job: &str, receipt: &str) -> Response {
    let mut res = receipt.to_owned().into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/jose"),
    );
    let name: String = job
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    if let Ok(v) = HeaderValue::from_str(&format!(
        "attachment; filename=\"erasure-receipt-{name}.jws\""
    )) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    secure_headers(h);
    res
}
