//! Unsettled actions on in-memory ports: the administrator records the outcome of an
//! action the provider never settled; the person is told; the conversation is
//! unblocked; the record is audited; nothing is executed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use async_trait::async_trait;
use countersign_admin::api::AdminState;
use countersign_admin::unsettled::{self, Outcome, SETTLE_AFTER_SECONDS};
use countersign_admin::{AdminError, mcp, tenants};
use countersign_domain::config::UrlPolicy;
use countersign_domain::conversation::{Case, CaseStatus, Message, MessageKind, Role};
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::{ActionId, CaseId, OperationName, UserId};
use countersign_domain::ports::Conversations;
use countersign_domain::ports::McpSettings;
use countersign_domain::ports::ProposalLock;
use countersign_domain::ports::{ConfirmWrite, Resolver, Tenant, TransitionOutcome};
use countersign_domain::proposal::{Presentation, Proposal, ProposalState};
use countersign_domain::text::SafeText;
use countersign_domain::texts::{self, Language};
use countersign_testkit::{
    FakeSigner, MemorySecrets, MemoryStore, ScriptedProvider, SeqIds, TestClock,
};
use serde_json::json;
use std::net::IpAddr;
use std::sync::Arc;

struct Public;

#[async_trait]
impl Resolver for Public {
    async fn resolve(&self, _: &str, _: u16) -> std::io::Result<Vec<IpAddr>> {
        Ok(vec![IpAddr::from([93, 184, 216, 34])])
    }
}

struct Env {
    state: AdminState,
    store: Arc<MemoryStore>,
    clock: Arc<TestClock>,
    provider: Arc<ScriptedProvider>,
}

async fn env() -> Env {
    let clock = Arc::new(TestClock::default());
    let ids = Arc::new(SeqIds::new(clock.clone()));
    let store = Arc::new(MemoryStore::default());
    let provider = Arc::new(ScriptedProvider::with_read_only(&["get_user_cars"]));
    let state = AdminState {
        stores: countersign_admin::api::AdminStores::split(store.clone(), store.clone()),
        leases: store.clone(),
        step_up: None,
        sessions: store.clone(),
        secrets: Arc::new(MemorySecrets::default()),
        signer: Arc::new(FakeSigner::default()),
        checkpoint_signer: Arc::new(FakeSigner::default()),
        issuer: "https://support.example.com/mcp-actions".into(),
        url_policy: UrlPolicy::default(),
        resolver: Arc::new(Public),
        provider: provider.clone(),
        ids,
        clock: clock.clone(),
    };
    Env {
        state,
        store,
        clock,
        provider,
    }
}

async fn tenant(e: &Env, name: &str) -> Tenant {
    let t = tenants::register(
        &*e.store,
        &*e.state.ids,
        &*e.state.clock,
        name,
        Language::Pt,
    )
    .await
    .unwrap()
    .tenant;
    let config = json!({
        "serverUrl": "https://mcp.example.com/mcp", "serviceToken": "tok",
        "allowedTools": ["get_user_cars"],
        "actionPolicy": {"contractVersion": 1, "enabled": false, "operations": ["reassign_session_car"]}
    });
    mcp::put(&e.state, &t, &config).await.unwrap();
    t
}

/// A confirmed action in a new case of `t`, left `to` (`executing` or `unknown`).
async fn confirmed(e: &Env, t: &Tenant, action: &str, to: ProposalState) -> (CaseId, ActionId) {
    let config = e.store.get_mcp_config(&t.id).await.unwrap().unwrap();
    let now = e.state.clock.now();
    let case = Case {
        id: e.state.ids.case_id(),
        tenant: t.id.clone(),
        user: UserId::parse("driver-42").unwrap(),
        status: CaseStatus::Open,
        created_at: now,
    };
    e.store.create_case(&case, Language::Pt).await.unwrap();
    let summary = "Move session ses_a1 to car GR86.";
    let message = |kind, role, content: &str| Message {
        id: e.state.ids.message_id(),
        case: case.id.clone(),
        role,
        kind,
        content: content.into(),
        reply_to: None,
        created_at: now,
    };
    let presented = message(MessageKind::Proposal, Role::Assistant, summary);
    let action = ActionId::parse(action).unwrap();
    let p = Proposal {
        action_id: action.clone(),
        tenant: t.id.clone(),
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
    e.store
        .create_proposal(&p, std::slice::from_ref(&presented))
        .await
        .unwrap();
    let write = ConfirmWrite {
        tenant: t.id.clone(),
        case: case.id.clone(),
        action_id: action.clone(),
        presented_message_id: presented.id.clone(),
        message: message(MessageKind::Text, Role::User, "confirm"),
        attempt: "attempt-1".into(),
    };
    assert_eq!(
        e.store.confirm(&write).await.unwrap(),
        TransitionOutcome::Applied
    );
    if to == ProposalState::Unknown {
        let moved = e
            .store
            .transition(&t.id, &case.id, &action, ProposalState::Executing, to, None)
            .await
            .unwrap();
        assert_eq!(moved, TransitionOutcome::Applied);
    }
    (case.id, action)
}

/// An `unknown` action is listed; settling it records the outcome, tells the person in
/// their language, unblocks the conversation, is audited with the reason, and calls no
/// provider. It cannot be settled twice.
#[tokio::test]
async fn an_unknown_action_is_settled_once_audited_and_the_person_told() {
    let e = env().await;
    let t = tenant(&e, "A").await;
    let (case, action) = confirmed(&e, &t, "act_lost", ProposalState::Unknown).await;
    let listed = unsettled::list(&e.state, &t).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].state, listed[0].settleable),
        (ProposalState::Unknown, true)
    );
    assert_eq!(listed[0].summary, "Move session ses_a1 to car GR86.");

    let to = unsettled::settle(
        &e.state,
        &t,
        &case,
        &action,
        Outcome::Completed,
        "checked our DB: moved",
    )
    .await
    .unwrap();
    assert_eq!(to, ProposalState::Completed);
    assert_eq!(
        e.store.proposal(&t.id, &case, &action).unwrap().state,
        ProposalState::Completed
    );
    let last = e.store.all_messages(&t.id, &case).pop().unwrap();
    assert_eq!(
        last.content,
        texts::settled_by_admin_notice(Language::Pt, true)
    );
    assert_eq!(last.kind, MessageKind::Notice);
    let audit = e.store.all_audit(&t.id);
    let record = audit.iter().find(|a| a.action == "action.settle").unwrap();
    assert_eq!(record.changes["reason"], "checked our DB: moved");
    assert_eq!(record.changes["from"], "unknown");
    assert!(
        e.provider.calls().is_empty(),
        "nothing is executed or asked"
    );
    assert!(unsettled::list(&e.state, &t).await.unwrap().is_empty());
    // The conversation is unblocked: it can be closed now.
    assert_eq!(
        e.store.close_case(&t.id, &case).await.unwrap(),
        TransitionOutcome::Applied
    );

    let again = unsettled::settle(&e.state, &t, &case, &action, Outcome::Failed, "again").await;
    assert!(matches!(again, Err(AdminError::NoSuchAction)));
}

/// An `executing` action may still be running: it can be settled only 120 s after its
/// confirmation. A blank reason is refused and changes nothing.
#[tokio::test]
async fn an_executing_action_waits_and_a_reason_is_required() {
    let e = env().await;
    let t = tenant(&e, "A").await;
    let (case, action) = confirmed(&e, &t, "act_running", ProposalState::Executing).await;
    let listed = unsettled::list(&e.state, &t).await.unwrap();
    assert_eq!(
        (listed[0].state, listed[0].settleable),
        (ProposalState::Executing, false)
    );
    let early = unsettled::settle(
        &e.state,
        &t,
        &case,
        &action,
        Outcome::Failed,
        "not in our DB",
    )
    .await;
    assert!(matches!(early, Err(AdminError::StillRunning(_))));
    e.clock.advance_secs(SETTLE_AFTER_SECONDS);
    let blank = unsettled::settle(&e.state, &t, &case, &action, Outcome::Failed, "  ").await;
    assert!(matches!(blank, Err(AdminError::Invalid { .. })));
    assert_eq!(
        e.store.proposal(&t.id, &case, &action).unwrap().state,
        ProposalState::Executing
    );
    let to = unsettled::settle(
        &e.state,
        &t,
        &case,
        &action,
        Outcome::Failed,
        "not in our DB",
    )
    .await
    .unwrap();
    assert_eq!(to, ProposalState::Failed);
    let last = e.store.all_messages(&t.id, &case).pop().unwrap();
    assert_eq!(
        last.content,
        texts::settled_by_admin_notice(Language::Pt, false)
    );
}

/// Tenants are isolated: another tenant's administrator neither sees nor settles it.
#[tokio::test]
async fn another_tenants_action_is_neither_listed_nor_settled() {
    let e = env().await;
    let a = tenant(&e, "A").await;
    let b = tenant(&e, "B").await;
    let (case, action) = confirmed(&e, &a, "act_a", ProposalState::Unknown).await;
    assert!(unsettled::list(&e.state, &b).await.unwrap().is_empty());
    let other = unsettled::settle(&e.state, &b, &case, &action, Outcome::Completed, "x").await;
    assert!(matches!(other, Err(AdminError::NoSuchAction)));
    assert_eq!(
        e.store.proposal(&a.id, &case, &action).unwrap().state,
        ProposalState::Unknown
    );
}
