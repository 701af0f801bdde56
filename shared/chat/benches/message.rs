//! CPU per message through the messages use cases on in-memory ports (no AWS, no
//! network): a consultation turn (the scripted model calls an allowlisted tool, then
//! answers), and a whole countersigned write (prepare, present, confirm, sign, execute,
//! settle). What is measured is the platform's own work per message: decisions, the
//! registry's dispatch and envelopes, contract parsing, proof assembly.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use countersign_chat::model::ScriptedModel;
use countersign_chat::{Chat, ChatParts};
use countersign_domain::config::{
    ActionPolicy, McpConfig, ServerUrl, UrlPolicy, service_token_secret_name,
};
use countersign_domain::conversation::{MessageKind, Principal};
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::{OperationName, ToolName, UserId};
use countersign_domain::ports::{
    AuditEntry, Clock, Ids, McpSettings, SecretStore, StoredMcpConfig, Tenant, Tenants,
};
use countersign_domain::secret::SecretString;
use countersign_domain::texts::Language;
use countersign_testkit::{
    FakeSigner, MemorySecrets, MemoryStore, Reply, ScriptedProvider, SeqIds, TestClock,
    action_answer, prepare_answer, tool,
};
use countersign_tools::integration::IntegrationService;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

struct Bench {
    chat: Chat,
    who: Principal,
}

/// TrackShare's answers: a consultation, and writes with a fresh action id each time.
fn provider(clock: Arc<TestClock>) -> Arc<ScriptedProvider> {
    let provider = Arc::new(ScriptedProvider::default());
    provider.publish(vec![tool("get_user_sessions")]);
    provider.answer_always(
        "get_user_sessions",
        Reply::Result(
            json!({"content": [{"type": "text", "text": "ses_a1 (Civic), ses_a2 (GR86)"}]}),
        ),
    );
    let next = Arc::new(AtomicU64::new(1));
    let prepare_clock = clock;
    provider.answer_with("prepare_action", move |_| {
        let id = format!("act_{}", next.fetch_add(1, Ordering::SeqCst));
        let expires = prepare_clock.now().plus_seconds(240).to_rfc3339();
        Reply::Result(prepare_answer(
            &id,
            "reassign_session_car",
            "Move session ses_a1 to car car_a2.",
            &expires,
        ))
    });
    provider.answer_with("execute_action", |call| {
        let id = call.arguments["actionId"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        Reply::Result(action_answer(
            &id,
            "completed",
            Some("The session was moved."),
        ))
    });
    provider
}

/// A tenant whose integration allows the consultation and `reassign_session_car`.
async fn tenant_with_integration(
    store: &MemoryStore,
    secrets: &MemorySecrets,
    ids: &SeqIds,
    clock: &TestClock,
) -> countersign_domain::ids::TenantId {
    let tenant = ids.tenant_id();
    store
        .create_tenant(&Tenant::new(
            tenant.clone(),
            "TrackShare",
            Sha256Hex::digest("tsk"),
            Language::En,
            clock.now(),
        ))
        .await
        .unwrap();
    let secret_version = secrets
        .put(
            &service_token_secret_name(&tenant),
            &SecretString::new("svc"),
        )
        .await
        .unwrap();
    let config = StoredMcpConfig {
        config: McpConfig {
            server_url: ServerUrl::parse("https://provider.example.com/mcp", UrlPolicy::default())
                .unwrap(),
            service_token: SecretString::new(""),
            allowed_tools: vec![ToolName::parse("get_user_sessions").unwrap()],
            action_policy: ActionPolicy {
                enabled: true,
                operations: vec![OperationName::parse("reassign_session_car").unwrap()],
                step_up: Default::default(),
                step_up_fallback: false,
            },
            audience: None,
            approved: Default::default(),
        },
        version: 1,
        actions_version: 1,
        secret_version,
    };
    let audit = AuditEntry {
        id: ids.audit_id(),
        at: clock.now(),
        actor: "operator".into(),
        action: "mcp.put".into(),
        changes: json!({}),
    };
    store
        .put_mcp_config(&tenant, &config, None, &audit)
        .await
        .unwrap();
    tenant
}

async fn setup() -> Bench {
    let clock = Arc::new(TestClock::default());
    let ids = Arc::new(SeqIds::new(clock.clone()));
    let store = Arc::new(MemoryStore::default());
    let secrets = Arc::new(MemorySecrets::default());
    let provider = provider(clock.clone());
    let tenant = tenant_with_integration(&store, &secrets, &ids, &clock).await;
    let chat = Chat::new(ChatParts {
        conversations: store.clone(),
        proposals: store.clone(),
        unsettled: store.clone(),
        tenants: store.clone(),
        settings: store.clone(),
        integration: Arc::new(IntegrationService::new(store.clone(), secrets, provider)),
        signer: Arc::new(FakeSigner::default()),
        model: Arc::new(ScriptedModel),
        registry: Arc::new(countersign_tools::builtins::registry().unwrap()),
        clock: clock.clone(),
        ids,
        issuer: "https://support.example.com/mcp-actions".into(),
        stuck_after: Duration::from_secs(30),
    });
    let who = Principal {
        tenant,
        user: UserId::parse("u_alice").unwrap(),
    };
    Bench { chat, who }
}

fn messages(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let b = rt.block_on(setup());
    let mut group = c.benchmark_group("message");
    group.bench_function("consultation_turn", |bench| {
        // A fresh case every 20 messages keeps the history (and the map) small.
        let mut case = rt.block_on(b.chat.create_case(&b.who)).unwrap().id;
        let mut n = 0u32;
        bench.iter(|| {
            n += 1;
            if n.is_multiple_of(20) {
                case = rt.block_on(b.chat.create_case(&b.who)).unwrap().id;
            }
            let (out, _) = rt
                .block_on(b.chat.post(&b.who, &case, "show my sessions", None))
                .unwrap();
            assert_eq!(out.len(), 2);
        });
    });
    group.bench_function("countersigned_write_prepare_and_confirm", |bench| {
        bench.iter(|| {
            let case = rt.block_on(b.chat.create_case(&b.who)).unwrap().id;
            let (out, _) = rt
                .block_on(b.chat.post(&b.who, &case, "move ses_a1 to car_a2", None))
                .unwrap();
            let presented = out
                .iter()
                .find(|m| m.kind == MessageKind::Proposal)
                .unwrap();
            let (out, _) = rt
                .block_on(
                    b.chat
                        .post(&b.who, &case, "confirm", Some(presented.id.clone())),
                )
                .unwrap();
            assert_eq!(out.last().unwrap().kind, MessageKind::Result);
        });
    });
    group.finish();
}

criterion_group!(benches, messages);
criterion_main!(benches);
