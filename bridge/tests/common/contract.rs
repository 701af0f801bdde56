//! B-4: the contract every store of the bridge keeps, run on SQLite (`tests/bridge`) and
//! on DynamoDB (`tests/dynamo.rs`: the emulator, and the proxy with real DynamoDB's rules).

use countersign_bridge::store::{Action, Claim, Store};
use countersign_provider_kit::ActionStatus;
use serde_json::Map;

pub(crate) fn action(id: &str, conversation: &str, expires_at: i64) -> Action {
    Action {
        action_id: id.into(),
        tenant_id: "ten_1".into(),
        person: "alice".into(),
        conversation_id: conversation.into(),
        operation: "cancel_pending_order".into(),
        arguments: Map::new(),
        arguments_hash: "a".repeat(64),
        summary: "Cancel.".into(),
        summary_hash: "b".repeat(64),
        language: "en".into(),
        config_digest: "c".repeat(64),
        status: ActionStatus::PendingConfirmation,
        message: None,
        prepared_at: 100,
        expires_at,
    }
}

/// The contract every store keeps (run on each implementation).
pub(crate) async fn contract(store: &dyn Store) {
    // One pending per conversation: a new preparation cancels the previous one.
    assert_eq!(store.prepare(&action("a1", "c1", 400)).await.unwrap(), None);
    assert_eq!(
        store.prepare(&action("a2", "c1", 400)).await.unwrap(),
        Some("a1".into())
    );
    assert_eq!(store.prepare(&action("b1", "c2", 400)).await.unwrap(), None);
    assert_eq!(
        store.get("ten_1", "a1").await.unwrap().unwrap().status,
        ActionStatus::Cancelled
    );
    assert!(
        store.get("ten_2", "a2").await.unwrap().is_none(),
        "scoped by tenant"
    );
    // A cancelled action cannot be claimed.
    assert!(matches!(
        store.claim("ten_1", "a1", "j0", 500, 200).await.unwrap(),
        Claim::NotPending(_)
    ));
    // Claim: once; the proof once.
    assert!(
        matches!(store.claim("ten_1", "a2", "j1", 500, 200).await.unwrap(), Claim::Claimed(a) if a.status == ActionStatus::Executing)
    );
    assert!(matches!(
        store.claim("ten_1", "a2", "j2", 500, 200).await.unwrap(),
        Claim::NotPending(_)
    ));
    assert!(matches!(
        store.claim("ten_1", "b1", "j1", 500, 200).await.unwrap(),
        Claim::Replayed
    ));
    assert_eq!(
        store.get("ten_1", "b1").await.unwrap().unwrap().status,
        ActionStatus::PendingConfirmation
    );
    assert!(matches!(
        store.claim("ten_1", "zz", "j3", 500, 200).await.unwrap(),
        Claim::Missing
    ));
    // Expired before its proof: recorded as expired.
    assert!(matches!(
        store.claim("ten_1", "b1", "j4", 500, 400).await.unwrap(),
        Claim::Expired(_)
    ));
    // In doubt, then settled; finish only from executing.
    store.mark_in_doubt("ten_1", "a2", "lost").await.unwrap();
    let open = store.in_doubt().await.unwrap();
    assert_eq!(
        open.iter()
            .map(|a| a.action_id.as_str())
            .collect::<Vec<_>>(),
        ["a2"]
    );
    assert_eq!(open[0].message.as_deref(), Some("lost"));
    assert!(
        store
            .finish("ten_1", "a2", ActionStatus::Completed, None)
            .await
            .unwrap()
    );
    assert!(
        !store
            .finish("ten_1", "a2", ActionStatus::Failed, None)
            .await
            .unwrap()
    );
    assert_eq!(
        store.get("ten_1", "a2").await.unwrap().unwrap().status,
        ActionStatus::Completed
    );
}
