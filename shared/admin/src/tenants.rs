//! Tenant registration and admin-key rotation (C-1): operator tasks.

use crate::keys;
use countersign_domain::appearance::Appearance;
use countersign_domain::ids::TenantId;
use countersign_domain::ports::{Clock, Ids, StoreError, Tenant, TenantStore, TransitionOutcome};
use countersign_domain::retention::RetentionDays;
use countersign_domain::secret::SecretString;
use countersign_domain::texts::Language;

/// Longest tenant display name, in characters.
pub const MAX_NAME_CHARS: usize = 100;

/// Why an operator task failed.
#[derive(Debug, thiserror::Error)]
pub enum TenantError {
    /// The name is empty, too long, or has control characters.
    #[error("the tenant name must be 1-{MAX_NAME_CHARS} characters without control characters")]
    InvalidName,
    /// No such tenant.
    #[error("no tenant {0}")]
    NotFound(TenantId),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A new tenant and its admin key, shown once.
#[derive(Debug)]
pub struct Registered {
    /// The tenant as stored (with the key's hash only).
    pub tenant: Tenant,
    /// The admin key. Print it once; it is not stored.
    pub admin_key: SecretString,
}

/// Registers a tenant with a fresh admin key.
pub async fn register(
    store: &dyn TenantStore,
    ids: &dyn Ids,
    clock: &dyn Clock,
    name: &str,
    language: Language,
) -> Result<Registered, TenantError> {
    let name = name.trim();
    let chars = name.chars().count();
    if chars == 0 || chars > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(TenantError::InvalidName);
    }
    let (admin_key, admin_key_hash) = keys::generate();
    let tenant = Tenant::new(ids.tenant_id(), name, admin_key_hash, language, clock.now());
    store.create_tenant(&tenant).await?;
    Ok(Registered { tenant, admin_key })
}

/// Replaces a tenant's admin key: the old key stops working at once. Returns the new key,
/// to show once.
pub async fn rotate_admin_key(
    store: &dyn TenantStore,
    ids: &dyn Ids,
    clock: &dyn Clock,
    id: &TenantId,
) -> Result<SecretString, TenantError> {
    let (key, hash) = keys::generate();
    let record = crate::audit::entry(
        ids,
        clock,
        crate::audit::OPERATOR,
        "adminKey.rotate",
        serde_json::json!({"adminKey": {"to": crate::audit::admin_key_actor(&hash)}}),
    );
    match store.set_admin_key_hash(id, &hash, &record).await? {
        TransitionOutcome::Applied => Ok(key),
        TransitionOutcome::Conflict { .. } => Err(TenantError::NotFound(id.clone())),
    }
}

/// What an administrator changes of the tenant's settings, each value already checked;
/// `None` keeps the setting as it is. The panel's form and the API's body are parsed into
/// it, and [`save_settings`] saves it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SettingsChange {
    /// S-4: the default language of new cases (a case keeps the one it was opened with).
    pub language: Option<Language>,
    /// the sign-in hand-off URL; `Some(None)` removes it.
    pub sign_in_url: Option<Option<String>>,
    /// how long conversations are kept.
    pub retention_days: Option<RetentionDays>,
    /// Issue 50: the accent and the welcome per language.
    pub appearance: Option<Appearance>,
}

/// S-4, X-3, R-1, issue 50: saves `change` for `tenant`, by its administrator: one audited write per setting that
/// differs from the saved one (`tenant.language`, `tenant.sign_in_url`,
/// `tenant.retention_days`, `tenant.appearance`, each with both values); the same value
/// writes nothing. Returns the tenant as saved. Each write is its own transaction: when one
/// fails, the ones before it stay saved.
pub async fn save_settings(
    state: &crate::AdminState,
    tenant: &Tenant,
    change: SettingsChange,
) -> Result<Tenant, crate::state::AdminError> {
    let mut saved = tenant.clone();
    let (store, id) = (&state.stores.tenants, &tenant.id);
    if let Some(language) = change.language {
        let (from, to) = (saved.language.tag(), language.tag());
        if let Some(record) = setting_change(state, tenant, LANGUAGE, from, to) {
            setting_saved(store.set_language(id, language, &record).await)?;
        }
        saved.language = language;
    }
    if let Some(url) = change.sign_in_url {
        let (from, to) = (saved.sign_in_url.as_deref(), url.as_deref());
        if let Some(record) = setting_change(state, tenant, SIGN_IN_URL, from, to) {
            setting_saved(store.set_sign_in_url(id, to, &record).await)?;
        }
        saved.sign_in_url = url;
    }
    if let Some(days) = change.retention_days {
        let (from, to) = (
            saved.retention_days.map(RetentionDays::days),
            Some(days.days()),
        );
        if let Some(record) = setting_change(state, tenant, RETENTION, from, to) {
            setting_saved(store.set_retention_days(id, days, &record).await)?;
        }
        saved.retention_days = Some(days);
    }
    if let Some(appearance) = change.appearance {
        if let Some(record) =
            setting_change(state, tenant, APPEARANCE, &saved.appearance, &appearance)
        {
            setting_saved(store.set_appearance(id, &appearance, &record).await)?;
        }
        saved.appearance = appearance;
    }
    Ok(saved)
}

// Each setting's audit action and the field its `changes` name.
const LANGUAGE: (&str, &str) = ("tenant.language", "language");
const SIGN_IN_URL: (&str, &str) = ("tenant.sign_in_url", "signInUrl");
const RETENTION: (&str, &str) = ("tenant.retention_days", "retentionDays");
const APPEARANCE: (&str, &str) = ("tenant.appearance", "appearance");

/// The audit record of an authenticated tenant's setting `field` going `from` → `to`, as
/// `action` with both values; `None` when they are equal: nothing is to be written.
fn setting_change<T: serde::Serialize + PartialEq>(
    state: &crate::AdminState,
    tenant: &Tenant,
    (action, field): (&str, &str),
    from: T,
    to: T,
) -> Option<countersign_domain::audit_chain::AuditEntry> {
    if from == to {
        return None;
    }
    let changes = serde_json::json!({ field: {"from": from, "to": to} });
    Some(crate::audit::by_admin(state, tenant, action, changes))
}

/// The answer to an audited write of one of an authenticated tenant's settings.
pub(crate) fn setting_saved(
    outcome: Result<TransitionOutcome, countersign_domain::ports::StoreError>,
) -> Result<(), crate::state::AdminError> {
    match outcome? {
        TransitionOutcome::Applied => Ok(()),
        // The tenant was authenticated a moment ago: it is gone only if removed meanwhile.
        TransitionOutcome::Conflict { .. } => Err(crate::state::AdminError::Unavailable {
            what: "the tenant store",
            cause: "the tenant was not found while saving".into(),
        }),
    }
}

/// the longest sign-in hand-off URL.
pub const SIGN_IN_URL_MAX: usize = 2048;

/// a sign-in hand-off URL as the tenant gives it, checked: `https` (plain `http` only
/// to loopback on the local stack), no credentials, no fragment, at most
/// [`SIGN_IN_URL_MAX`] bytes. The empty text removes it.
pub fn parse_sign_in_url(
    raw: &str,
    policy: countersign_domain::config::UrlPolicy,
) -> Result<Option<String>, &'static str> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    if raw.len() > SIGN_IN_URL_MAX {
        return Err("must be at most 2048 characters");
    }
    let url = url::Url::parse(raw).map_err(|_| "must be an absolute https URL")?;
    let loopback = matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"));
    let scheme_ok = url.scheme() == "https"
        || (url.scheme() == "http" && loopback && policy.allow_loopback_http);
    if !scheme_ok || url.host_str().is_none() {
        return Err("must be an absolute https URL");
    }
    if !url.username().is_empty() || url.password().is_some() || url.fragment().is_some() {
        return Err("must not carry credentials or a fragment");
    }
    Ok(Some(url.to_string()))
}

#[cfg(test)]
mod sign_in_url_tests {
    use super::*;
    use countersign_domain::config::UrlPolicy;

    /// the hand-off URL is https (http only to loopback on the local stack), without
    /// credentials or fragment; empty removes it.
    #[test]
    fn x3_the_sign_in_url_is_checked() {
        let deployed = UrlPolicy {
            allow_loopback_http: false,
        };
        let local = UrlPolicy {
            allow_loopback_http: true,
        };
        assert_eq!(
            parse_sign_in_url("https://acme.example/sign-in?x=1", deployed),
            Ok(Some("https://acme.example/sign-in?x=1".into()))
        );
        assert_eq!(parse_sign_in_url("  ", deployed), Ok(None));
        for bad in [
            "http://acme.example/sign-in",
            "http://127.0.0.1:9/sign-in",
            "javascript:alert(1)",
            "/sign-in",
            "https://user:pw@acme.example/",
            "https://acme.example/#frag",
        ] {
            assert!(parse_sign_in_url(bad, deployed).is_err(), "{bad}");
        }
        assert!(
            parse_sign_in_url(&format!("https://a.example/{}", "x".repeat(2100)), deployed)
                .is_err()
        );
        assert!(parse_sign_in_url("http://127.0.0.1:9/sign-in", local).is_ok());
    }
}
