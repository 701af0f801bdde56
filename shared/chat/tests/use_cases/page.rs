//! the confirmation page (decision 0051) through its router on in-memory ports — the
//! sign-in hand-off, and each way of trying to pass it wrongly: another person, a tampered
//! id, a forged form, a double submit, a page opened after expiry. None executes anything.

use crate::harness::{H, SUMMARY};
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use countersign_chat::Chat;
use countersign_chat::page::{self, CSP, PageState};
use countersign_chat::widget::{WidgetAuth, sign_hand_off};
use countersign_domain::config::widget_secret_name;
use countersign_domain::conversation::Principal;
use countersign_domain::ids::{ActionId, UserId, WidgetKeyId};
use countersign_domain::ports::{AuditEntry, Ids, SecretStore, Tenants, WidgetKey, WidgetKeys};
use countersign_domain::proposal::ProposalState;
use countersign_domain::secret::SecretString;
use countersign_testkit::{Reply, action_answer};
use countersign_tools::confirmation;
use std::sync::Arc;
use tower::ServiceExt as _;

const HOST: &str = "127.0.0.1:3000";
const SECRET: &str = "widget-secret-0123456789abcdef0123456789abcdef";

struct Page {
    h: H,
    app: axum::Router,
    id: String,
    action: ActionId,
    kid: WidgetKeyId,
}

struct Answer {
    status: StatusCode,
    cookies: Vec<String>,
    csp: Option<String>,
    location: Option<String>,
    body: String,
}

fn audit(h: &H, action: &str) -> AuditEntry {
    AuditEntry {
        id: h.ids.audit_id(),
        at: h.clock_now(),
        actor: "tenant-admin".into(),
        action: action.into(),
        changes: serde_json::json!({}),
    }
}

/// A tenant with a sign-in hand-off and a widget key; a proposal prepared in the person's
/// conversation with its page link; the page's router.
async fn page() -> Page {
    page_in(None).await
}

/// [`page`] for a conversation in `language`.
async fn page_in(language: Option<countersign_domain::texts::Language>) -> Page {
    let h = match language {
        Some(l) => H::new().await.in_language(l).await,
        None => H::new().await,
    };
    let tenant = h.who.tenant.clone();
    h.store
        .set_sign_in_url(
            &tenant,
            Some("https://shop.example/sign-in"),
            &audit(&h, "tenant.sign_in_url"),
        )
        .await
        .unwrap();
    let kid = h.ids.widget_key_id();
    let key = WidgetKey {
        id: kid.clone(),
        created_at: h.clock_now(),
        allowed_origins: vec!["https://shop.example".into()],
        retires_at: None,
    };
    h.store
        .put_widget_key(&tenant, &key, &audit(&h, "widget.create"))
        .await
        .unwrap();
    h.secrets
        .put(
            &widget_secret_name(&tenant, &kid),
            &SecretString::new(SECRET),
        )
        .await
        .unwrap();
    let (action, _) = h.propose().await;
    let created = confirmation::create_link(h.store.as_ref(), &h.proposal(&action))
        .await
        .unwrap();
    let state = PageState {
        chat: Arc::new(Chat::new(h.parts.clone())),
        auth: Arc::new(WidgetAuth::new(h.store.clone(), h.secrets.clone())),
        links: h.store.clone(),
        tenants: h.store.clone(),
        conversations: h.store.clone(),
        clock: h.clock.clone(),
        local: true,
    };
    Page {
        app: page::router(state),
        id: created.id,
        action,
        kid,
        h,
    }
}

fn now_secs() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap()
}

impl Page {
    async fn send(
        &self,
        method: &str,
        path: &str,
        cookie: Option<&str>,
        form: Option<(&str, Option<&str>)>,
    ) -> Answer {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, HOST);
        if let Some(c) = cookie {
            req = req.header(header::COOKIE, c);
        }
        let body = match form {
            Some((body, origin)) => {
                req = req.header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
                if let Some(o) = origin {
                    req = req.header(header::ORIGIN, o);
                }
                Body::from(body.to_owned())
            }
            None => Body::empty(),
        };
        let res = self
            .app
            .clone()
            .oneshot(req.body(body).unwrap())
            .await
            .unwrap();
        let status = res.status();
        let cookies = res
            .headers()
            .get_all(header::SET_COOKIE)
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect();
        let csp = res
            .headers()
            .get(header::CONTENT_SECURITY_POLICY)
            .map(|v| v.to_str().unwrap().to_owned());
        let location = res
            .headers()
            .get(header::LOCATION)
            .map(|v| v.to_str().unwrap().to_owned());
        let bytes = axum::body::to_bytes(res.into_body(), 1 << 20)
            .await
            .unwrap();
        Answer {
            status,
            cookies,
            csp,
            location,
            body: String::from_utf8(bytes.to_vec()).unwrap(),
        }
    }

    fn path(&self) -> String {
        format!("/confirm/{}", self.id)
    }

    /// N-6: the Sign in button pressed in this browser: the nonce cookie it got, and where
    /// it was sent.
    async fn begin(&self) -> (String, String) {
        let first = self.send("GET", &self.path(), None, None).await;
        assert_eq!(first.status, StatusCode::OK, "{}", first.body);
        assert!(
            first.cookies.is_empty(),
            "no nonce before Sign in is pressed"
        );
        let pressed = self
            .send(
                "POST",
                &format!("{}/sign-in", self.path()),
                None,
                Some(("", Some(&format!("http://{HOST}")))),
            )
            .await;
        assert_eq!(pressed.status, StatusCode::SEE_OTHER, "{}", pressed.body);
        (
            cookie_value(&pressed.cookies, "countersign-confirm-nonce").unwrap(),
            pressed.location.unwrap(),
        )
    }

    /// N-6: the tenant's sign-in posts `token` back to the return, from a browser holding
    /// `nonce_cookie` (if any).
    async fn hand_back(&self, token: &str, nonce_cookie: Option<&str>) -> Answer {
        let cookie = nonce_cookie.map(|n| format!("countersign-confirm-nonce={n}"));
        self.send(
            "POST",
            &format!("{}/return", self.path()),
            cookie.as_deref(),
            Some((&format!("token={token}"), Some("https://shop.example"))),
        )
        .await
    }

    /// The hand-off for `user`: the page's nonce, the tenant's token, the return. Returns
    /// the return's answer and the session cookie it set, if any.
    async fn sign_in_as(&self, user: &str) -> (Answer, Option<String>) {
        let (nonce, _) = self.begin().await;
        let who = Principal {
            tenant: self.h.who.tenant.clone(),
            user: UserId::parse(user).unwrap(),
        };
        let now = now_secs();
        let token = sign_hand_off(
            &SecretString::new(SECRET),
            &self.kid,
            &who,
            &nonce,
            now,
            now + 120,
        )
        .unwrap();
        let back = self.hand_back(&token, Some(&nonce)).await;
        let session = cookie_value(&back.cookies, "countersign-confirm")
            .filter(|v| !v.is_empty())
            .map(|v| format!("countersign-confirm={v}"));
        (back, session)
    }

    async fn session(&self) -> String {
        let (back, session) = self.sign_in_as("u_alice").await;
        assert_eq!(back.status, StatusCode::SEE_OTHER, "{}", back.body);
        session.unwrap()
    }

    /// The form token the page shows to `session`.
    async fn form_token(&self, session: &str) -> String {
        let shown = self.send("GET", &self.path(), Some(session), None).await;
        let at = shown.body.find("name=\"csrf\" value=\"").unwrap() + 19;
        shown.body[at..].split('"').next().unwrap().to_owned()
    }

    /// A post of the page's form; without `origin`, from the page's own origin.
    async fn post(&self, session: &str, body: &str, origin: Option<&str>) -> Answer {
        let own = format!("http://{HOST}");
        let origin = origin.unwrap_or(&own);
        self.send(
            "POST",
            &self.path(),
            Some(session),
            Some((body, Some(origin))),
        )
        .await
    }

    fn executed(&self) -> usize {
        self.h.provider.calls_of("execute_action").len()
    }

    fn state(&self) -> ProposalState {
        self.h.state(&self.action)
    }

    fn will_complete(&self) {
        self.h.provider.answer(
            "execute_action",
            Reply::Result(action_answer(
                self.action.as_str(),
                "completed",
                Some("Moved."),
            )),
        );
    }
}

fn cookie_value(set_cookies: &[String], name: &str) -> Option<String> {
    set_cookies.iter().find_map(|c| {
        let (k, rest) = c.split_once('=')?;
        (k == name).then(|| rest.split(';').next().unwrap_or_default().to_owned())
    })
}

/// signed in through the tenant's hand-off, the person sees the operation, the
/// summary byte for byte and the instructions, under a CSP without script; their confirm
/// is their reply to the presentation and executes (once, with the proof), and the page
/// shows the result.
#[tokio::test]
async fn x3_the_person_signs_in_through_the_tenant_and_confirms_on_the_page() {
    let p = page().await;
    let first = p.send("GET", &p.path(), None, None).await;
    // Issue 50: the company asking is named before anything else, on both steps.
    let company =
        p.h.store
            .get_tenant(&p.h.who.tenant)
            .await
            .unwrap()
            .unwrap()
            .name;
    let asks = format!("<span id=\"company\">{company}</span> asks you to confirm a change");
    assert!(first.body.contains(&asks), "{}", first.body);
    assert!(
        first.body.contains("<strong>shop.example</strong>"),
        "names where the person signs in: {}",
        first.body
    );
    // Its form may be redirected to the tenant's sign-in (form-action holds redirects).
    assert!(
        first
            .csp
            .as_deref()
            .is_some_and(|c| c.contains("form-action 'self' https://shop.example;")
                && c.contains("script-src") == CSP.contains("script-src")),
        "{:?}",
        first.csp
    );
    assert!(
        !first.body.contains("Move session"),
        "nothing shown before sign-in"
    );
    let (_, sent_to) = p.begin().await;
    assert!(
        sent_to.starts_with("https://shop.example/sign-in?return_to="),
        "{sent_to}"
    );
    let session = p.session().await;
    let shown = p.send("GET", &p.path(), Some(&session), None).await;
    assert_eq!(shown.status, StatusCode::OK);
    assert_eq!(shown.csp.as_deref(), Some(CSP));
    assert!(shown.body.contains(&asks));
    // One script, the page's own (the expiry in local time; the passkey ceremonies).
    assert_eq!(shown.body.matches("<script").count(), 1);
    assert!(
        shown
            .body
            .contains("<script src=\"/confirm-page.js\"></script>")
    );
    assert!(shown.body.contains("id=\"expires\""));
    // Its stylesheet and icon are its own (no request the page's routes do not serve).
    for asset in [page::STYLE_PATH, page::ICON_PATH] {
        assert!(shown.body.contains(&format!("href=\"{asset}\"")));
        assert_eq!(
            p.send("GET", asset, None, None).await.status,
            StatusCode::OK
        );
    }
    let escaped = SUMMARY.replace('"', "&quot;");
    assert!(
        shown.body.contains(&format!(">{escaped}</pre>")),
        "{}",
        shown.body
    );
    assert!(
        !shown.body.contains("reassign_session_car"),
        "the operation's code is not shown to the person"
    );
    assert!(
        !shown.body.contains("id=\"close-tab\""),
        "not while it waits"
    );
    let csrf = p.form_token(&session).await;
    p.will_complete();
    let done = p
        .post(
            &session,
            &format!("csrf={csrf}&decision=confirm"),
            Some(&format!("http://{HOST}")),
        )
        .await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    assert_eq!(p.state(), ProposalState::Completed);
    assert_eq!(p.executed(), 1);
    assert_eq!(p.h.signer.signed(), 1);
    let after = p.send("GET", &p.path(), Some(&session), None).await;
    assert!(
        after.body.contains("data-state=\"completed\""),
        "{}",
        after.body
    );
    assert!(after.body.contains("id=\"result\""));
    assert!(
        after.body.contains("You can close this tab now"),
        "an end state: {}",
        after.body
    );
    assert!(
        !after.body.contains("name=\"csrf\""),
        "no form once answered"
    );
}

/// a cancel on the page cancels; nothing executes.
#[tokio::test]
async fn x3_a_cancel_on_the_page_executes_nothing() {
    let p = page().await;
    let session = p.session().await;
    let csrf = p.form_token(&session).await;
    let done = p
        .post(&session, &format!("csrf={csrf}&decision=cancel"), None)
        .await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    assert_eq!(p.state(), ProposalState::Cancelled);
    assert_eq!(p.executed(), 0);
}

/// X-3 (bad input): another person of the same tenant is refused at the return and, with
/// a session of their own, sees nothing and confirms nothing.
#[tokio::test]
async fn x3_the_page_refuses_anyone_but_the_links_person() {
    let p = page().await;
    let (back, session) = p.sign_in_as("u_mallory").await;
    assert_eq!(back.status, StatusCode::FORBIDDEN);
    assert!(session.is_none(), "no session for someone else");
    // A session cookie of someone else (a valid hand-off token of theirs) set by hand.
    let now = now_secs();
    let mallory = Principal {
        tenant: p.h.who.tenant.clone(),
        user: UserId::parse("u_mallory").unwrap(),
    };
    let token = sign_hand_off(
        &SecretString::new(SECRET),
        &p.kid,
        &mallory,
        "n",
        now,
        now + 120,
    )
    .unwrap();
    // N-6: a token in the cookie is no session at all: the page asks to sign in.
    let theirs = format!("countersign-confirm={token}");
    let shown = p.send("GET", &p.path(), Some(&theirs), None).await;
    assert_eq!(shown.status, StatusCode::OK);
    assert!(shown.body.contains("id=\"sign-in\""), "{}", shown.body);
    assert!(!shown.body.contains("Move session"));
    p.will_complete();
    let posted = p.post(&theirs, "csrf=x&decision=confirm", None).await;
    assert_eq!(posted.status, StatusCode::UNAUTHORIZED);
    assert_eq!(p.state(), ProposalState::PendingConfirmation);
    assert_eq!(p.executed(), 0);
}

/// X-3, N-6 (bad input): the return without the page's nonce, with a plain widget token
/// (no nonce) or with a forged token is refused, and sets no session; a token is spent on
/// its first presentation (refused without the nonce cookie, it is refused with it too);
/// a token in the old return URL opens nothing and leaves the URL.
#[tokio::test]
async fn x3_the_return_needs_the_pages_nonce_and_the_tenants_signature() {
    let p = page().await;
    let (nonce, _) = p.begin().await;
    let now = now_secs();
    let alice = p.h.who.clone();
    let secret = SecretString::new(SECRET);
    let good = sign_hand_off(&secret, &p.kid, &alice, &nonce, now, now + 120).unwrap();
    let widget = countersign_chat::widget::sign_token(
        &secret,
        &p.kid,
        &alice.tenant,
        &alice.user,
        now,
        now + 120,
    )
    .unwrap();
    let other_nonce = sign_hand_off(&secret, &p.kid, &alice, "another", now, now + 120).unwrap();
    let forged = sign_hand_off(
        &SecretString::new("not-the-secret-0123456789abcdef0123"),
        &p.kid,
        &alice,
        &nonce,
        now,
        now + 120,
    )
    .unwrap();
    let old = p
        .send(
            "GET",
            &format!("{}/return?token={good}", p.path()),
            Some(&format!("countersign-confirm-nonce={nonce}")),
            None,
        )
        .await;
    assert_eq!(old.status, StatusCode::SEE_OTHER);
    assert_eq!(old.location.as_deref(), Some(p.path().as_str()));
    assert!(cookie_value(&old.cookies, "countersign-confirm").is_none());
    for (token, cookie) in [
        (&good, None),
        (&good, Some(nonce.as_str())),
        (&widget, Some(nonce.as_str())),
        (&other_nonce, Some(nonce.as_str())),
        (&forged, Some(nonce.as_str())),
    ] {
        let back = p.hand_back(token, cookie).await;
        assert_eq!(back.status, StatusCode::UNAUTHORIZED, "{}", back.body);
        assert!(cookie_value(&back.cookies, "countersign-confirm").is_none());
    }
}

/// N-6: a hand-off token opens the page once: the same token and nonce cookie a second
/// time is refused, and the session the first return opened is good for its link only.
#[tokio::test]
async fn n6_a_hand_off_token_opens_the_page_once_server_side() {
    let p = page().await;
    let (nonce, _) = p.begin().await;
    let token = p.hand_off_token(&nonce);
    let first = p.hand_back(&token, Some(&nonce)).await;
    assert_eq!(first.status, StatusCode::SEE_OTHER, "{}", first.body);
    assert_eq!(first.location.as_deref(), Some(p.path().as_str()));
    let again = p.hand_back(&token, Some(&nonce)).await;
    assert_eq!(again.status, StatusCode::UNAUTHORIZED);
    assert!(cookie_value(&again.cookies, "countersign-confirm").is_none());
    // The session is random, not the token, and opens only this link's page.
    let session = cookie_value(&first.cookies, "countersign-confirm").unwrap();
    assert!(!token.contains(&session) && session.len() == 43);
    let (other, _) = p.h.propose().await;
    let other_link = confirmation::create_link(p.h.store.as_ref(), &p.h.proposal(&other))
        .await
        .unwrap();
    let elsewhere = p
        .send(
            "GET",
            &format!("/confirm/{}", other_link.id),
            Some(&format!("countersign-confirm={session}")),
            None,
        )
        .await;
    assert!(
        elsewhere.body.contains("id=\"sign-in\""),
        "{}",
        elsewhere.body
    );
}

/// N-6: the Sign in button and the page's form post only from the page's own origin: a
/// post with another `Origin`, or with none and no `Sec-Fetch-Site: same-origin`, is
/// refused; the browser's own same-origin mark passes.
#[tokio::test]
async fn n6_posts_need_the_pages_own_origin() {
    let p = page().await;
    let begin = format!("{}/sign-in", p.path());
    for origin in [None, Some("https://evil.example")] {
        let pressed = p.send("POST", &begin, None, Some(("", origin))).await;
        assert_eq!(pressed.status, StatusCode::FORBIDDEN, "{origin:?}");
        assert!(pressed.cookies.is_empty());
    }
    let session = p.session().await;
    let csrf = p.form_token(&session).await;
    p.will_complete();
    let form = format!("csrf={csrf}&decision=confirm");
    let bare = p
        .send("POST", &p.path(), Some(&session), Some((&form, None)))
        .await;
    assert_eq!(bare.status, StatusCode::FORBIDDEN);
    assert_eq!(p.executed(), 0);
    let req = Request::builder()
        .method("POST")
        .uri(p.path())
        .header(header::HOST, HOST)
        .header(header::COOKIE, &session)
        .header("sec-fetch-site", "same-origin")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(form))
        .unwrap();
    let marked = p.app.clone().oneshot(req).await.unwrap();
    assert_eq!(marked.status(), StatusCode::SEE_OTHER);
    assert_eq!(p.executed(), 1);
}

/// X-3 (bad input): a tampered or unknown id is not found, whatever the session.
#[tokio::test]
async fn x3_a_tampered_id_opens_nothing() {
    let p = page().await;
    let session = p.session().await;
    let mut tampered = p.id.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'A' { 'B' } else { 'A' });
    for id in [
        tampered.as_str(),
        "short",
        "..%2F..%2Fadmin",
        &"A".repeat(400),
    ] {
        let shown = p
            .send("GET", &format!("/confirm/{id}"), Some(&session), None)
            .await;
        assert_eq!(shown.status, StatusCode::NOT_FOUND, "{id}");
        let posted = p
            .send(
                "POST",
                &format!("/confirm/{id}"),
                Some(&session),
                Some(("decision=confirm", None)),
            )
            .await;
        assert_eq!(posted.status, StatusCode::NOT_FOUND, "{id}");
    }
    assert_eq!(p.state(), ProposalState::PendingConfirmation);
    assert_eq!(p.executed(), 0);
}

/// X-3 (bad input): CSRF — a post without the form token, with another token, or from
/// another origin is refused; an unknown decision too; nothing executes.
#[tokio::test]
async fn x3_a_forged_form_is_refused() {
    let p = page().await;
    let session = p.session().await;
    let csrf = p.form_token(&session).await;
    p.will_complete();
    for (body, origin) in [
        ("decision=confirm".to_owned(), None),
        ("csrf=AAAA&decision=confirm".to_owned(), None),
        (
            format!("csrf={csrf}&decision=confirm"),
            Some("https://evil.example"),
        ),
        (format!("csrf={csrf}&decision=confirm"), Some("null")),
    ] {
        let posted = p.post(&session, &body, origin).await;
        assert_eq!(posted.status, StatusCode::FORBIDDEN, "{body} {origin:?}");
    }
    let odd = p
        .post(&session, &format!("csrf={csrf}&decision=yes"), None)
        .await;
    assert_eq!(odd.status, StatusCode::BAD_REQUEST);
    assert_eq!(p.state(), ProposalState::PendingConfirmation);
    assert_eq!(p.executed(), 0);
    assert_eq!(p.h.signer.signed(), 0);
}

/// X-3 (bad input): a double submit posts nothing the second time: one execution, one
/// reply in the conversation, and a 409.
#[tokio::test]
async fn x3_a_double_submit_executes_once() {
    let p = page().await;
    let session = p.session().await;
    let csrf = p.form_token(&session).await;
    p.will_complete();
    let form = format!("csrf={csrf}&decision=confirm");
    assert_eq!(
        p.post(&session, &form, None).await.status,
        StatusCode::SEE_OTHER
    );
    let messages = p.h.messages().len();
    let again = p.post(&session, &form, None).await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(p.h.messages().len(), messages);
    assert_eq!(p.executed(), 1);
    let cancel = p
        .post(&session, &format!("csrf={csrf}&decision=cancel"), None)
        .await;
    assert_eq!(cancel.status, StatusCode::CONFLICT);
    assert_eq!(p.state(), ProposalState::Completed);
}

/// X-3 (bad input): a page opened after the proposal's expiry says so (410), signed in or
/// not, and its form posts nothing.
#[tokio::test]
async fn x3_a_page_opened_after_expiry_executes_nothing() {
    let p = page().await;
    let session = p.session().await;
    let csrf = p.form_token(&session).await;
    p.h.clock.advance_secs(241);
    let anonymous = p.send("GET", &p.path(), None, None).await;
    assert_eq!(anonymous.status, StatusCode::GONE);
    let shown = p.send("GET", &p.path(), Some(&session), None).await;
    assert_eq!(shown.status, StatusCode::GONE);
    assert!(!shown.body.contains("name=\"csrf\""));
    p.will_complete();
    let posted = p
        .post(&session, &format!("csrf={csrf}&decision=confirm"), None)
        .await;
    assert_eq!(posted.status, StatusCode::GONE);
    assert_eq!(p.executed(), 0);
}

/// The form token the page's session cookie `session` would have, computed by someone
/// holding only the cookie's value (the pre-N-6 page derived it from the cookie alone).
fn derived_form_token(session: &str) -> String {
    use base64::Engine as _;
    let digest =
        countersign_domain::hash::Sha256Hex::digest(format!("confirm-form:{session}").as_bytes());
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_str())
}

impl Page {
    /// A hand-off token for the link's person, carrying `nonce`, as the tenant's sign-in
    /// issues it.
    fn hand_off_token(&self, nonce: &str) -> String {
        let now = now_secs();
        sign_hand_off(
            &SecretString::new(SECRET),
            &self.kid,
            &self.h.who,
            nonce,
            now,
            now + 120,
        )
        .unwrap()
    }

    /// What a client holding `token` (and nothing the person's browser holds) can do with
    /// it: confirm on the page with it as the session cookie (with and without an
    /// `Origin`), reply `confirm` through the widget API, mint a gateway token. Returns
    /// the statuses.
    async fn use_captured(&self, token: &str) -> Vec<StatusCode> {
        let cookie = format!("countersign-confirm={token}");
        let form = format!("csrf={}&decision=confirm", derived_form_token(token));
        let mut statuses = vec![
            self.send("POST", &self.path(), Some(&cookie), Some((&form, None)))
                .await
                .status,
            self.send(
                "POST",
                &self.path(),
                Some(&cookie),
                Some((&form, Some(&format!("http://{HOST}")))),
            )
            .await
            .status,
        ];
        let api = countersign_chat::api::router(countersign_chat::api::AppState {
            chat: Arc::new(Chat::new(self.h.parts.clone())),
            auth: Arc::new(WidgetAuth::new(
                self.h.store.clone(),
                self.h.secrets.clone(),
            )),
        });
        let presented = self.h.proposal(&self.action).presented.message_id;
        let case = self.h.case.as_str();
        for (path, body) in [
            (
                format!("/api/cases/{case}/messages"),
                serde_json::json!({"content": "confirm", "replyToMessageId": presented.as_str()}),
            ),
            (
                format!("/api/cases/{case}/mcp-token"),
                serde_json::json!({}),
            ),
        ] {
            let req = Request::builder()
                .method("POST")
                .uri(path)
                .header(header::HOST, HOST)
                .header(header::AUTHORIZATION, format!("Bearer {token}"))
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body.to_string()))
                .unwrap();
            statuses.push(api.clone().oneshot(req).await.unwrap().status());
        }
        statuses
    }
}

/// N-6 (security review N3, measured): a client that holds the person's sign-in hand-off
/// token — before the person used it, or after — confirms nothing: not on the page (the
/// token is no page session, and the form token is not derivable from it), not through
/// the widget API, and it mints no gateway token.
#[tokio::test]
async fn n6_a_captured_hand_off_token_confirms_nothing() {
    let p = page().await;
    p.will_complete();
    // The client began the sign-in itself and sent the person the tenant's link: the
    // token carries the client's nonce.
    let (nonce, _) = p.begin().await;
    let unspent = p.hand_off_token(&nonce);
    let statuses = p.use_captured(&unspent).await;
    assert!(
        statuses.iter().all(|s| s.is_client_error()),
        "unspent: {statuses:?}"
    );
    assert_eq!(p.executed(), 0, "unspent token executed");
    // The tenant posts the token back to the person's browser, which did not begin this
    // sign-in: refused — and the token is spent on that first presentation, so the client
    // that began it (holding the nonce cookie) cannot use it at the return either.
    let persons_browser = p.hand_back(&unspent, None).await;
    assert_eq!(persons_browser.status, StatusCode::UNAUTHORIZED);
    let clients_return = p.hand_back(&unspent, Some(&nonce)).await;
    assert_eq!(clients_return.status, StatusCode::UNAUTHORIZED);
    assert!(cookie_value(&clients_return.cookies, "countersign-confirm").is_none());
    let statuses = p.use_captured(&unspent).await;
    assert!(
        statuses.iter().all(|s| s.is_client_error()),
        "after the person: {statuses:?}"
    );
    // The person's own sign-in, from the start, still works, and their token is spent too.
    let (back, session) = p.sign_in_as("u_alice").await;
    assert_eq!(back.status, StatusCode::SEE_OTHER, "{}", back.body);
    assert!(session.is_some());
    assert_eq!(p.executed(), 0, "a captured token executed");
    assert_eq!(p.state(), ProposalState::PendingConfirmation);
    assert_eq!(p.h.signer.signed(), 0);
}

/// Issue 50: the page speaks the conversation's language: the company asking, the expiry,
/// and the end state in Portuguese.
#[tokio::test]
async fn the_page_names_the_company_and_ends_in_the_conversations_language() {
    let p = page_in(Some(countersign_domain::texts::Language::Pt)).await;
    // The tenant's accent colours both steps (applied by the page's own script).
    let appearance = countersign_domain::appearance::Appearance {
        accent: Some("#0b5d3b".into()),
        ..Default::default()
    };
    p.h.store
        .set_appearance(
            &p.h.who.tenant,
            &appearance,
            &audit(&p.h, "tenant.appearance"),
        )
        .await
        .unwrap();
    let first = p.send("GET", &p.path(), None, None).await;
    assert!(
        first.body.contains("data-accent=\"#0b5d3b\""),
        "{}",
        first.body
    );
    assert!(
        first.body.contains("<script src=\"/confirm-page.js\""),
        "{}",
        first.body
    );
    assert!(
        first
            .body
            .contains("</span> pede que você confirme uma alteração"),
        "{}",
        first.body
    );
    assert!(first.body.contains("lang=\"pt-BR\""));
    let session = p.session().await;
    let shown = p.send("GET", &p.path(), Some(&session), None).await;
    assert!(shown.body.contains("Expira em"), "{}", shown.body);
    assert!(
        shown.body.contains("data-accent=\"#0b5d3b\""),
        "{}",
        shown.body
    );
    let csrf = p.form_token(&session).await;
    // The passkey forms' refusals speak the conversation's language too (a removal
    // naming no passkey; a post without the form token).
    let own = format!("http://{HOST}");
    let remove = format!("{}/passkeys/remove", p.path());
    for (form, status) in [
        (format!("csrf={csrf}"), StatusCode::BAD_REQUEST),
        ("credentialId=x".to_owned(), StatusCode::FORBIDDEN),
    ] {
        let refused = p
            .send("POST", &remove, Some(&session), Some((&form, Some(&own))))
            .await;
        assert_eq!(refused.status, status, "{}", refused.body);
        assert!(
            refused.body.contains("Este pedido não pôde ser aceito"),
            "{}",
            refused.body
        );
    }
    let done = p
        .post(&session, &format!("csrf={csrf}&decision=cancel"), None)
        .await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    let after = p.send("GET", &p.path(), Some(&session), None).await;
    assert!(
        after.body.contains("Você já pode fechar esta aba"),
        "{}",
        after.body
    );
}
