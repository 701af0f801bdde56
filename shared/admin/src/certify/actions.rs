//! The action checks of a run (H-3, V-3, N-7): every operation prepared, a wrong service
//! token refused, one action per operation executed with a valid proof (with consent), and
//! the bad-proof series, each proof on its own fresh preparation in its own conversation.
//! The valid executions and the bad proofs go in an order the provider cannot predict, a
//! bad proof always first and last: a provider that executes only the first execute of a
//! conversation, or of a run, is caught.

use super::forge::{BAD_PROOFS, BadProof};
use super::judge::{Seen, after_bad_proof, read_report};
use super::judge::{action_tool_problem, call_failure, refusal_text};
use super::stepup::BAD_STEP_UPS;
use super::{ACTION_TOOLS, CertifyRequest, RUN_LIMIT, Refusal, Run, refused};
use countersign_domain::ids::OperationName;
use countersign_domain::ports::{ProviderContext, ProviderError, ProviderTool};
use countersign_domain::prepare::PreparedAction;
use countersign_domain::proof::{Proof, sign_proof};
use countersign_domain::proposal::RemoteStatus;
use countersign_domain::said;
use countersign_domain::texts::Said;
use serde_json::{Map, Value};
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

impl Run<'_> {
    /// H-3 and V-3.
    pub(super) async fn actions(&mut self, tools: &[ProviderTool], request: &CertifyRequest) {
        let operations = self.config.action_policy.operations.clone();
        let missing: Vec<Said> = ACTION_TOOLS
            .iter()
            .filter_map(|(tool, args)| action_tool_problem(tools, tool, args))
            .collect();
        let listed = if missing.is_empty() {
            Ok(said!(
                "prepare_action, execute_action and get_action_status are listed with their arguments",
                "prepare_action, execute_action e get_action_status estão listadas com os seus argumentos"
            ))
        } else {
            Err(Said::join(&missing, "; "))
        };
        if !self.checks.record("actions.tools", "H-3", listed) {
            let why = said!(
                "the action tools are not all listed",
                "nem todas as ferramentas de ação estão listadas"
            );
            self.skip_actions(&operations, &why);
            return;
        }
        // V-3: every operation is prepared.
        let prepared = self.prepare_all(&operations, request).await;
        let Some((first_op, first_args, Some((first, first_ctx)))) =
            prepared.iter().find(|(_, _, p)| p.is_some()).cloned()
        else {
            let why = said!(
                "no action could be prepared",
                "nenhuma ação pôde ser preparada"
            );
            self.skip_after_prepare(&operations, &why);
            return;
        };
        let status = match self.status(&first_ctx, &first.action_id).await {
            Seen::Status(RemoteStatus::PendingConfirmation) => Ok(said!(
                "get_action_status says `pending_confirmation`",
                "get_action_status diz `pending_confirmation`"
            )),
            Seen::Status(s) => Err(said!(
                "get_action_status says `{s}` for an action only prepared: it must be pending_confirmation",
                "get_action_status diz `{s}` para uma ação apenas preparada: deve ser pending_confirmation",
                s = s.as_str()
            )),
            Seen::Unusable(why) => Err(why),
        };
        self.checks.record("actions.status", "H-3", status);
        let answer = self
            .prepare_raw(&self.wrong_token(), &first_op, &first_args)
            .await;
        let what = said!(
            "prepare_action with a wrong service token",
            "prepare_action com um service token errado"
        );
        let verdict = refused(answer, &what, |_| {
            said!(
                "it was answered: check the service token before any work",
                "ela foi respondida: confira o service token antes de qualquer trabalho"
            )
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
        let limit = RUN_LIMIT.as_secs();
        let out_of_time = said!(
            "the run's {limit} s limit was reached",
            "o limite de {limit} s da execução foi atingido"
        );
        self.record_executes(prepared, &passkey, valid, request.consent, &out_of_time);
        for b in &BAD_PROOFS {
            match bad.remove(b.id) {
                Some(verdict) => {
                    self.refusal(b.id, "V-3", verdict);
                }
                None if !request.consent && b.genuine => self.checks.skip(
                    b.id,
                    "N-7",
                    said!(
                        "not sent: a proof the platform signs with only one thing wrong is sent only with consent (a verifier that skips that one check would execute it)",
                        "não enviada: uma prova que a plataforma assina com uma única coisa errada só é enviada com consentimento (um verificador que pule essa verificação a executaria)"
                    ),
                ),
                None => self.checks.skip(b.id, "V-3", out_of_time.clone()),
            }
        }
        self.record_step_ups(series, &mut bad, request, &out_of_time);
    }

    /// The valid executions' checks, in the order of the operations.
    fn record_executes(
        &mut self,
        prepared: &[Prepared],
        passkey: &[usize],
        mut valid: std::collections::BTreeMap<usize, Result<Said, Said>>,
        consent: bool,
        out_of_time: &Said,
    ) {
        for (i, (op, _, p)) in prepared.iter().enumerate() {
            // F-6: a passkey operation's valid execution is its step-up's positive case.
            let id = if passkey.contains(&i) {
                format!("stepup.execute.{op}")
            } else {
                format!("actions.execute.{op}")
            };
            match (p, valid.remove(&i)) {
                (None, _) => self.checks.skip(
                    id,
                    "V-3",
                    said!(
                        "its preparation did not pass",
                        "a sua preparação não passou"
                    ),
                ),
                (Some(_), _) if !consent => self.checks.skip(
                    id,
                    "V-3",
                    said!(
                        "not run: the administrator did not consent to executing one action per operation for the test person; no valid proof was sent",
                        "não executada: o administrador não consentiu em executar uma ação por operação para a pessoa de teste; nenhuma prova válida foi enviada"
                    ),
                ),
                (Some(_), Some(verdict)) => {
                    self.checks.record(id, "V-3", verdict);
                }
                (Some(_), None) => self.checks.skip(id, "V-3", out_of_time.clone()),
            }
        }
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
        out_of_time: &Said,
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
                    said!(
                        "not sent: this deployment runs no passkey ceremony (COUNTERSIGN_STEP_UP_ORIGIN is not set)",
                        "não enviada: esta implantação não faz a cerimônia de passkey (COUNTERSIGN_STEP_UP_ORIGIN não está definido)"
                    ),
                ),
                None if !request.consent => self.checks.skip(
                    b.id,
                    "F-6",
                    said!(
                        "not sent: a step-up proof the platform signs is sent only with consent",
                        "não enviada: uma prova de step-up assinada pela plataforma só é enviada com consentimento"
                    ),
                ),
                None => self.checks.skip(b.id, "F-6", out_of_time.clone()),
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
                    let why = said!(
                        "prepared `{id}`: a valid answer expiring in {left} s",
                        "preparada `{id}`: uma resposta válida que expira em {left} s",
                        id = p.action_id
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
    fn skip_actions(&mut self, operations: &[OperationName], why: &Said) {
        for op in operations {
            self.checks
                .skip(format!("actions.prepare.{op}"), "H-3", why.clone());
        }
        self.skip_after_prepare(operations, why);
    }

    /// Skips every action check after the preparations.
    fn skip_after_prepare(&mut self, operations: &[OperationName], why: &Said) {
        self.checks.skip("actions.status", "H-3", why.clone());
        self.checks.skip("actions.wrong_token", "V-3", why.clone());
        for op in operations {
            self.checks
                .skip(format!("actions.execute.{op}"), "V-3", why.clone());
        }
        for bad in &BAD_PROOFS {
            self.checks.skip(bad.id, "V-3", why.clone());
        }
    }

    /// The valid proof of `claims` (with the test credential's step-up for a passkey
    /// operation).
    async fn valid_proof(
        &self,
        claims: &countersign_domain::proof::ProofClaims,
        step_up: bool,
    ) -> Result<Proof, Said> {
        let signed = if step_up {
            if self.state.step_up.is_none() {
                return Err(said!(
                    "this deployment runs no passkey ceremony (COUNTERSIGN_STEP_UP_ORIGIN is not set): a passkey operation cannot be certified",
                    "esta implantação não faz a cerimônia de passkey (COUNTERSIGN_STEP_UP_ORIGIN não está definido): uma operação com passkey não pode ser certificada"
                ));
            }
            self.stepup_proof(claims).await
        } else {
            sign_proof(self.state.signer.as_ref(), claims)
                .await
                .map_err(|_| ())
        };
        signed.map_err(|()| {
            said!(
                "the platform could not sign the proof; try again",
                "a plataforma não conseguiu assinar a prova; tente novamente"
            )
        })
    }

    /// V-3: `target` executed with a valid proof must come back `completed`, and
    /// `get_action_status` must agree.
    async fn execute_valid(
        &mut self,
        ctx: &ProviderContext,
        target: &PreparedAction,
        step_up: bool,
    ) -> Result<Said, Said> {
        let now = self.state.clock.now().unix_seconds();
        let claims = self.claims(ctx, target, now);
        let proof = self.valid_proof(&claims, step_up).await?;
        let id = &target.action_id;
        let answer = self.execute(ctx, id, Some(&proof)).await;
        let (iss, aud) = (&claims.iss, &claims.aud);
        let install = said!(
            "a valid proof was refused: install the platform's public key (or follow its JWKS), and accept iss `{iss}` and aud `{aud}` exactly",
            "uma prova válida foi recusada: instale a chave pública da plataforma (ou siga o seu JWKS) e aceite exatamente iss `{iss}` e aud `{aud}`"
        );
        let report = match answer {
            Err(ProviderError::Http { status }) => {
                return Err(said!(
                    "HTTP {status}: {install}",
                    "HTTP {status}: {install}",
                    install = install
                ));
            }
            Err(e) => {
                return Err(said!(
                    "execute_action gave no answer ({e}): the outcome is unknown",
                    "execute_action não deu resposta ({e}): o resultado é desconhecido",
                    e = call_failure(&e)
                ));
            }
            Ok(raw) => {
                if let Some(words) = refusal_text(&raw) {
                    return Err(said!(
                        "{words}; {install}",
                        "{words}; {install}",
                        words = words,
                        install = install
                    ));
                }
                read_report(&raw, id)?
            }
        };
        if report.status != RemoteStatus::Completed {
            let message = Said::verbatim(
                (report.message)
                    .map(|m| format!(" ({})", m.as_str()))
                    .unwrap_or_default(),
            );
            return Err(said!(
                "the proof was accepted but the action ended `{status}`{message}: give sample arguments the test person can carry out",
                "a prova foi aceita, mas a ação terminou `{status}`{message}: informe argumentos de exemplo que a pessoa de teste possa executar",
                status = report.status.as_str(),
                message = message
            ));
        }
        self.executed.push(id.to_string());
        match self.status(ctx, id).await {
            Seen::Status(RemoteStatus::Completed) => Ok(said!(
                "executed `{id}` with a valid proof: completed, and get_action_status agrees",
                "`{id}` executada com uma prova válida: completed, e get_action_status concorda"
            )),
            Seen::Status(s) => Err(said!(
                "execute_action said `completed` but get_action_status says `{s}`",
                "execute_action disse `completed`, mas get_action_status diz `{s}`",
                s = s.as_str()
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
                return Refusal::NoAnswer(said!(
                    "could not prepare an action to test with: {r}",
                    "não foi possível preparar uma ação para o teste: {r}",
                    r = r
                ));
            }
        };
        if target.action_id == other.action_id {
            return Refusal::Accepted(said!(
                "prepare_action returned an actionId it had returned before: every preparation needs a new one",
                "prepare_action devolveu um actionId que já tinha devolvido: cada preparação precisa de um novo"
            ));
        }
        let forged = if bad.id.starts_with("stepup.") {
            self.forge_stepup(&ctx, bad.id, &target).await
        } else {
            self.forge(&ctx, bad.id, &target).await
        };
        let Ok(proof) = forged else {
            return Refusal::NoAnswer(said!(
                "the platform could not sign the test proof; try again",
                "a plataforma não conseguiu assinar a prova de teste; tente novamente"
            ));
        };
        let answer = self.execute(&ctx, &target.action_id, proof.as_ref()).await;
        let (what, fix) = (bad.what(), bad.fix());
        let execute = refused(
            answer,
            &said!(
                "given {what}, execute_action",
                "com {what}, execute_action",
                what = what
            ),
            |raw| match read_report(raw, &target.action_id) {
                Ok(r) => said!(
                    "it answered `{status}` instead of refusing the proof with isError: {fix}",
                    "respondeu `{status}` em vez de recusar a prova com isError: {fix}",
                    status = r.status.as_str(),
                    fix = fix
                ),
                Err(e) => said!("{e}: {fix}", "{e}: {fix}", e = e, fix = fix),
            },
        );
        let seen = self.status(&ctx, &target.action_id).await;
        after_bad_proof(execute, seen, bad)
    }
}
