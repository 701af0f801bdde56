//! The Tenant MCP page (U-2) and the certification's result (H-1).

use super::{Errors, error_for, page};
use crate::mcp::McpView;
use crate::panel::i18n::t;
use crate::panel::session::Session;
use countersign_domain::certification::{Certification, CheckStatus};
use maud::{Markup, html};

/// A tool of the provider's live `tools/list`, as the consultation picker shows it.
#[derive(Debug, Clone)]
pub struct ToolChoice {
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Whether it is allowed now.
    pub allowed: bool,
    /// Why it cannot be a consultation (it writes, or is an action tool), if so.
    pub blocked: Option<String>,
    /// Issue 50: its own description says never to allow it.
    pub warned: bool,
}

/// The values of the Tenant MCP form.
#[derive(Debug, Clone, Default)]
pub struct McpForm {
    /// `serverUrl`.
    pub server_url: String,
    /// `audience` (empty: the `serverUrl`).
    pub audience: String,
    /// The consultations.
    pub allowed_tools: Vec<String>,
    /// The operations, comma-separated.
    pub operations: String,
    /// F-1: the operations that need the person's passkey, comma-separated.
    pub step_up: String,
    /// F-2: people without a passkey may confirm those operations without one.
    pub step_up_fallback: bool,
    /// Actions on.
    pub enabled: bool,
}

/// What the Tenant MCP page shows besides the form.
#[derive(Debug)]
pub struct McpPage<'a> {
    /// The signed-in administrator.
    pub session: &'a Session,
    /// The saved configuration (and the key to install).
    pub view: &'a McpView,
    /// The form's values.
    pub form: &'a McpForm,
    /// Errors by field.
    pub errors: &'a Errors,
    /// The live tools, once loaded.
    pub tools: Option<&'a [ToolChoice]>,
    /// Why enabling is not possible now, if it is not.
    pub enable_blocked: Option<&'a str>,
    /// The latest certification run and whether it covers the saved settings.
    pub certification: Option<(&'a Certification, bool)>,
    /// A notice after a change.
    pub notice: Option<&'a str>,
    /// Sample arguments per allowed consultation, from their input schemas.
    pub samples: &'a str,
    /// Issue 50: allowed tools whose own description says never to allow them, with it.
    pub warnings: &'a [(String, String)],
    /// Issue 50: sample arguments per operation, from the server's schemas.
    pub action_samples: &'a str,
}

/// Integration settings → Tenant MCP (U-2) and the certification (H-1).
pub fn mcp(p: &McpPage<'_>) -> Markup {
    let f = p.form;
    let configured = p.view.configured;
    let body = html! {
        @if let Some(n) = p.notice { p.notice role="status" { (n) } }
        @for (name, description) in p.warnings {
            p.error.warning role="alert" data-tool=(name) {
                code { (name) } " " (t("is allowed, but your server's own description says never to allow it:")) " “" (description) "” " (t("Untick it unless you are sure it reaches only the person's own data."))
            }
        }
        (error_for(p.errors, ""))
        form #mcp method="post" action="/admin/mcp" {
            input type="hidden" name="csrf" value=(p.session.csrf);
            label for="serverUrl" { (t("Server URL")) }
            input #serverUrl type="url" name="serverUrl" value=(f.server_url) required;
            (error_for(p.errors, "serverUrl"))
            label for="serviceToken" { (t("Service token")) }
            input #serviceToken type="password" name="serviceToken" autocomplete="off"
                placeholder=(if configured { t("unchanged (write-only)") } else { t("required") });
            (error_for(p.errors, "serviceToken"))
            label for="audience" { (t("Proof audience (optional; default: the server URL)")) }
            input #audience type="text" name="audience" value=(f.audience);
            (error_for(p.errors, "audience"))
            (consultations_fields(p))
            label for="operations" { (t("Operations (comma-separated)")) }
            input #operations type="text" name="operations" value=(f.operations);
            (error_for(p.errors, "actionPolicy.operations"))
            (step_up_fields(p))
            div.enable {
                input #enabled type="checkbox" name="enabled" value="true" checked[f.enabled]
                    disabled[p.enable_blocked.is_some() && !f.enabled];
                label for="enabled" { (t("Actions enabled (writes need the person's confirmation)")) }
                @if let Some(why) = p.enable_blocked { p.hint #enableBlocked { (why) } }
                @if p.view.actions_suspended {
                    p.error #actionsSuspended { (t("Actions are suspended: the latest certification run saw your server accept a bad proof. Fix the proof checks it names, then run the certification again.")) }
                }
                @if let Some(warning) = &p.view.certification_warning {
                    p.hint #certificationWarning { (warning) }
                }
                (error_for(p.errors, "actionPolicy.enabled"))
            }
            button type="submit" { (t("Save")) }
        }
        (tool_changes_section(p))
        (install_section(p))
        @if configured {
            (certification_section(p))
            section #remove {
                h2 { (t("Remove the connector")) }
                form method="post" action="/admin/mcp/remove" {
                    input type="hidden" name="csrf" value=(p.session.csrf);
                    input #confirmRemove type="checkbox" name="confirm" value="yes" required;
                    label for="confirmRemove" { (t("Actions stop and pending proposals are cancelled")) }
                    button type="submit" { (t("Remove")) }
                }
            }
        }
    };
    page(t("Tenant MCP"), Some(p.session), body)
}

/// V-2: every allowed tool whose descriptor changed since it was approved, the approved
/// and the live descriptor side by side, with an approve button (none for a change that
/// made it a write).
fn tool_changes_section(p: &McpPage<'_>) -> Markup {
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default();
    html! {
        @if let Some(changes) = p.view.tool_changes.as_ref().filter(|c| !c.is_empty()) {
            section #toolChanges {
                h2 { (t("Changed since approved")) }
                p.hint { (t("Your server now describes these tools differently from what was approved. Each is withheld from the model and MCP clients until you approve the change.")) }
                @for c in changes {
                    div.change data-tool=(c.name) {
                        h3 { code { (c.name) } }
                        div.side-by-side {
                            div { h4 { (t("Approved")) } pre.approved { (pretty(&c.approved)) } }
                            div { h4 { (t("Now")) } pre.live {
                                @match &c.live { Some(l) => (pretty(l)), None => (t("(no longer listed)")) }
                            } }
                        }
                        @if let Some(why) = &c.refused {
                            p.error { (why) }
                        } @else if c.live.is_some() {
                            form method="post" action="/admin/mcp/approve" {
                                input type="hidden" name="csrf" value=(p.session.csrf);
                                input type="hidden" name="tool" value=(c.name);
                                button type="submit" { (t("Approve this change")) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The consultations: the live tools' picker, or the names as text; the way to load the
/// tools (issue 50: before the first save too).
fn consultations_fields(p: &McpPage<'_>) -> Markup {
    let f = p.form;
    let configured = p.view.configured;
    html! {
        fieldset {
            legend { (t("Consultations the model may call")) }
            @if let Some(tools) = p.tools {
                @for tool in tools {
                    div.tool {
                        input type="checkbox" name="allowedTools" value=(tool.name) id=(format!("tool-{}", tool.name))
                            checked[tool.allowed] disabled[tool.blocked.is_some()];
                        label for=(format!("tool-{}", tool.name)) { code { (tool.name) } " — " (tool.description) }
                        @if let Some(why) = &tool.blocked { span.blocked { (why) } }
                        @if tool.warned { span.blocked.warned { (t("Its server says never to allow it.")) } }
                    }
                }
            } @else {
                label for="allowedToolsText" { (t("One tool name per line (or load the tools from your server)")) }
                textarea #allowedToolsText name="allowedToolsText" rows="6" {
                    @for t in &f.allowed_tools { (t) "\n" }
                }
            }
            (error_for(p.errors, "allowedTools"))
        }
        @if configured && p.tools.is_none() {
            p { a #loadTools href="/admin/mcp?tools=1" { (t("Load tools from your server")) } }
        }
        @if !configured && p.tools.is_none() {
            // Issue 50: with the URL and token typed above, before the first save.
            button #previewTools type="submit" name="intent" value="load" formnovalidate { (t("Load tools from your server")) }
        }
    }
}

/// The key, issuer and audience to install on the provider (C-5), ready to copy.
fn install_section(p: &McpPage<'_>) -> Markup {
    html! {
        @if let Some(key) = &p.view.action_verification {
            section #install {
                h2 { (t("Install on your server")) }
                dl {
                    dt { "keyId" } dd { code #keyId { (key.key_id) } button type="button" data-copy="keyId" { (t("Copy")) } }
                    dt { (t("Issuer")) } dd { code #issuer { (key.issuer) } button type="button" data-copy="issuer" { (t("Copy")) } }
                    @if let Some(url) = &p.view.server_url {
                        @let audience = p.view.audience.clone().flatten().unwrap_or_else(|| url.clone());
                        dt { (t("Audience")) } dd { code #audienceValue { (audience) } button type="button" data-copy="audienceValue" { (t("Copy")) } }
                    }
                    dt { (t("Public key")) } dd { pre #publicKey { (key.public_key_pem) } button type="button" data-copy="publicKey" { (t("Copy")) } }
                    dt { (t("JWKS")) } dd { code #jwksPath { (crate::jwks::JWKS_PATH) } (t(" on this host: follow it and key rotations need nothing from you")) }
                }
                h3 { (t("Published keys")) }
                table #publishedKeys {
                    thead { tr { th { "keyId" } th { (t("Status")) } } }
                    tbody {
                        @for k in &key.keys {
                            tr data-kid=(k.key_id) { td { code { (k.key_id) } } td.status { (k.status) } }
                        }
                    }
                }
            }
        } @else {
            p.hint { (t("The platform has no signing key installed: actions cannot be enabled.")) }
        }
    }
}

fn certification_section(p: &McpPage<'_>) -> Markup {
    let operations: Vec<&str> = p
        .form
        .operations
        .split(',')
        .map(str::trim)
        .filter(|o| !o.is_empty())
        .collect();
    html! {
        section #certification {
            h2 { (t("Certification")) }
            p { (t("Checks the saved settings against your server: each consultation with your sample arguments (and refused with a wrong service token), every operation prepared, every bad proof refused, and — with your consent — one action per operation executed with a valid proof for the synthetic test person.")) }
            form #certify method="post" action="/admin/certification" data-remember=(format!("countersign:certification:{}", p.session.tenant.id)) {
                input type="hidden" name="csrf" value=(p.session.csrf);
                label for="testUser" { (t("Synthetic test person (X-MCP-User-Id): an account of your system made for tests, its id starting with countersign-test:")) }
                input #testUser type="text" name="testUser" required placeholder="countersign-test:…" pattern="countersign-test:.+";
                label for="samples" { (t("Sample arguments per consultation (JSON object by tool name): fill in values that exist for the test person; each tool's required arguments are listed")) }
                textarea #samples name="consultations" rows="8" { (p.samples) }
                label for="secondTestUser" { (t("Second synthetic person (optional): must be refused the first person's resources")) }
                input #secondTestUser type="text" name="secondTestUser" placeholder="countersign-test:…" pattern="countersign-test:.+";
                label for="personalConsultations" { (t("Consultations whose sample arguments name the first person's resource (comma-separated)")) }
                input #personalConsultations type="text" name="personalConsultations";
                @if !operations.is_empty() {
                    label for="actionSamples" { (t("Sample arguments per operation (JSON object by operation name): every operation is prepared")) }
                    textarea #actionSamples name="actions" rows="3" { (p.action_samples) }
                    div.consent {
                        input #consent type="checkbox" name="consent" value="yes";
                        label for="consent" { (t("I consent: this run executes one action per operation for this synthetic person (a real write in my system, with a valid proof).")) }
                    }
                }
                button type="submit" { (t("Run the certification")) }
            }
            @if let Some((run, current)) = p.certification {
                (run_table(run, current))
            }
        }
    }
}

/// A run's result, check by check.
pub fn run_table(run: &Certification, current: bool) -> Markup {
    let verdict = if run.passed() { "passed" } else { "failed" };
    html! {
        div #run data-passed=(run.passed()) {
            p.verdict { (t("Latest run ")) strong #verdict { (t(verdict)) } (t(" at ")) (run.at) (t(" (test user ")) code { (run.test_user) } (t(", configuration version ")) (run.subject.config_version) ")"
                @if !current { (t(" — it does not cover the settings saved now: run it again")) } }
            table {
                thead { tr { th { (t("What was checked")) } th { (t("Result")) } th { (t("What we saw")) } } }
                tbody {
                    @for c in &run.checks {
                        @let status = match c.status { CheckStatus::Passed => "passed", CheckStatus::Failed => "failed", CheckStatus::Skipped => "skipped" };
                        tr class=(status) data-check=(c.id) {
                            td { (crate::panel::samples::describe_check(&c.id)) } td { (t(status)) } td { (c.reason_in(crate::panel::i18n::lang())) }
                        }
                    }
                }
            }
        }
    }
}

/// Issue 50: the run in one line: how many checks passed, failed and were skipped.
fn run_summary(run: &Certification) -> Markup {
    let count = |s: CheckStatus| run.checks.iter().filter(|c| c.status == s).count();
    let (passed, failed, skipped) = (
        count(CheckStatus::Passed),
        count(CheckStatus::Failed),
        count(CheckStatus::Skipped),
    );
    html! {
        p #runSummary class=(if run.passed() { "notice" } else { "error" }) {
            @if run.passed() { (t("Passed: ")) } @else if failed > 0 { (t("Failed: ")) } @else { (t("Did not pass: ")) }
            (passed) (t(" checks passed, ")) (failed) (t(" failed, ")) (skipped) (t(" skipped."))
        }
    }
}

/// Issue 50: "Enable actions now" after a passing run over the saved settings: the saved
/// settings posted again with actions on (the token is kept, as an empty field keeps it).
fn enable_now(session: &Session, f: &McpForm) -> Markup {
    html! {
        form #enableNow method="post" action="/admin/mcp" {
            input type="hidden" name="csrf" value=(session.csrf);
            input type="hidden" name="serverUrl" value=(f.server_url);
            input type="hidden" name="audience" value=(f.audience);
            @for tool in &f.allowed_tools { input type="hidden" name="allowedTools" value=(tool); }
            input type="hidden" name="operations" value=(f.operations);
            input type="hidden" name="stepUp" value=(f.step_up);
            @if f.step_up_fallback { input type="hidden" name="stepUpFallback" value="true"; }
            input type="hidden" name="enabled" value="true";
            p.help { (t("This run covers the saved settings: people can start countersigning changes as soon as you enable actions.")) }
            button type="submit" { (t("Enable actions now")) }
        }
    }
}

/// The page after a run started from the panel (served by the messages function).
pub fn certification_result(
    session: &Session,
    run: Option<(&Certification, bool)>,
    errors: &Errors,
    enable: Option<&McpForm>,
) -> Markup {
    let body = html! {
        (error_for(errors, ""))
        @for (field, message) in errors.iter().filter(|(f, _)| !f.is_empty()) {
            p.error role="alert" data-field=(field) { (field) ": " (message) }
        }
        @if let Some((run, _)) = run { (run_summary(run)) }
        @if let Some(f) = enable { (enable_now(session, f)) }
        @if let Some((run, current)) = run { (run_table(run, current)) }
        p { a href="/admin/mcp#certification" { (t("Back to the Tenant MCP settings")) } }
    };
    page(t("Certification"), Some(session), body)
}

/// F-1, F-2: the passkey operations, how many people have a passkey, the fallback for
/// those who have none, and the tick a new passkey operation waits for.
fn step_up_fields(p: &McpPage<'_>) -> Markup {
    let f = p.form;
    html! {
        label for="stepUp" { (t("Operations that need the person's passkey (comma-separated; none by default)")) }
        input #stepUp type="text" name="stepUp" value=(f.step_up);
        p.hint #passkeyHolders {
            (t("People with a passkey for your company now:")) " " strong { (p.view.passkey_holders) } ". "
            (t("Everyone else must sign in through your site and create one before they can confirm an operation that needs it."))
        }
        div.enable {
            input #stepUpFallback type="checkbox" name="stepUpFallback" value="true" checked[f.step_up_fallback];
            label for="stepUpFallback" { (t("People who have no passkey (never created one, or lost it) may confirm these operations without one (their proof then carries no step-up)")) }
        }
        div.enable {
            input #stepUpAcknowledged type="checkbox" name="stepUpAcknowledged" value="true";
            label for="stepUpAcknowledged" { (t("I understand: an operation I add here cannot be confirmed without a passkey")) }
        }
        @for (field, message) in p.errors.iter().filter(|(f, _)| f.starts_with("actionPolicy.stepUp")) {
            p.error role="alert" data-field=(field) { (message) }
        }
    }
}
