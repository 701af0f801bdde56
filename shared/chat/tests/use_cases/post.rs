//! Posting a message: validation, ownership, and the branch taken for each state of the
//! conversation's active proposal (D-1, A-24, A-25, A-44).

use crate::harness::{H, kinds};
use countersign_chat::ChatError;
use countersign_domain::conversation::{MessageKind, Principal, Role};
use countersign_domain::ids::{CaseId, UserId};
use countersign_domain::proposal::ProposalState;
use countersign_domain::texts::{self, Language};
use countersign_testkit::Fault;

#[tokio::test]
async fn empty_blank_and_overlong_messages_are_refused_and_nothing_is_stored() {
    let h = H::new().await;
    for bad in [String::new(), "   \n ".to_owned(), "x".repeat(4001)] {
        let err = h.post(&bad, None).await.unwrap_err();
        assert!(
            matches!(
                err,
                ChatError::Invalid {
                    field: "content",
                    ..
                }
            ),
            "{err:?}"
        );
    }
    assert!(h.messages().is_empty());
    assert_eq!(h.model_steps(), 0);
}

#[tokio::test]
async fn a_message_of_exactly_the_longest_length_is_accepted() {
    let h = H::new().await;
    let out = h.say(&"é".repeat(4000)).await;
    assert_eq!(out[0].role, Role::User);
}

#[tokio::test]
async fn an_unknown_case_is_not_found() {
    let h = H::new().await;
    let other = CaseId::parse("case_01JDZ6Y5X1QW9T3V7N2K4M8P99").unwrap();
    let err = h.chat.post(&h.who, &other, "hi", None).await.unwrap_err();
    assert!(matches!(err, ChatError::NotFound));
}

#[tokio::test]
async fn another_persons_case_is_not_found_and_untouched() {
    let h = H::new().await;
    let mallory = Principal {
        tenant: h.who.tenant.clone(),
        user: UserId::parse("u_mallory").unwrap(),
    };
    let err = h
        .chat
        .post(&mallory, &h.case, "hi", None)
        .await
        .unwrap_err();
    assert!(matches!(err, ChatError::NotFound));
    let err = h
        .chat
        .messages(&mallory, &h.case, None, 10)
        .await
        .unwrap_err();
    assert!(matches!(err, ChatError::NotFound));
    assert!(h.messages().is_empty());
}

#[tokio::test]
async fn a_closed_case_refuses_new_messages() {
    let h = H::new().await;
    h.chat.close(&h.who, &h.case).await.unwrap();
    let err = h.post("hello", None).await.unwrap_err();
    assert!(matches!(err, ChatError::Closed));
}

#[tokio::test]
async fn with_no_proposal_a_message_goes_to_the_model_and_its_answer_is_stored() {
    let h = H::new().await;
    h.model.say("Hello, how can I help?");
    let out = h.say("hello").await;
    assert_eq!(kinds(&out), [MessageKind::Text, MessageKind::Text]);
    assert_eq!(out[1].content, "Hello, how can I help?");
    assert_eq!(out[1].role, Role::Assistant);
    assert_eq!(h.messages().len(), 2);
}

#[tokio::test]
async fn a_bare_confirm_or_cancel_with_nothing_pending_never_reaches_the_model() {
    let h = H::new().await;
    for word in ["confirm", "cancel", "  CONFIRMAR  "] {
        let out = h.say(word).await;
        assert_eq!(kinds(&out), [MessageKind::Text, MessageKind::Notice]);
    }
    assert_eq!(h.model_steps(), 0);
}

#[tokio::test]
async fn a25_any_other_text_while_pending_discards_the_proposal_before_the_model_sees_it() {
    let h = H::new().await;
    let (action, _) = h.propose().await;
    let steps = h.model_steps();
    let out = h.say("actually, what cars do I have?").await;
    assert_eq!(h.state(&action), ProposalState::Cancelled);
    assert_eq!(out[1].content, texts::discarded_notice(Language::En));
    // The model then answers the new message, and saw no pending proposal.
    assert_eq!(h.model_steps(), steps + 1);
}

#[tokio::test]
async fn cancel_while_pending_cancels_and_the_model_is_not_asked() {
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    let steps = h.model_steps();
    let out = h.reply("cancel", &presented).await;
    assert_eq!(h.state(&action), ProposalState::Cancelled);
    assert_eq!(
        out.last().unwrap().content,
        texts::cancelled_notice(Language::En)
    );
    assert_eq!(h.model_steps(), steps);
}

#[tokio::test]
async fn a_store_outage_while_reading_the_case_is_unavailable_and_stores_nothing() {
    let h = H::new().await;
    h.store.faults.once("load", Fault::Unavailable);
    let err = h.post("hello", None).await.unwrap_err();
    assert!(matches!(err, ChatError::Unavailable(_)));
    assert!(h.messages().is_empty());
}

#[tokio::test]
async fn a_store_outage_while_storing_the_message_is_unavailable_and_the_model_is_not_asked() {
    let h = H::new().await;
    h.store.faults.once("append_message", Fault::Unavailable);
    let err = h.post("hello", None).await.unwrap_err();
    assert!(matches!(err, ChatError::Unavailable(_)));
    assert_eq!(h.model_steps(), 0);
}

#[tokio::test]
async fn history_lists_this_persons_messages_in_order_after_a_cursor() {
    let h = H::new().await;
    h.say("one").await;
    h.say("two").await;
    let (all, lang) = h.chat.messages(&h.who, &h.case, None, 100).await.unwrap();
    assert_eq!(lang, Language::En);
    assert_eq!(all.len(), 4);
    let contents: Vec<&str> = all.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(contents, ["one", "ok", "two", "ok"]);
    let (after, _) = h
        .chat
        .messages(&h.who, &h.case, Some(&all[1].id), 1)
        .await
        .unwrap();
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].content, "two");
}

/// Decision 0021: each tenant may start a bounded number of model turns a minute; beyond
/// it the message is refused as `RateLimited` (429 with `Retry-After`) and nothing is
/// stored (a pending proposal is not discarded either). Confirmations are never counted;
/// the budget renews with the next minute.
#[tokio::test]
async fn a_tenants_turn_budget_refuses_messages_beyond_it_and_never_counts_confirmations() {
    let mut h = H::new().await;
    h.chat.turn_budget = Some((h.store.clone(), 1));
    let (action, presented) = h.propose().await; // the minute's one turn
    let stored = h.messages().len();
    let refused = h.post("one more question", None).await;
    let Err(ChatError::RateLimited { retry_after_secs }) = refused else {
        panic!("{refused:?}")
    };
    assert!((1..=60).contains(&retry_after_secs));
    assert_eq!(h.messages().len(), stored, "nothing stored");
    assert_eq!(h.state(&action), ProposalState::PendingConfirmation);
    // A confirmation is not a turn: it goes through on a spent budget.
    h.reply("confirm", &presented).await;
    assert_eq!(h.provider.calls_of("execute_action").len(), 1);
    // The next minute renews it.
    h.clock.advance_secs(60);
    assert!(h.post("and now?", None).await.is_ok());
}

/// V-7: per-person limits: past the messages a minute the person gets `PersonLimited`
/// (429 with `Retry-After`) and nothing is stored; another person of the same tenant is
/// not affected; new cases have their own limit; both renew with the next minute.
#[tokio::test]
async fn v7_a_person_past_their_limits_is_refused_and_others_are_not() {
    use countersign_chat::PersonLimits;
    let mut h = H::new().await;
    h.chat.person_limits = Some((
        h.store.clone(),
        PersonLimits {
            cases_per_minute: 1,
            messages_per_minute: 2,
        },
    ));
    h.post("one", None).await.unwrap();
    h.post("two", None).await.unwrap();
    let stored = h.messages().len();
    let refused = h.post("three", None).await;
    let Err(ChatError::PersonLimited {
        retry_after_secs,
        what,
    }) = refused
    else {
        panic!("{refused:?}")
    };
    assert!((1..=60).contains(&retry_after_secs));
    assert_eq!(what, "messages");
    assert_eq!(h.messages().len(), stored, "nothing stored");
    // Another person of the tenant opens a case and talks.
    let mut other = h.who.clone();
    other.user = countersign_domain::ids::UserId::parse("u_other").unwrap();
    let case = h.chat.create_case(&other).await.unwrap();
    h.chat.post(&other, &case.id, "hello", None).await.unwrap();
    // New cases: one a minute for this person.
    h.chat.create_case(&h.who).await.unwrap();
    assert!(matches!(
        h.chat.create_case(&h.who).await,
        Err(ChatError::PersonLimited {
            what: "new conversations",
            ..
        })
    ));
    h.clock.advance_secs(60);
    assert!(h.post("four", None).await.is_ok());
    assert!(h.chat.create_case(&h.who).await.is_ok());
}

/// Confirm-path review N10: a person who spent their messages of the minute can still
/// answer the proposal waiting for them (`confirm` or `cancel` never spends the budget);
/// any other message is still refused.
#[tokio::test]
async fn v7_n10_a_person_past_their_limit_can_still_answer_the_waiting_proposal() {
    use countersign_chat::PersonLimits;
    let mut h = H::new().await;
    h.chat.person_limits = Some((
        h.store.clone(),
        PersonLimits {
            cases_per_minute: 1,
            messages_per_minute: 1,
        },
    ));
    let (action, presented) = h.propose().await;
    assert!(matches!(
        h.post("and another thing", None).await,
        Err(ChatError::PersonLimited { .. })
    ));
    h.provider.answer(
        "execute_action",
        countersign_testkit::Reply::Result(countersign_testkit::action_answer(
            action.as_str(),
            "completed",
            Some("Done."),
        )),
    );
    h.reply("confirm", &presented).await;
    assert_eq!(
        h.state(&action),
        countersign_domain::proposal::ProposalState::Completed
    );
}
