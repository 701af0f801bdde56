//! B-2, B-3: the actions protocol over the upstream's write tools.
//!
//! - `prepare_action`: the arguments (with the bound ones and the person) validated
//!   against the upstream tool's schema, the guards run, the lookups read, the summary
//!   rendered and checked, and the action recorded — cancelling the conversation's
//!   previous pending one in the same transaction. Nothing is written upstream.
//! - `execute_action`: the proof verified with the provider kit (every claim bound to the
//!   stored action), then, under the person's lock, the proof's `jti` consumed and the
//!   action claimed in one transaction; the configuration digest, the guards and the
//!   re-rendered summary checked again (any difference: `conflict`); and the upstream write
//!   called exactly once with the persisted arguments. A lost answer leaves the action
//!   `executing` for `countersign-bridge settle`; it is never sent again.
//! - `get_action_status`: the record, scoped to the caller's tenant, person and
//!   conversation.

use crate::config::Operation;
use crate::engine::{Bridge, Check, Upstreamed, operations, refuse};
use crate::store::{Action, Claim};
use crate::upstream::UpstreamError;
use countersign_provider_kit::{
    ActionStatus, ExpectedAction, Identity, PrepareAnswer, StatusAnswer, summary_hash,
};
use rmcp::model::{CallToolResult, Tool};
use serde_json::{Map, Value, json};
use std::sync::atomic::Ordering;
use time::OffsetDateTime;

/// The message an answer-less write is left with.
const IN_DOUBT: &str = "The system's answer was lost: it may have run. It is not retried; the tenant checks it and settles it.";

/// The three tools of the protocol, with the operations and their arguments described.
fn protocol_tools(bridge: &Bridge) -> Vec<Tool> {
    let ops: Vec<String> = bridge
        .config
        .operations
        .iter()
        .map(|o| {
            let hidden = match &o.identity {
                crate::config::Identity::Argument { name } => Some(name.as_str()),
                _ => None,
            };
            let schema = bridge.visible_schema(&o.tool, hidden);
            let args: Vec<&str> = schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
            format!("{} {{{}}}", o.name, args.join(", "))
        })
        .collect();
    let status = json!({"type": "object", "properties": {"contractVersion": {"const": 1}, "actionId": {"type": "string"}, "status": {"type": "string"}, "message": {"type": "string"}}, "required": ["contractVersion", "actionId", "status"]});
    let tools = [
        json!({"name": "prepare_action",
            "description": format!("Prepares a write for the person to confirm; nothing changes until they do. Operations: {}.", ops.join("; ")),
            "inputSchema": {"type": "object", "properties": {"operation": {"type": "string"}, "arguments": {"type": "object"}}, "required": ["operation", "arguments"], "additionalProperties": false},
            "annotations": {"readOnlyHint": false}}),
        json!({"name": "execute_action",
            "description": "Executes a confirmed action (platform only; needs X-MCP-Confirmation).",
            "inputSchema": {"type": "object", "properties": {"actionId": {"type": "string"}}, "required": ["actionId"]},
            "outputSchema": status,
            "annotations": {"readOnlyHint": false}}),
        json!({"name": "get_action_status",
            "description": "The status of an action (platform only).",
            "inputSchema": {"type": "object", "properties": {"actionId": {"type": "string"}}, "required": ["actionId"]},
            "outputSchema": status,
            "annotations": {"readOnlyHint": true}}),
    ];
    tools
        .into_iter()
        .filter_map(|t| serde_json::from_value(t).ok())
        .collect()
}

/// `en` or `pt` from `X-MCP-Language` (a BCP 47 tag: `pt`, `pt-BR`, `pt-PT` → `pt`).
pub(crate) fn language(header: Option<&str>, op: &Operation) -> String {
    let wanted = header
        .and_then(|h| h.split(['-', '_']).next())
        .map(str::to_ascii_lowercase);
    match wanted {
        Some(l) if op.summary.contains_key(&l) => l,
        _ => "en".to_owned(),
    }
}

fn now() -> OffsetDateTime {
    OffsetDateTime::now_utc()
}

fn action_id(args: &Map<String, Value>) -> Result<&str, CallToolResult> {
    args.get("actionId")
        .and_then(Value::as_str)
        .ok_or_else(|| refuse("actionId is required"))
}

/// An action is answered only to its own tenant, person and conversation; to anyone
/// else it does not exist.
fn owned(action: Option<Action>, who: &Identity) -> Option<Action> {
    action.filter(|a| a.person == who.user_id && a.conversation_id == who.conversation_id)
}

impl Bridge {
    /// The catalog the platform sees: the consultations, then the protocol's three tools.
    pub fn catalog(&self) -> Vec<Tool> {
        let mut out = self.published_consultations();
        out.extend(protocol_tools(self));
        out
    }

    /// The upstream arguments of `op` for `person`: the model's, the bound ones, and the
    /// person as the identity argument. A model-given identity argument must already be
    /// the person (it is checked, never chosen).
    fn upstream_arguments(
        &self,
        op: &Operation,
        mut model: Map<String, Value>,
        person: &str,
    ) -> Result<Map<String, Value>, CallToolResult> {
        let (arg, _) = Self::identity_of(&op.identity, person);
        if let Some((name, _)) = arg
            && let Some(given) = model.remove(name)
            && given.as_str() != Some(person)
        {
            return Err(refuse("not found"));
        }
        self.with_bound(&op.tool, model, arg)
    }

    /// Guards, lookups and the summary: what preparation computes and execution
    /// computes again.
    async fn render(
        &self,
        op: &Operation,
        full: &Map<String, Value>,
        person: &str,
        language: &str,
    ) -> Result<String, Check> {
        self.check_guards(&op.guards, full, person).await?;
        let mut lookups = Map::new();
        for (name, l) in &op.lookups {
            lookups.insert(name.clone(), self.lookup(l, full, person).await?);
        }
        let template = op
            .summary
            .get(language)
            .or_else(|| op.summary.get("en"))
            .ok_or_else(|| Check::Refused("no summary template".into()))?;
        template
            .render_summary(full, &lookups, person)
            .map(|s| s.as_str().to_owned())
            .map_err(|e| Check::Refused(format!("the summary cannot be shown: {e}")))
    }

    pub(crate) async fn prepare(
        &self,
        who: &Identity,
        args: &Map<String, Value>,
        language_header: Option<&str>,
    ) -> CallToolResult {
        let ops = operations(&self.config);
        let Some(op) = args
            .get("operation")
            .and_then(Value::as_str)
            .and_then(|o| ops.get(o))
        else {
            return refuse("unknown operation");
        };
        let Some(model) = args.get("arguments").and_then(Value::as_object).cloned() else {
            return refuse("arguments must be an object");
        };
        let person = match self.upstreamed(&who.user_id) {
            Ok(p) => p,
            Err(r) => return r,
        };
        let full = match self.upstream_arguments(op, model.clone(), &person.person) {
            Ok(f) => f,
            Err(r) => return r,
        };
        let language = language(language_header, op);
        let lock = self.lock_for(who);
        let _held = lock.lock().await;
        let summary = match self.render(op, &full, &person.person, &language).await {
            Ok(s) => s,
            Err(c) => {
                self.metrics.guard_refusals.fetch_add(1, Ordering::Relaxed);
                return c.into_result();
            }
        };
        self.record(who, op, model, summary, language).await
    }

    async fn record(
        &self,
        who: &Identity,
        op: &Operation,
        model: Map<String, Value>,
        summary: String,
        language: String,
    ) -> CallToolResult {
        let at = now();
        let ttl = time::Duration::try_from(self.settings.proposal_ttl)
            .unwrap_or(time::Duration::minutes(4));
        let persisted = Value::Object(model);
        let answer = match PrepareAnswer::new(
            ulid::Ulid::new().to_string(),
            op.name.as_str(),
            summary.clone(),
            &persisted,
            at,
            at + ttl,
        ) {
            Ok(a) => a,
            Err(e) => return refuse(&e.to_string()),
        };
        let action = Action {
            action_id: answer.action_id.clone(),
            tenant_id: who.tenant_id.clone(),
            person: who.user_id.clone(),
            conversation_id: who.conversation_id.clone(),
            operation: op.name.to_string(),
            arguments: match persisted {
                Value::Object(m) => m,
                _ => Map::new(),
            },
            arguments_hash: answer.arguments_hash.clone(),
            summary_hash: summary_hash(&summary),
            summary,
            language,
            config_digest: self.digest.clone(),
            status: ActionStatus::PendingConfirmation,
            message: None,
            prepared_at: at.unix_timestamp(),
            expires_at: (at + ttl).unix_timestamp(),
        };
        if let Err(e) = self.store.prepare(&action).await {
            tracing::error!(error = %e, "store");
            return refuse("the bridge could not record the proposal; nothing was prepared");
        }
        self.metrics.prepared.fetch_add(1, Ordering::Relaxed);
        answer.to_call_tool_result()
    }

    pub(crate) async fn status(&self, who: &Identity, args: &Map<String, Value>) -> CallToolResult {
        let id = match action_id(args) {
            Ok(id) => id,
            Err(r) => return r,
        };
        match self.store.get(&who.tenant_id, id).await {
            Ok(found) => match owned(found, who) {
                Some(a) => answer(&a, now().unix_timestamp()),
                None => refuse("no such action"),
            },
            Err(_) => refuse("the bridge's store is unavailable"),
        }
    }

    pub(crate) async fn execute(
        &self,
        who: &Identity,
        args: &Map<String, Value>,
        proof: Option<&str>,
    ) -> CallToolResult {
        let id = match action_id(args) {
            Ok(id) => id,
            Err(r) => return r,
        };
        let action = match self.store.get(&who.tenant_id, id).await {
            Ok(found) => match owned(found, who) {
                Some(a) => a,
                None => return refuse("no such action"),
            },
            Err(_) => return refuse("the bridge's store is unavailable"),
        };
        let Some(token) = proof else {
            self.metrics.proof_refusals.fetch_add(1, Ordering::Relaxed);
            return refuse("a confirmation proof is required");
        };
        let expected = ExpectedAction {
            tenant_id: &who.tenant_id,
            user_id: &who.user_id,
            conversation_id: &who.conversation_id,
            action_id: &action.action_id,
            operation: &action.operation,
            arguments_hash: &action.arguments_hash,
            summary_hash: &action.summary_hash,
            expires_at: Some(action.expires_at),
        };
        let at = now().unix_timestamp();
        let verified = match self.verifier.verify_fetching(token, &expected, at).await {
            Ok(v) => v,
            Err(e) => {
                self.metrics.proof_refusals.fetch_add(1, Ordering::Relaxed);
                tracing::info!(reason = %e, "confirmation refused");
                return refuse(&format!("the confirmation was refused: {e}"));
            }
        };
        let lock = self.lock_for(who);
        let _held = lock.lock().await;
        let claim = self
            .store
            .claim(
                &who.tenant_id,
                id,
                &verified.claims.jti,
                verified.claims.exp,
                at,
            )
            .await;
        match claim {
            Ok(Claim::Claimed(a)) => self.run(a).await,
            Ok(Claim::NotPending(a) | Claim::Expired(a)) => answer(&a, at),
            Ok(Claim::Replayed) => {
                self.metrics.proof_refusals.fetch_add(1, Ordering::Relaxed);
                refuse("the confirmation was refused: the proof was already used")
            }
            Ok(Claim::Missing) => refuse("no such action"),
            Err(e) => {
                tracing::error!(error = %e, "store");
                refuse("the bridge's store is unavailable; nothing was executed")
            }
        }
    }

    /// A claimed action: checked again, then written upstream once.
    async fn run(&self, action: Action) -> CallToolResult {
        let ops = operations(&self.config);
        let op = ops.get(action.operation.as_str()).copied();
        let person = self.upstreamed(&action.person);
        let checked = match (op, person, action.config_digest == self.digest) {
            (Some(op), Ok(person), true) => self.recheck(&action, op, &person).await,
            _ => Err(Some(
                "the bridge's configuration changed since the proposal".into(),
            )),
        };
        let (op, full, person) = match checked {
            Ok(ready) => ready,
            Err(why) => return self.end(&action, ActionStatus::Conflict, why).await,
        };
        if person.dry_run {
            let note = "Dry run for a certification: checked, nothing was executed upstream.";
            return self
                .end(&action, ActionStatus::Completed, Some(note.into()))
                .await;
        }
        self.metrics.upstream_writes.fetch_add(1, Ordering::Relaxed);
        let (_, header) = Self::identity_of(&op.identity, &person.person);
        match self.upstream.call(&op.tool, full, header).await {
            Ok(result) if result.is_error != Some(true) => {
                self.end(&action, ActionStatus::Completed, None).await
            }
            Ok(result) => {
                let why = crate::upstream::result_json(&result);
                self.end(&action, ActionStatus::Failed, Some(failure_text(&why)))
                    .await
            }
            Err(UpstreamError::Unavailable(e)) => {
                tracing::warn!(error = %e, "upstream unavailable: nothing sent");
                let note = "The system was unavailable; nothing was changed.";
                self.end(&action, ActionStatus::Failed, Some(note.into()))
                    .await
            }
            Err(UpstreamError::Lost(e)) => {
                tracing::warn!(error = %e, action = %action.action_id, "upstream answer lost");
                self.metrics.in_doubt.fetch_add(1, Ordering::Relaxed);
                let _ = self
                    .store
                    .mark_in_doubt(&action.tenant_id, &action.action_id, IN_DOUBT)
                    .await;
                answer(
                    &Action {
                        message: Some(IN_DOUBT.into()),
                        ..action
                    },
                    now().unix_timestamp(),
                )
            }
        }
    }

    /// Seed 001 §4: the rules at execution. The arguments as persisted, the guards, and
    /// the summary re-rendered to the same bytes; `Err` with the reason is a conflict.
    async fn recheck<'a>(
        &self,
        action: &Action,
        op: &'a Operation,
        person: &Upstreamed,
    ) -> Result<(&'a Operation, Map<String, Value>, Upstreamed), Option<String>> {
        let full = self
            .upstream_arguments(op, action.arguments.clone(), &person.person)
            .map_err(|_| Some("the arguments no longer fit the system's tool".to_owned()))?;
        match self
            .render(op, &full, &person.person, &action.language)
            .await
        {
            Ok(summary) if summary_hash(&summary) == action.summary_hash => {
                Ok((op, full, person.clone()))
            }
            Ok(_) => Err(Some(
                "What this change would do has changed since it was shown; nothing was done."
                    .into(),
            )),
            Err(Check::Refused(_)) => Err(Some(
                "The change is no longer allowed for this account; nothing was done.".into(),
            )),
            Err(Check::Unavailable(_)) => Err(Some(
                "The system could not be checked before the change; nothing was done.".into(),
            )),
        }
    }

    async fn end(
        &self,
        action: &Action,
        status: ActionStatus,
        message: Option<String>,
    ) -> CallToolResult {
        if status == ActionStatus::Conflict {
            self.metrics.conflicts.fetch_add(1, Ordering::Relaxed);
        }
        let recorded = self
            .store
            .finish(
                &action.tenant_id,
                &action.action_id,
                status,
                message.as_deref(),
            )
            .await;
        if let Err(e) = recorded {
            tracing::error!(error = %e, action = %action.action_id, "the outcome could not be recorded");
        }
        answer(
            &Action {
                status,
                message,
                ..action.clone()
            },
            now().unix_timestamp(),
        )
    }
}

/// The status answer of `action` as of `now`.
fn answer(action: &Action, now: i64) -> CallToolResult {
    StatusAnswer::new(
        action.action_id.clone(),
        action.status_at(now),
        action.message.clone(),
    )
    .to_call_tool_result()
}

/// The upstream's refusal as safe text for the person (A-40: same limits as a summary),
/// or a plain sentence when it cannot be shown.
fn failure_text(result: &Value) -> String {
    let raw = match result {
        Value::String(s) => s.clone(),
        other => ["parsed_content", "error", "message"]
            .iter()
            .find_map(|k| other.get(k).and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default(),
    };
    let text: String = raw.chars().take(300).collect();
    match countersign_domain::text::SafeText::check(text) {
        Ok(t) if !t.as_str().trim().is_empty() => format!("The system refused: {}", t.as_str()),
        _ => "The system refused the change; nothing was done.".into(),
    }
}
