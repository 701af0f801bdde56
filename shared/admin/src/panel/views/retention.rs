//! The Retention page (R-2, R-3, N-3, F-2): holds, erasure jobs and their receipts, a
//! person's passkeys.

use super::{Errors, error_for, page};
use crate::panel::i18n::t;
use crate::panel::session::Session;
use maud::{Markup, html};

/// N-3: an erasure job: where it stands, and once done its receipt.
fn erasure_job(j: &crate::erasure::ErasureJobView) -> Markup {
    html! {
                section #erasure {
                    h2 { (t("Erasure")) }
                    p #erasureStatus { (t("Status: ")) code { (j.status) } " · " (t("requested ")) (j.requested_at) }
                    @if j.status != "done" {
                        p.help { (t("The erasure runs within about a minute of being asked. Reload this page to see where it stands.")) }
                        p { (j.purged) (t(" conversations deleted so far.")) }
                    }
                    @if j.nothing_stored == Some(true) {
                        p #erasureNothing { (t("Nothing is stored for this person: unknown here, or erased already. Nothing was written.")) }
                    }
                    @if let Some(r) = &j.refused {
                        p #erasureRefused { (t("Refused: ")) code { (r) } }
                    }
                    @if let Some(e) = &j.erasure {
                        p { (e.conversations.purged) (t(" conversations deleted, ")) (e.items_removed) (t(" items removed.")) }
                        @if e.conversations.unresolved + e.conversations.held > 0 {
                            p #erasurePending { (t("Kept for now (deleted once they can be): ")) (e.conversations.unresolved + e.conversations.held) }
                        }
                        p { (t("Audit trail personal data: ")) code #auditPersonal { (e.audit_personal_data) } }
                        p { (t("Backups may hold it until ")) (e.backups.until) "." }
                        label for="receipt" { (t("Receipt (JWS)")) }
                        textarea #receipt readonly rows="6" { (e.receipt) }
                        p.actions {
                            button type="button" data-copy="receipt" { (t("Copy")) }
                            " "
                            a.button #downloadReceipt href={"/admin/erasure/" (j.job_id) "?download=receipt"} download { (t("Download")) }
                        }
                    }
                }
    }
}

/// Issue 50: what erasing `person` does, asked before anything is queued: the red button
/// posts the same form again with `confirmed=yes`; going back changes nothing.
pub fn confirm_erasure(session: &Session, person: &str) -> Markup {
    page(
        t("Erase a person"),
        Some(session),
        html! {
            section #confirmErasure role="alertdialog" aria-labelledby="confirmErasureText" {
                p #confirmErasureText {
                    (t("Erase ")) code { (person) } (t("? This cannot be undone: every conversation of this person is deleted, and their personal data in the audit trail becomes unreadable. A receipt signed with your audit checkpoint key is made."))
                }
                form method="post" action="/admin/erasure" {
                    input type="hidden" name="csrf" value=(session.csrf);
                    input type="hidden" name="person" value=(person);
                    input type="hidden" name="confirmed" value="yes";
                    button.danger type="submit" { (t("Erase this person")) }
                    " "
                    a.button.secondary href="/admin/retention" { (t("Keep them")) }
                }
            }
        },
    )
}

/// the tenant's legal holds, a form to place one, and a person's erasure (with
/// the last erasure's answer and receipt, when one was just made).
/// F-2: a person's passkeys, as the retention page shows them.
#[derive(Debug)]
pub struct PasskeysOf<'a> {
    /// The person (the tenant's user id).
    pub person: &'a str,
    /// Their passkeys.
    pub passkeys: &'a [crate::passkeys::PasskeyView],
}

/// F-2: find a person's passkeys, and revoke one.
fn passkeys_section(session: &Session, shown: Option<&PasskeysOf<'_>>, errors: &Errors) -> Markup {
    html! {
        h2 { (t("Passkeys")) }
        p.help #passkeys-help {
            (t("People enrol a passkey on the confirmation page, after a fresh sign-in through your site, to confirm operations you set to need one. Revoke one that is lost or not theirs: they can enrol a new one the same way. Each revocation is recorded in the audit trail."))
        }
        form #findPasskeys method="get" action="/admin/retention" {
            label for="passkeysOf" { (t("Person (your user id)")) }
            input #passkeysOf type="text" name="passkeys" required maxlength="256" value=[shown.map(|s| s.person)];
            button type="submit" { (t("Show passkeys")) }
        }
        (error_for(errors, "passkeys"))
        @if let Some(s) = shown {
            @if s.passkeys.is_empty() { p #noPasskeys { (t("This person has no passkey.")) } }
            ul #passkeys {
                @for p in s.passkeys {
                    li.passkey data-id=(p.id) {
                        code { (p.algorithm) } " " (t("enrolled")) " " time { (p.created_at) }
                        @if let Some(used) = &p.last_used_at { ", " (t("last used")) " " time { (used) } }
                        " "
                        form.inline method="post" action="/admin/passkeys/revoke" {
                            input type="hidden" name="csrf" value=(session.csrf);
                            input type="hidden" name="person" value=(s.person);
                            input type="hidden" name="id" value=(p.id);
                            button.danger type="submit" { (t("Revoke")) }
                        }
                    }
                }
            }
        }
    }
}

pub fn retention(
    session: &Session,
    notice: Option<&str>,
    errors: &Errors,
    job: Option<&crate::erasure::ErasureJobView>,
) -> Markup {
    retention_with(session, notice, errors, job, None)
}

/// The retention page, with a person's passkeys shown.
pub fn retention_with(
    session: &Session,
    notice: Option<&str>,
    errors: &Errors,
    job: Option<&crate::erasure::ErasureJobView>,
    passkeys: Option<&PasskeysOf<'_>>,
) -> Markup {
    let holds: Vec<_> = session.tenant.holds.iter().collect();
    page(
        t("Holds and erasure"),
        Some(session),
        html! {
            @if let Some(n) = notice { p.notice role="status" { (n) } }
            (error_for(errors, ""))
            // Issue 50: an erasure's answer and receipt first, where the eye lands.
            @if let Some(j) = job { (erasure_job(j)) }
            h2 { (t("Legal holds")) }
            p.help #holds-help {
                (t("A legal hold keeps a person's conversations (or one conversation) from being deleted: neither the retention purge nor an erasure removes what it covers until you lift it. Placing and lifting a hold is recorded in the audit trail."))
            }
            @if holds.is_empty() { p #noHolds { (t("No legal holds.")) } }
            ul #holds {
                @for h in &holds {
                    li.hold data-kind=(h.kind()) data-id=(h.id()) {
                        @if h.kind() == "person" { (t("Person ")) } @else { (t("Conversation ")) }
                        code { (h.id()) } " "
                        form.inline method="post" action="/admin/holds" {
                            input type="hidden" name="csrf" value=(session.csrf);
                            input type="hidden" name="kind" value=(h.kind());
                            input type="hidden" name="id" value=(h.id());
                            input type="hidden" name="held" value="false";
                            button type="submit" { (t("Lift")) }
                        }
                    }
                }
            }
            form #placeHold method="post" action="/admin/holds" {
                input type="hidden" name="csrf" value=(session.csrf);
                input type="hidden" name="held" value="true";
                label for="holdKind" { (t("Hold on")) }
                select #holdKind name="kind" {
                    option value="person" { (t("a person (your user id)")) }
                    option value="conversation" { (t("a conversation (case_…)")) }
                }
                label for="holdId" { (t("Id")) }
                input #holdId type="text" name="id" required maxlength="256";
                (error_for(errors, "id"))
                button type="submit" { (t("Place hold")) }
            }
            h2 { (t("Erase a person")) }
            p.help #erase-help {
                (t("Deletes every conversation of the person and makes their personal data in the audit trail unreadable (their key is destroyed; the trail and your checkpoints still verify). Conversations with a change still waiting, running or unconfirmed are kept until it is settled, then deleted. A held person cannot be erased. You get a receipt signed with the audit checkpoint key: keep it. Backups (point-in-time recovery) may hold the deleted data for 35 days."))
            }
            form #erasePerson method="post" action="/admin/erasure" {
                input type="hidden" name="csrf" value=(session.csrf);
                label for="person" { (t("Person (your user id)")) }
                input #person type="text" name="person" required maxlength="256";
                (error_for(errors, "person"))
                button.danger type="submit" { (t("Erase…")) }
            }
            (passkeys_section(session, passkeys, errors))
        },
    )
}
