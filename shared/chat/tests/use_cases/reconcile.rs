//! Reconciliation of an unsettled action: only the status query, never the model.

use crate::harness::H;
use countersign_domain::conversation::MessageKind;
use countersign_domain::ids::ActionId;
use countersign_domain::proposal::ProposalState;
use countersign_domain::texts::{self, Language};
use countersign_testkit::{Reply, action_answer};

/// A confirmed action whose `execute_action` timed out: `unknown`.
async fn unknown(h: &H) -> ActionId {
    let (action, presented) = h.propose().await;
    h.provider.answer("execute_action", Reply::Timeout);
    h.reply("confirm", &presented).await;
    assert_eq!(h.state(&action), ProposalState::Unknown);
    action
}

/// A-44, issue 14: while unknown, the message first asks only the status; a final answer
/// settles it, and only then does the same message go on to the model (the person need
/// not repeat it).
#[tokio::test]
async fn a44_while_unknown_a_message_asks_the_status_and_once_settled_goes_on_to_the_model() {
    let h = H::new().await;
    let action = unknown(&h).await;
    let steps = h.model_steps();
    h.provider.answer(
        "get_action_status",
        Reply::Result(action_answer(action.as_str(), "completed", None)),
    );
    let out = h.say("did it work?").await;
    assert_eq!(h.state(&action), ProposalState::Completed);
    let result = out.iter().position(|m| m.kind == MessageKind::Result);
    let answer = out
        .iter()
        .position(|m| m.kind == MessageKind::Text && m.content == "ok");
    assert!(result.is_some() && answer > result, "{out:?}");
    assert_eq!(
        h.model_steps(),
        steps + 1,
        "the model answered once, after the status"
    );
    assert!(h.provider.calls_of("get_action_status")[0].proof.is_none());
}

#[tokio::test]
async fn a44_a_failed_status_query_keeps_it_unknown_and_says_so() {
    let h = H::new().await;
    let action = unknown(&h).await;
    h.provider.answer("get_action_status", Reply::Unreachable);
    let out = h.say("did it work?").await;
    assert_eq!(h.state(&action), ProposalState::Unknown);
    assert_eq!(
        out.last().unwrap().content,
        texts::uncertainty_notice(Language::En)
    );
}

#[tokio::test]
async fn a44_a_non_final_status_keeps_it_unknown() {
    let h = H::new().await;
    let action = unknown(&h).await;
    h.provider.answer(
        "get_action_status",
        Reply::Result(action_answer(action.as_str(), "executing", None)),
    );
    h.say("did it work?").await;
    assert_eq!(h.state(&action), ProposalState::Unknown);
    // Decision 0028: the administrator sees what the provider last answered.
    let listed =
        countersign_domain::ports::UnsettledIndex::list_unsettled(&*h.store, &h.who.tenant)
            .await
            .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        listed[0].last_status.as_ref().map(|(a, _)| a.as_str()),
        Some("executing")
    );
}

#[tokio::test]
async fn a44_a_young_execution_is_reported_as_running_without_a_status_query() {
    let h = H::new().await;
    let action = unknown(&h).await;
    // As if the confirming request were still waiting for the provider.
    h.store
        .force_state(&h.who.tenant, &h.case, &action, ProposalState::Executing);
    let steps = h.model_steps();
    let out = h.say("is it done?").await;
    assert!(h.provider.calls_of("get_action_status").is_empty());
    assert_eq!(h.model_steps(), steps);
    assert_eq!(out.last().unwrap().kind, MessageKind::Notice);
    assert_eq!(h.state(&action), ProposalState::Executing);
}

#[tokio::test]
async fn a44_a_stuck_execution_is_reconciled_with_a_status_query() {
    let h = H::new().await;
    let action = unknown(&h).await;
    h.store
        .force_state(&h.who.tenant, &h.case, &action, ProposalState::Executing);
    h.clock.advance_secs(31);
    h.provider.answer(
        "get_action_status",
        Reply::Result(action_answer(action.as_str(), "failed", None)),
    );
    h.say("is it done?").await;
    assert_eq!(h.provider.calls_of("get_action_status").len(), 1);
    assert_eq!(h.state(&action), ProposalState::Failed);
}

#[tokio::test]
async fn a44_the_status_query_uses_the_integration_the_action_was_prepared_with() {
    let h = H::new().await;
    let action = unknown(&h).await;
    h.configure(
        true,
        &[crate::harness::OPERATION],
        Some("https://elsewhere.example.com/mcp"),
    )
    .await;
    h.say("did it work?").await;
    let call = &h.provider.calls_of("get_action_status")[0];
    assert_eq!(call.server_url, "https://provider.example.com/mcp");
    let _ = action;
}
