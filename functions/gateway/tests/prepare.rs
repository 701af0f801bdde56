//! X-1 (decision 0050): `prepare_action` through the gateway, for the token's person and
//! conversation: the same rules as in a chat turn (A-2, A-13 …, C-6), the proposal stored
//! in the token's conversation (where the person's widget shows it and the person alone
//! confirms it), one pending proposal per conversation whoever prepared it, and every
//! call that reaches the tenant's server spent from the tenant's budget.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;

use countersign_aws::system::SystemClock;
use countersign_domain::config::{UrlPolicy, validate_mcp_config};
use countersign_domain::conversation::{Case, CaseStatus, MessageKind};
use countersign_domain::ids::{ActionId, TenantId};
use countersign_domain::ports::{Clock, Conversations, StoredMcpConfig};
use countersign_domain::proposal::ProposalState;
use countersign_domain::texts::Language;
use countersign_gateway::{Gateway, TokenKey, router};
use countersign_testkit::{
    FakeSigner, MemoryStore, Reply, ScriptedProvider, SeqIds, TestClock, prepare_answer,
};
use countersign_tools::builtins::{self, Services};
use countersign_tools::integration::IntegrationService;
use countersign_tools::prepare::{ConnectingPreparer, Preparation};
use serde_json::{Value, json};
use std::sync::Arc;

const OPERATION: &str = "reassign_session_car";
const SUMMARY: &str = "Move session ses_a1 from car \"Civic\" to car \"GR86\".";

struct Env {
    store: Arc<MemoryStore>,
    provider: Arc<ScriptedProvider>,
    signer: Arc<FakeSigner>,
    app: axum::Router,
}

async fn env(budget: Option<u32>) -> Env {
    let store = Arc::new(MemoryStore::default());
    let tenant = TenantId::from_ulid_text(ULID).unwrap();
    let config = validate_mcp_config(
        &json!({
            "serverUrl": "https://mcp.trackshare.example.com/mcp",
            "serviceToken": "svc-token",
            "allowedTools": ["get_user_uploads"],
            "actionPolicy": {"contractVersion": 1, "enabled": true, "operations": [OPERATION]}
        }),
        UrlPolicy::default(),
    )
    .unwrap();
    store.seed_mcp_config(
        &tenant,
        StoredMcpConfig {
            config,
            version: 1,
            actions_version: 1,
            secret_version: "v1".into(),
        },
    );
    let g = grant();
    let case = Case {
        id: g.case.clone(),
        tenant: tenant.clone(),
        user: g.principal.user.clone(),
        status: CaseStatus::Open,
        created_at: SystemClock.now(),
    };
    store.create_case(&case, Language::En).await.unwrap();
    let provider = Arc::new(ScriptedProvider::default());
    let signer = Arc::new(FakeSigner::default());
    let integration = Arc::new(IntegrationService::new(
        store.clone(),
        Arc::new(Secrets),
        provider.clone(),
    ));
    let clock = Arc::new(TestClock::default());
    let gateway = Gateway {
        registry: builtins::registry().unwrap(),
        services: Services {
            conversations: store.clone(),
            tenants: store.clone(),
            actions: Some(Arc::new(ConnectingPreparer {
                preparation: Preparation {
                    conversations: store.clone(),
                    integration: integration.clone(),
                    signer: signer.clone(),
                    clock: Arc::new(SystemClock),
                    ids: Arc::new(SeqIds::new(clock)),
                },
            })),
        },
        token_key: TokenKey::fixed(key()),
        clock: Arc::new(SystemClock),
        allowed_hosts: vec![],
        integration: Some(integration),
        budget: budget.map(|b| {
            let limiter: Arc<dyn countersign_domain::ports::RateLimiter> = store.clone();
            (limiter, b)
        }),
    };
    Env {
        store,
        provider,
        signer,
        app: router(gateway),
    }
}

impl Env {
    fn answer_prepare(&self, action: &str) {
        let expires = SystemClock.now().plus_seconds(240).to_rfc3339();
        self.provider.answer(
            "prepare_action",
            Reply::Result(prepare_answer(action, OPERATION, SUMMARY, &expires)),
        );
    }

    async fn prepare(&self, version: &str, operation: &str) -> Value {
        let call = rpc(
            7,
            "tools/call",
            json!({"name": "prepare_action", "arguments": {"operation": operation, "arguments": {"sessionId": "ses_a1", "carId": "car_a2"}}}),
        );
        let (status, body) = post_to(self.app.clone(), Some(&token()), version, call).await;
        assert_eq!(status, 200, "{body}");
        body["result"]["structuredContent"].clone()
    }

    async fn state(&self, action: &str) -> Option<ProposalState> {
        let g = grant();
        let view = self
            .store
            .load(&g.principal.tenant, &g.case)
            .await
            .unwrap()
            .unwrap();
        let id = ActionId::parse(action).unwrap();
        match view.active {
            Some(p) if p.action_id == id => Some(p.state),
            _ => self
                .store
                .proposal(&g.principal.tenant, &g.case, &id)
                .map(|p| p.state),
        }
    }
}

/// Listed with `readOnlyHint: false` in every era; a call prepares in the token's
/// conversation: the proposal is pending, its presentation (the summary, byte for byte)
/// is the conversation's newest message, and the client is told the person confirms.
#[tokio::test]
async fn x1_prepare_action_through_the_gateway_stores_the_proposal_in_the_tokens_conversation() {
    for (n, version) in ["2025-06-18", "2025-11-25", "2026-07-28"]
        .iter()
        .enumerate()
    {
        let e = env(None).await;
        let (_, listed) = post_to(
            e.app.clone(),
            Some(&token()),
            version,
            rpc(1, "tools/list", json!({})),
        )
        .await;
        let prepare = listed["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "prepare_action")
            .cloned()
            .unwrap_or_else(|| panic!("{version}: listed: {listed}"));
        assert_eq!(prepare["annotations"]["readOnlyHint"], false);
        let action = format!("act_gw{n}");
        e.answer_prepare(&action);
        let answer = e.prepare(version, OPERATION).await;
        assert_eq!(answer["ok"], true, "{version}: {answer}");
        assert_eq!(answer["data"]["actionId"], action.as_str());
        assert_eq!(answer["data"]["status"], "pending_confirmation");
        assert_eq!(
            e.state(&action).await,
            Some(ProposalState::PendingConfirmation)
        );
        let g = grant();
        let newest = e
            .store
            .all_messages(&g.principal.tenant, &g.case)
            .into_iter()
            .last()
            .unwrap();
        assert_eq!(newest.kind, MessageKind::Proposal);
        assert_eq!(newest.content, SUMMARY);
        // The provider was asked for this person, with the arguments given.
        let calls = e.provider.calls_of("prepare_action");
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].arguments["arguments"]["sessionId"], "ses_a1");
    }
}

/// One pending proposal per conversation across the chat and the gateway: a second
/// preparation supersedes the first, which can never be confirmed.
#[tokio::test]
async fn x1_one_pending_proposal_per_conversation_whoever_prepares_it() {
    let e = env(None).await;
    e.answer_prepare("act_first");
    assert_eq!(e.prepare("2025-11-25", OPERATION).await["ok"], true);
    e.answer_prepare("act_second");
    assert_eq!(e.prepare("2025-11-25", OPERATION).await["ok"], true);
    assert_eq!(e.state("act_first").await, Some(ProposalState::Superseded));
    assert_eq!(
        e.state("act_second").await,
        Some(ProposalState::PendingConfirmation)
    );
}

/// The gates hold through the gateway: an operation not enabled, a platform that cannot
/// sign (C-6), a provider's answer outside the contract: each a typed error, nothing
/// stored, nothing presented.
#[tokio::test]
async fn x1_the_preparation_rules_hold_through_the_gateway() {
    let e = env(None).await;
    let refused = e.prepare("2025-11-25", "delete_everything").await;
    assert_eq!(
        refused["error"]["code"], "OPERATION_NOT_ENABLED",
        "{refused}"
    );
    e.signer.set_absent(true);
    let unsigned = e.prepare("2025-11-25", OPERATION).await;
    assert_eq!(
        unsigned["error"]["code"], "ACTION_SIGNING_UNAVAILABLE",
        "{unsigned}"
    );
    e.signer.set_absent(false);
    e.provider.answer(
        "prepare_action",
        Reply::Result(json!({"content": [{"type": "text", "text": "ok"}], "structuredContent": {"actionId": "act_bad"}})),
    );
    let broken = e.prepare("2025-11-25", OPERATION).await;
    assert_eq!(
        broken["error"]["code"], "PROVIDER_CONTRACT_VIOLATION",
        "{broken}"
    );
    let g = grant();
    let view = e
        .store
        .load(&g.principal.tenant, &g.case)
        .await
        .unwrap()
        .unwrap();
    assert!(view.active.is_none(), "nothing stored");
    assert!(
        e.store
            .all_messages(&g.principal.tenant, &g.case)
            .iter()
            .all(|m| m.kind != MessageKind::Proposal),
        "nothing presented"
    );
    // Only the broken preparation reached the provider: the others stopped before it.
    assert_eq!(e.provider.calls_of("prepare_action").len(), 1);
}

/// A client retrying a thousand times is bounded by the tenant's budget: preparations
/// reach the tenant's server, so they spend it; beyond it, a retryable refusal that
/// reaches nobody.
#[tokio::test]
async fn x1_preparations_spend_the_tenants_budget() {
    let e = env(Some(2)).await;
    for n in 0..2 {
        e.answer_prepare(&format!("act_b{n}"));
        assert_eq!(e.prepare("2025-11-25", OPERATION).await["ok"], true);
    }
    let limited = e.prepare("2025-11-25", OPERATION).await;
    assert_eq!(limited["error"]["code"], "SERVICE_UNAVAILABLE", "{limited}");
    assert_eq!(limited["error"]["retryable"], true);
    assert_eq!(e.provider.calls_of("prepare_action").len(), 2);
}
