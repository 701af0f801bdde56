//! Widget credentials (C-9, D-2): create (the secret shown once), list, revoke.

use crate::state::{AdminError, AdminState, secrets_down, store_down};
use countersign_domain::config::widget_secret_name;
use countersign_domain::ids::WidgetKeyId;
use countersign_domain::ports::{Tenant, TransitionOutcome, WidgetKey};
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
    };
    let secret = crate::keys::generate_widget_secret();
    state
        .secrets
        .put(&widget_secret_name(&tenant.id, &key.id), &secret)
        .await
        .map_err(secrets_down)?;
    let changes = json!({"keyId": key.id.as_str(), "allowedOrigins": key.allowed_origins});
    let record = crate::audit::by_admin(state, tenant, "widgetCredential.create", changes);
    state
        .stores
        .widget_keys
        .put_widget_key(&tenant.id, &key, &record)
        .await
        .map_err(store_down)?;
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
            format!("at most {MAX_ORIGINS} origins"),
        ));
    }
    for (i, o) in raw.iter().enumerate() {
        match countersign_domain::config::parse_origin(o) {
            Ok(o) if !out.contains(&o) => out.push(o),
            Ok(_) => {}
            Err(problem) => errors.push((format!("allowedOrigins[{i}]"), problem.to_owned())),
        }
    }
    match errors.first() {
        None => Ok(out),
        Some((field, message)) => Err(AdminError::Invalid {
            field: field.clone(),
            message: message.clone(),
            errors,
        }),
    }
}

/// The tenant's credentials: ids and dates only.
pub async fn list(state: &AdminState, tenant: &Tenant) -> Result<Vec<WidgetKey>, AdminError> {
    state
        .stores
        .widget_keys
        .list_widget_keys(&tenant.id)
        .await
        .map_err(store_down)
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
        .await
        .map_err(store_down)?;
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
