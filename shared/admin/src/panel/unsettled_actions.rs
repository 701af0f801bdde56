//! Unsettled actions: the list and a settlement.

use super::*;

pub(super) async fn render_unsettled(
    state: &AdminState,
    session: &Session,
    errors: &Errors,
    notice: Option<&str>,
    status: StatusCode,
) -> Response {
    match crate::unsettled::list(state, &session.tenant).await {
        Ok(items) => html(status, views::unsettled(session, &items, errors, notice)),
        Err(e) => unavailable(&e),
    }
}

pub(super) async fn unsettled_page(
    State(state): State<AdminState>,
    session: Session,
    uri: Uri,
) -> Response {
    let notice = query(&uri)
        .get("done")
        .map(|_| t("Recorded. The person was told, and the conversation is unblocked."));
    render_unsettled(&state, &session, &Errors::new(), notice, StatusCode::OK).await
}

pub(super) async fn settle(
    State(state): State<AdminState>,
    Guarded { session, form }: Guarded,
) -> Response {
    use countersign_domain::ids::{ActionId, CaseId};
    let outcome = match form.get("outcome") {
        Some("completed") => crate::unsettled::Outcome::Completed,
        Some("failed") => crate::unsettled::Outcome::Failed,
        _ => {
            let errors = [(
                String::new(),
                t("Choose what your system shows.").to_owned(),
            )]
            .into();
            return render_unsettled(&state, &session, &errors, None, StatusCode::BAD_REQUEST)
                .await;
        }
    };
    let ids = CaseId::parse(form.get("caseId").unwrap_or(""))
        .ok()
        .zip(ActionId::parse(form.get("actionId").unwrap_or("")).ok());
    let Some((case, action)) = ids else {
        let errors = errors_of(&AdminError::NoSuchAction);
        return render_unsettled(&state, &session, &errors, None, StatusCode::NOT_FOUND).await;
    };
    let reason = form.get("reason").unwrap_or("");
    match crate::unsettled::settle(&state, &session.tenant, &case, &action, outcome, reason).await {
        Ok(_) => see_other("/admin/actions?done=1"),
        Err(e) => {
            let page = |errors: Errors, status| async move {
                render_unsettled(&state, &session, &errors, None, status).await
            };
            PanelError::from(e).answer(page).await
        }
    }
}
