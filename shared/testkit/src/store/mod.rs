//! The conversation and tenant stores in memory, with the DynamoDB adapter's conditions:
//! one active slot per conversation (P-2), the tenant-wide action-id guard, the
//! confirm transaction's checks, the C-8 fence at preparation, and the audit record written with each
//! configuration change.

use crate::faults::{Fault, Faults};
use crate::system::{SeqIds, TestClock, yield_now};
use async_trait::async_trait;
use countersign_domain::audit_chain::{self, ChainedRecord, Head};
use countersign_domain::certification::Certification;
use countersign_domain::conversation::{Case, CaseStatus, Message};
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::{ActionId, AuditId, CaseId, MessageId, TenantId, WidgetKeyId};
use countersign_domain::life::{self, Stamp};
use countersign_domain::ports::{
    Admission, AuditEntry, AuditPage, AuditRecords, CaseSummary, Certifications, Clock,
    ConfirmWrite, ConversationView, Conversations, CreateProposalOutcome, Ids, Lease, Leases,
    McpSettings, NewMessage, PanelSession, ProposalLock, ProposalOutcome, RateLimiter,
    SessionStore, SettingsFence, SettleByAdmin, StoreError, StoredMcpConfig, Tenant, Tenants,
    TransitionOutcome, UnsettledAction, UnsettledIndex, WidgetKey, WidgetKeys,
};
use countersign_domain::proposal::{Proposal, ProposalState, is_legal};
use countersign_domain::texts::Language;
use countersign_domain::time::Timestamp;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

mod budgets;
mod conversations;
mod links;
mod passkeys;
mod proposals;
mod retention;
mod tenants;

/// One conversation: the case, its slot, proposals and messages.
#[derive(Debug, Clone)]
struct Conversation {
    case: Case,
    language: Language,
    slot: Option<ActionId>,
    proposals: HashMap<ActionId, Proposal>,
    messages: BTreeMap<MessageId, Message>,
    /// N-4: writes taken (messages, links), as the DynamoDB case item's `writes`.
    writes: u64,
}

impl Conversation {
    /// The slot's proposal while it is not terminal (a settled one is history, as in the
    /// DynamoDB store's read).
    fn active(&self) -> Option<&Proposal> {
        self.slot
            .as_ref()
            .and_then(|a| self.proposals.get(a))
            .filter(|p| !p.state.is_terminal())
    }

    /// N-6: the slot's proposal a new one replaces, if any.
    fn replaced(&self) -> Option<ActionId> {
        self.slot
            .as_ref()
            .and_then(|a| self.proposals.get(a))
            .filter(|p| p.state.is_replaced_by_a_new_proposal())
            .map(|p| p.action_id.clone())
    }

    fn push(&mut self, m: &NewMessage) {
        self.messages.insert(m.id.clone(), m.clone());
    }
}

#[derive(Debug, Default)]
struct State {
    tenants: BTreeMap<TenantId, Tenant>,
    configs: HashMap<TenantId, StoredMcpConfig>,
    widget_keys: HashMap<TenantId, BTreeMap<WidgetKeyId, WidgetKey>>,
    audit: HashMap<TenantId, BTreeMap<AuditId, AuditEntry>>,
    /// The same records with their chain fields, and each chain's head (L-2).
    records: HashMap<TenantId, Vec<ChainedRecord>>,
    heads: HashMap<TenantId, BTreeMap<String, Head>>,
    certifications: HashMap<TenantId, Certification>,
    sessions: HashMap<Sha256Hex, PanelSession>,
    /// The last status answer noted per (tenant, action).
    status_notes: HashMap<(TenantId, ActionId), (String, Timestamp)>,
    conversations: HashMap<(TenantId, CaseId), Conversation>,
    used_action_ids: HashSet<(TenantId, ActionId)>,
    /// Units spent per (tenant, bucket, window start).
    budgets: HashMap<(TenantId, String, i64), u32>,
    /// V-7: the lease holder and its expiry per (tenant, kind).
    leases: HashMap<(TenantId, String), (String, i64)>,
    /// confirmation links by the hash of their id.
    links: HashMap<Sha256Hex, countersign_domain::ports::ConfirmationLink>,
    /// spent request states.
    spent_states: HashSet<String>,
    /// URL elicitation declared, by gateway token hash.
    url_elicitation: HashMap<Sha256Hex, bool>,
    /// N-6: confirmation page sessions, under their key, until when they live.
    page_sessions: HashMap<Sha256Hex, Timestamp>,
    /// F-2: each person's passkeys, in enrolment order.
    passkeys: HashMap<
        (TenantId, countersign_domain::ids::UserId),
        Vec<countersign_domain::ports::Passkey>,
    >,
    /// each person's key id, and what was sealed under each key.
    subject_keys: HashMap<(TenantId, countersign_domain::ids::UserId), String>,
    /// R-1 (decision 0055): each conversation's key, destroyed by its purge.
    conversation_keys: HashMap<(TenantId, CaseId), String>,
    sealed: HashMap<(TenantId, String), Vec<serde_json::Value>>,
    key_count: u64,
}

impl State {
    fn conversation(&mut self, tenant: &TenantId, case: &CaseId) -> Option<&mut Conversation> {
        self.conversations.get_mut(&(tenant.clone(), case.clone()))
    }

    /// A configuration record, on the tenant's chain (L-2).
    fn audit(&mut self, tenant: &TenantId, entry: &AuditEntry) {
        self.chained(tenant, audit_chain::TENANT_CHAIN.to_owned(), entry);
    }

    /// A record of a proposal's step, on its conversation's chain (L-1, L-2).
    fn audit_case(&mut self, tenant: &TenantId, case: &CaseId, entry: &AuditEntry) {
        self.chained(
            tenant,
            audit_chain::conversation_chain(tenant.as_str(), case.as_str()),
            entry,
        );
    }

    /// `entry` appended to `chain` as the DynamoDB store appends it.
    fn chained(&mut self, tenant: &TenantId, chain: String, entry: &AuditEntry) {
        let heads = self.heads.entry(tenant.clone()).or_default();
        let head = heads.entry(chain.clone()).or_default();
        let record = ChainedRecord {
            id: entry.id.to_string(),
            chain,
            seq: 0,
            prev: String::new(),
            at: entry.at.to_rfc3339(),
            actor: entry.actor.clone(),
            action: entry.action.clone(),
            changes: entry.changes.to_string(),
        };
        let (record, next) = audit_chain::append(tenant.as_str(), head, record);
        *head = next;
        self.records.entry(tenant.clone()).or_default().push(record);
        self.audit
            .entry(tenant.clone())
            .or_default()
            .insert(entry.id.clone(), entry.clone());
    }
}

/// The conversation and tenant stores in memory. `faults` plans failures per method name
/// (`load`, `confirm`, `transition`, `create_proposal`, `get_mcp_config`, …).
pub struct MemoryStore {
    state: Mutex<State>,
    /// Fault switches.
    pub faults: Faults,
    /// Time and ids of the records the store writes for a step (L-1).
    clock: Arc<dyn Clock>,
    ids: Arc<dyn Ids>,
    /// N-3: the erasure jobs (`crate::jobs`).
    pub(crate) jobs: Mutex<crate::jobs::Jobs>,
}

impl Default for MemoryStore {
    /// A store stamping its records from its own test clock.
    fn default() -> Self {
        let clock = Arc::new(TestClock::default());
        Self {
            state: Mutex::default(),
            faults: Faults::default(),
            jobs: Mutex::default(),
            ids: Arc::new(SeqIds::new(clock.clone())),
            clock,
        }
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("faults", &self.faults)
            .finish_non_exhaustive()
    }
}

fn unavailable(op: &str) -> StoreError {
    StoreError::Unavailable(format!("in-memory store: planned fault in {op}").into())
}

fn missing(what: &str) -> StoreError {
    StoreError::Corrupt(format!("in-memory store: no such {what}"))
}

impl MemoryStore {
    /// The same store, stamping the records it writes for a step (L-1) with `clock`'s time
    /// and `ids`' ids (the use case's own, so a test reads one timeline).
    pub fn with_system(mut self, clock: Arc<dyn Clock>, ids: Arc<dyn Ids>) -> Self {
        self.clock = clock;
        self.ids = ids;
        self
    }

    /// Moves the slot's proposal `from → to` if it is there in `from`, with its notice and
    /// its L-1 record, in one write.
    fn step(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        action_id: &ActionId,
        (from, to): (ProposalState, ProposalState),
        notice: Option<&NewMessage>,
        record: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        if !is_legal(from, to) {
            return Err(StoreError::IllegalTransition { from, to });
        }
        self.run(
            "transition",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                let Some(conv) = s.conversation(tenant, case) else {
                    return Ok(TransitionOutcome::Conflict { current: None });
                };
                let in_slot = conv.slot.as_ref() == Some(action_id);
                let Some(p) = conv.proposals.get_mut(action_id) else {
                    return Ok(TransitionOutcome::Conflict { current: None });
                };
                if p.state != from || !in_slot {
                    return Ok(TransitionOutcome::Conflict {
                        current: Some(p.state),
                    });
                }
                p.state = to;
                if let Some(m) = notice {
                    conv.push(m);
                }
                s.audit_case(tenant, case, record);
                Ok(TransitionOutcome::Applied)
            },
        )
    }

    /// A new record's id and time (L-1).
    fn stamp(&self) -> Stamp {
        Stamp {
            id: self.ids.audit_id(),
            at: self.clock.now(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `apply` under the planned fault of `op`: `Unavailable` skips it with an
    /// error, `Conflict` skips it with `conflict`, `LostResponse` applies it and errs.
    fn run<T>(
        &self,
        op: &str,
        conflict: impl FnOnce() -> T,
        apply: impl FnOnce(&mut State) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match self.faults.take(op) {
            Some(Fault::Unavailable | Fault::Timeout | Fault::Hang) => Err(unavailable(op)),
            Some(Fault::Conflict) => Ok(conflict()),
            Some(Fault::LostResponse) => {
                apply(&mut self.lock())?;
                Err(unavailable(op))
            }
            None => apply(&mut self.lock()),
        }
    }

    /// A read: fails only when planned `Unavailable` (or down).
    fn read<T>(&self, op: &str, read: impl FnOnce(&State) -> T) -> Result<T, StoreError> {
        match self.faults.take(op) {
            Some(Fault::Unavailable | Fault::Timeout | Fault::LostResponse | Fault::Hang) => {
                Err(unavailable(op))
            }
            _ => Ok(read(&self.lock())),
        }
    }

    /// A proposal as stored now (tests: what was written before a call).
    pub fn proposal(&self, tenant: &TenantId, case: &CaseId, id: &ActionId) -> Option<Proposal> {
        self.lock()
            .conversations
            .get(&(tenant.clone(), case.clone()))
            .and_then(|c| c.proposals.get(id).cloned())
    }

    /// Every message of a case, in order (tests).
    pub fn all_messages(&self, tenant: &TenantId, case: &CaseId) -> Vec<Message> {
        self.lock()
            .conversations
            .get(&(tenant.clone(), case.clone()))
            .map(|c| c.messages.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Every audit record of a tenant, oldest first (tests).
    pub fn all_audit(&self, tenant: &TenantId) -> Vec<AuditEntry> {
        self.lock()
            .audit
            .get(tenant)
            .map(|a| a.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Stores `tenant`'s MCP settings as they are, without an audit record: a test's
    /// starting point.
    pub fn seed_mcp_config(&self, tenant: &TenantId, config: StoredMcpConfig) {
        self.lock().configs.insert(tenant.clone(), config);
    }

    /// Stores `case` with `active` in its slot (and its action id used), without any
    /// check: a test's starting point.
    pub fn seed_conversation(&self, case: Case, language: Language, active: Option<Proposal>) {
        let mut state = self.lock();
        let mut conv = Conversation {
            case: case.clone(),
            language,
            slot: None,
            proposals: HashMap::new(),
            messages: BTreeMap::new(),
            writes: 0,
        };
        if let Some(p) = active {
            state
                .used_action_ids
                .insert((case.tenant.clone(), p.action_id.clone()));
            conv.slot = Some(p.action_id.clone());
            conv.proposals.insert(p.action_id.clone(), p);
        }
        state.conversations.insert((case.tenant, case.id), conv);
    }

    /// Replaces a stored proposal's state without any check: sets up a test's starting
    /// point (an `executing` proposal left behind by a process that died, say).
    pub fn force_state(&self, tenant: &TenantId, case: &CaseId, id: &ActionId, to: ProposalState) {
        if let Some(p) = self
            .lock()
            .conversation(tenant, case)
            .and_then(|c| c.proposals.get_mut(id))
        {
            p.state = to;
        }
    }
}

fn confirm_conflict(state: &mut State, w: &ConfirmWrite) -> Option<TransitionOutcome> {
    let conv = state.conversation(&w.tenant, &w.case)?;
    let proposal = conv.proposals.get(&w.action_id);
    let proposal_ok = proposal.is_some_and(|p| {
        p.state == ProposalState::PendingConfirmation
            && p.presented.message_id == w.presented_message_id
    });
    if !proposal_ok {
        return Some(TransitionOutcome::Conflict {
            current: proposal.map(|p| p.state),
        });
    }
    let case_ok = conv.case.status == CaseStatus::Open && conv.slot.as_ref() == Some(&w.action_id);
    (!case_ok).then_some(TransitionOutcome::Conflict {
        current: Some(ProposalState::PendingConfirmation),
    })
}
