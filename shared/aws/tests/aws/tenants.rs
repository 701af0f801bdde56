//! The tenant store on DynamoDB.

use crate::common::env;
use countersign_aws::system::{SystemClock, UlidIds};
use countersign_domain::config::{UrlPolicy, validate_mcp_config};
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ports::AuditRecords;
use countersign_domain::ports::Conversations;
use countersign_domain::ports::McpSettings;
use countersign_domain::ports::ProposalLock;
use countersign_domain::ports::Tenants;
use countersign_domain::ports::{
    AuditEntry, Clock, CreateProposalOutcome, Ids, StoredMcpConfig, Tenant, TransitionOutcome,
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
    let t = Tenant::new(
        env.tenant(),
        "TrackShare",
        Sha256Hex::digest("tsk_one"),
        Language::Pt,
        SystemClock.now(),
    );
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
        actions_version: 1,
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
        actions_version: 1,
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

/// C-8 at preparation: a proposal is stored only while the tenant's action settings are
/// the ones it was prepared with (its `actions_version` and token secret version), in the
/// same transaction; otherwise nothing is written.
#[tokio::test]
async fn c8_preparation_is_fenced_by_the_action_settings_in_force() {
    use crate::common::Env;
    let env = env().await;
    let store = env.store();
    let case = env.open_case(&store, &env.tenant()).await;
    let tenant = case.tenant.clone();
    let prepare = |n: &str, version: u64, secret: &str| {
        let (p, msgs) = env.proposal(&case, n, version);
        (Env::with_settings(p, version, secret), msgs)
    };
    // No configuration at all: refused.
    let (p, msgs) = prepare("act_cfg_0", 1, "v1");
    assert_eq!(
        store.create_proposal(&p, &msgs).await.unwrap(),
        CreateProposalOutcome::SettingsChanged
    );
    env.configure(&store, &tenant, None, (1, 1, "v1")).await;
    // A consultations-only change (version 2) keeps the action settings of version 1.
    env.configure(&store, &tenant, Some(1), (2, 1, "v1")).await;
    let (p, msgs) = prepare("act_cfg_1", 1, "v1");
    assert!(matches!(
        store.create_proposal(&p, &msgs).await.unwrap(),
        CreateProposalOutcome::Applied { .. }
    ));
    // An action-relevant change (version 3) fences proposals of version 1 …
    env.configure(&store, &tenant, Some(2), (3, 3, "v1")).await;
    let (p, msgs) = prepare("act_cfg_2", 1, "v1");
    assert_eq!(
        store.create_proposal(&p, &msgs).await.unwrap(),
        CreateProposalOutcome::SettingsChanged
    );
    let view = store.load(&tenant, &case.id).await.unwrap().unwrap();
    assert_eq!(
        view.active.unwrap().action_id.as_str(),
        "act_cfg_1",
        "nothing written"
    );
    // … and so does another token version with the same number (a connector removed
    // and saved again).
    let (p, msgs) = prepare("act_cfg_3", 3, "v-other");
    assert_eq!(
        store.create_proposal(&p, &msgs).await.unwrap(),
        CreateProposalOutcome::SettingsChanged
    );
    let (p, msgs) = prepare("act_cfg_4", 3, "v1");
    assert!(matches!(
        store.create_proposal(&p, &msgs).await.unwrap(),
        CreateProposalOutcome::Applied { .. }
    ));
}
