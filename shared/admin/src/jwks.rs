//! The platform's signing keys as tenants see them (K-1): the JWKS document at
//! `/.well-known/jwks.json`, and the same set in the admin API and the panel.

use crate::AdminState;
use crate::state::AdminError;
use countersign_domain::jwk::rsa_jwk;
use countersign_domain::ports::{PublishedKeys, SignerError};
use serde::Serialize;
use serde_json::{Value, json};

/// Where the JWKS is served, on the admin function's host.
pub const JWKS_PATH: &str = "/.well-known/jwks.json";

/// V-6: where the audit checkpoint key is published, apart from the JWKS.
pub const AUDIT_KEYS_PATH: &str = "/.well-known/countersign-audit-keys.json";

/// The `purpose` member marking the audit key document and each of its keys: a verifier
/// of action proofs must refuse such a key (the provider kit does).
pub const AUDIT_PURPOSE: &str = "audit-checkpoint";

/// One published key as the admin API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublishedKeyView {
    /// The `kid` (RFC 7638 thumbprint).
    pub key_id: String,
    /// `announced` (published, not signing yet), `active` (signs) or `previous` (no longer
    /// signs; published until its proofs have expired).
    pub status: String,
    /// SPKI PEM.
    pub public_key_pem: String,
}

/// The published keys, or `None` when no signing key is installed.
pub async fn published(state: &AdminState) -> Result<Option<PublishedKeys>, AdminError> {
    match state.signer.published_keys().await {
        Ok(k) => Ok(Some(k)),
        Err(SignerError::NotConfigured) => Ok(None),
        Err(e) => Err(AdminError::unavailable("the signing service")(Box::new(e))),
    }
}

/// The admin API's view of `keys`.
pub fn views(keys: &PublishedKeys) -> Vec<PublishedKeyView> {
    keys.keys
        .iter()
        .map(|k| PublishedKeyView {
            key_id: k.key.key_id.clone(),
            status: k.status.as_str().to_owned(),
            public_key_pem: k.key.public_key_pem.clone(),
        })
        .collect()
}

/// The JWK Set (RFC 7517 §5) of `keys`. A key whose PEM is not an RSA public key is left
/// out (and logged): a provider must never be handed a key it cannot use.
pub fn document(keys: Option<&PublishedKeys>) -> Value {
    let keys: Vec<Value> = keys
        .map(|k| k.keys.as_slice())
        .unwrap_or_default()
        .iter()
        .filter_map(|k| match rsa_jwk(&k.key.public_key_pem, &k.key.key_id) {
            Ok(jwk) => Some(jwk),
            Err(e) => {
                tracing::error!(kid = %k.key.key_id, error = %e, "a published key is not an RSA public key");
                None
            }
        })
        .collect();
    json!({ "keys": keys })
}

/// V-6: the audit checkpoint key as a JWK Set, the document and each key marked
/// [`AUDIT_PURPOSE`]; no key while none is installed.
pub async fn audit_keys(state: &AdminState) -> Result<Value, AdminError> {
    let key = match state.checkpoint_signer.verification_key().await {
        Ok(k) => Some(k),
        Err(SignerError::NotConfigured) => None,
        Err(e) => return Err(AdminError::unavailable("the checkpoint key")(Box::new(e))),
    };
    let keys: Vec<Value> = key
        .iter()
        .filter_map(|k| rsa_jwk(&k.public_key_pem, &k.key_id).ok())
        .map(|mut jwk| {
            jwk["purpose"] = json!(AUDIT_PURPOSE);
            jwk
        })
        .collect();
    Ok(json!({ "purpose": AUDIT_PURPOSE, "keys": keys }))
}
