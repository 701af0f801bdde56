//! The panel's pages, rendered on the server with `maud` (every interpolated value is
//! HTML-escaped; there is no raw HTML from data). No inline script or style: the CSP
//! allows only the panel's own files.

use super::i18n::t;
use super::session::Session;
use countersign_domain::ports::WidgetKey;
use maud::{DOCTYPE, Markup, html};
use std::collections::BTreeMap;

mod mcp;
mod retention;
pub use mcp::{McpForm, McpPage, ToolChoice, certification_result, mcp, run_table};
pub use retention::{PasskeysOf, confirm_erasure, retention, retention_with};

/// Field name → the message shown next to it (`""` for the form as a whole).
pub type Errors = BTreeMap<String, String>;

/// The shell of every page.
pub fn page(title: &str, session: Option<&Session>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang=(super::i18n::lang().tag()) {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) (t(" · Countersign admin")) }
                link rel="stylesheet" href="/admin/static/panel.css";
                link rel="icon" type="image/svg+xml" href="/admin/static/favicon.svg";
                script src="/admin/static/panel.js" defer {}
            }
            body {
                header {
                    strong { "Countersign admin" }
                    (language_switch())
                    @if let Some(s) = session {
                        nav aria-label=(t("Sections")) {
                            a href="/admin" { (t("Overview")) }
                            a href="/admin/mcp" { (t("Tenant MCP")) }
                            a href="/admin/widgets" { (t("Widget credentials")) }
                            a href="/admin/actions" { (t("Unsettled actions")) }
                            a href="/admin/audit" { (t("Audit trail")) }
                            a href="/admin/settings" { (t("Settings")) }
                            a href="/admin/retention" { (t("Holds and erasure")) }
                        }
                        span.tenant { (s.tenant.name) " (" (s.tenant.id) ")" }
                        form method="post" action="/admin/logout" {
                            input type="hidden" name="csrf" value=(s.csrf);
                            button type="submit" { (t("Sign out")) }
                        }
                    }
                }
                main { h1 { (title) } (body) }
            }
        }
    }
}

/// The panel's language, switched from any page and remembered (S-4): a plain link to
/// the other language, back to this page.
fn language_switch() -> Markup {
    use countersign_domain::texts::Language;
    let (to, label) = match super::i18n::lang() {
        Language::En => ("pt-BR", "Português"),
        Language::Pt => ("en", "English"),
    };
    html! {
        a #panelLanguage href=(format!("/admin/language?to={to}")) lang=(to) { (label) }
    }
}

/// An error next to a field, if any.
pub(super) fn error_for(errors: &Errors, field: &str) -> Markup {
    html! {
        @if let Some(m) = errors.get(field) {
            p.error role="alert" data-field=(field) { (m) }
        }
    }
}

/// The tenant's settings (S-4): the chat's default language.
pub fn settings(session: &Session, notice: Option<&str>, errors: &Errors) -> Markup {
    use countersign_domain::texts::Language;
    let current = session.tenant.language;
    page(
        t("Settings"),
        Some(session),
        html! {
            @if let Some(n) = notice { p.notice role="status" { (n) } }
            (error_for(errors, ""))
            form method="post" action="/admin/settings" {
                input type="hidden" name="csrf" value=(session.csrf);
                label for="language" { (t("Chat language")) }
                select #language name="language" aria-describedby="language-help" {
                    option value="en" selected[current == Language::En] { (t("English")) }
                    option value="pt-BR" selected[current == Language::Pt] { (t("Português (Brasil)")) }
                }
                (error_for(errors, "language"))
                p.help #language-help {
                    (t("The language of new conversations: the widget's texts, the platform's notices and "))
                    (t("the confirm/cancel instructions (")) code { "confirm" } " or " code { "confirmar" } "), "
                    (t("and the assistant's instructions. A conversation already open keeps its language; "))
                    (t("your web page may choose another language per person (widget guide, “Language”)."))
                }
                label for="signInUrl" { (t("Sign-in hand-off URL")) }
                input #signInUrl type="url" name="signInUrl" value=(session.tenant.sign_in_url.as_deref().unwrap_or(""))
                    placeholder="https://www.example.com/countersign/sign-in" aria-describedby="signInUrl-help";
                (error_for(errors, "signInUrl"))
                p.help #signInUrl-help {
                    (t("When an assistant outside the chat prepares a change, the person confirms it on the platform's confirmation page. "))
                    (t("The page sends them here to sign in, with return_to and nonce; your backend signs them in and sends them to return_to with ?token= a widget token for the same person carrying that nonce, valid at most 5 minutes (widget guide, “Confirmation page”). "))
                    (t("Leave it empty to have people confirm in the chat only."))
                }
                label for="retentionDays" { (t("Retention (days)")) }
                input #retentionDays type="number" name="retentionDays" min="1" max="3650" step="1"
                    value=(session.tenant.retention_days.map(|d| d.days().to_string()).unwrap_or_default())
                    aria-describedby="retentionDays-help";
                (error_for(errors, "retentionDays"))
                p.help #retentionDays-help {
                    (t("A conversation is deleted this many days after its last message: its messages, its case and its settled proposals. "))
                    (t("A conversation whose change is waiting, running or unconfirmed is kept until that is settled, then counted from the settlement. "))
                    (t("Its audit records stay, so the trail still verifies, but no longer say which conversation, change or message they were about. "))
                    (t("From 1 to 3650 days; empty keeps the platform's default."))
                }
                (appearance_fields(session, errors))
                button type="submit" { (t("Save")) }
            }
        },
    )
}

/// Issue 50: the accent and the welcome of each language.
fn appearance_fields(session: &Session, errors: &Errors) -> Markup {
    use countersign_domain::appearance::MAX_STARTERS;
    let a = &session.tenant.appearance;
    html! {
        label for="accent" { (t("Accent colour")) }
        input #accent type="text" name="accent" value=(a.accent.as_deref().unwrap_or(""))
            placeholder="#2357c6" pattern="#?[0-9A-Fa-f]{6}" aria-describedby="accent-help";
        (error_for(errors, "accent"))
        p.help #accent-help {
            (t("The colour of the widget's header and main buttons and of the confirmation page, written #rrggbb. White text is written on it, so it must be dark enough to read. Empty keeps the default blue; your page may still choose another for its widget."))
        }
        @for (prefix, legend, welcome) in [("welcome.en", t("Welcome in English conversations"), a.en.as_ref()), ("welcome.pt", t("Welcome in Portuguese conversations"), a.pt.as_ref())] {
            fieldset.welcome {
                legend { (legend) }
                label for={(prefix) ".greeting"} { (t("Greeting")) }
                textarea id={(prefix) ".greeting"} name={(prefix) ".greeting"} rows="2" maxlength="300" {
                    (welcome.map(|w| w.greeting.as_str()).unwrap_or(""))
                }
                (error_for(errors, &format!("{prefix}.greeting")))
                label for={(prefix) ".assistantName"} { (t("Assistant's name")) }
                input id={(prefix) ".assistantName"} name={(prefix) ".assistantName"} type="text" maxlength="40"
                    value=(welcome.map(|w| w.assistant_name.as_str()).unwrap_or(""));
                p.help { (t("Starter prompts: up to four questions the person can send with one click.")) }
                @for i in 1..=MAX_STARTERS {
                    label for={(prefix) ".starter" (i)} { (t("Starter")) " " (i) }
                    input id={(prefix) ".starter" (i)} name={(prefix) ".starter" (i)} type="text" maxlength="80"
                        value=(welcome.and_then(|w| w.starters.get(i - 1)).map(String::as_str).unwrap_or(""));
                }
            }
        }
        p.help { (t("The widget shows the greeting and the starters before the person's first message; all empty keeps the widget's own greeting.")) }
    }
}

/// Issue 50: the landing page's facts.
#[derive(Debug)]
pub struct Overview {
    /// The saved server, if any.
    pub server_url: Option<String>,
    /// The proofs' audience, if a server is saved.
    pub audience: Option<String>,
    /// Whether actions are on.
    pub actions_on: bool,
    /// The latest certification: passed, when (RFC 3339), and whether it covers the
    /// saved settings.
    pub certification: Option<(bool, String, bool)>,
    /// Unsettled actions now.
    pub unsettled: usize,
    /// Widget credentials now.
    pub credentials: usize,
    /// The proofs' issuer.
    pub issuer: String,
    /// The JWKS's full URL.
    pub jwks_url: String,
}

/// Issue 50: where the tenant stands, each fact with the page that changes it, and what
/// its server installs, in one copyable block.
pub fn overview(session: &Session, o: &Overview) -> Markup {
    let install = format!(
        "issuer: {}\naudience: {}\njwks_url: {}",
        o.issuer,
        o.audience
            .as_deref()
            .unwrap_or(t("(save your MCP server first)")),
        o.jwks_url
    );
    page(
        t("Overview"),
        Some(session),
        html! {
            dl #overview {
                dt { (t("Your MCP server")) }
                dd #overviewServer {
                    @if let Some(url) = &o.server_url { code { (url) } } @else { (t("Not connected yet.")) }
                    " " a href="/admin/mcp" { (t("Tenant MCP")) }
                }
                dt { (t("Actions")) }
                dd #overviewActions {
                    @if o.actions_on { strong.on { (t("On: people can countersign changes.")) } }
                    @else { (t("Off: the assistant only consults.")) }
                }
                dt { (t("Last certification")) }
                dd #overviewCertification {
                    @match &o.certification {
                        None => { (t("Not run yet.")) }
                        Some((passed, at, current)) => {
                            @if *passed { strong.passed { (t("Passed")) } } @else { strong.failed { (t("Failed")) } }
                            " · " time datetime=(at) { (at) }
                            @if !current { " · " (t("it does not cover the saved settings")) }
                            " " a href="/admin/certification" { (t("See the result")) }
                        }
                    }
                }
                dt { (t("Unsettled actions")) }
                dd #overviewUnsettled { (o.unsettled) " " a href="/admin/actions" { (t("Unsettled actions")) } }
                dt { (t("Widget credentials")) }
                dd #overviewCredentials { (o.credentials) " " a href="/admin/widgets" { (t("Widget credentials")) } }
            }
            h2 { (t("Install on your server")) }
            p.help { (t("Your server checks each proof against these three values (provider guide, §6 “The proof”).")) }
            pre #installBlock { (install) }
            button type="button" data-copy="installBlock" { (t("Copy")) }
        },
    )
}

/// The sign-in page.
pub fn sign_in(error: Option<&str>) -> Markup {
    page(
        t("Sign in"),
        None,
        html! {
            p { (t("Configure your tenant integration: sign in with your tenant admin key (")) code { "tsk_…" } ")." }
            form method="post" action="/admin/login" {
                label for="key" { (t("Admin key")) }
                input #key type="password" name="key" autocomplete="off" required;
                @if let Some(e) = error { p.error role="alert" { (e) } }
                button type="submit" { (t("Sign in")) }
            }
        },
    )
}

/// Widget credentials (U-3).
pub fn widgets(
    session: &Session,
    keys: &[WidgetKey],
    new_secret: Option<(&str, &str)>,
    errors: &Errors,
    notice: Option<&str>,
) -> Markup {
    let body = html! {
        (error_for(errors, ""))
        @if let Some(n) = notice { p.notice role="status" { (n) } }
        @if let Some((key_id, secret)) = new_secret {
            section #newSecret role="status" {
                h2 { (t("New credential ")) code { (key_id) } }
                p { (t("Store this secret in your backend now: it is shown this once (a reload does not show it again).")) }
                pre #secretValue { (secret) }
                button type="button" data-copy="secretValue" { (t("Copy")) }
            }
        }
        table #credentials {
            thead { tr { th { "keyId" } th { (t("Created")) } th { (t("Allowed origins")) } th { "" } } }
            tbody {
                @for k in keys {
                    tr data-key=(k.id) {
                        td { code { (k.id) } }
                        td { (k.created_at) }
                        td { @for o in &k.allowed_origins { code { (o) } " " } }
                        td {
                            @if let Some(at) = k.retires_at {
                                span.retiring { (t("Replaced: works until ")) (at) } " "
                            } @else {
                                a.action href=(format!("/admin/widgets/{}/replace", k.id)) { (t("Replace…")) } " "
                            }
                            a.action href=(format!("/admin/widgets/{}/revoke", k.id)) { (t("Revoke…")) }
                        }
                    }
                }
            }
        }
        h2 { (t("Create a credential")) }
        form #createWidget method="post" action="/admin/widgets" {
            input type="hidden" name="csrf" value=(session.csrf);
            label for="origins" { (t("Allowed origins, one per line (e.g. https://shop.example.com)")) }
            textarea #origins name="origins" rows="3" {}
            (error_for(errors, "allowedOrigins"))
            button type="submit" { (t("Create")) }
        }
    };
    page(t("Widget credentials"), Some(session), body)
}

/// The step before revoking or replacing a credential: what happens, then the button.
pub fn widget_confirm(session: &Session, key: &WidgetKey, what: &str) -> Markup {
    let (title, explain, button) = if what == "revoke" {
        (
            t("Revoke a widget credential"),
            (t(
                "Pages using this credential stop working at once: every token signed with its secret is refused, and the secret is deleted. This cannot be undone.",
            )),
            t("Revoke it"),
        )
    } else {
        (
            t("Replace a widget credential"),
            (t(
                "A new credential with the same allowed origins is created and its secret shown once. This one keeps working for the grace period you choose, so your site keeps working while you deploy the new secret to your backend; then it is refused and removed.",
            )),
            t("Replace it"),
        )
    };
    page(
        title,
        Some(session),
        html! {
            p { (t("Credential ")) code #confirmKey { (key.id) } (t(", created ")) (key.created_at) "." }
            p #consequence { (explain) }
            form #confirmForm method="post" action=(format!("/admin/widgets/{}/{what}", key.id)) {
                input type="hidden" name="csrf" value=(session.csrf);
                @if what != "revoke" {
                    label for="graceSeconds" { (t("Keep the old credential working for")) }
                    select #graceSeconds name="graceSeconds" {
                        option value="0" { (t("no time: refuse it at once")) }
                        option value="3600" { (t("1 hour")) }
                        option value="86400" selected { (t("24 hours")) }
                        option value="604800" { (t("7 days")) }
                    }
                }
                button type="submit" { (button) }
            }
            p { a href="/admin/widgets" { (t("Cancel")) } }
        },
    )
}

/// The audit trail, newest first (U-3).
pub fn audit(
    session: &Session,
    items: &[&countersign_domain::ports::AuditEntry],
    next: Option<&str>,
    filters: &super::audit_view::Filters,
) -> Markup {
    use super::audit_view::{EVENTS, actor, changes};
    let body = html! {
        form #auditFilters method="get" action="/admin/audit" {
            div.filters {
                div { label for="event" { (t("Event")) }
                    select #event name="event" {
                        @for (value, label) in EVENTS { option value=(value) selected[filters.event == value] { (t(label)) } }
                    } }
                div { label for="from" { (t("From (day)")) } input #from type="date" name="from" value=(filters.from); }
                div { label for="to" { (t("To (day)")) } input #to type="date" name="to" value=(filters.to); }
                div { button type="submit" { (t("Filter")) } }
            }
        }
        @if items.is_empty() { p #noRecords { (t("No records")) @if filters.any() { (t(" match these filters on this page of the trail")) } "." } }
        table #audit {
            thead { tr { th { (t("When (UTC)")) } th { (t("Who")) } th { (t("What")) } th { (t("Changes")) } } }
            tbody {
                @for a in items {
                    tr data-action=(a.action) {
                        td.when { (a.at.to_rfc3339().replace('T', " ").trim_end_matches('Z')) }
                        td.who title=(a.actor) { (actor(&a.actor)) }
                        td { code.action { (a.action) } }
                        td { (changes(&a.changes)) }
                    }
                }
            }
        }
        @if let Some(next) = next {
            p { a #older href=(next) { (t("Older")) } }
        }
    };
    page(t("Audit trail"), Some(session), body)
}

/// A refused or failed request.
pub fn message(title: &str, session: Option<&Session>, text: &str) -> Markup {
    page(
        title,
        session,
        html! { p.error role="alert" { (text) } p { a href="/admin" { (t("Back")) } } },
    )
}

/// Unsettled actions: the administrator records what their own system shows.
pub fn unsettled(
    session: &Session,
    items: &[crate::unsettled::Unsettled],
    errors: &Errors,
    notice: Option<&str>,
) -> Markup {
    let body = html! {
        @if let Some(n) = notice { p.notice role="status" { (n) } }
        (error_for(errors, ""))
        p { (t("Actions whose result your server never confirmed. Their conversations cannot start another action or be closed until settled. Check your own system, then record what it shows: the person is told, and nothing is executed again.")) }
        @if items.is_empty() {
            p #noUnsettled { (t("No unsettled actions.")) }
        }
        @for u in items {
            section.unsettled data-action=(u.action_id) {
                h2 { code { (u.operation) } " — " (u.state.as_str()) }
                p { (u.summary) }
                p.hint { (t("Person ")) code { (u.user) } (t(", conversation ")) code { (u.case) } (t(", action ")) code { (u.action_id) } (t(", confirmed ")) (u.since) " (" (u.age_seconds) (t(" s ago)")) }
                p.status {
                    (t("Last status answer from your server: "))
                    @match &u.last_status {
                        Some((answer, at)) => { code { (answer) } " at " (at) }
                        None => { (t("none yet")) }
                    }
                }
                @if u.settleable {
                    form method="post" action="/admin/actions/settle" {
                        input type="hidden" name="csrf" value=(session.csrf);
                        input type="hidden" name="caseId" value=(u.case);
                        input type="hidden" name="actionId" value=(u.action_id);
                        label for=(format!("reason-{}", u.action_id)) { "Reason (kept in the audit trail)" }
                        input id=(format!("reason-{}", u.action_id)) type="text" name="reason" required maxlength="500";
                        (error_for(errors, "reason"))
                        button type="submit" name="outcome" value="completed" { (t("It was completed")) }
                        " "
                        button type="submit" name="outcome" value="failed" { (t("It was not carried out")) }
                    }
                } @else {
                    p.hint { (t("It may still be running: it can be settled 120 s after its confirmation.")) }
                }
            }
        }
    };
    page(t("Unsettled actions"), Some(session), body)
}
