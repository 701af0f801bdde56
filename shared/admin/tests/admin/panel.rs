//! The `/admin` panel over HTTP on in-memory ports (U-1 … U-3): sessions, the two
//! cross-site guards, escaping, security headers, the write-only token. The browser
//! drives it in `widget/test/panel.mjs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use async_trait::async_trait;
use axum::body::Body;
use countersign_admin::api::AdminState;
use countersign_admin::{mcp, tenants};
use countersign_domain::config::{UrlPolicy, service_token_secret_name};
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ports::McpSettings;
use countersign_domain::ports::Tenants;
use countersign_domain::ports::{Resolver, SecretStore, Tenant};
use countersign_domain::texts::Language;
use countersign_testkit::{
    FakeSigner, MemorySecrets, MemoryStore, ScriptedProvider, SeqIds, TestClock,
};
use http::{Request, StatusCode, header};
use serde_json::json;
use std::net::IpAddr;
use std::sync::Arc;
use tower::ServiceExt as _;

struct Public;

#[async_trait]
impl Resolver for Public {
    async fn resolve(&self, _: &str, _: u16) -> std::io::Result<Vec<IpAddr>> {
        Ok(vec![IpAddr::from([93, 184, 216, 34])])
    }
}

struct Env {
    state: AdminState,
    provider: Arc<ScriptedProvider>,
    store: Arc<MemoryStore>,
    secrets: Arc<MemorySecrets>,
    tenant: Tenant,
    key: String,
}

async fn env(local: bool, name: &str) -> Env {
    let clock = Arc::new(TestClock::default());
    let ids = Arc::new(SeqIds::new(clock.clone()));
    let store = Arc::new(MemoryStore::default());
    let secrets = Arc::new(MemorySecrets::default());
    let registered = tenants::register(&*store, &*ids, &*clock, name, Language::En)
        .await
        .unwrap();
    // V-1: every save reads the server's tools: the form's consultations, and a
    // destructive tool for the refusals.
    let provider = Arc::new(ScriptedProvider::default());
    provider.publish(vec![
        countersign_testkit::tool("get_user_cars"),
        countersign_testkit::tool("get_user_sessions"),
        countersign_testkit::described(
            "delete_upload",
            serde_json::json!({"destructiveHint": true}),
        ),
    ]);
    let state = AdminState {
        stores: countersign_admin::api::AdminStores::split(store.clone(), store.clone()),
        leases: store.clone(),
        step_up: None,
        sessions: store.clone(),
        secrets: secrets.clone(),
        signer: Arc::new(FakeSigner::default()),
        checkpoint_signer: Arc::new(FakeSigner::default()),
        issuer: "https://support.example.com/mcp-actions".into(),
        url_policy: UrlPolicy {
            allow_loopback_http: local,
        },
        resolver: Arc::new(Public),
        provider: provider.clone(),
        ids,
        clock,
    };
    Env {
        state,
        provider,
        store,
        secrets,
        tenant: registered.tenant,
        key: registered.admin_key.expose().to_owned(),
    }
}

struct Answer {
    status: StatusCode,
    headers: http::HeaderMap,
    body: String,
}

async fn send(
    e: &Env,
    method: &str,
    uri: &str,
    cookie: Option<&str>,
    form: Option<&str>,
    origin: Option<&str>,
) -> Answer {
    let mut req = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::HOST, "panel.example.com");
    if let Some(c) = cookie {
        req = req.header(header::COOKIE, c);
    }
    if let Some(o) = origin {
        req = req.header(header::ORIGIN, o);
    }
    let req = match form {
        Some(f) => req
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(Body::from(f.to_owned())),
        None => req.body(Body::empty()),
    }
    .unwrap();
    // The certification form is served by the messages function (decision 0026).
    let app = if uri.starts_with("/admin/certification") {
        countersign_admin::certification_app(e.state.clone())
    } else {
        countersign_admin::app(e.state.clone())
    };
    let res = app.oneshot(req).await.unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let bytes = axum::body::to_bytes(res.into_body(), 1 << 20)
        .await
        .unwrap();
    Answer {
        status,
        headers,
        body: String::from_utf8(bytes.to_vec()).unwrap(),
    }
}

fn enc(v: &str) -> String {
    url::form_urlencoded::byte_serialize(v.as_bytes()).collect()
}

/// Signs in; returns the `Cookie` header value and the page's form token.
async fn sign_in(e: &Env) -> (String, String) {
    let a = send(
        e,
        "POST",
        "/admin/login",
        None,
        Some(&format!("key={}", enc(&e.key))),
        None,
    )
    .await;
    assert_eq!(a.status, StatusCode::SEE_OTHER, "{}", a.body);
    let set = a.headers[header::SET_COOKIE].to_str().unwrap().to_owned();
    let cookie = set.split(';').next().unwrap().to_owned();
    let page = send(e, "GET", "/admin/mcp", Some(&cookie), None, None).await;
    assert_eq!(page.status, StatusCode::OK);
    let csrf = page
        .body
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_owned();
    (cookie, csrf)
}

fn mcp_form(csrf: &str, url: &str, token: &str) -> String {
    format!(
        "csrf={}&serverUrl={}&serviceToken={}&allowedToolsText=get_user_cars%0Aget_user_sessions&operations=reassign_session_car",
        enc(csrf),
        enc(url),
        enc(token)
    )
}

/// U-1: a wrong key is 401 and opens nothing; the right one gets a random id in an
/// HttpOnly, SameSite=Strict, Secure `__Host-` cookie (plain on the local stack); only
/// the id's hash is stored.
#[tokio::test]
async fn u1_sign_in_exchanges_the_key_for_a_strict_cookie() {
    let e = env(false, "A").await;
    let wrong = send(
        &e,
        "POST",
        "/admin/login",
        None,
        Some("key=tsk_wrong"),
        None,
    )
    .await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert!(wrong.headers.get(header::SET_COOKIE).is_none());
    assert!(wrong.body.contains("not valid"));
    let a = send(
        &e,
        "POST",
        "/admin/login",
        None,
        Some(&format!("key={}", enc(&e.key))),
        None,
    )
    .await;
    let set = a.headers[header::SET_COOKIE].to_str().unwrap();
    assert!(set.starts_with("__Host-countersign-admin="), "{set}");
    for attr in [
        "HttpOnly",
        "SameSite=Strict",
        "Secure",
        "Path=/",
        "Max-Age=1800",
    ] {
        assert!(set.contains(attr), "{attr} in {set}");
    }
    assert!(!set.contains(&e.key), "the cookie is not the key");
    let id = set.split(';').next().unwrap().split_once('=').unwrap().1;
    let hashed = countersign_domain::ports::SessionStore::get_session(
        &*e.store,
        &Sha256Hex::digest(id.as_bytes()),
    )
    .await
    .unwrap();
    assert_eq!(hashed.unwrap().tenant, e.tenant.id);

    let local = env(true, "B").await;
    let a = send(
        &local,
        "POST",
        "/admin/login",
        None,
        Some(&format!("key={}", enc(&local.key))),
        None,
    )
    .await;
    let set = a.headers[header::SET_COOKIE].to_str().unwrap();
    assert!(
        set.starts_with("countersign-admin=") && !set.contains("Secure"),
        "{set}"
    );
}

/// U-1: every page carries the strict CSP and is never cached; without a session the
/// pages send to sign-in.
#[tokio::test]
async fn u1_pages_are_no_store_under_a_strict_csp() {
    let e = env(false, "A").await;
    let (cookie, _) = sign_in(&e).await;
    for uri in ["/admin", "/admin/mcp", "/admin/widgets", "/admin/audit"] {
        let a = send(&e, "GET", uri, Some(&cookie), None, None).await;
        let a = if a.status == StatusCode::SEE_OTHER {
            send(
                &e,
                "GET",
                a.headers[header::LOCATION].to_str().unwrap(),
                Some(&cookie),
                None,
                None,
            )
            .await
        } else {
            a
        };
        assert_eq!(a.status, StatusCode::OK, "{uri}");
        let csp = a.headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(
            csp.contains("default-src 'none'")
                && csp.contains("script-src 'self'")
                && !csp.contains("unsafe"),
            "{csp}"
        );
        assert_eq!(a.headers[header::CACHE_CONTROL], "no-store");
        assert!(!a.body.contains("<script>"), "no inline script on {uri}");
        assert!(!a.body.contains(" style="), "no inline style on {uri}");
    }
    for uri in ["/admin/mcp", "/admin/widgets", "/admin/audit"] {
        let a = send(&e, "GET", uri, None, None, None).await;
        assert_eq!(
            (a.status, a.headers[header::LOCATION].to_str().unwrap()),
            (StatusCode::SEE_OTHER, "/admin")
        );
    }
}

/// U-1: a change without the session's form token, or from another origin even with it,
/// is refused with 403 and saves nothing.
#[tokio::test]
async fn u1_cross_site_changes_are_refused_and_save_nothing() {
    let e = env(false, "A").await;
    let (cookie, csrf) = sign_in(&e).await;
    let url = "https://mcp.example.com/mcp";
    for (form, origin) in [
        (mcp_form("forged", url, "tok"), None),
        (mcp_form("", url, "tok").replace("csrf=&", ""), None),
        (
            mcp_form(&csrf, url, "tok"),
            Some("https://evil.example.com"),
        ),
        (
            mcp_form(&csrf, url, "tok"),
            Some("http://panel.example.com:8080"),
        ),
    ] {
        let a = send(&e, "POST", "/admin/mcp", Some(&cookie), Some(&form), origin).await;
        assert_eq!(a.status, StatusCode::FORBIDDEN, "{form} {origin:?}");
    }
    assert!(
        e.store
            .get_mcp_config(&e.tenant.id)
            .await
            .unwrap()
            .is_none()
    );
    // The panel's own origin, with the token: saved.
    let a = send(
        &e,
        "POST",
        "/admin/mcp",
        Some(&cookie),
        Some(&mcp_form(&csrf, url, "tok")),
        Some("https://panel.example.com"),
    )
    .await;
    assert_eq!(a.status, StatusCode::SEE_OTHER, "{}", a.body);
    assert!(
        e.store
            .get_mcp_config(&e.tenant.id)
            .await
            .unwrap()
            .is_some()
    );
}

/// U-1: sign-out deletes the session (the same cookie no longer works); rotating the
/// admin key ends the sessions it opened.
#[tokio::test]
async fn u1_sign_out_and_key_rotation_end_the_session() {
    let e = env(false, "A").await;
    let (cookie, csrf) = sign_in(&e).await;
    let out = send(
        &e,
        "POST",
        "/admin/logout",
        Some(&cookie),
        Some(&format!("csrf={}", enc(&csrf))),
        None,
    )
    .await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    assert!(
        out.headers[header::SET_COOKIE]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );
    let again = send(&e, "GET", "/admin/mcp", Some(&cookie), None, None).await;
    assert_eq!(
        again.status,
        StatusCode::SEE_OTHER,
        "the old cookie is dead"
    );

    let (cookie, _) = sign_in(&e).await;
    let (_, new_hash) = countersign_admin::keys::generate();
    let audit = countersign_admin::audit::entry(
        e.state.ids.as_ref(),
        e.state.clock.as_ref(),
        "operator",
        "adminKey.rotate",
        json!({}),
    );
    e.store
        .set_admin_key_hash(&e.tenant.id, &new_hash, &audit)
        .await
        .unwrap();
    let after = send(&e, "GET", "/admin/mcp", Some(&cookie), None, None).await;
    assert_eq!(
        after.status,
        StatusCode::SEE_OTHER,
        "a rotated key ends its sessions"
    );
}

/// U-2: the token is write-only: never in a page, and left empty it is kept; an API error
/// is shown next to the field it names; data is escaped.
#[tokio::test]
async fn u2_the_token_is_write_only_and_errors_sit_by_their_field() {
    let e = env(false, "<script>alert(1)</script>").await;
    let (cookie, csrf) = sign_in(&e).await;
    let url = "https://mcp.example.com/mcp";
    send(
        &e,
        "POST",
        "/admin/mcp",
        Some(&cookie),
        Some(&mcp_form(&csrf, url, "svc_secret_1")),
        None,
    )
    .await;
    let page = send(&e, "GET", "/admin/mcp", Some(&cookie), None, None).await;
    assert!(
        !page.body.contains("svc_secret_1"),
        "the token is never shown"
    );
    assert!(!page.body.contains("<script>alert"), "data is escaped");
    assert!(page.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    // Saved again with the token field empty: the same token stays (no new version).
    let with_tools = |tools: &str| {
        mcp_form(&csrf, url, "").replace(
            "allowedToolsText=get_user_cars%0Aget_user_sessions",
            &format!("allowedToolsText={tools}"),
        )
    };
    let a = send(
        &e,
        "POST",
        "/admin/mcp",
        Some(&cookie),
        Some(&with_tools("get_user_cars")),
        None,
    )
    .await;
    assert_eq!(a.status, StatusCode::SEE_OTHER, "{}", a.body);
    let name = service_token_secret_name(&e.tenant.id);
    let (token, version) = e.secrets.get_current(&name).await.unwrap().unwrap();
    assert_eq!((token.expose(), version.as_str()), ("svc_secret_1", "v1"));
    // A new server URL with the field empty: the saved token is not sent to it; the
    // token's field says why and nothing is saved.
    let moved = send(
        &e,
        "POST",
        "/admin/mcp",
        Some(&cookie),
        Some(&mcp_form(&csrf, "https://mcp2.example.com/mcp", "")),
        None,
    )
    .await;
    assert_eq!(moved.status, StatusCode::BAD_REQUEST, "{}", moved.body);
    assert!(
        moved.body.contains("data-field=\"serviceToken\"")
            && moved
                .body
                .contains("A new server URL needs its service token again"),
        "{}",
        moved.body
    );
    let stored = e.store.get_mcp_config(&e.tenant.id).await.unwrap().unwrap();
    assert_eq!(stored.config.server_url.as_str(), url);
    // V-1: a destructive tool typed into the list is refused by the tools' field, named.
    let write = send(
        &e,
        "POST",
        "/admin/mcp",
        Some(&cookie),
        Some(&with_tools("delete_upload")),
        None,
    )
    .await;
    assert_eq!(write.status, StatusCode::BAD_REQUEST, "{}", write.body);
    assert!(
        write.body.contains("data-field=\"allowedTools\"")
            && write
                .body
                .contains("`delete_upload` is declared destructive"),
        "{}",
        write.body
    );
    let stored = e.store.get_mcp_config(&e.tenant.id).await.unwrap().unwrap();
    assert_eq!(stored.config.allowed_tools.len(), 1, "nothing saved");
    // A refused save names the field; H-4 refuses enabling before a run.
    let bad = send(
        &e,
        "POST",
        "/admin/mcp",
        Some(&cookie),
        Some(&mcp_form(&csrf, "http://x.example.com/mcp", "")),
        None,
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(
        bad.body.contains("data-field=\"serverUrl\""),
        "{}",
        bad.body
    );
    let on = format!("{}&enabled=true", mcp_form(&csrf, url, ""));
    let refused = send(&e, "POST", "/admin/mcp", Some(&cookie), Some(&on), None).await;
    assert_eq!(refused.status, StatusCode::CONFLICT);
    assert!(refused.body.contains("data-field=\"actionPolicy.enabled\""));
    assert!(
        !mcp::current(&e.state, &e.tenant)
            .await
            .unwrap()
            .unwrap()
            .config
            .action_policy
            .enabled
    );
}

/// U-3: a new widget secret is shown once, on a `no-store` page; the listing never shows
/// it; revoke removes the credential.
#[tokio::test]
async fn u3_a_widget_secret_is_shown_once() {
    let e = env(false, "A").await;
    let (cookie, csrf) = sign_in(&e).await;
    let form = format!(
        "csrf={}&origins={}",
        enc(&csrf),
        enc("https://shop.example.com")
    );
    let created = send(
        &e,
        "POST",
        "/admin/widgets",
        Some(&cookie),
        Some(&form),
        None,
    )
    .await;
    // Posts and redirects (a reload never creates a second one); the secret goes with the
    // redirect in a one-time cookie for the credentials page only.
    assert_eq!(created.status, StatusCode::SEE_OTHER);
    let to = created.headers[header::LOCATION]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(to.starts_with("/admin/widgets?created=wk_"), "{to}");
    let carried = created.headers[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(carried.contains("Path=/admin/widgets"), "{carried}");
    assert!(
        carried.contains("HttpOnly") && carried.contains("Max-Age=60"),
        "{carried}"
    );
    let one_time = carried.split(';').next().unwrap().to_owned();
    let both = format!("{cookie}; {one_time}");
    let shown = send(&e, "GET", &to, Some(&both), None, None).await;
    assert_eq!(shown.status, StatusCode::OK);
    assert_eq!(shown.headers[header::CACHE_CONTROL], "no-store");
    let secret = shown
        .body
        .split("id=\"secretValue\">")
        .nth(1)
        .unwrap()
        .split('<')
        .next()
        .unwrap()
        .to_owned();
    assert!(secret.starts_with("wsk_"));
    assert!(
        one_time.ends_with(&secret),
        "the cookie carried this secret"
    );
    let cleared = shown.headers[header::SET_COOKIE].to_str().unwrap();
    assert!(cleared.contains("Max-Age=0"), "read once: {cleared}");
    // Without the cookie (a reload after it was cleared), the secret is not shown again.
    let again = send(&e, "GET", &to, Some(&cookie), None, None).await;
    assert!(!again.body.contains(&secret));
    assert!(again.body.contains("shown once"));
    // Another credential's id with this cookie shows nothing.
    let other = send(
        &e,
        "GET",
        "/admin/widgets?created=wk_other",
        Some(&both),
        None,
        None,
    )
    .await;
    assert!(!other.body.contains(&secret));
    let list = send(&e, "GET", "/admin/widgets", Some(&cookie), None, None).await;
    assert!(!list.body.contains(&secret));
    assert_eq!(
        countersign_admin::widgets::list(&e.state, &e.tenant)
            .await
            .unwrap()
            .len(),
        1
    );
    let key = countersign_admin::widgets::list(&e.state, &e.tenant)
        .await
        .unwrap()
        .remove(0);
    let revoke = format!("/admin/widgets/{}/revoke", key.id);
    let a = send(
        &e,
        "POST",
        &revoke,
        Some(&cookie),
        Some(&format!("csrf={}", enc(&csrf))),
        None,
    )
    .await;
    assert_eq!(a.status, StatusCode::SEE_OTHER);
    assert!(
        countersign_admin::widgets::list(&e.state, &e.tenant)
            .await
            .unwrap()
            .is_empty()
    );
    let bad = send(
        &e,
        "POST",
        "/admin/widgets",
        Some(&cookie),
        Some(&format!("csrf={}&origins=ftp%3A%2F%2Fx", enc(&csrf))),
        None,
    )
    .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(
        bad.body.contains("data-field=\"allowedOrigins\""),
        "{}",
        bad.body
    );
}

/// Every link and form target of every panel page is a declared route (the SAM template
/// routes exactly those to the admin function, `infra/dev-server/tests/template.rs`):
/// a page the panel links to can never be missing on AWS.
#[tokio::test]
async fn u1_every_link_and_form_of_the_panel_is_a_declared_route() {
    let e = env(false, "A").await;
    let (cookie, csrf) = sign_in(&e).await;
    let form = format!("csrf={}&origins=", enc(&csrf));
    send(
        &e,
        "POST",
        "/admin/widgets",
        Some(&cookie),
        Some(&form),
        None,
    )
    .await;
    let declared: Vec<(&str, &str)> = countersign_admin::panel::ROUTES
        .iter()
        .chain(countersign_admin::panel::CERTIFICATION_ROUTES.iter())
        .copied()
        .collect();
    let matches = |pattern: &str, path: &str| {
        let (p, q): (Vec<&str>, Vec<&str>) =
            (pattern.split('/').collect(), path.split('/').collect());
        p.len() == q.len()
            && p.iter()
                .zip(&q)
                .all(|(a, b)| a == b || (a.starts_with('{') && !b.is_empty()))
    };
    let attr = |body: &str, name: &str| -> Vec<String> {
        body.split(&format!("{name}=\""))
            .skip(1)
            .filter_map(|s| s.split('"').next())
            .map(|v| v.replace("&amp;", "&"))
            .collect()
    };
    let mut queue = vec!["/admin/mcp".to_owned()];
    let mut visited = std::collections::BTreeSet::new();
    let mut checked = 0;
    while let Some(page) = queue.pop() {
        if !visited.insert(page.clone()) {
            continue;
        }
        let a = send(&e, "GET", &page, Some(&cookie), None, None).await;
        assert_eq!(a.status, StatusCode::OK, "{page}");
        let mut targets: Vec<(&str, String)> = Vec::new();
        for href in attr(&a.body, "href")
            .into_iter()
            .chain(attr(&a.body, "src"))
        {
            targets.push(("GET", href));
        }
        for form in a.body.split("<form").skip(1) {
            let tag = form.split('>').next().unwrap_or_default();
            let method = if tag.contains("method=\"get\"") {
                "GET"
            } else {
                "POST"
            };
            if let Some(action) = attr(tag, "action").first() {
                targets.push((method, action.clone()));
            }
        }
        for (method, target) in targets {
            let path = target.split(['?', '#']).next().unwrap_or_default();
            assert!(
                path.starts_with("/admin"),
                "{page} links outside the panel: {target}"
            );
            assert!(
                declared
                    .iter()
                    .any(|(m, p)| *m == method && matches(p, path)),
                "{page}: {method} {path} is not a declared route"
            );
            checked += 1;
            let page_like = method == "GET"
                && !path.starts_with("/admin/static/")
                && path != "/admin/language"
                && path != "/admin";
            if page_like {
                queue.push(target.split('#').next().unwrap_or_default().to_owned());
            }
        }
    }
    for page in [
        "/admin/settings",
        "/admin/widgets",
        "/admin/audit",
        "/admin/actions",
    ] {
        assert!(visited.contains(page), "{page} was reached: {visited:?}");
    }
    assert!(
        visited.iter().any(|p| p.ends_with("/replace")),
        "{visited:?}"
    );
    assert!(checked > 40, "{checked} links and forms checked");
}

/// S-4: the panel speaks Portuguese once chosen (a link on every page, remembered in a
/// cookie) or when the browser prefers it; the page's `lang` follows; error codes of the
/// API are untouched by it.
#[tokio::test]
async fn s4_the_panel_speaks_the_administrators_language_and_remembers_it() {
    let e = env(false, "A").await;
    let (cookie, _) = sign_in(&e).await;
    let english = send(&e, "GET", "/admin/widgets", Some(&cookie), None, None).await;
    assert!(english.body.contains("<html lang=\"en\">"));
    assert!(english.body.contains("Widget credentials"));
    assert!(english.body.contains("href=\"/admin/language?to=pt-BR\""));
    // The switch: remembered for a year, back to the page it was clicked on.
    let req = Request::builder()
        .uri("/admin/language?to=pt-BR")
        .header(header::HOST, "panel.example.com")
        .header(header::REFERER, "https://panel.example.com/admin/widgets")
        .body(Body::empty())
        .unwrap();
    let switched = countersign_admin::app(e.state.clone())
        .oneshot(req)
        .await
        .unwrap();
    assert_eq!(switched.status(), StatusCode::SEE_OTHER);
    assert_eq!(switched.headers()[header::LOCATION], "/admin/widgets");
    let set = switched.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        set.contains("Max-Age=31536000") && set.contains("Path=/admin"),
        "{set}"
    );
    assert!(set.contains("; Secure"), "outside the local stack: {set}");
    let chosen = format!("{cookie}; {}", set.split(';').next().unwrap());
    let pt = send(&e, "GET", "/admin/widgets", Some(&chosen), None, None).await;
    assert!(pt.body.contains("<html lang=\"pt-BR\">"), "{}", pt.body);
    for text in [
        "Credenciais do widget",
        "Criar uma credencial",
        "Sair",
        "Trilha de auditoria",
    ] {
        assert!(pt.body.contains(text), "{text}");
    }
    assert!(!pt.body.contains("Create a credential"));
    assert!(pt.body.contains("href=\"/admin/language?to=en\""));
    // Without a choice, the browser's preference; a bad choice is refused.
    let req = Request::builder()
        .uri("/admin")
        .header(header::HOST, "panel.example.com")
        .header(header::ACCEPT_LANGUAGE, "pt-BR,pt;q=0.9,en;q=0.5")
        .body(Body::empty())
        .unwrap();
    let res = countersign_admin::app(e.state.clone())
        .oneshot(req)
        .await
        .unwrap();
    let body = axum::body::to_bytes(res.into_body(), 1 << 20)
        .await
        .unwrap();
    assert!(String::from_utf8_lossy(&body).contains("Chave de administração"));
    let bad = send(&e, "GET", "/admin/language?to=fr", None, None, None).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
}

/// V-7 through the panel: a certification run while the tenant's other run holds the
/// lease is answered as the API answers it — 429, the wait named in an alert — and runs
/// nothing at the provider (the panel's error type takes the API's status table).
#[tokio::test]
async fn v7_the_panel_answers_a_run_already_in_flight_with_429() {
    let e = env(false, "Busy").await;
    let (cookie, csrf) = sign_in(&e).await;
    let saved = send(
        &e,
        "POST",
        "/admin/mcp",
        Some(&cookie),
        Some(&mcp_form(
            &csrf,
            "https://mcp.example.com/mcp",
            "svc_token_1",
        )),
        None,
    )
    .await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.body);
    let now = e.state.clock.now();
    countersign_testkit::hold_lease(&*e.store, &e.tenant.id, "certification run", now, 60).await;
    let before = e.provider.calls().len();
    let form = format!("csrf={}&testUser=u_test", enc(&csrf));
    let a = send(
        &e,
        "POST",
        "/admin/certification",
        Some(&cookie),
        Some(&form),
        None,
    )
    .await;
    assert_eq!(a.status, StatusCode::TOO_MANY_REQUESTS, "{}", a.body);
    assert!(a.body.contains("already running"), "{}", a.body);
    assert!(a.body.contains("role=\"alert\""), "{}", a.body);
    assert_eq!(
        e.provider.calls().len(),
        before,
        "nothing ran at the provider"
    );
}

/// C-7 through the panel: with actions on, an administrator who edits only the
/// consultations — the form posted as the page filled it in — keeps the action policy:
/// still enabled, the same operations, `actions_version` unchanged (C-8: no pending
/// proposal is voided). A page that did not carry the policy back would switch actions off.
#[tokio::test]
async fn c7_editing_the_consultations_keeps_actions_on() {
    use countersign_domain::ports::{AuditEntry, McpSettings as _};
    let e = env(false, "Keeps").await;
    let (cookie, csrf) = sign_in(&e).await;
    let url = "https://mcp.example.com/mcp";
    let saved = send(
        &e,
        "POST",
        "/admin/mcp",
        Some(&cookie),
        Some(&mcp_form(&csrf, url, "svc_1")),
        None,
    )
    .await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.body);
    // Actions switched on as a passing certification would let the administrator do.
    let mut stored = e.store.get_mcp_config(&e.tenant.id).await.unwrap().unwrap();
    let before = stored.version;
    stored.config.action_policy.enabled = true;
    stored.version += 1;
    stored.actions_version = stored.version;
    let audit = AuditEntry {
        id: e.state.ids.audit_id(),
        at: e.state.clock.now(),
        actor: "test".into(),
        action: "mcp.put".into(),
        changes: json!({}),
    };
    e.store
        .put_mcp_config(&e.tenant.id, &stored, Some(before), &audit)
        .await
        .unwrap();
    let on = e.store.get_mcp_config(&e.tenant.id).await.unwrap().unwrap();
    // The page, as the browser gets it, and its form posted back with one consultation
    // less: every field as the page filled it in.
    let page = send(&e, "GET", "/admin/mcp", Some(&cookie), None, None).await;
    let value_of = |name: &str| -> Option<String> {
        let tag = page
            .body
            .split('<')
            .find(|t| t.starts_with("input") && t.contains(&format!("name=\"{name}\"")))?;
        let value = tag.split("value=\"").nth(1)?.split('"').next()?.to_owned();
        (name != "enabled" || tag.contains("checked")).then_some(value)
    };
    let mut form = format!(
        "csrf={}&serverUrl={}&audience={}&serviceToken=&allowedToolsText=get_user_cars",
        enc(&csrf),
        enc(&value_of("serverUrl").unwrap()),
        enc(&value_of("audience").unwrap_or_default()),
    );
    form.push_str(&format!(
        "&operations={}",
        enc(&value_of("operations").unwrap())
    ));
    if let Some(v) = value_of("enabled") {
        form.push_str(&format!("&enabled={}", enc(&v)));
    }
    let edited = send(&e, "POST", "/admin/mcp", Some(&cookie), Some(&form), None).await;
    assert_eq!(edited.status, StatusCode::SEE_OTHER, "{}", edited.body);
    let after = e.store.get_mcp_config(&e.tenant.id).await.unwrap().unwrap();
    assert_eq!(
        after.config.allowed_tools.len(),
        1,
        "the consultation edit was saved"
    );
    assert!(after.config.action_policy.enabled, "actions stay on");
    assert_eq!(
        after.config.action_policy.operations,
        on.config.action_policy.operations
    );
    assert_eq!(
        after.actions_version, on.actions_version,
        "C-8: nothing pending is voided"
    );
}

/// The texts of a page's refusals: every `p.error` element's text.
fn refusals(body: &str) -> Vec<String> {
    body.split("<p class=\"error\"")
        .skip(1)
        .filter_map(|rest| {
            let text = rest.split_once('>')?.1.split_once("</p>")?.0;
            Some(text.trim().to_owned()).filter(|t| !t.is_empty())
        })
        .collect()
}

/// Issue 50: every form of the panel, posted with bad input, answers with a visible
/// refusal under its field (or at the top) in the administrator's language: the same
/// bad input in Portuguese reads differently from English, and English words of the
/// rules' texts do not leak into the Portuguese one.
#[tokio::test]
async fn every_form_refuses_bad_input_with_a_message_in_the_administrators_language() {
    let e = env(false, "Refusals").await;
    let (cookie, csrf) = sign_in(&e).await;
    let url = "https://mcp.example.com/mcp";
    let saved = send(
        &e,
        "POST",
        "/admin/mcp",
        Some(&cookie),
        Some(&mcp_form(&csrf, url, "svc_secret_1")),
        None,
    )
    .await;
    assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.body);
    let c = enc(&csrf);
    let tools = |list: &str| {
        mcp_form(&csrf, url, "").replace(
            "allowedToolsText=get_user_cars%0Aget_user_sessions",
            &format!("allowedToolsText={list}"),
        )
    };
    let forms: Vec<(&str, String, String)> = vec![
        (
            "a wrong admin key",
            "/admin/login".into(),
            "key=tsk_wrong".into(),
        ),
        (
            "a retention of 0 days",
            "/admin/settings".into(),
            format!("csrf={c}&language=en&retentionDays=0"),
        ),
        (
            "a pale accent",
            "/admin/settings".into(),
            format!("csrf={c}&language=en&accent=%23ffff00"),
        ),
        (
            "an ftp server URL",
            "/admin/mcp".into(),
            mcp_form(&csrf, "ftp://mcp.example.com/mcp", ""),
        ),
        (
            "an internal server URL",
            "/admin/mcp".into(),
            mcp_form(&csrf, "https://10.0.0.1/mcp", ""),
        ),
        (
            "a write tool as a consultation",
            "/admin/mcp".into(),
            tools("delete_upload"),
        ),
        (
            "a reserved tool name",
            "/admin/mcp".into(),
            tools("execute_action"),
        ),
        (
            "a tool the server does not list",
            "/admin/mcp".into(),
            tools("get_nothing"),
        ),
        (
            "approving a destructive tool",
            "/admin/mcp/approve".into(),
            format!("csrf={c}&tool=delete_upload"),
        ),
        (
            "an ftp widget origin",
            "/admin/widgets".into(),
            format!("csrf={c}&origins=ftp%3A%2F%2Fshop.example.com"),
        ),
        (
            "revoking an unknown credential",
            "/admin/widgets/wk_01J00000000000000000000000/revoke".into(),
            format!("csrf={c}"),
        ),
        (
            "a bad grace period",
            "/admin/widgets/wk_01J00000000000000000000000/replace".into(),
            format!("csrf={c}&graceSeconds=-5"),
        ),
        (
            "settling without an outcome",
            "/admin/actions/settle".into(),
            format!("csrf={c}&caseId=x&actionId=y"),
        ),
        (
            "settling an unknown action",
            "/admin/actions/settle".into(),
            format!("csrf={c}&outcome=failed&caseId=x&actionId=y"),
        ),
        (
            "a hold without an id",
            "/admin/holds".into(),
            format!("csrf={c}&kind=person&id="),
        ),
        (
            "an erasure without a person",
            "/admin/erasure".into(),
            format!("csrf={c}&person="),
        ),
        (
            "revoking a passkey without a person",
            "/admin/passkeys/revoke".into(),
            format!("csrf={c}&person=&id=x"),
        ),
        (
            "a certification without a test user",
            "/admin/certification".into(),
            format!("csrf={c}&testUser=&consultations=%7B%7D"),
        ),
        (
            "a certification with a bad sample",
            "/admin/certification".into(),
            format!("csrf={c}&testUser=u_test&consultations=%5B1%5D"),
        ),
    ];
    let portuguese = format!("{cookie}; countersign-panel-lang=pt-BR");
    // English words of the rules' texts that must not reach a Portuguese page.
    let english = [
        " must ", " is not ", " cannot ", "declared", "reserved", "listed", "Give the", "Choose",
    ];
    for (what, path, body) in &forms {
        let en = send(&e, "POST", path, Some(&cookie), Some(body), None).await;
        let pt = send(&e, "POST", path, Some(&portuguese), Some(body), None).await;
        assert!(
            en.status.is_client_error(),
            "{what}: {} {}",
            en.status,
            en.body
        );
        assert_eq!(en.status, pt.status, "{what}");
        let (en_says, pt_says) = (refusals(&en.body), refusals(&pt.body));
        assert!(
            !en_says.is_empty(),
            "{what}: no visible refusal in English: {}",
            en.body
        );
        assert!(
            !pt_says.is_empty(),
            "{what}: no visible refusal in Portuguese: {}",
            pt.body
        );
        assert_ne!(
            en_says, pt_says,
            "{what}: the Portuguese refusal is the English one"
        );
        for said in &pt_says {
            for word in english {
                assert!(
                    !said.contains(word),
                    "{what}: English ({word}) in the Portuguese refusal: {said}"
                );
            }
        }
    }
}

/// Issue 50: before the first save, "Load tools from your server" reads the typed
/// server's tools/list and shows the picker (a write shown and blocked, in words); nothing
/// is stored, not even the token.
#[tokio::test]
async fn the_tools_load_before_the_first_save_and_nothing_is_stored() {
    let e = env(false, "Preview").await;
    let (cookie, csrf) = sign_in(&e).await;
    let page = send(&e, "GET", "/admin/mcp", Some(&cookie), None, None).await;
    assert!(page.body.contains("id=\"previewTools\""), "{}", page.body);
    let body = format!(
        "{}&intent=load",
        mcp_form(&csrf, "https://mcp.example.com/mcp", "svc_secret_1")
    );
    let a = send(&e, "POST", "/admin/mcp", Some(&cookie), Some(&body), None).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert!(a.body.contains("id=\"tool-get_user_cars\""), "{}", a.body);
    assert!(a.body.contains("id=\"tool-delete_upload\""));
    assert!(
        a.body
            .contains("is declared destructive (destructiveHint: true): cannot be a consultation")
    );
    // The first time, nothing is chosen yet: the tools load all the same (the onboarding
    // review's "a first save needs a consultation before the tools can be loaded").
    let nothing_chosen = body.replace(
        "allowedToolsText=get_user_cars%0Aget_user_sessions",
        "allowedToolsText=",
    );
    assert_ne!(nothing_chosen, body);
    let a = send(
        &e,
        "POST",
        "/admin/mcp",
        Some(&cookie),
        Some(&nothing_chosen),
        None,
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.body);
    assert!(a.body.contains("id=\"tool-get_user_cars\""), "{}", a.body);
    assert!(
        !a.body.contains("countersign-tools-preview"),
        "the placeholder is never shown"
    );
    assert_eq!(e.store.get_mcp_config(&e.tenant.id).await.unwrap(), None);
    let name = service_token_secret_name(&e.tenant.id);
    assert!(
        e.secrets.get_current(&name).await.unwrap().is_none(),
        "no token stored"
    );
    // A bad URL is refused by the save's own rules, beside the field.
    let bad = format!(
        "{}&intent=load",
        mcp_form(&csrf, "ftp://mcp.example.com/mcp", "svc_secret_1")
    );
    let a = send(&e, "POST", "/admin/mcp", Some(&cookie), Some(&bad), None).await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST);
    assert!(a.body.contains("data-field=\"serverUrl\""), "{}", a.body);
}

/// Issue 50: a read-only tool whose own description says never to allow it can be saved
/// (the rule is the provider's annotations), but the page then says so, echoing it.
#[tokio::test]
async fn a_tool_its_server_says_never_to_allow_is_saved_with_its_warning_echoed() {
    let e = env(false, "Warned").await;
    let mut matching = countersign_testkit::tool("get_matching_sessions");
    matching.descriptor.insert(
        "description".into(),
        "Sessions of anyone on a track. Grants access to others' data: never allowlist it.".into(),
    );
    e.provider.publish(vec![
        countersign_testkit::tool("get_user_cars"),
        countersign_testkit::tool("get_user_sessions"),
        matching,
    ]);
    let (cookie, csrf) = sign_in(&e).await;
    let form = mcp_form(&csrf, "https://mcp.example.com/mcp", "svc_secret_1").replace(
        "allowedToolsText=get_user_cars%0Aget_user_sessions",
        "allowedToolsText=get_user_cars%0Aget_matching_sessions",
    );
    let a = send(&e, "POST", "/admin/mcp", Some(&cookie), Some(&form), None).await;
    assert_eq!(a.status, StatusCode::SEE_OTHER, "{}", a.body);
    let page = send(
        &e,
        "GET",
        "/admin/mcp?done=saved",
        Some(&cookie),
        None,
        None,
    )
    .await;
    assert!(
        page.body.contains("data-tool=\"get_matching_sessions\"")
            && page.body.contains("never allowlist it."),
        "{}",
        page.body
    );
    let portuguese = format!("{cookie}; countersign-panel-lang=pt-BR");
    let pt = send(
        &e,
        "GET",
        "/admin/mcp?tools=1",
        Some(&portuguese),
        None,
        None,
    )
    .await;
    assert!(pt.body.contains("diz para nunca permiti-la"), "{}", pt.body);
    assert!(!page.body.contains("data-tool=\"get_user_cars\""));
}
