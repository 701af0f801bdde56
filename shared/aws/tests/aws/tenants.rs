//! The tenant store on DynamoDB.

use crate::common::env;
use countersign_aws::system::SystemClock;
use countersign_domain::config::{UrlPolicy, validate_mcp_config};
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ports::{Clock, StoredMcpConfig, Tenant, TenantStore, TransitionOutcome};
use countersign_domain::texts::Language;

#[tokio::test]
async fn tenants_are_created_listed_and_rekeyed() {
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
        store.set_admin_key_hash(&t.id, &h2).await.unwrap(),
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
        store.set_admin_key_hash(&env.tenant(), &h2).await.unwrap(),
        TransitionOutcome::Conflict { current: None }
    );
}

/// C-8: the configuration version only grows; a stale writer loses.
#[tokio::test]
async fn mcp_configuration_is_versioned() {
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
        store.put_mcp_config(&tenant, &stored, None).await.unwrap(),
        TransitionOutcome::Applied
    );
    assert_eq!(
        store.put_mcp_config(&tenant, &stored, None).await.unwrap(),
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
            .put_mcp_config(&tenant, &stored, Some(1))
            .await
            .unwrap(),
        TransitionOutcome::Applied
    );
    assert_eq!(
        store
            .put_mcp_config(&tenant, &stored, Some(1))
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
