//! The store contract (issue 27): the rules every conversation and tenant store must hold,
//! written once as async functions over a [`Subject`], and run against the in-memory store
//! (`shared/testkit/tests/contract.rs`, plain `cargo test`) and the DynamoDB store on the
//! emulator, directly and through the fault proxy that imitates real DynamoDB
//! (`shared/aws/tests/aws/contract.rs`). A use-case test on [`crate::MemoryStore`] proves
//! something about DynamoDB only because both pass this suite.
//!
//! [`store_contract!`](crate::store_contract) expands to one test per rule, so a store
//! that breaks a rule fails a test named after it. Every rule starts from new tenants, so
//! the tests share a store (or a table) without seeing each other.
//!
//! Not here (adapter-specific, tested beside the adapter): call counts, TTL attributes,
//! and tampering with the stored chain items (L-2, L-3).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use async_trait::async_trait;
use countersign_domain::config::{UrlPolicy, validate_mcp_config};
use countersign_domain::conversation::{Case, CaseStatus, MessageKind, Role};
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::{
    ActionId, AuditId, CaseId, MessageId, OperationName, TenantId, UserId,
};
use countersign_domain::ports::{
    Admission, AuditEntry, ConfirmWrite, ConversationStore, CreateProposalOutcome, NewMessage,
    RateLimiter, SettleByAdmin, StoreError, StoredMcpConfig, TenantStore, TransitionOutcome,
};
use countersign_domain::proposal::{Presentation, Proposal, ProposalState as S};
use countersign_domain::text::SafeText;
use countersign_domain::texts::{Language, invalidated_notice};
use countersign_domain::time::Timestamp;
use serde_json::json;
use std::sync::{Arc, Mutex, PoisonError};

/// A store under the contract: its ports, and a read of one stored proposal by id (not a
/// port: only tests need a superseded or cancelled proposal back).
#[async_trait]
pub trait Subject: Send + Sync + 'static {
    /// The conversation store.
    fn conversations(&self) -> &dyn ConversationStore;
    /// The tenant store.
    fn tenants(&self) -> &dyn TenantStore;
    /// The tenant budgets.
    fn budgets(&self) -> &dyn RateLimiter;
    /// The confirmation links (N-4: written into a conversation).
    fn links(&self) -> &dyn countersign_domain::ports::ConfirmationLinks;
    /// F-2: people's passkeys.
    fn passkeys(&self) -> &dyn countersign_domain::ports::Passkeys;
    /// The proposal as stored now, whatever its state.
    async fn stored(&self, tenant: &TenantId, case: &CaseId, id: &ActionId) -> Option<Proposal>;
    /// a look at everything stored (a whole-table scan): what holds `needle`, by
    /// kind (`conversation`, `link`, `index`, `audit`).
    async fn holding(&self, needle: &str) -> Vec<String>;
}

#[async_trait]
impl Subject for crate::MemoryStore {
    fn conversations(&self) -> &dyn ConversationStore {
        self
    }
    fn tenants(&self) -> &dyn TenantStore {
        self
    }
    fn budgets(&self) -> &dyn RateLimiter {
        self
    }
    fn links(&self) -> &dyn countersign_domain::ports::ConfirmationLinks {
        self
    }
    fn passkeys(&self) -> &dyn countersign_domain::ports::Passkeys {
        self
    }
    async fn stored(&self, tenant: &TenantId, case: &CaseId, id: &ActionId) -> Option<Proposal> {
        self.proposal(tenant, case, id)
    }
    async fn holding(&self, needle: &str) -> Vec<String> {
        crate::MemoryStore::holding(self, needle)
            .into_iter()
            .map(str::to_owned)
            .collect()
    }
}

/// One test per rule of the contract, for the store `make` (an async fn returning
/// `Arc<dyn Subject>`) builds. Use it once per store, in a module of its own.
#[macro_export]
macro_rules! store_contract {
    ($make:path) => {
        $crate::store_contract!(@rules $make;
            p2_load_returns_the_case_and_its_active_proposal_to_its_tenant_only,
            messages_keep_one_order_per_case,
            a16_a_new_proposal_supersedes_the_pending_one_which_never_confirms,
            a17_executing_or_unknown_blocks_preparation_until_settled,
            a14_action_ids_are_never_reused_within_a_tenant,
            a23_a35_confirm_needs_the_current_presentation_and_applies_once,
            a44_a_case_with_an_unsettled_action_is_not_closed,
            a26_a_closed_case_cancels_its_proposal_and_takes_no_new_one,
            c8_a_settings_change_fences_preparation_and_cancels_pending_proposals,
            transitions_follow_the_state_machine_and_the_stored_state,
            budgets_are_per_tenant_fixed_windows,
            p2_concurrent_confirmations_apply_exactly_once,
            p2_concurrent_preparations_leave_exactly_one_pending,
            unsettled_index_follows_each_action_to_its_end,
            l1_each_step_of_a_proposal_is_recorded_with_the_step,
            l2_every_record_is_chained_and_the_trail_verifies,
            s2_the_summary_names_the_newest_message_and_proposals_keep_their_states,
            s4_the_tenants_language_is_set_with_its_audit_record,
            the_tenants_appearance_is_set_whole_with_its_audit_record,
            u3_a_credential_retires_once_with_its_audit_record,
            x5_a_record_joins_an_open_cases_chain_and_never_a_closed_one,
            r1_a_tenants_conversations_are_listed_with_their_last_activity,
            r1_a_purge_removes_every_item_of_a_settled_conversation,
            n4_nothing_is_written_into_a_purged_conversation,
            n4_a_write_after_the_listing_keeps_the_conversation,
            r1_p3_a_purge_keeps_a_conversation_whose_proposal_is_unresolved,
            r1_the_retention_is_set_with_its_audit_record,
            r3_a_hold_keeps_conversations_from_the_purge_until_lifted,
            r3_a_hold_racing_the_purge_is_never_lost,
            f2_passkeys_are_per_person_and_a_use_moves_the_counter_once,
        );
    };
    (@rules $make:path; $($rule:ident),+ $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $rule() {
                $crate::contract::$rule($make().await).await;
            }
        )+
    };
}

/// Ids and records for contract scenarios: ULIDs from a monotonic generator (so message
/// ids sort in creation order, as the production generator's do) and the system clock.
#[derive(Default)]
pub struct Fixture {
    ids: Mutex<ulid::Generator>,
}

impl std::fmt::Debug for Fixture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fixture").finish_non_exhaustive()
    }
}

impl Fixture {
    fn ulid(&self) -> String {
        let mut g = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        g.generate().expect("ULID space").to_string()
    }

    /// Now, by the system clock (the DynamoDB store keys retention on real time).
    pub fn now(&self) -> Timestamp {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(0));
        Timestamp::from_unix_millis(ms).unwrap()
    }

    /// A new tenant id.
    pub fn tenant(&self) -> TenantId {
        TenantId::from_ulid_text(&self.ulid()).unwrap()
    }

    /// A new tenant called `name`, not stored, with nothing set.
    pub fn tenant_named(&self, name: &str) -> countersign_domain::ports::Tenant {
        countersign_domain::ports::Tenant::new(
            self.tenant(),
            name,
            Sha256Hex::digest(format!("tsk_{name}")),
            Language::En,
            self.now(),
        )
    }

    /// A new message id, after every earlier one.
    pub fn message_id(&self) -> MessageId {
        MessageId::from_ulid_text(&self.ulid()).unwrap()
    }

    /// A new audit record id.
    pub fn audit_id(&self) -> AuditId {
        AuditId::from_ulid_text(&self.ulid()).unwrap()
    }

    /// A new open case of `tenant`, stored.
    pub async fn open_case(&self, store: &dyn ConversationStore, tenant: &TenantId) -> Case {
        let case = Case {
            id: CaseId::from_ulid_text(&self.ulid()).unwrap(),
            tenant: tenant.clone(),
            user: UserId::parse("driver-42").unwrap(),
            status: CaseStatus::Open,
            created_at: self.now(),
        };
        store.create_case(&case, Language::En).await.unwrap();
        case
    }

    /// A pending proposal for `case` without an integration (no C-8 registration), and its
    /// two presentation messages (summary, instructions).
    pub fn proposal(&self, case: &Case, action: &str) -> (Proposal, Vec<NewMessage>) {
        let now = self.now();
        let summary = format!("Move session 4812 to car GR86 ({action}).");
        let presented = self.message_id();
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
            state: S::PendingConfirmation,
            presented: Presentation {
                replaced: None,
                first_served_at: None,
                message_id: presented.clone(),
            },
            confirmation_message_id: None,
            confirm_attempt: None,
            config_version: 1,
            secret_version: None,
            server_url: Some("https://mcp.trackshare.example.com/mcp".into()),
            audience: None,
            needs_passkey: false,
            prepared_outside: false,
        };
        // As production writes it (chat `turn`): the presentation alone, the last assistant
        // message — the confirm instructions are a field of it, never a message after it.
        let mut shown = self.message(&case.id, Role::Assistant, MessageKind::Proposal, &summary);
        shown.id = presented;
        (p, vec![shown])
    }

    /// [`Self::proposal`] prepared under the action settings `(version, secret_version)`,
    /// so C-8 and the unsettled index apply to it.
    pub fn registered(
        &self,
        case: &Case,
        action: &str,
        (version, secret_version): (u64, &str),
    ) -> (Proposal, Vec<NewMessage>) {
        let (mut p, m) = self.proposal(case, action);
        p.config_version = version;
        p.secret_version = Some(secret_version.to_owned());
        (p, m)
    }

    /// Stores `tenant`'s MCP configuration at `version`, with action settings
    /// `(actions_version, secret_version)`.
    pub async fn configure(
        &self,
        store: &dyn TenantStore,
        tenant: &TenantId,
        expected: Option<u64>,
        (version, actions_version, secret_version): (u64, u64, &str),
    ) {
        let config = validate_mcp_config(
            &json!({
                "serverUrl": "https://mcp.trackshare.example.com/mcp",
                "serviceToken": "svc_token_123",
                "allowedTools": ["get_user_uploads"],
            }),
            UrlPolicy::default(),
        )
        .unwrap();
        let stored = StoredMcpConfig {
            config,
            version,
            actions_version,
            secret_version: secret_version.to_owned(),
        };
        let audit = self.audit("mcp.put", json!({}));
        let outcome = store
            .put_mcp_config(tenant, &stored, expected, &audit)
            .await
            .unwrap();
        assert_eq!(outcome, TransitionOutcome::Applied);
    }

    /// An audit record of `action` by an administrator, now.
    pub fn audit(&self, action: &str, changes: serde_json::Value) -> AuditEntry {
        AuditEntry {
            id: self.audit_id(),
            at: self.now(),
            actor: "adminKey:contract".into(),
            action: action.into(),
            changes,
        }
    }

    /// A new message in `case`.
    pub fn message(&self, case: &CaseId, role: Role, kind: MessageKind, text: &str) -> NewMessage {
        NewMessage {
            id: self.message_id(),
            case: case.clone(),
            role,
            kind,
            content: text.to_owned(),
            reply_to: None,
            created_at: self.now(),
        }
    }

    /// C-8's notice to the person in `case`, as a settings change's sweep writes it.
    pub fn invalidated(&self, case: &CaseId, lang: Language) -> NewMessage {
        let text = invalidated_notice(lang);
        self.message(case, Role::Assistant, MessageKind::Notice, text)
    }

    /// The write a "confirm" reply to the presentation `presented` of `p` makes.
    pub fn confirm_write(&self, p: &Proposal, presented: &MessageId) -> ConfirmWrite {
        let mut message = self.message(&p.case, Role::User, MessageKind::Text, "confirm");
        message.reply_to = Some(presented.clone());
        ConfirmWrite {
            tenant: p.tenant.clone(),
            case: p.case.clone(),
            action_id: p.action_id.clone(),
            presented_message_id: presented.clone(),
            attempt: format!("attempt-{}", message.id),
            message,
        }
    }
}

fn applied() -> CreateProposalOutcome {
    CreateProposalOutcome::Applied { superseded: None }
}

async fn create(s: &dyn Subject, p: &Proposal, m: &[NewMessage]) -> CreateProposalOutcome {
    s.conversations().create_proposal(p, m).await.unwrap()
}

async fn confirm(s: &dyn Subject, f: &Fixture, p: &Proposal) -> TransitionOutcome {
    let w = f.confirm_write(p, &p.presented.message_id);
    s.conversations().confirm(&w).await.unwrap()
}

async fn state(s: &dyn Subject, p: &Proposal) -> S {
    s.stored(&p.tenant, &p.case, &p.action_id)
        .await
        .expect("the proposal is stored")
        .state
}

async fn step(s: &dyn Subject, p: &Proposal, from: S, to: S) -> TransitionOutcome {
    s.conversations()
        .transition(&p.tenant, &p.case, &p.action_id, from, to, None)
        .await
        .unwrap()
}

/// P-2: one read gives the case and its active proposal; another tenant sees nothing.
pub async fn p2_load_returns_the_case_and_its_active_proposal_to_its_tenant_only(
    s: Arc<dyn Subject>,
) {
    let f = Fixture::default();
    let tenant = f.tenant();
    let case = f.open_case(s.conversations(), &tenant).await;
    let (p, m) = f.proposal(&case, "act_load");
    assert_eq!(create(&*s, &p, &m).await, applied());
    let view = s.conversations().load(&tenant, &case.id).await.unwrap();
    let view = view.expect("the case is there");
    assert_eq!(view.case, case);
    assert_eq!(view.active, Some(p));
    let other = f.tenant();
    assert_eq!(
        s.conversations().load(&other, &case.id).await.unwrap(),
        None
    );
    // F-1: a proposal that needs the person's passkey comes back saying so.
    let case = f.open_case(s.conversations(), &tenant).await;
    let (mut p, m) = f.proposal(&case, "act_passkey");
    p.needs_passkey = true;
    assert_eq!(create(&*s, &p, &m).await, applied());
    let view = s.conversations().load(&tenant, &case.id).await.unwrap();
    assert_eq!(view.and_then(|v| v.active), Some(p));
}

/// S-2, S-3: a case's summary names its newest message, language and status; every
/// proposal, terminal ones included, comes back by presentation with its state and expiry;
/// another tenant sees neither.
pub async fn s2_the_summary_names_the_newest_message_and_proposals_keep_their_states(
    s: Arc<dyn Subject>,
) {
    let f = Fixture::default();
    let tenant = f.tenant();
    let store = s.conversations();
    let case = f.open_case(store, &tenant).await;
    let summary = store.summary(&tenant, &case.id).await.unwrap().unwrap();
    assert_eq!(
        (summary.case, summary.language, summary.last_message),
        (case.clone(), Language::En, None)
    );
    let m = f.message(&case.id, Role::User, MessageKind::Text, "hello");
    store.append_message(&tenant, &m).await.unwrap();
    let (first, shown) = f.proposal(&case, "act_sum_1");
    assert_eq!(create(&*s, &first, &shown).await, applied());
    let (second, shown) = f.proposal(&case, "act_sum_2");
    create(&*s, &second, &shown).await;
    let summary = store.summary(&tenant, &case.id).await.unwrap().unwrap();
    // The newest message is the second proposal's presentation.
    assert_eq!(summary.last_message, Some(shown[0].id.clone()));
    assert_eq!(shown[0].id, second.presented.message_id);
    let outcomes = store.proposal_outcomes(&tenant, &case.id).await.unwrap();
    let seen: Vec<_> = outcomes
        .iter()
        .map(|o| (o.presented.clone(), o.state, o.expires_at))
        .collect();
    assert_eq!(
        seen,
        vec![
            (
                first.presented.message_id.clone(),
                S::Superseded,
                first.expires_at
            ),
            (
                second.presented.message_id.clone(),
                S::PendingConfirmation,
                second.expires_at
            ),
        ]
    );
    assert_eq!(
        store.close_case(&tenant, &case.id).await.unwrap(),
        TransitionOutcome::Applied
    );
    let summary = store.summary(&tenant, &case.id).await.unwrap().unwrap();
    assert_eq!(summary.case.status, CaseStatus::Closed);
    let outcomes = store.proposal_outcomes(&tenant, &case.id).await.unwrap();
    assert_eq!(
        outcomes[1].state,
        S::Cancelled,
        "closing cancels the pending one"
    );
    let other = f.tenant();
    assert_eq!(store.summary(&other, &case.id).await.unwrap(), None);
    assert!(
        store
            .proposal_outcomes(&other, &case.id)
            .await
            .unwrap()
            .is_empty()
    );
}

/// S-4: the tenant's language is set with its audit record in one write; an unknown
/// tenant is a conflict and writes nothing.
pub async fn s4_the_tenants_language_is_set_with_its_audit_record(s: Arc<dyn Subject>) {
    let f = Fixture::default();
    let tenant = f.tenant_named("Language");
    s.tenants().create_tenant(&tenant).await.unwrap();
    let record = f.audit(
        "tenant.language",
        json!({"language": {"from": "en", "to": "pt-BR"}}),
    );
    assert_eq!(
        s.tenants()
            .set_language(&tenant.id, Language::Pt, &record)
            .await
            .unwrap(),
        TransitionOutcome::Applied
    );
    let stored = s.tenants().get_tenant(&tenant.id).await.unwrap().unwrap();
    assert_eq!(stored.language, Language::Pt);
    assert_eq!(stored.admin_key_hash, tenant.admin_key_hash);
    let page = s.tenants().list_audit(&tenant.id, None, 10).await.unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].action, "tenant.language");
    let unknown = f.tenant();
    let record = f.audit("tenant.language", json!({}));
    assert!(matches!(
        s.tenants()
            .set_language(&unknown, Language::Pt, &record)
            .await
            .unwrap(),
        TransitionOutcome::Conflict { .. }
    ));
    assert!(
        s.tenants()
            .list_audit(&unknown, None, 10)
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert_eq!(s.tenants().get_tenant(&unknown).await.unwrap(), None);
}

/// Issue 50: the tenant's appearance (accent, welcomes) is replaced whole with its audit
/// record in one write, and read back as written; an unknown tenant is a conflict and
/// writes nothing.
pub async fn the_tenants_appearance_is_set_whole_with_its_audit_record(s: Arc<dyn Subject>) {
    use countersign_domain::appearance::{Appearance, welcome};
    let f = Fixture::default();
    let tenant = f.tenant_named("Appearance");
    s.tenants().create_tenant(&tenant).await.unwrap();
    let set = |a: Appearance| {
        let s = s.clone();
        let record = f.audit("tenant.appearance", json!({}));
        let id = tenant.id.clone();
        async move { s.tenants().set_appearance(&id, &a, &record).await.unwrap() }
    };
    let first = Appearance {
        accent: Some("#0b5d3b".into()),
        en: welcome("Hi! How can we help?", "Ana", &["Where is my order?"]).unwrap(),
        pt: welcome(
            "Olá! Como podemos ajudar?",
            "Ana",
            &["Onde está meu pedido?", "Trocar endereço"],
        )
        .unwrap(),
    };
    assert_eq!(set(first.clone()).await, TransitionOutcome::Applied);
    let stored = s.tenants().get_tenant(&tenant.id).await.unwrap().unwrap();
    assert_eq!(stored.appearance, first);
    // Replaced whole: a welcome left out is gone.
    let second = Appearance {
        accent: None,
        en: first.en.clone(),
        pt: None,
    };
    assert_eq!(set(second.clone()).await, TransitionOutcome::Applied);
    let stored = s.tenants().get_tenant(&tenant.id).await.unwrap().unwrap();
    assert_eq!(stored.appearance, second);
    assert_eq!(stored.name, tenant.name);
    let page = s.tenants().list_audit(&tenant.id, None, 10).await.unwrap();
    assert_eq!(page.items.len(), 2);
    assert!(page.items.iter().all(|r| r.action == "tenant.appearance"));
    let unknown = f.tenant();
    let record = f.audit("tenant.appearance", json!({}));
    assert!(matches!(
        s.tenants()
            .set_appearance(&unknown, &first, &record)
            .await
            .unwrap(),
        TransitionOutcome::Conflict { .. }
    ));
    assert!(
        s.tenants()
            .list_audit(&unknown, None, 10)
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert_eq!(s.tenants().get_tenant(&unknown).await.unwrap(), None);
}

/// U-3, decision 0047: a credential's retirement is stored with its audit record in one
/// write, once; retiring an unknown or an already retiring credential is a conflict and
/// writes nothing.
pub async fn u3_a_credential_retires_once_with_its_audit_record(s: Arc<dyn Subject>) {
    let f = Fixture::default();
    let tenant = f.tenant();
    let key = countersign_domain::ports::WidgetKey {
        id: countersign_domain::ids::WidgetKeyId::parse(format!("wk_{}", f.ulid())).unwrap(),
        created_at: f.now(),
        allowed_origins: vec!["https://shop.example.com".into()],
        retires_at: None,
    };
    let created = f.audit("widgetCredential.create", json!({}));
    s.tenants()
        .put_widget_key(&tenant, &key, &created)
        .await
        .unwrap();
    let at = f.now().plus_seconds(3600);
    let retire = |at: Timestamp| {
        let s = s.clone();
        let record = f.audit("widgetCredential.retire", json!({}));
        let id = key.id.clone();
        let tenant = tenant.clone();
        async move {
            s.tenants()
                .retire_widget_key(&tenant, &id, at, &record)
                .await
                .unwrap()
        }
    };
    assert_eq!(retire(at).await, TransitionOutcome::Applied);
    let stored = s
        .tenants()
        .get_widget_key(&tenant, &key.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.retires_at, Some(at));
    assert_eq!(stored.allowed_origins, key.allowed_origins);
    assert!(!stored.valid_at(at) && stored.valid_at(at.plus_seconds(-1)));
    // Once: a second retirement would move the end of the grace period.
    assert!(matches!(
        retire(at.plus_seconds(60)).await,
        TransitionOutcome::Conflict { .. }
    ));
    let audit = s.tenants().list_audit(&tenant, None, 10).await.unwrap();
    let actions: Vec<&str> = audit.items.iter().map(|r| r.action.as_str()).collect();
    assert_eq!(
        actions,
        ["widgetCredential.retire", "widgetCredential.create"]
    );
    let revoke = f.audit("widgetCredential.revoke", json!({}));
    s.tenants()
        .delete_widget_key(&tenant, &key.id, &revoke)
        .await
        .unwrap();
    assert!(matches!(
        retire(at).await,
        TransitionOutcome::Conflict { .. }
    ));
    assert_eq!(
        s.tenants()
            .list_audit(&tenant, None, 10)
            .await
            .unwrap()
            .items
            .len(),
        3
    );
}

/// a record of the case (a gateway token minted for it) joins the case's own audit
/// chain only while the case is open; a closed or unknown case is a conflict and writes
/// nothing; the trail still verifies.
pub async fn x5_a_record_joins_an_open_cases_chain_and_never_a_closed_one(s: Arc<dyn Subject>) {
    use countersign_domain::audit_chain::{conversation_chain, verify_trail};
    let f = Fixture::default();
    let tenant = f.tenant();
    let case = f.open_case(s.conversations(), &tenant).await;
    let minted = f.audit("gatewayToken.mint", json!({"expiresAt": "later"}));
    let record = |entry: AuditEntry, case: CaseId| {
        let s = s.clone();
        let tenant = tenant.clone();
        async move {
            s.conversations()
                .record_in_case(&tenant, &case, &entry)
                .await
                .unwrap()
        }
    };
    assert_eq!(
        record(minted.clone(), case.id.clone()).await,
        TransitionOutcome::Applied
    );
    let trail = s.tenants().audit_trail(&tenant).await.unwrap();
    assert_eq!(
        trail.heads[&conversation_chain(tenant.as_str(), case.id.as_str())].seq,
        1
    );
    assert_eq!(verify_trail(tenant.as_str(), &trail).broken, None);
    let unknown = CaseId::from_ulid_text(&f.ulid()).unwrap();
    let other = f.audit("gatewayToken.mint", json!({}));
    assert!(matches!(
        record(other.clone(), unknown).await,
        TransitionOutcome::Conflict { .. }
    ));
    s.conversations()
        .close_case(&tenant, &case.id)
        .await
        .unwrap();
    assert!(matches!(
        record(other, case.id.clone()).await,
        TransitionOutcome::Conflict { .. }
    ));
    let page = s.tenants().list_audit(&tenant, None, 10).await.unwrap();
    let actions: Vec<&str> = page.items.iter().map(|r| r.action.as_str()).collect();
    assert_eq!(
        actions,
        ["gatewayToken.mint"],
        "nothing written for the refused ones"
    );
}

/// Messages of a case come back in creation order, after a given one, the newest for the
/// model, and the proposal's presentation joins the same order.
pub async fn messages_keep_one_order_per_case(s: Arc<dyn Subject>) {
    let f = Fixture::default();
    let tenant = f.tenant();
    let store = s.conversations();
    let case = f.open_case(store, &tenant).await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let m = f.message(&case.id, Role::User, MessageKind::Text, &format!("m{i}"));
        ids.push(m.id.clone());
        store.append_message(&tenant, &m).await.unwrap();
    }
    let (t, c) = (&tenant, &case.id);
    let listed = |after: Option<MessageId>, limit| async move {
        store
            .list_messages(t, c, after.as_ref(), limit)
            .await
            .unwrap()
    };
    let all = listed(None, 100).await;
    assert_eq!(
        all.iter().map(|m| &m.id).collect::<Vec<_>>(),
        ids.iter().collect::<Vec<_>>()
    );
    assert_eq!(all[0].content, "m0");
    let after = listed(Some(ids[2].clone()), 100).await;
    assert_eq!(
        after.iter().map(|m| m.id.clone()).collect::<Vec<_>>(),
        ids[3..].to_vec()
    );
    assert_eq!(listed(None, 2).await.len(), 2);
    let recent = store.recent_messages(&tenant, &case.id, 3).await.unwrap();
    assert_eq!(
        recent.iter().map(|m| m.id.clone()).collect::<Vec<_>>(),
        ids[2..].to_vec()
    );
    let (p, m) = f.proposal(&case, "act_order");
    create(&*s, &p, &m).await;
    let all = listed(None, 100).await;
    assert_eq!(all.len(), 6);
    assert_eq!(all[5].id, p.presented.message_id);
    assert_eq!(all[5].kind, MessageKind::Proposal);
}

/// a new proposal supersedes the pending one in the same write; the superseded
/// one never confirms, even with its own presentation id.
pub async fn a16_a_new_proposal_supersedes_the_pending_one_which_never_confirms(
    s: Arc<dyn Subject>,
) {
    let f = Fixture::default();
    let case = f.open_case(s.conversations(), &f.tenant()).await;
    let (p1, m1) = f.proposal(&case, "act_1");
    let (p2, m2) = f.proposal(&case, "act_2");
    assert_eq!(create(&*s, &p1, &m1).await, applied());
    assert_eq!(
        create(&*s, &p2, &m2).await,
        CreateProposalOutcome::Applied {
            superseded: Some(p1.action_id.clone())
        }
    );
    assert_eq!(state(&*s, &p1).await, S::Superseded);
    assert_eq!(
        confirm(&*s, &f, &p1).await,
        TransitionOutcome::Conflict {
            current: Some(S::Superseded)
        }
    );
    let view = s
        .conversations()
        .load(&case.tenant, &case.id)
        .await
        .unwrap();
    assert_eq!(
        view.unwrap().active.map(|a| a.action_id),
        Some(p2.action_id)
    );
}

/// an executing or unknown proposal blocks preparation until it is settled.
pub async fn a17_executing_or_unknown_blocks_preparation_until_settled(s: Arc<dyn Subject>) {
    let f = Fixture::default();
    let case = f.open_case(s.conversations(), &f.tenant()).await;
    let (p1, m1) = f.proposal(&case, "act_b1");
    create(&*s, &p1, &m1).await;
    assert_eq!(confirm(&*s, &f, &p1).await, TransitionOutcome::Applied);
    let (p2, m2) = f.proposal(&case, "act_b2");
    let blocked = |state| CreateProposalOutcome::Blocked {
        action_id: p1.action_id.clone(),
        state,
    };
    assert_eq!(create(&*s, &p2, &m2).await, blocked(S::Executing));
    assert_eq!(
        step(&*s, &p1, S::Executing, S::Unknown).await,
        TransitionOutcome::Applied
    );
    assert_eq!(create(&*s, &p2, &m2).await, blocked(S::Unknown));
    assert_eq!(
        step(&*s, &p1, S::Unknown, S::Completed).await,
        TransitionOutcome::Applied
    );
    assert_eq!(create(&*s, &p2, &m2).await, applied());
}

/// an action id is never reused within a tenant, in any conversation or state, and a
/// refused proposal writes nothing; another tenant's ids are its own.
pub async fn a14_action_ids_are_never_reused_within_a_tenant(s: Arc<dyn Subject>) {
    let f = Fixture::default();
    let tenant = f.tenant();
    let a = f.open_case(s.conversations(), &tenant).await;
    let b = f.open_case(s.conversations(), &tenant).await;
    let (p1, m1) = f.proposal(&a, "act_same");
    create(&*s, &p1, &m1).await;
    let (again, m) = f.proposal(&b, "act_same");
    assert_eq!(
        create(&*s, &again, &m).await,
        CreateProposalOutcome::ActionIdReused
    );
    assert_eq!(
        step(&*s, &p1, S::PendingConfirmation, S::Cancelled).await,
        TransitionOutcome::Applied
    );
    let (again, m) = f.proposal(&a, "act_same");
    assert_eq!(
        create(&*s, &again, &m).await,
        CreateProposalOutcome::ActionIdReused
    );
    let view = s
        .conversations()
        .load(&tenant, &b.id)
        .await
        .unwrap()
        .unwrap();
    assert!(view.active.is_none(), "a refused proposal writes nothing");
    let listed = s
        .conversations()
        .list_messages(&tenant, &b.id, None, 100)
        .await
        .unwrap();
    assert!(listed.is_empty(), "nor its presentation");
    let other = f.tenant();
    let c = f.open_case(s.conversations(), &other).await;
    let (p, m) = f.proposal(&c, "act_same");
    assert_eq!(create(&*s, &p, &m).await, applied());
}

/// a confirmation moves pending → executing only with the current
/// presentation; a refused one stores nothing; a second finds it executing.
pub async fn a23_a35_confirm_needs_the_current_presentation_and_applies_once(s: Arc<dyn Subject>) {
    let f = Fixture::default();
    let tenant = f.tenant();
    let case = f.open_case(s.conversations(), &tenant).await;
    let (p, m) = f.proposal(&case, "act_c");
    create(&*s, &p, &m).await;
    let stale = f.confirm_write(&p, &f.message_id());
    assert_eq!(
        s.conversations().confirm(&stale).await.unwrap(),
        TransitionOutcome::Conflict {
            current: Some(S::PendingConfirmation)
        }
    );
    let listed = s
        .conversations()
        .list_messages(&tenant, &case.id, None, 100)
        .await
        .unwrap();
    assert!(
        listed.iter().all(|x| x.id != stale.message.id),
        "a refused confirm stores nothing"
    );
    let good = f.confirm_write(&p, &p.presented.message_id);
    assert_eq!(
        s.conversations().confirm(&good).await.unwrap(),
        TransitionOutcome::Applied
    );
    let stored = s.stored(&tenant, &case.id, &p.action_id).await.unwrap();
    assert_eq!(stored.state, S::Executing);
    assert_eq!(
        stored.confirmation_message_id,
        Some(good.message.id.clone())
    );
    let listed = s
        .conversations()
        .list_messages(&tenant, &case.id, None, 100)
        .await
        .unwrap();
    assert_eq!(listed.last().map(|x| x.id.clone()), Some(good.message.id));
    assert_eq!(
        confirm(&*s, &f, &p).await,
        TransitionOutcome::Conflict {
            current: Some(S::Executing)
        }
    );
}

/// a case whose action is executing or unknown is not closed until the action
/// is settled.
pub async fn a44_a_case_with_an_unsettled_action_is_not_closed(s: Arc<dyn Subject>) {
    let f = Fixture::default();
    let tenant = f.tenant();
    let case = f.open_case(s.conversations(), &tenant).await;
    let (p, m) = f.proposal(&case, "act_busy");
    create(&*s, &p, &m).await;
    assert_eq!(confirm(&*s, &f, &p).await, TransitionOutcome::Applied);
    for current in [S::Executing, S::Unknown] {
        if current == S::Unknown {
            step(&*s, &p, S::Executing, S::Unknown).await;
        }
        assert_eq!(
            s.conversations()
                .close_case(&tenant, &case.id)
                .await
                .unwrap(),
            TransitionOutcome::Conflict {
                current: Some(current)
            }
        );
        let view = s
            .conversations()
            .load(&tenant, &case.id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(view.case.status, CaseStatus::Open);
    }
    step(&*s, &p, S::Unknown, S::Completed).await;
    assert_eq!(
        s.conversations()
            .close_case(&tenant, &case.id)
            .await
            .unwrap(),
        TransitionOutcome::Applied
    );
}

/// closing a case cancels its pending proposal, which never confirms; the closed case
/// takes no new proposal; closing twice is harmless.
pub async fn a26_a_closed_case_cancels_its_proposal_and_takes_no_new_one(s: Arc<dyn Subject>) {
    let f = Fixture::default();
    let tenant = f.tenant();
    let case = f.open_case(s.conversations(), &tenant).await;
    let (p, m) = f.proposal(&case, "act_closed");
    create(&*s, &p, &m).await;
    for _ in 0..2 {
        assert_eq!(
            s.conversations()
                .close_case(&tenant, &case.id)
                .await
                .unwrap(),
            TransitionOutcome::Applied
        );
    }
    let view = s
        .conversations()
        .load(&tenant, &case.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(view.case.status, CaseStatus::Closed);
    assert!(view.active.is_none());
    assert_eq!(state(&*s, &p).await, S::Cancelled);
    assert_ne!(confirm(&*s, &f, &p).await, TransitionOutcome::Applied);
    let (p2, m2) = f.proposal(&case, "act_closed_2");
    assert_eq!(
        create(&*s, &p2, &m2).await,
        CreateProposalOutcome::CaseNotOpen
    );
}

/// C-8: a proposal prepared under settings no longer in force is refused; a settings change
/// cancels, with a notice, every pending proposal of other settings (never an executing
/// one), and none of them confirms; a second pass finds nothing; removing the connector
/// cancels the rest.
pub async fn c8_a_settings_change_fences_preparation_and_cancels_pending_proposals(
    s: Arc<dyn Subject>,
) {
    let f = Fixture::default();
    let tenant = f.tenant();
    let store = s.conversations();
    let (a, b, c) = (
        f.open_case(store, &tenant).await,
        f.open_case(store, &tenant).await,
        f.open_case(store, &tenant).await,
    );
    f.configure(s.tenants(), &tenant, None, (1, 1, "v1")).await;
    let (old, m) = f.registered(&a, "act_v1", (1, "v1"));
    assert_eq!(create(&*s, &old, &m).await, applied());
    let (running, m) = f.registered(&c, "act_v1_exec", (1, "v1"));
    create(&*s, &running, &m).await;
    assert_eq!(confirm(&*s, &f, &running).await, TransitionOutcome::Applied);
    f.configure(s.tenants(), &tenant, Some(1), (2, 2, "v1"))
        .await;
    let (late, m) = f.registered(&b, "act_v1_late", (1, "v1"));
    assert_eq!(
        create(&*s, &late, &m).await,
        CreateProposalOutcome::SettingsChanged
    );
    assert!(s.stored(&tenant, &b.id, &late.action_id).await.is_none());
    let (new, m) = f.registered(&b, "act_v2", (2, "v1"));
    assert_eq!(create(&*s, &new, &m).await, applied());

    let notice = |case: &CaseId, lang: Language| f.invalidated(case, lang);
    let keep = Some((2, "v1"));
    assert_eq!(
        store
            .invalidate_pending(&tenant, keep, &notice)
            .await
            .unwrap(),
        1
    );
    assert_eq!(state(&*s, &old).await, S::Cancelled);
    assert_eq!(state(&*s, &new).await, S::PendingConfirmation);
    assert_eq!(
        state(&*s, &running).await,
        S::Executing,
        "executing is never invalidated"
    );
    let told = store
        .list_messages(&tenant, &a.id, None, 100)
        .await
        .unwrap();
    assert_eq!(
        told.last().map(|m| m.content.as_str()),
        Some(invalidated_notice(Language::En)),
        "the person is told why"
    );
    assert_ne!(confirm(&*s, &f, &old).await, TransitionOutcome::Applied);
    assert_eq!(
        store
            .invalidate_pending(&tenant, keep, &notice)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .invalidate_pending(&tenant, None, &notice)
            .await
            .unwrap(),
        1
    );
    assert_eq!(state(&*s, &new).await, S::Cancelled);
}

/// Transitions follow the state machine (an illegal move is an error) and the stored state
/// (a stale one is a conflict); a notice is written with the move.
pub async fn transitions_follow_the_state_machine_and_the_stored_state(s: Arc<dyn Subject>) {
    let f = Fixture::default();
    let tenant = f.tenant();
    let case = f.open_case(s.conversations(), &tenant).await;
    let (p, m) = f.proposal(&case, "act_t");
    create(&*s, &p, &m).await;
    let illegal = s
        .conversations()
        .transition(
            &tenant,
            &case.id,
            &p.action_id,
            S::Cancelled,
            S::Executing,
            None,
        )
        .await;
    assert!(
        matches!(illegal, Err(StoreError::IllegalTransition { .. })),
        "{illegal:?}"
    );
    assert_eq!(
        step(&*s, &p, S::Executing, S::Completed).await,
        TransitionOutcome::Conflict {
            current: Some(S::PendingConfirmation)
        }
    );
    let notice = f.message(&case.id, Role::Assistant, MessageKind::Notice, "cancelled");
    let moved = s
        .conversations()
        .transition(
            &tenant,
            &case.id,
            &p.action_id,
            S::PendingConfirmation,
            S::Cancelled,
            Some(&notice),
        )
        .await
        .unwrap();
    assert_eq!(moved, TransitionOutcome::Applied);
    let listed = s
        .conversations()
        .list_messages(&tenant, &case.id, None, 100)
        .await
        .unwrap();
    assert_eq!(listed.last().map(|x| x.id.clone()), Some(notice.id));
}

/// Decision 0021: a tenant's budget admits `per_minute` units in a minute, then refuses with
/// the seconds left; another tenant's budget is its own; the next minute renews it.
pub async fn budgets_are_per_tenant_fixed_windows(s: Arc<dyn Subject>) {
    let f = Fixture::default();
    let (a, b) = (f.tenant(), f.tenant());
    // 1_800_000_000 is a minute boundary: 15 s into a window.
    let t0 = Timestamp::from_unix_seconds(1_800_000_015).unwrap();
    let take = |t: &TenantId, at| {
        let t = t.clone();
        let s = s.clone();
        async move { s.budgets().take(&t, "turns", 3, at).await.unwrap() }
    };
    for _ in 0..3 {
        assert_eq!(take(&a, t0).await, Admission::Admitted);
    }
    assert_eq!(
        take(&a, t0).await,
        Admission::Limited {
            retry_after_secs: 45
        }
    );
    assert_eq!(take(&b, t0).await, Admission::Admitted);
    assert_eq!(take(&a, t0.plus_seconds(45)).await, Admission::Admitted);
}

/// How many callers race in the concurrency rules.
const RACERS: usize = 16;
/// How many preparations race in one conversation: each must win a round of the slot and
/// the chain head in turn, so through the fault proxy (which cancels every transaction
/// that overlaps one in flight, as DynamoDB does) 16 racers can exhaust a loser's retry
/// budget on a loaded machine; one person's conversation never sees 8 at once.
const PREPARERS: usize = 8;

/// P-2, A-35: simultaneous confirmations of one proposal: exactly one applies; every other
/// one finds it executing.
pub async fn p2_concurrent_confirmations_apply_exactly_once(s: Arc<dyn Subject>) {
    let f = Arc::new(Fixture::default());
    let case = f.open_case(s.conversations(), &f.tenant()).await;
    let (p, m) = f.proposal(&case, "act_cc");
    create(&*s, &p, &m).await;
    let barrier = Arc::new(tokio::sync::Barrier::new(RACERS));
    let tasks: Vec<_> = (0..RACERS)
        .map(|_| {
            let (s, f, p, barrier) = (s.clone(), f.clone(), p.clone(), barrier.clone());
            tokio::spawn(async move {
                let w = f.confirm_write(&p, &p.presented.message_id);
                barrier.wait().await;
                s.conversations().confirm(&w).await.unwrap()
            })
        })
        .collect();
    let mut applied = 0;
    for t in tasks {
        match t.await.unwrap() {
            TransitionOutcome::Applied => applied += 1,
            TransitionOutcome::Conflict { current } => assert_eq!(current, Some(S::Executing)),
        }
    }
    assert_eq!(applied, 1, "exactly one confirmation wins");
    assert_eq!(state(&*s, &p).await, S::Executing);
}

/// P-2, A-15, A-16: simultaneous preparations in one conversation leave exactly one
/// pending proposal; every other one is superseded and never confirms.
pub async fn p2_concurrent_preparations_leave_exactly_one_pending(s: Arc<dyn Subject>) {
    let f = Fixture::default();
    let tenant = f.tenant();
    let case = f.open_case(s.conversations(), &tenant).await;
    let barrier = Arc::new(tokio::sync::Barrier::new(PREPARERS));
    let tasks: Vec<_> = (0..PREPARERS)
        .map(|i| {
            let (p, m) = f.proposal(&case, &format!("act_cp_{i}"));
            let (s, barrier) = (s.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                let outcome = s.conversations().create_proposal(&p, &m).await.unwrap();
                (p, outcome)
            })
        })
        .collect();
    let mut proposals = Vec::new();
    for t in tasks {
        let (p, outcome) = t.await.unwrap();
        assert!(
            matches!(outcome, CreateProposalOutcome::Applied { .. }),
            "{outcome:?}"
        );
        proposals.push(p);
    }
    let view = s
        .conversations()
        .load(&tenant, &case.id)
        .await
        .unwrap()
        .unwrap();
    let active = view.active.expect("one proposal is active");
    let mut pending = 0;
    for p in &proposals {
        if p.action_id == active.action_id {
            assert_eq!(state(&*s, p).await, S::PendingConfirmation);
            pending += 1;
        } else {
            assert_eq!(state(&*s, p).await, S::Superseded);
            assert_ne!(confirm(&*s, &f, p).await, TransitionOutcome::Applied);
        }
    }
    assert_eq!(pending, 1);
}

/// Decision 0028: the tenant's unsettled index gets an action when it is confirmed, keeps it
/// while unknown, loses it when settled; an administrator's settlement applies once, with
/// its audit record.
pub async fn unsettled_index_follows_each_action_to_its_end(s: Arc<dyn Subject>) {
    let f = Fixture::default();
    let tenant = f.tenant();
    let store = s.conversations();
    f.configure(s.tenants(), &tenant, None, (1, 1, "v1")).await;
    let case = f.open_case(store, &tenant).await;
    assert!(store.list_unsettled(&tenant).await.unwrap().is_empty());
    let (p, m) = f.registered(&case, "act_idx_1", (1, "v1"));
    create(&*s, &p, &m).await;
    assert_eq!(confirm(&*s, &f, &p).await, TransitionOutcome::Applied);
    let listed = store.list_unsettled(&tenant).await.unwrap();
    let listed: Vec<_> = listed.iter().map(|u| (&u.case, &u.action_id)).collect();
    assert_eq!(listed, [(&case.id, &p.action_id)]);
    step(&*s, &p, S::Executing, S::Unknown).await;
    assert_eq!(
        store.list_unsettled(&tenant).await.unwrap().len(),
        1,
        "unknown is unsettled"
    );
    step(&*s, &p, S::Unknown, S::Completed).await;
    assert!(
        store.list_unsettled(&tenant).await.unwrap().is_empty(),
        "settled: gone"
    );

    let case2 = f.open_case(store, &tenant).await;
    let (p2, m) = f.registered(&case2, "act_idx_2", (1, "v1"));
    create(&*s, &p2, &m).await;
    assert_eq!(confirm(&*s, &f, &p2).await, TransitionOutcome::Applied);
    let notice = f.message(&case2.id, Role::Assistant, MessageKind::Notice, "checked");
    let audit = f.audit("action.settle", json!({"reason": "checked"}));
    let settle = SettleByAdmin {
        tenant: &tenant,
        case: &case2.id,
        action_id: &p2.action_id,
        from: S::Executing,
        to: S::Failed,
        notice: &notice,
        audit: &audit,
    };
    assert_eq!(
        store.settle_by_admin(&settle).await.unwrap(),
        TransitionOutcome::Applied
    );
    assert!(store.list_unsettled(&tenant).await.unwrap().is_empty());
    let settled = |page: countersign_domain::ports::AuditPage| {
        page.items
            .iter()
            .filter(|e| e.action == "action.settle")
            .count()
    };
    let page = s.tenants().list_audit(&tenant, None, 50).await.unwrap();
    assert_eq!(settled(page), 1);
    assert_eq!(
        store.settle_by_admin(&settle).await.unwrap(),
        TransitionOutcome::Conflict {
            current: Some(S::Failed)
        }
    );
    let page = s.tenants().list_audit(&tenant, None, 50).await.unwrap();
    assert_eq!(settled(page), 1, "a second settlement writes nothing");
}

/// A configured tenant's conversation in which `<prefix>_1` was prepared, then superseded
/// by `<prefix>_2`, which was confirmed and completed.
async fn life(s: &dyn Subject, f: &Fixture, prefix: &str) -> (TenantId, Case) {
    let tenant = f.tenant();
    f.configure(s.tenants(), &tenant, None, (1, 1, "v1")).await;
    let case = f.open_case(s.conversations(), &tenant).await;
    let (p1, m1) = f.proposal(&case, &format!("{prefix}_1"));
    let (p2, m2) = f.proposal(&case, &format!("{prefix}_2"));
    create(s, &p1, &m1).await;
    create(s, &p2, &m2).await;
    assert_eq!(confirm(s, f, &p2).await, TransitionOutcome::Applied);
    step(s, &p2, S::Executing, S::Completed).await;
    (tenant, case)
}

/// L-1: each step of a proposal's life is one record of the tenant's trail, the one the
/// domain composes (`countersign_domain::life`): prepared, superseded, confirmed by the
/// person, completed, and a pending one cancelled with its conversation. No record holds
/// a secret.
pub async fn l1_each_step_of_a_proposal_is_recorded_with_the_step(s: Arc<dyn Subject>) {
    let f = Fixture::default();
    let (tenant, case) = life(&*s, &f, "act_life").await;
    let (p3, m3) = f.proposal(&case, "act_life_3");
    create(&*s, &p3, &m3).await;
    s.conversations()
        .close_case(&tenant, &case.id)
        .await
        .unwrap();

    let page = s.tenants().list_audit(&tenant, None, 100).await.unwrap();
    let mut actions: Vec<&str> = page.items.iter().map(|a| a.action.as_str()).collect();
    actions.sort_unstable();
    assert_eq!(
        actions,
        [
            "mcp.put",
            "proposal.cancelled",
            "proposal.completed",
            "proposal.confirmed",
            "proposal.prepared",
            "proposal.prepared",
            "proposal.prepared",
            "proposal.superseded",
        ]
    );
    let one = |action: &str| {
        page.items
            .iter()
            .find(|a| a.action == action)
            .unwrap_or_else(|| panic!("no {action}"))
    };
    let confirmed = one("proposal.confirmed");
    assert_eq!(confirmed.actor, "person");
    assert_eq!(confirmed.changes["actionId"], "act_life_2");
    assert_eq!(confirmed.changes["to"], "executing");
    let superseded = one("proposal.superseded");
    assert_eq!(
        (&superseded.changes["actionId"], &superseded.changes["by"]),
        (&json!("act_life_1"), &json!("act_life_2"))
    );
    let cancelled = one("proposal.cancelled");
    assert_eq!(cancelled.changes["actionId"], "act_life_3");
    assert_eq!(cancelled.changes["reason"], "conversation closed");
    let completed = one("proposal.completed");
    assert_eq!(
        (&completed.changes["from"], &completed.changes["to"]),
        (&json!("executing"), &json!("completed"))
    );
    let text =
        serde_json::to_string(&page.items.iter().map(|a| &a.changes).collect::<Vec<_>>()).unwrap();
    assert!(
        !text.contains("svc_token_123") && !text.contains("eyJ"),
        "{text}"
    );
}

/// L-2, L-3: every record is on a chain — the tenant's for configuration, the
/// conversation's for its proposals — the conversation's chain is in the tenant's index,
/// and the trail verifies.
pub async fn l2_every_record_is_chained_and_the_trail_verifies(s: Arc<dyn Subject>) {
    use countersign_domain::audit_chain::{TENANT_CHAIN, conversation_chain, verify_trail};
    let f = Fixture::default();
    let (tenant, case) = life(&*s, &f, "act_chain").await;
    let trail = s.tenants().audit_trail(&tenant).await.unwrap();
    let report = verify_trail(tenant.as_str(), &trail);
    assert_eq!(report.broken, None, "{report:?}");
    assert_eq!((report.records, report.chains, report.unchained), (6, 2, 0));
    let chain = conversation_chain(tenant.as_str(), case.id.as_str());
    assert_eq!(trail.heads[TENANT_CHAIN].seq, 1);
    assert_eq!(trail.heads[&chain].seq, 5);
    assert!(trail.indexed.contains(&chain), "{:?}", trail.indexed);
    // L-3: the audit listing gives each record's place in its chain, as verified.
    let page = s.tenants().list_audit(&tenant, None, 50).await.unwrap();
    assert_eq!((page.items.len(), page.links.len()), (6, 6));
    for r in &trail.records {
        let id = AuditId::parse(r.id.as_str()).unwrap();
        let link = countersign_domain::audit_chain::ChainLink::of(r, tenant.as_str());
        assert_eq!(page.links.get(&id), Some(&link), "{}", r.id);
    }
}

/// a tenant's conversations are listed page by page from a resumable cursor, each
/// once, with its last activity (its newest message, or its creation); another tenant's
/// are not; an unreadable cursor is refused.
pub async fn r1_a_tenants_conversations_are_listed_with_their_last_activity(s: Arc<dyn Subject>) {
    let f = Fixture::default();
    let tenant = f.tenant();
    let store = s.conversations();
    let mut cases = Vec::new();
    for _ in 0..5 {
        cases.push(f.open_case(store, &tenant).await);
    }
    let other = f.open_case(store, &f.tenant()).await;
    let mut later = f.message(&cases[2].id, Role::User, MessageKind::Text, "hello");
    later.created_at = f.now().plus_seconds(3600);
    store.append_message(&tenant, &later).await.unwrap();
    let (mut seen, mut cursor) = (Vec::new(), None::<String>);
    for _ in 0..10 {
        let page = store.retained(&tenant, cursor.as_deref(), 2).await.unwrap();
        assert!(page.items.len() <= 2 + 1, "{page:?}");
        seen.extend(page.items);
        cursor = page.next;
        if cursor.is_none() {
            break;
        }
    }
    assert!(cursor.is_none(), "the listing ends");
    let mut ids: Vec<_> = seen.iter().map(|r| r.case.clone()).collect();
    ids.sort();
    let mut want: Vec<_> = cases.iter().map(|c| c.id.clone()).collect();
    want.sort();
    assert_eq!(ids, want, "each of the tenant's conversations once");
    assert!(!ids.contains(&other.id));
    for r in &seen {
        let case = cases.iter().find(|c| c.id == r.case).unwrap();
        assert_eq!(r.user, case.user);
        let want = if r.case == cases[2].id {
            later.created_at
        } else {
            case.created_at
        };
        assert_eq!(r.last_activity.unix_seconds(), want.unix_seconds(), "{r:?}");
    }
    assert!(matches!(
        store.retained(&tenant, Some("not a cursor"), 2).await,
        Err(StoreError::Corrupt(_))
    ));
}

/// R-1, P-3: purging a conversation whose proposal is settled removes every item of it
/// (case, proposals, messages, link): a look at everything stored finds its id, its
/// action's id, its messages' ids and its text only in the audit trail (where a store
/// with keys seals them under the conversation's key, destroyed by the purge: decision
/// 0055, held on the emulator by the admin crate's `r1_a_purged_conversation_…`), and it
/// is no longer listed. A second purge finds nothing.
pub async fn r1_a_purge_removes_every_item_of_a_settled_conversation(s: Arc<dyn Subject>) {
    let f = Fixture::default();
    let tenant = f.tenant();
    let store = s.conversations();
    let case = f.open_case(store, &tenant).await;
    let kept = f.open_case(store, &tenant).await;
    let secret = format!("purge-me-{}", f.ulid());
    let said = f.message(&case.id, Role::User, MessageKind::Text, &secret);
    store.append_message(&tenant, &said).await.unwrap();
    // Registered (C-8), so its registration is among what must go (confirm-path N7).
    f.configure(s.tenants(), &tenant, None, (1, 1, "v1")).await;
    let (p, m) = f.registered(&case, "act_purged", (1, "v1"));
    create(&*s, &p, &m).await;
    assert_eq!(
        step(&*s, &p, S::PendingConfirmation, S::Cancelled).await,
        TransitionOutcome::Applied
    );
    let outcome = store.purge(&tenant, &case.id, None).await.unwrap();
    assert!(
        matches!(outcome, countersign_domain::ports::PurgeOutcome::Purged { items } if items >= 4),
        "{outcome:?}"
    );
    let presented = p.presented.message_id.as_str();
    for needle in [
        secret.as_str(),
        case.id.as_str(),
        p.action_id.as_str(),
        presented,
    ] {
        let left: Vec<String> = s
            .holding(needle)
            .await
            .into_iter()
            .filter(|k| k != "audit")
            .collect();
        assert!(left.is_empty(), "{needle} is still in {left:?}");
    }
    assert!(store.load(&tenant, &case.id).await.unwrap().is_none());
    // L-2: the conversation's audit chain still verifies (its records and head stay).
    let trail = s.tenants().audit_trail(&tenant).await.unwrap();
    let report = countersign_domain::audit_chain::verify(
        tenant.as_str(),
        &trail.records,
        &trail.heads,
        trail.unchained,
    );
    assert_eq!(report.broken, None, "{report:?}");
    assert!(report.records >= 2, "{report:?}");
    let listed = store.retained(&tenant, None, 100).await.unwrap();
    assert_eq!(
        listed.items.iter().map(|r| &r.case).collect::<Vec<_>>(),
        vec![&kept.id],
        "only the other conversation is left"
    );
    assert_eq!(
        store.purge(&tenant, &case.id, None).await.unwrap(),
        countersign_domain::ports::PurgeOutcome::Gone
    );
    assert!(store.load(&tenant, &kept.id).await.unwrap().is_some());
}

/// A confirmation link into `case` (N-4's rules).
fn link_into(f: &Fixture, case: &Case) -> (Sha256Hex, countersign_domain::ports::ConfirmationLink) {
    let link = countersign_domain::ports::ConfirmationLink {
        tenant: case.tenant.clone(),
        user: case.user.clone(),
        case: case.id.clone(),
        action_id: ActionId::parse(format!("act_{}", f.ulid().to_lowercase())).unwrap(),
        operation: OperationName::parse("reassign_session_car").unwrap(),
        presented: f.message_id(),
        summary_hash: Sha256Hex::digest("summary"),
        arguments_hash: Sha256Hex::digest("arguments"),
        expires_at: f.now().plus_seconds(600),
    };
    (Sha256Hex::digest(f.ulid()), link)
}

/// N-4 (confirm-path review N2, interleaving A): a request that loaded the conversation
/// before the purge cannot write into it after: its message and its confirmation link are
/// refused as [`StoreError::Gone`], and a look at everything stored finds nothing of them.
pub async fn n4_nothing_is_written_into_a_purged_conversation(s: Arc<dyn Subject>) {
    let f = Fixture::default();
    let tenant = f.tenant();
    let store = s.conversations();
    let case = f.open_case(store, &tenant).await;
    let loaded = store.load(&tenant, &case.id).await.unwrap();
    assert!(loaded.is_some(), "the request saw the conversation");
    let outcome = store.purge(&tenant, &case.id, None).await.unwrap();
    assert!(
        matches!(
            outcome,
            countersign_domain::ports::PurgeOutcome::Purged { .. }
        ),
        "{outcome:?}"
    );
    let late = format!("late-{}", f.ulid());
    let said = f.message(&case.id, Role::User, MessageKind::Text, &late);
    let written = store.append_message(&tenant, &said).await;
    assert!(matches!(written, Err(StoreError::Gone)), "{written:?}");
    let (hash, link) = link_into(&f, &case);
    let put = s.links().put_link(&hash, &link).await;
    assert!(matches!(put, Err(StoreError::Gone)), "{put:?}");
    assert_eq!(s.links().get_link(&hash).await.unwrap(), None);
    for needle in [late.as_str(), case.id.as_str(), link.action_id.as_str()] {
        let left: Vec<String> = s
            .holding(needle)
            .await
            .into_iter()
            .filter(|k| k != "audit")
            .collect();
        assert!(left.is_empty(), "{needle} is still in {left:?}");
    }
    assert!(store.load(&tenant, &case.id).await.unwrap().is_none());
}

/// N-4 (confirm-path review N2, interleaving B): the purge decides on what it listed; a
/// conversation written to since (a message, a link) is kept, and purged once it is
/// listed again as quiet as it was.
pub async fn n4_a_write_after_the_listing_keeps_the_conversation(s: Arc<dyn Subject>) {
    use countersign_domain::ports::PurgeOutcome;
    let f = Fixture::default();
    let tenant = f.tenant();
    let store = s.conversations();
    let case = f.open_case(store, &tenant).await;
    let listed = |page: countersign_domain::ports::RetainedPage| {
        page.items.into_iter().find(|r| r.case == case.id).unwrap()
    };
    let before = listed(store.retained(&tenant, None, 10).await.unwrap());
    let said = f.message(&case.id, Role::User, MessageKind::Text, "back again");
    store.append_message(&tenant, &said).await.unwrap();
    assert_eq!(
        store
            .purge(&tenant, &case.id, Some(before.writes))
            .await
            .unwrap(),
        PurgeOutcome::Active
    );
    let again = listed(store.retained(&tenant, None, 10).await.unwrap());
    assert_ne!(again.writes, before.writes);
    let (hash, link) = link_into(&f, &case);
    s.links().put_link(&hash, &link).await.unwrap();
    assert_eq!(
        store
            .purge(&tenant, &case.id, Some(again.writes))
            .await
            .unwrap(),
        PurgeOutcome::Active,
        "a link is a write too"
    );
    assert!(store.load(&tenant, &case.id).await.unwrap().is_some());
    let last = listed(store.retained(&tenant, None, 10).await.unwrap());
    let outcome = store
        .purge(&tenant, &case.id, Some(last.writes))
        .await
        .unwrap();
    assert!(
        matches!(outcome, PurgeOutcome::Purged { .. }),
        "{outcome:?}"
    );
}

/// R-1, P-3: a conversation whose proposal is pending, executing or unknown is kept whole
/// by the purge; once the proposal is settled, the purge removes it.
pub async fn r1_p3_a_purge_keeps_a_conversation_whose_proposal_is_unresolved(s: Arc<dyn Subject>) {
    let f = Fixture::default();
    let tenant = f.tenant();
    let store = s.conversations();
    let case = f.open_case(store, &tenant).await;
    let (p, m) = f.proposal(&case, "act_held");
    create(&*s, &p, &m).await;
    let unresolved = countersign_domain::ports::PurgeOutcome::Unresolved;
    assert_eq!(
        store.purge(&tenant, &case.id, None).await.unwrap(),
        unresolved(S::PendingConfirmation)
    );
    assert_eq!(confirm(&*s, &f, &p).await, TransitionOutcome::Applied);
    assert_eq!(
        store.purge(&tenant, &case.id, None).await.unwrap(),
        unresolved(S::Executing)
    );
    assert_eq!(
        step(&*s, &p, S::Executing, S::Unknown).await,
        TransitionOutcome::Applied
    );
    assert_eq!(
        store.purge(&tenant, &case.id, None).await.unwrap(),
        unresolved(S::Unknown)
    );
    let view = store.load(&tenant, &case.id).await.unwrap().unwrap();
    assert_eq!(view.active.map(|a| a.state), Some(S::Unknown), "kept whole");
    assert!(!s.holding(case.id.as_str()).await.is_empty());
    assert_eq!(
        step(&*s, &p, S::Unknown, S::Completed).await,
        TransitionOutcome::Applied
    );
    assert!(matches!(
        store.purge(&tenant, &case.id, None).await.unwrap(),
        countersign_domain::ports::PurgeOutcome::Purged { .. }
    ));
    assert!(store.load(&tenant, &case.id).await.unwrap().is_none());
}

/// the tenant's retention is set with its audit record in one write; an unknown
/// tenant is a conflict and writes nothing.
pub async fn r1_the_retention_is_set_with_its_audit_record(s: Arc<dyn Subject>) {
    use countersign_domain::retention::RetentionDays;
    let f = Fixture::default();
    let tenant = f.tenant_named("Retention");
    s.tenants().create_tenant(&tenant).await.unwrap();
    let days = RetentionDays::new(45).unwrap();
    let record = f.audit(
        "tenant.retention_days",
        json!({"retentionDays": {"from": null, "to": 45}}),
    );
    assert_eq!(
        s.tenants()
            .set_retention_days(&tenant.id, days, &record)
            .await
            .unwrap(),
        TransitionOutcome::Applied
    );
    let stored = s.tenants().get_tenant(&tenant.id).await.unwrap().unwrap();
    assert_eq!(stored.retention_days, Some(days));
    let page = s.tenants().list_audit(&tenant.id, None, 10).await.unwrap();
    assert_eq!(page.items[0].action, "tenant.retention_days");
    let unknown = f.tenant();
    let record = f.audit("tenant.retention_days", json!({}));
    assert!(matches!(
        s.tenants()
            .set_retention_days(&unknown, days, &record)
            .await
            .unwrap(),
        TransitionOutcome::Conflict { .. }
    ));
    assert_eq!(s.tenants().get_tenant(&unknown).await.unwrap(), None);
}

/// R-3 under concurrency: a hold placed on each of six conversations while the purge
/// reaches the same ones. Each purge either removed its conversation whole (it came
/// first) or kept it whole for the hold; never a conversation half gone, a hold lost, or a
/// purge that gives up and misnames why it kept one. Through the fault proxy the two
/// transactions on the tenant item meet real DynamoDB's conflicts.
pub async fn r3_a_hold_racing_the_purge_is_never_lost(s: Arc<dyn Subject>) {
    use countersign_domain::ports::PurgeOutcome;
    use countersign_domain::retention::Hold;
    let f = Fixture::default();
    let tenant = f.tenant_named("Racing holds");
    let t = s.tenants();
    t.create_tenant(&tenant).await.unwrap();
    let store = s.conversations();
    let mut cases = Vec::new();
    for _ in 0..6 {
        cases.push(f.open_case(store, &tenant.id).await);
    }
    let mut races = Vec::new();
    for case in &cases {
        let (s, tenant, case) = (s.clone(), tenant.id.clone(), case.id.clone());
        let hold = Hold::Conversation(case.clone());
        let record = f.audit("hold.placed", json!({}));
        races.push(tokio::spawn(async move {
            let (purged, held) = tokio::join!(
                s.conversations().purge(&tenant, &case, None),
                s.tenants().set_hold(&tenant, &hold, true, &record)
            );
            (purged.unwrap(), held.unwrap())
        }));
    }
    let mut outcomes = Vec::new();
    for race in races {
        outcomes.push(race.await.unwrap());
    }
    let holds = t.get_tenant(&tenant.id).await.unwrap().unwrap().holds;
    for (case, (purged, held)) in cases.iter().zip(&outcomes) {
        assert_eq!(*held, TransitionOutcome::Applied);
        assert!(
            holds.contains(&Hold::Conversation(case.id.clone())),
            "{holds:?}"
        );
        let left = store.load(&tenant.id, &case.id).await.unwrap();
        match purged {
            PurgeOutcome::Purged { .. } => assert!(left.is_none(), "purged, yet it is there"),
            PurgeOutcome::Held => assert!(left.is_some(), "kept for its hold, yet it is gone"),
            other => panic!("{other:?}: neither purged nor kept for its hold"),
        }
        if left.is_some() {
            assert_eq!(
                store.purge(&tenant.id, &case.id, None).await.unwrap(),
                PurgeOutcome::Held
            );
        }
    }
    // L-2: every hold is recorded, and the trail verifies.
    let page = t.list_audit(&tenant.id, None, 20).await.unwrap();
    let placed = page
        .items
        .iter()
        .filter(|r| r.action == "hold.placed")
        .count();
    assert_eq!(placed, cases.len());
    let trail = t.audit_trail(&tenant.id).await.unwrap();
    let report = countersign_domain::audit_chain::verify_trail(tenant.id.as_str(), &trail);
    assert_eq!(report.broken, None, "{report:?}");
}

/// a conversation's hold keeps it from the purge, a person's keeps every conversation
/// of theirs, each until lifted; holds placed at once all stand; each change is audited in
/// its write.
pub async fn r3_a_hold_keeps_conversations_from_the_purge_until_lifted(s: Arc<dyn Subject>) {
    use countersign_domain::ports::PurgeOutcome;
    use countersign_domain::retention::Hold;
    let f = Fixture::default();
    let tenant = f.tenant_named("Holds");
    let t = s.tenants();
    t.create_tenant(&tenant).await.unwrap();
    let store = s.conversations();
    let (held, free, later) = (
        f.open_case(store, &tenant.id).await,
        f.open_case(store, &tenant.id).await,
        f.open_case(store, &tenant.id).await,
    );
    let on_case = Hold::Conversation(held.id.clone());
    let on_person = Hold::Person(held.user.clone());
    let (a, b) = (
        f.audit("hold.placed", json!({})),
        f.audit("hold.placed", json!({})),
    );
    let (x, y) = tokio::join!(
        t.set_hold(&tenant.id, &on_case, true, &a),
        t.set_hold(&tenant.id, &on_person, true, &b)
    );
    assert_eq!(
        (x.unwrap(), y.unwrap()),
        (TransitionOutcome::Applied, TransitionOutcome::Applied)
    );
    let holds = t.get_tenant(&tenant.id).await.unwrap().unwrap().holds;
    assert!(
        holds.contains(&on_case) && holds.contains(&on_person),
        "{holds:?}"
    );
    for case in [&held, &free, &later] {
        assert_eq!(
            store.purge(&tenant.id, &case.id, None).await.unwrap(),
            PurgeOutcome::Held
        );
    }
    let lift = f.audit("hold.lifted", json!({}));
    t.set_hold(&tenant.id, &on_person, false, &lift)
        .await
        .unwrap();
    assert_eq!(
        store.purge(&tenant.id, &held.id, None).await.unwrap(),
        PurgeOutcome::Held
    );
    assert!(matches!(
        store.purge(&tenant.id, &free.id, None).await.unwrap(),
        PurgeOutcome::Purged { .. }
    ));
    let lift = f.audit("hold.lifted", json!({}));
    t.set_hold(&tenant.id, &on_case, false, &lift)
        .await
        .unwrap();
    for case in [&held, &later] {
        assert!(matches!(
            store.purge(&tenant.id, &case.id, None).await.unwrap(),
            PurgeOutcome::Purged { .. }
        ));
    }
    let page = t.list_audit(&tenant.id, None, 10).await.unwrap();
    let actions: Vec<&str> = page.items.iter().map(|r| r.action.as_str()).collect();
    assert_eq!(
        actions.iter().filter(|a| **a == "hold.placed").count(),
        2,
        "{actions:?}"
    );
    assert_eq!(
        actions.iter().filter(|a| **a == "hold.lifted").count(),
        2,
        "{actions:?}"
    );
    let unknown = f.tenant();
    let record = f.audit("hold.placed", json!({}));
    assert!(matches!(
        t.set_hold(&unknown, &on_case, true, &record).await.unwrap(),
        TransitionOutcome::Conflict { .. }
    ));
}

/// F-2, F-3: a person's passkeys are theirs for one tenant; an id is enrolled once; a use
/// moves the counter only from the value it read (two concurrent uses of one reading:
/// exactly one wins), and not on a revoked passkey; the person's erasure removes them all.
pub async fn f2_passkeys_are_per_person_and_a_use_moves_the_counter_once(s: Arc<dyn Subject>) {
    let p = Passkeys::new(s);
    p.enrolment_is_per_person_and_never_replaces().await;
    let used = p.two_uses_of_one_reading_move_the_counter_once().await;
    p.a_revoked_passkey_is_never_used(used).await;
    p.each_change_is_audited_and_erasure_is_one_tenants().await;
}

/// F-2's contract scenario: two tenants, two people, passkeys enrolled at one time.
struct Passkeys {
    s: Arc<dyn Subject>,
    f: Fixture,
    tenant: TenantId,
    other_tenant: TenantId,
    alice: UserId,
    bob: UserId,
    enrolled: Timestamp,
}

impl Passkeys {
    fn new(s: Arc<dyn Subject>) -> Self {
        let f = Fixture::default();
        let (tenant, other_tenant) = (f.tenant(), f.tenant());
        let enrolled = f.now();
        Self {
            s,
            f,
            tenant,
            other_tenant,
            alice: UserId::parse("u_alice").unwrap(),
            bob: UserId::parse("u_bob").unwrap(),
            enrolled,
        }
    }

    fn store(&self) -> &dyn countersign_domain::ports::Passkeys {
        self.s.passkeys()
    }

    /// Each change comes with its audit record; a refused one writes neither.
    fn record(&self, action: &str, id: &str) -> AuditEntry {
        AuditEntry {
            id: self.f.audit_id(),
            at: self.f.now(),
            actor: "person".into(),
            action: action.into(),
            changes: json!({"person": "u_alice", "credentialId": id}),
        }
    }

    fn key(&self, id: &str, x: u8) -> countersign_domain::ports::Passkey {
        countersign_domain::ports::Passkey {
            id: id.into(),
            key: countersign_domain::stepup::CredentialKey::Ed25519 { x: [x; 32] },
            sign_count: 3,
            transports: vec!["internal".into(), "hybrid".into()],
            created_at: self.enrolled,
            last_used_at: None,
        }
    }

    /// Whether alice's (or `tenant`'s alice's) passkey `id` was enrolled.
    async fn enrol(&self, tenant: &TenantId, id: &str, x: u8) -> bool {
        let record = self.record("passkey.enrolled", id);
        let key = self.key(id, x);
        self.store()
            .add_passkey(tenant, &self.alice, &key, &record)
            .await
            .unwrap()
    }

    async fn revoke(&self, id: &str) -> bool {
        let record = self.record("passkey.revoked", id);
        self.store()
            .revoke_passkey(&self.tenant, &self.alice, id, &record)
            .await
            .unwrap()
    }

    async fn enrolment_is_per_person_and_never_replaces(&self) {
        let (store, tenant) = (self.store(), &self.tenant);
        assert!(self.enrol(tenant, "cred-a", 1).await);
        assert!(
            !self.enrol(tenant, "cred-a", 2).await,
            "an enrolled id is never replaced"
        );
        assert!(self.enrol(tenant, "cred-b", 3).await);
        let mine = store.passkeys(tenant, &self.alice).await.unwrap();
        assert_eq!(
            mine.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(),
            ["cred-a", "cred-b"]
        );
        assert_eq!(mine[0], self.key("cred-a", 1), "stored as enrolled");
        assert!(store.passkeys(tenant, &self.bob).await.unwrap().is_empty());
        assert_eq!(
            store.passkey_holders(tenant).await.unwrap(),
            1,
            "people, not passkeys"
        );
        assert!(
            store
                .passkeys(&self.other_tenant, &self.alice)
                .await
                .unwrap()
                .is_empty()
        );
    }

    /// Two uses that both read counter 3: one moves it. Returns the passkey as used.
    async fn two_uses_of_one_reading_move_the_counter_once(
        &self,
    ) -> countersign_domain::ports::Passkey {
        let (store, tenant, alice) = (self.store(), &self.tenant, &self.alice);
        let now = self.f.now();
        let (a, b) = tokio::join!(
            store.record_passkey_use(tenant, alice, "cred-a", 3, 4, now),
            store.record_passkey_use(tenant, alice, "cred-a", 3, 5, now),
        );
        assert!(
            a.unwrap() ^ b.unwrap(),
            "exactly one use of one reading wins"
        );
        let used = store.passkeys(tenant, alice).await.unwrap()[0].clone();
        assert!(matches!(used.sign_count, 4 | 5) && used.last_used_at == Some(now));
        assert!(
            !store
                .record_passkey_use(tenant, &self.bob, "cred-a", used.sign_count, 9, now)
                .await
                .unwrap()
        );
        used
    }

    async fn a_revoked_passkey_is_never_used(&self, used: countersign_domain::ports::Passkey) {
        let now = used.last_used_at.unwrap_or(self.enrolled);
        assert!(self.revoke("cred-a").await);
        assert!(!self.revoke("cred-a").await);
        assert!(
            !self
                .store()
                .record_passkey_use(&self.tenant, &self.alice, "cred-a", used.sign_count, 9, now)
                .await
                .unwrap(),
            "a revoked passkey is never used"
        );
    }

    async fn each_change_is_audited_and_erasure_is_one_tenants(&self) {
        let (store, tenant, other) = (self.store(), &self.tenant, &self.other_tenant);
        assert!(self.enrol(other, "cred-c", 4).await);
        assert_eq!(store.passkey_holders(tenant).await.unwrap(), 1);
        assert_eq!(store.passkey_holders(other).await.unwrap(), 1);
        let page = self.s.tenants().list_audit(tenant, None, 10).await.unwrap();
        let actions: Vec<&str> = page.items.iter().map(|e| e.action.as_str()).collect();
        assert_eq!(
            actions,
            ["passkey.revoked", "passkey.enrolled", "passkey.enrolled"],
            "one record per change, newest first; none for a refused one"
        );
        assert_eq!(store.forget_passkeys(tenant, &self.alice).await.unwrap(), 1);
        assert!(
            store
                .passkeys(tenant, &self.alice)
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(store.passkey_holders(tenant).await.unwrap(), 0);
        assert_eq!(
            store.passkeys(other, &self.alice).await.unwrap().len(),
            1,
            "one tenant's erasure only"
        );
    }
}
