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
    let h = H::new().await;
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
        let bytes = axum::body::to_bytes(res.into_body(), 1 << 20)
            .await
            .unwrap();
        Answer {
            status,
            cookies,
            csp,
            body: String::from_utf8(bytes.to_vec()).unwrap(),
        }
    }

    fn path(&self) -> String {
        format!("/confirm/{}", self.id)
    }

    /// The hand-off for `user`: the page's nonce, the tenant's token, the return. Returns
    /// the return's answer and the session cookie it set, if any.
    async fn sign_in_as(&self, user: &str) -> (Answer, Option<String>) {
        let first = self.send("GET", &self.path(), None, None).await;
        assert_eq!(first.status, StatusCode::OK, "{}", first.body);
        let nonce = cookie_value(&first.cookies, "countersign-confirm-nonce").unwrap();
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
        let back = self
            .send(
                "GET",
                &format!("{}/return?token={token}", self.path()),
                Some(&format!("countersign-confirm-nonce={nonce}")),
                None,
            )
            .await;
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

    async fn post(&self, session: &str, body: &str, origin: Option<&str>) -> Answer {
        self.send("POST", &self.path(), Some(session), Some((body, origin)))
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
    assert!(
        first
            .body
            .contains("https://shop.example/sign-in?return_to="),
        "{}",
        first.body
    );
    assert!(
        !first.body.contains("Move session"),
        "nothing shown before sign-in"
    );
    let session = p.session().await;
    let shown = p.send("GET", &p.path(), Some(&session), None).await;
    assert_eq!(shown.status, StatusCode::OK);
    assert_eq!(shown.csp.as_deref(), Some(CSP));
    assert!(!shown.body.contains("<script"));
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
    assert!(shown.body.contains("reassign_session_car"));
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
    let theirs = format!("countersign-confirm={token}");
    let shown = p.send("GET", &p.path(), Some(&theirs), None).await;
    assert_eq!(shown.status, StatusCode::FORBIDDEN);
    assert!(!shown.body.contains("Move session"));
    p.will_complete();
    let posted = p.post(&theirs, "csrf=x&decision=confirm", None).await;
    assert_eq!(posted.status, StatusCode::FORBIDDEN);
    assert_eq!(p.state(), ProposalState::PendingConfirmation);
    assert_eq!(p.executed(), 0);
}

/// X-3 (bad input): the return without the page's nonce, with a plain widget token (no
/// nonce) or with a forged token is refused, and sets no session.
#[tokio::test]
async fn x3_the_return_needs_the_pages_nonce_and_the_tenants_signature() {
    let p = page().await;
    let first = p.send("GET", &p.path(), None, None).await;
    let nonce = cookie_value(&first.cookies, "countersign-confirm-nonce").unwrap();
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
    let with_nonce = format!("countersign-confirm-nonce={nonce}");
    for (token, cookie) in [
        (&good, None),
        (&widget, Some(with_nonce.as_str())),
        (&other_nonce, Some(with_nonce.as_str())),
        (&forged, Some(with_nonce.as_str())),
    ] {
        let back = p
            .send(
                "GET",
                &format!("{}/return?token={token}", p.path()),
                cookie,
                None,
            )
            .await;
        assert_eq!(back.status, StatusCode::UNAUTHORIZED, "{}", back.body);
        assert!(cookie_value(&back.cookies, "countersign-confirm").is_none());
    }
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
