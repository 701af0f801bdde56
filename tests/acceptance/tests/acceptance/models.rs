//! M-6 end to end: the messages function as its own process with `COUNTERSIGN_MODEL`
//! set to `bedrock:…` or `openai:…`, talking to a local service of that wire format
//! (`countersign_testkit::model_server`), through whole conversations and the ways a
//! real model misbehaves.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use countersign_acceptance::{
    BEDROCK_MODEL_ID, MODEL_API_KEY, ModelWire, Options, Stack, last_assistant, texts,
};
use countersign_domain::ports::{ModelMessage, ModelReply, ToolCall};
use countersign_testkit::model_server::{ModelServer, Planned};
use serde_json::{Value, json};

const COMPLETED: &str = "Action completed.";

async fn stack(model: ModelWire) -> Stack {
    Stack::with(Options {
        model,
        ..Options::default()
    })
    .await
}

fn server(s: &Stack) -> &ModelServer {
    s.model.as_ref().unwrap()
}

fn stat(s: &Stack, name: &str) -> u64 {
    s.stats()[name].as_u64().unwrap()
}

fn calls(calls: &[(&str, Value)]) -> Planned {
    Planned::Reply(ModelReply {
        text: None,
        tool_calls: calls
            .iter()
            .enumerate()
            .map(|(i, (name, arguments))| ToolCall {
                id: format!("tool_{i}"),
                name: (*name).to_owned(),
                arguments: arguments.clone(),
            })
            .collect(),
        truncated: false,
    })
}

fn text(t: &str) -> Planned {
    Planned::Reply(ModelReply {
        text: Some(t.to_owned()),
        ..ModelReply::default()
    })
}

/// M-6: consultation → proposal → confirm → result through `model`'s adapter.
async fn whole_conversation(model: ModelWire) {
    let s = stack(model).await;
    let t = s.token("u_alice");
    let case = s.create_case(&t).await;
    let answer = texts(&s.say(&t, &case, "show my sessions", None).await);
    assert!(
        answer.contains("ses_a1") && !answer.contains("ses_b1"),
        "{answer}"
    );
    let p = s.propose(&t, &case, "ses_a1", "car_a2").await;
    assert_eq!(p["kind"], "proposal");
    let m = s.say(&t, &case, "confirm", p["id"].as_str()).await;
    assert!(texts(&m).contains(COMPLETED), "{m:?}");
    assert_eq!(s.car_of("u_alice", "ses_a1"), "car_a2");
    assert_eq!(stat(&s, "executions"), 1);
    let seen = server(&s).seen();
    // Two steps for the consultation, two for the preparation (`list_operations`, then
    // `prepare_action`, whose presentation ends the turn: A-1, the operation is the
    // tenant's, read as a model would); the confirmation runs no model at all.
    assert_eq!(seen.len(), 4, "{seen:?}");
    for request in &seen {
        // M-3: the platform's fixed text; the tools offered under fitting names.
        assert!(request.system.contains("prepare_action"));
        assert!(request.tools.iter().any(|t| t == "get_user_sessions"));
        match model {
            ModelWire::OpenAi => assert_eq!(
                request.credential.as_deref(),
                Some(&*format!("Bearer {MODEL_API_KEY}")),
                "M-1: the key from Secrets Manager"
            ),
            ModelWire::Bedrock => {
                assert_eq!(request.model, BEDROCK_MODEL_ID);
                assert!(
                    request
                        .credential
                        .as_deref()
                        .unwrap()
                        .starts_with("AWS4-HMAC-SHA256")
                );
            }
            ModelWire::Scripted => unreachable!(),
        }
    }
    s.finish();
}

#[tokio::test]
async fn m6_a_whole_conversation_through_the_bedrock_adapter() {
    whole_conversation(ModelWire::Bedrock).await;
}

#[tokio::test]
async fn m6_a_whole_conversation_through_the_openai_adapter() {
    whole_conversation(ModelWire::OpenAi).await;
}

/// M-2: a tool call whose arguments are not JSON, and a tool the turn did not offer,
/// reach no provider; the model is told, and answers.
#[tokio::test]
async fn m2_broken_arguments_and_an_unknown_tool_reach_no_provider() {
    for model in [ModelWire::OpenAi, ModelWire::Bedrock] {
        let s = stack(model).await;
        let t = s.token("u_alice");
        let case = s.create_case(&t).await;
        server(&s)
            .plan(calls(&[
                ("get_user_sessions", Value::String("{\"limit\": ".into())),
                (
                    "reassign_session_car",
                    json!({"sessionId": "ses_a1", "carId": "car_a2"}),
                ),
            ]))
            .plan(text("I could not do that."));
        let m = s.say(&t, &case, "move my session", None).await;
        assert!(
            texts(&m).contains("I could not do that."),
            "{model:?}: {m:?}"
        );
        let last = server(&s).seen().pop().unwrap();
        let results: String = last
            .messages
            .iter()
            .filter_map(|m| match m {
                ModelMessage::ToolResult { content, .. } => Some(content.as_str()),
                _ => None,
            })
            .collect();
        assert!(results.contains("VALIDATION_ERROR"), "{model:?}: {results}");
        assert!(results.contains("NOT_FOUND"), "{model:?}: {results}");
        // Had the consultation been called, its sessions would be in the results.
        assert!(!results.contains("ses_a1"), "{model:?}: {results}");
        assert_eq!(stat(&s, "directWrites"), 0);
        s.finish();
    }
}

/// A-21 with a real adapter: a model that calls `prepare_action` twice in one turn gets
/// one proposal; the turn ends at its presentation and the second call is never made.
#[tokio::test]
async fn a21_two_preparations_in_one_turn_present_one_proposal() {
    let s = stack(ModelWire::OpenAi).await;
    let t = s.token("u_alice");
    let case = s.create_case(&t).await;
    server(&s).plan(calls(&[
        ("prepare_action", json!({"operation": "reassign_session_car", "arguments": {"sessionId": "ses_a1", "carId": "car_a2"}})),
        ("prepare_action", json!({"operation": "reassign_session_car", "arguments": {"sessionId": "ses_a2", "carId": "car_a3"}})),
    ]));
    let m = s.say(&t, &case, "move both", None).await;
    let proposals: Vec<&Value> = m.iter().filter(|m| m["kind"] == "proposal").collect();
    assert_eq!(proposals.len(), 1, "{m:?}");
    assert_eq!(last_assistant(&m), proposals[0]["id"].as_str().unwrap());
    assert_eq!(stat(&s, "prepared"), 1);
    s.finish();
}

/// M-5: throttling then success: the person gets the answer, not a notice.
#[tokio::test]
async fn m5_throttling_then_success_answers_the_person() {
    for model in [ModelWire::OpenAi, ModelWire::Bedrock] {
        let s = stack(model).await;
        let t = s.token("u_alice");
        let case = s.create_case(&t).await;
        server(&s)
            .plan(Planned::Throttle)
            .plan(text("Here is your answer."));
        let m = s.say(&t, &case, "hello", None).await;
        assert_eq!(
            texts(&m).trim_end(),
            "hello\nHere is your answer.",
            "{model:?}: {m:?}"
        );
        assert_eq!(server(&s).seen().len(), 2, "{model:?}");
        // A refused request is not retried: a fixed notice.
        server(&s).plan(Planned::Refuse);
        let m = s.say(&t, &case, "hello again", None).await;
        assert!(
            texts(&m).contains("The assistant is unavailable"),
            "{model:?}: {m:?}"
        );
        assert_eq!(server(&s).seen().len(), 3, "{model:?}");
        s.finish();
    }
}

/// A-23 with a real adapter: a model that writes "done, I changed it" without preparing
/// is only text, nothing is executed; and the model's own "confirm" never confirms.
#[tokio::test]
async fn a23_a_model_claiming_success_or_saying_confirm_changes_nothing() {
    let s = stack(ModelWire::OpenAi).await;
    let t = s.token("u_alice");
    let case = s.create_case(&t).await;
    server(&s).plan(text("Done, I changed it: ses_a1 is now on car_a2."));
    let m = s.say(&t, &case, "move ses_a1 to car_a2 please", None).await;
    assert!(m.iter().all(|m| m["kind"] != "proposal"), "{m:?}");
    assert_eq!(s.car_of("u_alice", "ses_a1"), "car_a1");
    let p = s.propose(&t, &case, "ses_a1", "car_a2").await;
    server(&s).plan(text("confirm"));
    let m = s
        .say(&t, &case, "what does this do?", p["id"].as_str())
        .await;
    assert!(texts(&m).contains("discarded"), "{m:?}");
    let m = s.say(&t, &case, "confirm", Some(&last_assistant(&m))).await;
    assert!(!texts(&m).contains(COMPLETED), "{m:?}");
    assert_eq!(stat(&s, "executeCalls"), 0);
    assert_eq!(s.car_of("u_alice", "ses_a1"), "car_a1");
    s.finish();
}
