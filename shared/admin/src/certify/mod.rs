//! The provider certification run (H-1 … H-4, V-3, V-4): the saved configuration checked
//! against the tenant's own server, each check with a reason a provider engineer can act on.
//!
//! - Per allowed consultation (H-2, V-4): listed read-only with an `outputSchema`; the
//!   administrator's sample call, as the synthetic test person, answers in time with
//!   `structuredContent` matching the schema; the same call with a wrong service token is
//!   refused; with a second synthetic person, their call for the first person's resource is
//!   refused.
//! - When operations are configured (H-3, V-3): the three action tools are listed; every
//!   operation is prepared with its sample arguments; a preparation with
//!   a wrong service token is refused; with the administrator's consent one action per
//!   operation is executed with a valid proof and must complete; then each proof of the
//!   bad-proof series goes to its own fresh preparation, which must still be
//!   `pending_confirmation` afterwards.
//!
//! A check whose prerequisite failed, or that could not be made (no answer), is skipped
//! with the reason; skipped is never a pass. Decisions 0026 and 0035.

mod actions;
mod calls;
mod forge;
mod judge;
mod stepup;

pub use forge::{
    UNTRUSTED_CERT, UNTRUSTED_CERT_PATH, UNTRUSTED_JWKS_PATH, UNTRUSTED_KEY, untrusted_jwks,
};

use crate::mcp;
use crate::state::Said;
use crate::state::{AdminError, AdminState};
use countersign_domain::certification::{Certification, CertifiedSubject, CheckStatus, Checks};
use countersign_domain::config::McpConfig;
use countersign_domain::ids::{OperationName, UserId};
use countersign_domain::ports::{Provider, ProviderContext, ProviderError, ProviderTool, Tenant};
use countersign_domain::said;
use countersign_domain::secret::SecretString;
use judge::{Refusal, call_failure, conforms, leaked, listed, refusal_text, refused};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

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
    /// The synthetic test person the calls are made for (`X-MCP-User-Id`).
    pub test_user: UserId,
    /// A second synthetic person (V-4): their call for the first person's resource must
    /// be refused.
    pub second_user: Option<UserId>,
    /// The consultations whose sample arguments name a resource of the test person: the
    /// second person's same call must be refused (needs `second_user`).
    pub personal: Vec<String>,
    /// Sample arguments per allowed consultation.
    pub consultations: BTreeMap<String, Map<String, Value>>,
    /// Sample arguments per configured operation (every one is prepared).
    pub actions: BTreeMap<String, Map<String, Value>>,
    /// V-3: the administrator agreed that the run executes one action per operation for
    /// the test person. Without it no valid proof and nothing the platform signed is sent
    /// (N-7: only proofs no verifier of its signature accepts), and those checks are skipped.
    pub consent: bool,
    /// Where this deployment serves the run's untrusted key (its origin, as the request
    /// reached it): the `jku` and `x5u` proofs point there, so a provider that follows
    /// them really finds a key that verifies the proof — and fails the check. Without
    /// it they point at a name that does not resolve.
    pub key_urls: Option<String>,
    /// F-6: operations to certify with the passkey step-up (besides those the saved
    /// settings already make passkey operations): their valid execution carries a step-up
    /// and the wrong step-ups go on fresh preparations. An operation becomes `passkey` only
    /// after a passing run that did so.
    pub step_up: Vec<OperationName>,
}

/// H-1: runs every check on the saved configuration and stores the result with the
/// configuration it checked (and an audit record). A run that saw the provider accept a
/// bad proof suspends actions at once (V-3).
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
        language: Some(tenant.language),
    };
    let mut run = Run {
        state,
        provider: state.provider.as_ref(),
        ctx,
        config: &stored.config,
        until: Instant::now() + RUN_LIMIT,
        checks: Checks::default(),
        jtis: Mutex::new(Vec::new()),
        executed: Vec::new(),
        key_urls: request.key_urls.clone(),
    };
    run.all(request).await;
    let certification = Certification {
        at: state.clock.now(),
        subject: CertifiedSubject::of(&stored),
        test_user: request.test_user.to_string(),
        checks: run.checks.into_vec(),
    };
    let not_passed: Vec<&str> = certification
        .checks
        .iter()
        .filter(|c| c.status != CheckStatus::Passed)
        .map(|c| c.id.as_str())
        .collect();
    // V-3: every proof the run sent is named by its jti, and every action it executed.
    let jtis = run.jtis.into_inner().unwrap_or_else(|e| e.into_inner());
    let changes = json!({
        "configVersion": stored.version,
        "passed": certification.passed(),
        "notPassed": not_passed,
        "consent": request.consent,
        "executed": run.executed,
        "proofJtis": jtis,
    });
    let record = crate::audit::by_admin(state, tenant, "mcp.certify", changes);
    state
        .stores
        .certifications
        .put_certification(&tenant.id, &certification, &record)
        .await?;
    if certification.accepted_bad_proof() {
        mcp::suspend(state, tenant, &certification).await?;
    }
    Ok(certification)
}

/// The tenant's latest run.
pub async fn latest(state: &AdminState, tenant: &Tenant) -> Result<Certification, AdminError> {
    state
        .stores
        .certifications
        .latest_certification(&tenant.id)
        .await?
        .ok_or(AdminError::NoCertification)
}

/// The request must name only allowed consultations, give sample arguments for every
/// configured operation, and two different test people.
fn check_request(config: &McpConfig, request: &CertifyRequest) -> Result<(), AdminError> {
    let mut errors = sample_refusals(config, request);
    errors.extend(people_refusals(request));
    if errors.is_empty() {
        Ok(())
    } else {
        Err(AdminError::invalid(errors))
    }
}

/// One refusal of a run's request, in both languages.
fn refusal(field: String, en: String, pt: String) -> (String, Said) {
    (field, Said::new(en, pt))
}

/// The samples must name saved consultations and operations, and cover every operation.
fn sample_refusals(config: &McpConfig, request: &CertifyRequest) -> Vec<(String, Said)> {
    let mut errors = Vec::new();
    let operations = &config.action_policy.operations;
    for name in request.consultations.keys() {
        if !config.allowed_tools.iter().any(|t| t.as_str() == name) {
            errors.push(refusal(
                format!("consultations.{name}"),
                format!("`{name}` is not one of the saved allowedTools"),
                format!("`{name}` não é uma das consultas salvas"),
            ));
        }
    }
    let unsaved = request
        .actions
        .keys()
        .filter(|name| !operations.iter().any(|o| o.as_str() == name.as_str()))
        .map(|name| (format!("actions.{name}"), name.clone()))
        .chain(
            request
                .step_up
                .iter()
                .filter(|op| !operations.contains(op))
                .map(|op| (format!("stepUp.{op}"), op.to_string())),
        );
    for (field, name) in unsaved {
        errors.push(refusal(
            field,
            format!("`{name}` is not one of the saved operations"),
            format!("`{name}` não é uma das operações salvas"),
        ));
    }
    for op in operations
        .iter()
        .filter(|op| !request.actions.contains_key(op.as_str()))
    {
        errors.push(refusal(
            format!("actions.{op}"),
            format!("give sample arguments for `{op}`: every configured operation is prepared"),
            format!(
                "informe argumentos de exemplo para `{op}`: toda operação configurada é preparada"
            ),
        ));
    }
    for name in request
        .personal
        .iter()
        .filter(|n| !request.consultations.contains_key(*n))
    {
        errors.push(refusal(
            format!("personalConsultations.{name}"),
            format!("`{name}` needs sample arguments in consultations: they name the test person's resource"),
            format!("`{name}` precisa de argumentos de exemplo em consultas: eles indicam o recurso da pessoa de teste"),
        ));
    }
    errors
}

/// Two different synthetic test people, the second with the consultations they must be
/// refused (N-7: a run acts only for people the platform marks, never a free id).
fn people_refusals(request: &CertifyRequest) -> Vec<(String, Said)> {
    let mut errors = Vec::new();
    if request.second_user.is_some() == request.personal.is_empty() {
        errors.push(refusal(
            "secondTestUser".to_owned(),
            "give a second test person and the consultations they must be refused (personalConsultations) together".to_owned(),
            "informe juntas uma segunda pessoa de teste e as consultas que devem ser recusadas a ela (personalConsultations)".to_owned(),
        ));
    }
    for (field, who) in [
        ("testUser", Some(&request.test_user)),
        ("secondTestUser", request.second_user.as_ref()),
    ] {
        if who.is_some_and(|u| !u.is_test_person()) {
            let prefix = UserId::TEST_PREFIX;
            errors.push(refusal(
                field.to_owned(),
                format!("a test person's id starts with `{prefix}` (route it to a test account in your system)"),
                format!("o id de uma pessoa de teste começa com `{prefix}` (encaminhe-o para uma conta de teste no seu sistema)"),
            ));
        }
    }
    if request.second_user.as_ref() == Some(&request.test_user) {
        errors.push(refusal(
            "secondTestUser".to_owned(),
            "the second test person must differ from the first".to_owned(),
            "a segunda pessoa de teste deve ser diferente da primeira".to_owned(),
        ));
    }
    errors
}

struct Run<'a> {
    state: &'a AdminState,
    provider: &'a dyn Provider,
    ctx: ProviderContext,
    config: &'a McpConfig,
    until: Instant,
    checks: Checks,
    /// The `jti` of every proof sent (V-3: named in the run's audit record).
    jtis: Mutex<Vec<String>>,
    /// The actions executed with a valid proof.
    executed: Vec<String>,
    /// This deployment's origin, where the `jku` and `x5u` proofs point (V-3).
    key_urls: Option<String>,
}

impl Run<'_> {
    /// Notes `jti` as sent.
    fn sent(&self, jti: String) -> String {
        self.jtis
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(jti.clone());
        jti
    }

    /// Records a refusal check: refused passes, accepted fails, no answer is skipped.
    fn refusal(&mut self, id: &str, req: &str, r: Refusal) -> bool {
        match r {
            Refusal::Refused(how) => {
                self.checks.pass(id, req, how);
                true
            }
            Refusal::Accepted(what) => {
                self.checks.fail(id, req, what);
                false
            }
            Refusal::NoAnswer(why) => {
                self.checks.skip(id, req, why);
                false
            }
        }
    }

    /// The call context with a service token the provider never issued.
    fn wrong_token(&self) -> ProviderContext {
        ProviderContext {
            service_token: SecretString::new(format!("wrong-{}", self.state.ids.proof_jti())),
            ..self.ctx.clone()
        }
    }

    async fn all(&mut self, request: &CertifyRequest) {
        let tools = match self.timed(self.provider.list_tools(&self.ctx)).await {
            Ok(tools) => {
                let n = tools.len();
                let why = said!(
                    "tools/list answered with {n} tools",
                    "tools/list respondeu com {n} ferramentas"
                );
                self.checks.pass("tools.list", "H-2", why);
                tools
            }
            Err(e) => {
                let why = said!(
                    "tools/list failed: {e}",
                    "tools/list falhou: {e}",
                    e = call_failure(&e)
                );
                self.checks.fail("tools.list", "H-2", why);
                return;
            }
        };
        for name in self.config.allowed_tools.clone() {
            self.consultation(&tools, name.as_str(), request).await;
        }
        if !self.config.action_policy.operations.is_empty() {
            self.actions(&tools, request).await;
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

    /// H-2 and V-4 for one allowed consultation.
    async fn consultation(&mut self, tools: &[ProviderTool], name: &str, request: &CertifyRequest) {
        let id = |what: &str| format!("consultation.{name}.{what}");
        let Some(tool) = tools.iter().find(|t| t.name.as_str() == name) else {
            let reason = said!(
                "`{name}` is not in tools/list: publish it or remove it from allowedTools",
                "`{name}` não está em tools/list: publique-a ou remova-a de allowedTools"
            );
            self.checks.fail(id("listed"), "H-2", reason);
            let why = said!("not listed", "não listada");
            self.checks.skip(id("call"), "H-2", why);
            return;
        };
        let ok = self
            .checks
            .record(id("listed"), "H-2", listed(tool, self.config));
        if !ok {
            let why = said!("fix the listing first", "corrija a listagem primeiro");
            self.checks.skip(id("call"), "H-2", why);
            return;
        }
        let Some(sample) = request.consultations.get(name) else {
            let reason = said!(
                "no sample arguments were given for `{name}` (consultations.{name} in the request)",
                "nenhum argumento de exemplo foi informado para `{name}` (consultations.{name} no pedido)"
            );
            self.checks.fail(id("call"), "H-2", reason);
            return;
        };
        let started = Instant::now();
        let answer = self
            .timed(self.provider.call_tool(&self.ctx, name, sample, None))
            .await;
        let took = started.elapsed().as_millis();
        let first = match answer {
            Err(e) => Err(said!(
                "the call failed: {e}",
                "a chamada falhou: {e}",
                e = call_failure(&e)
            )),
            Ok(raw) => conforms(tool, &raw).map(|()| raw),
        };
        let first = match first {
            Ok(raw) => {
                let why = said!(
                    "answered in {took} ms, matching its outputSchema",
                    "respondeu em {took} ms, de acordo com o seu outputSchema"
                );
                self.checks.pass(id("call"), "H-2", why);
                raw
            }
            Err(why) => {
                self.checks.fail(id("call"), "H-2", why);
                let skip = said!(
                    "the sample call did not pass",
                    "a chamada de exemplo não passou"
                );
                if request.personal.iter().any(|p| p == name) {
                    self.checks.skip(id("other_person"), "V-4", skip.clone());
                }
                self.checks.skip(id("wrong_token"), "V-4", skip);
                return;
            }
        };
        self.refusals(name, sample, &first, request).await;
    }

    /// V-4: the sample call with a wrong service token, and the second person's call for
    /// the first person's resource, must be refused.
    async fn refusals(
        &mut self,
        name: &str,
        sample: &Map<String, Value>,
        first: &Value,
        request: &CertifyRequest,
    ) {
        let id = |what: &str| format!("consultation.{name}.{what}");
        let ctx = self.wrong_token();
        let answer = self
            .timed(self.provider.call_tool(&ctx, name, sample, None))
            .await;
        let what = said!(
            "the same call with a wrong service token",
            "a mesma chamada com um service token errado"
        );
        let verdict = refused(answer, &what, |_| {
            said!(
                "it was answered: check the service token on every call, consultations included",
                "ela foi respondida: confira o service token em toda chamada, inclusive nas consultas"
            )
        });
        self.refusal(&id("wrong_token"), "V-4", verdict);
        let personal = request.personal.iter().any(|p| p == name);
        let Some(second) = request.second_user.clone().filter(|_| personal) else {
            return;
        };
        let ctx = ProviderContext {
            user: second.clone(),
            ..self.ctx.clone()
        };
        let answer = self
            .timed(self.provider.call_tool(&ctx, name, sample, None))
            .await;
        // N-7: not "different", but "none of the first person's data": an answer that adds
        // or changes one field of it is still theirs.
        let verdict = match answer {
            Ok(raw) if refusal_text(&raw).is_none() && !leaked(first, &raw, sample) => {
                Refusal::Refused(said!(
                    "`{second}` was answered with other data than `{first}` for the same arguments, none of it `{first}`'s",
                    "`{second}` recebeu outros dados que não os de `{first}` para os mesmos argumentos, nenhum deles de `{first}`",
                    first = self.ctx.user
                ))
            }
            other => refused(
                other,
                &said!(
                    "`{second}` asking for `{first}`'s resource",
                    "`{second}` pedindo o recurso de `{first}`",
                    first = self.ctx.user
                ),
                |_| {
                    said!(
                        "`{second}` was answered with `{first}`'s data: check that what is asked for belongs to X-MCP-User-Id",
                        "`{second}` recebeu os dados de `{first}`: confira se o que é pedido pertence a X-MCP-User-Id",
                        first = self.ctx.user
                    )
                },
            ),
        };
        self.refusal(&id("other_person"), "V-4", verdict);
    }
}
