//! F-2: a person's passkeys as the tenant's administrator sees them — listed (never a key's
//! secret: there is none here, only public keys) and revoked, each revocation audited.

use crate::state::{AdminError, AdminState, store_down};
use countersign_domain::ids::UserId;
use countersign_domain::ports::{Passkey, Tenant};
use countersign_domain::stepup::CredentialKey;

/// One passkey, as shown.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PasskeyView {
    /// The credential id (base64url).
    pub id: String,
    /// `ES256` or `EdDSA`.
    pub algorithm: &'static str,
    /// How the browser reaches the authenticator.
    pub transports: Vec<String>,
    /// When it was enrolled (RFC 3339).
    pub created_at: String,
    /// When it last countersigned an action (RFC 3339).
    pub last_used_at: Option<String>,
}

impl From<&Passkey> for PasskeyView {
    fn from(p: &Passkey) -> Self {
        Self {
            id: p.id.clone(),
            algorithm: match p.key {
                CredentialKey::Es256 { .. } => "ES256",
                CredentialKey::Ed25519 { .. } => "EdDSA",
            },
            transports: p.transports.clone(),
            created_at: p.created_at.to_rfc3339(),
            last_used_at: p.last_used_at.map(|t| t.to_rfc3339()),
        }
    }
}

/// `user`'s passkeys for `tenant`, oldest first.
pub async fn list(
    state: &AdminState,
    tenant: &Tenant,
    user: &UserId,
) -> Result<Vec<PasskeyView>, AdminError> {
    let found = state.stores.retention.passkeys(&tenant.id, user).await?;
    Ok(found.iter().map(PasskeyView::from).collect())
}

/// Revokes `user`'s passkey `id`, with its audit record (`passkey.revoked`, the person
/// sealed); `false` when the person has no such passkey (nothing written).
pub async fn revoke(
    state: &AdminState,
    tenant: &Tenant,
    user: &UserId,
    id: &str,
) -> Result<bool, AdminError> {
    let record = crate::audit::by_admin(
        state,
        tenant,
        "passkey.revoked",
        serde_json::json!({"person": user.as_str(), "credentialId": id}),
    );
    state
        .stores
        .retention
        .revoke_passkey(&tenant.id, user, id, &record)
        .await
        .map_err(store_down)
}

#[cfg(test)]
mod tests;
