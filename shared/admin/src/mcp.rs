//! The tenant's MCP connection (C-2 … C-8, C-10, D-5): read, save, remove. A save is at
//! most one new token version and one conditional write of the configuration with its
//! audit record; nothing is ever partially saved, and a save that changes nothing writes
//! nothing.

use crate::state::Said;
use crate::state::{AdminError, AdminState, secrets_down, store_down};
use countersign_domain::certification::CertifiedSubject;
use countersign_domain::config::{
    ConfigError, McpConfig, service_token_secret_name, validate_mcp_config,
};
use countersign_domain::conversation::{Message, MessageKind, Role};
use countersign_domain::ids::{CaseId, UserId};
use countersign_domain::language::Translated;
use countersign_domain::pinning;
use countersign_domain::ports::ProviderTool;
use countersign_domain::ports::{
    ProviderContext, ProviderError, SignerError, StoredMcpConfig, Tenant, TransitionOutcome,
    VerificationKey,
};
use countersign_domain::said;
use countersign_domain::secret::SecretString;
use countersign_domain::texts::{self, Language};
use countersign_domain::vetting;
use serde::Serialize;
use serde_json::Value;

mod changes;
mod view;
use changes::{config_changes, same_action_fields, same_fields};
use view::verification;
pub use view::{ActionPolicyView, ActionVerification, McpView, ToolChange, live_tools, view};

/// The tenant's stored configuration, if any.
pub async fn current(
    state: &AdminState,
    tenant: &Tenant,
) -> Result<Option<StoredMcpConfig>, AdminError> {
    state
        .stores
        .settings
        .get_mcp_config(&tenant.id)
        .await
        .map_err(store_down)
}

/// `PUT`: validates `body` (C-3, C-4, C-7, D-5, C-6); a body equal to what is stored
/// writes nothing. Otherwise a changed token is stored as a new version first, then the
/// configuration (conditional on the version read) with its audit record. Only a change
/// of URL, token, audience or action policy moves `actions_version` (C-7, C-8); every
/// save then cancels the proposals prepared under other action settings.
pub async fn put(state: &AdminState, tenant: &Tenant, body: &Value) -> Result<McpView, AdminError> {
    let config = validate_mcp_config(body, state.url_policy).map_err(refused)?;
    save_config(state, tenant, config).await
}

/// A configuration's broken rules as the use cases refuse them (every one, the first
/// named).
pub fn refused(errors: Vec<ConfigError>) -> AdminError {
    use countersign_domain::texts::Language::Pt;
    AdminError::invalid(
        errors
            .iter()
            .map(|e| {
                let pt = format!(
                    "{}: {}",
                    countersign_domain::config::field_label(&e.field, Pt),
                    e.reason.message(Pt)
                );
                (e.field.clone(), Said::new(e.to_string(), pt))
            })
            .collect(),
    )
}

/// Issue 50: the tools a server publishes, read with settings not saved yet (the panel's
/// picker before the first save): the same host check as a save; nothing is stored.
pub async fn published_tools(
    state: &AdminState,
    tenant: &Tenant,
    config: &McpConfig,
) -> Result<Vec<ProviderTool>, AdminError> {
    let config = admissible(state, config.clone()).await?;
    let ctx = admin_context(
        state,
        tenant,
        &config.server_url,
        config.service_token.clone(),
        0,
    )?;
    listed(state, &ctx).await
}

/// The save itself, given a configuration its edge parsed and checked against the rules
/// (the API's JSON body, the panel's form): what [`put`] says, from D-5's check of the
/// host on.
pub async fn save_config(
    state: &AdminState,
    tenant: &Tenant,
    config: McpConfig,
) -> Result<McpView, AdminError> {
    let mut config = admissible(state, config).await?;
    let current = current(state, tenant).await?;
    let old_token = token_of(state, tenant, current.as_ref()).await?;
    let old_token = old_token.as_ref().map(SecretString::expose);
    let token_changed = old_token != Some(config.service_token.expose());
    step_up_certified(state, tenant, current.as_ref(), &config, token_changed).await?;
    // H-4 as revised by V-3 (decision 0035): enabling, or changing the settings of
    // enabled actions, needs a passing run of them; a save that leaves enabled action
    // settings as they are does not depend on the latest run.
    let unchanged = current.as_ref().is_some_and(|c| {
        c.config.action_policy.enabled && !token_changed && same_action_fields(&c.config, &config)
    });
    if config.action_policy.enabled && !unchanged {
        certifying_run(state, tenant, current.as_ref(), &config, token_changed)
            .await?
            .ok_or(AdminError::CertificationRequired)?;
    }
    let published = vet(
        state,
        tenant,
        &config,
        current.as_ref().map_or(0, |c| c.version),
    )
    .await?;
    config.approved = pins(&config, current.as_ref(), &published);
    let stored = match &current {
        Some(c) if !token_changed && same_fields(&c.config, &config) => c.clone(),
        _ => {
            save(
                state,
                tenant,
                current.as_ref(),
                config,
                token_changed,
                "mcp.put",
            )
            .await?
        }
    };
    // Also after a save that changed nothing: it finishes a sweep an earlier save could
    // not complete.
    let keep = (stored.actions_version, stored.secret_version.as_str());
    invalidate_pending(state, tenant, Some(keep)).await?;
    view(state, tenant, Some(&stored), Some(&published)).await
}

/// V-2: the approved forms a save stores: a tool approved before, on the same server URL,
/// keeps its approval (a change since is approved only by [`approve`]); a newly allowed
/// one, or every one after a change of server URL, is pinned as the server lists it now
/// (vetted by V-1 just before).
fn pins(
    config: &McpConfig,
    current: Option<&StoredMcpConfig>,
    published: &[ProviderTool],
) -> pinning::Approved {
    config
        .allowed_tools
        .iter()
        .filter_map(|name| {
            // Approvals are of one server's tools: a new server URL approves afresh.
            let kept = current
                .filter(|c| c.config.server_url == config.server_url)
                .and_then(|c| c.config.approved.get(name.as_str()).cloned());
            let form = kept.or_else(|| {
                let tool = published.iter().find(|t| t.name == *name)?;
                Some(pinning::approved_form(&tool.descriptor))
            })?;
            Some((name.to_string(), form))
        })
        .collect()
}

/// V-2: approves the live descriptor of allowed tool `name`, audited as
/// `mcp.tool.approved`. A change that made the tool a write is refused (V-1).
pub async fn approve(
    state: &AdminState,
    tenant: &Tenant,
    name: &str,
) -> Result<McpView, AdminError> {
    let current = current(state, tenant)
        .await?
        .ok_or(AdminError::NotConfigured)?;
    if !current
        .config
        .allowed_tools
        .iter()
        .any(|t| t.as_str() == name)
    {
        return Err(AdminError::invalid_field(
            "tool",
            said!(
                "`{name}` is not one of the allowed tools",
                "`{name}` não é uma das ferramentas permitidas"
            ),
        ));
    }
    let token = token_of(state, tenant, Some(&current))
        .await?
        .ok_or(AdminError::NotConfigured)?;
    let ctx = admin_context(
        state,
        tenant,
        &current.config.server_url,
        token,
        current.version,
    )?;
    let published = listed(state, &ctx).await?;
    let operations = &current.config.action_policy.operations;
    let refusal = match published.iter().find(|t| t.name.as_str() == name) {
        None => Some(vetting::NotAConsultation::NotListed),
        Some(tool) => vetting::refusal(tool, operations),
    };
    if let Some(why) = refusal {
        return Err(AdminError::NotConsultations(vec![(
            "tool".into(),
            said!(
                "`{name}` {why}: it can never be approved as a consultation",
                "`{name}` {why}: ela nunca pode ser aprovada como consulta",
                why = Said::each(|lang| why.message(lang))
            ),
        )]));
    }
    let form = published
        .iter()
        .find(|t| t.name.as_str() == name)
        .map(|t| pinning::approved_form(&t.descriptor))
        .unwrap_or_default();
    if current.config.approved.get(name) == Some(&form) {
        return view(state, tenant, Some(&current), Some(&published)).await;
    }
    let mut config = current.config.clone();
    config.approved.insert(name.to_owned(), form);
    let stored = save(
        state,
        tenant,
        Some(&current),
        config,
        false,
        "mcp.tool.approved",
    )
    .await?;
    view(state, tenant, Some(&stored), Some(&published)).await
}

/// V-3: a run saw the provider accept a bad proof: actions are switched off at once (an
/// audited save of the same configuration with `enabled: false`) and the proposals still
/// pending are cancelled with the settings-change notice. Enabling again needs a run that
/// passes. Nothing to do when actions are already off.
pub(crate) async fn suspend(
    state: &AdminState,
    tenant: &Tenant,
    run: &countersign_domain::certification::Certification,
) -> Result<(), AdminError> {
    // A save may land between the read and the write: read again and retry.
    for _ in 0..3 {
        let Some(current) = current(state, tenant).await? else {
            return Ok(());
        };
        if !current.config.action_policy.enabled
            || current.config.server_url.as_str() != run.subject.server_url
        {
            return Ok(());
        }
        let mut config = current.config.clone();
        config.action_policy.enabled = false;
        let saved = save(
            state,
            tenant,
            Some(&current),
            config,
            false,
            "mcp.actions.suspended",
        )
        .await;
        let stored = match saved {
            Err(AdminError::Conflict) => continue,
            other => other?,
        };
        tracing::warn!(tenant = %tenant.id, "actions suspended: the provider accepted a bad proof");
        let keep = (stored.actions_version, stored.secret_version.as_str());
        return invalidate_pending(state, tenant, Some(keep)).await;
    }
    Err(AdminError::Conflict)
}

/// H-4: enabling needs the latest certification run to have passed on the action
/// settings being saved (a new service token has not been checked by any run).
/// F-4, F-6: an operation becomes `passkey` only after a passing certification of these
/// settings that sent step-up proofs for it (its positive case and the wrong ones).
async fn step_up_certified(
    state: &AdminState,
    tenant: &Tenant,
    current: Option<&StoredMcpConfig>,
    config: &McpConfig,
    token_changed: bool,
) -> Result<(), AdminError> {
    let newly: Vec<&countersign_domain::ids::OperationName> = config
        .action_policy
        .step_up
        .iter()
        .filter(|op| !current.is_some_and(|c| c.config.action_policy.needs_passkey(op)))
        .collect();
    let Some(first) = newly.first() else {
        return Ok(());
    };
    let run = certifying_run(state, tenant, current, config, token_changed)
        .await?
        .ok_or_else(|| AdminError::StepUpNotCertified(first.to_string()))?;
    let passed = |id: &str| {
        run.checks.iter().any(|c| {
            c.id == id && c.status == countersign_domain::certification::CheckStatus::Passed
        })
    };
    let wrong_refused = run
        .checks
        .iter()
        .filter(|c| c.id.starts_with("stepup.") && !c.id.starts_with("stepup.execute."))
        .filter(|c| passed(&c.id))
        .count();
    for op in newly {
        if !passed(&format!("stepup.execute.{op}")) || wrong_refused < 10 {
            return Err(AdminError::StepUpNotCertified(op.to_string()));
        }
    }
    Ok(())
}

/// The latest run, when it certifies `config` saved over `current` (H-4); `None` when it
/// does not, and always after a new service token (no run has checked it yet).
async fn certifying_run(
    state: &AdminState,
    tenant: &Tenant,
    current: Option<&StoredMcpConfig>,
    config: &McpConfig,
    token_changed: bool,
) -> Result<Option<countersign_domain::certification::Certification>, AdminError> {
    let Some(current) = current.filter(|_| !token_changed) else {
        return Ok(None);
    };
    let saving = StoredMcpConfig {
        config: config.clone(),
        ..current.clone()
    };
    let run = (state.stores.certifications)
        .latest_certification(&tenant.id)
        .await?;
    Ok(run.filter(|run| run.certifies(&CertifiedSubject::of(&saving))))
}

/// Who the platform is when it reads a tenant's server for its administrator (the
/// consultation picker, the save's vetting): never a person of the tenant's.
pub(crate) const ADMIN_CALLER: &str = "countersign-admin-panel";

/// The provider call context of an administrator's read of `server_url` with `token`.
pub(crate) fn admin_context(
    state: &AdminState,
    tenant: &Tenant,
    server_url: &countersign_domain::config::ServerUrl,
    token: SecretString,
    config_version: u64,
) -> Result<ProviderContext, AdminError> {
    let user = UserId::parse(ADMIN_CALLER)
        .map_err(|e| AdminError::invalid_field("", Said::new(e.to_string(), e.to_string())))?;
    Ok(ProviderContext {
        tenant: tenant.id.clone(),
        user,
        conversation: state.ids.case_id(),
        server_url: server_url.clone(),
        service_token: token,
        config_version,
        language: Some(tenant.language),
    })
}

/// V-1: every allowed tool must be a consultation as the provider publishes it now. The
/// provider's live `tools/list` is read with the body's URL and token; when it cannot be
/// read nothing is saved (a tool that cannot be vetted is not allowed).
async fn vet(
    state: &AdminState,
    tenant: &Tenant,
    config: &McpConfig,
    version: u64,
) -> Result<Vec<ProviderTool>, AdminError> {
    let ctx = admin_context(
        state,
        tenant,
        &config.server_url,
        config.service_token.clone(),
        version,
    )?;
    let published = listed(state, &ctx).await?;
    let refused = vetting::refusals(
        &config.allowed_tools,
        &published,
        &config.action_policy.operations,
    );
    if refused.is_empty() {
        return Ok(published);
    }
    Err(AdminError::NotConsultations(
        refused
            .into_iter()
            .map(|(i, name, why)| {
                let said = said!(
                    "`{name}` {why}: it cannot be a consultation",
                    "`{name}` {why}: ela não pode ser uma consulta",
                    why = Said::each(|lang| why.message(lang))
                );
                (format!("allowedTools[{i}]"), said)
            })
            .collect(),
    ))
}

/// The server's `tools/list` now, as a save and an approval read it (V-1, V-2): a failure
/// is the provider unreachable, in its own words.
async fn listed(
    state: &AdminState,
    ctx: &ProviderContext,
) -> Result<Vec<ProviderTool>, AdminError> {
    state
        .provider
        .list_tools(ctx)
        .await
        .map_err(|e| AdminError::ProviderUnreachable(provider_problem(&e)))
}

/// What an administrator can act on when their server's `tools/list` failed.
fn provider_problem(e: &ProviderError) -> String {
    match e {
        ProviderError::Http { status: 401 | 403 } => {
            format!("{e}: check the service token")
        }
        other => other.to_string(),
    }
}

/// Stores `config` as the next version (the token only when it changed).
async fn save(
    state: &AdminState,
    tenant: &Tenant,
    current: Option<&StoredMcpConfig>,
    config: McpConfig,
    token_changed: bool,
    audited_as: &str,
) -> Result<StoredMcpConfig, AdminError> {
    // The token first, as a new version: if anything after fails, the stored
    // configuration still points at the old version, so nothing is partially saved.
    let secret_version = match current {
        Some(c) if !token_changed => c.secret_version.clone(),
        _ => {
            state
                .secrets
                .put(
                    &service_token_secret_name(&tenant.id),
                    &config.service_token,
                )
                .await?
        }
    };
    let version = current.map_or(1, |c| c.version + 1);
    let actions_version = match current {
        Some(c) if !token_changed && same_action_fields(&c.config, &config) => c.actions_version,
        _ => version,
    };
    let stored = StoredMcpConfig {
        config,
        version,
        actions_version,
        secret_version,
    };
    let changes = config_changes(current, Some(&stored), token_changed);
    let record = crate::audit::by_admin(state, tenant, audited_as, changes);
    let expected = current.map(|c| c.version);
    let outcome = state
        .stores
        .settings
        .put_mcp_config(&tenant.id, &stored, expected, &record)
        .await?;
    if outcome != TransitionOutcome::Applied {
        return Err(AdminError::Conflict);
    }
    Ok(stored)
}

/// The body's configuration, if every rule holds (C-3, C-4, C-7; D-5 on the resolved
/// host; C-6 for enabling).
/// What the rules cannot say without I/O: D-5's host check, C-6's signing key.
async fn admissible(state: &AdminState, config: McpConfig) -> Result<McpConfig, AdminError> {
    // D-5: the host must resolve only to public addresses (checked again at connect time).
    let resolver = state.resolver.as_ref();
    let policy = state.url_policy;
    if let Err(e) =
        countersign_domain::host::check_public(resolver, &config.server_url, policy).await
    {
        return Err(AdminError::invalid_field(
            "serverUrl",
            Said::new(
                format!("serverUrl: {e}"),
                "URL do servidor MCP: o host deve resolver apenas para endereços públicos (D-5)",
            ),
        ));
    }
    // C-6: no enabling without a signing key; consultations stay configurable.
    if config.action_policy.enabled && verification(state).await?.is_none() {
        return Err(AdminError::SigningUnavailable);
    }
    Ok(config)
}

/// The service token of the stored configuration, if any.
pub(crate) async fn token_of(
    state: &AdminState,
    tenant: &Tenant,
    current: Option<&StoredMcpConfig>,
) -> Result<Option<SecretString>, AdminError> {
    let Some(c) = current else {
        return Ok(None);
    };
    state
        .secrets
        .get_version(&service_token_secret_name(&tenant.id), &c.secret_version)
        .await
        .map_err(secrets_down)
}

/// `DELETE` (C-10): removes the connector; actions stop, pending proposals are cancelled.
/// The token's secret versions stay, to reconcile `unknown` proposals (C-8).
pub async fn delete(state: &AdminState, tenant: &Tenant) -> Result<(), AdminError> {
    let Some(c) = current(state, tenant).await? else {
        // Finishes a removal whose sweep was cut short.
        return invalidate_pending(state, tenant, None).await;
    };
    let changes = config_changes(Some(&c), None, true);
    let record = crate::audit::by_admin(state, tenant, "mcp.delete", changes);
    let outcome = state
        .stores
        .settings
        .delete_mcp_config(&tenant.id, c.version, &record)
        .await?;
    if outcome != TransitionOutcome::Applied {
        return Err(AdminError::Conflict);
    }
    invalidate_pending(state, tenant, None).await
}

/// C-8: proposals not yet executing, prepared under other action settings than `keep`
/// (all of them when `None`), are cancelled, each with a notice in its conversation.
async fn invalidate_pending(
    state: &AdminState,
    tenant: &Tenant,
    keep: Option<(u64, &str)>,
) -> Result<(), AdminError> {
    let notice = |case: &CaseId, lang: Language| Message {
        id: state.ids.message_id(),
        case: case.clone(),
        role: Role::Assistant,
        kind: MessageKind::Notice,
        content: texts::invalidated_notice(lang).to_owned(),
        reply_to: None,
        created_at: state.clock.now(),
    };
    match state
        .stores
        .fence
        .invalidate_pending(&tenant.id, keep, &notice)
        .await
    {
        Ok(n) => {
            if n > 0 {
                tracing::info!(tenant = %tenant.id, cancelled = n, "pending proposals invalidated");
            }
            Ok(())
        }
        Err(e) => Err(AdminError::Unfinished(Box::new(e))),
    }
}
