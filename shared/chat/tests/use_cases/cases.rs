//! Opening and closing cases (D-1, A-26).

use crate::harness::H;
use countersign_chat::ChatError;
use countersign_domain::conversation::CaseStatus;
use countersign_domain::proposal::ProposalState;
use countersign_testkit::Fault;

#[tokio::test]
async fn a_new_case_is_open_and_owned_by_the_person() {
    let h = H::new().await;
    let case = h.chat.create_case(&h.who).await.unwrap();
    assert_eq!(case.status, CaseStatus::Open);
    assert!(case.is_owned_by(&h.who));
    assert_ne!(case.id, h.case);
}

#[tokio::test]
async fn creating_a_case_while_the_store_is_down_is_unavailable() {
    let h = H::new().await;
    h.store.faults.once("create_case", Fault::Unavailable);
    assert!(matches!(
        h.chat.create_case(&h.who).await,
        Err(ChatError::Unavailable(_))
    ));
}

#[tokio::test]
async fn a26_closing_a_case_cancels_its_pending_proposal_and_a_later_confirm_is_refused() {
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    h.chat.close(&h.who, &h.case).await.unwrap();
    assert_eq!(h.case_status().await, CaseStatus::Closed);
    assert_eq!(h.state(&action), ProposalState::Cancelled);
    let err = h.post("confirm", Some(presented)).await.unwrap_err();
    assert!(matches!(err, ChatError::Closed));
    assert!(h.provider.calls_of("execute_action").is_empty());
}

#[tokio::test]
async fn a_case_with_an_unsettled_action_cannot_be_closed() {
    let h = H::new().await;
    let (action, _) = h.propose().await;
    h.store
        .force_state(&h.who.tenant, &h.case, &action, ProposalState::Unknown);
    assert!(matches!(
        h.chat.close(&h.who, &h.case).await,
        Err(ChatError::Busy)
    ));
    assert_eq!(h.case_status().await, CaseStatus::Open);
}

#[tokio::test]
async fn closing_twice_is_fine() {
    let h = H::new().await;
    h.chat.close(&h.who, &h.case).await.unwrap();
    h.chat.close(&h.who, &h.case).await.unwrap();
}
