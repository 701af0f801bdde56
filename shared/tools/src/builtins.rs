//! The built-in tools (G-1 … G-14): `describe_tool` (G-3), `list_operations`,
//! `action_status`, and `prepare_action` (A-10, A-12; its behaviour comes through the
//! [`ActionPreparer`] port, implemented by the messages function).

use crate::envelope::{Data, IntoData};
use crate::errors::{ToolError, code, from_store};
use crate::registry::{Annotations, Invocation, Registry, RegistryError, ToolSpec};
use async_trait::async_trait;
use countersign_domain::conversation::Principal;
use countersign_domain::ids::CaseId;
use countersign_domain::ports::{Conversations, McpSettings};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;

/// Prepares actions (A-10 … A-21). Implemented where proposals are presented (the
/// messages function); absent where they cannot be (then `prepare_action` says so).
#[async_trait]
pub trait ActionPreparer: Send + Sync {
    /// Prepares `operation` with `arguments` for the caller's conversation.
    async fn prepare(
        &self,
        ctx: &CallContext,
        operation: &str,
        arguments: &Map<String, Value>,
    ) -> Result<PreparedAction, ToolError>;

    /// The JSON Schema of `operation`'s arguments as the tenant's server declares it
    /// (decision 0024: the `inputSchema` of its tool of the same name in `tools/list`,
    /// which stays uncallable, H-2); `None` when it declares none.
    fn argument_schema(&self, operation: &str) -> Option<Value> {
        let _ = operation;
        None
    }
}

/// The platform services tools use.
#[derive(Clone)]
pub struct Services {
    /// Conversations (a status query reads its case).
    pub conversations: Arc<dyn Conversations>,
    /// The tenants' MCP settings.
    pub tenants: Arc<dyn McpSettings>,
    /// Action preparation, where available.
    pub actions: Option<Arc<dyn ActionPreparer>>,
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("actions", &self.actions.is_some())
            .finish_non_exhaustive()
    }
}

/// Who is calling, for which conversation: fixed by authentication (D-4), never by
/// arguments.
#[derive(Clone)]
pub struct CallContext {
    /// The end user the conversation belongs to.
    pub principal: Principal,
    /// The conversation.
    pub case: CaseId,
    /// Services.
    pub services: Services,
    /// The published descriptors of the conversation's allowlisted consultations, as the
    /// tenant's server lists them (so `describe_tool` describes every tool the caller can
    /// call); filled by the integration service, empty where none were loaded.
    pub consultations: Vec<Map<String, Value>>,
}

countersign_domain::debug_showing!(CallContext { principal, case });

const READ_ONLY: Annotations = Annotations {
    read_only_hint: true,
    destructive_hint: false,
    idempotent_hint: true,
    open_world_hint: false,
};

/// `describe_tool`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DescribeToolArgs {
    /// The tool's name, as listed by `tools/list`.
    pub name: String,
}

/// A published tool descriptor: the same object `tools/list` publishes (G-3). A
/// built-in always has every field; a consultation has what the tenant's server publishes
/// (MCP requires only `name` and `inputSchema`).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DescribedTool {
    /// Wire name.
    pub name: String,
    /// Title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Input JSON Schema.
    pub input_schema: Value,
    /// Output JSON Schema (for a built-in, the envelope).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// `_meta` (a built-in's carries its `version`).
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// `describe_tool`'s data: a descriptor already in its published form; its schema is
/// [`DescribedTool`]'s. Not `Serialize`: a built-in's is the registry's own, serialised
/// into the envelope where it lies.
#[derive(Debug)]
pub struct Described(pub Data);

impl IntoData for Described {
    fn into_data(self) -> Result<Data, serde_json::Error> {
        Ok(self.0)
    }
}

impl JsonSchema for Described {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        DescribedTool::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        DescribedTool::json_schema(generator)
    }
}

/// No arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// `list_operations`'s data.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Operations {
    /// The enabled operations (empty when actions are disabled).
    pub items: Vec<OperationItem>,
    /// Whether the tenant has enabled actions at all.
    pub actions_enabled: bool,
}

/// One operation.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OperationItem {
    /// Its name, for `prepare_action`.
    pub operation: String,
    /// The JSON Schema of its `arguments`, as the company's system declares it; absent
    /// when it declares none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

/// `action_status`'s data.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ActionStatus {
    /// The conversation's current (non-terminal) proposal, or null.
    pub proposal: Option<ProposalStatus>,
}

/// The local state of a proposal.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProposalStatus {
    /// The provider's action id.
    pub action_id: String,
    /// The operation.
    pub operation: String,
    /// `pending_confirmation`, `executing` or `unknown`; for a proposal asked for by
    /// `actionId`, also where it ended (`completed`, `failed`, `conflict`, `cancelled`,
    /// `expired`, `superseded`).
    pub state: String,
    /// When the proposal stops being confirmable (ISO-8601 UTC).
    pub expires_at: String,
    /// Once it ran: the result the person was shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
}

/// `action_status`'s arguments.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ActionStatusArgs {
    /// A proposal of this conversation (`data.actionId` of `prepare_action`): its state
    /// even once it ended, with the result the person was shown. Absent: the current one.
    #[serde(default)]
    pub action_id: Option<String>,
}

/// `prepare_action`'s arguments: the platform validates this envelope only; the
/// arguments' schema belongs to the provider.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrepareActionArgs {
    /// An operation listed by `list_operations`.
    pub operation: String,
    /// The operation's arguments, as the company's system defines them.
    pub arguments: Map<String, Value>,
}

/// `prepare_action`'s data.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreparedAction {
    /// The proposal's id.
    pub action_id: String,
    /// The operation.
    pub operation: String,
    /// `pending_confirmation` when prepared: the user must reply confirm; through the
    /// gateway's confirmation page later `executed`.
    pub status: String,
    /// When the proposal expires (ISO-8601 UTC).
    pub expires_at: String,
    /// through the gateway, the page where the person confirms or cancels it (give
    /// it to them; only they can use it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmation_url: Option<String>,
    /// through the gateway, the literal summary the person is shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// through the gateway, what to do next.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
    /// once executed, the outcome the person was shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
}

/// `describe_tool` (G-3).
pub const DESCRIBE_TOOL: ToolSpec = ToolSpec {
    name: "describe_tool",
    title: "Describe a tool",
    description: "Describes one tool this conversation can call: a built-in tool or one of the company's consultations. Returns the descriptor `tools/list` publishes as `data`: `data.name` and `data.inputSchema`, and when published `data.title`, `data.description`, `data.outputSchema`, `data.annotations` and `data._meta`. A built-in tool publishes all of them, with `data._meta.version` (the same version every answer carries in `meta.version`).",
    version: "2.0.0",
    annotations: READ_ONLY,
};

/// `list_operations`.
pub const LIST_OPERATIONS: ToolSpec = ToolSpec {
    name: "list_operations",
    title: "List write operations",
    description: "Lists the write operations this company has configured and enabled, which `prepare_action` can prepare. Returns `data.items` (each with `operation` and, when the company's system declares it, `arguments`: the JSON Schema of the arguments `prepare_action` takes for it) and `data.actionsEnabled`.",
    version: "1.1.0",
    annotations: READ_ONLY,
};

/// `action_status`.
pub const ACTION_STATUS: ToolSpec = ToolSpec {
    name: "action_status",
    title: "Current proposal status",
    description: "Reads the local state of this conversation's current proposal, without contacting the company's system. Returns `data.proposal`: null when there is none, otherwise its `actionId`, `operation`, `state` and `expiresAt`. With `actionId` (from `prepare_action`), reads that proposal even once it ended, with `result`: what the person was shown after it ran.",
    version: "1.1.0",
    annotations: READ_ONLY,
};

/// `prepare_action` (A-12: `readOnlyHint: false`).
pub const PREPARE_ACTION: ToolSpec = ToolSpec {
    name: "prepare_action",
    title: "Prepare a write for the user to confirm",
    description: "Prepares a change in the company's system. Nothing changes until the user replies confirm to the proposal the platform shows them; you cannot confirm for them. Takes `operation` (one of `data.items` from `list_operations`) and `arguments` (an object matching that item's `arguments` schema). Returns `data.actionId`, `data.operation`, `data.status` and `data.expiresAt`. Through the MCP gateway the person confirms on the platform's page: an ordinary answer then also gives `data.confirmationUrl` (give it to the person), `data.summary` (what they will read) and `data.next` (how to follow it with `action_status`); a client that declared URL elicitation is sent to the page instead, and its retry gets `data.status` where it ended and `data.result`, what the person was shown.",
    version: "1.2.0",
    annotations: Annotations {
        read_only_hint: false,
        destructive_hint: false,
        idempotent_hint: false,
        open_world_hint: true,
    },
};

async fn describe_tool(
    inv: Invocation<CallContext>,
    args: DescribeToolArgs,
) -> Result<Described, ToolError> {
    let name = args.name.as_str();
    // Built-ins first: a consultation can never shadow one. Theirs is the
    // registry's own descriptor, passed on as it is.
    if let Some(published) = inv.catalog.get(name) {
        return Ok(Described(Data::Written(published.clone())));
    }
    let consultation = inv
        .ctx
        .consultations
        .iter()
        .find(|d| d.get("name").and_then(Value::as_str) == Some(name))
        .ok_or_else(|| {
            ToolError::new(
                code::NOT_FOUND,
                format!(
                    "no tool named `{}`",
                    name.chars().take(128).collect::<String>()
                ),
            )
            .details(serde_json::json!({"field": "name"}))
            .retryable(false)
            .hint("Use a name from tools/list.")
        })?;
    // A tenant's descriptor is read against the shape `data` promises.
    let read: DescribedTool = serde_json::from_value(Value::Object(consultation.clone()))
        .map_err(|e| ToolError::internal(DESCRIBE_TOOL.name, &e))?;
    serde_json::to_value(read)
        .map(|v| Described(Data::Owned(v)))
        .map_err(|e| ToolError::internal(DESCRIBE_TOOL.name, &e))
}

async fn list_operations(inv: Invocation<CallContext>, _: NoArgs) -> Result<Operations, ToolError> {
    let ctx = &inv.ctx;
    let config = ctx
        .services
        .tenants
        .get_mcp_config(&ctx.principal.tenant)
        .await
        .map_err(|e| from_store(LIST_OPERATIONS.name, &e))?;
    let policy = config.map(|c| c.config.action_policy).unwrap_or_default();
    // only operations configured *and* enabled are offered.
    let items = if policy.enabled {
        policy
            .operations
            .iter()
            .map(|o| OperationItem {
                operation: o.to_string(),
                arguments: ctx
                    .services
                    .actions
                    .as_ref()
                    .and_then(|a| a.argument_schema(o.as_str())),
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(Operations {
        items,
        actions_enabled: policy.enabled,
    })
}

async fn action_status(
    inv: Invocation<CallContext>,
    args: ActionStatusArgs,
) -> Result<ActionStatus, ToolError> {
    let ctx = &inv.ctx;
    let view = ctx
        .services
        .conversations
        .load(&ctx.principal.tenant, &ctx.case)
        .await
        .map_err(|e| from_store(ACTION_STATUS.name, &e))?
        .filter(|v| v.case.is_owned_by(&ctx.principal))
        .ok_or_else(|| {
            ToolError::new(code::NOT_FOUND, "This conversation does not exist.").retryable(false)
        })?;
    let active = view.active.filter(|p| {
        args.action_id
            .as_deref()
            .is_none_or(|id| p.action_id.as_str() == id)
    });
    if let Some(p) = active {
        return Ok(ActionStatus {
            proposal: Some(ProposalStatus {
                action_id: p.action_id.to_string(),
                operation: p.operation.to_string(),
                state: p.state.as_str().to_owned(),
                expires_at: p.expires_at.to_rfc3339(),
                result: None,
            }),
        });
    }
    let Some(id) = args.action_id else {
        return Ok(ActionStatus { proposal: None });
    };
    // one asked for by id, settled or not (a client sent to the confirmation page
    // follows it here).
    let standing = crate::confirmation::standing_of(
        ctx.services.conversations.as_ref(),
        &ctx.principal.tenant,
        &ctx.case,
        None,
        |o| o.action_id.as_str() == id,
    )
    .await
    .map_err(|e| from_store(ACTION_STATUS.name, &e))?;
    Ok(ActionStatus {
        proposal: standing.map(|s| ProposalStatus {
            action_id: id.clone(),
            operation: s.operation,
            state: s.state.as_str().to_owned(),
            expires_at: s.expires_at.to_rfc3339(),
            result: s.result,
        }),
    })
}

async fn prepare_action(
    inv: Invocation<CallContext>,
    args: PrepareActionArgs,
) -> Result<PreparedAction, ToolError> {
    let ctx = &inv.ctx;
    let Some(actions) = ctx.services.actions.clone() else {
        return Err(ToolError::new(
            code::TOOL_ERROR,
            "Actions cannot be prepared through this connection; only the support chat presents proposals to the user.",
        )
        .retryable(false));
    };
    actions.prepare(ctx, &args.operation, &args.arguments).await
}

/// The registry of built-in tools (the messages function's model turn, and the gateway).
pub fn registry() -> Result<Registry<CallContext>, RegistryError> {
    let mut r = consultation_registry()?;
    r.register(PREPARE_ACTION, prepare_action)?;
    Ok(r)
}

/// The built-in tools that read only: every tool but `prepare_action`, for a host that
/// cannot prepare actions. The gateway serves [`registry`] (decision 0050: a proposal
/// prepared through it is stored in the token's conversation, where the person's widget
/// shows it).
pub fn consultation_registry() -> Result<Registry<CallContext>, RegistryError> {
    let mut r = Registry::new();
    r.register(DESCRIBE_TOOL, describe_tool)?;
    r.register(LIST_OPERATIONS, list_operations)?;
    r.register(ACTION_STATUS, action_status)?;
    Ok(r)
}
