//! Shared setup: a fresh table, signing key alias and secret prefix per test, so tests
//! never see each other's data even though they share one emulator.

use aws_config::SdkConfig;
use countersign_aws::AwsSettings;
use countersign_aws::calls::CallLog;
use countersign_aws::dynamo::DynamoStore;
use countersign_aws::system::{SystemClock, UlidIds};
use countersign_domain::conversation::{Case, CaseStatus, MessageKind, Role};
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::{ActionId, CaseId, MessageId, OperationName, TenantId, UserId};
use countersign_domain::ports::{Clock, ConfirmWrite, ConversationStore, Ids, NewMessage};
use countersign_domain::proposal::{Presentation, Proposal, ProposalState};
use countersign_domain::text::SafeText;

pub struct Env {
    pub sdk: SdkConfig,
    pub settings: AwsSettings,
    pub calls: CallLog,
    pub ids: UlidIds,
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
    }
}

impl Env {
    pub fn store(&self) -> DynamoStore {
        DynamoStore::new(
            DynamoStore::client(&self.sdk, Some(&self.calls)),
            &self.settings.table,
            self.settings.retention_days,
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
        DynamoStore::new(client, table, self.settings.retention_days)
    }

    pub fn tenant(&self) -> TenantId {
        self.ids.tenant_id()
    }

    pub async fn open_case(&self, store: &DynamoStore, tenant: &TenantId) -> Case {
        let case = Case {
            id: self.ids.case_id(),
            tenant: tenant.clone(),
            user: UserId::parse("driver-42").unwrap(),
            status: CaseStatus::Open,
            created_at: SystemClock.now(),
        };
        store
            .create_case(&case, countersign_domain::texts::Language::En)
            .await
            .unwrap();
        case
    }

    /// A pending proposal for `case` with a fresh presentation message id, plus its two
    /// presentation messages (summary and instructions).
    pub fn proposal(
        &self,
        case: &Case,
        action: &str,
        config_version: u64,
    ) -> (Proposal, Vec<NewMessage>) {
        let now = SystemClock.now();
        let summary = format!("Move session 4812 to car GR86 ({action}).");
        let presented = self.ids.message_id();
        let p = Proposal {
            action_id: ActionId::parse(action).unwrap(),
            tenant: case.tenant.clone(),
            user: case.user.clone(),
            case: case.id.clone(),
            operation: OperationName::parse("reassign_session_car").unwrap(),
            summary: SafeText::check(summary.as_str()).unwrap(),
            summary_hash: Sha256Hex::digest(&summary),
            arguments_hash: Sha256Hex::digest("{\"sessionId\":4812}"),
            expires_at: now.plus_seconds(300),
            prepared_at: now,
            state: ProposalState::PendingConfirmation,
            presented: Presentation {
                message_id: presented.clone(),
            },
            confirmation_message_id: None,
            config_version,
            // No integration: the C-8 fence and registration are skipped (see
            // `Env::with_settings` for tests of C-8).
            secret_version: None,
            server_url: Some("https://mcp.trackshare.example.com/mcp".into()),
            audience: None,
        };
        let msgs = vec![
            self.message(
                &case.id,
                presented,
                Role::Assistant,
                MessageKind::Proposal,
                &summary,
                None,
            ),
            self.message(
                &case.id,
                self.ids.message_id(),
                Role::Assistant,
                MessageKind::Instructions,
                "reply confirm or cancel",
                None,
            ),
        ];
        (p, msgs)
    }

    /// `p` prepared under the action settings `(version, secret_version)`.
    pub fn with_settings(mut p: Proposal, version: u64, secret_version: &str) -> Proposal {
        p.config_version = version;
        p.secret_version = Some(secret_version.to_owned());
        p
    }

    /// Stores `tenant`'s MCP configuration with these action settings (and `version`).
    pub async fn configure(
        &self,
        store: &DynamoStore,
        tenant: &TenantId,
        expected: Option<u64>,
        (version, actions_version, secret_version): (u64, u64, &str),
    ) {
        let config = countersign_domain::config::validate_mcp_config(
            &serde_json::json!({
                "serverUrl": "https://mcp.trackshare.example.com/mcp",
                "serviceToken": "svc_token_123",
                "allowedTools": ["get_user_uploads"],
            }),
            countersign_domain::config::UrlPolicy::default(),
        )
        .unwrap();
        let stored = countersign_domain::ports::StoredMcpConfig {
            config,
            version,
            actions_version,
            secret_version: secret_version.to_owned(),
        };
        let audit = countersign_domain::ports::AuditEntry {
            id: self.ids.audit_id(),
            at: SystemClock.now(),
            actor: "operator".into(),
            action: "mcp.put".into(),
            changes: serde_json::json!({}),
        };
        let outcome = countersign_domain::ports::TenantStore::put_mcp_config(
            store, tenant, &stored, expected, &audit,
        )
        .await
        .unwrap();
        assert_eq!(
            outcome,
            countersign_domain::ports::TransitionOutcome::Applied
        );
    }

    pub fn message(
        &self,
        case: &CaseId,
        id: MessageId,
        role: Role,
        kind: MessageKind,
        content: &str,
        reply_to: Option<MessageId>,
    ) -> NewMessage {
        NewMessage {
            id,
            case: case.clone(),
            role,
            kind,
            content: content.to_owned(),
            reply_to,
            created_at: SystemClock.now(),
        }
    }

    /// The write a "confirm" reply to `p`'s presentation makes.
    pub fn confirm_write(&self, p: &Proposal, presented: &MessageId) -> ConfirmWrite {
        ConfirmWrite {
            tenant: p.tenant.clone(),
            case: p.case.clone(),
            action_id: p.action_id.clone(),
            presented_message_id: presented.clone(),
            message: self.message(
                &p.case,
                self.ids.message_id(),
                Role::User,
                MessageKind::Text,
                "confirm",
                Some(presented.clone()),
            ),
        }
    }
}
