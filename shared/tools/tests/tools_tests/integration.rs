//! The integration service on in-memory ports: configuration, token cache by version,
//! the proposal's own integration (C-8), the allowlist and routing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use countersign_domain::config::{
    ActionPolicy, McpConfig, ServerUrl, UrlPolicy, service_token_secret_name,
};
use countersign_domain::conversation::Principal;
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::{ActionId, CaseId, MessageId, OperationName, ToolName, UserId};
use countersign_domain::ports::McpSettings;
use countersign_domain::ports::{AuditEntry, Clock, Ids, SecretStore, StoredMcpConfig};
use countersign_domain::proposal::{Presentation, Proposal, ProposalState};
use countersign_domain::secret::SecretString;
use countersign_domain::text::SafeText;
use countersign_testkit::{MemorySecrets, MemoryStore, ScriptedProvider, SeqIds, TestClock, tool};
use countersign_tools::builtins::{CallContext, Services, registry};
use countersign_tools::integration::{
    IntegrationError, IntegrationService, Route, ToolAnswer, route,
};
use serde_json::json;
use std::sync::Arc;

struct Env {
    store: Arc<MemoryStore>,
    secrets: Arc<MemorySecrets>,
    provider: Arc<ScriptedProvider>,
    service: IntegrationService,
    ids: SeqIds,
    clock: Arc<TestClock>,
    who: Principal,
    case: CaseId,
}

impl Env {
    fn new() -> Self {
        let clock = Arc::new(TestClock::default());
        let ids = SeqIds::new(clock.clone());
        let store = Arc::new(MemoryStore::default());
        let secrets = Arc::new(MemorySecrets::default());
        let provider = Arc::new(ScriptedProvider::default());
        let service = IntegrationService::new(store.clone(), secrets.clone(), provider.clone());
        let who = Principal {
            tenant: ids.tenant_id(),
            user: UserId::parse("u_alice").unwrap(),
        };
        let case = ids.case_id();
        Self {
            store,
            secrets,
            provider,
            service,
            ids,
            clock,
            who,
            case,
        }
    }

    /// Saves a configuration for `url` with a new token `token`.
    async fn save(&self, url: &str, token: &str) -> StoredMcpConfig {
        let secret_version = self
            .secrets
            .put(
                &service_token_secret_name(&self.who.tenant),
                &SecretString::new(token),
            )
            .await
            .unwrap();
        let current = self.store.get_mcp_config(&self.who.tenant).await.unwrap();
        let config = StoredMcpConfig {
            config: McpConfig {
                server_url: ServerUrl::parse(url, UrlPolicy::default()).unwrap(),
                service_token: SecretString::new(""),
                allowed_tools: vec![ToolName::parse("get_user_cars").unwrap()],
                action_policy: ActionPolicy::default(),
                audience: None,
                approved: Default::default(),
            },
            version: current.as_ref().map_or(1, |c| c.version + 1),
            actions_version: current.as_ref().map_or(1, |c| c.version + 1),
            secret_version,
        };
        let audit = AuditEntry {
            id: self.ids.audit_id(),
            at: self.clock.now(),
            actor: "operator".into(),
            action: "mcp.put".into(),
            changes: json!({}),
        };
        self.store
            .put_mcp_config(
                &self.who.tenant,
                &config,
                current.map(|c| c.version),
                &audit,
            )
            .await
            .unwrap();
        config
    }

    fn proposal(&self, config: &StoredMcpConfig) -> Proposal {
        Proposal {
            action_id: ActionId::parse("act_1").unwrap(),
            tenant: self.who.tenant.clone(),
            user: self.who.user.clone(),
            case: self.case.clone(),
            operation: OperationName::parse("reassign_session_car").unwrap(),
            summary: SafeText::check("Move it.").unwrap(),
            summary_hash: Sha256Hex::digest("Move it."),
            arguments_hash: Sha256Hex::digest("{}"),
            expires_at: self.clock.now().plus_seconds(240),
            prepared_at: self.clock.now(),
            state: ProposalState::Unknown,
            presented: Presentation {
                replaced: None,
                first_served_at: None,
                message_id: MessageId::parse(self.ids.message_id().as_str()).unwrap(),
            },
            confirmation_message_id: None,
            confirm_attempt: None,
            config_version: config.version,
            secret_version: Some(config.secret_version.clone()),
            server_url: Some(config.config.server_url.to_string()),
            audience: None,
            needs_passkey: false,
            prepared_outside: false,
        }
    }
}

#[tokio::test]
async fn without_a_configuration_there_is_no_integration() {
    let env = Env::new();
    assert!(
        env.service
            .current(&env.who, &env.case)
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn the_current_integration_carries_the_person_and_the_token_of_its_version() {
    let env = Env::new();
    env.save("https://a.example.com/mcp", "token-a").await;
    let c = env
        .service
        .current(&env.who, &env.case)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(c.ctx.service_token.expose(), "token-a");
    assert_eq!(c.ctx.user, env.who.user);
    assert_eq!(c.ctx.conversation, env.case);
    assert_eq!(c.ctx.server_url.as_str(), "https://a.example.com/mcp");
}

#[tokio::test]
async fn a_token_is_read_once_per_version_and_a_new_version_is_read_again() {
    let env = Env::new();
    env.save("https://a.example.com/mcp", "token-a").await;
    for _ in 0..3 {
        env.service.current(&env.who, &env.case).await.unwrap();
    }
    assert_eq!(env.secrets.reads(), 1);
    env.save("https://a.example.com/mcp", "token-b").await;
    let c = env
        .service
        .current(&env.who, &env.case)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(c.ctx.service_token.expose(), "token-b");
    assert_eq!(env.secrets.reads(), 2);
}

#[tokio::test]
async fn c8_a_proposal_uses_the_integration_it_was_prepared_with() {
    let env = Env::new();
    let first = env.save("https://a.example.com/mcp", "token-a").await;
    let p = env.proposal(&first);
    env.save("https://b.example.com/mcp", "token-b").await;
    let (ctx, audience) = env
        .service
        .for_proposal(&env.who, &p)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ctx.server_url.as_str(), "https://a.example.com/mcp");
    assert_eq!(ctx.service_token.expose(), "token-a");
    assert_eq!(ctx.config_version, first.version);
    assert_eq!(audience, "https://a.example.com/mcp");
}

#[tokio::test]
async fn a_proposal_without_a_stored_integration_has_none() {
    let env = Env::new();
    let config = env.save("https://a.example.com/mcp", "token-a").await;
    let mut p = env.proposal(&config);
    p.secret_version = Some("v99".into());
    assert!(
        env.service
            .for_proposal(&env.who, &p)
            .await
            .unwrap()
            .is_none()
    );
    p.server_url = None;
    assert!(
        env.service
            .for_proposal(&env.who, &p)
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_secret_store_outage_is_an_error_not_an_absent_integration() {
    let env = Env::new();
    env.save("https://a.example.com/mcp", "token-a").await;
    env.secrets.faults.set_down(true);
    assert!(matches!(
        env.service.current(&env.who, &env.case).await,
        Err(IntegrationError::Secrets(_))
    ));
}

#[tokio::test]
async fn a3_only_allowlisted_tools_that_are_not_reserved_or_built_in_are_offered() {
    let env = Env::new();
    env.save("https://a.example.com/mcp", "token-a").await;
    env.provider.publish(vec![
        tool("get_user_cars"),
        tool("get_user_sessions"),
        tool("execute_action"),
        tool("describe_tool"),
    ]);
    let c = env
        .service
        .current(&env.who, &env.case)
        .await
        .unwrap()
        .unwrap();
    let names: Vec<String> = env
        .service
        .tools(&c)
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, ["get_user_cars"]);
}

#[tokio::test]
async fn calls_route_to_built_ins_first_then_allowlisted_consultations_else_nowhere() {
    let env = Env::new();
    env.save("https://a.example.com/mcp", "token-a").await;
    let registry = registry().unwrap();
    let proxied = vec![tool("get_user_cars"), tool("describe_tool")];
    assert_eq!(route(&registry, &proxied, "describe_tool"), Route::BuiltIn);
    assert_eq!(
        route(&registry, &proxied, "get_user_cars"),
        Route::Proxied(&proxied[0])
    );
    assert_eq!(
        route(&registry, &proxied, "get_user_sessions"),
        Route::Unknown
    );

    let c = env
        .service
        .current(&env.who, &env.case)
        .await
        .unwrap()
        .unwrap();
    let ctx = CallContext {
        principal: env.who.clone(),
        case: env.case.clone(),
        services: Services {
            conversations: env.store.clone(),
            tenants: env.store.clone(),
            actions: None,
        },
        consultations: Vec::new(),
    };
    let unknown = env
        .service
        .answer(
            &registry,
            ctx.clone(),
            Some((&c.ctx, &proxied)),
            "get_user_sessions",
            None,
        )
        .await
        .map(ToolAnswer::into_call_tool_result);
    assert!(unknown.is_none());
    assert!(env.provider.calls().is_empty());
    let answer = env
        .service
        .answer(
            &registry,
            ctx,
            Some((&c.ctx, &proxied)),
            "get_user_cars",
            None,
        )
        .await
        .map(ToolAnswer::into_call_tool_result)
        .unwrap();
    assert_eq!(env.provider.calls_of("get_user_cars").len(), 1);
    let text = answer.content.first().and_then(|b| b.as_text()).unwrap();
    assert_eq!(text.text, "get_user_cars answered");
}

/// Issue 17: `describe_tool`, dispatched through the integration service (the model turn's
/// path as well as the gateway's), describes the conversation's consultations with the
/// descriptor the tenant's server published; a built-in of the same name wins.
#[tokio::test]
async fn describe_tool_describes_the_consultations_it_was_given() {
    let env = Env::new();
    env.save("https://a.example.com/mcp", "token-a").await;
    let registry = registry().unwrap();
    let proxied = vec![tool("get_user_cars")];
    let c = env
        .service
        .current(&env.who, &env.case)
        .await
        .unwrap()
        .unwrap();
    let ctx = CallContext {
        principal: env.who.clone(),
        case: env.case.clone(),
        services: Services {
            conversations: env.store.clone(),
            tenants: env.store.clone(),
            actions: None,
        },
        consultations: Vec::new(),
    };
    let describe = |name: &str| Some(json!({"name": name}).as_object().unwrap().clone());
    let answer = env
        .service
        .answer(
            &registry,
            ctx.clone(),
            Some((&c.ctx, &proxied)),
            "describe_tool",
            describe("get_user_cars"),
        )
        .await
        .map(ToolAnswer::into_call_tool_result)
        .unwrap();
    let envelope = answer.structured_content.unwrap();
    assert_eq!(envelope["ok"], true, "{envelope}");
    assert_eq!(
        envelope["data"],
        serde_json::Value::Object(proxied[0].descriptor.clone())
    );
    // Without the consultations (none loaded), the name is unknown.
    let answer = env
        .service
        .answer(
            &registry,
            ctx,
            None,
            "describe_tool",
            describe("get_user_cars"),
        )
        .await
        .map(ToolAnswer::into_call_tool_result)
        .unwrap();
    let envelope = answer.structured_content.unwrap();
    assert_eq!(envelope["error"]["code"], "NOT_FOUND", "{envelope}");
    assert!(env.provider.calls().is_empty(), "describing calls nobody");
}
