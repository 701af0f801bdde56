//! Ports: the small traits through which the use cases reach the outside world. Adapters
//! (DynamoDB, KMS, Secrets Manager, the provider client, model clients) implement them in
//! other crates; this crate only states the contracts.
//!
//! Conditional writes return an outcome enum (`Applied` / a precise conflict), never a
//! generic error: a lost race is a normal answer, not a failure. Errors are for I/O that
//! did not happen or cannot be trusted.

use crate::config::McpConfig;
use crate::conversation::{Case, Message};
use crate::ids::{ActionId, CaseId, MessageId, TenantId, ToolName, UserId, WidgetKeyId};
use crate::proof::Proof;
use crate::proposal::{Proposal, ProposalState};
use crate::secret::SecretString;
use crate::texts::Language;
use crate::time::Timestamp;
use async_trait::async_trait;
use serde_json::{Map, Value};

/// A boxed error cause, kept for logs only (never shown to users).
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

/// The current time.
pub trait Clock: Send + Sync {
    /// Now, in UTC.
    fn now(&self) -> Timestamp;
}

/// Fresh identifiers. Implementations use ULIDs (time-ordered, 80 random bits).
pub trait Ids: Send + Sync {
    /// A new tenant id.
    fn tenant_id(&self) -> TenantId;
    /// A new case id.
    fn case_id(&self) -> CaseId;
    /// A new message id.
    fn message_id(&self) -> MessageId;
    /// A new widget credential id.
    fn widget_key_id(&self) -> WidgetKeyId;
    /// A new, unique proof `jti`.
    fn proof_jti(&self) -> String;
    /// A new audit record id.
    fn audit_id(&self) -> crate::ids::AuditId;
}

/// A store failure: the operation did not happen, or its outcome is not known.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store could not be reached or refused the request.
    #[error("the store is unavailable")]
    Unavailable(#[source] Cause),
    /// A stored item could not be read back into domain types.
    #[error("a stored item is corrupt: {0}")]
    Corrupt(String),
    /// The caller asked for a transition the state machine forbids (a bug, not a race).
    #[error("illegal proposal transition {from} -> {to}")]
    IllegalTransition {
        /// From.
        from: ProposalState,
        /// To.
        to: ProposalState,
    },
}

/// Everything about one conversation that decisions need, read in one query (P-2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationView {
    /// The case.
    pub case: Case,
    /// The proposal in the conversation's active slot, if any (at most one is
    /// non-terminal, P-2).
    pub active: Option<Proposal>,
    /// The language of the tenant's fixed texts.
    pub language: Language,
}

/// A message to append: a [`Message`] not yet stored. Its id (a ULID) gives its place in
/// the case's total order.
pub type NewMessage = Message;

/// Outcome of creating a proposal (A-14 … A-17).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CreateProposalOutcome {
    /// Stored with its presentation messages; a pending predecessor, if any, was moved to
    /// `superseded` in the same transaction.
    Applied {
        /// The superseded predecessor.
        superseded: Option<ActionId>,
    },
    /// The slot holds a proposal that is `executing` or `unknown`.
    Blocked {
        /// Its id.
        action_id: ActionId,
        /// Its state.
        state: ProposalState,
    },
    /// The action id was already used in this tenant.
    ActionIdReused,
    /// The case is closed or does not exist.
    CaseNotOpen,
    /// The slot changed between read and write (another request won); re-read and decide
    /// again.
    Conflict,
    /// C-8: the tenant's action settings are no longer the ones the proposal was prepared
    /// with (its `config_version` / `secret_version`); nothing was stored.
    SettingsChanged,
}

/// Outcome of a conditional proposal transition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransitionOutcome {
    /// The condition held and the new state is stored.
    Applied,
    /// The condition failed: the proposal was not in the expected state, is no longer the
    /// active one, or (for confirm) its `presentedMessageId` differs. `current` is its state
    /// now, when known.
    Conflict {
        /// The state found, if the proposal exists.
        current: Option<ProposalState>,
    },
}

/// What a confirmation writes in one transaction (A-23, A-35; ARCHITECTURE "confirm path").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfirmWrite {
    /// Tenant scope.
    pub tenant: TenantId,
    /// The conversation.
    pub case: CaseId,
    /// The proposal.
    pub action_id: ActionId,
    /// Condition: the proposal's `presentedMessageId` equals this.
    pub presented_message_id: MessageId,
    /// The confirming user message, stored in the same transaction.
    pub message: NewMessage,
}

/// An action whose outcome is not settled, as the tenant's index lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsettledAction {
    /// Its conversation.
    pub case: CaseId,
    /// The action.
    pub action_id: ActionId,
    /// When it was confirmed (it has been unsettled since).
    pub since: Timestamp,
    /// The provider's last answer to `get_action_status` that settled nothing (a
    /// non-final status, `isError`, or "no valid answer"), and when.
    pub last_status: Option<(String, Timestamp)>,
}

/// An administrator's settlement of an unsettled action.
#[derive(Debug, Clone)]
pub struct SettleByAdmin<'a> {
    /// Tenant scope.
    pub tenant: &'a TenantId,
    /// The conversation.
    pub case: &'a CaseId,
    /// The action.
    pub action_id: &'a ActionId,
    /// Its state as read (`executing` or `unknown`).
    pub from: ProposalState,
    /// `completed` or `failed`.
    pub to: ProposalState,
    /// The fixed notice to the person.
    pub notice: &'a NewMessage,
    /// The audit record.
    pub audit: &'a AuditEntry,
}

/// The conversation / proposal store. Every method is scoped by tenant: an id of another
/// tenant behaves as absent.
#[async_trait]
pub trait ConversationStore: Send + Sync {
    /// Creates an open case whose fixed texts use `language` (the tenant's, copied so that
    /// one query serves every decision).
    async fn create_case(&self, case: &Case, language: Language) -> Result<(), StoreError>;

    /// One read: the case, its active proposal and the tenant's language. `None` when the
    /// case does not exist in this tenant.
    async fn load(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<Option<ConversationView>, StoreError>;

    /// Appends a message to an existing case of this tenant.
    async fn append_message(
        &self,
        tenant: &TenantId,
        message: &NewMessage,
    ) -> Result<(), StoreError>;

    /// Messages of a case in order, those after `after` (exclusive), at most `limit`.
    async fn list_messages(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        after: Option<&MessageId>,
        limit: usize,
    ) -> Result<Vec<Message>, StoreError>;

    /// Stores a new pending proposal and its presentation messages atomically, guarded by
    /// the slot (A-15 … A-17) and by the tenant-wide action-id guard. The
    /// proposal's `presented` must be the first of `presentation`. When the proposal
    /// carries a `secret_version`, the write also requires the tenant's action settings to
    /// still be the ones it was prepared with (C-8, `SettingsChanged` otherwise) and
    /// registers the proposal so that [`Self::invalidate_pending`] finds it.
    async fn create_proposal(
        &self,
        proposal: &Proposal,
        presentation: &[NewMessage],
    ) -> Result<CreateProposalOutcome, StoreError>;

    /// `pending_confirmation → executing`, only while the case is open and the slot still
    /// points at this proposal with the given `presentedMessageId`; stores the confirming
    /// message and the confirmation id in the same transaction. Of any number of concurrent
    /// calls at most one is `Applied` (P-2). On `Conflict` nothing is written, not even the
    /// message: the caller stores it as an ordinary message. `Conflict { current: None }`
    /// when retries ran out. No item shared by the tenant's conversations is read or
    /// written here (C-8 is held by [`Self::create_proposal`] and
    /// [`Self::invalidate_pending`]). When the store cannot tell whether its write
    /// committed, it reads the proposal back and reports `Applied` if this write's message
    /// is the recorded confirmation.
    async fn confirm(&self, write: &ConfirmWrite) -> Result<TransitionOutcome, StoreError>;

    /// Moves a proposal `from → to` (a legal transition of [`crate::proposal`]) only while
    /// it is in `from`. Terminal states get the conversation's retention; `notice` is an
    /// assistant message stored in the same write.
    async fn transition(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        action_id: &ActionId,
        from: ProposalState,
        to: ProposalState,
        notice: Option<&NewMessage>,
    ) -> Result<TransitionOutcome, StoreError>;

    /// The tenant's actions whose outcome is not settled (`executing` or `unknown`),
    /// oldest first: what the administrator may have to settle by hand.
    async fn list_unsettled(&self, tenant: &TenantId) -> Result<Vec<UnsettledAction>, StoreError>;

    /// Records on an unsettled action's index entry the provider's last status answer
    /// that settled nothing (nothing when the entry is gone).
    async fn note_status(
        &self,
        tenant: &TenantId,
        action_id: &ActionId,
        answer: &str,
        at: Timestamp,
    ) -> Result<(), StoreError>;

    /// An administrator records the outcome of an unsettled action: like
    /// [`Self::transition`] (`from` is `executing` or `unknown`, `to` is `completed` or
    /// `failed`), with the person's notice and the audit record in the same write.
    async fn settle_by_admin(
        &self,
        settle: &SettleByAdmin<'_>,
    ) -> Result<TransitionOutcome, StoreError>;

    /// Closes a case (A-26: a closed case never executes); a pending proposal is cancelled
    /// with it. `Conflict { current }` while the slot holds an `executing` or `unknown`
    /// proposal: its outcome must be reconciled first. Closing a closed or missing case is
    /// `Applied`.
    async fn close_case(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<TransitionOutcome, StoreError>;
    /// The `limit` most recent messages of a case, oldest first (the model's history).
    async fn recent_messages(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        limit: usize,
    ) -> Result<Vec<Message>, StoreError>;

    /// C-8: cancels every `pending_confirmation` proposal of the tenant whose action
    /// settings (`config_version`, `secret_version`) differ from `keep` (all of them when
    /// `keep` is `None`: the connector was removed), each with the notice `notice(case,
    /// language)` in its conversation. Finds every proposal registered before the call
    /// (a consistent read); returns how many were cancelled.
    async fn invalidate_pending(
        &self,
        tenant: &TenantId,
        keep: Option<(u64, &str)>,
        notice: &(dyn for<'c> Fn(&'c CaseId, Language) -> NewMessage + Send + Sync),
    ) -> Result<usize, StoreError>;
}

/// Whether a tenant may spend one more unit of a budget now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Yes; the unit is spent.
    Admitted,
    /// No: the budget is spent until the window ends, in this many seconds.
    Limited {
        /// Seconds until the next window.
        retry_after_secs: u64,
    },
}

/// Per-tenant request budgets (decision 0021): one tenant cannot spend the capacity that
/// every tenant shares.
#[async_trait]
pub trait RateLimiter: Send + Sync {
    /// Spends one unit of `tenant`'s budget `bucket` (at most `per_minute` a minute).
    async fn take(
        &self,
        tenant: &TenantId,
        bucket: &str,
        per_minute: u32,
        now: Timestamp,
    ) -> Result<Admission, StoreError>;
}

/// Whether a tenant's one-at-a-time job may start now (V-7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    /// Yes: the lease is held until released, or until it expires.
    Held,
    /// Another job of that kind is in flight for the tenant; its lease ends at the latest
    /// in this many seconds.
    Busy {
        /// Seconds until the lease expires.
        retry_after_secs: u64,
    },
}

/// V-7: per-tenant leases, so that one tenant has at most one job of a kind in flight (a
/// certification run, an audit verification, a checkpoint) whatever it sends. A lease
/// expires on its own, so a holder that crashed frees it.
#[async_trait]
pub trait Leases: Send + Sync {
    /// Takes `tenant`'s lease `kind` for `owner` until `until`, unless another owner holds
    /// it unexpired at `now`.
    async fn acquire(
        &self,
        tenant: &TenantId,
        kind: &str,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<Lease, StoreError>;
    /// Gives the lease back, if `owner` still holds it.
    async fn release(&self, tenant: &TenantId, kind: &str, owner: &str) -> Result<(), StoreError>;
}

/// A registered tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tenant {
    /// Its id.
    pub id: TenantId,
    /// Display name.
    pub name: String,
    /// SHA-256 of the admin key; the key itself is never stored (C-1).
    pub admin_key_hash: crate::hash::Sha256Hex,
    /// Language of fixed texts.
    pub language: Language,
    /// Registration time.
    pub created_at: Timestamp,
}

/// A widget credential's public part (C-9, D-2): its id (the widget JWT's `kid`) and
/// creation time. The secret itself lives in the secret store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WidgetKey {
    /// The credential id.
    pub id: WidgetKeyId,
    /// When it was created.
    pub created_at: Timestamp,
    /// The web origins whose pages may use it from a browser (CORS, decision 0025):
    /// normalised by [`crate::config::parse_origin`]. Empty: no cross-origin page may.
    pub allowed_origins: Vec<String>,
}

/// A tenant's stored MCP configuration: without the token, which lives in the secret
/// store, referenced by version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMcpConfig {
    /// The configuration; its `service_token` is empty here and read from the secret store.
    pub config: McpConfig,
    /// Grows on every change (the admin API's optimistic lock).
    pub version: u64,
    /// The `version` at which an action-relevant field (URL, service token, audience,
    /// action policy) last changed: proposals are prepared against it, and only its
    /// change invalidates them (C-7, C-8).
    pub actions_version: u64,
    /// The secret version holding this configuration's service token.
    pub secret_version: String,
}

/// One change to a tenant's configuration, written in the same transaction as the change
/// itself: which admin key (or the operator) made it and what changed. Never holds a
/// secret value: tokens and secrets appear only as "changed".
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    /// Sorts by time.
    pub id: crate::ids::AuditId,
    /// When.
    pub at: Timestamp,
    /// Who: `adminKey:<fingerprint>` or `operator`.
    pub actor: String,
    /// What kind of change, e.g. `mcp.put`.
    pub action: String,
    /// The change's details (field names, non-secret old and new values).
    pub changes: Value,
}

/// One page of audit records, newest first.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditPage {
    /// The records.
    pub items: Vec<AuditEntry>,
    /// Pass as `before` to read the next (older) page; `None` on the last page.
    pub next: Option<crate::ids::AuditId>,
}

/// The tenant store. Every method that changes a tenant's configuration takes the
/// `AuditEntry` describing it and writes both atomically.
#[async_trait]
pub trait TenantStore: Send + Sync {
    /// Registers a tenant.
    async fn create_tenant(&self, tenant: &Tenant) -> Result<(), StoreError>;
    /// Reads a tenant.
    async fn get_tenant(&self, id: &TenantId) -> Result<Option<Tenant>, StoreError>;
    /// Lists tenants (operator CLI).
    async fn list_tenants(&self) -> Result<Vec<Tenant>, StoreError>;
    /// The tenant whose admin key has this hash (C-2: a key identifies its own tenant,
    /// so another tenant's id can answer 404 while a wrong key answers 401).
    async fn tenant_by_admin_key_hash(
        &self,
        hash: &crate::hash::Sha256Hex,
    ) -> Result<Option<TenantId>, StoreError>;
    /// Replaces the admin key hash (and its index) atomically; the old key stops working
    /// at once. `Conflict` when the tenant does not exist.
    async fn set_admin_key_hash(
        &self,
        id: &TenantId,
        hash: &crate::hash::Sha256Hex,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError>;
    /// Reads the MCP configuration.
    async fn get_mcp_config(&self, id: &TenantId) -> Result<Option<StoredMcpConfig>, StoreError>;
    /// Records a widget credential (C-9).
    async fn put_widget_key(
        &self,
        tenant: &TenantId,
        key: &WidgetKey,
        audit: &AuditEntry,
    ) -> Result<(), StoreError>;
    /// One widget credential, if it exists (not revoked).
    async fn get_widget_key(
        &self,
        tenant: &TenantId,
        id: &WidgetKeyId,
    ) -> Result<Option<WidgetKey>, StoreError>;
    /// The tenant's widget credentials, oldest first.
    async fn list_widget_keys(&self, tenant: &TenantId) -> Result<Vec<WidgetKey>, StoreError>;
    /// Revokes a widget credential: from then on its tokens fail (D-2). `Conflict` when it
    /// does not exist.
    async fn delete_widget_key(
        &self,
        tenant: &TenantId,
        id: &WidgetKeyId,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError>;
    /// Removes the MCP configuration (C-10) if the stored version is `expected`;
    /// `Conflict` when another write came first or nothing is stored.
    async fn delete_mcp_config(
        &self,
        id: &TenantId,
        expected: u64,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError>;
    /// Writes the MCP configuration only if the stored version is `expected` (`None`: none
    /// stored yet). `Conflict` when another write came first.
    async fn put_mcp_config(
        &self,
        id: &TenantId,
        config: &StoredMcpConfig,
        expected: Option<u64>,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError>;
    /// Stores a certification run as the tenant's latest (H-1), with its audit record,
    /// in one transaction.
    async fn put_certification(
        &self,
        tenant: &TenantId,
        run: &crate::certification::Certification,
        audit: &AuditEntry,
    ) -> Result<(), StoreError>;
    /// The tenant's latest certification run, if any (H-4).
    async fn latest_certification(
        &self,
        tenant: &TenantId,
    ) -> Result<Option<crate::certification::Certification>, StoreError>;
    /// The tenant's audit records, newest first: at most `limit`, older than `before`.
    async fn list_audit(
        &self,
        tenant: &TenantId,
        before: Option<&crate::ids::AuditId>,
        limit: usize,
    ) -> Result<AuditPage, StoreError>;
    /// Every audit record of the tenant with its chain fields, and every chain's stored
    /// head (L-2), for the verifier. A store without chains reports every record as
    /// unchained.
    async fn audit_trail(&self, tenant: &TenantId) -> Result<AuditTrail, StoreError>;
}

/// A tenant's whole audit trail as stored (L-2).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditTrail {
    /// The chained records, in no particular order.
    pub records: Vec<crate::audit_chain::ChainedRecord>,
    /// Each chain's head, read before the records (L-3: a record written after the heads
    /// were read is past its head and left for the next verification).
    pub heads: std::collections::BTreeMap<String, crate::audit_chain::Head>,
    /// The conversation chains named in the tenant's chain index (L-3): each must have its
    /// head and its records, so a deleted conversation chain is found.
    pub indexed: std::collections::BTreeSet<String>,
    /// Records without chain fields (L-3: each one breaks verification).
    pub unchained: usize,
}

/// A signed-in administrator's panel session (U-1). Stored under the SHA-256 of its
/// random id, never the id itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PanelSession {
    /// The tenant whose admin key opened it.
    pub tenant: TenantId,
    /// The hash of that admin key: after a rotation the session no longer holds.
    pub key_hash: crate::hash::Sha256Hex,
    /// It ends then, whatever happens (no sliding renewal).
    pub expires_at: Timestamp,
}

/// Panel sessions (U-1).
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// Records a new session under `id_hash`.
    async fn put_session(
        &self,
        id_hash: &crate::hash::Sha256Hex,
        session: &PanelSession,
    ) -> Result<(), StoreError>;
    /// The session, if it exists (expired ones may still be returned: check the time).
    async fn get_session(
        &self,
        id_hash: &crate::hash::Sha256Hex,
    ) -> Result<Option<PanelSession>, StoreError>;
    /// Ends the session (nothing when absent).
    async fn delete_session(&self, id_hash: &crate::hash::Sha256Hex) -> Result<(), StoreError>;
}

/// A secret store failure.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// The store could not be reached or refused.
    #[error("the secret store is unavailable")]
    Unavailable(#[source] Cause),
}

/// Where tenants' secrets live (service tokens, widget secrets), encrypted at rest.
#[async_trait]
pub trait SecretStore: Send + Sync {
    /// Stores a new version of secret `name` (creating it if needed); returns the version id.
    async fn put(&self, name: &str, value: &SecretString) -> Result<String, SecretError>;
    /// The current version and its id; `None` when the secret does not exist.
    async fn get_current(&self, name: &str) -> Result<Option<(SecretString, String)>, SecretError>;
    /// A given version (C-8: reconcile with the integration that executed); `None` when
    /// absent.
    async fn get_version(
        &self,
        name: &str,
        version: &str,
    ) -> Result<Option<SecretString>, SecretError>;
    /// Deletes the secret and all its versions. Deleting an absent secret succeeds.
    async fn delete(&self, name: &str) -> Result<(), SecretError>;
}

/// A signer failure.
#[derive(Debug, thiserror::Error)]
pub enum SignerError {
    /// No signing key is installed (C-5: `actionVerification: null`; C-6).
    #[error("no action signing key is installed")]
    NotConfigured,
    /// The key service failed.
    #[error("the signing service is unavailable")]
    Unavailable(#[source] Cause),
}

/// The public half of the action signing key, as shown to tenants (C-5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerificationKey {
    /// The `kid` proofs carry.
    pub key_id: String,
    /// SPKI PEM.
    pub public_key_pem: String,
}

/// One key of the JWKS (K-1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedKey {
    /// Its `kid` and PEM.
    pub key: VerificationKey,
    /// Announced, active or previous.
    pub status: crate::keyring::KeyStatus,
}

/// The JWKS's content (K-1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedKeys {
    /// `Cache-Control: max-age`, seconds.
    pub cache_seconds: i64,
    /// The keys, oldest first; exactly one is active.
    pub keys: Vec<PublishedKey>,
}

/// Signs proofs. The private key never leaves the implementation (KMS).
#[async_trait]
pub trait ProofSigner: Send + Sync {
    /// The `kid` of the key that signs now (it may change between calls: a rotation).
    async fn key_id(&self) -> Result<String, SignerError>;
    /// The RS256 (RSASSA-PKCS1-v1_5 with SHA-256) signature of `signing_input` with the
    /// key whose thumbprint is `kid` (one [`Self::key_id`] returned), so that the header's
    /// `kid` always names the key that signed, even when the active key switches between
    /// the two calls.
    async fn sign_rs256(&self, kid: &str, signing_input: &[u8]) -> Result<Vec<u8>, SignerError>;
    /// The public key that signs now, for tenants to install (C-5).
    async fn verification_key(&self) -> Result<VerificationKey, SignerError> {
        Err(SignerError::NotConfigured)
    }
    /// Every key that verifies proofs, or soon will (K-1): the active one, an announced
    /// one and previous ones whose proofs may still be valid; and the JWKS cache time.
    /// By default, the signing key alone.
    async fn published_keys(&self) -> Result<PublishedKeys, SignerError> {
        let key = self.verification_key().await?;
        Ok(PublishedKeys {
            cache_seconds: crate::keyring::DEFAULT_CACHE_SECONDS,
            keys: vec![PublishedKey {
                status: crate::keyring::KeyStatus::Active,
                key,
            }],
        })
    }
}

/// Who a provider call is for: set by the platform from the authenticated context, never
/// from tool arguments.
#[derive(Debug, Clone)]
pub struct ProviderContext {
    /// `X-MCP-Tenant-Id`.
    pub tenant: TenantId,
    /// `X-MCP-User-Id`.
    pub user: UserId,
    /// `X-MCP-Conversation-Id`.
    pub conversation: CaseId,
    /// The provider endpoint.
    pub server_url: crate::config::ServerUrl,
    /// `Authorization: Bearer …`.
    pub service_token: SecretString,
    /// The configuration version (cache key for `tools/list`).
    pub config_version: u64,
}

/// A tool as the provider's `tools/list` publishes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderTool {
    /// Name.
    pub name: ToolName,
    /// The whole descriptor as published (passed through to the model unchanged).
    pub descriptor: Map<String, Value>,
    /// Its `outputSchema`, if declared (G-6).
    pub output_schema: Option<Value>,
}

/// A provider call failure.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// Connection refused, DNS failure, or an address the URL rules forbid (D-5).
    #[error("the provider is unreachable")]
    Unreachable(#[source] Cause),
    /// No answer in time. For `execute_action` the outcome is unknown.
    #[error("the provider did not answer in time")]
    Timeout,
    /// The connection closed after the request was sent and before the whole answer came:
    /// for `execute_action` the outcome is unknown.
    #[error("the connection to the provider dropped before its answer was complete")]
    Interrupted,
    /// An HTTP status other than success.
    #[error("the provider answered HTTP {status}")]
    Http {
        /// The status code.
        status: u16,
    },
    /// Not a valid MCP / JSON-RPC answer.
    #[error("the provider's answer is malformed")]
    Malformed(String),
    /// A JSON-RPC error object (e.g. unknown tool).
    #[error("the provider answered a protocol error {code}")]
    Protocol {
        /// The JSON-RPC error code.
        code: i64,
    },
}

/// A connection opened for one call that must be sent exactly once: everything
/// that has to happen before that request — the MCP handshake, when the server keeps
/// sessions — has happened. A failure before this point means nothing was sent.
#[derive(Debug, Clone, Default)]
pub struct Opened {
    /// The MCP session opened for the call, if the server keeps sessions.
    pub session: Option<String>,
    /// When the whole exchange (handshake and call) must be over.
    pub until: Option<std::time::Instant>,
}

/// What carries a countersigned call: the connection opened for it and the proof,
/// signed after the connection was opened.
#[derive(Debug, Clone, Copy)]
pub struct Confirmation<'a> {
    /// From [`Provider::open`].
    pub opened: &'a Opened,
    /// Sent as `X-MCP-Confirmation`.
    pub proof: &'a Proof,
}

/// The tenant's MCP server.
#[async_trait]
pub trait Provider: Send + Sync {
    /// `tools/list` (implementations may cache briefly per configuration version).
    async fn list_tools(&self, ctx: &ProviderContext) -> Result<Vec<ProviderTool>, ProviderError>;

    /// Opens a connection for one countersigned call: the handshake, if any. An error
    /// here means nothing was sent (the action is certainly not executed).
    async fn open(&self, ctx: &ProviderContext) -> Result<Opened, ProviderError> {
        let _ = ctx;
        Ok(Opened::default())
    }

    /// `tools/call`: the provider's `CallToolResult` JSON, unchanged (proxied answers pass
    /// through as they came, G-6; contract answers are read with
    /// [`crate::tool_result::ToolResult::from_mcp_json`]). With a `confirmation`
    /// (`execute_action` only, A-30) the call goes over its opened connection, carries the
    /// proof as `X-MCP-Confirmation`, and is sent exactly once.
    async fn call_tool(
        &self,
        ctx: &ProviderContext,
        tool: &str,
        arguments: &Map<String, Value>,
        confirmation: Option<Confirmation<'_>>,
    ) -> Result<Value, ProviderError>;
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelTool {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// JSON Schema of its arguments.
    pub input_schema: Value,
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The model's id for the call.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Arguments (validated by the dispatcher, never trusted).
    pub arguments: Value,
}

/// One turn of the model's conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelMessage {
    /// Text from the user.
    User(String),
    /// The model's own earlier output.
    Assistant {
        /// Text.
        text: String,
        /// Tool calls it made.
        tool_calls: Vec<ToolCall>,
    },
    /// A tool's answer (the enveloped text).
    ToolResult {
        /// The call answered.
        call_id: String,
        /// The answer text.
        content: String,
    },
}

/// A request for one model step.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRequest {
    /// System instructions.
    pub system: String,
    /// History.
    pub messages: Vec<ModelMessage>,
    /// Tools it may call.
    pub tools: Vec<ModelTool>,
    /// The most output tokens this step may produce (M-4).
    pub max_output_tokens: u32,
}

/// The model's reply: text, tool calls, or both.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelReply {
    /// Text for the user.
    pub text: Option<String>,
    /// Tools to call before the next step.
    pub tool_calls: Vec<ToolCall>,
    /// The answer stopped at the step's output bound (M-4).
    pub truncated: bool,
}

/// A model failure (M-5), typed so the turn can tell a failure worth retrying from one
/// that is not.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The service refused for load (HTTP 429, `ThrottlingException`): retryable.
    #[error("the model service is throttling requests")]
    Throttled(#[source] Cause),
    /// The service failed or could not be reached (5xx, connection): retryable.
    #[error("the model is unavailable")]
    Unavailable(#[source] Cause),
    /// No answer within the step's time: retryable while the turn has time.
    #[error("the model did not answer in time")]
    Timeout,
    /// An answer that is not the wire format's (unparseable, no message): not retried.
    #[error("the model's answer is malformed: {0}")]
    Malformed(String),
    /// The service refused the request itself (4xx: credentials, model id, a request
    /// too large): configuration, not luck, so not retried.
    #[error("the model service refused the request")]
    Refused(#[source] Cause),
}

impl ModelError {
    /// M-5: whether the same request may be sent again (the service did not answer it,
    /// or answered with a passing condition).
    pub fn retryable(&self) -> bool {
        matches!(
            self,
            Self::Throttled(_) | Self::Unavailable(_) | Self::Timeout
        )
    }

    /// A short name for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Throttled(_) => "throttled",
            Self::Unavailable(_) => "unavailable",
            Self::Timeout => "timeout",
            Self::Malformed(_) => "malformed",
            Self::Refused(_) => "refused",
        }
    }
}

/// The AI model (D-3). Its output is never an authorization.
#[async_trait]
pub trait Model: Send + Sync {
    /// One step.
    async fn step(&self, request: &ModelRequest) -> Result<ModelReply, ModelError>;
}

/// Resolves host names (D-5: a provider's host must resolve only to public addresses;
/// checked on save and again at connect time).
#[async_trait]
pub trait Resolver: Send + Sync {
    /// The addresses `host` resolves to.
    async fn resolve(&self, host: &str, port: u16) -> std::io::Result<Vec<std::net::IpAddr>>;
}
