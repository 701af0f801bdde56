//! B-4: the bridge's store on DynamoDB — the same contract as on SQLite, on the local
//! emulator and through the proxy that applies real DynamoDB's rules where the emulator
//! is kinder (transaction conflicts, client request tokens, lost answers). Needs the
//! emulator: `infra/scripts/with-local-aws.sh cargo test -p countersign-bridge --test dynamo`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/contract.rs"]
mod contract;
#[allow(dead_code, unreachable_pub, missing_debug_implementations)]
#[path = "../../shared/aws/tests/aws/faulty.rs"]
mod faulty;

use contract::{action, contract};
use countersign_bridge::store::dynamo::DynamoStore;
use countersign_bridge::store::{Claim, Store};
use countersign_provider_kit::ActionStatus;
use faulty::Faulty;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// A store on a new table, through `endpoint`: the table made by the operator (the
/// template makes it on AWS) and registered as `bridge/template.yaml`'s `BridgeTable`; the
/// store calls as the bridge function's role (I-1), so the emulator holds it to that
/// role's policy.
async fn on_new_table(endpoint: &str) -> DynamoStore {
    let operator = aws_config::from_env().endpoint_url(endpoint).load().await;
    let table = format!(
        "bridge-test-{}",
        ulid::Ulid::new().to_string().to_lowercase()
    );
    let client = aws_sdk_dynamodb::Client::new(&operator);
    DynamoStore::new(client.clone(), table.clone())
        .create_table()
        .await
        .unwrap();
    let arn = client
        .describe_table()
        .table_name(&table)
        .send()
        .await
        .unwrap()
        .table
        .and_then(|t| t.table_arn)
        .unwrap();
    client
        .tag_resource()
        .resource_arn(arn)
        .tags(
            aws_sdk_dynamodb::types::Tag::builder()
                .key("countersign:logical-id")
                .value("BridgeTable")
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let bridge = operator
        .to_builder()
        .credentials_provider(aws_sdk_dynamodb::config::SharedCredentialsProvider::new(
            aws_sdk_dynamodb::config::Credentials::new(
                "CSLOCALBRIDGE",
                "countersign-local",
                None,
                None,
                "bridge-role",
            ),
        ))
        .build();
    DynamoStore::new(aws_sdk_dynamodb::Client::new(&bridge), table)
}

async fn proxy() -> Faulty {
    let upstream = countersign_testkit::local_aws_endpoint();
    Faulty::start(&upstream, Duration::from_millis(5)).await
}

#[tokio::test]
async fn b4_the_store_contract_holds_on_dynamodb() {
    let store = on_new_table(&countersign_testkit::local_aws_endpoint()).await;
    contract(&store).await;
}

#[tokio::test]
async fn b4_the_store_contract_holds_under_real_dynamodbs_rules() {
    let proxy = proxy().await;
    let store = on_new_table(proxy.url()).await;
    contract(&store).await;
}

/// B-3 on DynamoDB: 32 preparations at once in one conversation (several bridge
/// instances), through the proxy that cancels conflicting transactions as DynamoDB does:
/// exactly one action is left pending, and no preparation's success is a lie.
#[tokio::test]
async fn b3_b4_one_pending_per_conversation_under_32_concurrent_preparations_on_dynamodb() {
    let proxy = proxy().await;
    let store = Arc::new(on_new_table(proxy.url()).await);
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            let store = store.clone();
            tokio::spawn(async move { store.prepare(&action(&format!("x{i}"), "c1", 400)).await })
        })
        .collect();
    let mut prepared = 0;
    for t in tasks {
        // A preparation that kept losing races answers an error (the model may retry);
        // it never reports a success it did not have.
        if t.await.unwrap().is_ok() {
            prepared += 1;
        }
    }
    let mut pending = Vec::new();
    let mut stored = 0;
    for i in 0..32 {
        if let Some(a) = store.get("ten_1", &format!("x{i}")).await.unwrap() {
            stored += 1;
            if a.status == ActionStatus::PendingConfirmation {
                pending.push(a.action_id);
            }
        }
    }
    assert_eq!(pending.len(), 1, "exactly one pending: {pending:?}");
    assert_eq!(
        stored, prepared,
        "an action exists exactly when its preparation succeeded"
    );
    assert!(prepared >= 1);
}

/// A claim whose answer is lost (DynamoDB applied it; the SDK resends under the same
/// client request token) is still one claim: the resend is answered as the first, not
/// refused as a replay, and the action runs once.
#[tokio::test]
async fn b3_b4_a_claim_whose_answer_was_lost_is_claimed_once() {
    let proxy = proxy().await;
    let store = on_new_table(proxy.url()).await;
    store.prepare(&action("a1", "c1", 400)).await.unwrap();
    proxy.lose_next(1);
    let claim = store.claim("ten_1", "a1", "j1", 500, 200).await.unwrap();
    assert!(
        matches!(&claim, Claim::Claimed(a) if a.status == ActionStatus::Executing),
        "{claim:?}"
    );
    assert!(matches!(
        store.claim("ten_1", "a1", "j2", 500, 200).await.unwrap(),
        Claim::NotPending(_)
    ));
    store.prepare(&action("a2", "c2", 400)).await.unwrap();
    assert!(matches!(
        store.claim("ten_1", "a2", "j1", 500, 200).await.unwrap(),
        Claim::Replayed
    ));
    // A preparation whose answer was lost is one preparation too.
    proxy.lose_next(1);
    assert_eq!(
        store.prepare(&action("a3", "c2", 400)).await.unwrap(),
        Some("a2".into())
    );
    assert_eq!(
        store.get("ten_1", "a3").await.unwrap().unwrap().status,
        ActionStatus::PendingConfirmation
    );
    let c = proxy.counters();
    assert_eq!(c.lost.load(Ordering::Relaxed), 2, "both answers were lost");
    assert_eq!(c.mismatches.load(Ordering::Relaxed), 0);
    assert_eq!(c.reused_after_answer.load(Ordering::Relaxed), 0);
    assert_eq!(c.inconsistent_reads.load(Ordering::Relaxed), 0);
}

/// One proof sent to two instances at once (a replay racing the real call): one claim,
/// one replay — never two successes.
#[tokio::test]
async fn b3_b4_the_same_proof_at_two_instances_at_once_is_claimed_once() {
    let proxy = proxy().await;
    let store = Arc::new(on_new_table(proxy.url()).await);
    for round in 0..8 {
        let id = format!("r{round}");
        store.prepare(&action(&id, &id, 400)).await.unwrap();
        let jti = format!("jti-{round}");
        let claims: Vec<_> = (0..2)
            .map(|_| {
                let (store, id, jti) = (store.clone(), id.clone(), jti.clone());
                tokio::spawn(async move { store.claim("ten_1", &id, &jti, 500, 200).await })
            })
            .collect();
        let mut claimed = 0;
        for c in claims {
            if matches!(c.await.unwrap(), Ok(Claim::Claimed(_))) {
                claimed += 1;
            }
        }
        assert_eq!(claimed, 1, "round {round}");
    }
}
