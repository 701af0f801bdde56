//! Decision 0043 on the emulator: one tenant's preparations and confirmations spread their
//! tenant-level index items (C-8 registrations, unsettled entries, conversation audit
//! records, the chain index) over 16 partition keys, so none of the tenant's keys runs hot
//! — held through the proxy's per-partition write limit, which real DynamoDB enforces and
//! the emulator does not; and index items written before the shards, in the tenant's own
//! partition, are still listed, noted, settled and swept.

use crate::contract::on_new_table;
use crate::faulty::Faulty;
use aws_sdk_dynamodb::types::AttributeValue as A;
use countersign_aws::dynamo::DynamoStore;
use countersign_domain::ids::{CaseId, TenantId};
use countersign_domain::ports::AuditRecords;
use countersign_domain::ports::ProposalLock;
use countersign_domain::ports::SettingsFence;
use countersign_domain::ports::UnsettledIndex;
use countersign_domain::ports::{CreateProposalOutcome, TransitionOutcome};
use countersign_domain::proposal::{Proposal, ProposalState};
use countersign_domain::texts::Language;
use countersign_testkit::contract::Fixture;
use futures::future::join_all;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering::SeqCst;
use std::time::Duration;

type Item = HashMap<String, A>;

/// Every item of the table (a test table is small).
async fn scan(store: &DynamoStore) -> Vec<Item> {
    countersign_testkit::local_aws_endpoint();
    let raw = aws_sdk_dynamodb::Client::new(&aws_config::load_from_env().await);
    let out = raw.scan().table_name(store.table()).send().await.unwrap();
    out.items.unwrap_or_default()
}

fn text<'a>(i: &'a Item, k: &str) -> &'a str {
    i.get(k)
        .and_then(|v| v.as_s().ok())
        .map_or("", String::as_str)
}

/// Prepares and confirms a registered proposal in `case`.
async fn prepare_and_confirm(
    store: &DynamoStore,
    f: &Fixture,
    case: &countersign_domain::conversation::Case,
    action: String,
) -> Result<(Proposal, TransitionOutcome), countersign_domain::ports::StoreError> {
    let (p, m) = f.registered(case, &action, (1, "v1"));
    let created = store.create_proposal(&p, &m).await?;
    assert!(
        matches!(created, CreateProposalOutcome::Applied { .. }),
        "{created:?}"
    );
    let w = f.confirm_write(&p, &p.presented.message_id);
    let outcome = store.confirm(&w).await?;
    Ok((p, outcome))
}

/// P-2, C-8, issue 27: 40 conversations of one tenant prepare and confirm at once under a
/// per-partition limit of 64 item writes (real DynamoDB's 1,000 units a second, scaled
/// down): nothing is throttled, because the ~200 index items they write are spread over
/// the tenant's 16 shards; in the tenant's own partition, only the settings it
/// condition-checks and the configuration chain. Without the shards every one of them is
/// in `TENANT#<t>` and the limit refuses the run.
#[tokio::test]
async fn hot_key_one_tenants_confirmations_spread_over_partitions() {
    const N: usize = 40;
    let upstream = countersign_testkit::local_aws_endpoint();
    let proxy = Faulty::start(&upstream, Duration::from_millis(5)).await;
    let store = on_new_table(Some(proxy.url())).await;
    let f = Fixture::default();
    let tenant = f.tenant();
    f.configure(&store, &tenant, None, (1, 1, "v1")).await;
    let cases = join_all((0..N).map(|_| f.open_case(&store, &tenant))).await;
    proxy.limit_partitions(64, Duration::from_secs(120));
    let runs = cases
        .iter()
        .enumerate()
        .map(|(i, case)| prepare_and_confirm(&store, &f, case, format!("act_hot_{i}")));
    let done = join_all(runs).await;
    assert_eq!(
        proxy.counters().partition_throttles.load(SeqCst),
        0,
        "hot partitions: {:?}",
        proxy.counters().hot_partitions.lock().unwrap()
    );
    for run in done {
        assert_eq!(run.unwrap().1, TransitionOutcome::Applied);
    }
    assert_eq!(store.list_unsettled(&tenant).await.unwrap().len(), N);

    // Where the index items went: shards of the tenant, never its own partition.
    let own = format!("TENANT#{tenant}");
    let mut per_partition: BTreeMap<String, usize> = BTreeMap::new();
    for i in scan(&store).await {
        let (pk, sk) = (text(&i, "pk"), text(&i, "sk"));
        let index = ["PENDING#", "UNSETTLED#", "AUDITCHAIN#"]
            .iter()
            .any(|p| sk.starts_with(p))
            || (sk.starts_with("AUDIT#") && text(&i, "chain") != "tenant");
        if index {
            assert_ne!(pk, own, "{sk} is in the tenant's own partition");
            assert!(pk.starts_with(&format!("{own}#")), "{pk}");
            *per_partition.entry(pk.to_owned()).or_default() += 1;
        }
    }
    assert_eq!(per_partition.values().sum::<usize>(), N * 5);
    assert!(per_partition.len() >= 12, "{per_partition:?}");
}

/// Moves the item `sk` of `tenant` from its shard to the tenant's own partition, as a
/// deployment from before the shards wrote it.
async fn move_to_own_partition(store: &DynamoStore, tenant: &TenantId, sk: &str) {
    let raw = aws_sdk_dynamodb::Client::new(&aws_config::load_from_env().await);
    let mut item = scan(store)
        .await
        .into_iter()
        .find(|i| text(i, "sk") == sk && text(i, "pk").starts_with(&format!("TENANT#{tenant}#")))
        .unwrap_or_else(|| panic!("{sk} is in a shard"));
    let old_key = HashMap::from([
        ("pk".to_owned(), item["pk"].clone()),
        ("sk".to_owned(), item["sk"].clone()),
    ]);
    raw.delete_item()
        .table_name(store.table())
        .set_key(Some(old_key))
        .send()
        .await
        .unwrap();
    item.insert("pk".into(), A::S(format!("TENANT#{tenant}")));
    raw.put_item()
        .table_name(store.table())
        .set_item(Some(item))
        .send()
        .await
        .unwrap();
}

/// C-8, decision 0028, decision 0043's migration: an unsettled entry and a registration written before the
/// shards (in the tenant's own partition) are listed, noted and removed on settlement, and
/// found and removed by a settings change's sweep.
#[tokio::test]
async fn hot_key_index_items_from_before_the_shards_still_count() {
    let store = on_new_table(None).await;
    let f = Fixture::default();
    let tenant = f.tenant();
    f.configure(&store, &tenant, None, (1, 1, "v1")).await;
    let case = f.open_case(&store, &tenant).await;
    let (running, outcome) = prepare_and_confirm(&store, &f, &case, "act_old_exec".into())
        .await
        .unwrap();
    assert_eq!(outcome, TransitionOutcome::Applied);
    move_to_own_partition(&store, &tenant, "UNSETTLED#act_old_exec").await;
    let listed = store.list_unsettled(&tenant).await.unwrap();
    assert_eq!(listed.len(), 1);
    store
        .note_status(&tenant, &running.action_id, "still running", f.now())
        .await
        .unwrap();
    let listed = store.list_unsettled(&tenant).await.unwrap();
    assert_eq!(
        listed[0].last_status.as_ref().map(|(a, _)| a.as_str()),
        Some("still running")
    );
    // N-8 (confirm-path review N12): the backfill moves it into its shard, so that the
    // settlement writes nothing in the tenant's own partition.
    {
        use countersign_domain::ports::PersonIndex as _;
        assert!(store.backfill_person_index(usize::MAX).await.unwrap());
    }
    let own = format!("TENANT#{tenant}");
    let placed: Vec<String> = scan(&store)
        .await
        .iter()
        .filter(|i| text(i, "sk") == "UNSETTLED#act_old_exec")
        .map(|i| text(i, "pk").to_owned())
        .collect();
    assert_eq!(placed.len(), 1, "{placed:?}");
    assert_ne!(placed[0], own, "moved into its shard");
    let listed = store.list_unsettled(&tenant).await.unwrap();
    assert_eq!(
        listed[0].last_status.as_ref().map(|(a, _)| a.as_str()),
        Some("still running"),
        "with what was noted"
    );
    let (from, to) = (ProposalState::Executing, ProposalState::Completed);
    let settled = store
        .transition(&tenant, &case.id, &running.action_id, from, to, None)
        .await
        .unwrap();
    assert_eq!(settled, TransitionOutcome::Applied);
    assert!(store.list_unsettled(&tenant).await.unwrap().is_empty());
    assert!(
        !scan(&store)
            .await
            .iter()
            .any(|i| text(i, "sk").starts_with("UNSETTLED#")),
        "the old entry is removed with the settlement"
    );

    // A registration from before the shards: the sweep finds it and removes it.
    let other = f.open_case(&store, &tenant).await;
    let (p, m) = f.registered(&other, "act_old_pending", (1, "v1"));
    store.create_proposal(&p, &m).await.unwrap();
    move_to_own_partition(&store, &tenant, "PENDING#act_old_pending").await;
    f.configure(&store, &tenant, Some(1), (2, 2, "v1")).await;
    let notice = |case: &CaseId, lang: Language| f.invalidated(case, lang);
    let swept = store.invalidate_pending(&tenant, Some((2, "v1")), &notice);
    assert_eq!(swept.await.unwrap(), 1);
    let stored = store.proposal(&tenant, &other.id, &p.action_id).await;
    assert_eq!(stored.unwrap().unwrap().state, ProposalState::Cancelled);
    assert!(
        !scan(&store)
            .await
            .iter()
            .any(|i| text(i, "sk").starts_with("PENDING#")),
        "the old registration is removed by the sweep"
    );
}

/// L-1, L-3, decision 0043: the audit page merges the tenant's partitions: paging by 3 through a
/// trail spread over the tenant's own partition and several shards gives every record
/// once, newest first, as one page of all of them does.
#[tokio::test]
async fn hot_key_audit_pages_merge_the_shards_in_time_order() {
    let store = on_new_table(None).await;
    let f = Fixture::default();
    let tenant = f.tenant();
    f.configure(&store, &tenant, None, (1, 1, "v1")).await;
    for i in 0..6 {
        let case = f.open_case(&store, &tenant).await;
        prepare_and_confirm(&store, &f, &case, format!("act_page_{i}"))
            .await
            .unwrap();
    }
    let all = store.list_audit(&tenant, None, 100).await.unwrap();
    let ids: Vec<_> = all.items.iter().map(|a| a.id.clone()).collect();
    assert_eq!(ids.len(), 1 + 6 * 2);
    let mut newest_first = ids.clone();
    newest_first.sort_by(|a, b| b.cmp(a));
    assert_eq!(ids, newest_first);
    let mut paged = Vec::new();
    let mut before = None;
    loop {
        let page = store.list_audit(&tenant, before.as_ref(), 3).await.unwrap();
        paged.extend(page.items.iter().map(|a| a.id.clone()));
        match page.next {
            Some(next) => before = Some(next),
            None => break,
        }
    }
    assert_eq!(paged, ids);
    let partitions: std::collections::BTreeSet<String> = scan(&store)
        .await
        .iter()
        .filter(|i| text(i, "sk").starts_with("AUDIT#"))
        .map(|i| text(i, "pk").to_owned())
        .collect();
    assert!(partitions.len() >= 3, "{partitions:?}");
}
