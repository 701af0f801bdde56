//! What the admin use cases need, built once per process.

use countersign_domain::config::UrlPolicy;
use countersign_domain::ports::{
    AuditRecords, Certifications, Clock, ConversationStore, Conversations, Ids, Leases,
    McpSettings, ProofSigner, Provider, Resolver, SecretStore, SessionStore, SettingsFence,
    TenantStore, Tenants, UnsettledIndex, WidgetKeys,
};
use std::sync::Arc;

/// The admin function's ports and settings.
#[derive(Clone)]
pub struct AdminState {
    /// The stores, one narrow port each.
    pub stores: AdminStores,
    /// Service tokens and widget secrets.
    pub secrets: Arc<dyn SecretStore>,
    /// The action signing key (C-5, C-6): action proofs only (A-31, V-6).
    pub signer: Arc<dyn ProofSigner>,
    /// The audit checkpoint key (V-6): checkpoints only, published apart from the JWKS.
    pub checkpoint_signer: Arc<dyn ProofSigner>,
    /// The proofs' `iss` (C-5).
    pub issuer: String,
    /// D-5 local-stack allowance (off in deployments).
    pub url_policy: UrlPolicy,
    /// D-5: resolves `serverUrl` hosts on save.
    pub resolver: Arc<dyn Resolver>,
    /// Panel sessions (U-1).
    pub sessions: Arc<dyn SessionStore>,
    /// The tenants' MCP servers (the certification run, H-1).
    pub provider: Arc<dyn Provider>,
    /// Fresh ids (widget credentials, audit records).
    pub ids: Arc<dyn Ids>,
    /// The clock.
    pub clock: Arc<dyn Clock>,
    /// V-7: one certification run, verification and checkpoint in flight per tenant.
    pub leases: Arc<dyn Leases>,
    /// F-3: where the passkey ceremonies run (published in actionVerification; the
    /// certification's step-up series asserts for it); `None`: no operation can require a
    /// passkey.
    pub step_up: Option<countersign_domain::stepup::Site>,
}

/// The stores the admin use cases call, one narrow port each: a use case reaches only the
/// operations of the port it names (issue 27).
#[derive(Clone)]
pub struct AdminStores {
    /// Tenants and their admin keys (authentication, the panel's header).
    pub tenants: Arc<dyn Tenants>,
    /// The MCP configuration (saves, deletes, reads).
    pub settings: Arc<dyn McpSettings>,
    /// Widget credentials.
    pub widget_keys: Arc<dyn WidgetKeys>,
    /// Certification runs (H-1 … H-4).
    pub certifications: Arc<dyn Certifications>,
    /// The audit trail (L-1 … L-3).
    pub audit: Arc<dyn AuditRecords>,
    /// Cases, read for an unsettled action's conversation.
    pub cases: Arc<dyn Conversations>,
    /// Unsettled actions (A-41 … A-45).
    pub unsettled: Arc<dyn UnsettledIndex>,
    /// C-8: the pending proposals a settings change invalidates.
    pub fence: Arc<dyn SettingsFence>,
    /// the conversations, for an erasure's purge.
    pub retention: Arc<dyn countersign_domain::ports::ConversationStore>,
    /// the people's keys of the audit trail's personal data.
    pub subjects: Arc<dyn countersign_domain::ports::SubjectKeys>,
    /// N-3: the erasure jobs and their queue.
    pub jobs: Arc<dyn countersign_domain::ports::ErasureJobs>,
}

countersign_domain::debug_showing!(AdminStores {});

impl AdminStores {
    /// The narrow ports of one tenant store and one conversation store (in deployments
    /// both are the same DynamoDB table).
    #[must_use]
    pub fn split(tenants: Arc<dyn TenantStore>, conversations: Arc<dyn ConversationStore>) -> Self {
        Self {
            tenants: tenants.clone(),
            settings: tenants.clone(),
            widget_keys: tenants.clone(),
            certifications: tenants.clone(),
            jobs: tenants.clone(),
            audit: tenants,
            cases: conversations.clone(),
            unsettled: conversations.clone(),
            fence: conversations.clone(),
            retention: conversations,
            subjects: Arc::new(countersign_domain::ports::NoSubjectKeys),
        }
    }

    /// The same stores with the people's keys `keys`, when there are some.
    #[must_use]
    pub fn with_subjects(
        mut self,
        keys: Option<Arc<dyn countersign_domain::ports::SubjectKeys>>,
    ) -> Self {
        if let Some(keys) = keys {
            self.subjects = keys;
        }
        self
    }
}

countersign_domain::debug_showing!(AdminState { issuer });

/// Why an admin use case refused or failed. Each maps to one HTTP status and code.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The body breaks the configuration rules (C-3, C-4, C-7, D-5): every broken rule.
    #[error("{message}")]
    Invalid {
        /// The first field to blame.
        field: String,
        /// The first rule broken.
        message: String,
        /// Every broken rule, `(field, message)`.
        errors: Vec<(String, Said)>,
    },
    /// V-1: allowed tools that cannot be consultations, each `(field, message)` naming
    /// the tool and the reason.
    #[error("{}", first_message(.0))]
    NotConsultations(Vec<(String, Said)>),
    /// V-1: the provider's `tools/list` could not be read at save, so the allowed tools
    /// could not be vetted.
    #[error(
        "your server's tools/list could not be read to check the allowed tools ({0}); nothing was saved"
    )]
    ProviderUnreachable(String),
    /// V-7: the tenant already has one such job in flight.
    #[error("a {what} is already running for this tenant; try again in {retry_after_secs} s")]
    Busy {
        /// The job.
        what: &'static str,
        /// Seconds until the running one's lease ends at the latest.
        retry_after_secs: u64,
    },
    /// V-7, N-7: the platform runs as many such jobs as it allows at once, across all
    /// tenants (429: nothing of this tenant's is running).
    #[error(
        "the platform is running as many {what}s as it allows at once, across all tenants; nothing was started: try again in {retry_after_secs} s"
    )]
    PlatformBusy {
        /// The job.
        what: &'static str,
        /// Seconds until the first platform slot frees at the latest.
        retry_after_secs: u64,
    },
    /// N-3: this tenant has as many jobs of this kind queued as it may (429).
    #[error(
        "this tenant has as many {what}s queued as it may; nothing was recorded: try again in {retry_after_secs} s"
    )]
    QueueFull {
        /// The job.
        what: &'static str,
        /// Seconds until the worker's next run.
        retry_after_secs: u64,
    },
    /// C-6: actions cannot be enabled without a signing key.
    #[error("actions cannot be enabled: the platform has no signing key installed")]
    SigningUnavailable,
    /// H-4: enabling actions needs a passing certification of the action settings saved.
    #[error(
        "actions cannot be enabled: run the certification on these settings first; it must pass (a change of the server URL, service token, audience or operations needs a new run)"
    )]
    CertificationRequired,
    /// F-4: an operation can need the person's passkey only after a passing certification
    /// that sent step-up proofs; the certification does not send them yet.
    #[error(
        "{0} cannot need a passkey yet: an operation becomes passkey only after a certification that sent step-up proofs passed, and the certification does not send them yet"
    )]
    StepUpNotCertified(String),
    /// No MCP configuration is saved (nothing to certify).
    #[error("save the MCP configuration first: the certification checks the saved one")]
    NotConfigured,
    /// No certification has run yet.
    #[error("no certification has run yet")]
    NoCertification,
    /// Another change came first (the configuration's version moved).
    #[error("the configuration changed meanwhile; reload and try again")]
    Conflict,
    /// No unsettled action with that id in that conversation.
    #[error("no such unsettled action (it may have been settled meanwhile)")]
    NoSuchAction,
    /// The action is `executing` and may still be running: not yet for the administrator.
    #[error(
        "the action started less than {0} seconds ago and may still be running; try again later"
    )]
    StillRunning(i64),
    /// No such widget credential.
    #[error("no such widget credential")]
    NoSuchCredential,
    /// The credential was already replaced and is in its grace period (decision 0047).
    #[error("this credential was already replaced; its grace period ends at {0}")]
    AlreadyReplaced(countersign_domain::time::Timestamp),
    /// L-2: a chain of the audit trail is broken; no checkpoint is signed over it.
    #[error(
        "the audit trail's chain {chain} is broken at record {seq}; no checkpoint is signed over a broken chain"
    )]
    AuditBroken {
        /// The chain.
        chain: String,
        /// The first record that does not verify.
        seq: u64,
    },
    /// The change was saved, but the proposals it invalidates could not all be cancelled
    /// (C-8); saving again (even unchanged) finishes it.
    #[error(
        "the settings were saved and are in force: no proposal prepared under the old ones can run; some of those proposals are not yet cancelled with a notice to their person; save again to finish"
    )]
    Unfinished(#[source] countersign_domain::ports::Cause),
    /// A platform service failed; nothing was changed.
    #[error("{what} is unavailable; nothing was changed")]
    Unavailable {
        /// Which service.
        what: &'static str,
        /// The cause, for logs only.
        #[source]
        cause: countersign_domain::ports::Cause,
    },
}

impl AdminError {
    /// A failure of `what`, with its cause kept for the log.
    pub(crate) fn unavailable(
        what: &'static str,
    ) -> impl FnOnce(Box<dyn std::error::Error + Send + Sync>) -> Self {
        move |cause| Self::Unavailable { what, cause }
    }
}

/// Maps a store error to [`AdminError::Unavailable`] of the tenant store.
pub(crate) fn store_down(e: countersign_domain::ports::StoreError) -> AdminError {
    AdminError::unavailable("the tenant store")(Box::new(e))
}

/// Maps a secret store error to [`AdminError::Unavailable`] of the secret store.
pub(crate) fn secrets_down(e: countersign_domain::ports::SecretError) -> AdminError {
    AdminError::unavailable("the secret store")(Box::new(e))
}

/// Every store failure an admin use case meets is the tenant store's unavailability
/// ([`store_down`]): `?` says so without naming it each time.
impl From<countersign_domain::ports::StoreError> for AdminError {
    fn from(e: countersign_domain::ports::StoreError) -> Self {
        store_down(e)
    }
}

/// A secret store failure is the secret store's unavailability ([`secrets_down`]).
impl From<countersign_domain::ports::SecretError> for AdminError {
    fn from(e: countersign_domain::ports::SecretError) -> Self {
        secrets_down(e)
    }
}

/// The first message of a list of `(field, message)` errors.
pub(crate) fn first_message(errors: &[(String, Said)]) -> &str {
    errors.first().map_or("", |(_, m)| m.en.as_str())
}

/// A refusal's text in both languages (issue 50): the domain's.
pub(crate) use countersign_domain::texts::Said;

impl AdminError {
    /// [`AdminError::Invalid`] naming every broken rule, the first as the field and
    /// message the API answers.
    #[must_use]
    pub fn invalid(errors: Vec<(String, Said)>) -> Self {
        let (field, message) = errors
            .first()
            .map(|(f, m)| (f.clone(), m.en.clone()))
            .unwrap_or_default();
        Self::Invalid {
            field,
            message,
            errors,
        }
    }

    /// [`AdminError::invalid`] for one field.
    #[must_use]
    pub fn invalid_field(field: &str, said: Said) -> Self {
        Self::invalid(vec![(field.to_owned(), said)])
    }
}
