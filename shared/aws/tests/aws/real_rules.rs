//! The confirm path under real DynamoDB's rules, which the emulator does not apply:
//! every test here runs through [`Faulty`], the proxy that cancels concurrent transactions
//! on one item, enforces client request tokens, loses answers and throttles.

use crate::common::{Env, env};
use crate::faulty::Faulty;
use countersign_aws::dynamo::DynamoStore;
use countersign_domain::conversation::Case;
use countersign_domain::ports::AuditRecords;
use countersign_domain::ports::Conversations;
use countersign_domain::ports::ProposalLock;
use countersign_domain::ports::TransitionOutcome;
use countersign_domain::ports::WidgetKeys;
use countersign_domain::proposal::{Proposal, ProposalState};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

const N: usize = 64;

/// A store on a fresh table whose DynamoDB traffic goes through a new proxy.
pub(crate) async fn through_proxy(env: &Env) -> (DynamoStore, Faulty) {
    let plain = env.fresh_store().await;
    let upstream = countersign_testkit::local_aws_endpoint();
    // Real transactions take milliseconds; holding each in flight for 5 ms gives
    // concurrent ones the overlap they have on the real service.
    let proxy = Faulty::start(&upstream, Duration::from_millis(5)).await;
    let conf = aws_sdk_dynamodb::config::Builder::from(&env.sdk)
        .endpoint_url(proxy.url())
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(conf);
    let store = DynamoStore::new(client, plain.table());
    (store, proxy)
}

/// A pending proposal prepared under the tenant's settings (1, "v1") in a new case.
async fn pending(env: &Env, store: &DynamoStore, case: &Case, n: usize) -> Proposal {
    let (p, m) = env.proposal(case, &format!("act_rr_{n}"), 1);
    let p = Env::with_settings(p, 1, "v1");
    let created = store.create_proposal(&p, &m).await.unwrap();
    assert!(
        matches!(
            created,
            countersign_domain::ports::CreateProposalOutcome::Applied { .. }
        ),
        "{created:?}"
    );
    p
}

/// Runs one confirmation of each proposal, all at once.
async fn confirm_all(
    env: &Arc<Env>,
    store: &DynamoStore,
    ps: Vec<Proposal>,
) -> Vec<TransitionOutcome> {
    let barrier = Arc::new(tokio::sync::Barrier::new(ps.len()));
    let tasks: Vec<_> = ps
        .into_iter()
        .map(|p| {
            let (store, env, barrier) = (store.clone(), env.clone(), barrier.clone());
            tokio::spawn(async move {
                let w = env.confirm_write(&p, &p.presented.message_id);
                barrier.wait().await;
                store.confirm(&w).await.unwrap()
            })
        })
        .collect();
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

/// The proxy's rule is real DynamoDB's: transactions that only condition-check one shared
/// item (as every confirmation did with the tenant's configuration item before decision
/// 0019) conflict with each other when they overlap.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_proxy_cancels_concurrent_transactions_on_one_item() {
    use aws_sdk_dynamodb::types::{AttributeValue as A, ConditionCheck, Put, TransactWriteItem};
    let env = env().await;
    let (store, proxy) = through_proxy(&env).await;
    let conf = aws_sdk_dynamodb::config::Builder::from(&env.sdk)
        .endpoint_url(proxy.url())
        .build();
    let client = aws_sdk_dynamodb::Client::from_conf(conf);
    let table = store.table().to_owned();
    client
        .put_item()
        .table_name(&table)
        .item("pk", A::S("shared".into()))
        .item("sk", A::S("item".into()))
        .send()
        .await
        .unwrap();
    let barrier = Arc::new(tokio::sync::Barrier::new(8));
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let (client, table, barrier) = (client.clone(), table.clone(), barrier.clone());
            tokio::spawn(async move {
                let check = ConditionCheck::builder()
                    .table_name(&table)
                    .key("pk", A::S("shared".into()))
                    .key("sk", A::S("item".into()))
                    .condition_expression("attribute_exists(pk)")
                    .build()
                    .unwrap();
                let put = Put::builder()
                    .table_name(&table)
                    .item("pk", A::S(format!("own-{i}")))
                    .item("sk", A::S("item".into()))
                    .build()
                    .unwrap();
                barrier.wait().await;
                client
                    .transact_write_items()
                    .transact_items(TransactWriteItem::builder().put(put).build())
                    .transact_items(TransactWriteItem::builder().condition_check(check).build())
                    .send()
                    .await
                    .is_ok()
            })
        })
        .collect();
    let mut ok = 0;
    for t in tasks {
        ok += usize::from(t.await.unwrap());
    }
    assert!(ok >= 1);
    assert!(
        proxy.counters().conflicts.load(Ordering::SeqCst) > 0,
        "overlapping transactions on one item must conflict"
    );
}

/// Issue 13 / C-8 / P-2: 64 confirmations at once in 64 conversations of one tenant
/// complete with zero transaction conflicts: the confirm transaction touches no item
/// shared by a tenant's conversations. Each attempt's token is its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn c8_sixty_four_confirmations_in_sixty_four_conversations_never_conflict() {
    let env = Arc::new(env().await);
    let (store, proxy) = through_proxy(&env).await;
    let tenant = env.tenant();
    env.configure(&store, &tenant, None, (1, 1, "v1")).await;
    let mut ps = Vec::new();
    for n in 0..N {
        let case = env.open_case(&store, &tenant).await;
        ps.push(pending(&env, &store, &case, n).await);
    }
    let before = proxy.counters().conflicts.load(Ordering::SeqCst);
    let outcomes = confirm_all(&env, &store, ps).await;
    assert!(
        outcomes.iter().all(|o| *o == TransitionOutcome::Applied),
        "{outcomes:?}"
    );
    let c = proxy.counters();
    assert_eq!(
        c.conflicts.load(Ordering::SeqCst) - before,
        0,
        "no conflicts"
    );
    assert_eq!(c.mismatches.load(Ordering::SeqCst), 0);
    assert_eq!(c.reused_after_answer.load(Ordering::SeqCst), 0);
}

/// P-2 under real conflicts: 64 confirmations of one proposal conflict and retry, and
/// exactly one is applied; no client request token is reused after a definite answer
/// (real DynamoDB would answer the stale outcome or `IdempotentParameterMismatch`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn p2_sixty_four_confirmations_of_one_proposal_apply_once_under_real_conflicts() {
    let env = Arc::new(env().await);
    let (store, proxy) = through_proxy(&env).await;
    let tenant = env.tenant();
    env.configure(&store, &tenant, None, (1, 1, "v1")).await;
    let case = env.open_case(&store, &tenant).await;
    let p = pending(&env, &store, &case, 0).await;
    let outcomes = confirm_all(&env, &store, vec![p.clone(); N]).await;
    let applied = outcomes
        .iter()
        .filter(|o| **o == TransitionOutcome::Applied)
        .count();
    assert_eq!(applied, 1, "{outcomes:?}");
    for o in &outcomes {
        assert!(
            matches!(
                o,
                TransitionOutcome::Applied
                    | TransitionOutcome::Conflict {
                        current: Some(ProposalState::Executing)
                    }
            ),
            "{o:?}"
        );
    }
    let c = proxy.counters();
    assert!(
        c.conflicts.load(Ordering::SeqCst) > 0,
        "the rule was exercised"
    );
    assert_eq!(c.mismatches.load(Ordering::SeqCst), 0);
    assert_eq!(c.reused_after_answer.load(Ordering::SeqCst), 0);
    let stored = store
        .proposal(&tenant, &case.id, &p.action_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.state, ProposalState::Executing);
}

/// A-35 after a lost answer: the confirm transaction commits, every answer to it (and to
/// the SDK's resends) is lost; the store reads the proposal back, finds this request's
/// confirmation recorded, and reports `Applied`, so the caller goes on to execute.
#[tokio::test]
async fn a35_a_confirmation_whose_answer_is_lost_is_read_back_as_applied() {
    let (outcome, forwarded, _, proxy) = confirm_once_under(|p| p.lose_next(100)).await;
    assert_eq!(outcome, TransitionOutcome::Applied);
    let c = proxy.counters();
    assert!(c.lost.load(Ordering::SeqCst) >= 1, "the answers were lost");
    assert_eq!(forwarded, 1, "applied once");
    assert_eq!(c.mismatches.load(Ordering::SeqCst), 0);
}

/// Throttled transactions are refused before anything is applied; the SDK's retries
/// carry the confirmation through, and it is applied once.
#[tokio::test]
async fn a_throttled_confirmation_is_applied_once() {
    let (outcome, forwarded, _, _) = confirm_once_under(|p| p.throttle_next(2)).await;
    assert_eq!(outcome, TransitionOutcome::Applied);
    assert_eq!(forwarded, 1);
}

/// The model's history is read consistently: the message stored milliseconds before the
/// turn began is in it.
#[tokio::test]
async fn the_history_the_model_reads_is_a_consistent_read() {
    let env = Arc::new(env().await);
    let (store, proxy) = through_proxy(&env).await;
    let tenant = env.tenant();
    let case = env.open_case(&store, &tenant).await;
    let before = proxy.counters().inconsistent_reads.load(Ordering::SeqCst);
    store.recent_messages(&tenant, &case.id, 20).await.unwrap();
    store.load(&tenant, &case.id).await.unwrap();
    // Issue 27: and so is the page of messages the widget reads.
    store
        .list_messages(&tenant, &case.id, None, 50)
        .await
        .unwrap();
    assert_eq!(
        proxy.counters().inconsistent_reads.load(Ordering::SeqCst) - before,
        0
    );
}

/// What one confirmation through the proxy did: its outcome, the transactions forwarded
/// for it, and the proposal afterwards (which must record this request's message).
async fn confirm_once_under(
    plan: impl FnOnce(&Faulty),
) -> (TransitionOutcome, usize, Proposal, Faulty) {
    let env = Arc::new(env().await);
    let (store, proxy) = through_proxy(&env).await;
    let tenant = env.tenant();
    env.configure(&store, &tenant, None, (1, 1, "v1")).await;
    let case = env.open_case(&store, &tenant).await;
    let p = pending(&env, &store, &case, 0).await;
    let w = env.confirm_write(&p, &p.presented.message_id);
    let before = proxy.counters().forwarded.load(Ordering::SeqCst);
    plan(&proxy);
    let outcome = store.confirm(&w).await.unwrap();
    // A detached transaction may still be running: let it finish before counting.
    tokio::time::sleep(crate::faulty::DETACHED_RUN).await;
    let forwarded = proxy.counters().forwarded.load(Ordering::SeqCst) - before;
    let stored = store
        .proposal(&tenant, &case.id, &p.action_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.state, ProposalState::Executing);
    assert_eq!(stored.confirmation_message_id, Some(w.message.id.clone()));
    (outcome, forwarded, stored, proxy)
}

/// Issue 27: the confirm write's answer is lost while it is still running; the resend
/// under its token meets `TransactionInProgressException` (which proves nothing), resends
/// again, and learns the commit: `Applied`, applied once.
#[tokio::test]
async fn a35_a_confirmation_still_running_when_resent_is_applied_once() {
    let (outcome, forwarded, _, proxy) = confirm_once_under(|p| p.detach_next(1)).await;
    assert_eq!(outcome, TransitionOutcome::Applied);
    assert_eq!(forwarded, 1, "applied once");
    assert!(proxy.counters().in_progress.load(Ordering::SeqCst) >= 1);
    assert_eq!(proxy.counters().mismatches.load(Ordering::SeqCst), 0);
}

/// Issue 27: the confirm write is lost before it reaches DynamoDB (a 500, nothing
/// applied); the resend under the same token applies it.
#[tokio::test]
async fn a35_a_confirmation_lost_on_the_way_is_resent_and_applied() {
    let (outcome, forwarded, _, proxy) = confirm_once_under(|p| p.drop_next(1)).await;
    assert_eq!(outcome, TransitionOutcome::Applied);
    assert_eq!(forwarded, 1);
    assert_eq!(proxy.counters().dropped.load(Ordering::SeqCst), 1);
}

/// Issue 27: after an answer lost on a committed write, the resends are throttled; a
/// throttle proves only that the resend was not applied, not the first attempt, so the
/// store keeps resending and learns the commit instead of answering "not applied".
#[tokio::test]
async fn a35_a_refusal_after_an_unknown_answer_does_not_lose_the_confirmation() {
    let (outcome, forwarded, _, proxy) = confirm_once_under(|p| {
        p.lose_next(1);
        p.throttle_resends(3);
    })
    .await;
    assert_eq!(outcome, TransitionOutcome::Applied);
    assert_eq!(forwarded, 1);
    assert_eq!(proxy.counters().lost.load(Ordering::SeqCst), 1);
}

/// Issue 27, decision 0043: a preparation no longer includes the tenant's settings item
/// (C-8 is read before it), so an admin save overlapping it meets no conflict and both
/// apply; two configuration changes that overlap on the tenant chain's head (a settings
/// save and a new widget credential) meet `TransactionConflict`, which is no refusal: the
/// later one is retried and applied (`configure` asserts `Applied`).
#[tokio::test]
async fn an_admin_save_overlapping_a_preparation_or_another_change_is_never_refused() {
    use countersign_domain::ports::{Ids as _, WidgetKey};
    let env = Arc::new(env().await);
    let (store, proxy) = through_proxy(&env).await;
    let tenant = env.tenant();
    env.configure(&store, &tenant, None, (1, 1, "v1")).await;
    let case = env.open_case(&store, &tenant).await;
    let before = proxy.counters().conflicts.load(Ordering::SeqCst);
    // The preparation stays in flight for a while; the save starts meanwhile.
    proxy.slow_next(1);
    tokio::join!(pending(&env, &store, &case, 0), async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        env.configure(&store, &tenant, Some(1), (2, 1, "v1")).await;
    });
    assert_eq!(
        proxy.counters().conflicts.load(Ordering::SeqCst),
        before,
        "a preparation and a save touch no common item"
    );
    // A credential's creation stays in flight; a save starts meanwhile, on the same head.
    let key = WidgetKey {
        id: env.ids.widget_key_id(),
        created_at: env.fixture.now(),
        allowed_origins: Vec::new(),
        retires_at: None,
    };
    let audit = env
        .fixture
        .audit("widgetCredential.create", serde_json::json!({}));
    proxy.slow_next(1);
    let (created, ()) = tokio::join!(store.put_widget_key(&tenant, &key, &audit), async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        env.configure(&store, &tenant, Some(2), (3, 1, "v1")).await;
    });
    created.unwrap();
    assert!(
        proxy.counters().conflicts.load(Ordering::SeqCst) > before,
        "the save ran into the credential's creation"
    );
    let trail = store.audit_trail(&tenant).await.unwrap();
    let report = countersign_domain::audit_chain::verify_trail(tenant.as_str(), &trail);
    assert_eq!(report.broken, None, "{report:?}");
}

/// N-1 (confirm-path review N3): the person's double submit reaches two instances (the
/// chat and the page) whose clocks are 2 s apart, and every answer of the confirm write is
/// lost, so each instance decides "did my write commit?" by reading back. 50 times: exactly
/// one of the two is `Applied` (one execution), and it is the one whose attempt is
/// recorded. Half the runs give both writes the same message id — what two instances
/// floored at one presentation minted before N-1 — so the read-back is held to the
/// attempt alone; the other half take their ids from two `UlidIds` floored at a
/// presentation minted 2 s ahead (the ids must differ). The resend window is short here
/// only to keep the suite fast.
#[tokio::test]
async fn n1_a_double_submit_under_clock_skew_with_every_answer_lost_executes_once() {
    use countersign_aws::system::UlidIds;
    use countersign_domain::ids::MessageId;
    use countersign_domain::ports::Ids as _;
    let env = Arc::new(env().await);
    let (store, proxy) = through_proxy(&env).await;
    let store = store.with_resend_window(Duration::from_millis(200));
    let tenant = env.tenant();
    env.configure(&store, &tenant, None, (1, 1, "v1")).await;
    for run in 0..50 {
        let case = env.open_case(&store, &tenant).await;
        let p = pending(&env, &store, &case, run).await;
        let mut chat = env.confirm_write(&p, &p.presented.message_id);
        let mut page = env.confirm_write(&p, &p.presented.message_id);
        if run % 2 == 0 {
            page.message.id = chat.message.id.clone();
        } else {
            let ahead = ulid::Ulid::from_parts(ulid::Ulid::new().timestamp_ms() + 2_000, 1);
            let ahead = MessageId::from_ulid_text(&ahead.to_string()).unwrap();
            let (a, b) = (UlidIds::default(), UlidIds::default());
            a.observe_message(&ahead);
            b.observe_message(&ahead);
            chat.message.id = a.message_id();
            page.message.id = b.message_id();
            assert_ne!(
                chat.message.id, page.message.id,
                "ids unique across instances"
            );
        }
        chat.attempt = format!("chat-{run}");
        page.attempt = format!("page-{run}");
        proxy.lose_every_answer(true);
        let (x, y) = tokio::join!(store.confirm(&chat), store.confirm(&page));
        proxy.lose_every_answer(false);
        let applied: Vec<&str> = [(x, &chat), (y, &page)]
            .into_iter()
            .filter(|(o, _)| matches!(o, Ok(TransitionOutcome::Applied)))
            .map(|(_, w)| w.attempt.as_str())
            .collect();
        assert_eq!(applied.len(), 1, "run {run}: {applied:?} applied");
        let stored = store
            .proposal(&tenant, &case.id, &p.action_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored.state, ProposalState::Executing);
        assert_eq!(
            stored.confirm_attempt.as_deref(),
            Some(applied[0]),
            "run {run}"
        );
    }
    assert!(proxy.counters().lost.load(Ordering::SeqCst) >= 50);
}
