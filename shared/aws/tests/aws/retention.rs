//! R-1 (decision 0052): the retention index of conversations created before it existed.

use aws_sdk_dynamodb::types::AttributeValue;
use countersign_domain::ids::{CaseId, TenantId};
use countersign_domain::ports::{PurgeOutcome, Retention};
use std::collections::HashMap;

/// a conversation stored before the retention index (its case item only) is not
/// listed; the backfill indexes it (and is idempotent) and removes the old TTL (R-3: a
/// TTL deletes past a hold), and the purge then removes it.
#[tokio::test]
async fn r1_the_backfill_indexes_conversations_from_before_the_index() {
    let store = crate::contract::on_new_table(None).await;
    let sdk = aws_config::load_from_env().await;
    let client = countersign_aws::dynamo::DynamoStore::client(&sdk, None);
    let tenant = TenantId::from_ulid_text(&ulid::Ulid::new().to_string()).unwrap();
    let case = CaseId::from_ulid_text(&ulid::Ulid::new().to_string()).unwrap();
    let s = |v: &str| AttributeValue::S(v.to_owned());
    let legacy: HashMap<String, AttributeValue> = [
        ("pk", s(&format!("CONV#{tenant}#{case}"))),
        ("sk", s("A#CASE")),
        ("tenant", s(tenant.as_str())),
        ("case_id", s(case.as_str())),
        ("user", s("driver-42")),
        ("status", s("closed")),
        ("created_at", s("2025-01-02T03:04:05Z")),
        ("lang", s("en")),
        // The older version's deployment-wide TTL (R-3: it would delete past a hold).
        ("ttl", AttributeValue::N("4102444800".into())),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    client
        .put_item()
        .table_name(store.table())
        .set_item(Some(legacy))
        .send()
        .await
        .unwrap();
    assert!(
        store
            .retained(&tenant, None, 10)
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert!(store.backfill_retention_index().await.unwrap() >= 1);
    assert!(
        store.backfill_retention_index().await.unwrap() >= 1,
        "idempotent"
    );
    let item = client
        .get_item()
        .table_name(store.table())
        .key("pk", s(&format!("CONV#{tenant}#{case}")))
        .key("sk", s("A#CASE"))
        .send()
        .await
        .unwrap()
        .item
        .unwrap();
    assert!(!item.contains_key("ttl"), "the old TTL is removed");
    let listed = store.retained(&tenant, None, 10).await.unwrap().items;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].case, case);
    let created = countersign_domain::time::Timestamp::parse_utc("2025-01-02T03:04:05Z").unwrap();
    assert_eq!(listed[0].last_activity, created);
    assert!(matches!(
        store.purge(&tenant, &case, None).await.unwrap(),
        PurgeOutcome::Purged { .. }
    ));
    assert!(
        store
            .retained(&tenant, None, 10)
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

/// Confirm-path review N13: a conversation closed without ever having a proposal records
/// nothing, so it starts no audit chain: no head in its partition, and once purged nothing
/// of it is left anywhere (no moved head, no chain index entry).
#[tokio::test]
async fn n13_a_conversation_that_recorded_nothing_leaves_no_chain_behind() {
    use countersign_domain::ports::Conversations as _;
    let store = crate::contract::on_new_table(None).await;
    let f = countersign_testkit::contract::Fixture::default();
    let tenant = f.tenant();
    let case = f.open_case(&store, &tenant).await;
    store.close_case(&tenant, &case.id).await.unwrap();
    let everything = store.scan_everything().await.unwrap();
    let of_case: Vec<String> = everything
        .iter()
        .filter(|i| format!("{i:?}").contains(case.id.as_str()))
        .map(|i| format!("{:?} {:?}", i.get("pk"), i.get("sk")))
        .collect();
    assert!(
        !of_case.iter().any(|k| k.contains("A#CHAIN")),
        "an empty chain's head: {of_case:?}"
    );
    let outcome = store.purge(&tenant, &case.id, None).await.unwrap();
    assert!(
        matches!(outcome, PurgeOutcome::Purged { .. }),
        "{outcome:?}"
    );
    let left: Vec<String> = store
        .scan_everything()
        .await
        .unwrap()
        .iter()
        .filter(|i| {
            let pk = i
                .get("pk")
                .and_then(|v| v.as_s().ok())
                .cloned()
                .unwrap_or_default();
            pk.starts_with("AUDITHEAD#") || format!("{i:?}").contains(case.id.as_str())
        })
        .map(|i| format!("{:?} {:?}", i.get("pk"), i.get("sk")))
        .collect();
    assert_eq!(left, Vec::<String>::new());
}
