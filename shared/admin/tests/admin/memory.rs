//! The admin API on in-memory ports (no emulator): answers that carry a secret are never
//! cached; configuration saves write only what changed and cancel only what they
//! invalidate (C-7, C-8).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use async_trait::async_trait;
use axum::body::Body;
use countersign_admin::api::{AdminState, router};
use countersign_admin::tenants;
use countersign_domain::config::UrlPolicy;
use countersign_domain::ports::Conversations;
use countersign_domain::ports::McpSettings;
use countersign_domain::ports::ProposalLock;
use countersign_domain::ports::Resolver;
use countersign_domain::texts::Language;
use countersign_testkit::{FakeSigner, MemorySecrets, MemoryStore, SeqIds, TestClock};
use http::{Request, StatusCode, header};
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

#[tokio::test]
async fn c9_a_new_widget_secret_is_never_cached_and_a_listing_carries_none() {
    let clock = Arc::new(TestClock::default());
    let ids = Arc::new(SeqIds::new(clock.clone()));
    let store = Arc::new(MemoryStore::default());
    let registered = tenants::register(&*store, &*ids, &*clock, "A", Language::En)
        .await
        .unwrap();
    let app = router(AdminState {
        stores: countersign_admin::api::AdminStores::split(store.clone(), store.clone()),
        leases: store.clone(),
        step_up: None,
        sessions: store,
        secrets: Arc::new(MemorySecrets::default()),
        signer: Arc::new(FakeSigner::default()),
        checkpoint_signer: Arc::new(FakeSigner::default()),
        issuer: "https://support.example.com/mcp-actions".into(),
        url_policy: UrlPolicy::default(),
        resolver: Arc::new(Public),
        provider: Arc::new(countersign_testkit::ScriptedProvider::default()),
        ids,
        clock,
    });
    let uri = format!(
        "/api/admin/tenants/{}/widget-credentials",
        registered.tenant.id
    );
    let key = format!("Bearer {}", registered.admin_key.expose());
    let request = |method: &str| {
        Request::builder()
            .method(method)
            .uri(&uri)
            .header(header::AUTHORIZATION, &key)
            .body(Body::empty())
            .unwrap()
    };
    let created = app.clone().oneshot(request("POST")).await.unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    assert_eq!(created.headers()[header::CACHE_CONTROL], "no-store");
    let bytes = axum::body::to_bytes(created.into_body(), 1 << 16)
        .await
        .unwrap();
    let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let secret = body["secret"].as_str().unwrap().to_owned();
    let listed = app.oneshot(request("GET")).await.unwrap();
    assert_eq!(listed.status(), StatusCode::OK);
    let bytes = axum::body::to_bytes(listed.into_body(), 1 << 16)
        .await
        .unwrap();
    assert!(!String::from_utf8_lossy(&bytes).contains(&secret));
}

/// A state on in-memory ports, and a registered tenant.
async fn admin() -> (
    AdminState,
    Arc<MemoryStore>,
    Arc<MemorySecrets>,
    countersign_domain::ports::Tenant,
) {
    let clock = Arc::new(TestClock::default());
    let ids = Arc::new(SeqIds::new(clock.clone()));
    let store = Arc::new(MemoryStore::default());
    let secrets = Arc::new(MemorySecrets::default());
    let registered = tenants::register(&*store, &*ids, &*clock, "A", Language::En)
        .await
        .unwrap();
    let state = AdminState {
        stores: countersign_admin::api::AdminStores::split(store.clone(), store.clone()),
        leases: store.clone(),
        step_up: None,
        sessions: store.clone(),
        secrets: secrets.clone(),
        signer: Arc::new(FakeSigner::default()),
        checkpoint_signer: Arc::new(FakeSigner::default()),
        issuer: "https://support.example.com/mcp-actions".into(),
        url_policy: UrlPolicy::default(),
        resolver: Arc::new(Public),
        provider: Arc::new(countersign_testkit::ScriptedProvider::with_read_only(&[
            "a", "b",
        ])),
        ids,
        clock,
    };
    (state, store, secrets, registered.tenant)
}

/// A pending proposal in a new case of `tenant`, prepared under the settings in force.
async fn pending_proposal(
    state: &AdminState,
    store: &MemoryStore,
    tenant: &countersign_domain::ports::Tenant,
) -> (
    countersign_domain::ids::CaseId,
    countersign_domain::ids::ActionId,
) {
    use countersign_domain::conversation::{Case, CaseStatus, Message, MessageKind, Role};
    use countersign_domain::hash::Sha256Hex;
    use countersign_domain::ids::{ActionId, OperationName, UserId};
    use countersign_domain::ports::CreateProposalOutcome;
    use countersign_domain::proposal::{Presentation, Proposal, ProposalState};
    use countersign_domain::text::SafeText;
    let config = store.get_mcp_config(&tenant.id).await.unwrap().unwrap();
    let now = state.clock.now();
    let case = Case {
        id: state.ids.case_id(),
        tenant: tenant.id.clone(),
        user: UserId::parse("driver-42").unwrap(),
        status: CaseStatus::Open,
        created_at: now,
    };
    store.create_case(&case, Language::En).await.unwrap();
    let summary = "Move session ses_a1 to car GR86.";
    let presented = Message {
        id: state.ids.message_id(),
        case: case.id.clone(),
        role: Role::Assistant,
        kind: MessageKind::Proposal,
        content: summary.into(),
        reply_to: None,
        created_at: now,
    };
    let action = ActionId::parse("act_c8_admin").unwrap();
    let p = Proposal {
        action_id: action.clone(),
        tenant: tenant.id.clone(),
        user: case.user.clone(),
        case: case.id.clone(),
        operation: OperationName::parse("reassign_session_car").unwrap(),
        summary: SafeText::check(summary).unwrap(),
        summary_hash: Sha256Hex::digest(summary),
        arguments_hash: Sha256Hex::digest("{}"),
        expires_at: now.plus_seconds(300),
        prepared_at: now,
        state: ProposalState::PendingConfirmation,
        presented: Presentation {
            replaced: None,
            first_served_at: None,
            message_id: presented.id.clone(),
        },
        confirmation_message_id: None,
        confirm_attempt: None,
        config_version: config.actions_version,
        secret_version: Some(config.secret_version.clone()),
        server_url: Some(config.config.server_url.as_str().to_owned()),
        audience: None,
        needs_passkey: false,
        prepared_outside: false,
    };
    let created = store.create_proposal(&p, &[presented]).await.unwrap();
    assert!(matches!(created, CreateProposalOutcome::Applied { .. }));
    (case.id, action)
}

/// C-7, C-8: a save equal to what is stored writes nothing (no configuration version, no
/// token version, no audit record); a consultations-only change is a new version that
/// keeps pending proposals; a change of URL, token, audience or policy cancels them, with
/// a notice in their conversation.
#[tokio::test]
async fn c8_only_action_relevant_saves_invalidate_and_an_unchanged_save_writes_nothing() {
    use countersign_domain::ports::SecretStore;
    use countersign_domain::proposal::ProposalState;
    let (state, store, secrets, tenant) = admin().await;
    let body = |url: &str, token: &str, tools: &[&str]| {
        serde_json::json!({
            "serverUrl": url,
            "serviceToken": token,
            "allowedTools": tools,
            "actionPolicy": {"contractVersion": 1, "enabled": false,
                             "operations": ["reassign_session_car"]},
        })
    };
    let url = "https://mcp.trackshare.example.com/mcp";
    let saved = countersign_admin::mcp::put(&state, &tenant, &body(url, "tok-1", &["a"]))
        .await
        .unwrap();
    assert_eq!(saved.version, Some(1));
    let (case, action) = pending_proposal(&state, &store, &tenant).await;
    let state_of = || store.proposal(&tenant.id, &case, &action).unwrap().state;
    let audits = store.all_audit(&tenant.id).len();
    let token_name = countersign_domain::config::service_token_secret_name(&tenant.id);
    let token_version = || {
        let secrets = secrets.clone();
        let name = token_name.clone();
        async move { secrets.get_current(&name).await.unwrap().unwrap().1 }
    };

    // Unchanged: nothing written.
    let again = countersign_admin::mcp::put(&state, &tenant, &body(url, "tok-1", &["a"]))
        .await
        .unwrap();
    assert_eq!(again.version, Some(1));
    assert_eq!(store.all_audit(&tenant.id).len(), audits);
    assert_eq!(token_version().await, "v1");
    assert_eq!(state_of(), ProposalState::PendingConfirmation);

    // Consultations only: a new version; the proposal stays confirmable.
    let tools = countersign_admin::mcp::put(&state, &tenant, &body(url, "tok-1", &["a", "b"]))
        .await
        .unwrap();
    assert_eq!(tools.version, Some(2));
    assert_eq!(token_version().await, "v1", "the token was not rewritten");
    assert_eq!(state_of(), ProposalState::PendingConfirmation);
    let stored = store.get_mcp_config(&tenant.id).await.unwrap().unwrap();
    assert_eq!((stored.version, stored.actions_version), (2, 1));

    // The token changes: the proposal is cancelled and the person told.
    countersign_admin::mcp::put(&state, &tenant, &body(url, "tok-2", &["a", "b"]))
        .await
        .unwrap();
    assert_eq!(token_version().await, "v2");
    assert_eq!(state_of(), ProposalState::Cancelled);
    let last = store.all_messages(&tenant.id, &case).pop().unwrap();
    assert_eq!(
        last.content,
        countersign_domain::texts::invalidated_notice(Language::En)
    );
}

/// C-8: when the sweep fails after the save committed, the answer says so (503
/// `SAVED_UNFINISHED`), and saving the same body again finishes it without writing a new
/// version.
#[tokio::test]
async fn c8_an_unfinished_sweep_is_reported_and_finished_by_saving_again() {
    use countersign_domain::proposal::ProposalState;
    use countersign_testkit::Fault;
    let (state, store, _secrets, tenant) = admin().await;
    let body = |url: &str| serde_json::json!({"serverUrl": url, "serviceToken": "tok-1", "allowedTools": ["a"]});
    countersign_admin::mcp::put(&state, &tenant, &body("https://a.example.com/mcp"))
        .await
        .unwrap();
    let (case, action) = pending_proposal(&state, &store, &tenant).await;
    store.faults.once("invalidate_pending", Fault::Unavailable);
    let new = body("https://b.example.com/mcp");
    let err = countersign_admin::mcp::put(&state, &tenant, &new)
        .await
        .unwrap_err();
    let api: countersign_http::ApiError = err.into();
    assert_eq!(api.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(api.code(), "SAVED_UNFINISHED");
    let stored = store.get_mcp_config(&tenant.id).await.unwrap().unwrap();
    assert_eq!(stored.version, 2, "the change itself is saved");
    assert_eq!(
        store.proposal(&tenant.id, &case, &action).unwrap().state,
        ProposalState::PendingConfirmation
    );
    countersign_admin::mcp::put(&state, &tenant, &new)
        .await
        .unwrap();
    assert_eq!(
        store
            .get_mcp_config(&tenant.id)
            .await
            .unwrap()
            .unwrap()
            .version,
        2
    );
    assert_eq!(
        store.proposal(&tenant.id, &case, &action).unwrap().state,
        ProposalState::Cancelled
    );
}

/// U-3, decision 0047: a replacement keeps the old credential working for the grace period
/// the administrator chose (0 to a week), once; when it ends the old credential is refused
/// and, at the next listing, removed with its secret. A second replacement of the same
/// credential, an unknown one, or a grace period out of bounds is refused and creates none.
#[tokio::test]
async fn u3_a_replaced_credential_keeps_working_for_its_grace_period_then_goes() {
    use countersign_admin::AdminError;
    use countersign_admin::widgets;
    use countersign_domain::config::widget_secret_name;
    use countersign_domain::ports::Clock;
    use countersign_domain::ports::{SecretStore, WidgetKeys};
    let (mut state, store, secrets, tenant) = admin().await;
    let clock = Arc::new(TestClock::default());
    state.clock = clock.clone();
    let origins = vec!["https://shop.example.com".to_owned()];
    let (old, _) = widgets::create(&state, &tenant, &origins).await.unwrap();
    for bad in [-1, widgets::MAX_GRACE_SECONDS + 1] {
        let refused = widgets::replace(&state, &tenant, old.id.as_str(), bad).await;
        assert!(
            matches!(refused, Err(AdminError::Invalid { ref field, .. }) if field == "graceSeconds")
        );
    }
    let unknown = widgets::replace(&state, &tenant, "wk_01JDZ6Y5X1QW9T3V7N2K4M8P0R", 60).await;
    assert!(matches!(unknown, Err(AdminError::NoSuchCredential)));
    assert_eq!(
        widgets::list(&state, &tenant).await.unwrap().len(),
        1,
        "nothing created"
    );

    let (new, _) = widgets::replace(&state, &tenant, old.id.as_str(), 3600)
        .await
        .unwrap();
    assert_eq!(new.allowed_origins, origins);
    let stored = store
        .get_widget_key(&tenant.id, &old.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.retires_at, Some(clock.now().plus_seconds(3600)));
    let again = widgets::replace(&state, &tenant, old.id.as_str(), 3600).await;
    assert!(matches!(again, Err(AdminError::AlreadyReplaced(_))));
    // During the grace period both are listed and both secrets are kept.
    clock.advance_secs(3599);
    assert_eq!(widgets::list(&state, &tenant).await.unwrap().len(), 2);
    let old_secret = widget_secret_name(&tenant.id, &old.id);
    assert!(secrets.get_current(&old_secret).await.unwrap().is_some());
    // From its end on, the next listing removes it, secret included.
    clock.advance_secs(1);
    let listed = widgets::list(&state, &tenant).await.unwrap();
    assert_eq!(
        listed.iter().map(|k| &k.id).collect::<Vec<_>>(),
        vec![&new.id]
    );
    assert!(
        store
            .get_widget_key(&tenant.id, &old.id)
            .await
            .unwrap()
            .is_none()
    );
    assert!(secrets.get_current(&old_secret).await.unwrap().is_none());
    // A grace period of 0 revokes at once.
    let (newest, _) = widgets::replace(&state, &tenant, new.id.as_str(), 0)
        .await
        .unwrap();
    let listed = widgets::list(&state, &tenant).await.unwrap();
    assert_eq!(
        listed.iter().map(|k| &k.id).collect::<Vec<_>>(),
        vec![&newest.id]
    );
}

/// S-4, X-3, R-1, issue 50: one save of the tenant's settings writes one audit record per
/// setting it changes, each with both values, and the tenant as saved; saving the same
/// settings again writes nothing (the panel's form and the API's body both go through it).
#[tokio::test]
async fn s4_x3_r1_a_settings_save_audits_each_changed_setting_once_and_the_same_settings_not_at_all()
 {
    use countersign_admin::tenants::{SettingsChange, save_settings};
    use countersign_domain::ports::{AuditRecords, Tenants};
    use countersign_domain::retention::RetentionDays;
    let (state, store, _, tenant) = admin().await;
    let actions = |page: &countersign_domain::ports::AuditPage| -> Vec<String> {
        let mut a: Vec<String> = page.items.iter().map(|e| e.action.clone()).collect();
        a.retain(|a| a.starts_with("tenant."));
        a.sort();
        a
    };
    let change = SettingsChange {
        language: Some(Language::Pt),
        sign_in_url: Some(Some("https://example.com/sign-in".into())),
        retention_days: Some(RetentionDays::new(30).unwrap()),
        appearance: Some(tenant.appearance.clone()),
    };
    let saved = save_settings(&state, &tenant, change.clone())
        .await
        .unwrap();
    assert_eq!(saved.language, Language::Pt);
    assert_eq!(
        saved.sign_in_url.as_deref(),
        Some("https://example.com/sign-in")
    );
    assert_eq!(saved.retention_days.map(RetentionDays::days), Some(30));
    let stored = store.get_tenant(&tenant.id).await.unwrap().unwrap();
    assert_eq!(
        (stored.language, stored.sign_in_url, stored.retention_days),
        (
            saved.language,
            saved.sign_in_url.clone(),
            saved.retention_days
        )
    );
    let page = store.list_audit(&tenant.id, None, 50).await.unwrap();
    // The appearance did not change: no record for it.
    assert_eq!(
        actions(&page),
        [
            "tenant.language",
            "tenant.retention_days",
            "tenant.sign_in_url"
        ]
    );
    let language = page.items.iter().find(|e| e.action == "tenant.language");
    assert_eq!(
        language.unwrap().changes,
        serde_json::json!({"language": {"from": "en", "to": "pt-BR"}})
    );
    let retention = page
        .items
        .iter()
        .find(|e| e.action == "tenant.retention_days");
    assert_eq!(
        retention.unwrap().changes,
        serde_json::json!({"retentionDays": {"from": null, "to": 30}})
    );

    let again = save_settings(&state, &saved, change).await.unwrap();
    assert_eq!(again, saved);
    let page = store.list_audit(&tenant.id, None, 50).await.unwrap();
    assert_eq!(
        actions(&page).len(),
        3,
        "the same settings again wrote a record"
    );
}
