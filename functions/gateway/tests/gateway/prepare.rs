//! X-1 (decision 0050): `prepare_action` through the gateway, for the token's person and
//! conversation: the same rules as in a chat turn (A-2, A-13 …, C-6), the proposal stored
//! in the token's conversation (where the person's widget shows it and the person alone
//! confirms it), one pending proposal per conversation whoever prepared it, and every
//! call that reaches the tenant's server spent from the tenant's budget.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::*;

use countersign_aws::system::SystemClock;
use countersign_domain::config::{UrlPolicy, validate_mcp_config};
use countersign_domain::conversation::{Case, CaseStatus, MessageKind};
use countersign_domain::ids::{ActionId, TenantId};
use countersign_domain::ports::{Clock, Conversations, StoredMcpConfig};
use countersign_domain::proposal::ProposalState;
use countersign_domain::texts::Language;
use countersign_gateway_fn::{Gateway, TokenKey, router};
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
                    proposals: store.clone(),
                    integration: integration.clone(),
                    signer: signer.clone(),
                    clock: Arc::new(SystemClock),
                    ids: Arc::new(SeqIds::new(clock)),
                    passkeys: Some(store.clone() as Arc<dyn countersign_domain::ports::Passkeys>),
                },
            })),
        },
        token_key: TokenKey::fixed(key()),
        clock: Arc::new(SystemClock),
        allowed_hosts: vec![],
        integration: Some(integration),
        links: Some(store.clone()),
        public_url: None,
        page_url: None,
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
async fn x1_b2_prepare_action_through_the_gateway_stores_the_proposal_in_the_tokens_conversation() {
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
        // Issue 50: stored as prepared outside the chat (the card's attribution).
        let stored = e
            .store
            .proposal(
                &g.principal.tenant,
                &g.case,
                &ActionId::parse(&action).unwrap(),
            )
            .unwrap();
        assert!(stored.prepared_outside, "{version}");
        // The provider was asked for this person, with the arguments given.
        let calls = e.provider.calls_of("prepare_action");
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].arguments["arguments"]["sessionId"], "ses_a1");
        // B-2: in the conversation's language (`X-MCP-Language`), which the client's
        // token does not carry: the preparation reads it with the conversation.
        assert_eq!(calls[0].language.as_deref(), Some("en"));
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

/// X-1 (bad input): a token whose conversation does not exist (or is another person's)
/// prepares nothing: a typed error, nothing reaches the tenant's server, nothing stored.
#[tokio::test]
async fn x1_a_token_without_its_conversation_prepares_nothing() {
    let e = env(None).await;
    e.answer_prepare("act_nowhere");
    let mut g = grant();
    g.case = countersign_domain::ids::CaseId::from_ulid_text("01JDZ6Y5X1QW9T3V7N2K4M8P0Z").unwrap();
    let mut other = grant();
    other.principal.user = countersign_domain::ids::UserId::parse("someone-else").unwrap();
    for grant in [g, other] {
        let token =
            countersign_tools::access::mint(&key(), &grant, SystemClock.now(), 300).unwrap();
        let call = rpc(7, "tools/call", prepare_params(Some(stateless_meta(true))));
        let (status, body) = post_to(e.app.clone(), Some(&token), "2026-07-28", call).await;
        assert_eq!(status, 200, "{body}");
        let envelope = &body["result"]["structuredContent"];
        assert_eq!(envelope["ok"], false, "{body}");
        assert!(envelope["error"]["code"].is_string(), "{body}");
        assert!(body["result"].get("inputRequests").is_none());
    }
    assert!(e.provider.calls_of("prepare_action").is_empty());
    assert_eq!(e.state("act_nowhere").await, None);
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

// ---------------------------------------------------------------------------------------
// X-2, X-4 (decision 0051): the answer by era, and nothing the client sends confirms.

const ARGS: &str = r#"{"sessionId": "ses_a1", "carId": "car_a2"}"#;

fn prepare_params(meta: Option<Value>) -> Value {
    let mut p = json!({"name": "prepare_action", "arguments": {"operation": OPERATION, "arguments": serde_json::from_str::<Value>(ARGS).unwrap()}});
    if let Some(meta) = meta {
        p["_meta"] = meta;
    }
    p
}

fn stateless_meta(url_elicitation: bool) -> Value {
    let caps = if url_elicitation {
        json!({"elicitation": {"url": {}}})
    } else {
        json!({"elicitation": {"form": {}}})
    };
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
    })
}

impl Env {
    /// A 2026-07-28 `tools/call` of `prepare_action` (a retry when `state` is given, with
    /// the client's `accept`).
    async fn call_2026(&self, state: Option<&str>) -> Value {
        let mut params = prepare_params(Some(stateless_meta(true)));
        if let Some(state) = state {
            params["requestState"] = state.into();
            params["inputResponses"] = json!({"countersign-confirmation": {"action": "accept"}});
        }
        let (status, body) = post_to(
            self.app.clone(),
            Some(&token()),
            "2026-07-28",
            rpc(9, "tools/call", params),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        body
    }

    fn executed(&self) -> usize {
        self.provider.calls_of("execute_action").len()
    }

    async fn presented(&self, action: &str) -> countersign_domain::ids::MessageId {
        let g = grant();
        self.store
            .proposal(
                &g.principal.tenant,
                &g.case,
                &ActionId::parse(action).unwrap(),
            )
            .unwrap()
            .presented
            .message_id
    }
}

/// X-2: a 2026-07-28 client that declared URL elicitation gets `input_required`: a
/// URL-mode elicitation of the confirmation page (the summary as its message) and a
/// request state. X-4: its retry with an `accept`, before the person used the page,
/// executes nothing and asks again with a fresh state; the spent state is refused when
/// replayed; an altered one is refused.
#[tokio::test]
async fn x2_x4_the_stateless_era_gets_input_required_and_nothing_it_sends_confirms() {
    let e = env(None).await;
    e.answer_prepare("act_url");
    let first = e.call_2026(None).await;
    let r = &first["result"];
    assert_eq!(r["resultType"], "input_required", "{first}");
    let params = &r["inputRequests"]["countersign-confirmation"]["params"];
    assert_eq!(params["mode"], "url");
    assert_eq!(params["message"], SUMMARY);
    assert_eq!(params["elicitationId"], "act_url");
    let url = params["url"].as_str().unwrap();
    assert!(url.starts_with("http://127.0.0.1/confirm/"), "{url}");
    assert!(!url.contains("driver-42"), "no personal data in the URL");
    let state = r["requestState"].as_str().unwrap().to_owned();

    let again = e.call_2026(Some(&state)).await;
    assert_eq!(again["result"]["resultType"], "input_required", "{again}");
    let fresh = again["result"]["requestState"].as_str().unwrap().to_owned();
    assert_ne!(fresh, state);
    assert_eq!(
        e.state("act_url").await,
        Some(ProposalState::PendingConfirmation)
    );

    let replayed = e.call_2026(Some(&state)).await;
    let sc = &replayed["result"]["structuredContent"];
    assert_eq!(sc["error"]["code"], "INVALID_REQUEST_STATE", "{replayed}");
    assert_eq!(replayed["result"]["isError"], true);

    let mut forged = fresh.clone();
    forged.replace_range(forged.len() - 4.., "AAAA");
    let refused = e.call_2026(Some(&forged)).await;
    assert_eq!(
        refused["result"]["structuredContent"]["error"]["code"],
        "INVALID_REQUEST_STATE"
    );
    assert_eq!(
        e.state("act_url").await,
        Some(ProposalState::PendingConfirmation)
    );
    assert_eq!(e.executed(), 0, "nothing the client sent executed anything");

    // The person confirmed on the page and it ran (the page's path is the chat's; its own
    // tests hold it): the retry returns the execution's result.
    let g = grant();
    let id = ActionId::parse("act_url").unwrap();
    e.store
        .force_state(&g.principal.tenant, &g.case, &id, ProposalState::Completed);
    let presented = e.presented("act_url").await;
    let result = countersign_domain::conversation::Message {
        id: countersign_domain::ids::MessageId::from_ulid_text("7ZZZZZZZZZZZZZZZZZZZZZZZZZ")
            .unwrap(),
        case: g.case.clone(),
        role: countersign_domain::conversation::Role::Assistant,
        kind: MessageKind::Result,
        content: "Done: session ses_a1 now uses car GR86.".into(),
        reply_to: Some(presented),
        created_at: SystemClock.now(),
    };
    e.store
        .append_message(&g.principal.tenant, &result)
        .await
        .unwrap();
    let done = e.call_2026(Some(&fresh)).await;
    let data = &done["result"]["structuredContent"]["data"];
    assert_eq!(data["status"], "completed", "{done}");
    assert_eq!(data["result"], "Done: session ses_a1 now uses car GR86.");
    assert_eq!(data["operation"], OPERATION);
}

/// X-2 (bad input): a client retrying with its state a thousand times is bounded per
/// conversation (a typed, retryable refusal with when to come back), executes nothing,
/// and the proposal still waits for the person.
#[tokio::test]
async fn x2_a_client_retrying_a_thousand_times_is_bounded() {
    let e = env(Some(1000)).await;
    e.answer_prepare("act_hammer");
    let first = e.call_2026(None).await;
    let mut state = first["result"]["requestState"].as_str().unwrap().to_owned();
    // At most RETRIES_PER_MINUTE in a window; the loop may straddle one window's end.
    let limit = countersign_gateway_fn::confirm::RETRIES_PER_MINUTE as usize;
    let mut refusal = None;
    for _ in 0..=2 * limit {
        let answer = e.call_2026(Some(&state)).await;
        match answer["result"]["requestState"].as_str() {
            Some(fresh) => state = fresh.to_owned(),
            None => {
                refusal = Some(answer);
                break;
            }
        }
    }
    let refusal = refusal.expect("the retries were never bounded");
    let error = &refusal["result"]["structuredContent"]["error"];
    assert_eq!(error["code"], "SERVICE_UNAVAILABLE", "{refusal}");
    assert_eq!(error["retryable"], true);
    assert!(error["details"]["retryAfterSeconds"].as_u64().unwrap() <= 60);
    assert_eq!(e.executed(), 0);
    assert_eq!(
        e.state("act_hammer").await,
        Some(ProposalState::PendingConfirmation)
    );
}

/// X-2: after the person cancels (or the proposal expires), the retry is a typed error and
/// nothing ran.
#[tokio::test]
async fn x2_a_cancelled_proposal_answers_not_confirmed() {
    let e = env(None).await;
    e.answer_prepare("act_cancel");
    let first = e.call_2026(None).await;
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let g = grant();
    let id = ActionId::parse("act_cancel").unwrap();
    e.store
        .force_state(&g.principal.tenant, &g.case, &id, ProposalState::Cancelled);
    let answer = e.call_2026(Some(&state)).await;
    let sc = &answer["result"]["structuredContent"];
    assert_eq!(sc["error"]["code"], "NOT_CONFIRMED", "{answer}");
    assert_eq!(sc["error"]["details"]["state"], "cancelled");
    assert_eq!(e.executed(), 0);
}

/// X-2: a request state is bound to the token's conversation: another person's token
/// cannot use it.
#[tokio::test]
async fn x4_a_state_is_refused_under_another_persons_token() {
    let e = env(None).await;
    e.answer_prepare("act_bound");
    let first = e.call_2026(None).await;
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let mut other = grant();
    other.principal.user = countersign_domain::ids::UserId::parse("someone-else").unwrap();
    let token = countersign_tools::access::mint(&key(), &other, SystemClock.now(), 300).unwrap();
    let mut params = prepare_params(Some(stateless_meta(true)));
    params["requestState"] = state.into();
    let (_, body) = post_to(
        e.app.clone(),
        Some(&token),
        "2026-07-28",
        rpc(3, "tools/call", params),
    )
    .await;
    assert_eq!(
        body["result"]["structuredContent"]["error"]["code"], "INVALID_REQUEST_STATE",
        "{body}"
    );
    assert_eq!(
        e.state("act_bound").await,
        Some(ProposalState::PendingConfirmation)
    );
}

/// X-2: a 2025-11-25 client that declared URL elicitation at `initialize` gets the
/// URL-elicitation-required error (-32042) with the page's URL; one that did not, and a
/// 2025-06-18 or 2026-07-28 client without URL elicitation, gets an ordinary result with
/// the link and how to follow it. Never an input request a client did not declare.
#[tokio::test]
async fn x2_each_era_is_sent_to_the_page_in_its_own_form() {
    let e = env(None).await;
    // One token for the whole client, as a client holds it: what it declared is kept
    // per token, and two tokens minted a second apart are two clients.
    let token = token();
    let init = |caps: Value| {
        rpc(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": caps,
            "clientInfo": {"name": "t", "version": "1"}}),
        )
    };
    let (_, _) = post_to(
        e.app.clone(),
        Some(&token),
        "2025-11-25",
        init(json!({"elicitation": {"url": {}}})),
    )
    .await;
    e.answer_prepare("act_legacy");
    let (_, body) = post_to(
        e.app.clone(),
        Some(&token),
        "2025-11-25",
        rpc(2, "tools/call", prepare_params(None)),
    )
    .await;
    assert_eq!(body["error"]["code"], -32042, "{body}");
    let elicitation = &body["error"]["data"]["elicitations"][0];
    assert_eq!(elicitation["mode"], "url");
    // Its id is the action's, for `action_status` (an SDK may keep only the elicitations).
    assert_eq!(elicitation["elicitationId"], "act_legacy");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains(elicitation["url"].as_str().unwrap())
    );
    assert_eq!(
        e.state("act_legacy").await,
        Some(ProposalState::PendingConfirmation)
    );

    // The same token's client re-initialises without URL elicitation: a plain result.
    let (_, _) = post_to(e.app.clone(), Some(&token), "2025-11-25", init(json!({}))).await;
    for (n, version) in ["2025-11-25", "2025-06-18"].iter().enumerate() {
        e.answer_prepare(&format!("act_plain{n}"));
        let (_, body) = post_to(
            e.app.clone(),
            Some(&token),
            version,
            rpc(4, "tools/call", prepare_params(None)),
        )
        .await;
        let data = &body["result"]["structuredContent"]["data"];
        assert_eq!(data["status"], "pending_confirmation", "{version}: {body}");
        let url = data["confirmationUrl"].as_str().unwrap();
        assert!(url.starts_with("http://127.0.0.1/confirm/"));
        assert!(data["next"].as_str().unwrap().contains("action_status"));
        assert_eq!(data["summary"], SUMMARY);
    }
    e.answer_prepare("act_form");
    let (_, body) = post_to(
        e.app.clone(),
        Some(&token),
        "2026-07-28",
        rpc(5, "tools/call", prepare_params(Some(stateless_meta(false)))),
    )
    .await;
    assert!(body["result"].get("inputRequests").is_none(), "{body}");
    assert!(
        body["result"]["structuredContent"]["data"]["confirmationUrl"].is_string(),
        "{body}"
    );
    assert_eq!(e.executed(), 0);
}

/// G-8: a retry with a `requestState` is a call too — measured with what it answered,
/// even when it never reaches the registry (here refused: a state this server never
/// issued).
#[tokio::test]
async fn g8_a_retry_is_measured_with_what_it_answered() {
    use metrics_util::debugging::DebuggingRecorder;
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _guard = metrics::set_default_local_recorder(&recorder);
    let e = env(None).await;
    let refused = e.call_2026(Some("not-a-state-this-server-issued")).await;
    assert_eq!(
        refused["result"]["structuredContent"]["error"]["code"], "INVALID_REQUEST_STATE",
        "{refused}"
    );
    let measured = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .any(|(k, _, _, _)| {
            let key = k.key();
            let label = |name: &str| {
                key.labels()
                    .find(|l| l.key() == name)
                    .map(|l| l.value().to_owned())
            };
            key.name() == "mcp_tool_duration_seconds"
                && label("tool").as_deref() == Some("prepare_action")
                && label("error_type").as_deref() == Some("INVALID_REQUEST_STATE")
        });
    assert!(
        measured,
        "the refused retry is in mcp_tool_duration_seconds"
    );
}
