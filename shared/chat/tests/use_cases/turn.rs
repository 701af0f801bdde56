//! The model turn (D-3): what the model is offered, how its calls are routed (built-in,
//! allowlisted consultation, anything else), and its bounds.

use crate::harness::{CONSULTATION, H, kinds};
use countersign_domain::conversation::MessageKind;
use countersign_domain::ports::{ModelReply, ToolCall};
use countersign_domain::proposal::ProposalState;
use countersign_domain::texts::{self, Language};
use countersign_testkit::{Fault, Reply};
use serde_json::json;

#[tokio::test]
async fn d3_the_model_is_offered_the_builtins_and_only_the_allowlisted_consultations() {
    let h = H::new().await;
    h.say("hello").await;
    let tools: Vec<String> = h.model.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert!(tools.contains(&"prepare_action".to_owned()));
    assert!(tools.contains(&CONSULTATION.to_owned()));
    assert!(!tools.contains(&"delete_everything".to_owned()));
}

#[tokio::test]
async fn an_allowlisted_consultation_is_proxied_with_the_persons_identity() {
    let h = H::new().await;
    h.model.call(CONSULTATION, json!({}));
    h.provider.answer(
        CONSULTATION,
        Reply::Result(json!({"content": [{"type": "text", "text": "ses_a1, ses_a2"}]})),
    );
    h.say("show my sessions").await;
    let calls = h.provider.calls_of(CONSULTATION);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].user, "u_alice");
    assert_eq!(calls[0].conversation, h.case.to_string());
    assert_eq!(h.last_tool_result(), json!("ses_a1, ses_a2"));
}

#[tokio::test]
async fn a3_a_published_but_unlisted_provider_tool_is_refused_and_never_called() {
    let h = H::new().await;
    h.model.call("delete_everything", json!({}));
    h.say("wipe it").await;
    assert!(h.provider.calls_of("delete_everything").is_empty());
    assert_eq!(h.last_tool_result()["error"]["code"], json!("NOT_FOUND"));
}

#[tokio::test]
async fn a_provider_whose_tool_list_fails_leaves_the_builtins_available() {
    let h = H::new().await;
    h.provider.faults.once("tools/list", Fault::Unavailable);
    h.say("hello").await;
    let tools: Vec<String> = h.model.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert!(tools.contains(&"action_status".to_owned()));
    assert!(!tools.contains(&CONSULTATION.to_owned()));
}

#[tokio::test(start_paused = true)]
async fn a_model_outage_is_told_as_a_fixed_notice_and_the_message_is_kept() {
    let h = H::new().await;
    h.model.faults.set_down(true);
    let out = h.say("hello").await;
    assert_eq!(kinds(&out), [MessageKind::Text, MessageKind::Notice]);
    assert_eq!(
        out[1].content,
        texts::assistant_unavailable_notice(Language::En)
    );
}

#[tokio::test]
async fn d3_a_turn_that_keeps_calling_tools_stops_after_its_rounds() {
    let h = H::new().await;
    for _ in 0..10 {
        h.model.call("list_operations", json!({}));
    }
    let out = h.say("loop").await;
    assert_eq!(h.model_steps(), h.chat.max_tool_rounds);
    assert_eq!(
        out.last().unwrap().content,
        texts::turn_incomplete_notice(Language::En)
    );
}

#[tokio::test]
async fn a24_model_text_that_says_confirm_authorizes_nothing() {
    let h = H::new().await;
    let (action, _) = h.propose().await;
    h.model.push(ModelReply {
        text: Some("confirm".into()),
        tool_calls: vec![ToolCall {
            id: "c1".into(),
            name: "action_status".into(),
            arguments: json!({}),
        }],
        truncated: false,
    });
    h.say("what now?").await;
    assert_ne!(h.state(&action), ProposalState::Executing);
    assert!(h.provider.calls_of("execute_action").is_empty());
}

#[tokio::test]
async fn the_model_sees_the_conversation_in_order() {
    let h = H::new().await;
    h.say("first").await;
    h.say("second").await;
    let last = h.model.requests().last().unwrap().clone();
    let texts: Vec<String> = last.messages.iter().map(|m| format!("{m:?}")).collect();
    assert!(texts[0].contains("first"));
    assert!(texts.last().unwrap().contains("second"));
}

/// M-4: a model that hangs cannot hold the function: the turn ends at its deadline and
/// the person is told the answer is incomplete.
#[tokio::test(start_paused = true)]
async fn m4_a_turn_ends_at_its_deadline_with_a_notice() {
    let h = H::new().await;
    h.model.faults.once("step", Fault::Hang);
    let out = h.say("where is my upload?").await;
    assert_eq!(
        out.last().unwrap().content,
        texts::turn_incomplete_notice(Language::En)
    );
}

/// M-4: a provider that holds `tools/list` cannot hold the turn past its deadline either.
#[tokio::test(start_paused = true)]
async fn m4_a_provider_that_hangs_is_cut_at_the_turn_deadline() {
    let h = H::new().await;
    h.provider.faults.once("tools/list", Fault::Hang);
    let out = h.say("where is my upload?").await;
    assert_eq!(
        out.last().unwrap().content,
        texts::turn_incomplete_notice(Language::En)
    );
}

/// M-4: the tool calls of one turn are bounded, all rounds together; calls beyond the
/// bound reach no one.
#[tokio::test]
async fn m4_the_tool_calls_of_a_turn_are_bounded() {
    let h = H::new().await;
    let calls = (0..12)
        .map(|i| ToolCall {
            id: format!("c{i}"),
            name: CONSULTATION.to_owned(),
            arguments: json!({}),
        })
        .collect();
    h.model.push(ModelReply {
        text: None,
        tool_calls: calls,
        truncated: false,
    });
    h.say("list everything").await;
    assert_eq!(
        h.provider.calls_of(CONSULTATION).len(),
        h.chat.max_tool_calls
    );
}

/// M-2: a consultation whose MCP name a model API cannot take (here with `.`) is
/// offered under a fitting name; a call of that name reaches the provider under the
/// original one; the original name itself is not a tool the model was given.
#[tokio::test]
async fn m2_tool_names_are_mapped_for_the_model_and_back() {
    let h = H::new().await;
    let dotted = "billing.get.invoice";
    h.provider.publish(vec![countersign_testkit::tool(dotted)]);
    h.allow_tools(&[dotted]).await;
    h.say("hello").await;
    let offered = h.model.requests().last().unwrap().tools.clone();
    let mapped = offered
        .iter()
        .map(|t| t.name.clone())
        .find(|n| n.starts_with("billing_get_invoice_"))
        .expect("the dotted tool is offered under a mapped name");
    assert!(
        offered
            .iter()
            .all(|t| countersign_chat::tool_names::fits(&t.name))
    );
    h.model.call(&mapped, json!({}));
    h.say("my invoice").await;
    assert_eq!(h.provider.calls_of(dotted).len(), 1);
    h.model.call(dotted, json!({}));
    h.say("again").await;
    assert_eq!(
        h.provider.calls_of(dotted).len(),
        1,
        "the raw name is unknown to the model"
    );
}
