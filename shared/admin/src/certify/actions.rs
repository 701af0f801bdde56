//! The action checks of a run (H-3, V-3, N-7): every operation prepared, a wrong service
//! token refused, one action per operation executed with a valid proof (with consent), and
//! the bad-proof series, each proof on its own fresh preparation in its own conversation.
//! The valid executions and the bad proofs go in an order the provider cannot predict, a
//! bad proof always first and last: a provider that executes only the first execute of a
//! conversation, or of a run, is caught.

use super::forge::{BAD_PROOFS, BadProof};
use super::judge::{action_tool_problem, call_failure, refusal_text};
use super::stepup::BAD_STEP_UPS;
use super::{ACTION_TOOLS, CertifyRequest, RUN_LIMIT, Refusal, Run, refused};
use countersign_domain::ids::{ActionId, OperationName};
use countersign_domain::outcome::{ActionAnswer, parse_action_answer};
use countersign_domain::ports::{Confirmation, ProviderContext, ProviderError, ProviderTool};
use countersign_domain::prepare::{PreparedAction, parse_prepare_answer};
use countersign_domain::proof::{Proof, sign_proof};
use countersign_domain::proposal::RemoteStatus;
use countersign_domain::tool_result::ToolResult;
use serde_json::{Map, Value, json};
use std::time::Instant;

/// An operation, its sample arguments, and its preparation (with the conversation it was
/// prepared in) when it passed.
type Prepared = (
    OperationName,
    Map<String, Value>,
    Option<(PreparedAction, ProviderContext)>,
);

/// One execute of the run, in the order sent.
enum Step {
    /// The valid proof for the operation prepared at this index.
    Valid(usize),
    /// One proof of the series.
    Bad(&'static BadProof),
    /// F-6: one wrong step-up, for the passkey operation prepared at this index.
    BadStepUp(&'static BadProof, usize),
}

/// F-6: the operations certified with the step-up: those asked for and those the saved
/// settings already make passkey operations.
fn passkey_operations(
    prepared: &[Prepared],
    request: &CertifyRequest,
    run: &Run<'_>,
) -> Vec<usize> {
    prepared
        .iter()
        .enumerate()
        .filter(|(_, (op, _, _))| {
            request.step_up.contains(op) || run.config.action_policy.needs_passkey(op)
        })
        .map(|(i, _)| i)
        .collect()
}

/// What `get_action_status` said about an action.
enum Seen {
    Status(RemoteStatus),
    /// No usable answer: why.
    Unusable(String),
}

impl Run<'_> {
    /// H-3 and V-3.
    pub(super) async fn actions(&mut self, tools: &[ProviderTool], request: &CertifyRequest) {
        let operations = self.config.action_policy.operations.clone();
        let missing: Vec<String> = ACTION_TOOLS
            .iter()
            .filter_map(|(tool, args)| action_tool_problem(tools, tool, args))
            .collect();
        let listed = if missing.is_empty() {
            Ok("prepare_action, execute_action and get_action_status are listed with their arguments".to_owned())
        } else {
            Err(missing.join("; "))
        };
        if !self.checks.record("actions.tools", "H-3", listed) {
            self.skip_actions(&operations, "the action tools are not all listed");
            return;
        }
        // V-3: every operation is prepared.
        let prepared = self.prepare_all(&operations, request).await;
        let Some((first_op, first_args, Some((first, first_ctx)))) =
            prepared.iter().find(|(_, _, p)| p.is_some()).cloned()
        else {
            self.skip_after_prepare(&operations, "no action could be prepared");
            return;
        };
        let status = match self.status(&first_ctx, &first.action_id).await {
            Seen::Status(RemoteStatus::PendingConfirmation) => {
                Ok("get_action_status says `pending_confirmation`".to_owned())
            }
            Seen::Status(s) => Err(format!(
                "get_action_status says `{}` for an action only prepared: it must be pending_confirmation",
                s.as_str()
            )),
            Seen::Unusable(why) => Err(why),
        };
        self.checks.record("actions.status", "H-3", status);
        let answer = self
            .prepare_raw(&self.wrong_token(), &first_op, &first_args)
            .await;
        let verdict = refused(answer, "prepare_action with a wrong service token", |_| {
            "it was answered: check the service token before any work".to_owned()
        });
        self.refusal("actions.wrong_token", "V-3", verdict);
        self.executes(&prepared, (&first_op, &first_args, &first), request)
            .await;
    }

    /// The valid executions (with consent) and the bad-proof series, in one shuffled
    /// order with a bad proof first and last (N-7); the checks are recorded in their usual
    /// order afterwards.
    async fn executes(
        &mut self,
        prepared: &[Prepared],
        (op, args, first): (&OperationName, &Map<String, Value>, &PreparedAction),
        request: &CertifyRequest,
    ) {
        let passkey = passkey_operations(prepared, request, self);
        // F-6: the wrong step-ups on the first passkey operation that was prepared.
        let series = passkey.iter().copied().find(|i| prepared[*i].2.is_some());
        let plan = self.plan(prepared, request, series);
        let mut valid = std::collections::BTreeMap::new();
        let mut bad = std::collections::BTreeMap::new();
        for step in plan {
            if Instant::now() >= self.until {
                break;
            }
            match step {
                Step::Valid(i) => {
                    if let Some((p, ctx)) = &prepared[i].2 {
                        let step_up = passkey.contains(&i);
                        valid.insert(i, self.execute_valid(ctx, p, step_up).await);
                    }
                }
                Step::Bad(b) => {
                    bad.insert(b.id, self.bad_proof(b, op, args, first).await);
                }
                Step::BadStepUp(b, i) => {
                    let (op, args, _) = &prepared[i];
                    bad.insert(b.id, self.bad_proof(b, op, args, first).await);
                }
            }
        }
        let out_of_time = format!("the run's {} s limit was reached", RUN_LIMIT.as_secs());
        for (i, (op, _, p)) in prepared.iter().enumerate() {
            // F-6: a passkey operation's valid execution is its step-up's positive case.
            let id = if passkey.contains(&i) {
                format!("stepup.execute.{op}")
            } else {
                format!("actions.execute.{op}")
            };
            match (p, valid.remove(&i)) {
                (None, _) => self.checks.skip(id, "V-3", "its preparation did not pass"),
                (Some(_), _) if !request.consent => self.checks.skip(
                    id,
                    "V-3",
                    "not run: the administrator did not consent to executing one action per operation for the test person; no valid proof was sent",
                ),
                (Some(_), Some(verdict)) => {
                    self.checks.record(id, "V-3", verdict);
                }
                (Some(_), None) => self.checks.skip(id, "V-3", out_of_time.clone()),
            }
        }
        for b in &BAD_PROOFS {
            match bad.remove(b.id) {
                Some(verdict) => {
                    self.refusal(b.id, "V-3", verdict);
                }
                None if !request.consent && b.genuine => self.checks.skip(
                    b.id,
                    "N-7",
                    "not sent: a proof the platform signs with only one thing wrong is sent only with consent (a verifier that skips that one check would execute it)",
                ),
                None => self.checks.skip(b.id, "V-3", out_of_time.clone()),
            }
        }
        self.record_step_ups(series, &mut bad, request, &out_of_time);
    }

    /// The run's executes in an order the provider cannot predict, a bad proof first and
    /// last: the bad-proof series (only those with no platform signature without
    /// consent), F-6's wrong step-ups on the prepared passkey operation `series`, and with
    /// consent one valid execute per prepared operation.
    fn plan(
        &self,
        prepared: &[Prepared],
        request: &CertifyRequest,
        series: Option<usize>,
    ) -> Vec<Step> {
        use rand::Rng as _;
        use rand::seq::SliceRandom as _;
        let mut plan: Vec<Step> = BAD_PROOFS
            .iter()
            .filter(|b| request.consent || !b.genuine)
            .map(Step::Bad)
            .collect();
        if let Some(i) = series.filter(|_| request.consent && self.state.step_up.is_some()) {
            plan.extend(BAD_STEP_UPS.iter().map(|b| Step::BadStepUp(b, i)));
        }
        plan.shuffle(&mut rand::rng());
        if request.consent {
            for (i, _) in prepared.iter().enumerate().filter(|(_, p)| p.2.is_some()) {
                let at = rand::rng().random_range(1..plan.len());
                plan.insert(at, Step::Valid(i));
            }
        }
        plan
    }

    /// F-6: the wrong step-ups' checks, when a passkey operation was certified.
    fn record_step_ups(
        &mut self,
        series: Option<usize>,
        bad: &mut std::collections::BTreeMap<&'static str, Refusal>,
        request: &CertifyRequest,
        out_of_time: &str,
    ) {
        if series.is_none() {
            return;
        }
        for b in &BAD_STEP_UPS {
            match bad.remove(b.id) {
                Some(verdict) => {
                    self.refusal(b.id, "F-6", verdict);
                }
                None if self.state.step_up.is_none() => self.checks.skip(
                    b.id,
                    "F-6",
                    "not sent: this deployment runs no passkey ceremony (COUNTERSIGN_STEP_UP_ORIGIN is not set)",
                ),
                None if !request.consent => self.checks.skip(
                    b.id,
                    "F-6",
                    "not sent: a step-up proof the platform signs is sent only with consent",
                ),
                None => self.checks.skip(b.id, "F-6", out_of_time),
            }
        }
    }

    /// Prepares every operation with its sample arguments, a check each.
    async fn prepare_all(
        &mut self,
        operations: &[OperationName],
        request: &CertifyRequest,
    ) -> Vec<Prepared> {
        let mut prepared = Vec::new();
        for op in operations {
            let id = format!("actions.prepare.{op}");
            let args = request
                .actions
                .get(op.as_str())
                .cloned()
                .unwrap_or_default();
            let ctx = self.fresh();
            match self.prepare(&ctx, op, &args).await {
                Ok(p) => {
                    let left = p.expires_at.unix_seconds() - self.state.clock.now().unix_seconds();
                    let why = format!(
                        "prepared `{}`: a valid answer expiring in {left} s",
                        p.action_id
                    );
                    self.checks.pass(id, "H-3", why);
                    prepared.push((op.clone(), args, Some((p, ctx))));
                }
                Err(why) => {
                    self.checks.fail(id, "H-3", why);
                    prepared.push((op.clone(), args, None));
                }
            }
        }
        prepared
    }

    /// Skips every action check after `actions.tools`.
    fn skip_actions(&mut self, operations: &[OperationName], why: &str) {
        for op in operations {
            self.checks
                .skip(format!("actions.prepare.{op}"), "H-3", why);
        }
        self.skip_after_prepare(operations, why);
    }

    /// Skips every action check after the preparations.
    fn skip_after_prepare(&mut self, operations: &[OperationName], why: &str) {
        self.checks.skip("actions.status", "H-3", why);
        self.checks.skip("actions.wrong_token", "V-3", why);
        for op in operations {
            self.checks
                .skip(format!("actions.execute.{op}"), "V-3", why);
        }
        for bad in &BAD_PROOFS {
            self.checks.skip(bad.id, "V-3", why);
        }
    }

    /// `prepare_action` for `op` with `args` in `ctx`, unread.
    async fn prepare_raw(
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
    async fn prepare(
        &self,
        ctx: &ProviderContext,
        op: &OperationName,
        args: &Map<String, Value>,
    ) -> Result<PreparedAction, String> {
        let raw = self
            .prepare_raw(ctx, op, args)
            .await
            .map_err(|e| format!("prepare_action failed: {}", call_failure(&e)))?;
        if let Some(words) = refusal_text(&raw) {
            return Err(format!(
                "prepare_action refused `{op}` ({words}): check the sample arguments and that the test person exists in your system"
            ));
        }
        let result = ToolResult::from_mcp_json(&raw)
            .map_err(|_| "prepare_action's answer is not an MCP tool result".to_owned())?;
        parse_prepare_answer(&result, op, self.state.clock.now()).map_err(|v| {
            let mut said: Vec<String> = v.iter().map(ToString::to_string).collect();
            said.dedup();
            format!(
                "prepare_action's answer breaks the contract: {}",
                said.join("; ")
            )
        })
    }

    /// What `get_action_status` says about `id` (in the conversation `ctx`).
    async fn status(&self, ctx: &ProviderContext, id: &ActionId) -> Seen {
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
                return Seen::Unusable(format!("get_action_status failed: {}", call_failure(&e)));
            }
        };
        let Ok(result) = ToolResult::from_mcp_json(&raw) else {
            return Seen::Unusable("get_action_status's answer is not an MCP tool result".into());
        };
        match parse_action_answer(&result, id) {
            Ok(ActionAnswer::Reported(r)) => Seen::Status(r.status),
            Ok(ActionAnswer::ToolError) => Seen::Unusable(
                "get_action_status answered isError: it must report the action's status".into(),
            ),
            Err(v) => {
                let said: Vec<String> = v.iter().map(ToString::to_string).collect();
                Seen::Unusable(format!(
                    "get_action_status's answer breaks the contract: {}",
                    said.join("; ")
                ))
            }
        }
    }

    /// V-3: `target` executed with a valid proof must come back `completed`, and
    /// `get_action_status` must agree.
    async fn execute_valid(
        &mut self,
        ctx: &ProviderContext,
        target: &PreparedAction,
        step_up: bool,
    ) -> Result<String, String> {
        let now = self.state.clock.now().unix_seconds();
        let claims = self.claims(ctx, target, now);
        let signed = if step_up {
            if self.state.step_up.is_none() {
                return Err("this deployment runs no passkey ceremony (COUNTERSIGN_STEP_UP_ORIGIN is not set): a passkey operation cannot be certified".into());
            }
            self.stepup_proof(&claims).await
        } else {
            sign_proof(self.state.signer.as_ref(), &claims)
                .await
                .map_err(|_| ())
        };
        let proof =
            signed.map_err(|()| "the platform could not sign the proof; try again".to_owned())?;
        let id = &target.action_id;
        let answer = self.execute(ctx, id, Some(&proof)).await;
        let install = format!(
            "a valid proof was refused: install the platform's public key (or follow its JWKS), and accept iss `{}` and aud `{}` exactly",
            claims.iss, claims.aud
        );
        let report = match answer {
            Err(ProviderError::Http { status }) => {
                return Err(format!("HTTP {status}: {install}"));
            }
            Err(e) => {
                return Err(format!(
                    "execute_action gave no answer ({}): the outcome is unknown",
                    call_failure(&e)
                ));
            }
            Ok(raw) => {
                if let Some(words) = refusal_text(&raw) {
                    return Err(format!("{words}; {install}"));
                }
                read_report(&raw, id)?
            }
        };
        if report.status != RemoteStatus::Completed {
            let said = report
                .message
                .map(|m| format!(" ({})", m.as_str()))
                .unwrap_or_default();
            return Err(format!(
                "the proof was accepted but the action ended `{}`{said}: give sample arguments the test person can carry out",
                report.status.as_str()
            ));
        }
        self.executed.push(id.to_string());
        match self.status(ctx, id).await {
            Seen::Status(RemoteStatus::Completed) => Ok(format!(
                "executed `{id}` with a valid proof: completed, and get_action_status agrees"
            )),
            Seen::Status(s) => Err(format!(
                "execute_action said `completed` but get_action_status says `{}`",
                s.as_str()
            )),
            Seen::Unusable(why) => Err(why),
        }
    }

    /// One bad proof: a fresh action in a conversation of its own (N-7), `execute_action`
    /// with the proof (must be refused), then `get_action_status` (must still be
    /// `pending_confirmation`).
    async fn bad_proof(
        &self,
        bad: &BadProof,
        op: &OperationName,
        args: &Map<String, Value>,
        other: &PreparedAction,
    ) -> Refusal {
        let ctx = self.fresh();
        let target = match self.prepare(&ctx, op, args).await {
            Ok(t) => t,
            Err(r) => {
                return Refusal::NoAnswer(format!("could not prepare an action to test with: {r}"));
            }
        };
        if target.action_id == other.action_id {
            return Refusal::Accepted(
                "prepare_action returned an actionId it had returned before: every preparation needs a new one".into(),
            );
        }
        let forged = if bad.id.starts_with("stepup.") {
            self.forge_stepup(&ctx, bad.id, &target).await
        } else {
            self.forge(&ctx, bad.id, &target).await
        };
        let Ok(proof) = forged else {
            return Refusal::NoAnswer(
                "the platform could not sign the test proof; try again".into(),
            );
        };
        let answer = self.execute(&ctx, &target.action_id, proof.as_ref()).await;
        let execute = refused(
            answer,
            &format!("given {}, execute_action", bad.what),
            |raw| match read_report(raw, &target.action_id) {
                Ok(r) => format!(
                    "it answered `{}` instead of refusing the proof with isError: {}",
                    r.status.as_str(),
                    bad.fix
                ),
                Err(e) => format!("{e}: {}", bad.fix),
            },
        );
        let seen = self.status(&ctx, &target.action_id).await;
        match (execute, seen) {
            (Refusal::Accepted(what), _) => Refusal::Accepted(what),
            (_, Seen::Status(s)) if s != RemoteStatus::PendingConfirmation => {
                let executed = matches!(s, RemoteStatus::Completed | RemoteStatus::Executing);
                let what = if executed {
                    "the action was executed"
                } else {
                    "the action must still be pending_confirmation"
                };
                Refusal::Accepted(format!(
                    "given {}, get_action_status says `{}`: {what}: {}",
                    bad.what,
                    s.as_str(),
                    bad.fix
                ))
            }
            (Refusal::NoAnswer(why), _) | (_, Seen::Unusable(why)) => Refusal::NoAnswer(why),
            (Refusal::Refused(how), Seen::Status(_)) => Refusal::Refused(format!(
                "{how}; get_action_status says `pending_confirmation`"
            )),
        }
    }

    /// `execute_action` for `id` in `ctx` with `proof` (none: no header at all).
    async fn execute(
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
    fn fresh(&self) -> ProviderContext {
        ProviderContext {
            conversation: self.state.ids.case_id(),
            ..self.ctx.clone()
        }
    }
}

/// An `execute_action` answer read as a status report.
fn read_report(
    raw: &Value,
    id: &ActionId,
) -> Result<countersign_domain::outcome::ActionReport, String> {
    let result = ToolResult::from_mcp_json(raw)
        .map_err(|_| "execute_action's answer is not an MCP tool result".to_owned())?;
    match parse_action_answer(&result, id) {
        Ok(ActionAnswer::Reported(r)) => Ok(r),
        Ok(ActionAnswer::ToolError) => Err("execute_action answered isError".into()),
        Err(v) => {
            let said: Vec<String> = v.iter().map(ToString::to_string).collect();
            Err(format!(
                "execute_action's answer breaks the contract: {}",
                said.join("; ")
            ))
        }
    }
}
