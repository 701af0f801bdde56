//! The rules around any model (M-2 … M-5), held on the queued model: what it is told,
//! what it is never given, how its failures are retried and told, and its bounds.

use crate::harness::{CONSULTATION, H, SERVICE_TOKEN, kinds};
use countersign_domain::conversation::MessageKind;
use countersign_domain::ports::{ModelError, ModelMessage, ModelReply, ToolCall};
use countersign_domain::texts::{self, Language};
use countersign_testkit::Reply;
use serde_json::{Value, json};

fn reply(text: Option<&str>, calls: Vec<ToolCall>, truncated: bool) -> ModelReply {
    ModelReply {
        text: text.map(str::to_owned),
        tool_calls: calls,
        truncated,
    }
}

fn call(name: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: format!("call_{name}"),
        name: name.to_owned(),
        arguments,
    }
}

/// M-3, S-4: the system text is the platform's fixed text in the case's language — a
/// Portuguese conversation's turn gets the Portuguese text (the two differ, so the wrong
/// one cannot pass).
#[tokio::test]
async fn m3_s4_the_model_is_given_the_fixed_system_text_in_the_cases_language() {
    assert_ne!(
        texts::model_system_text(Language::En),
        texts::model_system_text(Language::Pt)
    );
    for language in [Language::En, Language::Pt] {
        let h = H::new().await.in_language(language).await;
        h.say("hello").await;
        let request = &h.model.requests()[0];
        assert_eq!(request.system, texts::model_system_text(language));
        assert_eq!(request.max_output_tokens, h.chat.max_output_tokens);
    }
}

/// M-3: across a whole write (prepare, confirm, execute, result), nothing the model is
/// given holds the service token or a proof.
#[tokio::test]
async fn m3_the_model_never_receives_a_proof_or_a_token() {
    let h = H::new().await;
    let (_, presented) = h.propose().await;
    h.reply("confirm", &presented).await;
    h.say("what happened?").await;
    let proof = h.provider.calls_of("execute_action")[0]
        .proof
        .clone()
        .expect("a proof was sent");
    let seen = format!("{:?}", h.model.requests());
    assert!(!seen.contains(SERVICE_TOKEN));
    // Neither the whole proof nor its signature.
    assert!(!seen.contains(&proof));
    assert!(!seen.contains(proof.rsplit('.').next().unwrap()));
}

/// The conversation the model reads shows the pending proposal with its state, marked
/// as the platform's, and leaves out the confirm instructions.
#[tokio::test]
async fn the_model_sees_each_proposal_with_its_state() {
    let h = H::new().await;
    h.propose().await;
    h.say("anything else?").await;
    let last = h.model.requests().pop().unwrap();
    let assistant: Vec<&str> = last
        .messages
        .iter()
        .filter_map(|m| match m {
            ModelMessage::Assistant { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        assistant
            .iter()
            .any(|t| t.contains("operation reassign_session_car, state pending_confirmation")),
        "{assistant:?}"
    );
    let instructions = texts::confirm_instructions(Language::En);
    assert!(assistant.iter().all(|t| !t.contains(instructions)));
}

/// M-5: a throttled step is asked again; the person gets the answer, not a notice.
#[tokio::test(start_paused = true)]
async fn m5_a_throttled_step_is_retried() {
    let h = H::new().await;
    h.model
        .fail_at(0, ModelError::Throttled("429".into()))
        .say("here you are");
    let out = h.say("hello").await;
    assert_eq!(out.last().unwrap().content, "here you are");
    assert_eq!(h.model_steps(), 2);
}

/// M-5: a malformed answer (or a refused request) is not retried: a fixed notice.
#[tokio::test(start_paused = true)]
async fn m5_a_malformed_answer_is_not_retried_and_told_as_a_notice() {
    let h = H::new().await;
    h.model
        .fail_at(0, ModelError::Malformed("no choices".into()));
    let out = h.say("hello").await;
    assert_eq!(kinds(&out), [MessageKind::Text, MessageKind::Notice]);
    assert_eq!(
        out[1].content,
        texts::assistant_unavailable_notice(Language::En)
    );
    assert_eq!(h.model_steps(), 1);
}

/// M-5: retries are bounded; past them the person is told, and their message is kept.
#[tokio::test(start_paused = true)]
async fn m5_a_model_that_stays_down_is_told_as_a_fixed_notice() {
    let h = H::new().await;
    for _ in 0..5 {
        h.model.fail_at(0, ModelError::Unavailable("503".into()));
    }
    let out = h.say("hello").await;
    assert_eq!(kinds(&out), [MessageKind::Text, MessageKind::Notice]);
    assert_eq!(h.model_steps(), 3);
}

/// M-5: a step that fails after a round of tool calls is retried without calling the
/// provider again: the earlier results travel in the request.
#[tokio::test(start_paused = true)]
async fn m5_a_retry_never_repeats_a_provider_call() {
    let h = H::new().await;
    h.model.call(CONSULTATION, json!({}));
    h.model.fail_at(1, ModelError::Unavailable("503".into()));
    h.model.say("you have two sessions");
    h.provider.answer(
        CONSULTATION,
        Reply::Result(json!({"content": [{"type": "text", "text": "ses_a1, ses_a2"}]})),
    );
    let out = h.say("my sessions").await;
    assert_eq!(out.last().unwrap().content, "you have two sessions");
    assert_eq!(h.provider.calls_of(CONSULTATION).len(), 1);
    assert_eq!(h.model_steps(), 3);
}

/// M-4: an answer cut at the output bound keeps its text, runs none of its calls, and
/// the person is told it was cut.
#[tokio::test]
async fn m4_an_answer_cut_at_the_output_bound_runs_no_call() {
    let h = H::new().await;
    h.model.push(reply(
        Some("Your sessions are"),
        vec![call(CONSULTATION, json!({}))],
        true,
    ));
    let out = h.say("my sessions").await;
    assert!(h.provider.calls_of(CONSULTATION).is_empty());
    assert_eq!(
        kinds(&out),
        [MessageKind::Text, MessageKind::Text, MessageKind::Notice]
    );
    assert_eq!(out[1].content, "Your sessions are");
    assert_eq!(out[2].content, texts::answer_truncated_notice(Language::En));
}

/// M-2: arguments that are not a JSON object (a model's broken JSON is kept as a
/// string) reach no provider; the model is told why.
#[tokio::test]
async fn m2_arguments_that_are_not_an_object_reach_no_one() {
    let h = H::new().await;
    for arguments in [json!("{\"sessionId\": "), json!([1]), json!(null)] {
        h.model
            .push(reply(None, vec![call(CONSULTATION, arguments)], false));
        h.say("my sessions").await;
        assert_eq!(h.last_tool_result()["error"]["code"], "VALIDATION_ERROR");
    }
    assert!(h.provider.calls_of(CONSULTATION).is_empty());
}

/// A-23 with any model: text claiming a change, without a preparation, is only text;
/// nothing is prepared or executed.
#[tokio::test]
async fn a23_a_model_that_claims_a_change_without_preparing_changes_nothing() {
    let h = H::new().await;
    h.model
        .say("Done, I changed it: your session is now on the GR86.");
    let out = h.say("move ses_a1 to car_a2").await;
    assert_eq!(kinds(&out), [MessageKind::Text, MessageKind::Text]);
    assert!(h.provider.calls_of("prepare_action").is_empty());
    assert!(h.provider.calls_of("execute_action").is_empty());
}

/// Decision 0024: `list_operations` gives the model each operation's argument schema,
/// taken from the tenant's tool of the same name, which stays uncallable (H-2).
#[tokio::test]
async fn list_operations_gives_each_operations_argument_schema() {
    let h = H::new().await;
    let schema = json!({"type": "object", "properties": {"sessionId": {"type": "string"}, "carId": {"type": "string"}}, "required": ["sessionId", "carId"]});
    let mut write = countersign_testkit::tool(crate::harness::OPERATION);
    write
        .descriptor
        .insert("inputSchema".into(), schema.clone());
    h.provider
        .publish(vec![countersign_testkit::tool(CONSULTATION), write]);
    h.model.call("list_operations", json!({}));
    h.say("what can you change?").await;
    let items = &h.last_tool_result()["data"]["items"];
    assert_eq!(items[0]["operation"], crate::harness::OPERATION);
    assert_eq!(items[0]["arguments"], schema);
    // The operation's own tool is not offered, nor callable.
    let offered = &h.model.requests()[0].tools;
    assert!(offered.iter().all(|t| t.name != crate::harness::OPERATION));
    h.model.call(
        crate::harness::OPERATION,
        json!({"sessionId": "ses_a1", "carId": "car_a2"}),
    );
    h.say("just do it").await;
    assert!(h.provider.calls_of(crate::harness::OPERATION).is_empty());
}
