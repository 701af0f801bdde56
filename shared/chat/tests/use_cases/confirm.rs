//! The confirm path's checks (A-22 … A-26, C-8) and its one transaction (P-2).

use crate::harness::{H, kinds};
use countersign_domain::confirmation::Refusal;
use countersign_domain::conversation::MessageKind;
use countersign_domain::ids::{ActionId, MessageId};
use countersign_domain::ports::McpSettings;
use countersign_domain::ports::SettingsFence;
use countersign_domain::proposal::ProposalState;
use countersign_domain::texts::{self, Language};
use countersign_testkit::{Fault, Reply, action_answer};

#[tokio::test]
async fn a23_a_confirm_replying_to_the_presentation_executes() {
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    h.provider.answer(
        "execute_action",
        Reply::Result(action_answer(action.as_str(), "completed", Some("Moved."))),
    );
    let out = h.reply("confirm", &presented).await;
    assert_eq!(kinds(&out), [MessageKind::Text, MessageKind::Result]);
    assert_eq!(h.state(&action), ProposalState::Completed);
    assert_eq!(h.provider.calls_of("execute_action").len(), 1);
}

#[tokio::test]
async fn a23_a_confirm_replying_to_an_earlier_message_is_refused_and_cancels() {
    let h = H::new().await;
    let first = h.say("hello").await;
    let (action, _) = h.propose().await;
    let out = h.reply("confirm", &first[1].id).await;
    assert_eq!(h.state(&action), ProposalState::Cancelled);
    assert_eq!(out.last().unwrap().kind, MessageKind::Notice);
    assert!(h.provider.calls_of("execute_action").is_empty());
    assert_eq!(h.signer.signed(), 0);
}

#[tokio::test]
async fn a22_a_confirm_without_a_reply_id_is_refused_and_cancels() {
    let h = H::new().await;
    let (action, _) = h.propose().await;
    h.say("confirm").await;
    assert_eq!(h.state(&action), ProposalState::Cancelled);
    assert!(h.provider.calls_of("execute_action").is_empty());
}

#[tokio::test]
async fn a24_only_the_exact_word_confirms_anything_else_discards() {
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    h.reply("yes please confirm", &presented).await;
    assert_eq!(h.state(&action), ProposalState::Cancelled);
    assert!(h.provider.calls_of("execute_action").is_empty());
}

#[tokio::test]
async fn a24_portuguese_confirmar_in_any_case_with_outer_spaces_confirms() {
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    h.reply("  CONFIRMAR \n", &presented).await;
    assert_ne!(h.state(&action), ProposalState::PendingConfirmation);
    assert_eq!(h.provider.calls_of("execute_action").len(), 1);
}

#[tokio::test]
async fn an_expired_proposal_is_marked_expired_and_never_executed() {
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    h.clock.advance_secs(241);
    h.reply("confirm", &presented).await;
    assert_eq!(h.state(&action), ProposalState::Expired);
    assert!(h.provider.calls_of("execute_action").is_empty());
}

/// C-8: a proposal the settings change cancelled (decision 0019: the admin save sweeps
/// them) is never executed; a later "confirm" authorizes nothing.
#[tokio::test]
async fn c8_a_proposal_cancelled_by_a_settings_change_is_never_executed() {
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    h.configure(true, &[crate::harness::OPERATION], None).await;
    let current = h
        .store
        .get_mcp_config(&h.who.tenant)
        .await
        .unwrap()
        .unwrap();
    let keep = Some((current.actions_version, current.secret_version.as_str()));
    let notice = |case: &countersign_domain::ids::CaseId, lang: Language| {
        h.notice(case, texts::invalidated_notice(lang))
    };
    let cancelled = h
        .store
        .invalidate_pending(&h.who.tenant, keep, &notice)
        .await
        .unwrap();
    assert_eq!(cancelled, 1);
    assert_eq!(h.state(&action), ProposalState::Cancelled);
    assert!(
        h.messages()
            .iter()
            .any(|m| m.content == texts::invalidated_notice(Language::En)),
        "the person is told why"
    );
    h.reply("confirm", &presented).await;
    assert_eq!(h.state(&action), ProposalState::Cancelled);
    assert!(h.provider.calls_of("execute_action").is_empty());
    assert_eq!(h.signer.signed(), 0);
}

/// C-8 without the sweep (issue 27): the settings change committed but the save's sweep
/// never reached this proposal (it timed out, or failed midway). The confirmation is
/// recorded, yet nothing runs under the old URL or token: the settings are read after the
/// confirmation committed, the proposal ends `failed` (nothing was sent), nothing is
/// signed, and the person is told why.
#[tokio::test]
async fn c8_a_proposal_the_sweep_never_reached_is_not_executed_after_a_settings_change() {
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    h.configure(true, &[crate::harness::OPERATION], None).await;
    assert_eq!(
        h.state(&action),
        ProposalState::PendingConfirmation,
        "no sweep ran"
    );
    let out = h.reply("confirm", &presented).await;
    assert_eq!(h.state(&action), ProposalState::Failed);
    assert!(h.provider.calls_of("execute_action").is_empty());
    assert_eq!(h.signer.signed(), 0, "no proof was made");
    assert_eq!(
        out.last().map(|m| m.content.as_str()),
        Some(texts::invalidated_notice(Language::En))
    );
}

#[tokio::test]
async fn a_confirm_that_keeps_losing_races_asks_to_retry_and_keeps_the_proposal() {
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    h.store.faults.once("confirm", Fault::Conflict);
    let out = h.reply("confirm", &presented).await;
    assert_eq!(h.state(&action), ProposalState::PendingConfirmation);
    assert_eq!(
        out.last().unwrap().content,
        texts::confirm_retry_notice(Language::En)
    );
    // The retry then works.
    h.provider.answer(
        "execute_action",
        Reply::Result(action_answer(action.as_str(), "completed", None)),
    );
    let out = h.reply("confirm", &presented).await;
    assert_eq!(out.last().unwrap().kind, MessageKind::Result, "{out:#?}");
}

#[tokio::test]
async fn p2_two_confirmations_at_once_execute_once() {
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    let (a, b) = tokio::join!(
        h.post("confirm", Some(presented.clone())),
        h.post("confirm", Some(presented.clone()))
    );
    a.unwrap();
    b.unwrap();
    assert_eq!(h.provider.calls_of("execute_action").len(), 1);
    assert_eq!(h.signer.signed(), 1);
    assert!(h.state(&action).is_terminal() || h.state(&action) == ProposalState::Unknown);
}

#[tokio::test]
async fn a_confirm_after_the_action_completed_is_refused_without_a_second_execution() {
    let h = H::new().await;
    let (_, presented) = h.propose().await;
    h.reply("confirm", &presented).await;
    let out = h.reply("confirm", &presented).await;
    assert_eq!(kinds(&out), [MessageKind::Text, MessageKind::Notice]);
    assert_eq!(h.provider.calls_of("execute_action").len(), 1);
}

/// S-3: a confirm or cancel replying to a proposal that is no longer pending says what
/// became of it; one replying to no proposal says none is waiting.
#[tokio::test]
async fn s3_a_reply_to_a_proposal_no_longer_pending_says_why() {
    let h = H::new().await;
    let (first, shown) = h.propose().await;
    h.say("what else?").await;
    assert_eq!(h.state(&first), ProposalState::Cancelled);
    let out = h.reply("confirm", &shown).await;
    assert_eq!(
        out[1].content,
        texts::refusal_notice(Language::En, &Refusal::NotPending(ProposalState::Cancelled))
    );
    let (second, cancelled) = h.propose().await;
    h.reply("cancel", &cancelled).await;
    assert_eq!(h.state(&second), ProposalState::Cancelled);
    let out = h.reply("cancel", &cancelled).await;
    assert!(
        out[1].content.contains("was cancelled before"),
        "{}",
        out[1].content
    );
    let out = h.say("confirm").await;
    assert_eq!(
        out[1].content,
        texts::refusal_notice(Language::En, &Refusal::NoPendingProposal)
    );
    assert!(h.provider.calls_of("execute_action").is_empty());
}

#[tokio::test]
async fn a_store_outage_at_the_confirm_write_executes_nothing() {
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    h.store.faults.once("confirm", Fault::Unavailable);
    assert!(h.post("confirm", Some(presented)).await.is_err());
    assert_eq!(h.state(&action), ProposalState::PendingConfirmation);
    assert!(h.provider.calls_of("execute_action").is_empty());
}

/// Issue 27: the confirm write committed but the store could not say so; the chat
/// reads the conversation once more, finds this message recorded as the confirmation and
/// carries on — the action runs once and the person is not told "unavailable".
#[tokio::test]
async fn a35_a_confirm_write_that_committed_without_an_answer_is_carried_on() {
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    h.provider.answer(
        "execute_action",
        Reply::Result(action_answer(action.as_str(), "completed", None)),
    );
    h.store.faults.once("confirm", Fault::LostResponse);
    let out = h.post("confirm", Some(presented)).await.unwrap();
    assert_eq!(h.state(&action), ProposalState::Completed, "{out:?}");
    assert_eq!(h.provider.calls_of("execute_action").len(), 1);
}

/// Issue 13: a "cancel" that loses the race to a confirmation that was carried out is
/// told what happened, not "nothing was changed".
#[tokio::test]
async fn a_cancel_that_lost_to_a_completed_confirmation_says_it_was_carried_out() {
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    h.provider.answer(
        "execute_action",
        Reply::Result(action_answer(action.as_str(), "completed", None)),
    );
    let (confirmed, cancelled) = tokio::join!(
        h.post("confirm", Some(presented.clone())),
        h.post("cancel", Some(presented.clone())),
    );
    confirmed.unwrap();
    let cancelled = cancelled.unwrap();
    assert_eq!(h.state(&action), ProposalState::Completed);
    let told = &cancelled.last().unwrap().content;
    assert!(told.starts_with("Too late to cancel"), "{cancelled:?}");
}

/// A-23, issue 27: "written after the presentation" follows the conversation, not the
/// clocks of the instances serving it: an instance whose clock is an hour behind the one
/// that presented the proposal mints the person's confirmation after the presentation it
/// read, so the confirmation is honoured (without `observe_message` its id would sort
/// before the presentation and the confirmation would be refused).
#[tokio::test]
async fn a23_a_confirmation_served_by_an_instance_whose_clock_is_behind_still_confirms() {
    let h = H::new().await;
    h.clock.advance_secs(3600);
    let (action, presented) = h.propose().await;
    h.provider.answer(
        "execute_action",
        Reply::Result(action_answer(action.as_str(), "completed", Some("Moved."))),
    );
    let behind = std::sync::Arc::new(countersign_testkit::SeqIds::new(std::sync::Arc::new(
        countersign_testkit::TestClock::default(),
    )));
    assert!(countersign_domain::ports::Ids::message_id(&*behind) < presented);
    let chat = countersign_chat::Chat::new(countersign_chat::ChatParts {
        ids: behind,
        ..h.chat.parts.clone()
    });
    let (out, _) = chat
        .post(&h.who, &h.case, "confirm", Some(presented.clone()))
        .await
        .unwrap();
    assert!(out[0].id > presented, "{} {presented}", out[0].id);
    assert_eq!(h.state(&action), ProposalState::Completed);
}

/// N-6: another proposal replaces the person's pending `first`, as a gateway client's
/// preparation stores it: `make_room` supersedes the pending one first (`via_make_room`),
/// or the store supersedes it in the same write. Returns its action id and presentation.
async fn replace(h: &H, first: &ActionId, via_make_room: bool) -> (ActionId, MessageId) {
    use countersign_domain::ports::{CreateProposalOutcome, Ids as _, ProposalLock as _};
    if via_make_room {
        h.store
            .transition(
                &h.who.tenant,
                &h.case,
                first,
                ProposalState::PendingConfirmation,
                ProposalState::Superseded,
                None,
            )
            .await
            .unwrap();
    }
    let mut p = h.proposal(first);
    let presented = h.ids.message_id();
    p.action_id = ActionId::parse("act_replacing").unwrap();
    p.state = ProposalState::PendingConfirmation;
    p.prepared_at = h.clock_now();
    p.expires_at = h.clock_now().plus_seconds(240);
    p.presented.message_id = presented.clone();
    p.confirmation_message_id = None;
    let message = countersign_domain::ports::NewMessage {
        id: presented.clone(),
        case: h.case.clone(),
        role: countersign_domain::conversation::Role::Assistant,
        kind: MessageKind::Proposal,
        content: p.summary.as_str().to_owned(),
        reply_to: None,
        created_at: h.clock_now(),
    };
    let created = h.store.create_proposal(&p, &[message]).await.unwrap();
    assert!(
        matches!(created, CreateProposalOutcome::Applied { .. }),
        "{created:?}"
    );
    (p.action_id, presented)
}

/// N-6 (security review N4, measured: a `confirm` typed for one proposal, sent 300 ms after
/// a replacing one appeared, ran the replacement): a confirm of a proposal that replaced
/// another, 300 ms after the widget's poll first served it, confirms nothing; it is
/// cancelled with a notice. Both ways a replacement is stored.
#[tokio::test]
async fn n6_a_confirm_300_ms_after_a_replacing_proposal_appeared_confirms_nothing() {
    for via_make_room in [false, true] {
        let h = H::new().await;
        let (first, _) = h.propose().await;
        let (second, presented) = replace(&h, &first, via_make_room).await;
        assert_eq!(h.state(&first), ProposalState::Superseded);
        assert!(h.proposal(&second).presented.replaced.is_some());
        h.chat.messages(&h.who, &h.case, None, 100).await.unwrap();
        h.clock.advance_millis(300);
        h.provider.answer(
            "execute_action",
            Reply::Result(action_answer(second.as_str(), "completed", Some("Done."))),
        );
        let out = h.reply("confirm", &presented).await;
        assert_eq!(
            h.state(&second),
            ProposalState::Cancelled,
            "{via_make_room}"
        );
        let notice = out.last().unwrap();
        assert_eq!(notice.kind, MessageKind::Notice);
        assert!(
            notice.content.contains("replaced an earlier one"),
            "{notice:?}"
        );
        assert!(h.provider.calls_of("execute_action").is_empty());
        assert_eq!(h.signer.signed(), 0);
    }
}

/// N-6: the dwell counts from the first serving, recorded once, server-side: a later read
/// does not move it; 5 s after it the replacing proposal confirms; one never served
/// (nothing showed it to the person) is refused and cancelled.
#[tokio::test]
async fn n6_a_replacing_proposal_confirms_five_seconds_after_its_first_serving() {
    let h = H::new().await;
    let (first, _) = h.propose().await;
    let (second, presented) = replace(&h, &first, true).await;
    h.chat.messages(&h.who, &h.case, None, 100).await.unwrap();
    let served = h.proposal(&second).presented.first_served_at.unwrap();
    h.clock.advance_secs(3);
    h.chat.messages(&h.who, &h.case, None, 100).await.unwrap();
    assert_eq!(h.proposal(&second).presented.first_served_at, Some(served));
    h.clock.advance_secs(2);
    h.provider.answer(
        "execute_action",
        Reply::Result(action_answer(second.as_str(), "completed", Some("Done."))),
    );
    h.reply("confirm", &presented).await;
    assert_eq!(h.state(&second), ProposalState::Completed);
    assert_eq!(h.provider.calls_of("execute_action").len(), 1);

    let h = H::new().await;
    let (first, _) = h.propose().await;
    let (second, presented) = replace(&h, &first, false).await;
    h.clock.advance_secs(30);
    h.reply("confirm", &presented).await;
    assert_eq!(h.state(&second), ProposalState::Cancelled);
    assert!(h.provider.calls_of("execute_action").is_empty());
}

/// F-1, F-3: a typed confirm of a passkey operation is refused (`StepUpRequired`, 409
/// `STEP_UP_REQUIRED` at the API) before anything is stored: no message, no proof, no
/// provider call, and the proposal still waits; another operation confirms as before.
#[tokio::test]
async fn f1_a_typed_confirm_of_a_passkey_operation_stores_nothing_and_leaves_it_pending() {
    let h = H::new().await;
    // Prepared under settings in which the operation needs the person's passkey.
    h.passkey_for("reassign_session_car").await;
    let (action, presented) = h.propose().await;
    assert!(h.proposal(&action).needs_passkey);
    let (messages, calls) = (h.messages().len(), h.provider.calls().len());
    let refused = h
        .chat
        .post(&h.who, &h.case, "confirm", Some(presented.clone()))
        .await;
    assert!(
        matches!(refused, Err(countersign_chat::ChatError::StepUpRequired)),
        "{refused:?}"
    );
    let api = countersign_http::ApiError::from(refused.unwrap_err());
    assert_eq!(api.status(), axum::http::StatusCode::CONFLICT);
    assert_eq!(h.messages().len(), messages, "nothing stored");
    assert_eq!(h.provider.calls().len(), calls, "nothing sent");
    assert_eq!(h.signer.signed(), 0, "nothing signed");
    assert_eq!(h.state(&action), ProposalState::PendingConfirmation);
}
