//! Shared setup: a fresh table, signing key alias and secret prefix per test, so tests
//! never see each other's data even though they share one emulator.

use aws_config::SdkConfig;
use countersign_aws::AwsSettings;
use countersign_aws::calls::CallLog;
use countersign_aws::dynamo::DynamoStore;
use countersign_aws::system::UlidIds;
use countersign_domain::conversation::Case;
use countersign_domain::ids::{MessageId, TenantId};
use countersign_domain::ports::{ConfirmWrite, Ids, NewMessage};
use countersign_domain::proposal::Proposal;
use countersign_testkit::contract::Fixture;

pub struct Env {
    pub sdk: SdkConfig,
    pub settings: AwsSettings,
    pub calls: CallLog,
    pub ids: UlidIds,
    /// Cases, proposals and records, as the store contract builds them.
    pub fixture: Fixture,
}

/// Refuses to run anywhere but against a loopback emulator: these tests create and
/// delete resources.
pub async fn env() -> Env {
    countersign_testkit::local_aws_endpoint();
    let sdk = aws_config::load_from_env().await;
    let suffix = ulid::Ulid::new().to_string().to_lowercase();
    let settings = AwsSettings {
        table: format!("cs-test-{suffix}"),
        signing_key: Some(format!("alias/cs-test-{suffix}")),
        checkpoint_key: Some(format!("alias/cs-test-checkpoints-{suffix}")),
        call_metrics: false,
        secret_prefix: format!("cs-test-{suffix}/"),
        retention_days: Some(30),
        ..AwsSettings::default()
    };
    countersign_aws::bootstrap::bootstrap(&sdk, &settings)
        .await
        .unwrap();
    Env {
        sdk,
        settings,
        calls: CallLog::default(),
        ids: UlidIds::default(),
        fixture: Fixture::default(),
    }
}

impl Env {
    /// The env's SDK calling as `principal` (I-1): a fixture that signs or wraps keys does
    /// what a function does, with that function's role (the key policies let the
    /// operator do neither).
    pub fn as_role(&self, principal: countersign_aws::sdk::Principal) -> aws_config::SdkConfig {
        countersign_aws::sdk::as_principal(&self.sdk, principal)
    }

    pub fn store(&self) -> DynamoStore {
        DynamoStore::new(
            DynamoStore::client(&self.sdk, Some(&self.calls)),
            &self.settings.table,
        )
    }

    /// A store on a new, empty table: moto copies a whole table inside every transaction
    /// (for rollback), so scenarios that repeat many transactions keep their tables small.
    pub async fn fresh_store(&self) -> DynamoStore {
        let table = format!("cs-test-{}", ulid::Ulid::new().to_string().to_lowercase());
        let client = DynamoStore::client(&self.sdk, Some(&self.calls));
        countersign_aws::bootstrap::ensure_table(&client, &table)
            .await
            .unwrap();
        DynamoStore::new(client, table)
    }

    pub fn tenant(&self) -> TenantId {
        self.ids.tenant_id()
    }

    pub async fn open_case(&self, store: &DynamoStore, tenant: &TenantId) -> Case {
        self.fixture.open_case(store, tenant).await
    }

    /// A pending proposal for `case` with a fresh presentation message id, plus its two
    /// presentation messages (summary and instructions); no integration (see
    /// [`Env::with_settings`] for tests of C-8).
    pub fn proposal(
        &self,
        case: &Case,
        action: &str,
        config_version: u64,
    ) -> (Proposal, Vec<NewMessage>) {
        let (mut p, m) = self.fixture.proposal(case, action);
        p.config_version = config_version;
        (p, m)
    }

    /// `p` prepared under the action settings `(version, secret_version)`.
    pub fn with_settings(mut p: Proposal, version: u64, secret_version: &str) -> Proposal {
        p.config_version = version;
        p.secret_version = Some(secret_version.to_owned());
        p
    }

    /// Stores `tenant`'s MCP configuration at `version` with action settings
    /// `(actions_version, secret_version)`.
    pub async fn configure(
        &self,
        store: &DynamoStore,
        tenant: &TenantId,
        expected: Option<u64>,
        settings: (u64, u64, &str),
    ) {
        self.fixture
            .configure(store, tenant, expected, settings)
            .await;
    }

    /// The write a "confirm" reply to `p`'s presentation makes.
    pub fn confirm_write(&self, p: &Proposal, presented: &MessageId) -> ConfirmWrite {
        self.fixture.confirm_write(p, presented)
    }
}
