//! The provider certification run (H-1 … H-3): the saved configuration checked against
//! the tenant's own server, each check with a reason a provider engineer can act on.
//!
//! - H-2, per allowed consultation: listed with an `outputSchema`, not a write, and a call
//!   with the administrator's sample arguments, as their test user, that answers in time
//!   with `structuredContent` matching the schema.
//! - H-3, when operations are configured: the three action tools are listed; a prepare
//!   with the administrator's test arguments is a valid answer; then
//!   one fresh preparation per bad proof, each sent to `execute_action`, which must refuse
//!   it, and `get_action_status`, which must still say the action is not executed.
//!
//! A valid proof is never sent: every proof the run signs with the platform's key is
//! wrong in one claim for the call that carries it (expired, another audience, another
//! action), and the rest are unsigned or signed by [`UNTRUSTED_KEY`], a key no provider
//! may trust. Decision 0026.

use crate::mcp;
use crate::state::{AdminError, AdminState, store_down};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_domain::certification::{Certification, CertifiedSubject, Checks};
use countersign_domain::config::McpConfig;
use countersign_domain::ids::{ActionId, OperationName, UserId};
use countersign_domain::outcome::{ActionAnswer, parse_action_answer};
use countersign_domain::ports::{
    Confirmation, Provider, ProviderContext, ProviderError, ProviderTool, Tenant,
};
use countersign_domain::prepare::{PreparedAction, parse_prepare_answer};
use countersign_domain::proof::{PROOF_TYPE, Proof, ProofClaims, sign_proof};
use countersign_domain::proposal::RemoteStatus;
use countersign_domain::tool_result::ToolResult;
use countersign_domain::vetting;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// A key no provider may trust: the run signs its "another key", embedded-`jwk` and `jku`
/// proofs with it. Public on purpose (it is in the source).
pub const UNTRUSTED_KEY: &str = include_str!("untrusted-key.pem");

/// The whole run fits in this (under API Gateway's 29 s); what is left is skipped.
pub const RUN_LIMIT: Duration = Duration::from_secs(25);

/// The three action tools of the contract and the argument each must declare.
pub(crate) const ACTION_TOOLS: [(&str, &[&str]); 3] = [
    ("prepare_action", &["operation", "arguments"]),
    ("execute_action", &["actionId"]),
    ("get_action_status", &["actionId"]),
];

/// What the administrator gives a run.
#[derive(Debug, Clone)]
pub struct CertifyRequest {
    /// The user the test calls are made for (`X-MCP-User-Id`).
    pub test_user: UserId,
    /// Sample arguments per allowed consultation.
    pub consultations: BTreeMap<String, Map<String, Value>>,
    /// The operation and arguments prepared (needed when operations are configured).
    pub action: Option<TestAction>,
}

/// The preparation the action checks start from.
#[derive(Debug, Clone)]
pub struct TestAction {
    /// One of the configured operations.
    pub operation: OperationName,
    /// Its arguments.
    pub arguments: Map<String, Value>,
}

/// H-1: runs every check on the saved configuration and stores the result with the
/// configuration it checked (and an audit record).
pub async fn run(
    state: &AdminState,
    tenant: &Tenant,
    request: &CertifyRequest,
) -> Result<Certification, AdminError> {
    // V-7: one run in flight per tenant; the lease outlives the run's own limit.
    let hold = i64::try_from(RUN_LIMIT.as_secs()).unwrap_or(25) + 35;
    crate::lease::one_at_a_time(state, &tenant.id, "certification run", hold, async {
        run_held(state, tenant, request).await
    })
    .await
}

async fn run_held(
    state: &AdminState,
    tenant: &Tenant,
    request: &CertifyRequest,
) -> Result<Certification, AdminError> {
    let stored = mcp::current(state, tenant)
        .await?
        .ok_or(AdminError::NotConfigured)?;
    check_request(&stored.config, request)?;
    let token = mcp::token_of(state, tenant, Some(&stored))
        .await?
        .ok_or(AdminError::NotConfigured)?;
    let ctx = ProviderContext {
        tenant: tenant.id.clone(),
        user: request.test_user.clone(),
        conversation: state.ids.case_id(),
        server_url: stored.config.server_url.clone(),
        service_token: token,
        config_version: stored.version,
    };
    let mut run = Run {
        state,
        provider: state.provider.as_ref(),
        ctx,
        config: &stored.config,
        until: Instant::now() + RUN_LIMIT,
        checks: Checks::default(),
    };
    run.all(request).await;
    let certification = Certification {
        at: state.clock.now(),
        subject: CertifiedSubject::of(&stored),
        test_user: request.test_user.to_string(),
        checks: run.checks.into_vec(),
    };
    let failed: Vec<&str> = certification
        .checks
        .iter()
        .filter(|c| c.status != countersign_domain::certification::CheckStatus::Passed)
        .map(|c| c.id.as_str())
        .collect();
    let changes = json!({
        "configVersion": stored.version,
        "passed": certification.passed(),
        "notPassed": failed,
    });
    let record = crate::audit::by_admin(state, tenant, "mcp.certify", changes);
    state
        .tenants
        .put_certification(&tenant.id, &certification, &record)
        .await
        .map_err(store_down)?;
    Ok(certification)
}

/// The tenant's latest run.
pub async fn latest(state: &AdminState, tenant: &Tenant) -> Result<Certification, AdminError> {
    state
        .tenants
        .latest_certification(&tenant.id)
        .await
        .map_err(store_down)?
        .ok_or(AdminError::NoCertification)
}

/// The request must name only allowed consultations and a configured operation.
fn check_request(config: &McpConfig, request: &CertifyRequest) -> Result<(), AdminError> {
    let mut errors = Vec::new();
    for name in request.consultations.keys() {
        if !config.allowed_tools.iter().any(|t| t.as_str() == name) {
            errors.push((
                format!("consultations.{name}"),
                format!("`{name}` is not one of the saved allowedTools"),
            ));
        }
    }
    let operations = &config.action_policy.operations;
    match &request.action {
        None if !operations.is_empty() => errors.push((
            "action".to_owned(),
            "give the operation and test arguments of one configured operation: the action checks prepare it".to_owned(),
        )),
        Some(a) if !operations.contains(&a.operation) => errors.push((
            "action.operation".to_owned(),
            format!("`{}` is not one of the saved operations", a.operation),
        )),
        _ => {}
    }
    match errors.first().cloned() {
        None => Ok(()),
        Some((field, message)) => Err(AdminError::Invalid {
            field,
            message,
            errors,
        }),
    }
}

/// Why a provider call gave no usable answer, for a reason.
fn call_failure(e: &ProviderError) -> String {
    match e {
        ProviderError::Unreachable(_) => "your server could not be reached".into(),
        ProviderError::Timeout => "your server did not answer in time".into(),
        ProviderError::Interrupted => "the connection dropped before the whole answer".into(),
        other => other.to_string(),
    }
}

/// One bad proof of H-3: its check id, what it is, and what the provider must check.
struct BadProof {
    id: &'static str,
    what: &'static str,
    fix: &'static str,
}

/// V-3: the bad-proof series. Each is sent on its own fresh preparation; after it the
/// action must still be `pending_confirmation`. Every proof the platform signs here is
/// wrong in exactly one way, so a provider that skips that one check executes it.
const BAD_PROOFS: [BadProof; 20] = [
    bad(
        "proof.none",
        "no X-MCP-Confirmation header",
        "refuse execute_action without a proof",
    ),
    bad(
        "proof.alg_none",
        "an unsigned proof (alg: none)",
        "accept only RS256 and always verify the signature",
    ),
    bad(
        "proof.hs256_public_key",
        "an HS256 proof keyed with the platform's public key",
        "accept only RS256 and always verify the signature",
    ),
    bad(
        "proof.other_key",
        "a proof signed by another key under the platform's kid",
        "verify the signature with the installed public key",
    ),
    bad(
        "proof.unknown_kid",
        "a proof under a kid the platform never published",
        "accept only the installed kids (or those of the JWKS)",
    ),
    bad(
        "proof.expired",
        "a proof that expired 9 minutes ago",
        "check exp against your clock (at most a few seconds of leeway)",
    ),
    bad(
        "proof.long_lifetime",
        "a proof valid for 10 minutes",
        "refuse a proof whose exp - iat exceeds 60 s",
    ),
    bad(
        "proof.wrong_iss",
        "a proof from another issuer (iss)",
        "require iss to equal the platform's issuer exactly",
    ),
    bad(
        "proof.wrong_aud",
        "a proof addressed to another provider (aud)",
        "require aud to equal your audience exactly (a string, not an array)",
    ),
    bad(
        "proof.wrong_typ",
        "a proof whose typ is not support-action+jwt",
        "require typ support-action+jwt",
    ),
    bad(
        "proof.wrong_sub",
        "a proof for another person (sub)",
        "require sub to equal X-MCP-User-Id",
    ),
    bad(
        "proof.wrong_tenant",
        "a proof for another tenant (tenantId)",
        "require tenantId to equal X-MCP-Tenant-Id",
    ),
    bad(
        "proof.wrong_conversation",
        "a proof for another conversation (conversationId)",
        "require conversationId to equal X-MCP-Conversation-Id",
    ),
    bad(
        "proof.wrong_action_id",
        "a proof bound to another actionId",
        "require the proof's actionId to equal the requested one",
    ),
    bad(
        "proof.wrong_operation",
        "a proof for another operation",
        "require operation to equal the stored action's",
    ),
    bad(
        "proof.wrong_arguments_hash",
        "a proof for other arguments (argumentsHash)",
        "require argumentsHash to equal the stored action's",
    ),
    bad(
        "proof.wrong_summary_hash",
        "a proof for another summary (summaryHash)",
        "require summaryHash to equal the stored action's",
    ),
    bad(
        "proof.embedded_jwk",
        "a proof carrying its own key in a jwk header",
        "refuse any jwk, jku, x5u or x5c header and use only the installed key",
    ),
    bad(
        "proof.jku",
        "a proof pointing at a key URL (jku header)",
        "refuse any jwk, jku, x5u or x5c header and use only the installed key",
    ),
    bad(
        "proof.x5u",
        "a proof pointing at a certificate URL (x5u header)",
        "refuse any jwk, jku, x5u or x5c header and use only the installed key",
    ),
];

const fn bad(id: &'static str, what: &'static str, fix: &'static str) -> BadProof {
    BadProof { id, what, fix }
}

struct Run<'a> {
    state: &'a AdminState,
    provider: &'a dyn Provider,
    ctx: ProviderContext,
    config: &'a McpConfig,
    until: Instant,
    checks: Checks,
}

impl Run<'_> {
    async fn all(&mut self, request: &CertifyRequest) {
        let tools = match self.timed(self.provider.list_tools(&self.ctx)).await {
            Ok(tools) => {
                self.checks.pass(
                    "tools.list",
                    "H-2",
                    format!("tools/list answered with {} tools", tools.len()),
                );
                tools
            }
            Err(e) => {
                self.checks.fail(
                    "tools.list",
                    "H-2",
                    format!("tools/list failed: {}", call_failure(&e)),
                );
                return;
            }
        };
        for name in self.config.allowed_tools.clone() {
            let sample = request.consultations.get(name.as_str());
            self.consultation(&tools, name.as_str(), sample).await;
        }
        if let Some(action) = &request.action
            && !self.config.action_policy.operations.is_empty()
        {
            self.actions(&tools, action).await;
        }
    }

    /// A provider call bounded by what is left of the run.
    async fn timed<T>(
        &self,
        call: impl Future<Output = Result<T, ProviderError>>,
    ) -> Result<T, ProviderError> {
        let left = self.until.saturating_duration_since(Instant::now());
        tokio::time::timeout(left, call)
            .await
            .unwrap_or(Err(ProviderError::Timeout))
    }

    /// H-2 for one allowed consultation.
    async fn consultation(
        &mut self,
        tools: &[ProviderTool],
        name: &str,
        sample: Option<&Map<String, Value>>,
    ) {
        let id = |what: &str| format!("consultation.{name}.{what}");
        let Some(tool) = tools.iter().find(|t| t.name.as_str() == name) else {
            let reason =
                format!("`{name}` is not in tools/list: publish it or remove it from allowedTools");
            self.checks.fail(id("listed"), "H-2", reason);
            self.checks.skip(id("call"), "H-2", "not listed");
            return;
        };
        let ok = self
            .checks
            .record(id("listed"), "H-2", listed(tool, self.config));
        if !ok {
            self.checks.skip(id("call"), "H-2", "fix the listing first");
            return;
        }
        let Some(sample) = sample else {
            let reason = format!(
                "no sample arguments were given for `{name}` (consultations.{name} in the request)"
            );
            self.checks.fail(id("call"), "H-2", reason);
            return;
        };
        let started = Instant::now();
        let answer = self
            .timed(self.provider.call_tool(&self.ctx, name, sample, None))
            .await;
        let took = started.elapsed().as_millis();
        let verdict = match answer {
            Err(e) => Err(format!("the call failed: {}", call_failure(&e))),
            Ok(raw) => conforms(tool, &raw)
                .map(|()| format!("answered in {took} ms, matching its outputSchema")),
        };
        self.checks.record(id("call"), "H-2", verdict);
    }

    /// H-3.
    async fn actions(&mut self, tools: &[ProviderTool], action: &TestAction) {
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
            self.skip_rest("actions.prepare", "the action tools are not all listed");
            return;
        }
        let first = match self.prepare(action).await {
            Ok(p) => p,
            Err(reason) => {
                self.checks.fail("actions.prepare", "H-3", reason);
                self.skip_rest("actions.status", "no action could be prepared");
                return;
            }
        };
        let left = first.expires_at.unix_seconds() - self.state.clock.now().unix_seconds();
        self.checks.pass(
            "actions.prepare",
            "H-3",
            format!(
                "prepared `{}`: a valid answer expiring in {left} s",
                first.action_id
            ),
        );
        let status = self.unexecuted(&first.action_id).await;
        self.checks.record("actions.status", "H-3", status);
        for bad in &BAD_PROOFS {
            if Instant::now() >= self.until {
                self.checks.skip(
                    bad.id,
                    "H-3",
                    format!("the run's {} s limit was reached", RUN_LIMIT.as_secs()),
                );
                continue;
            }
            let verdict = self.bad_proof(bad, action, &first).await;
            self.checks.record(bad.id, "H-3", verdict);
        }
    }

    /// Skips `from` and every bad-proof check (the rest of H-3).
    fn skip_rest(&mut self, from: &str, why: &str) {
        if from == "actions.prepare" {
            self.checks.skip("actions.prepare", "H-3", why);
        }
        self.checks.skip("actions.status", "H-3", why);
        for bad in &BAD_PROOFS {
            self.checks.skip(bad.id, "H-3", why);
        }
    }

    /// A fresh preparation, read against.
    async fn prepare(&self, action: &TestAction) -> Result<PreparedAction, String> {
        let mut args = Map::new();
        args.insert("operation".into(), json!(action.operation.as_str()));
        args.insert("arguments".into(), Value::Object(action.arguments.clone()));
        let raw = self
            .timed(
                self.provider
                    .call_tool(&self.ctx, "prepare_action", &args, None),
            )
            .await
            .map_err(|e| format!("prepare_action failed: {}", call_failure(&e)))?;
        let result = ToolResult::from_mcp_json(&raw)
            .map_err(|_| "prepare_action's answer is not an MCP tool result".to_owned())?;
        parse_prepare_answer(&result, &action.operation, self.state.clock.now()).map_err(|v| {
            let mut rules: Vec<&str> = v.iter().map(|v| v.rule()).collect();
            rules.dedup();
            format!(
                "prepare_action's answer breaks the contract: {}",
                rules.join("; ")
            )
        })
    }

    /// `get_action_status` must report the action as not executed.
    async fn unexecuted(&self, id: &ActionId) -> Result<String, String> {
        let mut args = Map::new();
        args.insert("actionId".into(), json!(id.as_str()));
        let raw = self
            .timed(
                self.provider
                    .call_tool(&self.ctx, "get_action_status", &args, None),
            )
            .await
            .map_err(|e| format!("get_action_status failed: {}", call_failure(&e)))?;
        let result = ToolResult::from_mcp_json(&raw)
            .map_err(|_| "get_action_status's answer is not an MCP tool result".to_owned())?;
        match parse_action_answer(&result, id) {
            Ok(ActionAnswer::Reported(r)) => match r.status {
                RemoteStatus::PendingConfirmation => {
                    Ok("get_action_status says `pending_confirmation`".into())
                }
                RemoteStatus::Completed | RemoteStatus::Executing => Err(format!(
                    "get_action_status says `{}`: the action was executed",
                    r.status.as_str()
                )),
                // V-3: still pending_confirmation, nothing else.
                s => Err(format!(
                    "get_action_status says `{}`: the action must still be pending_confirmation",
                    s.as_str()
                )),
            },
            Ok(ActionAnswer::ToolError) => {
                Err("get_action_status answered isError: it must report the action's status".into())
            }
            Err(v) => {
                let rules: Vec<&str> = v.iter().map(|v| v.rule()).collect();
                Err(format!(
                    "get_action_status's answer breaks the contract: {}",
                    rules.join("; ")
                ))
            }
        }
    }

    /// One bad proof: a fresh action, `execute_action` with the proof (must be refused),
    /// then `get_action_status` (must not be executed).
    async fn bad_proof(
        &self,
        bad: &BadProof,
        action: &TestAction,
        other: &PreparedAction,
    ) -> Result<String, String> {
        let target = self
            .prepare(action)
            .await
            .map_err(|r| format!("could not prepare an action to test with: {r}"))?;
        if target.action_id == other.action_id {
            return Err("prepare_action returned an actionId it had returned before (A-14)".into());
        }
        let proof = self
            .forge(bad.id, &target)
            .await
            .map_err(|()| "the platform could not sign the test proof; try again".to_owned())?;
        let refused = self.execute(&target.action_id, proof.as_ref()).await;
        let status = self.unexecuted(&target.action_id).await;
        match (refused, status) {
            (Ok(how), Ok(status)) => Ok(format!("refused {} ({how}); {status}", bad.what)),
            (Err(why), _) | (_, Err(why)) => Err(format!("given {}, {why}: {}", bad.what, bad.fix)),
        }
    }

    /// `execute_action` with `proof`: `Ok` when refused.
    async fn execute(&self, id: &ActionId, proof: Option<&Proof>) -> Result<String, String> {
        let mut args = Map::new();
        args.insert("actionId".into(), json!(id.as_str()));
        let answer = match proof {
            None => {
                self.timed(
                    self.provider
                        .call_tool(&self.ctx, "execute_action", &args, None),
                )
                .await
            }
            Some(proof) => {
                let opened = match self.timed(self.provider.open(&self.ctx)).await {
                    Ok(o) => o,
                    Err(e) => return Err(format!("the connection failed: {}", call_failure(&e))),
                };
                let confirmation = Confirmation {
                    opened: &opened,
                    proof,
                };
                self.timed(self.provider.call_tool(
                    &self.ctx,
                    "execute_action",
                    &args,
                    Some(confirmation),
                ))
                .await
            }
        };
        let raw = match answer {
            Ok(raw) => raw,
            Err(ProviderError::Http { status, .. }) if (400..500).contains(&status) => {
                return Ok(format!("HTTP {status}"));
            }
            Err(e) => {
                return Err(format!(
                    "execute_action gave no answer ({})",
                    call_failure(&e)
                ));
            }
        };
        let Ok(result) = ToolResult::from_mcp_json(&raw) else {
            return Err("execute_action's answer is not an MCP tool result".into());
        };
        match parse_action_answer(&result, id) {
            Ok(ActionAnswer::ToolError) => Ok("isError".into()),
            // V-3: `failed` or `conflict` says the provider looked at the action, not that
            // it refused the proof: a bad proof is refused (isError) before any work.
            Ok(ActionAnswer::Reported(r)) => Err(format!(
                "execute_action answered `{}` instead of refusing the proof with isError",
                r.status.as_str()
            )),
            Err(_) => Err("execute_action's answer breaks the contract".into()),
        }
    }

    /// The claims of a valid proof for `target` (the base every bad proof changes).
    fn claims(&self, target: &PreparedAction, now: i64) -> ProofClaims {
        ProofClaims {
            iss: self.state.issuer.clone(),
            aud: self.config.audience().to_owned(),
            sub: self.ctx.user.to_string(),
            tenant_id: self.ctx.tenant.to_string(),
            conversation_id: self.ctx.conversation.to_string(),
            action_id: target.action_id.to_string(),
            operation: target.operation.to_string(),
            arguments_hash: target.arguments_hash.to_string(),
            summary_hash: target.summary_hash.to_string(),
            message_id: self.state.ids.message_id().to_string(),
            presented_message_id: self.state.ids.message_id().to_string(),
            jti: self.state.ids.proof_jti(),
            iat: now,
            exp: now + 60,
        }
    }

    /// V-3: `c` wrong in the one claim check `id` is about, when `id` is a claim check.
    fn wrong_claim(&self, id: &str, mut c: ProofClaims, now: i64) -> Option<ProofClaims> {
        match id {
            "proof.expired" => (c.iat, c.exp) = (now - 600, now - 540),
            "proof.long_lifetime" => c.exp = now + 600,
            "proof.wrong_iss" => c.iss = "https://issuer.attacker.example/mcp-actions".into(),
            "proof.wrong_aud" => c.aud = "https://another-provider.example/mcp".into(),
            "proof.wrong_sub" => c.sub = format!("{}-other", self.ctx.user),
            "proof.wrong_tenant" => c.tenant_id = format!("{}x", self.ctx.tenant),
            "proof.wrong_conversation" => {
                c.conversation_id = self.state.ids.case_id().to_string();
            }
            "proof.wrong_action_id" => c.action_id = format!("act_{}", self.state.ids.proof_jti()),
            "proof.wrong_operation" => c.operation = format!("{}_other", c.operation),
            "proof.wrong_arguments_hash" => c.arguments_hash = other_hash(&c.arguments_hash),
            "proof.wrong_summary_hash" => c.summary_hash = other_hash(&c.summary_hash),
            _ => return None,
        }
        Some(c)
    }

    /// The proof of check `id` for `target` (`None`: no proof at all): the platform's
    /// signature over one wrong claim, or a right claim set under a wrong header, key or
    /// algorithm.
    async fn forge(&self, id: &str, target: &PreparedAction) -> Result<Option<Proof>, ()> {
        let now = self.state.clock.now().unix_seconds();
        let c = self.claims(target, now);
        let signer = self.state.signer.as_ref();
        if let Some(wrong) = self.wrong_claim(id, c.clone(), now) {
            return Ok(Some(sign_proof(signer, &wrong).await.map_err(|_| ())?));
        }
        let kid = signer.key_id().await.map_err(|_| ())?;
        let header = |extra: Value| {
            let mut h = json!({"alg": "RS256", "typ": PROOF_TYPE, "kid": kid});
            if let (Some(h), Value::Object(extra)) = (h.as_object_mut(), extra) {
                h.extend(extra);
            }
            h
        };
        // The platform's key under a header of the run's choosing.
        let (kid, c) = (&kid, &c);
        let platform = |h: Value| async move {
            let input = signing_input(&h, c);
            let sig = signer.sign_rs256(kid, input.as_bytes()).await;
            let sig = sig.map_err(|_| ())?;
            Ok::<_, ()>(Proof::unchecked(format!(
                "{input}.{}",
                URL_SAFE_NO_PAD.encode(sig)
            )))
        };
        let attacker = |extra: Value| untrusted(&header(extra), c);
        let proof = match id {
            "proof.none" => return Ok(None),
            "proof.alg_none" => {
                let input = signing_input(&header(json!({"alg": "none"})), c);
                Proof::unchecked(format!("{input}."))
            }
            "proof.hs256_public_key" => {
                let pem = signer.verification_key().await.map_err(|_| ())?;
                hs256(&header(json!({"alg": "HS256"})), c, &pem.public_key_pem)?
            }
            "proof.other_key" => attacker(json!({}))?,
            "proof.embedded_jwk" => attacker(json!({"kid": "attacker", "jwk": untrusted_jwk()?}))?,
            "proof.jku" => attacker(
                json!({"kid": "attacker", "jku": "https://keys.attacker.example/jwks.json"}),
            )?,
            "proof.x5u" => attacker(
                json!({"kid": "attacker", "x5u": "https://keys.attacker.example/cert.pem"}),
            )?,
            "proof.unknown_kid" => platform(header(json!({"kid": "never-published"}))).await?,
            "proof.wrong_typ" => platform(header(json!({"typ": "JWT"}))).await?,
            _ => return Err(()),
        };
        Ok(Some(proof))
    }
}

/// `base64url(header).base64url(claims)`.
fn signing_input(header: &Value, claims: &ProofClaims) -> String {
    let claims = serde_json::to_vec(claims).unwrap_or_default();
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims)
    )
}

/// A compact JWS of `header` and `claims` signed by [`UNTRUSTED_KEY`].
fn untrusted(header: &Value, claims: &ProofClaims) -> Result<Proof, ()> {
    use jsonwebtoken::{Algorithm, EncodingKey, crypto};
    let key = EncodingKey::from_rsa_pem(UNTRUSTED_KEY.as_bytes()).map_err(|_| ())?;
    let input = signing_input(header, claims);
    let signature = crypto::sign(input.as_bytes(), &key, Algorithm::RS256).map_err(|_| ())?;
    Ok(Proof::unchecked(format!("{input}.{signature}")))
}

/// A compact JWS of `header` and `claims` MACed with HS256 keyed with `key` (the
/// platform's public key PEM: the algorithm-confusion attack).
fn hs256(header: &Value, claims: &ProofClaims, key: &str) -> Result<Proof, ()> {
    use jsonwebtoken::{Algorithm, EncodingKey, crypto};
    let input = signing_input(header, claims);
    let key = EncodingKey::from_secret(key.as_bytes());
    let mac = crypto::sign(input.as_bytes(), &key, Algorithm::HS256).map_err(|_| ())?;
    Ok(Proof::unchecked(format!("{input}.{mac}")))
}

/// A hash that is not `hash` (same form: 64 lower-case hex digits).
fn other_hash(hash: &str) -> String {
    countersign_domain::hash::Sha256Hex::digest(format!("not {hash}"))
        .as_str()
        .to_owned()
}

/// The public JWK of [`UNTRUSTED_KEY`].
fn untrusted_jwk() -> Result<Value, ()> {
    use jsonwebtoken::{Algorithm, EncodingKey, jwk::Jwk};
    let key = EncodingKey::from_rsa_pem(UNTRUSTED_KEY.as_bytes()).map_err(|_| ())?;
    let jwk = Jwk::from_encoding_key(&key, Algorithm::RS256).map_err(|_| ())?;
    serde_json::to_value(jwk).map_err(|_| ())
}

/// H-2: a consultation is listed with an `outputSchema` and is not a write.
fn listed(tool: &ProviderTool, config: &McpConfig) -> Result<String, String> {
    let name = tool.name.as_str();
    let mut problems = Vec::new();
    if tool.output_schema.is_none() {
        problems.push(format!("`{name}` declares no outputSchema: declare one, and answer structuredContent that matches it"));
    }
    // H-2 by V-1's rule, the one the save and the run time apply.
    if let Some(why) = vetting::refusal(tool, &config.action_policy.operations) {
        problems.push(format!(
            "`{name}` {why}: a consultation must only read; remove it from allowedTools"
        ));
    }
    if problems.is_empty() {
        Ok(format!(
            "`{name}` is listed, read-only, with an outputSchema"
        ))
    } else {
        Err(problems.join("; "))
    }
}

/// Whether a consultation's answer is a result whose `structuredContent` matches the
/// tool's `outputSchema`.
fn conforms(tool: &ProviderTool, raw: &Value) -> Result<(), String> {
    let obj = raw
        .as_object()
        .ok_or("the answer is not a CallToolResult object")?;
    if obj.get("isError").and_then(Value::as_bool) == Some(true) {
        let text = obj
            .get("content")
            .and_then(|c| c.get(0))
            .and_then(|c| c.get("text"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let text: String = text.chars().take(200).collect();
        return Err(format!(
            "the call answered isError: \"{text}\" — check the sample arguments and the test user"
        ));
    }
    let Some(schema) = &tool.output_schema else {
        return Err("no outputSchema".into());
    };
    let Some(sc) = obj.get("structuredContent") else {
        return Err(
            "the answer has no structuredContent although the tool declares an outputSchema".into(),
        );
    };
    let validator = jsonschema::validator_for(schema)
        .map_err(|_| "the tool's outputSchema is not a valid JSON Schema".to_owned())?;
    let problems: Vec<String> = validator
        .iter_errors(sc)
        .take(3)
        .map(|e| {
            let at = e.instance_path.as_str();
            format!("{} at `{}`", e, if at.is_empty() { "/" } else { at })
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "structuredContent does not match the outputSchema: {}",
            problems.join("; ")
        ))
    }
}

/// What is wrong with action tool `name` in `tools`, if anything.
fn action_tool_problem(tools: &[ProviderTool], name: &str, args: &[&str]) -> Option<String> {
    let Some(tool) = tools.iter().find(|t| t.name.as_str() == name) else {
        return Some(format!("`{name}` is not in tools/list"));
    };
    let properties = tool
        .descriptor
        .get("inputSchema")
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    let missing: Vec<&str> = args
        .iter()
        .copied()
        .filter(|a| properties.is_none_or(|p| !p.contains_key(*a)))
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "`{name}`'s inputSchema does not declare {}",
            missing.join(", ")
        )
    })
}
