//! What only the DynamoDB store has to show on the emulator: its call budgets and its
//! retention attributes. The rules every store holds are the contract
//! (`countersign_testkit::contract`, run here by `contract.rs`).

use crate::common::env;
use countersign_domain::ports::Conversations;
use countersign_domain::ports::Ids as _;
use countersign_domain::ports::ProposalLock;
use countersign_domain::ports::{CreateProposalOutcome, TransitionOutcome};
use countersign_domain::proposal::ProposalState as S;
use std::collections::BTreeMap;

fn calls(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

/// P-2: one Query returns the case, its slot and the active proposal.
#[tokio::test]
async fn p2_load_returns_case_and_active_proposal_in_one_query() {
    let env = env().await;
    let store = env.store();
    let tenant = env.tenant();
    let case = env.open_case(&store, &tenant).await;
    let (p, msgs) = env.proposal(&case, "act_load", 1);
    assert!(matches!(
        store.create_proposal(&p, &msgs).await.unwrap(),
        CreateProposalOutcome::Applied { superseded: None }
    ));
    env.calls.reset();
    let view = store.load(&tenant, &case.id).await.unwrap().unwrap();
    assert_eq!(env.calls.snapshot(), calls(&[("Query", 1)]));
    assert_eq!(view.case, case);
    assert_eq!(view.active, Some(p));
    // Another tenant sees nothing (tenant scoping).
    assert_eq!(store.load(&env.tenant(), &case.id).await.unwrap(), None);
}

/// confirm moves pending → executing only with the matching presentation; a
/// refused confirm writes nothing; a second confirm finds it executing.
#[tokio::test]
async fn a23_confirm_requires_the_current_presentation_and_applies_once() {
    let env = env().await;
    let store = env.store();
    let tenant = env.tenant();
    let case = env.open_case(&store, &tenant).await;
    let (p, m) = env.proposal(&case, "act_c", 1);
    store.create_proposal(&p, &m).await.unwrap();

    let stale = env.confirm_write(&p, &env.ids.message_id());
    assert_eq!(
        store.confirm(&stale).await.unwrap(),
        TransitionOutcome::Conflict {
            current: Some(S::PendingConfirmation)
        }
    );
    let listed = store
        .list_messages(&tenant, &case.id, None, 100)
        .await
        .unwrap();
    assert!(
        listed.iter().all(|x| x.id != stale.message.id),
        "a refused confirm stores nothing"
    );

    let good = env.confirm_write(&p, &p.presented.message_id);
    env.calls.reset();
    assert_eq!(
        store.confirm(&good).await.unwrap(),
        TransitionOutcome::Applied
    );
    // The confirm path's store budget: one TransactWriteItems (after the one Query of load).
    assert_eq!(env.calls.snapshot(), calls(&[("TransactWriteItems", 1)]));
    let stored = store
        .proposal(&tenant, &case.id, &p.action_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.state, S::Executing);
    assert_eq!(
        stored.confirmation_message_id,
        Some(good.message.id.clone())
    );
    let listed = store
        .list_messages(&tenant, &case.id, None, 100)
        .await
        .unwrap();
    assert_eq!(
        listed.last().map(|x| x.id.clone()),
        Some(good.message.id.clone())
    );

    let again = env.confirm_write(&p, &p.presented.message_id);
    assert_eq!(
        store.confirm(&again).await.unwrap(),
        TransitionOutcome::Conflict {
            current: Some(S::Executing)
        }
    );
}
