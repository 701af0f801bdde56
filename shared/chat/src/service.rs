//! The messages function's use-case service — [`Chat`], the ports and settings it is
//! built from ([`ChatParts`]) and why a request cannot be served ([`ChatError`]) — apart
//! from the use cases themselves (`chat`, `confirm`, `execute`, `turn`, `prepare`), so
//! each of those depends on this module and none on another's file for its types.

use countersign_domain::ports::{
    Clock, Conversations, Ids, McpSettings, Model, ProofSigner, ProposalLock, RateLimiter,
    StoreError, Tenants, UnsettledIndex,
};
use countersign_tools::builtins::CallContext;
use countersign_tools::integration::IntegrationService;
use countersign_tools::registry::Registry;
use std::sync::Arc;
use std::time::Duration;

/// Longest user message, in characters.
pub const MAX_CONTENT_CHARS: usize = 4000;

/// Why a request cannot be served. Each maps to one HTTP status and code.
#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    /// No such case for this person (also another person's case).
    #[error("no such case")]
    NotFound,
    /// The case is closed.
    #[error("the case is closed")]
    Closed,
    /// A field breaks a rule.
    #[error("{field}: {message}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// Why.
        message: String,
    },
    /// An action's outcome is still being checked in this case.
    #[error("an action's outcome is still being checked")]
    Busy,
    /// F-1, F-3: the proposal's operation needs the person's passkey: a typed confirm
    /// cannot countersign it; nothing was stored and the proposal still waits.
    #[error("this action needs your passkey: a typed confirm cannot countersign it")]
    StepUpRequired,
    /// F-3: the passkey step-up was refused (why, in the error); nothing was stored or
    /// signed and the proposal still waits.
    #[error("{0}")]
    StepUpRefused(crate::stepup::StepUpRefused),
    /// F-3: no proposal of the case waits for the person's passkey (none waits, or the one
    /// waiting needs none, or this deployment runs no passkey ceremony).
    #[error("no proposal here waits for a passkey")]
    NoStepUpPending,
    /// The tenant's budget of model turns is spent for now (decision 0021); nothing was
    /// stored.
    #[error("too many messages for this company right now; try again in {retry_after_secs} s")]
    RateLimited {
        /// Seconds until the budget renews.
        retry_after_secs: u64,
    },
    /// V-7: this person opened too many cases or sent too many messages in the last
    /// minute; nothing was stored.
    #[error("you are sending {what} too fast; try again in {retry_after_secs} s")]
    PersonLimited {
        /// `messages` or `new conversations`.
        what: &'static str,
        /// Seconds until the window renews.
        retry_after_secs: u64,
    },
    /// A store failed; nothing more was done.
    #[error("a platform service is unavailable")]
    Unavailable(StoreError),
}

impl From<crate::stepup::StepUpRefused> for ChatError {
    fn from(e: crate::stepup::StepUpRefused) -> Self {
        match e {
            crate::stepup::StepUpRefused::Unavailable(s) => s.into(),
            e => Self::StepUpRefused(e),
        }
    }
}

impl From<StoreError> for ChatError {
    fn from(e: StoreError) -> Self {
        match e {
            // N-4: the conversation was purged while this request worked in it.
            StoreError::Gone => Self::NotFound,
            e => Self::Unavailable(e),
        }
    }
}

/// V-7: how many new cases and messages one person may send a minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PersonLimits {
    /// New cases a minute.
    pub cases_per_minute: u32,
    /// Posted messages a minute.
    pub messages_per_minute: u32,
}

impl From<countersign_tools::integration::IntegrationError> for ChatError {
    fn from(e: countersign_tools::integration::IntegrationError) -> Self {
        use countersign_tools::integration::IntegrationError as E;
        match e {
            E::Store(s) => s.into(),
            E::Secrets(s) => Self::Unavailable(StoreError::Unavailable(Box::new(s))),
        }
    }
}

/// Everything the use cases need, built once per process.
pub struct Chat {
    /// The ports and settings.
    pub parts: ChatParts,
    /// Tool rounds per model turn (D-3).
    pub max_tool_rounds: usize,
    /// Tool calls per model turn, all rounds together (M-4): a model cannot make one
    /// person's message cost an unbounded number of provider calls.
    pub max_tool_calls: usize,
    /// How long a model turn may take, all of it (M-4): well inside the function's
    /// timeout, so the person is always told something.
    pub turn_deadline: std::time::Duration,
    /// The most output tokens one model step may produce (M-4).
    pub max_output_tokens: u32,
    /// N-5: the per-tenant budget of widget API requests (every authenticated request,
    /// checked before anything else), with its size per minute; `None`: unlimited.
    pub request_budget: Option<(Arc<dyn RateLimiter>, u32)>,
    /// The per-tenant budget of model turns (decision 0021), with its size per minute;
    /// `None` admits every turn.
    pub turn_budget: Option<(Arc<dyn RateLimiter>, u32)>,
    /// V-7: the per-person limits on new cases and messages; `None` admits every one.
    pub person_limits: Option<(Arc<dyn RateLimiter>, PersonLimits)>,
    /// the key gateway tokens are signed with; `None`: none are minted here.
    pub mcp_tokens: Option<crate::gateway_key::McpTokens>,
    /// F-3: the passkey ceremonies; `None`: no passkey operation can be confirmed here
    /// (every one answers `STEP_UP_REQUIRED`).
    pub step_up: Option<crate::stepup::StepUp>,
}

impl std::fmt::Debug for Chat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chat")
            .field("issuer", &self.parts.issuer)
            .field("max_tool_rounds", &self.max_tool_rounds)
            .finish_non_exhaustive()
    }
}

/// The ports and settings of [`Chat`] (cheap to clone: shared handles).
#[derive(Clone)]
pub struct ChatParts {
    /// Cases and messages.
    pub conversations: Arc<dyn Conversations>,
    /// Proposals: their creation, confirmation and transitions (the one-pending rule is
    /// the store's, A-15 … A-17).
    pub proposals: Arc<dyn ProposalLock>,
    /// Actions whose outcome is unknown: the status a reconciliation saw.
    pub unsettled: Arc<dyn UnsettledIndex>,
    /// The tenants (each turn reads its tenant).
    pub tenants: Arc<dyn Tenants>,
    /// The tenants' MCP settings (the built-in tools read them).
    pub settings: Arc<dyn McpSettings>,
    /// The tenant's MCP server: configuration, service token, tools (shared with the
    /// gateway).
    pub integration: Arc<IntegrationService>,
    /// Signs proofs (KMS).
    pub signer: Arc<dyn ProofSigner>,
    /// The model.
    pub model: Arc<dyn Model>,
    /// The built-in tools (the same registry the gateway serves).
    pub registry: Arc<Registry<CallContext>>,
    /// Time.
    pub clock: Arc<dyn Clock>,
    /// Ids.
    pub ids: Arc<dyn Ids>,
    /// The proofs' `iss`.
    pub issuer: String,
    /// An `executing` proposal older than this is treated as stuck (its process died):
    /// the next message reconciles it. Longer than the provider timeout.
    pub stuck_after: Duration,
}

countersign_domain::debug_showing!(ChatParts { issuer });
