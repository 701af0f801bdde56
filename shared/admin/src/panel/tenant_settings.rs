//! The tenant's settings page (S-4).

use super::*;

pub(super) async fn settings_page(session: Session, uri: Uri) -> Response {
    let notice =
        (query(&uri).get("done").map(String::as_str) == Some("saved")).then(|| t("Saved."));
    html(
        StatusCode::OK,
        views::settings(&session, notice, &Errors::new()),
    )
}

/// Issue 50: the accent and both welcomes from the form, each refusal under its field in
/// the administrator's language.
fn appearance_form(form: &Form) -> Result<countersign_domain::appearance::Appearance, Errors> {
    use countersign_domain::appearance::{Appearance, parse_accent, welcome};
    let lang = super::i18n::lang();
    let refused = |field: &str, e: countersign_domain::appearance::AppearanceError| -> Errors {
        [(field.to_owned(), e.message(lang).to_owned())].into()
    };
    let accent =
        parse_accent(form.get("accent").unwrap_or("")).map_err(|e| refused("accent", e))?;
    let one = |prefix: &str| {
        let field = |name: &str| form.get(&format!("{prefix}.{name}")).unwrap_or("");
        let starters: Vec<&str> = (1..=countersign_domain::appearance::MAX_STARTERS)
            .map(|i| field(&format!("starter{i}")))
            .collect();
        welcome(field("greeting"), field("assistantName"), &starters)
            .map_err(|e| refused(&format!("{prefix}.greeting"), e))
    };
    Ok(Appearance {
        accent,
        en: one("welcome.en")?,
        pt: one("welcome.pt")?,
    })
}

/// The settings form, checked whole before anything is saved, parsed straight into the use
/// case's typed input.
pub(super) fn settings_form(
    form: &Form,
    policy: countersign_domain::config::UrlPolicy,
) -> Result<crate::tenants::SettingsChange, Errors> {
    let field_error = |field: &str, text: String| -> Errors { [(field.to_owned(), text)].into() };
    let Some(language) = form
        .get("language")
        .and_then(countersign_domain::texts::Language::from_tag)
    else {
        return Err(field_error(
            "language",
            t("Choose English or Português (Brasil).").to_owned(),
        ));
    };
    //
    let sign_in_url =
        crate::tenants::parse_sign_in_url(form.get("signInUrl").unwrap_or(""), policy)
            .map_err(|m| field_error("signInUrl", format!("{}: {m}", t("Sign-in hand-off URL"))))?;
    // empty leaves it unset (or as it is).
    let retention = match form
        .get("retentionDays")
        .map(str::trim)
        .filter(|v| !v.is_empty())
    {
        None => None,
        Some(v) => Some(
            v.parse::<i64>()
                .ok()
                .and_then(|d| countersign_domain::retention::RetentionDays::new(d).ok())
                .ok_or_else(|| {
                    field_error(
                        "retentionDays",
                        t("Retention: a whole number of days from 1 to 3650.").to_owned(),
                    )
                })?,
        ),
    };
    let appearance = appearance_form(form)?;
    Ok(crate::tenants::SettingsChange {
        language: Some(language),
        sign_in_url: Some(sign_in_url),
        retention_days: retention,
        appearance: Some(appearance),
    })
}

/// S-4, X-3, R-1: saves the tenant's settings, then redirects (a reload never posts again).
pub(super) async fn settings_save(
    State(state): State<AdminState>,
    Guarded { session, form }: Guarded,
) -> Response {
    let settings = match settings_form(&form, state.url_policy) {
        Ok(s) => s,
        Err(errors) => {
            // The form again with what was typed, so a refusal costs no retyping.
            let shown = as_typed(&session, &form);
            return html(
                StatusCode::BAD_REQUEST,
                views::settings(&shown, None, &errors),
            );
        }
    };
    if let Err(e) = crate::tenants::save_settings(&state, &session.tenant, settings).await {
        return unavailable(&e);
    }
    see_other("/admin/settings?done=saved")
}

/// `session` with the texts of `form` in place of the stored ones, unchecked: only to show
/// the refused form again as it was typed (never saved).
fn as_typed(session: &Session, form: &Form) -> Session {
    use countersign_domain::appearance::{MAX_STARTERS, Welcome};
    let mut shown = session.clone();
    let raw = |name: &str| form.get(name).unwrap_or("").to_owned();
    shown.tenant.sign_in_url = Some(raw("signInUrl")).filter(|u| !u.is_empty());
    let a = &mut shown.tenant.appearance;
    a.accent = Some(raw("accent")).filter(|v| !v.is_empty());
    let welcome = |prefix: &str| {
        Some(Welcome {
            greeting: raw(&format!("{prefix}.greeting")),
            assistant_name: raw(&format!("{prefix}.assistantName")),
            starters: (1..=MAX_STARTERS)
                .map(|i| raw(&format!("{prefix}.starter{i}")))
                .collect(),
        })
    };
    a.en = welcome("welcome.en");
    a.pt = welcome("welcome.pt");
    shown
}
