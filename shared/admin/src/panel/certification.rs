//! The certification run from the panel (H-1 … H-4, V-3, N-7).

use super::*;

/// The certification run started from the panel (H-1), served by the messages function.
pub(super) async fn certification(
    State(state): State<AdminState>,
    headers: HeaderMap,
    Guarded { session, form }: Guarded,
) -> Response {
    let request = match certification_request(&form) {
        // V-3: the jku and x5u proofs point at this deployment's untrusted key.
        Ok(r) => CertifyRequest {
            key_urls: Some(countersign_http::pages::origin_of(&headers)),
            ..r
        },
        Err(errors) => {
            return html(
                StatusCode::BAD_REQUEST,
                views::certification_result(&session, None, &errors, None),
            );
        }
    };
    match certify::run(&state, &session.tenant, &request).await {
        // Issue 50: the result is a page of its own, so a reload shows it again and never
        // runs the certification (with its consented write) a second time.
        Ok(_) => see_other("/admin/certification"),
        Err(e) => {
            let page = |errors: Errors, status| async move {
                html(
                    status,
                    views::certification_result(&session, None, &errors, None),
                )
            };
            PanelError::from(e).answer(page).await
        }
    }
}

/// `GET /admin/certification`: the latest run's result (the Tenant MCP page when there is
/// none yet).
pub(super) async fn latest_certification(
    State(state): State<AdminState>,
    session: Session,
) -> Response {
    let latest = state
        .stores
        .certifications
        .latest_certification(&session.tenant.id)
        .await;
    let run = match latest {
        Ok(Some(run)) => run,
        Ok(None) => return see_other("/admin/mcp"),
        Err(e) => return unavailable(&crate::state::store_down(e)),
    };
    let stored = match mcp::current(&state, &session.tenant).await {
        Ok(s) => s,
        Err(e) => return unavailable(&e),
    };
    let current = stored
        .as_ref()
        .is_some_and(|s| run.subject.covers(&CertifiedSubject::of(s)));
    // Issue 50: a passing run over the saved settings, actions still off: one button on.
    let enable = stored
        .as_ref()
        .filter(|s| current && run.passed() && !s.config.action_policy.enabled)
        .map(|s| form_of(Some(s)));
    html(
        StatusCode::OK,
        views::certification_result(
            &session,
            Some((&run, current)),
            &Errors::new(),
            enable.as_ref(),
        ),
    )
}

/// The run's request from the panel's form; errors by field.
pub(super) fn certification_request(form: &Form) -> Result<CertifyRequest, Errors> {
    let mut errors = Errors::new();
    let test_user = UserId::parse(form.get("testUser").unwrap_or("").trim())
        .map_err(|_| {
            errors.insert(
                "testUser".into(),
                t("Give the test person's user id, as your site names them.").into(),
            )
        })
        .ok();
    let (consultations, actions) = samples(form, &mut errors);
    let second = form.get("secondTestUser").unwrap_or("").trim();
    let second_user = if second.is_empty() {
        None
    } else {
        UserId::parse(second)
            .map_err(|_| {
                errors.insert(
                    "secondTestUser".into(),
                    t("Give the second test person's user id, as your site names them.").into(),
                )
            })
            .ok()
    };
    let personal: Vec<String> = form
        .get("personalConsultations")
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect();
    let step_up = step_up_operations(form, &mut errors);
    match test_user {
        Some(test_user) if errors.is_empty() => Ok(CertifyRequest {
            test_user,
            second_user,
            personal,
            consultations,
            actions,
            consent: form.get("consent") == Some("yes"),
            key_urls: None,
            step_up,
        }),
        _ => Err(errors),
    }
}

/// Sample arguments by tool or operation name.
type Samples = std::collections::BTreeMap<String, Map<String, Value>>;

/// The run's sample arguments from the form: consultations and operations, each a JSON
/// object of names to argument objects; each refusal under its field.
fn samples(form: &Form, errors: &mut Errors) -> (Samples, Samples) {
    let consultations = samples_of(
        form,
        "consultations",
        |name| ToolName::parse(name).is_ok(),
        t("Each entry is a tool's name with a JSON object of its arguments."),
        errors,
    );
    let actions = samples_of(
        form,
        "actions",
        |name| OperationName::parse(name).is_ok(),
        t("Each entry is an operation's name with a JSON object of its arguments."),
        errors,
    );
    (consultations, actions)
}

/// The form's `field`: a JSON object (empty when left empty) of names `named` accepts to
/// argument objects. A field that is no object is refused under `field`; an entry that
/// is not a name and an object, under `field.name` with `why`.
fn samples_of(
    form: &Form,
    field: &str,
    named: impl Fn(&str) -> bool,
    why: &str,
    errors: &mut Errors,
) -> Samples {
    let raw = form.get(field).unwrap_or("").trim();
    let raw = if raw.is_empty() { "{}" } else { raw };
    let Ok(Value::Object(entries)) = serde_json::from_str::<Value>(raw) else {
        errors.insert(field.into(), t("Write a JSON object here (an argument name and value in braces), or leave it empty.").into());
        return Samples::new();
    };
    let mut samples = Samples::new();
    for (name, args) in entries {
        match args {
            Value::Object(a) if named(&name) => {
                samples.insert(name, a);
            }
            _ => {
                errors.insert(format!("{field}.{name}"), why.into());
            }
        }
    }
    samples
}

/// F-6: the operations to certify with the passkey step-up (`stepUp`, comma-separated).
fn step_up_operations(
    form: &Form,
    errors: &mut std::collections::BTreeMap<String, String>,
) -> Vec<countersign_domain::ids::OperationName> {
    form.get("stepUp")
        .unwrap_or("")
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .filter_map(|name| {
            countersign_domain::ids::OperationName::parse(name)
                .map_err(|_| {
                    errors.insert(
                        "stepUp".into(),
                        t("Name configured operations, separated by commas.").into(),
                    )
                })
                .ok()
        })
        .collect()
}
