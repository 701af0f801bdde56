//! Decision 0028: the tenant's index of unsettled actions on the emulator. The confirm
//! write adds the action's entry; a move to `unknown` keeps it; the transition that
//! settles the action removes it in the same write; the administrator's settlement also
//! writes its audit record there.

use crate::common::{Env, env};
use countersign_domain::conversation::{MessageKind, Role};
use countersign_domain::ports::{
    AuditEntry, ConversationStore, CreateProposalOutcome, Ids as _, SettleByAdmin, TenantStore,
    TransitionOutcome,
};
use countersign_domain::proposal::{Proposal, ProposalState};
use countersign_domain::time::Timestamp;
use serde_json::json;

async fn confirmed(
    env: &Env,
    store: &countersign_aws::dynamo::DynamoStore,
    case: &countersign_domain::conversation::Case,
    action: &str,
) -> Proposal {
    let (p, m) = env.proposal(case, action, 1);
    let p = Env::with_settings(p, 1, "v1");
    let created = store.create_proposal(&p, &m).await.unwrap();
    assert!(
        matches!(created, CreateProposalOutcome::Applied { .. }),
        "{created:?}"
    );
    let w = env.confirm_write(&p, &p.presented.message_id);
    assert_eq!(store.confirm(&w).await.unwrap(), TransitionOutcome::Applied);
    p
}

#[tokio::test]
async fn the_unsettled_index_follows_each_action_to_its_end() {
    let env = env().await;
    let store = env.fresh_store().await;
    let tenant = env.tenant();
    env.configure(&store, &tenant, None, (1, 1, "v1")).await;
    let case = env.open_case(&store, &tenant).await;
    assert!(store.list_unsettled(&tenant).await.unwrap().is_empty());
    let p = confirmed(&env, &store, &case, "act_idx_1").await;
    let listed = store.list_unsettled(&tenant).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (&listed[0].case, &listed[0].action_id),
        (&case.id, &p.action_id)
    );
    let step = |from, to| store.transition(&tenant, &case.id, &p.action_id, from, to, None);
    assert_eq!(
        step(ProposalState::Executing, ProposalState::Unknown)
            .await
            .unwrap(),
        TransitionOutcome::Applied
    );
    assert_eq!(
        store.list_unsettled(&tenant).await.unwrap().len(),
        1,
        "unknown is still unsettled"
    );
    assert_eq!(
        step(ProposalState::Unknown, ProposalState::Completed)
            .await
            .unwrap(),
        TransitionOutcome::Applied
    );
    assert!(
        store.list_unsettled(&tenant).await.unwrap().is_empty(),
        "settled: the entry is gone"
    );

    // The administrator's settlement: proposal, notice, index and audit in one write.
    let case2 = env.open_case(&store, &tenant).await;
    let p2 = confirmed(&env, &store, &case2, "act_idx_2").await;
    let notice = env.message(
        &case2.id,
        env.ids.message_id(),
        Role::Assistant,
        MessageKind::Notice,
        "checked",
        None,
    );
    let audit = AuditEntry {
        id: env.ids.audit_id(),
        at: Timestamp::from_unix_seconds(1_795_986_900).unwrap(),
        actor: "adminKey:test".into(),
        action: "action.settle".into(),
        changes: json!({"reason": "checked"}),
    };
    let settle = SettleByAdmin {
        tenant: &tenant,
        case: &case2.id,
        action_id: &p2.action_id,
        from: ProposalState::Executing,
        to: ProposalState::Failed,
        notice: &notice,
        audit: &audit,
    };
    assert_eq!(
        store.settle_by_admin(&settle).await.unwrap(),
        TransitionOutcome::Applied
    );
    assert!(store.list_unsettled(&tenant).await.unwrap().is_empty());
    let page = store.list_audit(&tenant, None, 10).await.unwrap();
    assert_eq!(page.items[0].action, "action.settle");
    let records = page.items.len();
    // Only once: the second settlement finds the proposal failed, and writes nothing.
    let again = store.settle_by_admin(&settle).await.unwrap();
    assert!(
        matches!(
            again,
            TransitionOutcome::Conflict {
                current: Some(ProposalState::Failed)
            }
        ),
        "{again:?}"
    );
    assert_eq!(
        store
            .list_audit(&tenant, None, 10)
            .await
            .unwrap()
            .items
            .len(),
        records
    );
}
