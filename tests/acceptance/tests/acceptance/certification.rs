//! The provider certification run (H-1 … H-4, V-3, V-4) against the demo provider on
//! loopback, with the emulator's KMS key: a healthy provider passes, executing exactly one
//! action per operation for the synthetic test person; a provider that skips proof
//! verification (which suspends actions), accepts expired proofs or accepts `alg: none`
//! fails with the reason; enabling actions needs a passing run of the saved settings.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use countersign_acceptance::Stack;
use serde_json::{Value, json};

/// V-3's bad-proof series, in the run's order.
const PROOF_CHECKS: [&str; 20] = [
    "proof.none",
    "proof.alg_none",
    "proof.hs256_public_key",
    "proof.other_key",
    "proof.unknown_kid",
    "proof.expired",
    "proof.long_lifetime",
    "proof.wrong_iss",
    "proof.wrong_aud",
    "proof.wrong_typ",
    "proof.wrong_sub",
    "proof.wrong_tenant",
    "proof.wrong_conversation",
    "proof.wrong_action_id",
    "proof.wrong_operation",
    "proof.wrong_arguments_hash",
    "proof.wrong_summary_hash",
    "proof.embedded_jwk",
    "proof.jku",
    "proof.x5u",
];

fn check<'a>(run: &'a Value, id: &str) -> &'a Value {
    run["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id} in {run:#}"))
}

fn status(run: &Value, id: &str) -> String {
    check(run, id)["status"].as_str().unwrap().to_owned()
}

/// H-1 … H-3, V-3, V-4: the demo provider passes every check, and the run executes exactly
/// one action per operation, for the synthetic test person, with the one valid proof it
/// sent (every other proof was refused). The result is stored with the configuration it
/// checked and audited with every proof's jti; it holds no secret.
#[tokio::test]
async fn v3_the_demo_provider_passes_and_one_action_per_operation_is_executed() {
    let s = Stack::start().await;
    let before = s.stats();
    let (st, run) = s.certify().await;
    assert_eq!(st, 201, "{run:#}");
    assert_eq!(run["passed"], true, "{run:#}");
    assert_eq!(run["current"], true);
    assert_eq!(run["testUser"], "countersign-test:u_test");
    assert_eq!(
        run["checked"]["operations"],
        json!(["reassign_session_car"])
    );
    let consultations = countersign_demo_provider::tools::CONSULTATIONS
        .iter()
        .flat_map(|t| {
            [
                format!("consultation.{t}.call"),
                format!("consultation.{t}.wrong_token"),
            ]
        });
    for id in PROOF_CHECKS
        .iter()
        .map(|s| (*s).to_owned())
        .chain(
            [
                "tools.list",
                "actions.tools",
                "actions.prepare.reassign_session_car",
                "actions.status",
                "actions.wrong_token",
                "actions.execute.reassign_session_car",
                "consultation.get_upload_file_details.other_person",
                "consultation.get_session_laps.other_person",
            ]
            .map(str::to_owned),
        )
        .chain(consultations)
    {
        assert_eq!(status(&run, &id), "passed", "{id}: {:#}", check(&run, &id));
    }
    let after = s.stats();
    assert_eq!(
        after["executions"].as_u64().unwrap(),
        before["executions"].as_u64().unwrap() + 1,
        "exactly one action per operation executed"
    );
    let refusals = |v: &Value| v["proofRefusals"].as_u64().unwrap();
    assert!(refusals(&after) >= refusals(&before) + 8, "{after:#}");
    // Stored: the latest run is this one.
    let (st, latest) = s.admin("GET", "mcp/certifications/latest", None).await;
    assert_eq!(st, 200);
    assert_eq!(latest["at"], run["at"]);
    assert_eq!(latest["checks"], run["checks"]);
    let (_, audit) = s.admin("GET", "audit", None).await;
    let record = &audit["items"][0];
    assert_eq!(record["action"], "mcp.certify", "{audit:#}");
    assert_eq!(record["changes"]["passed"], true);
    assert_eq!(record["changes"]["executed"].as_array().unwrap().len(), 1);
    assert_eq!(
        record["changes"]["proofJtis"].as_array().unwrap().len(),
        20,
        "one valid, 19 bad (proof.none has none)"
    );
    for text in [run.to_string(), audit.to_string()] {
        assert!(!text.contains(&s.service_token), "the service token leaked");
    }
    // Run again with the same arguments: the synthetic person's write did not stick.
    let (_, again) = s.certify().await;
    assert_eq!(again["passed"], true, "{again:#}");
    s.finish();
}

/// H-3: a provider that does not verify proofs fails, with the reason; V-3: the run
/// suspends the enabled actions at once (a pending proposal is cancelled with the
/// settings-change notice), and H-4: enabling again needs a passing run.
#[tokio::test]
async fn h3_a_provider_that_skips_proof_verification_fails_the_run() {
    let s = Stack::start().await;
    let t = s.token("u_alice");
    let case = s.create_case(&t).await;
    s.propose(&t, &case, "ses_a2", "car_a3").await;
    s.fault(json!({"fault": "skip_proof_verification"}));
    let (st, run) = s.certify().await;
    assert_eq!(st, 201);
    assert_eq!(run["passed"], false);
    assert_eq!(run["current"], false);
    let none = check(&run, "proof.none");
    assert_eq!(none["status"], "failed");
    let reason = none["reason"].as_str().unwrap();
    assert!(
        reason.contains("no X-MCP-Confirmation header")
            && reason.contains("refuse execute_action without a proof"),
        "{reason}"
    );
    let (_, mcp) = s.admin("GET", "mcp", None).await;
    assert_eq!(mcp["actionsSuspended"], true, "{mcp:#}");
    assert_eq!(mcp["actionPolicy"]["enabled"], false);
    let history = s.history(&t, &case).await;
    let last = history.last().unwrap();
    assert_eq!(last["kind"], "notice", "{history:#?}");
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .contains("integration settings changed"),
        "the pending proposal was cancelled with the settings-change notice: {last}"
    );
    let (_, audit) = s.admin("GET", "audit", None).await;
    assert!(
        audit.to_string().contains("mcp.actions.suspended"),
        "{audit:#}"
    );
    // H-4: the latest run failed, so enabling is refused, with the field named.
    let (st, body) = s.put_mcp(s.mcp_config(&s.service_token, true)).await;
    assert_eq!(st, 409, "{body}");
    assert_eq!(body["error"]["code"], "CERTIFICATION_REQUIRED");
    assert_eq!(body["error"]["field"], "actionPolicy.enabled");
    s.finish();
}

/// H-3: a provider that accepts an expired proof fails on that check; the checks before
/// it passed.
#[tokio::test]
async fn h3_a_provider_that_accepts_expired_proofs_fails_the_run() {
    let s = Stack::start().await;
    s.fault(json!({"fault": "accept_expired_proofs"}));
    let (_, run) = s.certify().await;
    assert_eq!(run["passed"], false);
    for id in ["proof.none", "proof.alg_none", "proof.other_key"] {
        assert_eq!(status(&run, id), "passed", "{id}");
    }
    let expired = check(&run, "proof.expired");
    assert_eq!(expired["status"], "failed");
    let reason = expired["reason"].as_str().unwrap();
    assert!(
        reason.contains("expired") && reason.contains("check exp"),
        "{reason}"
    );
    s.finish();
}

/// H-3: a provider that accepts `alg: none` fails on that check.
#[tokio::test]
async fn h3_a_provider_that_accepts_alg_none_fails_the_run() {
    let s = Stack::start().await;
    s.fault(json!({"fault": "accept_unsigned_proofs"}));
    let (_, run) = s.certify().await;
    assert_eq!(run["passed"], false);
    assert_eq!(status(&run, "proof.none"), "passed");
    let unsigned = check(&run, "proof.alg_none");
    assert_eq!(unsigned["status"], "failed");
    assert!(
        unsigned["reason"].as_str().unwrap().contains("alg: none"),
        "{unsigned}"
    );
    s.finish();
}

/// H-4: enabling needs a passing run of the saved action settings. A new service token
/// voids it; the refusal changes nothing; a new run on the saved settings allows it.
#[tokio::test]
async fn h4_enabling_needs_a_passing_run_of_the_saved_action_settings() {
    let s = Stack::start().await;
    let token = s.service_token.clone();
    let rotated = format!("{token}_rotated");
    // The demo accepts only its own token and audience (the run executes with a valid
    // proof, V-3), so this test changes the server URL (a query the demo ignores) and
    // keeps the audience.
    let mut moved = s.mcp_config(&token, true);
    moved["serverUrl"] = json!(format!("{}?v=2", s.demo_url));
    moved["audience"] = json!(s.demo_url);
    let (st, body) = s.put_mcp(moved.clone()).await;
    assert_eq!(
        (st, &body["error"]["code"]),
        (409, &json!("CERTIFICATION_REQUIRED"))
    );
    let (_, stored) = s.admin("GET", "mcp", None).await;
    assert_eq!(stored["version"], 2, "a refused save writes nothing");
    assert_eq!(stored["actionPolicy"]["enabled"], true);
    // A new token with actions on: refused whatever the latest run said.
    let (st, _) = s.put_mcp(s.mcp_config(&rotated, true)).await;
    assert_eq!(st, 409);
    // Off, saved, certified, on.
    moved["actionPolicy"]["enabled"] = json!(false);
    assert_eq!(s.put_mcp(moved.clone()).await.0, 200);
    let (_, latest) = s.admin("GET", "mcp/certifications/latest", None).await;
    assert_eq!(
        latest["current"], false,
        "the saved settings changed since the run"
    );
    moved["actionPolicy"]["enabled"] = json!(true);
    assert_eq!(s.put_mcp(moved.clone()).await.0, 409);
    let (st, run) = s.certify().await;
    assert_eq!((st, &run["passed"]), (201, &json!(true)), "{run:#}");
    assert_eq!(run["checked"]["serverUrl"], format!("{}?v=2", s.demo_url));
    let (st, body) = s.put_mcp(moved).await;
    assert_eq!(st, 200, "{body}");
    s.finish();
}

/// H-1: the request names only saved tools and operations; without a configuration there
/// is nothing to certify; a consultation without sample arguments fails its call check.
#[tokio::test]
async fn h1_the_request_is_validated_and_a_missing_sample_is_a_failed_check() {
    let s = Stack::start().await;
    let mut body = countersign_demo_provider::tools::certification_request();
    body["consultations"]["get_matching_sessions"] = json!({"track": "Spa"});
    let (st, err) = s.admin("POST", "mcp/certifications", Some(body)).await;
    assert_eq!(st, 400, "{err}");
    assert_eq!(err["error"]["field"], "consultations.get_matching_sessions");
    let mut body = countersign_demo_provider::tools::certification_request();
    body["actions"]["rename_car"] = json!({});
    let (st, err) = s.admin("POST", "mcp/certifications", Some(body)).await;
    assert_eq!(
        (st, &err["error"]["field"]),
        (400, &json!("actions.rename_car"))
    );
    let mut body = countersign_demo_provider::tools::certification_request();
    body.as_object_mut().unwrap().remove("actions");
    let (st, err) = s.admin("POST", "mcp/certifications", Some(body)).await;
    assert_eq!(
        (st, &err["error"]["field"]),
        (400, &json!("actions.reassign_session_car"))
    );
    let mut body = countersign_demo_provider::tools::certification_request();
    body["consultations"]
        .as_object_mut()
        .unwrap()
        .remove("get_session_laps");
    body["personalConsultations"] = json!(["get_upload_file_details"]);
    let (st, run) = s.admin("POST", "mcp/certifications", Some(body)).await;
    assert_eq!(st, 201);
    assert_eq!(run["passed"], false);
    let laps = check(&run, "consultation.get_session_laps.call");
    assert_eq!(laps["status"], "failed");
    assert!(
        laps["reason"]
            .as_str()
            .unwrap()
            .contains("no sample arguments")
    );
    // Removed: nothing to certify.
    assert_eq!(s.admin("DELETE", "mcp", None).await.0, 204);
    let (st, err) = s.certify().await;
    assert_eq!(
        (st, &err["error"]["code"]),
        (409, &json!("MCP_NOT_CONFIGURED"))
    );
    s.finish();
}

/// V-7: one person past the messages a minute gets 429 `RATE_LIMITED` with `Retry-After`
/// and nothing is stored; another person of the tenant keeps talking.
#[tokio::test]
async fn v7_a_person_past_the_message_limit_gets_429_and_others_keep_talking() {
    use countersign_acceptance::Options;
    let s = Stack::with(Options {
        person_messages_per_minute: 2,
        ..Options::default()
    })
    .await;
    let t = s.token("u_alice");
    let case = s.create_case(&t).await;
    s.say(&t, &case, "my cars", None).await;
    s.say(&t, &case, "my cars", None).await;
    // The limit is a fixed window: if a minute ends between these messages, the next
    // window admits two more. Within two windows the third message past a full window is
    // refused.
    let mut refused = None;
    for _ in 0..3 {
        let before = s.history(&t, &case).await.len();
        let res = s
            .http
            .post(format!("{}/api/cases/{case}/messages", s.messages_url))
            .bearer_auth(&t)
            .json(&json!({"content": "my cars"}))
            .send()
            .await
            .unwrap();
        if res.status() == 429 {
            refused = Some((res, before));
            break;
        }
        assert_eq!(res.status(), 200);
    }
    let (res, before) = refused.expect("the person was never limited");
    assert_eq!(res.status(), 429);
    let wait: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&wait));
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "RATE_LIMITED");
    assert_eq!(s.history(&t, &case).await.len(), before, "nothing stored");
    let bruno = s.token("u_bruno");
    let other = s.create_case(&bruno).await;
    let text = countersign_acceptance::texts(&s.say(&bruno, &other, "my cars", None).await);
    assert!(text.contains("M2"), "{text}");
    s.finish();
}

/// V-7 (done when): one tenant's administrator looping certification runs leaves another
/// tenant's chat answering: every run of the loop either runs or is refused at once, and
/// the other tenant's person gets their answer meanwhile.
#[tokio::test]
async fn v7_a_tenant_looping_certifications_leaves_another_tenants_chat_answering() {
    let s = Stack::start().await;
    let other = s.second_tenant().await;
    s.fault(json!({"fault": "delay", "ms": 20}));
    let loop_runs = async {
        let mut statuses = Vec::new();
        for _ in 0..3 {
            let (a, b) = tokio::join!(s.certify(), s.certify());
            statuses.extend([a.0, b.0]);
        }
        statuses
    };
    let t = s.other_token(&other, "u_bruno");
    let chat = async {
        let case = s.create_case(&t).await;
        s.say(&t, &case, "my cars", None).await
    };
    let (statuses, answered) = tokio::join!(loop_runs, chat);
    assert!(
        statuses.iter().all(|s| *s == 201 || *s == 429),
        "{statuses:?}"
    );
    assert!(
        statuses.contains(&429),
        "overlapping runs are refused: {statuses:?}"
    );
    // The demo provider serves the first tenant only, so the consultation itself is
    // refused ("unknown tenant"); what matters is that the turn ran and was answered.
    let last = answered.last().unwrap();
    assert_eq!(
        last["role"], "assistant",
        "the other tenant's turn was answered: {answered:?}"
    );
    assert!(answered.len() >= 2);
    s.finish();
}

/// V-7: an administrator looping certification runs holds one run at a time: of three sent
/// together, one runs and the others are 429 `ALREADY_RUNNING` naming the wait, while the
/// chat keeps answering.
#[tokio::test]
async fn v7_one_certification_run_at_a_time_and_the_chat_keeps_answering() {
    let s = Stack::start().await;
    // Every provider call takes a while, so the three runs overlap.
    s.fault(json!({"fault": "delay", "ms": 40}));
    let t = s.token("u_alice");
    let case = s.create_case(&t).await;
    let (one, two, three, chat) = tokio::join!(
        s.certify(),
        s.certify(),
        s.certify(),
        s.say(&t, &case, "my cars", None)
    );
    let mut statuses = [one.0, two.0, three.0];
    statuses.sort_unstable();
    assert_eq!(statuses, [201, 429, 429], "{one:?} {two:?} {three:?}");
    for (st, body) in [&one, &two, &three] {
        if *st == 429 {
            assert_eq!(body["error"]["code"], "ALREADY_RUNNING", "{body}");
        }
    }
    let text = countersign_acceptance::texts(&chat);
    assert!(text.contains("Cayman"), "{text}");
    // Once it is over, the next run goes ahead.
    assert_eq!(s.certify().await.0, 201);
    s.finish();
}

/// F-6's wrong step-ups, each on a fresh preparation.
const STEP_UP_CHECKS: [&str; 11] = [
    "stepup.none",
    "stepup.other_action",
    "stepup.other_summary",
    "stepup.uv_off",
    "stepup.up_off",
    "stepup.origin",
    "stepup.rp_id",
    "stepup.other_credential",
    "stepup.replayed",
    "stepup.signature",
    "stepup.type",
];

/// F-4, F-6: a provider that verifies step-ups with the provider kit (and requires one for
/// the operation) passes the step-up series — the valid execution carries the platform
/// test credential's step-up, each wrong step-up is refused with the action still pending —
/// and only then can the operation become `passkey`; the view publishes where ceremonies
/// run (`stepUpRpId`, `stepUpOrigins`).
#[tokio::test]
async fn f6_a_step_up_certification_passes_and_then_an_operation_can_need_a_passkey() {
    let s = Stack::start().await;
    let mut passkey = s.mcp_config(&s.service_token, false);
    passkey["actionPolicy"]["stepUp"] = json!({"reassign_session_car": "passkey"});
    // Before any step-up certification: refused, nothing saved.
    let (st, body) = s.put_mcp(passkey.clone()).await;
    assert_eq!(st, 409, "{body}");
    assert_eq!(body["error"]["code"], "STEP_UP_NOT_CERTIFIED");
    s.fault(json!({"fault": "require_step_up"}));
    let before = s.stats();
    let (st, run) = s.certify_step_up(&["reassign_session_car"]).await;
    assert_eq!(st, 201, "{run:#}");
    assert_eq!(run["passed"], true, "{run:#}");
    assert_eq!(
        status(&run, "stepup.execute.reassign_session_car"),
        "passed"
    );
    for id in STEP_UP_CHECKS {
        assert_eq!(status(&run, id), "passed", "{id}: {:#}", check(&run, id));
    }
    let after = s.stats();
    assert_eq!(
        after["executions"].as_u64().unwrap(),
        before["executions"].as_u64().unwrap() + 1,
        "only the valid step-up executed"
    );
    let (st, saved) = s.put_mcp(passkey).await;
    assert_eq!(st, 200, "{saved}");
    assert_eq!(
        saved["actionPolicy"]["stepUp"]["reassign_session_car"],
        "passkey"
    );
    let verification = &saved["actionVerification"];
    assert_eq!(verification["stepUpRpId"], "confirm.countersign.test");
    assert_eq!(
        verification["stepUpOrigins"],
        json!([countersign_acceptance::STEP_UP_ORIGIN])
    );
    s.finish();
}

/// F-6: a provider that does not require the step-up for the operation executes the
/// valid proof that carries none: the run fails on `stepup.none`, and the operation cannot
/// become `passkey`.
#[tokio::test]
async fn f6_a_provider_that_accepts_a_proof_without_step_up_fails_the_series() {
    let s = Stack::start().await;
    let (_, run) = s.certify_step_up(&["reassign_session_car"]).await;
    assert_eq!(run["passed"], false, "{run:#}");
    let none = check(&run, "stepup.none");
    assert_eq!(none["status"], "failed", "{none:#}");
    assert!(
        none["reason"].as_str().unwrap().contains("require_step_up"),
        "{none:#}"
    );
    // The other wrong step-ups are refused by the kit's step-up check all the same.
    for id in &STEP_UP_CHECKS[1..] {
        assert_eq!(status(&run, id), "passed", "{id}: {:#}", check(&run, id));
    }
    let mut passkey = s.mcp_config(&s.service_token, false);
    passkey["actionPolicy"]["stepUp"] = json!({"reassign_session_car": "passkey"});
    let (st, body) = s.put_mcp(passkey).await;
    assert_eq!(st, 409, "{body}");
    assert_eq!(body["error"]["code"], "STEP_UP_NOT_CERTIFIED");
    s.finish();
}
