//! The tenant store: tenants, their credentials and MCP settings, certifications and
//! the audit trail (C-1 … C-11, L-1, L-2).

use super::store::{StoreError, TransitionOutcome};
use crate::audit_chain::{AuditEntry, AuditTrail, ChainLink};
use crate::config::StoredMcpConfig;
use crate::ids::{TenantId, WidgetKeyId};
use crate::language::Language;
use crate::time::Timestamp;
use async_trait::async_trait;

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
    /// where the confirmation page sends a person to sign in (the tenant's sign-in
    /// hand-off, an `https` URL); `None` until the tenant sets it.
    pub sign_in_url: Option<String>,
    /// how long its conversations are kept after their last activity; `None` until
    /// the tenant sets it (the deployment's default applies, if any).
    pub retention_days: Option<crate::retention::RetentionDays>,
    /// its legal holds.
    pub holds: crate::retention::Holds,
    /// people whose erasure waits for conversations that could not be purged yet
    /// (an unresolved proposal, a conversation's hold); the purge finishes each.
    pub erasing: std::collections::BTreeSet<crate::ids::UserId>,
    /// where the purge's last run stopped for this tenant when it ran out of time;
    /// the next run resumes there. `None`: the next run starts at the beginning.
    pub purge_cursor: Option<String>,
    /// Issue 50: its accent and welcome per language; default until the tenant sets them.
    pub appearance: crate::appearance::Appearance,
}

impl Tenant {
    /// A tenant as registered: no setting of its own yet (the deployment's defaults and
    /// the widget's own welcome apply), no hold, nobody being erased.
    #[must_use]
    pub fn new(
        id: TenantId,
        name: impl Into<String>,
        admin_key_hash: crate::hash::Sha256Hex,
        language: Language,
        created_at: Timestamp,
    ) -> Self {
        Self {
            id,
            name: name.into(),
            admin_key_hash,
            language,
            created_at,
            sign_in_url: None,
            retention_days: None,
            holds: crate::retention::Holds::default(),
            erasing: std::collections::BTreeSet::new(),
            purge_cursor: None,
            appearance: crate::appearance::Appearance::default(),
        }
    }
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
    /// Set when the credential was replaced with a grace period: its tokens are refused
    /// from this moment on (decision 0047). `None`: valid until revoked.
    pub retires_at: Option<Timestamp>,
}

impl WidgetKey {
    /// Whether its tokens are still accepted at `now` (revocation aside).
    #[must_use]
    pub fn valid_at(&self, now: Timestamp) -> bool {
        self.retires_at.is_none_or(|at| now < at)
    }
}

/// One page of audit records, newest first.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditPage {
    /// The records.
    pub items: Vec<AuditEntry>,
    /// Each chained record's place in its chain, by record id (L-3: the audit API gives
    /// the chain fields). A record without chain fields has none.
    pub links: std::collections::BTreeMap<crate::ids::AuditId, ChainLink>,
    /// Pass as `before` to read the next (older) page; `None` on the last page.
    pub next: Option<crate::ids::AuditId>,
}

/// The tenants and their administrators' keys (D-4).
#[async_trait]
pub trait Tenants: Send + Sync {
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

    /// Sets the tenant's default language (S-4) with its audit record, in one write. New
    /// cases take it; open cases keep theirs. `Conflict` when the tenant does not exist.
    async fn set_language(
        &self,
        id: &TenantId,
        language: crate::language::Language,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError>;

    /// sets (or, with `None`, removes) the tenant's sign-in hand-off URL with its
    /// audit record, in one write. `Conflict` when the tenant does not exist.
    async fn set_sign_in_url(
        &self,
        id: &TenantId,
        url: Option<&str>,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError>;

    /// Issue 50: replaces the tenant's appearance (accent, welcomes) with its audit record,
    /// in one write. `Conflict` when the tenant does not exist.
    async fn set_appearance(
        &self,
        id: &TenantId,
        appearance: &crate::appearance::Appearance,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError>;

    /// sets the tenant's retention with its audit record, in one write. `Conflict`
    /// when the tenant does not exist.
    async fn set_retention_days(
        &self,
        id: &TenantId,
        days: crate::retention::RetentionDays,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError>;

    /// places (`on`) or lifts `hold` with its audit record, in one write (atomic
    /// against any other hold's change). `Conflict` when the tenant does not exist.
    async fn set_hold(
        &self,
        id: &TenantId,
        hold: &crate::retention::Hold,
        on: bool,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError>;

    /// keeps (or, with `None`, forgets) where the purge stopped for the tenant. Not
    /// audited: the purge's own bookkeeping, not a setting. A tenant that no longer
    /// exists is left alone.
    async fn set_purge_cursor(&self, id: &TenantId, cursor: Option<&str>)
    -> Result<(), StoreError>;

    /// marks `user`'s erasure as waiting (`pending`) or finished, with its audit
    /// record, in one write. `Conflict` when the tenant does not exist.
    async fn set_erasing(
        &self,
        id: &TenantId,
        user: &crate::ids::UserId,
        pending: bool,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError>;
}

/// A tenant's MCP settings (C-1 … C-8); every change writes its audit record with it.
#[async_trait]
pub trait McpSettings: Send + Sync {
    /// Reads the MCP configuration.
    async fn get_mcp_config(&self, id: &TenantId) -> Result<Option<StoredMcpConfig>, StoreError>;

    /// Writes the MCP configuration only if the stored version is `expected` (`None`: none
    /// stored yet). `Conflict` when another write came first.
    async fn put_mcp_config(
        &self,
        id: &TenantId,
        config: &StoredMcpConfig,
        expected: Option<u64>,
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
}

/// A tenant's widget credentials (C-9, D-2).
#[async_trait]
pub trait WidgetKeys: Send + Sync {
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

    /// Sets the moment a credential's tokens stop being accepted (a replacement's grace
    /// period, decision 0047). `Conflict` when it does not exist or already retires: a
    /// credential is replaced once.
    async fn retire_widget_key(
        &self,
        tenant: &TenantId,
        id: &WidgetKeyId,
        at: Timestamp,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError>;
}

/// A tenant's provider certification runs (H-1 … H-4).
#[async_trait]
pub trait Certifications: Send + Sync {
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
}

/// A tenant's audit trail as stored (L-1 … L-3): pages for people, the whole trail
/// with its chains for the verifier.
#[async_trait]
pub trait AuditRecords: Send + Sync {
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

/// Every tenant port at once, for the adapters' wiring and the store contract; a use case
/// holds only the narrow ports it calls. Every method that changes a tenant's
/// configuration takes the `AuditEntry` describing it and writes both atomically.
pub trait TenantStore:
    Tenants + McpSettings + WidgetKeys + Certifications + AuditRecords + super::ErasureJobs
{
}

impl<
    T: Tenants
        + McpSettings
        + WidgetKeys
        + Certifications
        + AuditRecords
        + super::ErasureJobs
        + ?Sized,
> TenantStore for T
{
}
