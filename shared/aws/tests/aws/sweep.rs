//! C-8's sweep on the emulator (issue 27, decision 0042): bounded by its budget, it never
//! deletes the registration of a proposal it did not cancel, reports what is left, and the
//! next sweep finishes it.

use crate::common::{Env, env};
use countersign_domain::conversation::{MessageKind, Role};
use countersign_domain::ids::CaseId;
use countersign_domain::ports::{ConversationStore, Ids as _, NewMessage, StoreError};
use countersign_domain::proposal::ProposalState;
use countersign_domain::texts::{Language, invalidated_notice};

#[tokio::test]
async fn c8_a_sweep_out_of_time_keeps_every_registration_it_did_not_settle() {
    const N: usize = 24;
    let env = env().await;
    let store = env.fresh_store().await;
    let tenant = env.tenant();
    env.configure(&store, &tenant, None, (1, 1, "v1")).await;
    let mut proposals = Vec::new();
    for i in 0..N {
        let case = env.open_case(&store, &tenant).await;
        let (p, m) = env.proposal(&case, &format!("act_sweep_{i}"), 1);
        let p = Env::with_settings(p, 1, "v1");
        store.create_proposal(&p, &m).await.unwrap();
        proposals.push(p);
    }
    env.configure(&store, &tenant, Some(1), (2, 2, "v1")).await;
    let notice = |case: &CaseId, lang: Language| NewMessage {
        id: env.ids.message_id(),
        case: case.clone(),
        role: Role::Assistant,
        kind: MessageKind::Notice,
        content: invalidated_notice(lang).to_owned(),
        reply_to: None,
        created_at: countersign_domain::ports::Clock::now(&countersign_aws::system::SystemClock),
    };
    let keep = Some((2, "v1"));
    let out_of_time = store.clone().with_sweep_budget(std::time::Duration::ZERO);
    let unfinished = out_of_time.invalidate_pending(&tenant, keep, &notice).await;
    match unfinished {
        Err(StoreError::Unavailable(why)) => {
            assert!(
                why.to_string()
                    .contains(&format!("{N} pending proposals not cancelled")),
                "{why}"
            );
        }
        other => panic!("an unfinished sweep is reported: {other:?}"),
    }
    for p in &proposals {
        let stored = store
            .proposal(&tenant, &p.case, &p.action_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored.state, ProposalState::PendingConfirmation);
    }
    // Every registration is still there: the next sweep finds and finishes them all.
    assert_eq!(
        store
            .invalidate_pending(&tenant, keep, &notice)
            .await
            .unwrap(),
        N
    );
    for p in &proposals {
        let stored = store
            .proposal(&tenant, &p.case, &p.action_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored.state, ProposalState::Cancelled);
    }
    assert_eq!(
        store
            .invalidate_pending(&tenant, keep, &notice)
            .await
            .unwrap(),
        0
    );
}
