//! Benchmark (not a test): R-1's purge (decision 0052) against the local emulator — its
//! DynamoDB calls and time for 1,000 conversations, once with none due (the cost of
//! looking) and once with all due (the cost of removing). Each conversation has six
//! messages and one settled proposal, its audit records sealed under KMS-wrapped keys
//! (decisions 0053, 0055), so the purge also moves its chain head and deletes its key.
//! Run it with
//!
//!   infra/scripts/with-local-aws.sh cargo bench -p countersign-admin --bench purge_cost
//!
//! Times against moto measure the adapter plus the emulator, not DynamoDB; the calls are
//! what DynamoDB would bill.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use countersign_admin::retention::purge_tenant;
use countersign_aws::calls::CallLog;
use countersign_aws::dynamo::{DynamoStore, EnvelopeKeys, KmsWrap};
use countersign_domain::conversation::{MessageKind, Role};
use countersign_domain::ports::{Conversations as _, ProposalLock as _};
use countersign_domain::proposal::ProposalState;
use countersign_domain::retention::RetentionDays;
use countersign_testkit::contract::Fixture;
use std::sync::Arc;
use std::time::Instant;

const CONVERSATIONS: usize = 1000;
const MESSAGES: usize = 6;

#[tokio::main]
async fn main() {
    countersign_testkit::local_aws_endpoint();
    let sdk = aws_config::load_from_env().await;
    let table = format!(
        "cs-purge-bench-{}",
        ulid::Ulid::new().to_string().to_lowercase()
    );
    let direct = DynamoStore::client(&sdk, None);
    countersign_aws::bootstrap::ensure_table(&direct, &table)
        .await
        .unwrap();
    let calls = CallLog::default();
    let kms = countersign_aws::kms::KmsProofSigner::client(&sdk, None);
    let alias = format!(
        "alias/cs-purge-bench-{}",
        ulid::Ulid::new().to_string().to_lowercase()
    );
    countersign_aws::bootstrap::ensure_subject_key(&kms, &alias)
        .await
        .unwrap();
    let plain = DynamoStore::new(DynamoStore::client(&sdk, Some(&calls)), &table);
    let keys = EnvelopeKeys::new(plain.clone(), Arc::new(KmsWrap::new(kms, alias)));
    let store = plain.with_subject_keys(Arc::new(keys));
    let f = Fixture::default();
    let tenant = f.tenant();
    for i in 0..CONVERSATIONS {
        let case = f.open_case(&store, &tenant).await;
        let (p, presented) = f.proposal(&case, &format!("act_bench_{i}"));
        store.create_proposal(&p, &presented).await.unwrap();
        store
            .transition(
                &tenant,
                &case.id,
                &p.action_id,
                ProposalState::PendingConfirmation,
                ProposalState::Cancelled,
                None,
            )
            .await
            .unwrap();
        for n in 0..MESSAGES {
            let m = f.message(
                &case.id,
                Role::User,
                MessageKind::Text,
                &format!("message {n}"),
            );
            store.append_message(&tenant, &m).await.unwrap();
        }
    }
    let days = RetentionDays::new(30).unwrap();
    for (label, at) in [
        ("none due (looking)", f.now()),
        ("all due (removing)", f.now().plus_seconds(31 * 86_400)),
    ] {
        calls.reset();
        let t = Instant::now();
        let report = purge_tenant(&store, &tenant, days, at, None, usize::MAX)
            .await
            .unwrap();
        let elapsed = t.elapsed();
        println!(
            "{CONVERSATIONS} conversations of {MESSAGES} messages and a settled proposal, {label}: {:.2} s, \
             examined {}, purged {}, items {}",
            elapsed.as_secs_f64(),
            report.examined,
            report.purged,
            report.items
        );
        for (op, n) in calls.snapshot() {
            println!("  {op:<20} {n:>6}");
        }
    }
}
