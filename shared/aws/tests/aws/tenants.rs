//! The tenant store on DynamoDB.

use crate::common::env;
use countersign_aws::system::{SystemClock, UlidIds};
use countersign_domain::config::{UrlPolicy, validate_mcp_config};
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ports::{
    AuditEntry, Clock, ConversationStore, Ids, StoredMcpConfig, Tenant, TenantStore,
    TransitionOutcome,
};
use countersign_domain::texts::Language;

fn audit(ids: &UlidIds, action: &str) -> AuditEntry {
    AuditEntry {
        id: ids.audit_id(),
        at: SystemClock.now(),
        actor: "operator".into(),
        action: action.into(),
        changes: serde_json::json!({"n": action}),
    }
}

#[tokio::test]
async fn tenants_are_created_listed_and_rekeyed() {
    let ids = UlidIds::default();
    let env = env().await;
    let store = env.store();
    let t = Tenant {
        id: env.tenant(),
        name: "TrackShare".into(),
        admin_key_hash: Sha256Hex::digest("tsk_one"),
        language: Language::Pt,
        created_at: SystemClock.now(),
    };
    store.create_tenant(&t).await.unwrap();
    assert!(
        store.create_tenant(&t).await.is_err(),
        "no duplicate registration"
    );
    assert_eq!(store.get_tenant(&t.id).await.unwrap(), Some(t.clone()));
    assert_eq!(store.list_tenants().await.unwrap(), vec![t.clone()]);
    let h2 = Sha256Hex::digest("tsk_two");
    assert_eq!(
        store
            .set_admin_key_hash(&t.id, &h2, &audit(&ids, "rotate"))
            .await
            .unwrap(),
        TransitionOutcome::Applied
    );
    assert_eq!(
        store
            .get_tenant(&t.id)
            .await
            .unwrap()
            .unwrap()
            .admin_key_hash,
        h2
    );
    assert_eq!(
        store
            .set_admin_key_hash(&env.tenant(), &h2, &audit(&ids, "rotate"))
            .await
            .unwrap(),
        TransitionOutcome::Conflict { current: None }
    );
}

/// C-8: the configuration version only grows; a stale writer loses.
#[tokio::test]
async fn mcp_configuration_is_versioned() {
    let ids = UlidIds::default();
    let env = env().await;
    let store = env.store();
    let tenant = env.tenant();
    assert_eq!(store.get_mcp_config(&tenant).await.unwrap(), None);
    let config = validate_mcp_config(
        &serde_json::json!({
            "serverUrl": "https://mcp.trackshare.example.com/mcp",
            "serviceToken": "svc_token_123",
            "allowedTools": ["get_user_uploads"],
            "actionPolicy": {"contractVersion": 1, "enabled": true, "operations": ["reassign_session_car"]}
        }),
        UrlPolicy::default(),
    )
    .unwrap();
    let mut stored = StoredMcpConfig {
        config,
        version: 1,
        secret_version: "v1".into(),
    };
    assert_eq!(
        store
            .put_mcp_config(&tenant, &stored, None, &audit(&ids, "put"))
            .await
            .unwrap(),
        TransitionOutcome::Applied
    );
    assert_eq!(
        store
            .put_mcp_config(&tenant, &stored, None, &audit(&ids, "put"))
            .await
            .unwrap(),
        TransitionOutcome::Conflict { current: None }
    );
    let read = store.get_mcp_config(&tenant).await.unwrap().unwrap();
    assert_eq!(read.config.allowed_tools, stored.config.allowed_tools);
    assert_eq!(read.config.action_policy, stored.config.action_policy);
    assert_eq!(
        read.config.service_token.expose(),
        "",
        "the token is never stored here"
    );
    stored.version = 2;
    assert_eq!(
        store
            .put_mcp_config(&tenant, &stored, Some(1), &audit(&ids, "put"))
            .await
            .unwrap(),
        TransitionOutcome::Applied
    );
    assert_eq!(
        store
            .put_mcp_config(&tenant, &stored, Some(1), &audit(&ids, "put"))
            .await
            .unwrap(),
        TransitionOutcome::Conflict { current: None }
    );
    assert_eq!(
        store
            .get_mcp_config(&tenant)
            .await
            .unwrap()
            .unwrap()
            .version,
        2
    );
}

/// Issue 5 (audit): each change writes its record in the same transaction (a lost race
/// writes none); records list newest first, in pages, to the last one exactly.
#[tokio::test]
async fn audit_records_are_atomic_and_paginated_newest_first() {
    let ids = UlidIds::default();
    let env = env().await;
    let store = env.store();
    let tenant = env.tenant();
    let config = validate_mcp_config(
        &serde_json::json!({
            "serverUrl": "https://mcp.trackshare.example.com/mcp",
            "serviceToken": "svc_token_123",
            "allowedTools": ["get_user_uploads"],
        }),
        UrlPolicy::default(),
    )
    .unwrap();
    let mut stored = StoredMcpConfig {
        config,
        version: 1,
        secret_version: "v1".into(),
    };
    let mut written = Vec::new();
    for v in 1..=7u64 {
        stored.version = v;
        let a = audit(&ids, &format!("put{v}"));
        let expected = (v > 1).then(|| v - 1);
        assert_eq!(
            store
                .put_mcp_config(&tenant, &stored, expected, &a)
                .await
                .unwrap(),
            TransitionOutcome::Applied
        );
        written.push(a);
    }
    // A stale writer loses, and its audit record is not written either.
    let lost = audit(&ids, "stale");
    assert_eq!(
        store
            .put_mcp_config(&tenant, &stored, Some(1), &lost)
            .await
            .unwrap(),
        TransitionOutcome::Conflict { current: None }
    );
    let mut seen = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let page = store.list_audit(&tenant, cursor.as_ref(), 3).await.unwrap();
        assert!(page.items.len() <= 3);
        pages += 1;
        seen.extend(page.items);
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(
        pages, 3,
        "7 records in pages of 3: 3 + 3 + 1, no empty page"
    );
    written.reverse();
    assert_eq!(
        seen, written,
        "newest first, each once, none from the lost race"
    );
    // Another tenant sees none of them.
    let other = store.list_audit(&env.tenant(), None, 100).await.unwrap();
    assert!(other.items.is_empty() && other.next.is_none());
}

/// C-8 at the moment of confirmation: the confirm transaction also checks that the
/// tenant's configuration still has the version the proposal was prepared with; a changed
/// (or removed) configuration refuses the confirmation and writes nothing.
#[tokio::test]
async fn c8_confirm_checks_the_configuration_version_in_the_same_transaction() {
    let ids = UlidIds::default();
    let env = env().await;
    let store = env.store();
    let case = env.open_case(&store, &env.tenant()).await;
    let tenant = case.tenant.clone();
    let config = validate_mcp_config(
        &serde_json::json!({
            "serverUrl": "https://mcp.trackshare.example.com/mcp",
            "serviceToken": "svc_token_123",
            "allowedTools": ["get_user_uploads"],
        }),
        UrlPolicy::default(),
    )
    .unwrap();
    let mut stored = StoredMcpConfig {
        config,
        version: 1,
        secret_version: "v1".into(),
    };
    store
        .put_mcp_config(&tenant, &stored, None, &audit(&ids, "put"))
        .await
        .unwrap();
    let (p, msgs) = env.proposal(&case, "act_cfg_1", 1);
    store.create_proposal(&p, &msgs).await.unwrap();
    // The configuration moves to version 2 (without the best-effort invalidation).
    stored.version = 2;
    store
        .put_mcp_config(&tenant, &stored, Some(1), &audit(&ids, "put"))
        .await
        .unwrap();
    let mut w = env.confirm_write(&p, &p.presented.message_id);
    w.config = Some((1, "v1".into()));
    assert_eq!(
        store.confirm(&w).await.unwrap(),
        TransitionOutcome::Conflict { current: None }
    );
    let view = store.load(&tenant, &case.id).await.unwrap().unwrap();
    assert_eq!(
        view.active.unwrap().state,
        countersign_domain::proposal::ProposalState::PendingConfirmation,
        "nothing written"
    );
    // The same version number with another secret version (a configuration removed and
    // saved again) is another configuration too.
    w.config = Some((2, "v-other".into()));
    assert_eq!(
        store.confirm(&w).await.unwrap(),
        TransitionOutcome::Conflict { current: None }
    );
    // With the configuration in force, the same confirmation goes through.
    w.config = Some((2, "v1".into()));
    assert_eq!(store.confirm(&w).await.unwrap(), TransitionOutcome::Applied);
}
