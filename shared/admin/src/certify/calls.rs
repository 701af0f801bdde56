//! The run's provider calls (H-3, V-3, N-7): a preparation, an action's status, an
//! execute with or without a proof, each bounded by what is left of the run, each read
//! against the contract.

use super::Run;
use super::judge::{Seen, breaks_contract, call_failure, not_a_result, refusal_text};
use countersign_domain::ids::{ActionId, OperationName};
use countersign_domain::outcome::{ActionAnswer, parse_action_answer};
use countersign_domain::ports::{Confirmation, ProviderContext, ProviderError};
use countersign_domain::prepare::{PreparedAction, parse_prepare_answer};
use countersign_domain::proof::Proof;
use countersign_domain::said;
use countersign_domain::texts::Said;
use countersign_domain::tool_result::ToolResult;
use serde_json::{Map, Value, json};

impl Run<'_> {
    /// `prepare_action` for `op` with `args` in `ctx`, unread.
    pub(super) async fn prepare_raw(
        &self,
        ctx: &ProviderContext,
        op: &OperationName,
        args: &Map<String, Value>,
    ) -> Result<Value, ProviderError> {
        let mut call = Map::new();
        call.insert("operation".into(), json!(op.as_str()));
        call.insert("arguments".into(), Value::Object(args.clone()));
        self.timed(self.provider.call_tool(ctx, "prepare_action", &call, None))
            .await
    }

    /// A fresh preparation, read against; a refusal is reported in
    /// the provider's own words.
    pub(super) async fn prepare(
        &self,
        ctx: &ProviderContext,
        op: &OperationName,
        args: &Map<String, Value>,
    ) -> Result<PreparedAction, Said> {
        let raw = self.prepare_raw(ctx, op, args).await.map_err(|e| {
            said!(
                "prepare_action failed: {e}",
                "prepare_action falhou: {e}",
                e = call_failure(&e)
            )
        })?;
        if let Some(words) = refusal_text(&raw) {
            return Err(said!(
                "prepare_action refused `{op}` ({words}): check the sample arguments and that the test person exists in your system",
                "prepare_action recusou `{op}` ({words}): confira os argumentos de exemplo e se a pessoa de teste existe no seu sistema",
                words = words
            ));
        }
        let result = ToolResult::from_mcp_json(&raw).map_err(|_| not_a_result("prepare_action"))?;
        parse_prepare_answer(&result, op, self.state.clock.now())
            .map_err(|v| breaks_contract("prepare_action", &v))
    }

    /// What `get_action_status` says about `id` (in the conversation `ctx`).
    pub(super) async fn status(&self, ctx: &ProviderContext, id: &ActionId) -> Seen {
        let mut args = Map::new();
        args.insert("actionId".into(), json!(id.as_str()));
        let raw = match self
            .timed(
                self.provider
                    .call_tool(ctx, "get_action_status", &args, None),
            )
            .await
        {
            Ok(raw) => raw,
            Err(e) => {
                return Seen::Unusable(said!(
                    "get_action_status failed: {e}",
                    "get_action_status falhou: {e}",
                    e = call_failure(&e)
                ));
            }
        };
        let Ok(result) = ToolResult::from_mcp_json(&raw) else {
            return Seen::Unusable(not_a_result("get_action_status"));
        };
        match parse_action_answer(&result, id) {
            Ok(ActionAnswer::Reported(r)) => Seen::Status(r.status),
            Ok(ActionAnswer::ToolError) => Seen::Unusable(said!(
                "get_action_status answered isError: it must report the action's status",
                "get_action_status respondeu isError: deve informar o status da ação"
            )),
            Err(v) => Seen::Unusable(breaks_contract("get_action_status", &v)),
        }
    }

    /// `execute_action` for `id` in `ctx` with `proof` (none: no header at all).
    pub(super) async fn execute(
        &self,
        ctx: &ProviderContext,
        id: &ActionId,
        proof: Option<&Proof>,
    ) -> Result<Value, ProviderError> {
        let mut args = Map::new();
        args.insert("actionId".into(), json!(id.as_str()));
        let Some(proof) = proof else {
            return self
                .timed(self.provider.call_tool(ctx, "execute_action", &args, None))
                .await;
        };
        let opened = self.timed(self.provider.open(ctx)).await?;
        let confirmation = Confirmation {
            opened: &opened,
            proof,
        };
        self.timed(
            self.provider
                .call_tool(ctx, "execute_action", &args, Some(confirmation)),
        )
        .await
    }

    /// N-7: the run's context in a conversation of its own.
    pub(super) fn fresh(&self) -> ProviderContext {
        ProviderContext {
            conversation: self.state.ids.case_id(),
            ..self.ctx.clone()
        }
    }
}
