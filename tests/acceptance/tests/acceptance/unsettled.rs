//! Unsettled actions on the emulator, with the messages function as its own process: the
//! confirm write indexes the action for its tenant, the transition that settles it
//! removes it, and the administrator settles one the provider never answered for.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use countersign_acceptance::{Stack, texts};
use serde_json::json;

const UNCERTAIN: &str = "The outcome of the action is uncertain";

/// A completed action never shows as unsettled; one whose answer was lost does, until the
/// administrator records its outcome: the person is told, the conversation unblocked, the
/// record audited, and the provider is not called again.
#[tokio::test]
async fn an_action_the_provider_never_settled_is_listed_and_settled_by_the_administrator() {
    let s = Stack::start().await;
    let t = s.token("u_alice");
    let case = s.create_case(&t).await;
    let p = s.propose(&t, &case, "ses_a1", "car_a2").await;
    s.say(&t, &case, "confirm", p["id"].as_str()).await;
    let (st, listed) = s.admin("GET", "actions/unsettled", None).await;
    assert_eq!(
        (st, &listed["items"]),
        (200, &json!([])),
        "a completed action is settled"
    );

    let p = s.propose(&t, &case, "ses_a2", "car_a3").await;
    s.fault(json!({"fault": "drop_after_execute"}));
    let m = s.say(&t, &case, "confirm", p["id"].as_str()).await;
    assert!(texts(&m).contains(UNCERTAIN), "{m:?}");
    // The person asks again; the provider's status answer is garbage: still unknown, and
    // that answer is what the administrator sees.
    s.fault(json!({"fault": "garbage"}));
    s.say(&t, &case, "did it work?", None).await;
    s.fault(json!({"fault": "reset"}));
    let (_, listed) = s.admin("GET", "actions/unsettled", None).await;
    let items = listed["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{listed:#}");
    let item = &items[0];
    assert_eq!(
        (&item["caseId"], &item["state"], &item["settleable"]),
        (&json!(case), &json!("unknown"), &json!(true))
    );
    assert_eq!(item["userId"], "u_alice");
    assert_eq!(
        item["lastStatusAnswer"]["answer"], "no valid answer",
        "{item:#}"
    );
    let action = item["actionId"].as_str().unwrap().to_owned();
    let calls = s.stats()["executeCalls"].clone();

    let path = format!("actions/{action}/settlement");
    let (st, err) = s
        .admin(
            "POST",
            &path,
            Some(json!({"caseId": case, "outcome": "completed", "reason": ""})),
        )
        .await;
    assert_eq!((st, &err["error"]["field"]), (400, &json!("reason")));
    let body = json!({"caseId": case, "outcome": "completed", "reason": "the session shows car_a3 in our database"});
    let (st, settled) = s.admin("POST", &path, Some(body.clone())).await;
    assert_eq!(
        (st, &settled["state"]),
        (200, &json!("completed")),
        "{settled}"
    );
    let (_, listed) = s.admin("GET", "actions/unsettled", None).await;
    assert_eq!(listed["items"], json!([]));
    let history = s.history(&t, &case).await;
    let last = history.last().unwrap();
    assert_eq!(last["kind"], "notice");
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .contains("it was completed"),
        "{last}"
    );
    let (_, audit) = s.admin("GET", "audit", None).await;
    assert_eq!(audit["items"][0]["action"], "action.settle");
    assert_eq!(
        audit["items"][0]["changes"]["reason"],
        "the session shows car_a3 in our database"
    );
    assert_eq!(s.stats()["executeCalls"], calls, "nothing executed again");
    // Unblocked: a new action can be prepared in the same conversation.
    s.propose(&t, &case, "ses_a1", "car_a3").await;
    // Settled once only.
    let (st, _) = s.admin("POST", &path, Some(body)).await;
    assert_eq!(st, 404);
    s.finish();
}
