//! P-2 with real concurrency against the emulator: many tasks on a multi-threaded runtime,
//! each with its own in-flight HTTP request, racing on one conversation. Each scenario is
//! repeated on fresh tables: the confirmations 20 times, the preparations 6 times (each of
//! their rounds costs the emulator about 8 s of CPU, and the emulator applies requests one
//! at a time, so further rounds vary only the order of arrival; issue 26 keeps the test
//! command under 25 minutes).

use crate::common::env;
use countersign_domain::ports::{ConversationStore, CreateProposalOutcome, TransitionOutcome};
use countersign_domain::proposal::ProposalState;
use std::sync::Arc;

const TASKS: usize = 32;
const ROUNDS: usize = 20;
const PREPARATION_ROUNDS: usize = 6;

/// P-2, A-35: 32 simultaneous confirmations of one proposal → exactly one `Applied`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn p2_thirty_two_concurrent_confirms_apply_exactly_once() {
    let env = Arc::new(env().await);
    let tenant = env.tenant();
    for round in 0..ROUNDS {
        let store = env.fresh_store().await;
        let case = env.open_case(&store, &tenant).await;
        let (p, m) = env.proposal(&case, &format!("act_cc_{round}"), 1);
        store.create_proposal(&p, &m).await.unwrap();
        let barrier = Arc::new(tokio::sync::Barrier::new(TASKS));
        let mut tasks = Vec::new();
        for _ in 0..TASKS {
            let (store, env, p, barrier) = (store.clone(), env.clone(), p.clone(), barrier.clone());
            tasks.push(tokio::spawn(async move {
                let w = env.confirm_write(&p, &p.presented.message_id);
                barrier.wait().await;
                store.confirm(&w).await.unwrap()
            }));
        }
        let mut applied = 0;
        for t in tasks {
            match t.await.unwrap() {
                TransitionOutcome::Applied => applied += 1,
                TransitionOutcome::Conflict { current } => {
                    assert_eq!(current, Some(ProposalState::Executing), "round {round}");
                }
            }
        }
        assert_eq!(applied, 1, "round {round}: exactly one confirmation wins");
        let stored = store
            .proposal(&tenant, &case.id, &p.action_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored.state, ProposalState::Executing);
    }
}

/// P-2, A-15, A-16: 32 simultaneous preparations in one conversation → exactly one
/// non-terminal proposal at the end; every other one superseded and not confirmable.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn p2_thirty_two_concurrent_preparations_leave_exactly_one_pending() {
    let env = Arc::new(env().await);
    let tenant = env.tenant();
    for round in 0..PREPARATION_ROUNDS {
        let store = env.fresh_store().await;
        let case = env.open_case(&store, &tenant).await;
        let barrier = Arc::new(tokio::sync::Barrier::new(TASKS));
        let mut tasks = Vec::new();
        for i in 0..TASKS {
            let (p, m) = env.proposal(&case, &format!("act_cp_{round}_{i}"), 1);
            let (store, barrier) = (store.clone(), barrier.clone());
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                let outcome = store.create_proposal(&p, &m).await.unwrap();
                (p, outcome)
            }));
        }
        let mut proposals = Vec::new();
        for t in tasks {
            let (p, outcome) = t.await.unwrap();
            assert!(
                matches!(outcome, CreateProposalOutcome::Applied { .. }),
                "round {round}: {outcome:?}"
            );
            proposals.push(p);
        }
        let view = store.load(&tenant, &case.id).await.unwrap().unwrap();
        let active = view.active.expect("one proposal is active");
        assert_eq!(active.state, ProposalState::PendingConfirmation);
        let mut pending = 0;
        for p in &proposals {
            let stored = store
                .proposal(&tenant, &case.id, &p.action_id)
                .await
                .unwrap()
                .unwrap();
            if p.action_id == active.action_id {
                assert_eq!(stored.state, ProposalState::PendingConfirmation);
                pending += 1;
            } else {
                assert_eq!(stored.state, ProposalState::Superseded, "round {round}");
                assert_ne!(
                    store
                        .confirm(&env.confirm_write(p, &p.presented.message_id))
                        .await
                        .unwrap(),
                    TransitionOutcome::Applied,
                    "round {round}: a superseded proposal never confirms"
                );
            }
        }
        assert_eq!(pending, 1, "round {round}");
    }
}
