//! Benchmark (not a test): for each store operation, how many AWS calls it makes and its
//! latency against the local emulator. Run it with
//!
//!   infra/scripts/with-local-aws.sh cargo bench -p countersign-aws --bench store_calls
//!
//! Each operation runs `ITERATIONS` times on fresh state; setup is not timed. Latencies
//! against moto measure the adapter plus the emulator, not DynamoDB.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use countersign_aws::AwsSettings;
use countersign_aws::calls::CallLog;
use countersign_aws::dynamo::DynamoStore;
use countersign_aws::kms::KmsProofSigner;
use countersign_aws::secrets::SecretsManagerStore;
use countersign_aws::system::{SystemClock, UlidIds};
use countersign_domain::conversation::{Case, CaseStatus, MessageKind, Role};
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::{ActionId, OperationName, TenantId, UserId};
use countersign_domain::ports::Conversations;
use countersign_domain::ports::ProposalLock;
use countersign_domain::ports::{Clock, ConfirmWrite, Ids, NewMessage, ProofSigner, SecretStore};
use countersign_domain::proposal::{Presentation, Proposal, ProposalState};
use countersign_domain::secret::SecretString;
use countersign_domain::text::SafeText;
use std::collections::BTreeMap;
use std::future::Future;
use std::time::{Duration, Instant};

const ITERATIONS: usize = 50;

struct Stats {
    name: &'static str,
    calls: BTreeMap<String, f64>,
    times: Vec<Duration>,
}

async fn measure<S, F, Fut>(
    name: &'static str,
    calls: &CallLog,
    mut setup: impl FnMut() -> S,
    mut op: F,
) -> Stats
where
    S: Future,
    F: FnMut(S::Output) -> Fut,
    Fut: Future,
{
    let mut times = Vec::with_capacity(ITERATIONS);
    let mut total: BTreeMap<String, u64> = BTreeMap::new();
    for _ in 0..ITERATIONS {
        let input = setup().await;
        calls.reset();
        let t = Instant::now();
        op(input).await;
        times.push(t.elapsed());
        for (k, v) in calls.snapshot() {
            *total.entry(k).or_default() += v;
        }
    }
    times.sort();
    let per_op = total
        .into_iter()
        .map(|(k, v)| (k, v as f64 / ITERATIONS as f64))
        .collect();
    Stats {
        name,
        calls: per_op,
        times,
    }
}

fn message(
    ids: &UlidIds,
    case: &Case,
    kind: MessageKind,
    reply_to: Option<countersign_domain::ids::MessageId>,
) -> NewMessage {
    NewMessage {
        id: ids.message_id(),
        case: case.id.clone(),
        role: if reply_to.is_some() {
            Role::User
        } else {
            Role::Assistant
        },
        kind,
        content: "text".into(),
        reply_to,
        created_at: SystemClock.now(),
    }
}

fn proposal(ids: &UlidIds, case: &Case) -> (Proposal, Vec<NewMessage>) {
    let now = SystemClock.now();
    let summary = "Move session 4812 to car GR86.";
    let m = message(ids, case, MessageKind::Proposal, None);
    let p = Proposal {
        action_id: ActionId::parse(ulid::Ulid::new().to_string()).unwrap(),
        tenant: case.tenant.clone(),
        user: case.user.clone(),
        case: case.id.clone(),
        operation: OperationName::parse("reassign_session_car").unwrap(),
        summary: SafeText::check(summary).unwrap(),
        summary_hash: Sha256Hex::digest(summary),
        arguments_hash: Sha256Hex::digest("{}"),
        expires_at: now.plus_seconds(300),
        prepared_at: now,
        state: ProposalState::PendingConfirmation,
        presented: Presentation {
            replaced: None,
            first_served_at: None,
            message_id: m.id.clone(),
        },
        confirmation_message_id: None,
        confirm_attempt: None,
        config_version: 1,
        secret_version: None,
        server_url: None,
        audience: None,
        needs_passkey: false,
        prepared_outside: false,
    };
    (
        p,
        vec![m, message(ids, case, MessageKind::Instructions, None)],
    )
}

/// The stores under measurement, on their own table, keys and secrets, counting calls.
struct Bench {
    calls: CallLog,
    store: DynamoStore,
    signer: KmsProofSigner,
    secrets: SecretsManagerStore,
    ids: UlidIds,
    tenant: TenantId,
}

impl Bench {
    async fn new() -> Self {
        let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_default();
        assert!(
            endpoint.starts_with("http://127.0.0.1:"),
            "run through infra/scripts/with-local-aws.sh"
        );
        let sdk = aws_config::load_from_env().await;
        let suffix = ulid::Ulid::new().to_string().to_lowercase();
        let settings = AwsSettings {
            table: format!("cs-bench-{suffix}"),
            signing_key: Some(format!("alias/cs-bench-{suffix}")),
            checkpoint_key: Some(format!("alias/cs-bench-checkpoints-{suffix}")),
            call_metrics: false,
            secret_prefix: format!("cs-bench-{suffix}/"),
            retention_days: Some(30),
            ..AwsSettings::default()
        };
        countersign_aws::bootstrap::bootstrap(&sdk, &settings)
            .await
            .unwrap();
        let calls = CallLog::default();
        let store = DynamoStore::new(DynamoStore::client(&sdk, Some(&calls)), &settings.table);
        let signer = KmsProofSigner::new(
            KmsProofSigner::client(&sdk, Some(&calls)),
            settings.signing_key.clone(),
        );
        let secrets = SecretsManagerStore::new(
            SecretsManagerStore::client(&sdk, Some(&calls)),
            settings.secret_prefix.clone(),
        );
        let ids = UlidIds::default();
        let tenant = ids.tenant_id();
        Self {
            calls,
            store,
            signer,
            secrets,
            ids,
            tenant,
        }
    }

    /// A new open case, stored.
    async fn new_case(&self) -> Case {
        let case = Case {
            id: self.ids.case_id(),
            tenant: self.tenant.clone(),
            user: UserId::parse("driver-42").unwrap(),
            status: CaseStatus::Open,
            created_at: SystemClock.now(),
        };
        self.store
            .create_case(&case, countersign_domain::texts::Language::En)
            .await
            .unwrap();
        case
    }

    /// A new case with a pending proposal.
    async fn with_pending(&self) -> (Case, Proposal) {
        let case = self.new_case().await;
        let (p, m) = proposal(&self.ids, &case);
        self.store.create_proposal(&p, &m).await.unwrap();
        (case, p)
    }

    /// A new case with a proposal confirmed, `executing`.
    async fn executing(&self) -> (Case, Proposal) {
        let (case, p) = self.with_pending().await;
        self.store
            .confirm(&self.confirm_write(&case, &p))
            .await
            .unwrap();
        (case, p)
    }

    /// A new case with 20 messages.
    async fn with_messages(&self) -> Case {
        let case = self.new_case().await;
        for _ in 0..20 {
            let m = message(&self.ids, &case, MessageKind::Text, None);
            self.store.append_message(&case.tenant, &m).await.unwrap();
        }
        case
    }

    /// The person's "confirm" of `p`'s presentation.
    fn confirm_write(&self, case: &Case, p: &Proposal) -> ConfirmWrite {
        let presented = p.presented.message_id.clone();
        ConfirmWrite {
            tenant: case.tenant.clone(),
            case: case.id.clone(),
            action_id: p.action_id.clone(),
            presented_message_id: presented.clone(),
            message: message(&self.ids, case, MessageKind::Text, Some(presented)),
            attempt: ulid::Ulid::new().to_string(),
        }
    }

    /// Reading and writing conversations, preparing proposals.
    async fn conversation_ops(&self) -> Vec<Stats> {
        let (store, ids, calls) = (&self.store, &self.ids, &self.calls);
        Vec::from([
            measure(
                "load (case + slot + proposal)",
                calls,
                || self.with_pending(),
                |(case, _)| async move { store.load(&case.tenant, &case.id).await.unwrap() },
            )
            .await,
            measure(
                "append_message",
                calls,
                || self.new_case(),
                |case| async move {
                    let m = message(ids, &case, MessageKind::Text, None);
                    store.append_message(&case.tenant, &m).await.unwrap();
                },
            )
            .await,
            measure(
                "create_proposal (empty slot)",
                calls,
                || self.new_case(),
                |case| async move {
                    let (p, m) = proposal(ids, &case);
                    store.create_proposal(&p, &m).await.unwrap()
                },
            )
            .await,
            measure(
                "create_proposal (supersedes pending)",
                calls,
                || self.with_pending(),
                |(case, _)| async move {
                    let (p, m) = proposal(ids, &case);
                    store.create_proposal(&p, &m).await.unwrap()
                },
            )
            .await,
        ])
    }

    /// The confirm path's writes, then a page of messages read back.
    async fn confirm_path_ops(&self) -> Vec<Stats> {
        let (store, ids, calls) = (&self.store, &self.ids, &self.calls);
        Vec::from(
            [
                measure(
                    "confirm (pending -> executing + message)",
                    calls,
                    || self.with_pending(),
                    |(case, p)| async move {
                        store.confirm(&self.confirm_write(&case, &p)).await.unwrap()
                    },
                )
                .await,
                measure(
                    "transition (record outcome + result message)",
                    calls,
                    || self.executing(),
                    |(case, p)| async move {
                        let notice = message(ids, &case, MessageKind::Result, None);
                        let (from, to) = (ProposalState::Executing, ProposalState::Completed);
                        store
                            .transition(
                                &case.tenant,
                                &case.id,
                                &p.action_id,
                                from,
                                to,
                                Some(&notice),
                            )
                            .await
                            .unwrap()
                    },
                )
                .await,
                measure(
                    "list_messages (20)",
                    calls,
                    || self.with_messages(),
                    |case| async move {
                        store
                            .list_messages(&case.tenant, &case.id, None, 50)
                            .await
                            .unwrap()
                    },
                )
                .await,
            ],
        )
    }

    /// KMS signing and Secrets Manager.
    async fn key_and_secret_ops(&self) -> Vec<Stats> {
        let (signer, secrets, calls) = (&self.signer, &self.secrets, &self.calls);
        let kid = &signer.key_id().await.unwrap();
        Vec::from([
            measure(
                "kms sign_rs256 (key cached)",
                calls,
                || async {},
                |()| async move { signer.sign_rs256(kid, b"header.payload").await.unwrap() },
            )
            .await,
            measure(
                "secrets put (new version)",
                calls,
                || async {},
                |()| async move {
                    secrets
                        .put("bench/token", &SecretString::new("t"))
                        .await
                        .unwrap()
                },
            )
            .await,
            measure(
                "secrets get_current",
                calls,
                || async {},
                |()| async move { secrets.get_current("bench/token").await.unwrap() },
            )
            .await,
        ])
    }
}

/// One line per operation: its AWS calls, median and p90.
fn print(results: &[Stats]) {
    println!(
        "{:<46} {:<44} {:>10} {:>10}",
        "operation", "AWS calls per operation", "median", "p90"
    );
    for r in results {
        let calls = r
            .calls
            .iter()
            .map(|(k, v)| {
                if v.fract() == 0.0 {
                    format!("{v} {k}")
                } else {
                    format!("{v:.2} {k}")
                }
            })
            .collect::<Vec<_>>()
            .join(" + ");
        let median = r.times[r.times.len() / 2];
        let p90 = r.times[r.times.len() * 9 / 10];
        println!(
            "{:<46} {:<44} {:>8.2}ms {:>8.2}ms",
            r.name,
            calls,
            median.as_secs_f64() * 1e3,
            p90.as_secs_f64() * 1e3
        );
    }
}

#[tokio::main]
async fn main() {
    let bench = Bench::new().await;
    let mut results = bench.conversation_ops().await;
    results.extend(bench.confirm_path_ops().await);
    results.extend(bench.key_and_secret_ops().await);
    print(&results);
}
