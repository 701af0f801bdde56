//! F-2, F-3: the passkey ceremonies on the confirmation page — the one top-level page on
//! the platform's origin, so one credential (bound to that RP ID) serves every tenant's
//! widget and every MCP client's link.
//!
//! - `POST /confirm/{id}/challenge`: a fresh ceremony (nonce, the challenge of this very
//!   action, the person's credential ids), as JSON, for the page's script to hand to
//!   `navigator.credentials.get`. The script then posts the assertion with the page's
//!   Confirm form (`POST /confirm/{id}`), which the chat's confirm use case verifies.
//! - `POST /confirm/{id}/enrol-challenge` and `POST /confirm/{id}/enrol`: enrolling a
//!   passkey (`navigator.credentials.create`), only within 5 minutes of a fresh sign-in the
//!   tenant made for that purpose (a hand-off with `purpose: "enrol"`), once per sign-in.
//!
//! Every request carries the page session's form token and comes from the page's own
//! origin, as the Confirm form does.

use super::*;
use crate::stepup::{StepUp, StepUpAnswer, StepUpRefused};
use countersign_domain::proposal::Proposal;
use countersign_domain::stepup::{Assertion, StepUpError};

/// F-2: the purpose of a hand-off that may enrol a passkey.
pub(super) const ENROL: &str = "enrol";

/// F-2: how long after the fresh sign-in a passkey may be enrolled.
const ENROL_SECONDS: i64 = 300;

/// The page's script path: only the WebAuthn calls (the page works without it for
/// everything else).
pub(super) const SCRIPT_PATH: &str = "/confirm-page.js";
pub(super) const SCRIPT: &str = include_str!("../page.js");

fn enrol_key(id: &str, session: &str) -> Sha256Hex {
    Sha256Hex::digest(format!("countersign-page-enrol\0{id}\0{session}").as_bytes())
}

/// F-2: the page session `session` of link `id` may enrol one passkey for 5 minutes.
pub(super) async fn grant_enrolment(
    state: &PageState,
    id: &str,
    session: &str,
) -> Result<(), countersign_domain::ports::StoreError> {
    let until = state.clock.now().plus_seconds(ENROL_SECONDS);
    state
        .links
        .open_page_session(&enrol_key(id, session), until)
        .await
}

/// The marker of a spent grant: a page-session record under its own key, so the page can
/// tell a used grant (a person who enrolled, then removed that passkey, signs in afresh).
fn enrol_used_key(id: &str, session: &str) -> Sha256Hex {
    Sha256Hex::digest(format!("countersign-page-enrol-used\0{id}\0{session}").as_bytes())
}

/// Whether the session was ever granted an enrolment (one per page session: a second
/// needs a new sign-in).
async fn ever_granted(state: &PageState, id: &str, session: &str) -> Result<bool, Response> {
    let granted = state
        .links
        .page_session(&enrol_key(id, session))
        .await
        .map_err(|e| unavailable(&e))?;
    Ok(granted.is_some())
}

/// Whether the session may enrol now (the grant lives and was not used).
async fn may_enrol(state: &PageState, id: &str, session: &str) -> Result<bool, Response> {
    let lookup = |key: Sha256Hex| async move {
        state
            .links
            .page_session(&key)
            .await
            .map_err(|e| unavailable(&e))
    };
    let until = lookup(enrol_key(id, session)).await?;
    let used = lookup(enrol_used_key(id, session)).await?;
    Ok(used.is_none() && until.is_some_and(|u| state.clock.now() < u))
}

/// Spends the session's enrolment grant (`false`: none, expired or used).
async fn spend_enrolment(state: &PageState, id: &str, session: &str) -> Result<bool, Response> {
    if !may_enrol(state, id, session).await? {
        return Ok(false);
    }
    let key = enrol_key(id, session);
    let until = state.clock.now().plus_seconds(ENROL_SECONDS);
    let first = state
        .links
        .spend_state(&format!("enrol-{key}"), until)
        .await
        .map_err(|e| unavailable(&e))?;
    if first {
        // Only the one spending request gets here, so the marker is written once.
        state
            .links
            .open_page_session(&enrol_used_key(id, session), until)
            .await
            .map_err(|e| unavailable(&e))?;
    }
    Ok(first)
}

/// The link's proposal, while it is its conversation's active one.
pub(super) async fn proposal(
    state: &PageState,
    link: &ConfirmationLink,
) -> Result<Option<Proposal>, Response> {
    Ok(state
        .conversations
        .load(&link.tenant, &link.case)
        .await
        .map_err(|e| unavailable(&e))?
        .and_then(|v| v.active)
        .filter(|p| p.action_id == link.action_id))
}

fn ceremonies(state: &PageState) -> Option<&StepUp> {
    state.chat.step_up.as_ref()
}

/// 409 when this platform has no passkey ceremonies set up.
fn no_ceremonies(lang: Language) -> Response {
    notice(StatusCode::CONFLICT, lang, texts(lang).needs_passkey)
}

/// F-2: 403, a passkey may be enrolled only after a fresh sign-in.
fn sign_in_first(lang: Language) -> Response {
    notice(StatusCode::FORBIDDEN, lang, texts(lang).enrol_sign_in)
}

/// F-2: whether the link's person must enrol before they can confirm it (a passkey
/// operation, and no passkey for this tenant yet): the sign-in then asks for `enrol`.
pub(super) async fn needs_enrolment(state: &PageState, link: &ConfirmationLink) -> bool {
    let (Some(step_up), Ok(Some(p))) = (ceremonies(state), proposal(state, link).await) else {
        return false;
    };
    p.needs_passkey
        && step_up
            .passkeys
            .passkeys(&link.tenant, &link.user)
            .await
            .is_ok_and(|k| k.is_empty())
}

/// The answer part of the page for a pending proposal that needs the person's passkey:
/// what the step-up proves (F-7), and either Confirm with a passkey, Create a passkey, or
/// the way to the fresh sign-in that allows one. `None`: the proposal needs no passkey.
pub(super) async fn section(
    state: &PageState,
    id: &str,
    link: &ConfirmationLink,
    who: &Principal,
    session: &str,
    lang: Language,
) -> Result<Option<Markup>, Response> {
    let Some(p) = proposal(state, link).await?.filter(|p| p.needs_passkey) else {
        return Ok(None);
    };
    let t = texts(lang);
    let csrf = form_token(id, session);
    let Some(step_up) = ceremonies(state) else {
        return Ok(Some(
            html! { p id="stepup" class="notice" role="alert" { (t.needs_passkey) } },
        ));
    };
    let enrolled = step_up
        .passkeys
        .passkeys(&who.tenant, &who.user)
        .await
        .map_err(|e| unavailable(&e))?;
    let may_enrol = may_enrol(state, id, session).await?;
    // F-2: with a passkey, another may be enrolled after an assertion by it (once per
    // page session).
    let may_add = !enrolled.is_empty() && !may_enrol && !ever_granted(state, id, session).await?;
    debug_assert_eq!(p.action_id, link.action_id);
    Ok(Some(html! {
        section id="stepup" data-failed=(t.passkey_failed) data-unsupported=(t.no_webauthn) {
            p id="stepup-needed" { (t.passkey_needed) }
            p id="stepup-proves" class="instructions" { (t.passkey_proves) }
            p id="stepup-error" class="notice" role="alert" hidden {}
            @if !enrolled.is_empty() {
                form id="decide" method="post" action={"/confirm/" (id)} data-challenge={"/confirm/" (id) "/challenge"} {
                    input type="hidden" name="csrf" value=(csrf);
                    input type="hidden" name="decision" value="confirm";
                    @for field in ["nonce", "credentialId", "authenticatorData", "clientDataJSON", "signature"] {
                        input type="hidden" name=(field);
                    }
                    button id="confirm-passkey" type="button" class="confirm" { (t.confirm_passkey) }
                }
            }
            @if may_enrol {
                p id="enrol-explain" {
                    @if enrolled.is_empty() { (t.enrol_explain) } @else { (t.enrol_another) }
                }
                form id="enrol" method="post" action={"/confirm/" (id) "/enrol"} data-challenge={"/confirm/" (id) "/enrol-challenge"} {
                    input type="hidden" name="csrf" value=(csrf);
                    @for field in ["nonce", "authenticatorData", "clientDataJSON", "transports"] {
                        input type="hidden" name=(field);
                    }
                    button id="enrol-passkey" type="button" class="confirm" { (t.enrol_button) }
                }
            } @else if enrolled.is_empty() {
                p id="enrol-explain" { (t.enrol_sign_in) }
                form method="post" action={"/confirm/" (id) "/sign-in"} {
                    input type="hidden" name="purpose" value=(ENROL);
                    button id="sign-in-to-enrol" type="submit" class="button" { (t.enrol_sign_in_button) }
                }
            }
            form method="post" action={"/confirm/" (id)} {
                input type="hidden" name="csrf" value=(csrf);
                button type="submit" name="decision" value="cancel" class="cancel" { (t.cancel) }
            }
            @if !enrolled.is_empty() { (my_passkeys(t, id, &csrf, &enrolled, may_add)) }
        }
    }))
}

/// F-2: the person's own passkeys on the page — each removable — and, when allowed, the
/// way to add another with one of them.
fn my_passkeys(
    t: &Texts,
    id: &str,
    csrf: &str,
    enrolled: &[countersign_domain::ports::Passkey],
    may_add: bool,
) -> Markup {
    html! {
        details id="my-passkeys" {
            summary { (t.my_passkeys) }
            ul {
                @for p in enrolled {
                    li class="passkey" {
                        (t.enrolled_on) " " time { (p.created_at.to_rfc3339()) }
                        " "
                        form class="inline" method="post" action={"/confirm/" (id) "/passkeys/remove"} {
                            input type="hidden" name="csrf" value=(csrf);
                            input type="hidden" name="credentialId" value=(p.id);
                            button type="submit" class="cancel" { (t.remove_passkey) }
                        }
                    }
                }
            }
            @if may_add {
                p id="add-explain" { (t.add_explain) }
                form id="add" method="post" action={"/confirm/" (id) "/add"} data-challenge={"/confirm/" (id) "/add-challenge"} {
                    input type="hidden" name="csrf" value=(csrf);
                    @for field in ["nonce", "credentialId", "authenticatorData", "clientDataJSON", "signature"] {
                        input type="hidden" name=(field);
                    }
                    button id="add-passkey" type="button" class="button" { (t.add_passkey) }
                }
            }
        }
    }
}

/// `POST /confirm/{id}/add-challenge`: a fresh ceremony proving, with a passkey the
/// person has, that they may enrol another (F-2).
pub(super) async fn add_challenge(
    State(state): State<PageState>,
    Scripted { who, lang, .. }: Scripted,
) -> Result<Response, Response> {
    let step_up = ceremonies(&state).ok_or_else(|| no_ceremonies(lang))?;
    match step_up.begin_add(&who).await {
        Ok(ceremony) if !ceremony.credentials.is_empty() => Ok(json_answer(&ceremony)),
        Ok(_) => Err(sign_in_first(lang)),
        Err(e) => Err(unavailable(&e)),
    }
}

/// `POST /confirm/{id}/add`: the assertion by one of the person's passkeys, checked; the
/// page session may then enrol one passkey within 5 minutes (as after a fresh sign-in).
pub(super) async fn add(
    State(state): State<PageState>,
    Scripted {
        id,
        who,
        session,
        lang,
        body,
        ..
    }: Scripted,
) -> Result<Response, Response> {
    let (Some(step_up), Some(answer)) = (ceremonies(&state), answer_in(&body)) else {
        return Err(notice(StatusCode::BAD_REQUEST, lang, texts(lang).refused));
    };
    // One enrolment per page session: a session granted one before needs a new sign-in.
    if ever_granted(&state, &id, &session).await? {
        return Err(sign_in_first(lang));
    }
    step_up
        .verify_add(&who, &answer)
        .await
        .map_err(|e| refused_step_up(lang, &id, &e))?;
    grant_enrolment(&state, &id, &session)
        .await
        .map_err(|e| unavailable(&e))?;
    Ok(back_to_page(&id))
}

/// `POST /confirm/{id}/passkeys/remove` (form `credentialId`): the signed-in person removes
/// one of their own passkeys (audited), then back to the page.
pub(super) async fn remove(
    State(state): State<PageState>,
    Scripted {
        id,
        who,
        lang,
        body,
        ..
    }: Scripted,
) -> Response {
    let t = texts(lang);
    let (Some(step_up), Some(credential)) = (
        ceremonies(&state),
        form_value(&body, "credentialId").filter(|c| !c.is_empty() && c.len() <= 1400),
    ) else {
        return notice(StatusCode::BAD_REQUEST, lang, t.refused);
    };
    match step_up.revoke(&who, &credential).await {
        Ok(_) => back_to_page(&id),
        Err(e) => unavailable(&e),
    }
}

/// A request of the page's own script for the link in its path: the link, the signed-in
/// person, their session and the conversation's language, once the form token and the
/// origin are the page's (every ceremony handler takes it, so none repeats the check). A
/// refusal is said in the conversation's language.
pub(super) struct Scripted {
    /// The link's id (the path's).
    id: String,
    /// The link.
    link: ConfirmationLink,
    /// The signed-in person.
    who: Principal,
    /// Their page session.
    session: String,
    /// The conversation's language.
    lang: Language,
    /// The form or JSON the script posted.
    body: Bytes,
}

impl axum::extract::FromRequest<PageState> for Scripted {
    type Rejection = Response;

    async fn from_request(
        req: axum::extract::Request,
        state: &PageState,
    ) -> Result<Self, Self::Rejection> {
        use axum::extract::FromRequestParts as _;
        let (mut parts, body) = req.into_parts();
        let Linked { id, link } = Linked::from_request_parts(&mut parts, state).await?;
        let headers = parts.headers.clone();
        let body = Bytes::from_request(axum::extract::Request::from_parts(parts, body), state)
            .await
            .map_err(IntoResponse::into_response)?;
        let lang = language(state, &link).await?;
        let refused = |status| notice(status, lang, texts(lang).refused);
        let (who, session) = person(state, &id, &link, &headers)
            .await?
            .ok_or_else(|| refused(StatusCode::UNAUTHORIZED))?;
        let token_ok = form_value(&body, "csrf")
            .is_some_and(|t| bool::from(t.as_bytes().ct_eq(form_token(&id, &session).as_bytes())));
        if !token_ok || !pages::same_origin_strict(&headers) {
            return Err(refused(StatusCode::FORBIDDEN));
        }
        Ok(Self {
            id,
            link,
            who,
            session,
            lang,
            body,
        })
    }
}

fn json_answer(value: &impl serde::Serialize) -> Response {
    let mut res = axum::Json(value).into_response();
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    secure_headers(res.headers_mut());
    res
}

/// `POST /confirm/{id}/challenge`: a fresh ceremony for this link's pending proposal.
pub(super) async fn challenge(
    State(state): State<PageState>,
    Scripted {
        link, who, lang, ..
    }: Scripted,
) -> Result<Response, Response> {
    let p = match proposal(&state, &link).await? {
        Some(p) if p.needs_passkey && p.state == ProposalState::PendingConfirmation => p,
        _ => return Err(notice(StatusCode::CONFLICT, lang, texts(lang).already)),
    };
    let step_up = ceremonies(&state).ok_or_else(|| no_ceremonies(lang))?;
    match step_up.begin(&who, &p).await {
        Ok(ceremony) => Ok(json_answer(&ceremony)),
        Err(e) => Err(unavailable(&e)),
    }
}

/// What `create` needs besides the ceremony: who the passkey is for.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Enrolment {
    #[serde(flatten)]
    ceremony: crate::stepup::Ceremony,
    /// The relying party's name the authenticator shows: the tenant's.
    rp_name: String,
    /// An opaque, stable handle of the person (base64url): a digest, never their id.
    user_handle: String,
    /// The account name the authenticator shows.
    user_name: String,
}

/// `POST /confirm/{id}/enrol-challenge`: a fresh enrolment ceremony, within the fresh
/// sign-in's 5 minutes.
pub(super) async fn enrol_challenge(
    State(state): State<PageState>,
    Scripted {
        id,
        who,
        session,
        lang,
        ..
    }: Scripted,
) -> Result<Response, Response> {
    if !may_enrol(&state, &id, &session).await? {
        return Err(sign_in_first(lang));
    }
    let step_up = ceremonies(&state).ok_or_else(|| no_ceremonies(lang))?;
    let tenant = match state.tenants.get_tenant(&who.tenant).await {
        Ok(Some(t)) => t,
        Ok(None) => return Err(not_found()),
        Err(e) => return Err(unavailable(&e)),
    };
    match step_up.begin_enrol(&who).await {
        Ok(ceremony) => Ok(json_answer(&Enrolment {
            ceremony,
            rp_name: tenant.name,
            user_handle: URL_SAFE_NO_PAD.encode(
                &Sha256Hex::digest(format!(
                    "countersign-user-handle\0{}\0{}",
                    who.tenant, who.user
                ))
                .as_str()
                .as_bytes()[..32],
            ),
            user_name: who.user.to_string(),
        })),
        Err(e) => Err(unavailable(&e)),
    }
}

fn bytes_field(body: &[u8], name: &str) -> Option<Vec<u8>> {
    form_value(body, name).and_then(|v| URL_SAFE_NO_PAD.decode(v.trim_end_matches('=')).ok())
}

/// `POST /confirm/{id}/enrol`: the new passkey, checked and kept; back to the page, which
/// now offers Confirm with your passkey.
pub(super) async fn enrol(
    State(state): State<PageState>,
    Scripted {
        id,
        who,
        session,
        lang,
        body,
        ..
    }: Scripted,
) -> Result<Response, Response> {
    let (Some(nonce), Some(client), Some(data)) = (
        form_value(&body, "nonce"),
        bytes_field(&body, "clientDataJSON"),
        bytes_field(&body, "authenticatorData"),
    ) else {
        return Err(notice(StatusCode::BAD_REQUEST, lang, texts(lang).refused));
    };
    let step_up = ceremonies(&state).ok_or_else(|| no_ceremonies(lang))?;
    if !spend_enrolment(&state, &id, &session).await? {
        return Err(sign_in_first(lang));
    }
    let transports = form_value(&body, "transports")
        .map(|v| v.split(',').map(str::to_owned).collect())
        .unwrap_or_default();
    match step_up
        .finish_enrol(&who, &nonce, &client, &data, transports)
        .await
    {
        Ok(_) => {
            tracing::info!(tenant = %who.tenant, "F-2: a passkey was enrolled");
            Ok(back_to_page(&id))
        }
        Err(e) => Err(refused_step_up(lang, &id, &e)),
    }
}

/// F-3: the passkey answer a Confirm form carries, if it carries one.
pub(super) fn answer_in(body: &[u8]) -> Option<StepUpAnswer> {
    Some(StepUpAnswer {
        nonce: form_value(body, "nonce").filter(|n| !n.is_empty())?,
        credential_id: form_value(body, "credentialId")?,
        assertion: Assertion {
            authenticator_data: bytes_field(body, "authenticatorData")?,
            client_data_json: bytes_field(body, "clientDataJSON")?,
            signature: bytes_field(body, "signature")?,
        },
    })
}

/// The page a refused step-up (or enrolment) answers with: why, in the person's words;
/// nothing was changed and the proposal still waits.
pub(super) fn refused_step_up(lang: Language, id: &str, e: &StepUpRefused) -> Response {
    let t = texts(lang);
    let why = match e {
        StepUpRefused::Nonce | StepUpRefused::Raced => t.refused_again,
        StepUpRefused::NotEnrolled => t.refused_not_enrolled,
        StepUpRefused::Check(StepUpError::UserVerification) => t.refused_uv,
        StepUpRefused::TooMany => t.refused_too_many,
        StepUpRefused::Check(_) => t.refused_check,
        StepUpRefused::Unavailable(e) => return unavailable(e),
    };
    tracing::info!(reason = %e, "F-3: a passkey step-up was refused");
    page(
        StatusCode::CONFLICT,
        lang,
        html! {
            p id="stepup-refused" class="notice" role="alert" { (why) }
            p { a class="button" href={"/confirm/" (id)} { (t.back) } }
        },
    )
}
