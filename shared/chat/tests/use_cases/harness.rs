//! One tenant with TrackShare-like settings on in-memory ports, one open case, and
//! helpers that read like the person's actions.

use countersign_chat::{Chat, ChatError, ChatParts};
use countersign_domain::config::{
    ActionPolicy, McpConfig, ServerUrl, UrlPolicy, service_token_secret_name,
};
use countersign_domain::conversation::{CaseStatus, Message, MessageKind, Principal};
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::{ActionId, CaseId, MessageId, OperationName, ToolName, UserId};
use countersign_domain::ports::Conversations;
use countersign_domain::ports::McpSettings;
use countersign_domain::ports::Tenants;
use countersign_domain::ports::{
    AuditEntry, Ids, NewMessage, SecretStore, StoredMcpConfig, Tenant,
};
use countersign_domain::proposal::{Proposal, ProposalState};
use countersign_domain::secret::SecretString;
use countersign_domain::texts::Language;
use countersign_testkit::{
    FakeSigner, MemorySecrets, MemoryStore, QueuedModel, Reply, ScriptedProvider, SeqIds,
    TestClock, prepare_answer, tool,
};
use countersign_tools::integration::IntegrationService;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

pub const OPERATION: &str = "reassign_session_car";
pub const CONSULTATION: &str = "get_user_sessions";
pub const SUMMARY: &str = "Move session ses_a1 from car \"Civic\" to car \"GR86\".";
pub const SERVICE_TOKEN: &str = "svc-token-1";

pub struct H {
    pub store: Arc<MemoryStore>,
    pub secrets: Arc<MemorySecrets>,
    pub signer: Arc<FakeSigner>,
    pub provider: Arc<ScriptedProvider>,
    pub model: Arc<QueuedModel>,
    pub clock: Arc<TestClock>,
    pub ids: Arc<SeqIds>,
    pub chat: Chat,
    /// What `chat` was built from (another front door, such as the page, shares them).
    pub parts: ChatParts,
    pub who: Principal,
    pub case: CaseId,
    next_action: AtomicUsize,
}

/// What one request stored.
pub type Out = Vec<NewMessage>;

pub fn kinds(out: &[NewMessage]) -> Vec<MessageKind> {
    out.iter().map(|m| m.kind).collect()
}

impl H {
    /// A tenant whose integration allows `reassign_session_car` and the consultation
    /// `get_user_sessions`, with writes enabled; one open case of `u_alice`.
    pub async fn new() -> Self {
        Self::with_policy(true, &[OPERATION]).await
    }

    pub async fn with_policy(enabled: bool, operations: &[&str]) -> Self {
        let clock = Arc::new(TestClock::default());
        let ids = Arc::new(SeqIds::new(clock.clone()));
        let store = Arc::new(MemoryStore::default());
        let secrets = Arc::new(MemorySecrets::default());
        let signer = Arc::new(FakeSigner::default());
        let provider = Arc::new(ScriptedProvider::default());
        let model = Arc::new(QueuedModel::default());
        provider.publish(vec![tool(CONSULTATION), tool("delete_everything")]);
        let parts = ChatParts {
            conversations: store.clone(),
            proposals: store.clone(),
            unsettled: store.clone(),
            tenants: store.clone(),
            settings: store.clone(),
            integration: Arc::new(IntegrationService::new(
                store.clone(),
                secrets.clone(),
                provider.clone(),
            )),
            signer: signer.clone(),
            model: model.clone(),
            registry: Arc::new(countersign_tools::builtins::registry().unwrap()),
            clock: clock.clone(),
            ids: ids.clone(),
            issuer: "https://support.example.com/mcp-actions".into(),
            stuck_after: Duration::from_secs(30),
        };
        let chat = Chat::new(parts.clone());
        let tenant = ids.tenant_id();
        store
            .create_tenant(&Tenant::new(
                tenant.clone(),
                "TrackShare",
                Sha256Hex::digest("tsk_test"),
                Language::En,
                clock_now(&clock),
            ))
            .await
            .unwrap();
        let who = Principal {
            tenant,
            user: UserId::parse("u_alice").unwrap(),
        };
        let placeholder = ids.case_id();
        let h = Self {
            store,
            secrets,
            signer,
            provider,
            model,
            clock,
            ids,
            chat,
            parts,
            case: placeholder,
            who,
            next_action: AtomicUsize::new(1),
        };
        h.configure(enabled, operations, None).await;
        let case = h.chat.create_case(&h.who).await.unwrap();
        Self { case: case.id, ..h }
    }

    /// Saves a new configuration (a new version and token version, as the admin API does).
    pub async fn configure(&self, enabled: bool, operations: &[&str], url: Option<&str>) {
        let secret_version = self
            .secrets
            .put(
                &service_token_secret_name(&self.who.tenant),
                &SecretString::new(SERVICE_TOKEN),
            )
            .await
            .unwrap();
        let current = self.store.get_mcp_config(&self.who.tenant).await.unwrap();
        let config = StoredMcpConfig {
            config: McpConfig {
                server_url: ServerUrl::parse(
                    url.unwrap_or("https://provider.example.com/mcp"),
                    UrlPolicy::default(),
                )
                .unwrap(),
                service_token: SecretString::new(""),
                allowed_tools: vec![ToolName::parse(CONSULTATION).unwrap()],
                action_policy: ActionPolicy {
                    enabled,
                    operations: operations
                        .iter()
                        .map(|o| OperationName::parse(*o).unwrap())
                        .collect(),
                    step_up: Default::default(),
                    step_up_fallback: false,
                },
                audience: None,
                approved: Default::default(),
            },
            version: current.as_ref().map_or(1, |c| c.version + 1),
            actions_version: current.as_ref().map_or(1, |c| c.version + 1),
            secret_version,
        };
        self.store
            .put_mcp_config(
                &self.who.tenant,
                &config,
                current.map(|c| c.version),
                &AuditEntry {
                    id: self.ids.audit_id(),
                    at: clock_now(&self.clock),
                    actor: "operator".into(),
                    action: "mcp.put".into(),
                    changes: json!({}),
                },
            )
            .await
            .unwrap();
    }

    /// Sets an explicit proof audience: a new version and action-settings version.
    pub async fn set_audience(&self, audience: &str) {
        self.change_config(|c| {
            c.actions_version = c.version;
            c.config.audience = Some(audience.to_owned());
        })
        .await;
    }

    /// Changes only the allowed consultations (a new version, the same action settings).
    pub async fn allow_tools(&self, tools: &[&str]) {
        self.change_config(|c| {
            c.config.allowed_tools = tools.iter().map(|t| ToolName::parse(*t).unwrap()).collect();
        })
        .await;
    }

    /// Saves the stored configuration under a new version, changed by `change` (which
    /// sees the new version number), as the admin API does.
    async fn change_config(&self, change: impl FnOnce(&mut StoredMcpConfig)) {
        let mut current = self
            .store
            .get_mcp_config(&self.who.tenant)
            .await
            .unwrap()
            .unwrap();
        let expected = current.version;
        current.version += 1;
        change(&mut current);
        self.store
            .put_mcp_config(
                &self.who.tenant,
                &current,
                Some(expected),
                &AuditEntry {
                    id: self.ids.audit_id(),
                    at: clock_now(&self.clock),
                    actor: "operator".into(),
                    action: "mcp.put".into(),
                    changes: json!({}),
                },
            )
            .await
            .unwrap();
    }

    /// The tenant's settings with `operation` needing the person's passkey (F-1), written as
    /// a save that passed its gate would write them.
    pub async fn passkey_for(&self, operation: &str) {
        self.change_policy(|p| {
            p.step_up
                .insert(countersign_domain::ids::OperationName::parse(operation).unwrap());
        })
        .await;
    }

    /// F-2: the tenant's fallback for people without a passkey, on or off.
    pub async fn step_up_fallback(&self, on: bool) {
        self.change_policy(|p| p.step_up_fallback = on).await;
    }

    /// The tenant's action policy changed by `change`, written as a save that passed its
    /// gates would write it.
    async fn change_policy(
        &self,
        change: impl FnOnce(&mut countersign_domain::config::ActionPolicy),
    ) {
        use countersign_domain::ports::{AuditEntry, Clock as _, Ids as _, McpSettings as _};
        let tenant = &self.who.tenant;
        let mut stored = self.store.get_mcp_config(tenant).await.unwrap().unwrap();
        let before = stored.version;
        change(&mut stored.config.action_policy);
        stored.version += 1;
        let audit = AuditEntry {
            id: self.ids.audit_id(),
            at: self.clock.now(),
            actor: "test".into(),
            action: "mcp.put".into(),
            changes: serde_json::json!({}),
        };
        self.store
            .put_mcp_config(tenant, &stored, Some(before), &audit)
            .await
            .unwrap();
    }

    /// The person writes `text` (no reply id).
    pub async fn say(&self, text: &str) -> Out {
        self.post(text, None).await.unwrap()
    }

    /// The person writes `text` replying to `to`.
    pub async fn reply(&self, text: &str, to: &MessageId) -> Out {
        self.post(text, Some(to.clone())).await.unwrap()
    }

    pub async fn post(&self, text: &str, reply_to: Option<MessageId>) -> Result<Out, ChatError> {
        self.chat
            .post(&self.who, &self.case, text, reply_to)
            .await
            .map(|(out, _)| out)
    }

    /// Scripts the model to call `prepare_action` for `operation` and the provider to
    /// answer with a valid proposal; returns the id the provider gives it.
    pub fn script_prepare(&self, operation: &str) -> String {
        let n = self.next_action.fetch_add(1, Ordering::SeqCst);
        let action = format!("act_{n}");
        self.model.call(
            "prepare_action",
            json!({"operation": operation, "arguments": {"sessionId": "ses_a1", "carId": "car_a2"}}),
        );
        let expires = self.clock_now().plus_seconds(240).to_rfc3339();
        self.provider.answer(
            "prepare_action",
            Reply::Result(prepare_answer(&action, operation, SUMMARY, &expires)),
        );
        action
    }

    /// The person asks for a write and is shown a proposal: returns its action id and the
    /// id of the presentation message.
    pub async fn propose(&self) -> (ActionId, MessageId) {
        let action = self.script_prepare(OPERATION);
        let out = self.say("move ses_a1 to car_a2").await;
        let presented = out
            .iter()
            .find(|m| m.kind == MessageKind::Proposal)
            .unwrap_or_else(|| panic!("no proposal presented: {out:?}"))
            .id
            .clone();
        (ActionId::parse(action).unwrap(), presented)
    }

    /// The same harness in a new conversation opened in `language` (S-4).
    pub async fn in_language(self, language: Language) -> Self {
        let opened = self
            .chat
            .open_case(&self.who, Some(language))
            .await
            .unwrap();
        Self {
            case: opened.case.id,
            ..self
        }
    }

    /// The proposal as stored now.
    pub fn proposal(&self, id: &ActionId) -> Proposal {
        self.store
            .proposal(&self.who.tenant, &self.case, id)
            .unwrap()
    }

    pub fn state(&self, id: &ActionId) -> ProposalState {
        self.proposal(id).state
    }

    pub fn messages(&self) -> Vec<Message> {
        self.store.all_messages(&self.who.tenant, &self.case)
    }

    pub async fn case_status(&self) -> CaseStatus {
        self.store
            .load(&self.who.tenant, &self.case)
            .await
            .unwrap()
            .unwrap()
            .case
            .status
    }

    /// An assistant notice in `case`, as the admin's C-8 sweep writes it.
    pub fn notice(&self, case: &CaseId, text: &str) -> NewMessage {
        use countersign_domain::ports::Ids;
        NewMessage {
            id: self.ids.message_id(),
            case: case.clone(),
            role: countersign_domain::conversation::Role::Assistant,
            kind: MessageKind::Notice,
            content: text.to_owned(),
            reply_to: None,
            created_at: self.clock_now(),
        }
    }

    pub fn clock_now(&self) -> countersign_domain::time::Timestamp {
        clock_now(&self.clock)
    }

    /// How many times the model was asked for a step.
    pub fn model_steps(&self) -> usize {
        self.model.requests().len()
    }

    /// The last tool result the model was given, as JSON.
    pub fn last_tool_result(&self) -> Value {
        use countersign_domain::ports::ModelMessage;
        let requests = self.model.requests();
        let last = requests.last().unwrap();
        let text = last
            .messages
            .iter()
            .rev()
            .find_map(|m| match m {
                ModelMessage::ToolResult { content, .. } => Some(content.clone()),
                _ => None,
            })
            .unwrap();
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    }
}

fn clock_now(clock: &TestClock) -> countersign_domain::time::Timestamp {
    use countersign_domain::ports::Clock;
    clock.now()
}
