//! The MCP connection as shown (C-5, V-2): the saved settings, the key to install, the
//! changed tools.

use super::*;

/// C-5: what a tenant installs to verify proofs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActionVerification {
    /// The `kid` proofs carry.
    pub key_id: String,
    /// Always `RS256`.
    pub algorithm: String,
    /// The proofs' `iss`.
    pub issuer: String,
    /// The public key (SPKI PEM).
    pub public_key_pem: String,
    /// Every key the JWKS (`/.well-known/jwks.json`) publishes now, with its status: the
    /// active one above, a next one announced before it signs, and previous ones whose
    /// proofs may still be valid (K-1, K-2).
    pub keys: Vec<crate::jwks::PublishedKeyView>,
    /// F-3: the RP ID every person's passkey is made for (a step-up's authenticator data
    /// hashes it); absent where this deployment runs no passkey ceremony.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step_up_rp_id: Option<String>,
    /// F-3: the origins a step-up ceremony runs on (the confirmation page's): a step-up's
    /// client data must name one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub step_up_origins: Vec<String>,
}

/// The action policy as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActionPolicyView {
    /// Always 1.
    pub contract_version: u32,
    /// Whether writes may be prepared.
    pub enabled: bool,
    /// The configured operations.
    pub operations: Vec<String>,
    /// F-1: each operation's step-up, `none` or `passkey`.
    pub step_up: std::collections::BTreeMap<String, String>,
    /// F-2: whether a person without a passkey may confirm a `passkey` operation as a
    /// `none` one (off by default).
    pub step_up_fallback: bool,
}

/// The configuration as shown: never the service token (C-3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpView {
    /// Whether a configuration is stored.
    pub configured: bool,
    /// Grows on every change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<u64>,
    /// The provider's endpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_url: Option<String>,
    /// The explicit proof audience, if set (else the `serverUrl`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audience: Option<Option<String>>,
    /// The consultations the model may call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Vec<String>>,
    /// The action policy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action_policy: Option<ActionPolicyView>,
    /// The key that signs proofs; `null` while none is installed (C-6).
    pub action_verification: Option<ActionVerification>,
    /// V-3: the latest certification run saw the provider accept a bad proof, so actions
    /// were switched off; enabling them needs a run that passes.
    pub actions_suspended: bool,
    /// Set while actions are enabled but the latest certification run did not pass (for
    /// consultations or availability): saves that leave the action settings unchanged go
    /// on; run the certification again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub certification_warning: Option<String>,
    /// V-2: the allowed tools whose live descriptor differs from the approved one (each
    /// withheld until approved); absent when the server's `tools/list` could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_changes: Option<Vec<ToolChange>>,
    /// F-1: how many of the tenant's people have a passkey now (everyone else must create
    /// one before they can confirm a `passkey` operation).
    pub passkey_holders: usize,
}

/// V-2: an allowed tool changed since the administrator approved it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolChange {
    /// The tool.
    pub name: String,
    /// The approved descriptor (name, description, schemas, annotations).
    #[schema(value_type = Object)]
    pub approved: Value,
    /// The descriptor as the server lists it now; `null` when it no longer lists it.
    #[schema(value_type = Option<Object>)]
    pub live: Option<Value>,
    /// Why the change can never be approved (it made the tool a write), if so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// V-2: the changes between `approved` and `published` for `config`'s allowed tools.
fn tool_changes(config: &McpConfig, published: &[ProviderTool]) -> Vec<ToolChange> {
    let parse = |form: &str| serde_json::from_str::<Value>(form).unwrap_or(Value::Null);
    config
        .allowed_tools
        .iter()
        .filter_map(|name| {
            let form = config.approved.get(name.as_str())?;
            let live = published.iter().find(|t| t.name == *name);
            let live_form = live.map(|t| pinning::approved_form(&t.descriptor));
            if live_form.as_deref() == Some(form.as_str()) {
                return None;
            }
            let operations = &config.action_policy.operations;
            Some(ToolChange {
                name: name.to_string(),
                approved: parse(form),
                live: live_form.as_deref().map(parse),
                refused: live
                    .and_then(|t| vetting::refusal(t, operations))
                    .map(|why| {
                        format!("`{name}` {why}: it can never be approved as a consultation")
                    }),
            })
        })
        .collect()
}

/// The server's live tools for the stored configuration (`None` when it cannot be read).
pub async fn live_tools(
    state: &AdminState,
    tenant: &Tenant,
    stored: Option<&StoredMcpConfig>,
) -> Option<Vec<ProviderTool>> {
    let stored = stored?;
    let token = token_of(state, tenant, Some(stored)).await.ok()??;
    let ctx = admin_context(
        state,
        tenant,
        &stored.config.server_url,
        token,
        stored.version,
    )
    .ok()?;
    state.provider.list_tools(&ctx).await.ok()
}

pub(super) fn names<T: ToString>(v: &[T]) -> Vec<String> {
    v.iter().map(ToString::to_string).collect()
}

/// The signing key's public half, or `None` when none is installed.
pub(super) async fn verification(
    state: &AdminState,
) -> Result<Option<VerificationKey>, AdminError> {
    match state.signer.verification_key().await {
        Ok(k) => Ok(Some(k)),
        Err(SignerError::NotConfigured) => Ok(None),
        Err(e) => Err(AdminError::unavailable("the signing service")(Box::new(e))),
    }
}

/// C-5: the configuration without the token, plus `actionVerification`.
pub async fn view(
    state: &AdminState,
    tenant: &Tenant,
    stored: Option<&StoredMcpConfig>,
    live: Option<&[ProviderTool]>,
) -> Result<McpView, AdminError> {
    let latest = async {
        state
            .stores
            .certifications
            .latest_certification(&tenant.id)
            .await
            .map_err(store_down)
    };
    let holders = async {
        state
            .stores
            .retention
            .passkey_holders(&tenant.id)
            .await
            .map_err(store_down)
    };
    let (key, published, latest, passkey_holders) = tokio::try_join!(
        verification(state),
        crate::jwks::published(state),
        latest,
        holders
    )?;
    let action_verification = key.map(|k| ActionVerification {
        key_id: k.key_id,
        algorithm: "RS256".into(),
        issuer: state.issuer.clone(),
        public_key_pem: k.public_key_pem,
        keys: published
            .as_ref()
            .map(crate::jwks::views)
            .unwrap_or_default(),
        step_up_rp_id: state.step_up.as_ref().map(|s| s.rp_id.clone()),
        step_up_origins: state
            .step_up
            .as_ref()
            .map(|s| s.origins.clone())
            .unwrap_or_default(),
    });
    let c = stored.map(|s| &s.config);
    let enabled = c.is_some_and(|c| c.action_policy.enabled);
    let failed = latest.as_ref().filter(|run| !run.passed());
    let certification_warning = failed.filter(|_| enabled).map(|run| {
        format!(
            "The latest certification run ({}) did not pass. Actions stay enabled while their settings are unchanged; run the certification again.",
            run.at.to_rfc3339()
        )
    });
    let tool_changes = stored
        .zip(live)
        .map(|(s, live)| tool_changes(&s.config, live));
    Ok(McpView {
        tool_changes,
        actions_suspended: !enabled && failed.is_some_and(|r| r.accepted_bad_proof()),
        certification_warning,
        configured: stored.is_some(),
        version: stored.map(|s| s.version),
        server_url: c.map(|c| c.server_url.to_string()),
        audience: c.map(|c| c.audience.clone()),
        allowed_tools: c.map(|c| names(&c.allowed_tools)),
        action_policy: c.map(|c| policy_view(&c.action_policy)),
        action_verification,
        passkey_holders,
    })
}

/// The action policy as shown: every operation's step-up named (`none` or `passkey`).
fn policy_view(policy: &countersign_domain::config::ActionPolicy) -> ActionPolicyView {
    ActionPolicyView {
        contract_version: 1,
        enabled: policy.enabled,
        operations: names(&policy.operations),
        step_up: policy
            .operations
            .iter()
            .map(|op| {
                let level = if policy.needs_passkey(op) {
                    "passkey"
                } else {
                    "none"
                };
                (op.to_string(), level.to_owned())
            })
            .collect(),
        step_up_fallback: policy.step_up_fallback,
    }
}
