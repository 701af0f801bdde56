//! Widget credentials (C-9, D-2): create (the secret shown once), list, revoke.

use crate::state::Said;
use crate::state::{AdminError, AdminState};
use countersign_domain::config::widget_secret_name;
use countersign_domain::ids::WidgetKeyId;
use countersign_domain::ports::{Tenant, TransitionOutcome, WidgetKey};
use countersign_domain::said;
use countersign_domain::secret::SecretString;
use serde_json::json;

/// Creates a credential. The secret is stored first, then the credential: a credential
/// never exists without its secret. The secret is returned this once.
pub async fn create(
    state: &AdminState,
    tenant: &Tenant,
    allowed_origins: &[String],
) -> Result<(WidgetKey, SecretString), AdminError> {
    let allowed_origins = origins(allowed_origins)?;
    let key = WidgetKey {
        id: state.ids.widget_key_id(),
        created_at: state.clock.now(),
        allowed_origins,
        retires_at: None,
    };
    let secret = crate::keys::generate_widget_secret();
    state
        .secrets
        .put(&widget_secret_name(&tenant.id, &key.id), &secret)
        .await?;
    let changes = json!({"keyId": key.id.as_str(), "allowedOrigins": key.allowed_origins});
    let record = crate::audit::by_admin(state, tenant, "widgetCredential.create", changes);
    state
        .stores
        .widget_keys
        .put_widget_key(&tenant.id, &key, &record)
        .await?;
    Ok((key, secret))
}

/// The most origins one credential may name.
pub const MAX_ORIGINS: usize = 20;

/// Checks and normalises a credential's origins (decision 0025); every bad one is named.
pub fn origins(raw: &[String]) -> Result<Vec<String>, AdminError> {
    let mut errors = Vec::new();
    let mut out: Vec<String> = Vec::new();
    if raw.len() > MAX_ORIGINS {
        errors.push((
            "allowedOrigins".to_owned(),
            said!(
                "at most {MAX_ORIGINS} origins",
                "no máximo {MAX_ORIGINS} origens"
            ),
        ));
    }
    for (i, o) in raw.iter().enumerate() {
        match countersign_domain::config::parse_origin(o) {
            Ok(o) if !out.contains(&o) => out.push(o),
            Ok(_) => {}
            Err(problem) => errors.push((
                format!("allowedOrigins[{i}]"),
                Said::new(
                    problem,
                    "deve ser uma origem como https://loja.example.com (https, um host, uma porta opcional e nada mais)",
                ),
            )),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(AdminError::invalid(errors))
    }
}

/// The tenant's credentials: ids and dates only. A replaced credential whose grace period
/// has ended is revoked here, the first time the credentials are listed after it (its
/// tokens were refused from that moment already): its secret does not linger.
pub async fn list(state: &AdminState, tenant: &Tenant) -> Result<Vec<WidgetKey>, AdminError> {
    let keys = state
        .stores
        .widget_keys
        .list_widget_keys(&tenant.id)
        .await?;
    let now = state.clock.now();
    let mut live = Vec::with_capacity(keys.len());
    for key in keys {
        if key.valid_at(now) {
            live.push(key);
        } else if let Err(e) = revoke(state, tenant, key.id.as_str()).await {
            // Its tokens are refused anyway; the next listing tries again.
            tracing::warn!(error = %e, "removing a retired widget credential failed");
            live.push(key);
        }
    }
    Ok(live)
}

/// The longest grace period a replacement may give the old credential: a week.
pub const MAX_GRACE_SECONDS: i64 = 7 * 86_400;

/// U-3 "replace" (decision 0047): a new credential with the same origins, its secret
/// returned this once; the old one keeps working for `grace_seconds` (0: revoked now), so
/// a site never goes dark while the new secret is deployed.
pub async fn replace(
    state: &AdminState,
    tenant: &Tenant,
    key: &str,
    grace_seconds: i64,
) -> Result<(WidgetKey, SecretString), AdminError> {
    if !(0..=MAX_GRACE_SECONDS).contains(&grace_seconds) {
        return Err(AdminError::invalid_field(
            "graceSeconds",
            said!(
                "a grace period is 0 to {MAX_GRACE_SECONDS} seconds (a week)",
                "um período de carência vai de 0 a {MAX_GRACE_SECONDS} segundos (uma semana)"
            ),
        ));
    }
    let id = WidgetKeyId::parse(key).map_err(|_| AdminError::NoSuchCredential)?;
    let old = state
        .stores
        .widget_keys
        .get_widget_key(&tenant.id, &id)
        .await?
        .ok_or(AdminError::NoSuchCredential)?;
    if let Some(at) = old.retires_at {
        return Err(AdminError::AlreadyReplaced(at));
    }
    let created = create(state, tenant, &old.allowed_origins).await?;
    if grace_seconds == 0 {
        revoke(state, tenant, key).await?;
        return Ok(created);
    }
    let at = state.clock.now().plus_seconds(grace_seconds);
    let changes = json!({
        "keyId": id.as_str(),
        "replacedBy": created.0.id.as_str(),
        "retiresAt": at.to_rfc3339(),
    });
    let record = crate::audit::by_admin(state, tenant, "widgetCredential.retire", changes);
    let outcome = state
        .stores
        .widget_keys
        .retire_widget_key(&tenant.id, &id, at, &record)
        .await?;
    if outcome != TransitionOutcome::Applied {
        // A concurrent replacement or revocation came first; the new credential stands.
        tracing::warn!(key = %id, "a replaced credential was already retiring or revoked");
    }
    Ok(created)
}

/// Revokes a credential: the credential goes first (its tokens fail from then on), then
/// its secret.
pub async fn revoke(state: &AdminState, tenant: &Tenant, key: &str) -> Result<(), AdminError> {
    let key = WidgetKeyId::parse(key).map_err(|_| AdminError::NoSuchCredential)?;
    let changes = json!({"keyId": key.as_str()});
    let record = crate::audit::by_admin(state, tenant, "widgetCredential.revoke", changes);
    let outcome = state
        .stores
        .widget_keys
        .delete_widget_key(&tenant.id, &key, &record)
        .await?;
    if outcome != TransitionOutcome::Applied {
        return Err(AdminError::NoSuchCredential);
    }
    if let Err(e) = state
        .secrets
        .delete(&widget_secret_name(&tenant.id, &key))
        .await
    {
        // Already revoked (the credential is gone); the orphan secret is never read.
        tracing::warn!(error = %e, "deleting a revoked widget secret failed");
    }
    Ok(())
}
