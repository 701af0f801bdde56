//! L-1, L-2 on the emulator: each step of a proposal's life is an audit record written in
//! the same transaction as the step, every record is hash-chained, a process whose cached
//! chain head is stale rebuilds its write instead of forking the chain, the confirm write
//! learns its head from the conversation's Query (no call of its own), and a record
//! altered or removed in the table is found by the verifier, which names it.

use crate::common::{Env, env};
use countersign_aws::dynamo::DynamoStore;
use countersign_domain::audit_chain::{TENANT_CHAIN, conversation_chain, verify_trail};
use countersign_domain::ports::AuditRecords;
use countersign_domain::ports::Conversations;
use countersign_domain::ports::ProposalLock;
use countersign_domain::ports::{CreateProposalOutcome, TransitionOutcome};
use countersign_domain::proposal::ProposalState;

/// The table key of audit record `id`, wherever the store put it (found by a scan: the
/// test does not assume the table's layout, decision 0043).
async fn record_key(
    raw: &aws_sdk_dynamodb::Client,
    table: &str,
    id: &str,
) -> std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue> {
    use aws_sdk_dynamodb::types::AttributeValue as A;
    let found = raw
        .scan()
        .table_name(table)
        .filter_expression("sk = :sk")
        .expression_attribute_values(":sk", A::S(format!("AUDIT#{id}")))
        .projection_expression("pk, sk")
        .send()
        .await
        .unwrap();
    let items = found.items.unwrap_or_default();
    assert_eq!(items.len(), 1, "{id}");
    items.into_iter().next().unwrap()
}

async fn check(
    store: &DynamoStore,
    tenant: &countersign_domain::ids::TenantId,
) -> countersign_domain::audit_chain::Report {
    let trail = store.audit_trail(tenant).await.unwrap();
    verify_trail(tenant.as_str(), &trail)
}

/// A life: configured, prepared, superseded by a second preparation, confirmed,
/// completed — every step recorded and chained.
async fn life(
    env: &Env,
    store: &DynamoStore,
) -> (
    countersign_domain::ids::TenantId,
    countersign_domain::conversation::Case,
) {
    let tenant = env.tenant();
    env.configure(store, &tenant, None, (1, 1, "v1")).await;
    let case = env.open_case(store, &tenant).await;
    let (p1, m1) = env.proposal(&case, "act_life_1", 1);
    let (p2, m2) = env.proposal(&case, "act_life_2", 1);
    for (p, m) in [(&p1, &m1), (&p2, &m2)] {
        let created = store.create_proposal(p, m).await.unwrap();
        assert!(
            matches!(created, CreateProposalOutcome::Applied { .. }),
            "{created:?}"
        );
    }
    store.load(&tenant, &case.id).await.unwrap();
    let w = env.confirm_write(&p2, &p2.presented.message_id);
    assert_eq!(store.confirm(&w).await.unwrap(), TransitionOutcome::Applied);
    let done = store
        .transition(
            &tenant,
            &case.id,
            &p2.action_id,
            ProposalState::Executing,
            ProposalState::Completed,
            None,
        )
        .await
        .unwrap();
    assert_eq!(done, TransitionOutcome::Applied);
    (tenant, case)
}

#[tokio::test]
async fn l1_l2_each_step_is_recorded_chained_and_verifies() {
    let env = env().await;
    let store = env.fresh_store().await;
    let (tenant, case) = life(&env, &store).await;
    let page = store.list_audit(&tenant, None, 100).await.unwrap();
    let mut actions: Vec<&str> = page.items.iter().map(|a| a.action.as_str()).collect();
    actions.sort_unstable();
    assert_eq!(
        actions,
        [
            "mcp.put",
            "proposal.completed",
            "proposal.confirmed",
            "proposal.prepared",
            "proposal.prepared",
            "proposal.superseded"
        ]
    );
    // L-1: never a proof or a secret — ids, states and hashes only.
    let confirmed = page
        .items
        .iter()
        .find(|a| a.action == "proposal.confirmed")
        .unwrap();
    assert_eq!(confirmed.actor, "person");
    assert_eq!(confirmed.changes["to"], "executing");
    assert_eq!(confirmed.changes["actionId"], "act_life_2");
    let text =
        serde_json::to_string(&page.items.iter().map(|a| &a.changes).collect::<Vec<_>>()).unwrap();
    assert!(
        !text.contains("svc_token_123") && !text.contains("eyJ"),
        "{text}"
    );

    let report = check(&store, &tenant).await;
    assert_eq!(report.broken, None, "{report:?}");
    assert_eq!((report.records, report.chains, report.unchained), (6, 2, 0));
    let trail = store.audit_trail(&tenant).await.unwrap();
    assert_eq!(trail.heads[TENANT_CHAIN].seq, 1);
    assert_eq!(
        trail.heads[&conversation_chain(tenant.as_str(), case.id.as_str())].seq,
        5
    );
}

/// L-2: a record changed in the table (here the confirmation's `changes`, as someone with
/// write access to the table would) and a record deleted are both found and named.
#[tokio::test]
async fn l2_a_record_altered_or_removed_in_the_table_is_found() {
    let env = env().await;
    let store = env.fresh_store().await;
    let (tenant, case) = life(&env, &store).await;
    let before = check(&store, &tenant).await;
    assert_eq!(before.broken, None);
    let trail = store.audit_trail(&tenant).await.unwrap();
    let confirmed = trail
        .records
        .iter()
        .find(|r| r.action == "proposal.confirmed")
        .unwrap()
        .clone();
    let raw = aws_sdk_dynamodb::Client::new(&env.sdk);
    let altered = confirmed.changes.replace("act_life_2", "act_life_1");
    assert_ne!(altered, confirmed.changes);
    raw.update_item()
        .table_name(store.table())
        .set_key(Some(record_key(&raw, store.table(), &confirmed.id).await))
        .update_expression("SET changes = :c")
        .expression_attribute_values(":c", aws_sdk_dynamodb::types::AttributeValue::S(altered))
        .send()
        .await
        .unwrap();
    let after = check(&store, &tenant).await;
    let broken = after.broken.expect("the altered record is found");
    assert_eq!(
        broken.chain,
        conversation_chain(tenant.as_str(), case.id.as_str())
    );
    assert_eq!(broken.seq, confirmed.seq);
    assert_eq!(broken.id.as_deref(), Some(confirmed.id.as_str()));

    // Put it back: intact again. Then remove the configuration's record.
    raw.update_item()
        .table_name(store.table())
        .set_key(Some(record_key(&raw, store.table(), &confirmed.id).await))
        .update_expression("SET changes = :c")
        .expression_attribute_values(
            ":c",
            aws_sdk_dynamodb::types::AttributeValue::S(confirmed.changes.clone()),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(check(&store, &tenant).await.broken, None);
    let config = trail
        .records
        .iter()
        .find(|r| r.chain == TENANT_CHAIN)
        .unwrap();
    raw.delete_item()
        .table_name(store.table())
        .set_key(Some(record_key(&raw, store.table(), &config.id).await))
        .send()
        .await
        .unwrap();
    let broken = check(&store, &tenant)
        .await
        .broken
        .expect("the removed record is found");
    assert_eq!((broken.chain.as_str(), broken.seq), (TENANT_CHAIN, 1));
}

/// Two processes with their own head caches write to one conversation's chain: the one
/// whose cached head is stale rebuilds its write; the chain never forks.
#[tokio::test]
async fn l2_a_stale_cached_head_is_rebuilt_never_forked() {
    let env = env().await;
    let a = env.fresh_store().await;
    let b = DynamoStore::new(DynamoStore::client(&env.sdk, None), a.table());
    let tenant = env.tenant();
    env.configure(&a, &tenant, None, (1, 1, "v1")).await;
    let case = env.open_case(&a, &tenant).await;
    let (p1, m1) = env.proposal(&case, "act_fork_1", 1);
    a.create_proposal(&p1, &m1).await.unwrap();
    // `a` caches head 1; `b` supersedes p1 (heads 2, 3) behind its back.
    a.load(&tenant, &case.id).await.unwrap();
    let (p2, m2) = env.proposal(&case, "act_fork_2", 1);
    assert!(matches!(
        b.create_proposal(&p2, &m2).await.unwrap(),
        CreateProposalOutcome::Applied { .. }
    ));
    // `a` confirms p2 with its stale head: rebuilt on the fresh one.
    let w = env.confirm_write(&p2, &p2.presented.message_id);
    assert_eq!(a.confirm(&w).await.unwrap(), TransitionOutcome::Applied);
    // And `b` (head 3 cached, now 4) settles it.
    let done = b
        .transition(
            &tenant,
            &case.id,
            &p2.action_id,
            ProposalState::Executing,
            ProposalState::Failed,
            None,
        )
        .await
        .unwrap();
    assert_eq!(done, TransitionOutcome::Applied);
    let report = check(&a, &tenant).await;
    assert_eq!(report.broken, None, "{report:?}");
    let trail = a.audit_trail(&tenant).await.unwrap();
    assert_eq!(
        trail.heads[&conversation_chain(tenant.as_str(), case.id.as_str())].seq,
        5
    );
}

/// The confirm path's cost: the confirmation's record and the head's update ride in the
/// confirm transaction, and the head comes with the conversation's Query — a process
/// that never saw this conversation makes no call for it.
#[tokio::test]
async fn l2_the_confirm_write_adds_no_call() {
    let env = env().await;
    let setup = env.fresh_store().await;
    let tenant = env.tenant();
    env.configure(&setup, &tenant, None, (1, 1, "v1")).await;
    let case = env.open_case(&setup, &tenant).await;
    let (p, m) = env.proposal(&case, "act_cost_1", 1);
    setup.create_proposal(&p, &m).await.unwrap();
    // Another process: an empty head cache.
    let other = DynamoStore::new(
        DynamoStore::client(&env.sdk, Some(&env.calls)),
        setup.table(),
    );
    env.calls.reset();
    other.load(&tenant, &case.id).await.unwrap();
    let w = env.confirm_write(&p, &p.presented.message_id);
    assert_eq!(other.confirm(&w).await.unwrap(), TransitionOutcome::Applied);
    let done = other
        .transition(
            &tenant,
            &case.id,
            &p.action_id,
            ProposalState::Executing,
            ProposalState::Completed,
            None,
        )
        .await
        .unwrap();
    assert_eq!(done, TransitionOutcome::Applied);
    let calls = env.calls.snapshot();
    assert_eq!(calls.get("Query"), Some(&1), "{calls:?}");
    assert_eq!(calls.get("TransactWriteItems"), Some(&2), "{calls:?}");
    assert_eq!(calls.get("GetItem"), None, "{calls:?}");
    assert_eq!(check(&other, &tenant).await.broken, None);
}

/// L-3: verification while confirmations keep landing reports no false break: the heads
/// are read before the records, so a record written in between is past its head and left
/// for the next verification (before issue 27 it read "a record is missing").
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn l3_verification_under_running_confirmations_reports_no_false_break() {
    const CASES: usize = 6;
    let env = std::sync::Arc::new(env().await);
    let store = env.fresh_store().await;
    let tenant = env.tenant();
    env.configure(&store, &tenant, None, (1, 1, "v1")).await;
    let mut writers = Vec::new();
    for c in 0..CASES {
        let (env, store, tenant) = (env.clone(), store.clone(), tenant.clone());
        writers.push(tokio::spawn(async move {
            let case = env.open_case(&store, &tenant).await;
            for i in 0..4 {
                let (p, m) = env.proposal(&case, &format!("act_run_{c}_{i}"), 1);
                store.create_proposal(&p, &m).await.unwrap();
                let w = env.confirm_write(&p, &p.presented.message_id);
                assert_eq!(store.confirm(&w).await.unwrap(), TransitionOutcome::Applied);
                let step = (ProposalState::Executing, ProposalState::Completed);
                let done = store
                    .transition(&tenant, &case.id, &p.action_id, step.0, step.1, None)
                    .await
                    .unwrap();
                assert_eq!(done, TransitionOutcome::Applied);
            }
        }));
    }
    let mut verified = 0;
    while writers.iter().any(|w| !w.is_finished()) {
        let report = check(&store, &tenant).await;
        assert_eq!(report.broken, None, "a false break under load: {report:?}");
        verified += 1;
    }
    for w in writers {
        w.await.unwrap();
    }
    let report = check(&store, &tenant).await;
    assert_eq!(report.broken, None, "{report:?}");
    // Configuration, then per case 4 × (prepared, confirmed, completed).
    assert_eq!((report.records, report.chains), (1 + CASES * 12, 1 + CASES));
    assert!(
        verified > 1,
        "verification ran while the writers did ({verified} times)"
    );
}

/// L-3: a conversation's chain deleted whole — every record and its head, as someone with
/// write access to the table could — is found through the tenant's chain index; so is a
/// record written without chain fields.
#[tokio::test]
async fn l3_a_deleted_conversation_chain_and_an_unchained_record_are_found() {
    use aws_sdk_dynamodb::types::AttributeValue as A;
    let env = env().await;
    let store = env.fresh_store().await;
    let (tenant, case) = life(&env, &store).await;
    assert_eq!(check(&store, &tenant).await.broken, None);
    let raw = aws_sdk_dynamodb::Client::new(&env.sdk);
    let chain = conversation_chain(tenant.as_str(), case.id.as_str());
    let trail = store.audit_trail(&tenant).await.unwrap();
    let key = |pk: String, sk: String| {
        std::collections::HashMap::from([("pk".to_owned(), A::S(pk)), ("sk".to_owned(), A::S(sk))])
    };
    for r in trail.records.iter().filter(|r| r.chain == chain) {
        raw.delete_item()
            .table_name(store.table())
            .set_key(Some(record_key(&raw, store.table(), &r.id).await))
            .send()
            .await
            .unwrap();
    }
    raw.delete_item()
        .table_name(store.table())
        .set_key(Some(key(
            format!("CONV#{tenant}#{}", case.id),
            "A#CHAIN".into(),
        )))
        .send()
        .await
        .unwrap();
    let broken = check(&store, &tenant)
        .await
        .broken
        .expect("the deleted chain is found");
    assert_eq!(broken.chain, chain);

    // A fresh trail with one record put without chain fields.
    let store = env.fresh_store().await;
    let (tenant, _) = life(&env, &store).await;
    let mut item = key(
        format!("TENANT#{tenant}"),
        "AUDIT#aud_01JDZ6Y5X1QW9T3V7N2K4M8P0R".into(),
    );
    for (k, v) in [
        ("audit_id", "aud_01JDZ6Y5X1QW9T3V7N2K4M8P0R"),
        ("at", "2026-12-01T10:00:00Z"),
        ("actor", "operator"),
        ("action", "mcp.put"),
        ("changes", "{}"),
    ] {
        item.insert(k.to_owned(), A::S(v.to_owned()));
    }
    raw.put_item()
        .table_name(store.table())
        .set_item(Some(item))
        .send()
        .await
        .unwrap();
    let broken = check(&store, &tenant).await.broken.expect("found");
    assert_eq!(broken.reason, "a record has no chain fields");
}
