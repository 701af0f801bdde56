//! B-1 … B-3 on the engine: what the platform sees, guards at preparation and at
//! execution, proofs, one execution, a lost answer, one pending per conversation.

use crate::fake::Fake;
use crate::*;
use countersign_bridge::store::Store as _;
use countersign_provider_kit::ActionStatus;
use serde_json::json;
use std::sync::Arc;

/// B-1: consultations are published read-only (on the tenant's word) without the bound
/// argument; the upstream's write tools are not callable; only the configured part of a
/// result is answered (never the server's whole state).
#[tokio::test]
async fn b1_the_platform_sees_consultations_read_only_and_no_write_tool() {
    let h = harness().await;
    let catalog = serde_json::to_value(h.bridge.catalog()).unwrap();
    let names: Vec<&str> = catalog
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "get_order_details",
            "get_user_details",
            "prepare_action",
            "execute_action",
            "get_action_status"
        ]
    );
    for t in catalog.as_array().unwrap() {
        assert!(
            t["inputSchema"]["properties"].get("state_key").is_none(),
            "{t}"
        );
    }
    assert_eq!(catalog[0]["annotations"]["readOnlyHint"], true);
    assert_eq!(catalog[0]["annotations"]["destructiveHint"], false);
    let alice = who("alice", "c1");
    let (err, is_error) = h
        .call(
            &alice,
            "cancel_pending_order",
            json!({"order_id": "#W1", "reason": "x"}),
        )
        .await;
    assert!(is_error, "{err}");
    assert_eq!(h.fake.writes(), 0);
    let (order, is_error) = h
        .call(&alice, "get_order_details", json!({"order_id": "#W1"}))
        .await;
    assert!(!is_error);
    assert_eq!(order["result"]["user_id"], "alice", "{order}");
    assert_eq!(
        order.as_object().unwrap().len(),
        1,
        "only the configured part: {order}"
    );
    assert_eq!(catalog[0]["outputSchema"]["required"], json!(["result"]));
    // The model may never set a bound argument.
    let (_, is_error) = h
        .call(
            &alice,
            "get_order_details",
            json!({"order_id": "#W1", "state_key": "other"}),
        )
        .await;
    assert!(is_error);
}

/// B-1: a consultation the upstream itself declares a write refuses the start; so does a
/// configured tool the upstream lacks.
#[tokio::test]
async fn b1_start_refuses_a_consultation_the_upstream_declares_a_write() {
    let fake = Arc::new(Fake::retail());
    fake.state.lock().unwrap().order_details_destructive = true;
    let store = Arc::new(SqliteStore::in_memory().unwrap());
    let digest = "d".repeat(64);
    let verifier = Verifier::new(ISS, AUD);
    let refused = Bridge::start(
        Config::parse(CONFIG).unwrap(),
        digest.clone(),
        fake,
        store.clone(),
        verifier,
        Settings::default(),
    )
    .await;
    let text = refused.unwrap_err().to_string();
    assert!(
        text.contains("get_order_details") && text.contains("destructiveHint"),
        "{text}"
    );
    let missing = CONFIG.replace(
        "tool = \"get_user_details\"\nread_only",
        "tool = \"get_user_profile\"\nread_only",
    );
    let refused = Bridge::start(
        Config::parse(&missing).unwrap(),
        digest,
        Arc::new(Fake::retail()),
        store,
        Verifier::new(ISS, AUD),
        Settings::default(),
    )
    .await;
    assert!(
        refused
            .unwrap_err()
            .to_string()
            .contains("get_user_profile")
    );
}

/// B-2: the summary states the effects with the looked-up items, in the person's language;
/// a guard refuses another person's order (as "not found", nothing recorded); arguments are
/// checked against the upstream's schema; the person's identity argument is the bridge's.
#[tokio::test]
async fn b2_preparation_renders_guards_and_validates() {
    let h = harness().await;
    let alice = who("alice", "c1");
    let (p, is_error) = h
        .prepare(
            &alice,
            "cancel_pending_order",
            json!({"order_id": "#W1", "reason": "no longer needed"}),
        )
        .await;
    assert!(!is_error, "{p}");
    assert_eq!(
        p["summary"],
        "Cancel order #W1 (Desk Lamp, Kettle); reason: no longer needed."
    );
    assert_eq!(
        p["argumentsHash"],
        countersign_provider_kit::arguments_hash(
            &json!({"order_id": "#W1", "reason": "no longer needed"})
        )
    );
    let pt = h.bridge.call(&alice, "prepare_action", obj(json!({"operation": "cancel_pending_order", "arguments": {"order_id": "#W1", "reason": "x"}})), None, Some("pt-BR")).await;
    assert!(
        body(&pt).0["summary"]
            .as_str()
            .unwrap()
            .starts_with("Cancelar o pedido #W1")
    );
    // Another person's order: refused like a missing one.
    let (refusal, is_error) = h.cancel(&alice, "#W2").await;
    assert!(is_error);
    assert_eq!(refusal, json!("not found"));
    // The schema: `reason` is required; unknown arguments are refused.
    let (e, is_error) = h
        .prepare(&alice, "cancel_pending_order", json!({"order_id": "#W1"}))
        .await;
    assert!(is_error && e.as_str().unwrap().contains("reason"), "{e}");
    let (_, is_error) = h
        .prepare(
            &alice,
            "cancel_pending_order",
            json!({"order_id": "#W1", "reason": "x", "refund": 10}),
        )
        .await;
    assert!(is_error);
    // A summary that breaks the rules (a direction override in an argument) is refused.
    let (e, is_error) = h
        .prepare(
            &alice,
            "cancel_pending_order",
            json!({"order_id": "#W1", "reason": "x\u{202E}y"}),
        )
        .await;
    assert!(is_error && e.as_str().unwrap().contains("summary"), "{e}");
    // Identity: the person, never the model's choice.
    let (_, is_error) = h
        .prepare(
            &alice,
            "modify_user_address",
            json!({"user_id": "bob", "city": "Lima"}),
        )
        .await;
    assert!(is_error);
    let (p, is_error) = h
        .prepare(&alice, "modify_user_address", json!({"city": "Lima"}))
        .await;
    assert!(!is_error, "{p}");
    let (done, _) = h.execute(&alice, &p, &proof(&alice, &p, "j-addr")).await;
    assert_eq!(done["status"], "completed");
    let writes = h.fake.state.lock().unwrap().writes.clone();
    assert_eq!(writes[0].1["user_id"], "alice");
    assert_eq!(h.fake.state.lock().unwrap().cities["bob"], "Boston");
}

/// B-3, A-35: a good proof executes once; the same proof or a second proof for the same
/// action writes nothing more and answers the recorded status.
#[tokio::test]
async fn b3_an_action_executes_once() {
    let h = harness().await;
    let alice = who("alice", "c1");
    let (p, _) = h.cancel(&alice, "#W1").await;
    assert_eq!(h.fake.writes(), 0, "preparation writes nothing");
    let good = proof(&alice, &p, "j-1");
    let (done, is_error) = h.execute(&alice, &p, &good).await;
    assert!(!is_error, "{done}");
    assert_eq!(done["status"], "completed");
    let (again, _) = h.execute(&alice, &p, &good).await;
    assert_eq!(again["status"], "completed");
    let (other, _) = h.execute(&alice, &p, &proof(&alice, &p, "j-2")).await;
    assert_eq!(other["status"], "completed");
    assert_eq!(h.fake.writes(), 1);
    // Status is scoped: another conversation or person does not see it.
    let (_, is_error) = h
        .call(
            &who("alice", "c2"),
            "get_action_status",
            json!({"actionId": p["actionId"]}),
        )
        .await;
    assert!(is_error);
    let (s, _) = h
        .call(
            &alice,
            "get_action_status",
            json!({"actionId": p["actionId"]}),
        )
        .await;
    assert_eq!(s["status"], "completed");
}

/// B-3, A-31 … A-33: every bad proof is refused; the action stays pending; nothing is
/// written upstream.
#[tokio::test]
async fn b3_bad_proofs_are_refused_and_nothing_runs() {
    let h = harness().await;
    let alice = who("alice", "c1");
    let (p, _) = h.cancel(&alice, "#W1").await;
    let c = claims(&alice, &p, "j-bad");
    let with = |k: &str, v: Value| {
        let mut c = c.clone();
        c[k] = v;
        c
    };
    let mut bad: Vec<(&str, String)> = vec![
        (
            "alg none",
            format!(
                "{}.{}.",
                b64(&json!({"alg": "none", "typ": "support-action+jwt", "kid": "kid-1"})),
                b64(&c)
            ),
        ),
        ("another key", sign_with(&header(), &c, ATTACKER_KEY)),
        (
            "unknown kid",
            sign_with(
                &json!({"alg": "RS256", "typ": "support-action+jwt", "kid": "kid-9"}),
                &c,
                TRUSTED_KEY,
            ),
        ),
        (
            "wrong typ",
            sign_with(
                &json!({"alg": "RS256", "typ": "JWT", "kid": "kid-1"}),
                &c,
                TRUSTED_KEY,
            ),
        ),
        (
            "expired",
            sign_with(&header(), &with("exp", json!(now() - 600)), TRUSTED_KEY),
        ),
    ];
    for (k, v) in [
        ("iss", json!("https://evil.example")),
        ("aud", json!("http://elsewhere/mcp")),
        ("sub", json!("bob")),
        ("tenantId", json!("ten_2")),
        ("conversationId", json!("c9")),
        ("actionId", json!("01OTHER")),
        ("operation", json!("modify_user_address")),
        ("argumentsHash", json!("a".repeat(64))),
        ("summaryHash", json!("b".repeat(64))),
    ] {
        bad.push((k, sign_with(&header(), &with(k, v), TRUSTED_KEY)));
    }
    for (what, token) in &bad {
        let (answer, is_error) = h.execute(&alice, &p, token).await;
        assert!(is_error, "{what}: {answer}");
    }
    let no_proof = h
        .bridge
        .call(
            &alice,
            "execute_action",
            obj(json!({"actionId": p["actionId"]})),
            None,
            None,
        )
        .await;
    assert_eq!(no_proof.is_error, Some(true));
    assert_eq!(h.fake.writes(), 0);
    let (s, _) = h
        .call(
            &alice,
            "get_action_status",
            json!({"actionId": p["actionId"]}),
        )
        .await;
    assert_eq!(s["status"], "pending_confirmation");
    assert!(h.bridge.metrics.render().contains(&format!(
        "countersign_bridge_proof_refusals_total {}",
        bad.len() + 1
    )));
}

/// Seed 001 §4, B-2: rules are checked at execution. An order that changed hands, items
/// that changed (the re-rendered summary differs) or a changed configuration: `conflict`,
/// nothing written.
#[tokio::test]
async fn b2_execution_rechecks_guards_summary_and_configuration() {
    let h = harness().await;
    let alice = who("alice", "c1");
    let (p, _) = h.cancel(&alice, "#W1").await;
    h.fake.with_order("#W1", |o| o["user_id"] = json!("bob"));
    let (a, _) = h.execute(&alice, &p, &proof(&alice, &p, "j-1")).await;
    assert_eq!(a["status"], "conflict", "{a}");
    h.fake.with_order("#W1", |o| o["user_id"] = json!("alice"));
    let (p, _) = h.cancel(&alice, "#W1").await;
    h.fake.with_order("#W1", |o| {
        o["items"] = json!([{"name": "Desk Lamp"}, {"name": "Kettle"}, {"name": "Toaster"}]);
    });
    let (a, _) = h.execute(&alice, &p, &proof(&alice, &p, "j-2")).await;
    assert_eq!(a["status"], "conflict", "{a}");
    let (p, _) = h.cancel(&alice, "#W1").await;
    let changed = format!("{CONFIG}\n# an edit\n");
    let restarted = bridge_with(&changed, h.fake.clone(), h.store.clone()).await;
    let args = obj(json!({"actionId": p["actionId"]}));
    let a = body(
        &restarted
            .call(
                &alice,
                "execute_action",
                args,
                Some(&proof(&alice, &p, "j-3")),
                None,
            )
            .await,
    )
    .0;
    assert_eq!(a["status"], "conflict", "{a}");
    assert_eq!(h.fake.writes(), 0);
}

/// B-3: a write whose answer is lost is left `executing` and never sent again; `settle`
/// records what the tenant's system shows.
#[tokio::test]
async fn b3_a_lost_answer_is_one_call_and_unknown() {
    let h = harness().await;
    let alice = who("alice", "c1");
    let (p, _) = h.cancel(&alice, "#W1").await;
    h.fake.state.lock().unwrap().lose_next_write = true;
    let (a, _) = h.execute(&alice, &p, &proof(&alice, &p, "j-1")).await;
    assert_eq!(a["status"], "executing", "{a}");
    let (b, _) = h.execute(&alice, &p, &proof(&alice, &p, "j-2")).await;
    assert_eq!(b["status"], "executing");
    assert_eq!(h.fake.writes(), 1);
    let open = h.store.in_doubt().await.unwrap();
    assert_eq!(open.len(), 1);
    let id = p["actionId"].as_str().unwrap();
    assert!(
        h.store
            .finish("ten_1", id, ActionStatus::Completed, Some("settled"))
            .await
            .unwrap()
    );
    let (s, _) = h
        .call(&alice, "get_action_status", json!({"actionId": id}))
        .await;
    assert_eq!(s["status"], "completed");
    assert!(h.store.in_doubt().await.unwrap().is_empty());
}

/// B-3, A-14: one pending action per conversation, even under 32 concurrent preparations.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn b3_one_pending_per_conversation_under_32_concurrent_preparations() {
    let h = Arc::new(harness().await);
    let tasks = (0..32).map(|i| {
        let h = h.clone();
        tokio::spawn(async move {
            let alice = who("alice", "c1");
            h.prepare(
                &alice,
                "cancel_pending_order",
                json!({"order_id": "#W1", "reason": format!("r{i}")}),
            )
            .await
        })
    });
    let prepared = futures::future::join_all(tasks).await;
    let mut pending = 0;
    for r in prepared {
        let (p, is_error) = r.unwrap();
        assert!(!is_error, "{p}");
        let a = h
            .store
            .get("ten_1", p["actionId"].as_str().unwrap())
            .await
            .unwrap()
            .unwrap();
        match a.status {
            ActionStatus::PendingConfirmation => pending += 1,
            ActionStatus::Cancelled => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(pending, 1);
}

/// B-3, N-7: the certification's synthetic person acts as the configured test account;
/// with a dry run nothing is written upstream and the answer says so; a synthetic person
/// the file does not name is refused.
#[tokio::test]
async fn b3_the_certifications_person_maps_to_the_test_account_or_a_dry_run() {
    let h = harness().await;
    let test = who("countersign-test:u_test", "c1");
    let (order, is_error) = h
        .call(&test, "get_order_details", json!({"order_id": "#W1"}))
        .await;
    assert!(!is_error, "{order}");
    let dry = CONFIG.replace("accounts = {", "dry_run = true\naccounts = {");
    let fake = Arc::new(Fake::retail());
    let b = bridge_with(
        &dry,
        fake.clone(),
        Arc::new(SqliteStore::in_memory().unwrap()),
    )
    .await;
    let (p, _) = body(
        &b.call(
            &test,
            "prepare_action",
            obj(json!({"operation": "modify_user_address", "arguments": {"city": "Lima"}})),
            None,
            None,
        )
        .await,
    );
    let args = obj(json!({"actionId": p["actionId"]}));
    let done = body(
        &b.call(
            &test,
            "execute_action",
            args,
            Some(&proof(&test, &p, "j-1")),
            None,
        )
        .await,
    )
    .0;
    assert_eq!(done["status"], "completed");
    assert!(
        done["message"]
            .as_str()
            .unwrap()
            .contains("nothing was executed")
    );
    assert_eq!(fake.writes(), 0);
    let none = CONFIG.replace(
        "[certification]\naccounts = { \"countersign-test:u_test\" = \"alice\" }\n",
        "",
    );
    let b = bridge_with(
        &none,
        Arc::new(Fake::retail()),
        Arc::new(SqliteStore::in_memory().unwrap()),
    )
    .await;
    let r = b
        .call(
            &test,
            "get_order_details",
            obj(json!({"order_id": "#W1"})),
            None,
            None,
        )
        .await;
    assert_eq!(r.is_error, Some(true));
}

/// B-1, B-2: a consultation of a server that keeps data per person takes the person as an
/// argument (`identity`): the argument is gone from the schema the platform sees, every
/// call carries the person from `X-MCP-User-Id`, and the model cannot name another.
#[tokio::test]
async fn b1_b2_a_per_person_consultation_reads_only_the_persons_own_data() {
    let config = CONFIG.replace(
        "tool = \"get_user_details\"\nread_only = true\nguards = [\"user_is_the_person\"]",
        "tool = \"get_user_details\"\nread_only = true\nidentity = { kind = \"argument\", name = \"user_id\" }",
    );
    assert_ne!(config, CONFIG);
    let fake = Arc::new(Fake::retail());
    let store = Arc::new(SqliteStore::in_memory().unwrap());
    let bridge = bridge_with(&config, fake.clone(), store).await;
    let catalog = serde_json::to_value(bridge.catalog()).unwrap();
    let details = catalog
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "get_user_details")
        .unwrap();
    assert!(
        details["inputSchema"]["properties"]
            .get("user_id")
            .is_none(),
        "{details}"
    );
    let alice = who("alice", "c1");
    let (answer, is_error) = body(
        &bridge
            .call(&alice, "get_user_details", obj(json!({})), None, None)
            .await,
    );
    assert!(!is_error, "{answer}");
    assert_eq!(answer["result"]["city"], "Austin", "{answer}");
    let (_, is_error) = body(
        &bridge
            .call(
                &alice,
                "get_user_details",
                obj(json!({"user_id": "bob"})),
                None,
                None,
            )
            .await,
    );
    assert!(is_error, "the model may not name the person");
    let calls = fake.state.lock().unwrap().calls.clone();
    assert!(
        calls
            .iter()
            .filter(|(t, _)| t == "get_user_details")
            .all(|(_, a)| a["user_id"] == "alice"),
        "{calls:?}"
    );
}
