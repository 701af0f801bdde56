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

#[async_trait]
impl Conversations for MemoryStore {
    async fn create_case(&self, case: &Case, language: Language) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "create_case",
            || (),
            |s| {
                let key = (case.tenant.clone(), case.id.clone());
                if s.conversations.contains_key(&key) {
                    return Err(StoreError::Corrupt("case exists".into()));
                }
                s.conversations.insert(
                    key,
                    Conversation {
                        case: case.clone(),
                        language,
                        slot: None,
                        proposals: HashMap::new(),
                        messages: BTreeMap::new(),
                        writes: 0,
                    },
                );
                Ok(())
            },
        )
    }

    async fn load(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<Option<ConversationView>, StoreError> {
        yield_now().await;
        self.read("load", |s| {
            s.conversations
                .get(&(tenant.clone(), case.clone()))
                .map(|c| ConversationView {
                    case: c.case.clone(),
                    active: c.active().cloned(),
                    language: c.language,
                })
        })
    }

    async fn append_message(
        &self,
        tenant: &TenantId,
        message: &NewMessage,
    ) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "append_message",
            || (),
            |s| {
                let conv = s
                    .conversation(tenant, &message.case)
                    .ok_or(StoreError::Gone)?;
                conv.push(message);
                conv.writes += 1;
                Ok(())
            },
        )
    }

    async fn list_messages(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        after: Option<&MessageId>,
        limit: usize,
    ) -> Result<Vec<Message>, StoreError> {
        yield_now().await;
        self.read("list_messages", |s| {
            s.conversations
                .get(&(tenant.clone(), case.clone()))
                .map(|c| {
                    c.messages
                        .values()
                        .filter(|m| after.is_none_or(|a| &m.id > a))
                        .take(limit)
                        .cloned()
                        .collect()
                })
                .unwrap_or_default()
        })
    }

    async fn recent_messages(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        limit: usize,
    ) -> Result<Vec<Message>, StoreError> {
        yield_now().await;
        self.read("recent_messages", |s| {
            let all: Vec<Message> = s
                .conversations
                .get(&(tenant.clone(), case.clone()))
                .map(|c| c.messages.values().cloned().collect())
                .unwrap_or_default();
            all[all.len().saturating_sub(limit)..].to_vec()
        })
    }

    async fn close_case(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        let stamp = self.stamp();
        self.run(
            "close_case",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                let Some(conv) = s.conversation(tenant, case) else {
                    return Ok(TransitionOutcome::Applied);
                };
                if let Some(state) = conv
                    .active()
                    .map(|p| p.state)
                    .filter(|st| st.needs_reconciliation())
                {
                    return Ok(TransitionOutcome::Conflict {
                        current: Some(state),
                    });
                }
                // a pending proposal is cancelled with the case.
                let cancelled = conv
                    .slot
                    .clone()
                    .and_then(|a| conv.proposals.get_mut(&a))
                    .filter(|p| p.state == ProposalState::PendingConfirmation)
                    .map(|p| {
                        p.state = ProposalState::Cancelled;
                        p.action_id.clone()
                    });
                conv.case.status = CaseStatus::Closed;
                if let Some(action) = cancelled {
                    let record = life::cancelled_with_case(&action, case, stamp);
                    s.audit_case(tenant, case, &record);
                }
                Ok(TransitionOutcome::Applied)
            },
        )
    }

    async fn summary(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<Option<CaseSummary>, StoreError> {
        yield_now().await;
        self.read("summary", |s| {
            s.conversations
                .get(&(tenant.clone(), case.clone()))
                .map(|c| CaseSummary {
                    case: c.case.clone(),
                    language: c.language,
                    last_message: c.messages.keys().next_back().cloned(),
                })
        })
    }

    async fn proposal_outcomes(
        &self,
        tenant: &TenantId,
        case: &CaseId,
    ) -> Result<Vec<ProposalOutcome>, StoreError> {
        yield_now().await;
        self.read("proposal_outcomes", |s| {
            let mut outcomes: Vec<ProposalOutcome> = s
                .conversations
                .get(&(tenant.clone(), case.clone()))
                .map(|c| {
                    c.proposals
                        .values()
                        .map(|p| ProposalOutcome {
                            action_id: p.action_id.clone(),
                            operation: p.operation.clone(),
                            presented: p.presented.message_id.clone(),
                            state: p.state,
                            expires_at: p.expires_at,
                            replaced: p.presented.replaced.is_some(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            outcomes.sort_by(|a, b| a.presented.cmp(&b.presented));
            outcomes
        })
    }

    async fn record_in_case(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        entry: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        self.run(
            "record_in_case",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                let open = s
                    .conversation(tenant, case)
                    .is_some_and(|c| c.case.status == CaseStatus::Open);
                if !open {
                    return Ok(TransitionOutcome::Conflict { current: None });
                }
                s.audit_case(tenant, case, entry);
                Ok(TransitionOutcome::Applied)
            },
        )
    }
}

#[async_trait]
impl ProposalLock for MemoryStore {
    async fn create_proposal(
        &self,
        proposal: &Proposal,
        presentation: &[NewMessage],
    ) -> Result<CreateProposalOutcome, StoreError> {
        yield_now().await;
        let prepared_record = life::prepared(proposal, self.ids.audit_id());
        let superseded_stamp = self.stamp();
        self.run(
            "create_proposal",
            || CreateProposalOutcome::Conflict,
            |s| {
                let guard = (proposal.tenant.clone(), proposal.action_id.clone());
                let used = s.used_action_ids.contains(&guard);
                // C-8: the settings it was prepared with must still be in force.
                let fenced = proposal.secret_version.as_ref().is_some_and(|sv| {
                    !s.configs.get(&proposal.tenant).is_some_and(|c| {
                        c.actions_version == proposal.config_version && &c.secret_version == sv
                    })
                });
                let Some(conv) = s.conversation(&proposal.tenant, &proposal.case) else {
                    return Ok(CreateProposalOutcome::CaseNotOpen);
                };
                if conv.case.status != CaseStatus::Open {
                    return Ok(CreateProposalOutcome::CaseNotOpen);
                }
                if let Some(active) = conv.active()
                    && active.state.blocks_preparation()
                {
                    return Ok(CreateProposalOutcome::Blocked {
                        action_id: active.action_id.clone(),
                        state: active.state,
                    });
                }
                if used {
                    return Ok(CreateProposalOutcome::ActionIdReused);
                }
                if fenced {
                    return Ok(CreateProposalOutcome::SettingsChanged);
                }
                // N-6: what this one replaced, from the slot as it stood.
                let replaced = conv.replaced();
                // a pending predecessor is superseded in the same write.
                let superseded = conv
                    .slot
                    .clone()
                    .and_then(|a| conv.proposals.get_mut(&a))
                    .filter(|p| p.state == ProposalState::PendingConfirmation)
                    .map(|p| {
                        p.state = ProposalState::Superseded;
                        p.action_id.clone()
                    });
                conv.slot = Some(proposal.action_id.clone());
                let mut stored = proposal.clone();
                stored.presented.replaced = replaced;
                conv.proposals.insert(proposal.action_id.clone(), stored);
                for m in presentation {
                    conv.push(m);
                }
                s.used_action_ids.insert(guard);
                // L-1, in the same write.
                s.audit_case(&proposal.tenant, &proposal.case, &prepared_record);
                if let Some(old) = &superseded {
                    let by = &proposal.action_id;
                    let record = life::superseded(old, &proposal.case, by, superseded_stamp);
                    s.audit_case(&proposal.tenant, &proposal.case, &record);
                }
                Ok(CreateProposalOutcome::Applied { superseded })
            },
        )
    }

    async fn confirm(&self, w: &ConfirmWrite) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        let record = life::confirmed(w).ok_or_else(|| missing("message ULID"))?;
        let apply = |s: &mut State| {
            if let Some(conflict) = confirm_conflict(s, w) {
                return Ok(conflict);
            }
            let conv = s
                .conversation(&w.tenant, &w.case)
                .ok_or_else(|| missing("case"))?;
            let p = conv
                .proposals
                .get_mut(&w.action_id)
                .ok_or_else(|| missing("proposal"))?;
            p.state = ProposalState::Executing;
            p.confirmation_message_id = Some(w.message.id.clone());
            p.confirm_attempt = Some(w.attempt.clone());
            conv.push(&w.message);
            s.audit_case(&w.tenant, &w.case, &record);
            Ok(TransitionOutcome::Applied)
        };
        match self.faults.take("confirm") {
            Some(Fault::Unavailable | Fault::Timeout | Fault::Hang) => Err(unavailable("confirm")),
            // As when the adapter's retries run out: it reads the proposal, still pending
            // (confirm-path review N6).
            Some(Fault::Conflict) => Ok(TransitionOutcome::Conflict {
                current: Some(ProposalState::PendingConfirmation),
            }),
            // Committed, but the adapter could not tell (its resends and read-back were
            // lost too): the caller must find out by reading (issue 27).
            Some(Fault::LostResponse) => {
                apply(&mut self.lock())?;
                Err(unavailable("confirm"))
            }
            None => apply(&mut self.lock()),
        }
    }

    async fn mark_served(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        action_id: &ActionId,
        at: Timestamp,
    ) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "mark_served",
            || (),
            |s| {
                if let Some(p) = s
                    .conversations
                    .get_mut(&(tenant.clone(), case.clone()))
                    .and_then(|c| c.proposals.get_mut(action_id))
                {
                    p.presented.first_served_at.get_or_insert(at);
                }
                Ok(())
            },
        )
    }

    async fn transition(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        action_id: &ActionId,
        from: ProposalState,
        to: ProposalState,
        notice: Option<&NewMessage>,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        let record = life::stepped(action_id, case, (from, to), self.stamp());
        self.step(tenant, case, action_id, (from, to), notice, &record)
    }
}

#[async_trait]
impl UnsettledIndex for MemoryStore {
    async fn list_unsettled(&self, tenant: &TenantId) -> Result<Vec<UnsettledAction>, StoreError> {
        yield_now().await;
        self.read("list_unsettled", |s| {
            let mut all: Vec<UnsettledAction> = s
                .conversations
                .iter()
                .filter(|((t, _), _)| t == tenant)
                .flat_map(|((_, case), conv)| {
                    conv.proposals
                        .values()
                        .filter(|p| p.state.blocks_preparation())
                        .map(move |p| UnsettledAction {
                            case: case.clone(),
                            action_id: p.action_id.clone(),
                            since: p
                                .confirmation_message_id
                                .as_ref()
                                .and_then(|m| conv.messages.get(m))
                                .map_or(p.prepared_at, |m| m.created_at),
                            last_status: s
                                .status_notes
                                .get(&(tenant.clone(), p.action_id.clone()))
                                .cloned(),
                        })
                })
                .collect();
            all.sort_by_key(|u| u.since);
            all
        })
    }

    async fn note_status(
        &self,
        tenant: &TenantId,
        action_id: &ActionId,
        answer: &str,
        at: Timestamp,
    ) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "note_status",
            || (),
            |s| {
                let unsettled = s
                    .conversations
                    .iter()
                    .filter(|((t, _), _)| t == tenant)
                    .any(|(_, c)| {
                        c.proposals
                            .get(action_id)
                            .is_some_and(|p| p.state.blocks_preparation())
                    });
                if unsettled {
                    s.status_notes
                        .insert((tenant.clone(), action_id.clone()), (answer.to_owned(), at));
                }
                Ok(())
            },
        )
    }

    async fn settle_by_admin(
        &self,
        settle: &SettleByAdmin<'_>,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        // The administrator's record is the step's record (L-1).
        self.step(
            settle.tenant,
            settle.case,
            settle.action_id,
            (settle.from, settle.to),
            Some(settle.notice),
            settle.audit,
        )
    }
}

#[async_trait]
impl SettingsFence for MemoryStore {
    async fn invalidate_pending(
        &self,
        tenant: &TenantId,
        keep: Option<(u64, &str)>,
        notice: &(dyn for<'c> Fn(&'c CaseId, Language) -> NewMessage + Send + Sync),
    ) -> Result<usize, StoreError> {
        yield_now().await;
        self.run(
            "invalidate_pending",
            || 0,
            |s| {
                let (mut cancelled, mut records) = (0, Vec::new());
                for ((t, case), conv) in &mut s.conversations {
                    if t != tenant {
                        continue;
                    }
                    let lang = conv.language;
                    let mut notices = Vec::new();
                    for p in conv.proposals.values_mut() {
                        // Only registered proposals (prepared with an integration).
                        let Some(sv) = p.secret_version.as_deref() else {
                            continue;
                        };
                        let current = keep == Some((p.config_version, sv));
                        if p.state == ProposalState::PendingConfirmation && !current {
                            p.state = ProposalState::Cancelled;
                            notices.push(notice(case, lang));
                            let step = (ProposalState::PendingConfirmation, p.state);
                            let record = life::stepped(&p.action_id, case, step, self.stamp());
                            records.push((case.clone(), record));
                            cancelled += 1;
                        }
                    }
                    for m in &notices {
                        conv.push(m);
                    }
                }
                for (case, record) in &records {
                    s.audit_case(tenant, case, record);
                }
                Ok(cancelled)
            },
        )
    }
}

/// The adapter's leases: free, or expired, or held by another until its expiry.
#[async_trait]
impl Leases for MemoryStore {
    async fn acquire(
        &self,
        tenant: &TenantId,
        kind: &str,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<Lease, StoreError> {
        yield_now().await;
        self.run(
            "acquire",
            || Lease::Busy {
                retry_after_secs: 1,
            },
            |s| {
                let slot = s.leases.entry((tenant.clone(), kind.to_owned()));
                let now = now.unix_seconds();
                if let std::collections::hash_map::Entry::Occupied(held) = &slot
                    && held.get().1 > now
                {
                    let left = u64::try_from(held.get().1 - now).unwrap_or(1).max(1);
                    return Ok(Lease::Busy {
                        retry_after_secs: left,
                    });
                }
                slot.insert_entry((owner.to_owned(), until.unix_seconds()));
                Ok(Lease::Held)
            },
        )
    }

    async fn release(&self, tenant: &TenantId, kind: &str, owner: &str) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "release",
            || (),
            |s| {
                let k = (tenant.clone(), kind.to_owned());
                if s.leases.get(&k).is_some_and(|(o, _)| o == owner) {
                    s.leases.remove(&k);
                }
                Ok(())
            },
        )
    }
}

/// The adapter's fixed one-minute windows.
#[async_trait]
impl RateLimiter for MemoryStore {
    async fn take(
        &self,
        tenant: &TenantId,
        bucket: &str,
        per_minute: u32,
        now: Timestamp,
    ) -> Result<Admission, StoreError> {
        yield_now().await;
        self.run(
            "take",
            || Admission::Admitted,
            |s| {
                let secs = now.unix_seconds();
                let start = secs - secs.rem_euclid(60);
                let used = s
                    .budgets
                    .entry((tenant.clone(), bucket.to_owned(), start))
                    .or_default();
                if *used >= per_minute {
                    let left = u64::try_from(start + 60 - secs).unwrap_or(1).max(1);
                    return Ok(Admission::Limited {
                        retry_after_secs: left,
                    });
                }
                *used += 1;
                Ok(Admission::Admitted)
            },
        )
    }
}

#[async_trait]
impl Tenants for MemoryStore {
    async fn create_tenant(&self, tenant: &Tenant) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "create_tenant",
            || (),
            |s| {
                s.tenants.insert(tenant.id.clone(), tenant.clone());
                Ok(())
            },
        )
    }

    async fn get_tenant(&self, id: &TenantId) -> Result<Option<Tenant>, StoreError> {
        yield_now().await;
        self.read("get_tenant", |s| s.tenants.get(id).cloned())
    }

    async fn list_tenants(&self) -> Result<Vec<Tenant>, StoreError> {
        yield_now().await;
        self.read("list_tenants", |s| s.tenants.values().cloned().collect())
    }

    async fn tenant_by_admin_key_hash(
        &self,
        hash: &Sha256Hex,
    ) -> Result<Option<TenantId>, StoreError> {
        yield_now().await;
        self.read("tenant_by_admin_key_hash", |s| {
            s.tenants
                .values()
                .find(|t| &t.admin_key_hash == hash)
                .map(|t| t.id.clone())
        })
    }

    async fn set_admin_key_hash(
        &self,
        id: &TenantId,
        hash: &Sha256Hex,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        self.run(
            "set_admin_key_hash",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                let Some(t) = s.tenants.get_mut(id) else {
                    return Ok(TransitionOutcome::Conflict { current: None });
                };
                t.admin_key_hash = hash.clone();
                s.audit(id, audit);
                Ok(TransitionOutcome::Applied)
            },
        )
    }

    async fn set_language(
        &self,
        id: &TenantId,
        language: Language,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        self.run(
            "set_language",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                let Some(t) = s.tenants.get_mut(id) else {
                    return Ok(TransitionOutcome::Conflict { current: None });
                };
                t.language = language;
                s.audit(id, audit);
                Ok(TransitionOutcome::Applied)
            },
        )
    }

    async fn set_sign_in_url(
        &self,
        id: &TenantId,
        url: Option<&str>,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        self.run(
            "set_sign_in_url",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                let Some(t) = s.tenants.get_mut(id) else {
                    return Ok(TransitionOutcome::Conflict { current: None });
                };
                t.sign_in_url = url.map(str::to_owned);
                s.audit(id, audit);
                Ok(TransitionOutcome::Applied)
            },
        )
    }

    async fn set_retention_days(
        &self,
        id: &TenantId,
        days: countersign_domain::retention::RetentionDays,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        self.run(
            "set_retention_days",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                let Some(t) = s.tenants.get_mut(id) else {
                    return Ok(TransitionOutcome::Conflict { current: None });
                };
                t.retention_days = Some(days);
                s.audit(id, audit);
                Ok(TransitionOutcome::Applied)
            },
        )
    }

    async fn set_hold(
        &self,
        id: &TenantId,
        hold: &countersign_domain::retention::Hold,
        on: bool,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        self.run(
            "set_hold",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                let Some(t) = s.tenants.get_mut(id) else {
                    return Ok(TransitionOutcome::Conflict { current: None });
                };
                t.holds.set(hold, on);
                s.audit(id, audit);
                Ok(TransitionOutcome::Applied)
            },
        )
    }

    async fn set_purge_cursor(
        &self,
        id: &TenantId,
        cursor: Option<&str>,
    ) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "set_purge_cursor",
            || (),
            |s| {
                if let Some(t) = s.tenants.get_mut(id) {
                    t.purge_cursor = cursor.map(str::to_owned);
                }
                Ok(())
            },
        )
    }

    async fn set_erasing(
        &self,
        id: &TenantId,
        user: &countersign_domain::ids::UserId,
        pending: bool,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        self.run(
            "set_erasing",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                let Some(t) = s.tenants.get_mut(id) else {
                    return Ok(TransitionOutcome::Conflict { current: None });
                };
                if pending {
                    t.erasing.insert(user.clone());
                } else {
                    t.erasing.remove(user);
                }
                s.audit(id, audit);
                Ok(TransitionOutcome::Applied)
            },
        )
    }
}

#[async_trait]
impl McpSettings for MemoryStore {
    async fn get_mcp_config(&self, id: &TenantId) -> Result<Option<StoredMcpConfig>, StoreError> {
        yield_now().await;
        self.read("get_mcp_config", |s| s.configs.get(id).cloned())
    }

    async fn put_mcp_config(
        &self,
        id: &TenantId,
        config: &StoredMcpConfig,
        expected: Option<u64>,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        self.run(
            "put_mcp_config",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                if s.configs.get(id).map(|c| c.version) != expected {
                    return Ok(TransitionOutcome::Conflict { current: None });
                }
                s.configs.insert(id.clone(), config.clone());
                s.audit(id, audit);
                Ok(TransitionOutcome::Applied)
            },
        )
    }

    async fn delete_mcp_config(
        &self,
        id: &TenantId,
        expected: u64,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        self.run(
            "delete_mcp_config",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                if s.configs.get(id).map(|c| c.version) != Some(expected) {
                    return Ok(TransitionOutcome::Conflict { current: None });
                }
                s.configs.remove(id);
                s.audit(id, audit);
                Ok(TransitionOutcome::Applied)
            },
        )
    }
}

#[async_trait]
impl WidgetKeys for MemoryStore {
    async fn put_widget_key(
        &self,
        tenant: &TenantId,
        key: &WidgetKey,
        audit: &AuditEntry,
    ) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "put_widget_key",
            || (),
            |s| {
                s.widget_keys
                    .entry(tenant.clone())
                    .or_default()
                    .insert(key.id.clone(), key.clone());
                s.audit(tenant, audit);
                Ok(())
            },
        )
    }

    async fn get_widget_key(
        &self,
        tenant: &TenantId,
        id: &WidgetKeyId,
    ) -> Result<Option<WidgetKey>, StoreError> {
        yield_now().await;
        self.read("get_widget_key", |s| {
            s.widget_keys.get(tenant).and_then(|k| k.get(id)).cloned()
        })
    }

    async fn list_widget_keys(&self, tenant: &TenantId) -> Result<Vec<WidgetKey>, StoreError> {
        yield_now().await;
        self.read("list_widget_keys", |s| {
            s.widget_keys
                .get(tenant)
                .map(|k| k.values().cloned().collect())
                .unwrap_or_default()
        })
    }

    async fn delete_widget_key(
        &self,
        tenant: &TenantId,
        id: &WidgetKeyId,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        self.run(
            "delete_widget_key",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                let removed = s.widget_keys.get_mut(tenant).and_then(|k| k.remove(id));
                if removed.is_none() {
                    return Ok(TransitionOutcome::Conflict { current: None });
                }
                s.audit(tenant, audit);
                Ok(TransitionOutcome::Applied)
            },
        )
    }

    async fn retire_widget_key(
        &self,
        tenant: &TenantId,
        id: &WidgetKeyId,
        at: Timestamp,
        audit: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        yield_now().await;
        self.run(
            "retire_widget_key",
            || TransitionOutcome::Conflict { current: None },
            |s| {
                let key = s.widget_keys.get_mut(tenant).and_then(|k| k.get_mut(id));
                match key {
                    Some(k) if k.retires_at.is_none() => k.retires_at = Some(at),
                    _ => return Ok(TransitionOutcome::Conflict { current: None }),
                }
                s.audit(tenant, audit);
                Ok(TransitionOutcome::Applied)
            },
        )
    }
}

#[async_trait]
impl Certifications for MemoryStore {
    async fn put_certification(
        &self,
        tenant: &TenantId,
        run: &Certification,
        audit: &AuditEntry,
    ) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "put_certification",
            || (),
            |s| {
                s.certifications.insert(tenant.clone(), run.clone());
                s.audit(tenant, audit);
                Ok(())
            },
        )
    }

    async fn latest_certification(
        &self,
        tenant: &TenantId,
    ) -> Result<Option<Certification>, StoreError> {
        yield_now().await;
        self.read("latest_certification", |s| {
            s.certifications.get(tenant).cloned()
        })
    }
}

#[async_trait]
impl AuditRecords for MemoryStore {
    async fn list_audit(
        &self,
        tenant: &TenantId,
        before: Option<&AuditId>,
        limit: usize,
    ) -> Result<AuditPage, StoreError> {
        yield_now().await;
        self.read("list_audit", |s| {
            let newest_first: Vec<AuditEntry> = s
                .audit
                .get(tenant)
                .map(|a| {
                    a.values()
                        .rev()
                        .filter(|e| before.is_none_or(|b| &e.id < b))
                        .cloned()
                        .collect()
                })
                .unwrap_or_default();
            let more = newest_first.len() > limit;
            let items: Vec<AuditEntry> = newest_first.into_iter().take(limit).collect();
            let next = if more {
                items.last().map(|e| e.id.clone())
            } else {
                None
            };
            let links = s
                .records
                .get(tenant)
                .into_iter()
                .flatten()
                .filter(|r| items.iter().any(|e| e.id.as_str() == r.id))
                .filter_map(|r| {
                    let id = AuditId::parse(&r.id).ok()?;
                    Some((id, audit_chain::ChainLink::of(r, tenant.as_str())))
                })
                .collect();
            AuditPage { items, links, next }
        })
    }

    /// The chains as the DynamoDB store keeps them (L-2, L-3): every record with its chain
    /// fields, each chain's head, and the conversation chains as its index names them.
    async fn audit_trail(
        &self,
        tenant: &TenantId,
    ) -> Result<countersign_domain::ports::AuditTrail, StoreError> {
        yield_now().await;
        self.read("audit_trail", |s| {
            let heads = s.heads.get(tenant).cloned().unwrap_or_default();
            countersign_domain::ports::AuditTrail {
                records: s.records.get(tenant).cloned().unwrap_or_default(),
                indexed: heads
                    .keys()
                    .filter(|c| *c != audit_chain::TENANT_CHAIN)
                    .cloned()
                    .collect(),
                heads,
                unchained: 0,
            }
        })
    }
}

#[async_trait]
impl SessionStore for MemoryStore {
    async fn put_session(
        &self,
        id_hash: &Sha256Hex,
        session: &PanelSession,
    ) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "put_session",
            || (),
            |s| {
                s.sessions.insert(id_hash.clone(), session.clone());
                Ok(())
            },
        )
    }

    async fn get_session(&self, id_hash: &Sha256Hex) -> Result<Option<PanelSession>, StoreError> {
        yield_now().await;
        self.read("get_session", |s| s.sessions.get(id_hash).cloned())
    }

    async fn delete_session(&self, id_hash: &Sha256Hex) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "delete_session",
            || (),
            |s| {
                s.sessions.remove(id_hash);
                Ok(())
            },
        )
    }
}

#[async_trait]
impl countersign_domain::ports::ConfirmationLinks for MemoryStore {
    async fn put_link(
        &self,
        id_hash: &Sha256Hex,
        link: &countersign_domain::ports::ConfirmationLink,
    ) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "put_link",
            || (),
            |s| {
                // N-4: only into a conversation that exists.
                s.conversation(&link.tenant, &link.case)
                    .ok_or(StoreError::Gone)?
                    .writes += 1;
                s.links.insert(id_hash.clone(), link.clone());
                Ok(())
            },
        )
    }

    async fn get_link(
        &self,
        id_hash: &Sha256Hex,
    ) -> Result<Option<countersign_domain::ports::ConfirmationLink>, StoreError> {
        yield_now().await;
        self.read("get_link", |s| s.links.get(id_hash).cloned())
    }

    async fn spend_state(
        &self,
        state_id: &str,
        _expires_at: Timestamp,
    ) -> Result<bool, StoreError> {
        yield_now().await;
        self.run(
            "spend_state",
            || false,
            |s| Ok(s.spent_states.insert(state_id.to_owned())),
        )
    }

    async fn set_url_elicitation(
        &self,
        token_hash: &Sha256Hex,
        declared: bool,
        _expires_at: Timestamp,
    ) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "set_url_elicitation",
            || (),
            |s| {
                s.url_elicitation.insert(token_hash.clone(), declared);
                Ok(())
            },
        )
    }

    async fn url_elicitation(&self, token_hash: &Sha256Hex) -> Result<bool, StoreError> {
        yield_now().await;
        self.read("url_elicitation", |s| {
            s.url_elicitation.get(token_hash).copied().unwrap_or(false)
        })
    }

    async fn open_page_session(
        &self,
        key: &Sha256Hex,
        expires_at: Timestamp,
    ) -> Result<(), StoreError> {
        yield_now().await;
        self.run(
            "open_page_session",
            || (),
            |s| {
                s.page_sessions.insert(key.clone(), expires_at);
                Ok(())
            },
        )
    }

    async fn page_session(&self, key: &Sha256Hex) -> Result<Option<Timestamp>, StoreError> {
        yield_now().await;
        self.read("page_session", |s| s.page_sessions.get(key).copied())
    }
}

#[async_trait]
impl countersign_domain::ports::Retention for MemoryStore {
    async fn retained(
        &self,
        tenant: &TenantId,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<countersign_domain::ports::RetainedPage, StoreError> {
        use countersign_domain::ports::{Retained, RetainedPage};
        yield_now().await;
        let after = match cursor {
            Some(c) => Some(CaseId::parse(c).map_err(|_| StoreError::Corrupt("cursor".into()))?),
            None => None,
        };
        self.read("retained", |s| {
            let mut cases: Vec<&Conversation> = s
                .conversations
                .iter()
                .filter(|((t, c), _)| t == tenant && after.as_ref().is_none_or(|a| c > a))
                .map(|(_, v)| v)
                .collect();
            cases.sort_by(|a, b| a.case.id.cmp(&b.case.id));
            let more = cases.len() > limit;
            let items: Vec<Retained> = cases
                .into_iter()
                .take(limit)
                .map(|c| Retained {
                    case: c.case.id.clone(),
                    user: c.case.user.clone(),
                    last_activity: c
                        .messages
                        .values()
                        .map(|m| m.created_at)
                        .max()
                        .unwrap_or(c.case.created_at)
                        .max(c.case.created_at),
                    writes: c.writes,
                })
                .collect();
            let next = more
                .then(|| items.last().map(|r| r.case.to_string()))
                .flatten();
            RetainedPage { items, next }
        })
    }

    async fn purge(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        seen: Option<u64>,
    ) -> Result<countersign_domain::ports::PurgeOutcome, StoreError> {
        use countersign_domain::ports::PurgeOutcome;
        yield_now().await;
        self.run(
            "purge",
            || PurgeOutcome::Gone,
            |s| {
                let k = (tenant.clone(), case.clone());
                let Some(conv) = s.conversations.get(&k) else {
                    return Ok(PurgeOutcome::Gone);
                };
                // decided with the removal, as the DynamoDB store does.
                let held = s
                    .tenants
                    .get(tenant)
                    .is_some_and(|t| t.holds.keeps(&conv.case.user, case));
                if held {
                    return Ok(PurgeOutcome::Held);
                }
                if let Some(p) = conv.active().filter(|p| p.state.blocks_purge()) {
                    return Ok(PurgeOutcome::Unresolved(p.state));
                }
                if seen.is_some_and(|w| w != conv.writes) {
                    return Ok(PurgeOutcome::Active);
                }
                let items = 1 + conv.proposals.len() + conv.messages.len();
                s.conversations.remove(&k);
                if let Some(id) = s.conversation_keys.remove(&k) {
                    s.sealed.remove(&(tenant.clone(), id));
                }
                s.links
                    .retain(|_, l| !(l.tenant == *tenant && l.case == *case));
                Ok(PurgeOutcome::Purged { items })
            },
        )
    }
}

/// N-3 in memory: a person's conversations are found by looking at every one (the
/// bound on reads is the DynamoDB index's, measured on the emulator); the memory store
/// seals nothing, so every record naming a person does so in clear: all are "legacy".
#[async_trait]
impl countersign_domain::ports::PersonIndex for MemoryStore {
    async fn person_conversations(
        &self,
        tenant: &TenantId,
        user: &countersign_domain::ids::UserId,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<countersign_domain::ports::PersonPage, StoreError> {
        yield_now().await;
        let after = match cursor {
            Some(c) => Some(CaseId::parse(c).map_err(|_| StoreError::Corrupt("cursor".into()))?),
            None => None,
        };
        self.read("person_conversations", |s| {
            let mut cases: Vec<CaseId> = s
                .conversations
                .iter()
                .filter(|((t, c), v)| {
                    t == tenant && &v.case.user == user && after.as_ref().is_none_or(|a| c > a)
                })
                .map(|((_, c), _)| c.clone())
                .collect();
            cases.sort();
            let more = cases.len() > limit;
            cases.truncate(limit);
            let next = more
                .then(|| cases.last().map(ToString::to_string))
                .flatten();
            countersign_domain::ports::PersonPage { cases, next }
        })
    }

    async fn legacy_records(
        &self,
        tenant: &TenantId,
        user: &countersign_domain::ids::UserId,
    ) -> Result<usize, StoreError> {
        use countersign_domain::audit_chain::PERSONAL_FIELDS;
        yield_now().await;
        self.read("legacy_records", |s| {
            s.records.get(tenant).map_or(0, |records| {
                records
                    .iter()
                    .filter_map(|r| serde_json::from_str::<serde_json::Value>(&r.changes).ok())
                    .filter(|c| {
                        PERSONAL_FIELDS
                            .iter()
                            .any(|f| c.get(*f).and_then(|v| v.as_str()) == Some(user.as_str()))
                    })
                    .count()
            })
        })
    }

    async fn forget_person(
        &self,
        _tenant: &TenantId,
        _user: &countersign_domain::ids::UserId,
    ) -> Result<(), StoreError> {
        Ok(())
    }

    async fn backfill_person_index(&self, _pages: usize) -> Result<bool, StoreError> {
        Ok(true)
    }
}

impl MemoryStore {
    /// Every stored thing whose debug text contains `needle` (R-1 tests: what a purge left
    /// behind), named by kind: `conversation`, `link`, `audit`.
    pub fn holding(&self, needle: &str) -> Vec<&'static str> {
        let s = self.lock();
        let mut found = Vec::new();
        if s.conversations
            .values()
            .any(|c| format!("{c:?}").contains(needle))
        {
            found.push("conversation");
        }
        if s.links.values().any(|l| format!("{l:?}").contains(needle)) {
            found.push("link");
        }
        if format!("{:?}{:?}", s.audit, s.records).contains(needle) {
            found.push("audit");
        }
        found
    }
}

/// R-2 in memory: a sealed value names its key and a slot; the values live beside the key
/// and go with it, so a destroyed key's values are gone as they are from KMS-wrapped
/// keys. (The memory store does not seal its own records: sealing is the DynamoDB
/// adapter's, tested on the emulator.)
#[async_trait]
impl countersign_domain::ports::SubjectKeys for MemoryStore {
    async fn seal(
        &self,
        tenant: &TenantId,
        user: &countersign_domain::ids::UserId,
        personal: &serde_json::Value,
    ) -> Result<String, StoreError> {
        yield_now().await;
        self.run("seal", String::new, |s| {
            let k = (tenant.clone(), user.clone());
            let id = match s.subject_keys.get(&k) {
                Some(id) => id.clone(),
                None => {
                    s.key_count += 1;
                    let id = format!("sk_{}", s.key_count);
                    s.subject_keys.insert(k, id.clone());
                    id
                }
            };
            let slot = s.sealed.entry((tenant.clone(), id.clone())).or_default();
            slot.push(personal.clone());
            Ok(format!("v1.{id}.{}", slot.len() - 1))
        })
    }

    async fn seal_conversation(
        &self,
        tenant: &TenantId,
        case: &CaseId,
        fields: &serde_json::Value,
    ) -> Result<Option<String>, StoreError> {
        yield_now().await;
        self.run(
            "seal_conversation",
            || None,
            |s| {
                let k = (tenant.clone(), case.clone());
                let id = match s.conversation_keys.get(&k) {
                    Some(id) => id.clone(),
                    None if s.conversations.contains_key(&k) => {
                        s.key_count += 1;
                        let id = format!("sk_{}", s.key_count);
                        s.conversation_keys.insert(k, id.clone());
                        id
                    }
                    None => return Ok(None),
                };
                let slot = s.sealed.entry((tenant.clone(), id.clone())).or_default();
                slot.push(fields.clone());
                Ok(Some(format!("v1.{id}.{}", slot.len() - 1)))
            },
        )
    }

    async fn open(
        &self,
        tenant: &TenantId,
        sealed: &str,
    ) -> Result<Option<serde_json::Value>, StoreError> {
        yield_now().await;
        let bad = || StoreError::Corrupt("a sealed audit value does not open".into());
        let mut parts = sealed.splitn(3, '.');
        let (Some("v1"), Some(id), Some(slot)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad());
        };
        let slot: usize = slot.parse().map_err(|_| bad())?;
        self.read("open", |s| {
            s.sealed
                .get(&(tenant.clone(), id.to_owned()))
                .map(|v| v.get(slot).cloned().ok_or_else(bad))
                .transpose()
        })?
    }

    async fn has_key(
        &self,
        tenant: &TenantId,
        user: &countersign_domain::ids::UserId,
    ) -> Result<bool, StoreError> {
        yield_now().await;
        self.read("has_key", |s| {
            s.subject_keys.contains_key(&(tenant.clone(), user.clone()))
        })
    }

    async fn destroy(
        &self,
        tenant: &TenantId,
        user: &countersign_domain::ids::UserId,
    ) -> Result<countersign_domain::ports::Destroyed, StoreError> {
        use countersign_domain::ports::Destroyed;
        yield_now().await;
        self.run(
            "destroy",
            || Destroyed::NoKey,
            |s| {
                if s.tenants
                    .get(tenant)
                    .is_some_and(|t| t.holds.people.contains(user))
                {
                    return Ok(Destroyed::Held);
                }
                let Some(id) = s.subject_keys.remove(&(tenant.clone(), user.clone())) else {
                    return Ok(Destroyed::NoKey);
                };
                s.sealed.remove(&(tenant.clone(), id));
                Ok(Destroyed::Destroyed)
            },
        )
    }
}
