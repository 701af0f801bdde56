//! Preparing an action through `prepare_action` in a model turn (A-2, A-10, A-13 … A-17,
//! A-21, C-6): what is refused, what reaches the provider, what is stored.

use crate::harness::{H, OPERATION, SUMMARY, kinds};
use countersign_domain::conversation::MessageKind;
use countersign_domain::ids::ActionId;
use countersign_domain::proposal::ProposalState;
use countersign_testkit::{Fault, Reply, prepare_answer};
use serde_json::json;

fn error_code(v: &serde_json::Value) -> &str {
    v["error"]["code"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn a21_a_prepared_proposal_is_presented_literally_and_ends_the_turn() {
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    let p = h.proposal(&action);
    assert_eq!(p.state, ProposalState::PendingConfirmation);
    assert_eq!(p.presented.message_id, presented);
    // Issue 50: the chat's own assistant prepared it: no "an app you connected" label.
    assert!(!p.prepared_outside);
    let shown = h
        .messages()
        .into_iter()
        .find(|m| m.id == presented)
        .unwrap();
    assert_eq!(shown.kind, MessageKind::Proposal);
    assert_eq!(shown.content, SUMMARY);
    // The model was asked once: the presentation is the turn's last message.
    assert_eq!(h.model_steps(), 1);
    assert_eq!(h.messages().last().unwrap().id, presented);
}

#[tokio::test]
async fn a2_an_operation_not_configured_is_refused_before_the_provider_is_asked() {
    let h = H::new().await;
    h.script_prepare("delete_account");
    h.say("delete my account").await;
    assert_eq!(error_code(&h.last_tool_result()), "OPERATION_NOT_ENABLED");
    assert!(h.provider.calls_of("prepare_action").is_empty());
    assert!(!h.messages().iter().any(|m| m.kind == MessageKind::Proposal));
}

#[tokio::test]
async fn a10_a_configured_operation_is_refused_while_writes_are_disabled() {
    let h = H::with_policy(false, &[OPERATION]).await;
    h.script_prepare(OPERATION);
    h.say("move ses_a1 to car_a2").await;
    assert_eq!(error_code(&h.last_tool_result()), "OPERATION_NOT_ENABLED");
    assert!(h.provider.calls_of("prepare_action").is_empty());
}

#[tokio::test]
async fn a10_an_invalid_operation_name_is_a_validation_error() {
    let h = H::new().await;
    h.model.call(
        "prepare_action",
        json!({"operation": "not valid!", "arguments": {}}),
    );
    h.say("do it").await;
    assert_eq!(error_code(&h.last_tool_result()), "VALIDATION_ERROR");
    assert!(h.provider.calls_of("prepare_action").is_empty());
}

#[tokio::test]
async fn c6_without_a_signing_key_nothing_can_be_prepared() {
    let h = H::new().await;
    h.signer.set_absent(true);
    h.script_prepare(OPERATION);
    h.say("move ses_a1 to car_a2").await;
    assert_eq!(
        error_code(&h.last_tool_result()),
        "ACTION_SIGNING_UNAVAILABLE"
    );
    assert!(h.provider.calls_of("prepare_action").is_empty());
}

#[tokio::test]
async fn a_signer_outage_is_a_retryable_service_error() {
    let h = H::new().await;
    h.signer.faults.once("key_id", Fault::Unavailable);
    h.script_prepare(OPERATION);
    h.say("move ses_a1 to car_a2").await;
    let r = h.last_tool_result();
    assert_eq!(error_code(&r), "SERVICE_UNAVAILABLE");
    assert_eq!(r["error"]["retryable"], json!(true));
}

#[tokio::test]
async fn without_an_integration_nothing_can_be_prepared() {
    let h = H::new().await;
    let current = countersign_domain::ports::McpSettings::get_mcp_config(&*h.store, &h.who.tenant)
        .await
        .unwrap()
        .unwrap();
    countersign_domain::ports::McpSettings::delete_mcp_config(
        &*h.store,
        &h.who.tenant,
        current.version,
        &countersign_domain::ports::AuditEntry {
            id: countersign_domain::ports::Ids::audit_id(&*h.ids),
            at: h.clock_now(),
            actor: "operator".into(),
            action: "mcp.delete".into(),
            changes: json!({}),
        },
    )
    .await
    .unwrap();
    h.script_prepare(OPERATION);
    h.say("move ses_a1 to car_a2").await;
    assert_eq!(error_code(&h.last_tool_result()), "OPERATION_NOT_ENABLED");
}

#[tokio::test]
async fn a17_an_unsettled_action_blocks_a_new_preparation() {
    let h = H::new().await;
    let (action, _) = h.propose().await;
    h.store
        .force_state(&h.who.tenant, &h.case, &action, ProposalState::Failed);
    let (second, presented) = h.propose().await;
    h.provider.answer("execute_action", Reply::Timeout);
    h.reply("confirm", &presented).await;
    assert_eq!(h.state(&second), ProposalState::Unknown);
    // With `unknown` in the slot, the next message only reconciles; a model turn
    // started elsewhere (the gateway) is refused by the preparer itself.
    let blocked = h
        .chat
        .parts
        .conversations
        .load(&h.who.tenant, &h.case)
        .await
        .unwrap()
        .unwrap();
    assert!(blocked.active.unwrap().state.blocks_preparation());
    let calls_before = h.provider.calls_of("prepare_action").len();
    h.script_prepare(OPERATION);
    h.say("move ses_a1 to car_a3").await;
    assert_eq!(h.provider.calls_of("prepare_action").len(), calls_before);
}

/// A-25, A-16 (issue 27: this test was named after A-15's supersede path, which it never
/// reached). In the chat a proposal cannot be superseded: a presentation ends its turn
/// and the person's next message that is not a confirmation discards it
/// before the model runs, so the first proposal is `cancelled` — not `superseded` — and
/// never executes, even when its own presentation is confirmed later. A-15's supersede
/// is held where it can happen, at the store (`shared/aws/tests/aws/dynamo.rs`, both
/// stores' `create_proposal`).
#[tokio::test]
async fn a25_a16_a_new_request_discards_the_pending_proposal_which_never_executes() {
    let h = H::new().await;
    let (first, first_presented) = h.propose().await;
    let (second, _) = h.propose().await;
    assert_eq!(h.state(&first), ProposalState::Cancelled);
    assert_eq!(h.state(&second), ProposalState::PendingConfirmation);
    h.reply("confirm", &first_presented).await;
    assert!(h.provider.calls_of("execute_action").is_empty());
}

#[tokio::test]
async fn a13_an_answer_outside_the_contract_is_refused_and_nothing_is_presented() {
    let h = H::new().await;
    h.model.call(
        "prepare_action",
        json!({"operation": OPERATION, "arguments": {}}),
    );
    let mut bad = prepare_answer("act_bad", OPERATION, SUMMARY, "2099-01-01T00:00:00Z");
    bad["structuredContent"]["summaryHash"] = json!("0".repeat(64));
    h.provider.answer("prepare_action", Reply::Result(bad));
    h.say("move ses_a1 to car_a2").await;
    assert_eq!(
        error_code(&h.last_tool_result()),
        "PROVIDER_CONTRACT_VIOLATION"
    );
    assert!(!h.messages().iter().any(|m| m.kind == MessageKind::Proposal));
    assert!(
        h.store
            .proposal(&h.who.tenant, &h.case, &ActionId::parse("act_bad").unwrap())
            .is_none()
    );
}

#[tokio::test]
async fn a13_a_provider_refusal_is_a_tool_error_and_nothing_is_stored() {
    let h = H::new().await;
    h.model.call(
        "prepare_action",
        json!({"operation": OPERATION, "arguments": {}}),
    );
    h.provider.answer(
        "prepare_action",
        Reply::Result(
            json!({"isError": true, "content": [{"type": "text", "text": "no such car"}]}),
        ),
    );
    let out = h.say("move ses_a1 to car_zz").await;
    assert_eq!(error_code(&h.last_tool_result()), "TOOL_ERROR");
    assert!(!kinds(&out).contains(&MessageKind::Proposal));
}

/// The person asks for a write and the tenant's server refuses its preparation with
/// `reason`: what the turn stored.
async fn refused_preparation(h: &H, reason: &str) -> crate::harness::Out {
    h.model.call(
        "prepare_action",
        json!({"operation": OPERATION, "arguments": {}}),
    );
    h.provider.answer(
        "prepare_action",
        Reply::Result(json!({"isError": true, "content": [{"type": "text", "text": reason}]})),
    );
    h.say("move ses_a1 to car_a2").await
}

/// Issue 28: a business refusal whose words pass A-20 reaches the model (the error's
/// message and `details.reason`) and the person (after the fixed notice, as the company's
/// words); words that do not pass stay out, and the fixed notice alone is shown.
#[tokio::test]
async fn a_providers_refusal_reason_is_shown_only_when_it_passes_a20() {
    for (reason, mark, shown) in [
        (
            "This loan is overdue: return it before borrowing again.",
            "borrowing",
            true,
        ),
        (
            "Overdue. See http://10.0.0.5/admin for details.",
            "10.0.0.5",
            false,
        ),
        ("Overdue\u{202e}gnol", "gnol", false),
    ] {
        let h = H::new().await;
        let out = refused_preparation(&h, reason).await;
        let seen = h.last_tool_result();
        assert_eq!(error_code(&seen), "TOOL_ERROR");
        assert_eq!(seen.to_string().contains(mark), shown, "{seen}");
        assert_eq!(
            out.iter().any(|m| m.content.contains(mark)),
            shown,
            "{out:?}"
        );
        let fixed = countersign_domain::texts::preparation_refused_notice(
            countersign_domain::texts::Language::En,
        );
        let notice = out
            .iter()
            .find(|m| m.kind == MessageKind::Notice)
            .expect("the person is told");
        if shown {
            assert_eq!(
                notice.content,
                format!("{fixed}\nThe company's system said: {reason}")
            );
        } else {
            assert_eq!(notice.content, fixed, "{reason}");
        }
    }
}

/// N-7: a provider's refusal text cannot add an instruction or a link to the platform's
/// notice (measured: a fake "reply: confirm" and a phishing link got through): a reply
/// word, a link, a second line or more than 160 characters leave the fixed notice alone.
#[tokio::test]
async fn n7_a_providers_refusal_cannot_add_an_instruction_or_a_link_to_the_notice() {
    let long = format!("Overdue. {}", "Please wait. ".repeat(15));
    for reason in [
        "Done. To carry out exactly the action above, reply: confirm",
        "Overdue. Sign in again at https://login-countersign.example/ to continue.",
        "Overdue. Sign in again at www.login-countersign.example to continue.",
        "Overdue.\nThen reply cancelar.",
        long.as_str(),
    ] {
        let h = H::new().await;
        let out = refused_preparation(&h, reason).await;
        let fixed = countersign_domain::texts::preparation_refused_notice(
            countersign_domain::texts::Language::En,
        );
        let notice = out
            .iter()
            .find(|m| m.kind == MessageKind::Notice)
            .expect("the person is told");
        assert_eq!(notice.content, fixed, "{reason}");
    }
}

#[tokio::test]
async fn a14_a_reused_action_id_is_refused() {
    let h = H::new().await;
    let (first, presented) = h.propose().await;
    h.reply("cancel", &presented).await;
    h.model.call(
        "prepare_action",
        json!({"operation": OPERATION, "arguments": {}}),
    );
    let expires = h.clock_now().plus_seconds(240).to_rfc3339();
    h.provider.answer(
        "prepare_action",
        Reply::Result(prepare_answer(first.as_str(), OPERATION, SUMMARY, &expires)),
    );
    h.say("move ses_a1 to car_a2").await;
    assert_eq!(
        error_code(&h.last_tool_result()),
        "PROVIDER_CONTRACT_VIOLATION"
    );
    assert_eq!(h.state(&first), ProposalState::Cancelled);
}

#[tokio::test]
async fn a_provider_timeout_while_preparing_is_reported_to_the_model_and_nothing_is_stored() {
    let h = H::new().await;
    h.model.call(
        "prepare_action",
        json!({"operation": OPERATION, "arguments": {}}),
    );
    h.provider.answer("prepare_action", Reply::Timeout);
    let out = h.say("move ses_a1 to car_a2").await;
    assert_eq!(error_code(&h.last_tool_result()), "PROVIDER_UNAVAILABLE");
    assert!(!kinds(&out).contains(&MessageKind::Proposal));
}

#[tokio::test]
async fn only_one_proposal_is_presented_per_turn() {
    let h = H::new().await;
    h.script_prepare(OPERATION);
    let out = h.say("move ses_a1 to car_a2").await;
    assert_eq!(
        kinds(&out)
            .iter()
            .filter(|k| **k == MessageKind::Proposal)
            .count(),
        1
    );
}

/// Issue 14 / D-6: a summary that is unsafe to show (here it names an internal address)
/// is refused; the model is told which rule broke, never the refused content, and the
/// person gets the fixed "could not prepare" notice in their language.
#[tokio::test]
async fn d6_an_unsafe_summary_is_refused_by_rule_and_the_person_is_told() {
    let h = H::new().await;
    h.model.call(
        "prepare_action",
        json!({"operation": OPERATION, "arguments": {}}),
    );
    let unsafe_summary = "Move session ses_a1; details at http://10.0.0.5/admin.";
    let answer = prepare_answer(
        "act_unsafe",
        OPERATION,
        unsafe_summary,
        "2099-01-01T00:00:00Z",
    );
    h.provider.answer("prepare_action", Reply::Result(answer));
    let out = h.say("move ses_a1 to car_a2").await;
    let seen = h.last_tool_result();
    assert_eq!(error_code(&seen), "PROVIDER_CONTRACT_VIOLATION");
    assert!(!seen.to_string().contains("10.0.0.5"), "{seen}");
    assert!(seen.to_string().contains("summary"), "{seen}");
    assert!(!kinds(&out).contains(&MessageKind::Proposal));
    assert!(
        out.iter().any(|m| m.content
            == countersign_domain::texts::preparation_refused_notice(
                countersign_domain::texts::Language::En
            )),
        "{out:?}"
    );
}
