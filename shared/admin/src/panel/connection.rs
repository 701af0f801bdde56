//! The MCP page (U-2, C-3 … C-8, V-1, V-2): the connection form, the live tools, save, approve, remove.

use super::*;
use countersign_domain::config::{Given, McpConfigDraft, PolicyDraft};

/// The saved configuration and the latest run.
pub(super) async fn saved(
    state: &AdminState,
    tenant: &Tenant,
) -> Result<(Option<StoredMcpConfig>, Option<Certification>), AdminError> {
    let stored = mcp::current(state, tenant).await?;
    let run = state
        .stores
        .certifications
        .latest_certification(&tenant.id)
        .await?;
    Ok((stored, run))
}

/// The form's text for a list: its items, comma-separated.
fn comma_list<'a, T: ToString + 'a>(items: impl IntoIterator<Item = &'a T>) -> String {
    items
        .into_iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn form_of(stored: Option<&StoredMcpConfig>) -> McpForm {
    let Some(s) = stored else {
        return McpForm::default();
    };
    let c = &s.config;
    McpForm {
        server_url: c.server_url.to_string(),
        audience: c.audience.clone().unwrap_or_default(),
        allowed_tools: c.allowed_tools.iter().map(ToString::to_string).collect(),
        operations: comma_list(&c.action_policy.operations),
        step_up: comma_list(&c.action_policy.step_up),
        step_up_fallback: c.action_policy.step_up_fallback,
        enabled: c.action_policy.enabled,
    }
}

/// Why actions cannot be enabled on the saved settings now, if they cannot (C-6, H-4).
pub(super) fn enable_blocked(
    view: &mcp::McpView,
    stored: Option<&StoredMcpConfig>,
    run: Option<&Certification>,
) -> Option<&'static str> {
    if view.action_verification.is_none() {
        return Some(t(
            "The platform has no signing key installed: actions cannot be enabled.",
        ));
    }
    let covering = stored.and_then(|s| run.filter(|r| r.subject.covers(&CertifiedSubject::of(s))));
    match covering {
        Some(r) if r.passed() => None,
        // Issue 50: a failed run on these very settings asks for a fix, not for a save.
        Some(_) => Some(t(
            "The latest certification run on these settings failed: fix on your server what it names, then run it again.",
        )),
        None => Some(t(
            "Save the settings, install the key on your server, then run the certification below: actions can be enabled once it passes on the saved settings.",
        )),
    }
}

/// `tools` as the consultation picker shows them (H-2: a write, an operation or an action
/// tool cannot be chosen), `allowed` ticked; the reason a tool is blocked, in the
/// administrator's language.
pub(super) fn choices(
    tools: &[countersign_domain::ports::ProviderTool],
    allowed: &[String],
    operations: &[OperationName],
) -> Vec<ToolChoice> {
    tools
        .iter()
        .map(|tool| {
            let name = tool.name.as_str();
            // V-1: the rule the save and the run time apply.
            let blocked = vetting::refusal(tool, operations).map(|why| {
                format!(
                    "{}{}",
                    why.message(i18n::lang()),
                    t(": cannot be a consultation")
                )
            });
            let description = tool.description().to_owned();
            ToolChoice {
                name: name.to_owned(),
                warned: never_allowlist(&description),
                description,
                allowed: blocked.is_none() && allowed.iter().any(|a| a == name),
                blocked,
            }
        })
        .collect()
}

/// Issue 50: whether a tool's own description tells tenants never to allow it (a
/// read-only tool that reaches other people's data, say): the panel echoes the warning.
pub(super) fn never_allowlist(description: &str) -> bool {
    let d = description.to_lowercase();
    d.contains("never allowlist")
        || d.contains("never allow-list")
        || d.contains("do not allowlist")
}

/// The fields the MCP page shows its refusals under (a refusal of any other goes to the
/// top).
const MCP_FIELDS: [&str; 10] = [
    "",
    "serverUrl",
    "serviceToken",
    "audience",
    "allowedTools",
    "actionPolicy.operations",
    "actionPolicy.enabled",
    "actionPolicy.stepUp",
    "actionPolicy.stepUp.",
    "actionPolicy.stepUpFallback",
];

/// Issue 50: each allowed tool whose own description says never to allow it, with it.
fn never_allow_warnings(
    config: &countersign_domain::config::McpConfig,
    live: &[countersign_domain::ports::ProviderTool],
) -> Vec<(String, String)> {
    live.iter()
        .filter(|tool| {
            config
                .allowed_tools
                .iter()
                .any(|a| a.as_str() == tool.name.as_str())
        })
        .filter(|tool| never_allowlist(tool.description()))
        .map(|tool| (tool.name.as_str().to_owned(), tool.description().to_owned()))
        .collect()
}

/// Which tools the MCP page shows in its picker.
pub(super) enum Picker {
    /// None: the text box of names.
    Closed,
    /// The saved server's, as it lists them now.
    Saved,
    /// A server's not saved yet (issue 50: tools are loadable before the first save).
    Preview(Vec<ToolChoice>),
}

pub(super) async fn mcp_page(
    State(state): State<AdminState>,
    session: Session,
    uri: Uri,
) -> Response {
    let q = query(&uri);
    let notice = done_notice(
        &q,
        &[
            ("saved", t("Saved.")),
            ("removed", t("The connector was removed; actions stopped.")),
            (
                "approved",
                t("Approved: the tool is offered again as your server lists it now."),
            ),
        ],
    );
    let picker = if q.contains_key("tools") {
        Picker::Saved
    } else {
        Picker::Closed
    };
    let shown = Shown {
        form: None,
        errors: Errors::new(),
        picker,
        notice,
    };
    render_mcp(&state, &session, shown, StatusCode::OK).await
}

/// The Tenant MCP page, with `form` (else the saved values) and `errors`.
/// What the Tenant MCP page shows besides the saved settings: the form as typed (`None`:
/// the saved one), its refusals, the tools picker and a notice.
pub(super) struct Shown<'a> {
    form: Option<McpForm>,
    errors: Errors,
    picker: Picker,
    notice: Option<&'a str>,
}

impl Shown<'_> {
    /// The form as typed, refused with `errors`.
    fn refused(form: Option<McpForm>, errors: Errors) -> Self {
        Self {
            form,
            errors,
            picker: Picker::Closed,
            notice: None,
        }
    }
}

pub(super) async fn render_mcp(
    state: &AdminState,
    session: &Session,
    shown: Shown<'_>,
    status: StatusCode,
) -> Response {
    let Shown {
        form,
        errors,
        picker,
        notice,
    } = shown;
    let (stored, run) = match saved(state, &session.tenant).await {
        Ok(s) => s,
        Err(e) => return unavailable(&e),
    };
    let live = mcp::live_tools(state, &session.tenant, stored.as_ref()).await;
    let view = match mcp::view(state, &session.tenant, stored.as_ref(), live.as_deref()).await {
        Ok(v) => v,
        Err(e) => return unavailable(&e),
    };
    let mut errors = placed(errors, &MCP_FIELDS);
    let form = form.unwrap_or_else(|| form_of(stored.as_ref()));
    // One tools/list per page: the view's, reused by the picker and the warnings.
    let tools = match (picker, &stored) {
        (Picker::Preview(choices), _) => Some(choices),
        (Picker::Saved, Some(s)) => match live.as_deref() {
            Some(list) => Some(choices(
                list,
                &form.allowed_tools,
                &s.config.action_policy.operations,
            )),
            None => {
                errors.insert("allowedTools".into(), t("Your server's tools/list could not be read: check its URL, its service token and that it is up.").into());
                None
            }
        },
        _ => None,
    };
    let warnings = stored
        .as_ref()
        .zip(live.as_deref())
        .map(|(s, list)| never_allow_warnings(&s.config, list))
        .unwrap_or_default();
    let certification = stored
        .as_ref()
        .zip(run.as_ref())
        .map(|(s, r)| (r, r.subject.covers(&CertifiedSubject::of(s))));
    let samples = stored.as_ref().map_or_else(
        || "{}".to_owned(),
        |s| samples::consultation_samples(&s.config),
    );
    let action_samples = stored.as_ref().map_or_else(
        || "{}".to_owned(),
        |s| samples::operation_samples(&s.config, live.as_deref()),
    );
    let page = McpPage {
        session,
        view: &view,
        form: &form,
        errors: &errors,
        tools: tools.as_deref(),
        enable_blocked: enable_blocked(&view, stored.as_ref(), run.as_ref()),
        certification,
        notice,
        samples: &samples,
        action_samples: &action_samples,
        warnings: &warnings,
    };
    html(status, views::mcp(&page))
}

/// The Tenant MCP form's values as typed (the picker's ticks and the text box's lines are
/// one list of consultations; the operations are comma-separated).
impl From<&Form> for McpForm {
    fn from(form: &Form) -> Self {
        let mut tools: Vec<String> = form.all("allowedTools").map(str::to_owned).collect();
        tools.extend(form.lines("allowedToolsText"));
        Self {
            server_url: form.get("serverUrl").unwrap_or("").trim().to_owned(),
            audience: form.get("audience").unwrap_or("").trim().to_owned(),
            allowed_tools: tools,
            operations: form.get("operations").unwrap_or("").trim().to_owned(),
            step_up: form.get("stepUp").unwrap_or("").trim().to_owned(),
            step_up_fallback: form.get("stepUpFallback") == Some("true"),
            enabled: form.get("enabled") == Some("true"),
        }
    }
}

impl McpForm {
    /// The save's input, with `token` as [`token_to_send`] chose it: the same draft the
    /// API's body is parsed into, checked by the same rules (no JSON in between).
    fn draft(&self, token: String) -> McpConfigDraft {
        let listed = |items: Vec<String>| Given::Value(items.into_iter().enumerate().collect());
        let names = |text: &str| -> Vec<String> {
            text.split(',')
                .map(str::trim)
                .filter(|o| !o.is_empty())
                .map(str::to_owned)
                .collect()
        };
        let operations = names(&self.operations);
        // F-1: the passkey operations; every other one `none`.
        let step_up = names(&self.step_up)
            .into_iter()
            .map(|op| (op, "passkey".to_owned()))
            .collect();
        McpConfigDraft {
            server_url: Given::Value(self.server_url.clone()),
            service_token: Given::Value(token),
            audience: if self.audience.is_empty() {
                Given::Absent
            } else {
                Given::Value(self.audience.clone())
            },
            allowed_tools: listed(self.allowed_tools.clone()),
            action_policy: Given::Value(PolicyDraft {
                contract_version: Given::Value(countersign_domain::contract::CONTRACT_VERSION),
                enabled: Given::Value(self.enabled),
                operations: listed(operations),
                step_up: Given::Value(step_up),
                step_up_fallback: Given::Value(self.step_up_fallback),
            }),
        }
    }
}

pub(super) async fn mcp_save(
    State(state): State<AdminState>,
    Guarded { session, form }: Guarded,
) -> Response {
    let values = McpForm::from(&form);
    if form.get("intent") == Some("load") {
        return preview(&state, &session, values, &form).await;
    }
    if let Some(errors) = unacknowledged_step_up(&state, &session, &values, &form).await {
        let shown = Shown::refused(Some(values), errors);
        return render_mcp(&state, &session, shown, StatusCode::BAD_REQUEST).await;
    }
    let (token, withheld) =
        match token_to_send(&state, &session, &values, form.get("serviceToken")).await {
            Ok(sent) => sent,
            Err(e) => return unavailable(&e),
        };
    let saved = match values.draft(token).validate(state.url_policy) {
        Ok(config) => mcp::save_config(&state, &session.tenant, config).await,
        Err(errors) => Err(mcp::refused(errors)),
    };
    match saved {
        Ok(_) => see_other("/admin/mcp?done=saved"),
        Err(e) => {
            let page = |mut errors: Errors, status| async move {
                if let Some(m) = errors.get_mut("serviceToken").filter(|_| withheld) {
                    NEW_SERVER_NEEDS_TOKEN.clone_into(m);
                }
                render_mcp(
                    &state,
                    &session,
                    Shown::refused(Some(values), errors),
                    status,
                )
                .await
            };
            PanelError::from(e).answer(page).await
        }
    }
}

/// A consultation name the preview validates with while none is chosen yet (never saved,
/// never called: the preview only lists the server's tools).
const PREVIEW_PLACEHOLDER: &str = "countersign-tools-preview";

/// Issue 50: "Load tools from your server" before anything is saved: the typed URL and
/// token, checked by the save's rules, read the server's tools/list; nothing is stored.
async fn preview(state: &AdminState, session: &Session, values: McpForm, form: &Form) -> Response {
    let token = match token_to_send(state, session, &values, form.get("serviceToken")).await {
        Ok((token, _)) => token,
        Err(e) => return unavailable(&e),
    };
    // The consultations are what the list is loaded to choose, and whether actions are on
    // does not change how the server is reached: neither is asked for yet.
    let mut reach = values.clone();
    if reach.allowed_tools.is_empty() {
        reach.allowed_tools = vec![PREVIEW_PLACEHOLDER.to_owned()];
    }
    reach.enabled = false;
    let listed = match reach.draft(token).validate(state.url_policy) {
        Ok(config) => mcp::published_tools(state, &session.tenant, &config)
            .await
            .map(|list| (list, config.action_policy.operations)),
        Err(errors) => Err(mcp::refused(errors)),
    };
    match listed {
        Ok((list, operations)) => {
            let tools = choices(&list, &values.allowed_tools, &operations);
            let notice = t("Your server's tools are loaded: choose the consultations, then save.");
            let shown = Shown {
                form: Some(values),
                errors: Errors::new(),
                picker: Picker::Preview(tools),
                notice: Some(notice),
            };
            render_mcp(state, session, shown, StatusCode::OK).await
        }
        Err(e) => {
            let page = |errors, status| {
                render_mcp(state, session, Shown::refused(Some(values), errors), status)
            };
            PanelError::from(e).answer(page).await
        }
    }
}

/// F-1 (rollout without lockout): a save that makes an operation need the passkey is
/// refused, with the warning under the field, until the administrator ticks that they
/// understand (the page shows how many people have a passkey). The API needs no tick: its
/// callers read `passkeyHolders` themselves.
async fn unacknowledged_step_up(
    state: &AdminState,
    session: &Session,
    values: &McpForm,
    form: &Form,
) -> Option<Errors> {
    if form.get("stepUpAcknowledged") == Some("true") {
        return None;
    }
    let stored = mcp::current(state, &session.tenant).await.ok().flatten();
    let before = stored
        .as_ref()
        .map(|s| s.config.action_policy.step_up.clone())
        .unwrap_or_default();
    let added = values
        .step_up
        .split(',')
        .map(str::trim)
        .any(|op| !op.is_empty() && !before.iter().any(|b| b.as_str() == op));
    added.then(|| {
        Errors::from([(
            "actionPolicy.stepUp.acknowledged".to_owned(),
            t("People without a passkey will have to create one before they can confirm this operation. Tick “I understand” below the field to go ahead.").to_owned(),
        )])
    })
}

/// Shown when the server URL changes and the token field is empty.
pub(super) const NEW_SERVER_NEEDS_TOKEN: &str = "A new server URL needs its service token again: the saved token is never sent to another server.";

/// The token a save sends, and whether the saved one was withheld: the field's token, or,
/// when the field is left empty (it is write-only), the saved one — but only to the server
/// it was saved for. A new URL sends no token, so the API refuses the save as it refuses
/// any body without one (C-3), with every other error of the form.
pub(super) async fn token_to_send(
    state: &AdminState,
    session: &Session,
    values: &McpForm,
    field: Option<&str>,
) -> Result<(String, bool), AdminError> {
    if let Some(t) = field.filter(|t| !t.is_empty()) {
        return Ok((t.to_owned(), false));
    }
    let Some(stored) = mcp::current(state, &session.tenant).await? else {
        return Ok((String::new(), false));
    };
    if stored.config.server_url.as_str() != values.server_url {
        return Ok((String::new(), true));
    }
    let kept = mcp::token_of(state, &session.tenant, Some(&stored)).await?;
    Ok((
        kept.map(|t| t.expose().to_owned()).unwrap_or_default(),
        false,
    ))
}

/// V-2: approves a changed tool's live descriptor (the button next to it).
pub(super) async fn mcp_approve(
    State(state): State<AdminState>,
    Guarded { session, form }: Guarded,
) -> Response {
    let tool = form.get("tool").unwrap_or("").to_owned();
    match mcp::approve(&state, &session.tenant, &tool).await {
        Ok(_) => see_other("/admin/mcp?done=approved"),
        Err(e) => {
            let page =
                |errors, status| render_mcp(&state, &session, Shown::refused(None, errors), status);
            PanelError::from(e).answer(page).await
        }
    }
}

pub(super) async fn mcp_remove(
    State(state): State<AdminState>,
    Guarded { session, .. }: Guarded,
) -> Response {
    match mcp::delete(&state, &session.tenant).await {
        Ok(()) => see_other("/admin/mcp?done=removed"),
        Err(e) => {
            let page =
                |errors, status| render_mcp(&state, &session, Shown::refused(None, errors), status);
            PanelError::from(e).answer(page).await
        }
    }
}
