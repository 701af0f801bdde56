//! The conversation/proposal store on DynamoDB (moto): slot, lock, ids, retention.

use crate::common::env;
use countersign_domain::conversation::{MessageKind, Role};
use countersign_domain::ports::Ids as _;
use countersign_domain::ports::{
    ConversationStore, CreateProposalOutcome, StoreError, TransitionOutcome,
};
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

/// Messages of a case come back in creation order, after a given message, and include
/// the presentation written with the proposal.
#[tokio::test]
async fn messages_are_stored_per_case_in_a_total_order() {
    let env = env().await;
    let store = env.store();
    let tenant = env.tenant();
    let case = env.open_case(&store, &tenant).await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let m = env.message(
            &case.id,
            env.ids.message_id(),
            Role::User,
            MessageKind::Text,
            &format!("m{i}"),
            None,
        );
        ids.push(m.id.clone());
        store.append_message(&tenant, &m).await.unwrap();
    }
    let all = store
        .list_messages(&tenant, &case.id, None, 100)
        .await
        .unwrap();
    assert_eq!(all.iter().map(|m| m.id.clone()).collect::<Vec<_>>(), ids);
    assert_eq!(all[0].content, "m0");
    let after = store
        .list_messages(&tenant, &case.id, Some(&ids[2]), 100)
        .await
        .unwrap();
    assert_eq!(
        after.iter().map(|m| m.id.clone()).collect::<Vec<_>>(),
        ids[3..].to_vec()
    );
    let two = store
        .list_messages(&tenant, &case.id, None, 2)
        .await
        .unwrap();
    assert_eq!(two.len(), 2);
    // The model's history: the newest ones, oldest first.
    let recent = store.recent_messages(&tenant, &case.id, 3).await.unwrap();
    assert_eq!(
        recent.iter().map(|m| m.id.clone()).collect::<Vec<_>>(),
        ids[2..].to_vec()
    );
    // The proposal's presentation messages join the same order.
    let (p, msgs) = env.proposal(&case, "act_order", 1);
    store.create_proposal(&p, &msgs).await.unwrap();
    let all = store
        .list_messages(&tenant, &case.id, None, 100)
        .await
        .unwrap();
    assert_eq!(all.len(), 7);
    assert_eq!(all[5].id, p.presented.message_id);
    assert_eq!(all[5].kind, MessageKind::Proposal);
    assert_eq!(all[6].kind, MessageKind::Instructions);
}

/// a new proposal supersedes the pending one atomically; the superseded one
/// can never be confirmed, even with its own presentation id.
#[tokio::test]
async fn a16_new_proposal_supersedes_pending_one_which_never_confirms() {
    let env = env().await;
    let store = env.store();
    let tenant = env.tenant();
    let case = env.open_case(&store, &tenant).await;
    let (p1, m1) = env.proposal(&case, "act_1", 1);
    let (p2, m2) = env.proposal(&case, "act_2", 1);
    store.create_proposal(&p1, &m1).await.unwrap();
    assert_eq!(
        store.create_proposal(&p2, &m2).await.unwrap(),
        CreateProposalOutcome::Applied {
            superseded: Some(p1.action_id.clone())
        }
    );
    let old = store
        .proposal(&tenant, &case.id, &p1.action_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(old.state, S::Superseded);
    assert_eq!(
        store
            .confirm(&env.confirm_write(&p1, &p1.presented.message_id))
            .await
            .unwrap(),
        TransitionOutcome::Conflict {
            current: Some(S::Superseded)
        }
    );
    let view = store.load(&tenant, &case.id).await.unwrap().unwrap();
    assert_eq!(view.active.unwrap().action_id, p2.action_id);
}

/// an executing or unknown proposal blocks preparation until reconciled.
#[tokio::test]
async fn a17_executing_or_unknown_proposal_blocks_preparation() {
    let env = env().await;
    let store = env.store();
    let tenant = env.tenant();
    let case = env.open_case(&store, &tenant).await;
    let (p1, m1) = env.proposal(&case, "act_b1", 1);
    store.create_proposal(&p1, &m1).await.unwrap();
    assert_eq!(
        store
            .confirm(&env.confirm_write(&p1, &p1.presented.message_id))
            .await
            .unwrap(),
        TransitionOutcome::Applied
    );
    let (p2, m2) = env.proposal(&case, "act_b2", 1);
    assert_eq!(
        store.create_proposal(&p2, &m2).await.unwrap(),
        CreateProposalOutcome::Blocked {
            action_id: p1.action_id.clone(),
            state: S::Executing
        }
    );
    let t = |from, to| store.transition(&tenant, &case.id, &p1.action_id, from, to, None);
    assert_eq!(
        t(S::Executing, S::Unknown).await.unwrap(),
        TransitionOutcome::Applied
    );
    assert_eq!(
        store.create_proposal(&p2, &m2).await.unwrap(),
        CreateProposalOutcome::Blocked {
            action_id: p1.action_id.clone(),
            state: S::Unknown
        }
    );
    assert_eq!(
        t(S::Unknown, S::Completed).await.unwrap(),
        TransitionOutcome::Applied
    );
    assert_eq!(
        store.create_proposal(&p2, &m2).await.unwrap(),
        CreateProposalOutcome::Applied { superseded: None }
    );
}

/// action ids are never reused within a tenant, in any conversation or state; other
/// tenants are independent.
#[tokio::test]
async fn a14_action_ids_are_never_reused_within_a_tenant() {
    let env = env().await;
    let store = env.store();
    let tenant = env.tenant();
    let a = env.open_case(&store, &tenant).await;
    let b = env.open_case(&store, &tenant).await;
    let (p1, m1) = env.proposal(&a, "act_same", 1);
    store.create_proposal(&p1, &m1).await.unwrap();
    let (again, m) = env.proposal(&b, "act_same", 1);
    assert_eq!(
        store.create_proposal(&again, &m).await.unwrap(),
        CreateProposalOutcome::ActionIdReused
    );
    // Cancelled, then reused in the same conversation: still refused.
    store
        .transition(
            &tenant,
            &a.id,
            &p1.action_id,
            S::PendingConfirmation,
            S::Cancelled,
            None,
        )
        .await
        .unwrap();
    let (again, m) = env.proposal(&a, "act_same", 1);
    assert_eq!(
        store.create_proposal(&again, &m).await.unwrap(),
        CreateProposalOutcome::ActionIdReused
    );
    // Nothing of the refused proposal was written.
    assert!(
        store
            .load(&tenant, &b.id)
            .await
            .unwrap()
            .unwrap()
            .active
            .is_none()
    );
    // Another tenant may use the same id.
    let other = env.tenant();
    let c = env.open_case(&store, &other).await;
    let (p, m) = env.proposal(&c, "act_same", 1);
    assert_eq!(
        store.create_proposal(&p, &m).await.unwrap(),
        CreateProposalOutcome::Applied { superseded: None }
    );
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

/// a case whose action is `executing` or `unknown` cannot be closed: its
/// outcome is reconciled in it first.
#[tokio::test]
async fn a44_a_case_with_an_unsettled_action_is_not_closed() {
    let env = env().await;
    let store = env.store();
    let tenant = env.tenant();
    let case = env.open_case(&store, &tenant).await;
    let (p, m) = env.proposal(&case, "act_busy", 1);
    store.create_proposal(&p, &m).await.unwrap();
    assert_eq!(
        store
            .confirm(&env.confirm_write(&p, &p.presented.message_id))
            .await
            .unwrap(),
        TransitionOutcome::Applied
    );
    for state in [S::Executing, S::Unknown] {
        if state == S::Unknown {
            store
                .transition(
                    &tenant,
                    &case.id,
                    &p.action_id,
                    S::Executing,
                    S::Unknown,
                    None,
                )
                .await
                .unwrap();
        }
        assert_eq!(
            store.close_case(&tenant, &case.id).await.unwrap(),
            TransitionOutcome::Conflict {
                current: Some(state)
            }
        );
        let view = store.load(&tenant, &case.id).await.unwrap().unwrap();
        assert_eq!(
            view.case.status,
            countersign_domain::conversation::CaseStatus::Open
        );
    }
    store
        .transition(
            &tenant,
            &case.id,
            &p.action_id,
            S::Unknown,
            S::Completed,
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        store.close_case(&tenant, &case.id).await.unwrap(),
        TransitionOutcome::Applied
    );
}

/// closing a case cancels its pending proposal, which then never confirms.
#[tokio::test]
async fn a26_closed_case_never_confirms() {
    let env = env().await;
    let store = env.store();
    let tenant = env.tenant();
    let case = env.open_case(&store, &tenant).await;
    let (p, m) = env.proposal(&case, "act_closed", 1);
    store.create_proposal(&p, &m).await.unwrap();
    assert_eq!(
        store.close_case(&tenant, &case.id).await.unwrap(),
        TransitionOutcome::Applied
    );
    assert_eq!(
        store.close_case(&tenant, &case.id).await.unwrap(),
        TransitionOutcome::Applied,
        "closing twice is harmless"
    );
    let view = store.load(&tenant, &case.id).await.unwrap().unwrap();
    assert_eq!(
        view.case.status,
        countersign_domain::conversation::CaseStatus::Closed
    );
    assert!(view.active.is_none());
    assert_ne!(
        store
            .confirm(&env.confirm_write(&p, &p.presented.message_id))
            .await
            .unwrap(),
        TransitionOutcome::Applied
    );
    let (p2, m2) = env.proposal(&case, "act_closed_2", 1);
    assert_eq!(
        store.create_proposal(&p2, &m2).await.unwrap(),
        CreateProposalOutcome::CaseNotOpen
    );
}

/// P-3: a conversation holding a non-terminal proposal has no TTL; terminal proposals and
/// the case get the retention once the slot is terminal.
#[tokio::test]
async fn p3_held_conversations_never_get_a_ttl() {
    let env = env().await;
    let store = env.store();
    let tenant = env.tenant();
    let case = env.open_case(&store, &tenant).await;
    let ttl = |a: Option<countersign_domain::ids::ActionId>| {
        let store = store.clone();
        let tenant = tenant.clone();
        let case = case.id.clone();
        async move {
            store
                .retention_of(&tenant, &case, a.as_ref())
                .await
                .unwrap()
        }
    };
    assert!(ttl(None).await.is_some(), "an idle case has its retention");
    let (p1, m1) = env.proposal(&case, "act_r1", 1);
    store.create_proposal(&p1, &m1).await.unwrap();
    assert_eq!(ttl(None).await, None, "pending holds the conversation");
    let (p2, m2) = env.proposal(&case, "act_r2", 1);
    store.create_proposal(&p2, &m2).await.unwrap();
    assert!(
        ttl(Some(p1.action_id.clone())).await.is_some(),
        "superseded is terminal"
    );
    assert_eq!(ttl(Some(p2.action_id.clone())).await, None);
    store
        .confirm(&env.confirm_write(&p2, &p2.presented.message_id))
        .await
        .unwrap();
    assert_eq!(ttl(None).await, None, "executing holds the conversation");
    store
        .transition(
            &tenant,
            &case.id,
            &p2.action_id,
            S::Executing,
            S::Unknown,
            None,
        )
        .await
        .unwrap();
    assert_eq!(ttl(None).await, None, "unknown holds the conversation");
    store
        .transition(
            &tenant,
            &case.id,
            &p2.action_id,
            S::Unknown,
            S::Completed,
            None,
        )
        .await
        .unwrap();
    let now =
        countersign_domain::ports::Clock::now(&countersign_aws::system::SystemClock).unix_seconds();
    let case_ttl = ttl(None).await.unwrap();
    assert!((now + 29 * 86_400..=now + 31 * 86_400).contains(&case_ttl));
    assert_eq!(ttl(Some(p2.action_id.clone())).await, Some(case_ttl));
}

/// C-8: a configuration change cancels, with a notice, every pending proposal prepared
/// under other action settings, found by one consistent read of the tenant's
/// registrations; executing ones are never touched, and a second sweep finds nothing.
#[tokio::test]
async fn c8_invalidate_pending_cancels_proposals_of_other_action_settings() {
    use crate::common::Env;
    let env = env().await;
    let store = env.store();
    let tenant = env.tenant();
    let a = env.open_case(&store, &tenant).await;
    let b = env.open_case(&store, &tenant).await;
    let c = env.open_case(&store, &tenant).await;
    env.configure(&store, &tenant, None, (1, 1, "v1")).await;
    let (old, m) = env.proposal(&a, "act_v1", 1);
    let old = Env::with_settings(old, 1, "v1");
    store.create_proposal(&old, &m).await.unwrap();
    let (running, m) = env.proposal(&c, "act_v1_exec", 1);
    let running = Env::with_settings(running, 1, "v1");
    store.create_proposal(&running, &m).await.unwrap();
    store
        .confirm(&env.confirm_write(&running, &running.presented.message_id))
        .await
        .unwrap();
    env.configure(&store, &tenant, Some(1), (2, 2, "v1")).await;
    let (new, m) = env.proposal(&b, "act_v2", 2);
    let new = Env::with_settings(new, 2, "v1");
    store.create_proposal(&new, &m).await.unwrap();

    let notice = |case: &countersign_domain::ids::CaseId,
                  lang: countersign_domain::texts::Language| {
        env.message(
            case,
            env.ids.message_id(),
            countersign_domain::conversation::Role::Assistant,
            countersign_domain::conversation::MessageKind::Notice,
            countersign_domain::texts::invalidated_notice(lang),
            None,
        )
    };
    let keep = Some((2, "v1"));
    assert_eq!(
        store
            .invalidate_pending(&tenant, keep, &notice)
            .await
            .unwrap(),
        1
    );
    let state = |case: &countersign_domain::conversation::Case,
                 p: &countersign_domain::proposal::Proposal| {
        let store = store.clone();
        let (t, c, a) = (tenant.clone(), case.id.clone(), p.action_id.clone());
        async move { store.proposal(&t, &c, &a).await.unwrap().unwrap().state }
    };
    assert_eq!(state(&a, &old).await, S::Cancelled);
    assert_eq!(state(&b, &new).await, S::PendingConfirmation);
    assert_eq!(
        state(&c, &running).await,
        S::Executing,
        "executing is never invalidated"
    );
    let messages = store
        .list_messages(&tenant, &a.id, None, 100)
        .await
        .unwrap();
    assert_eq!(
        messages.last().map(|m| m.content.as_str()),
        Some(countersign_domain::texts::invalidated_notice(
            Default::default()
        )),
        "the person is told why"
    );
    assert_ne!(
        store
            .confirm(&env.confirm_write(&old, &old.presented.message_id))
            .await
            .unwrap(),
        TransitionOutcome::Applied
    );
    // Swept registrations are gone; the sweep is idempotent. Removing the connector
    // (`keep = None`) cancels the rest.
    assert_eq!(
        store
            .invalidate_pending(&tenant, keep, &notice)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .invalidate_pending(&tenant, None, &notice)
            .await
            .unwrap(),
        1
    );
    assert_eq!(state(&b, &new).await, S::Cancelled);
}

/// Transitions follow the state machine and the stored state.
#[tokio::test]
async fn transitions_refuse_illegal_and_stale_moves() {
    let env = env().await;
    let store = env.store();
    let tenant = env.tenant();
    let case = env.open_case(&store, &tenant).await;
    let (p, m) = env.proposal(&case, "act_t", 1);
    store.create_proposal(&p, &m).await.unwrap();
    assert!(matches!(
        store
            .transition(
                &tenant,
                &case.id,
                &p.action_id,
                S::Cancelled,
                S::Executing,
                None
            )
            .await,
        Err(StoreError::IllegalTransition { .. })
    ));
    assert_eq!(
        store
            .transition(
                &tenant,
                &case.id,
                &p.action_id,
                S::Executing,
                S::Completed,
                None
            )
            .await
            .unwrap(),
        TransitionOutcome::Conflict {
            current: Some(S::PendingConfirmation)
        }
    );
    let notice = env.message(
        &case.id,
        env.ids.message_id(),
        Role::Assistant,
        MessageKind::Notice,
        "cancelled",
        None,
    );
    assert_eq!(
        store
            .transition(
                &tenant,
                &case.id,
                &p.action_id,
                S::PendingConfirmation,
                S::Cancelled,
                Some(&notice)
            )
            .await
            .unwrap(),
        TransitionOutcome::Applied
    );
    let listed = store
        .list_messages(&tenant, &case.id, None, 100)
        .await
        .unwrap();
    assert_eq!(listed.last().map(|x| x.id.clone()), Some(notice.id.clone()));
}

/// Decision 0021: a tenant's budget admits `per_minute` units in a minute and then refuses
/// with the seconds left; another tenant's budget is its own; the next minute renews it.
#[tokio::test]
async fn tenant_budgets_are_per_tenant_fixed_windows() {
    use countersign_domain::ports::{Admission, RateLimiter};
    use countersign_domain::time::Timestamp;
    let env = env().await;
    let store = env.store();
    let (a, b) = (env.tenant(), env.tenant());
    // 1_800_000_000 is a minute boundary: 15 s into a window.
    let t0 = Timestamp::from_unix_seconds(1_800_000_015).unwrap();
    for _ in 0..3 {
        assert_eq!(
            store.take(&a, "turns", 3, t0).await.unwrap(),
            Admission::Admitted
        );
    }
    assert_eq!(
        store.take(&a, "turns", 3, t0).await.unwrap(),
        Admission::Limited {
            retry_after_secs: 45
        }
    );
    assert_eq!(
        store.take(&b, "turns", 3, t0).await.unwrap(),
        Admission::Admitted
    );
    let next = t0.plus_seconds(45);
    assert_eq!(
        store.take(&a, "turns", 3, next).await.unwrap(),
        Admission::Admitted
    );
}
