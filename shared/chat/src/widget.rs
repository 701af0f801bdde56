//! Widget identity (D-2): the tenant's backend signs end-user JWTs with its widget
//! secret — HS256, header `kid` = the widget credential id, claims `sub` (the tenant's
//! user id), `tid` (tenant id), `iat`, `exp`.
//!
//! The credential is looked up on every request (one GetItem), so a revoked credential
//! fails at once (C-9); its secret never changes (rotation is a new credential), so it is
//! cached per process.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_domain::config::widget_secret_name;
use countersign_domain::conversation::Principal;
use countersign_domain::ids::{TenantId, UserId, WidgetKeyId};
use countersign_domain::ports::{SecretStore, WidgetKeys};
use countersign_domain::secret::SecretString;
use countersign_domain::time::Timestamp;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Longest accepted widget token lifetime (`exp - iat`).
pub const MAX_TOKEN_SECONDS: i64 = 24 * 3600;

/// Why a widget token is refused. Every variant answers 401; the variant is for logs.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AuthError {
    /// Not a JWT of the expected shape.
    #[error("malformed token")]
    Malformed,
    /// Not HS256, or no `kid`.
    #[error("unsupported token header")]
    Header,
    /// No such credential (never existed, or revoked).
    #[error("unknown or revoked widget credential")]
    UnknownCredential,
    /// Signature, expiry or claims.
    #[error("invalid token")]
    Invalid,
    /// The stores could not be read.
    #[error("identity service unavailable")]
    Unavailable,
    /// A valid token, used from a web page whose origin its credential does not list
    /// (decision 0025).
    #[error("origin not allowed for this widget credential")]
    Origin,
}

#[derive(Debug, Deserialize)]
struct Claims {
    sub: String,
    tid: String,
    iat: i64,
    exp: i64,
    /// the confirmation page's nonce, in a sign-in hand-off token.
    #[serde(default)]
    nonce: Option<String>,
    /// F-2: what the tenant's sign-in was for (`enrol`: a fresh sign-in to enrol a
    /// passkey), in a hand-off token.
    #[serde(default)]
    purpose: Option<String>,
}

/// X-3, N-6, F-2: what a verified sign-in hand-off token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandOff {
    /// The person.
    pub who: Principal,
    /// The confirmation page's nonce it carries.
    pub nonce: String,
    /// F-2: `enrol` when the tenant signed the person in afresh to enrol a passkey.
    pub purpose: Option<String>,
}

/// the longest lifetime of a sign-in hand-off token (`exp - iat`): it carries the
/// person from the tenant's sign-in back to the confirmation page, once.
pub const HAND_OFF_MAX_SECONDS: i64 = 300;

#[derive(Debug, Deserialize)]
struct TenantOnly {
    tid: String,
}

/// Verifies widget tokens.
pub struct WidgetAuth {
    tenants: Arc<dyn WidgetKeys>,
    secrets: Arc<dyn SecretStore>,
    cache: Mutex<HashMap<(TenantId, WidgetKeyId), SecretString>>,
}

countersign_domain::debug_showing!(WidgetAuth {});

impl WidgetAuth {
    /// A verifier over the tenant store (credentials) and the secret store (secrets).
    pub fn new(tenants: Arc<dyn WidgetKeys>, secrets: Arc<dyn SecretStore>) -> Self {
        Self {
            tenants,
            secrets,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The authenticated person, or why not.
    pub async fn authenticate(&self, token: &str) -> Result<Principal, AuthError> {
        self.authenticate_from(token, None).await
    }

    /// The authenticated person, for a request a web page at `origin` made (the
    /// `Origin` header of a cross-origin request; `None` for same-origin or non-browser
    /// requests): a valid token is refused from an origin its credential does not list.
    pub async fn authenticate_from(
        &self,
        token: &str,
        origin: Option<&str>,
    ) -> Result<Principal, AuthError> {
        self.verify(token, origin, false).await.map(|(p, _)| p)
    }

    /// X-3, N-6: the person a sign-in hand-off token names — a widget token (same
    /// credential, claims and checks) that also carries the confirmation page's `nonce`
    /// and lives at most [`HAND_OFF_MAX_SECONDS`]. A widget token without the nonce is
    /// refused: one taken from a widget cannot open a page. Returns the person and the
    /// token's nonce; the caller matches it to the page's and spends it server-side
    /// (`ConfirmationLinks::spend_state`): this checks only the token.
    pub async fn authenticate_hand_off(&self, token: &str) -> Result<HandOff, AuthError> {
        match self.verify(token, None, true).await? {
            (who, Some((nonce, purpose))) => Ok(HandOff {
                who,
                nonce,
                purpose,
            }),
            (_, None) => Err(AuthError::Invalid),
        }
    }

    async fn verify(
        &self,
        token: &str,
        origin: Option<&str>,
        hand_off: bool,
    ) -> Result<(Principal, Option<(String, Option<String>)>), AuthError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| AuthError::Malformed)?;
        if header.alg != Algorithm::HS256 || header.jku.is_some() || header.jwk.is_some() {
            return Err(AuthError::Header);
        }
        let kid = header
            .kid
            .and_then(|k| WidgetKeyId::parse(k).ok())
            .ok_or(AuthError::Header)?;
        // The tenant names where the secret lives; it is trusted only after the signature
        // verifies with that tenant's credential.
        let payload = token.split('.').nth(1).ok_or(AuthError::Malformed)?;
        let unverified: TenantOnly = URL_SAFE_NO_PAD
            .decode(payload)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or(AuthError::Malformed)?;
        let tenant = TenantId::parse(unverified.tid).map_err(|_| AuthError::Invalid)?;
        // Revocation takes effect at once: the credential must still exist.
        let credential = self
            .tenants
            .get_widget_key(&tenant, &kid)
            .await
            .map_err(|_| AuthError::Unavailable)?
            .ok_or(AuthError::UnknownCredential)?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        // A replaced credential's grace period has ended: refused like a revoked one.
        if Timestamp::from_unix_seconds(now).is_ok_and(|t| !credential.valid_at(t)) {
            return Err(AuthError::UnknownCredential);
        }
        let secret = self.secret(&tenant, &kid).await?;
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_required_spec_claims(&["exp", "sub"]);
        validation.leeway = 30;
        let claims = jsonwebtoken::decode::<Claims>(
            token,
            &DecodingKey::from_secret(secret.expose().as_bytes()),
            &validation,
        )
        .map_err(|_| AuthError::Invalid)?
        .claims;
        check_claims(&claims, &tenant, now, hand_off)?;
        // Checked only after the token verified: an invalid token never learns whether
        // its origin would have been allowed.
        if let Some(origin) = origin
            && !credential.allowed_origins.iter().any(|o| o == origin)
        {
            return Err(AuthError::Origin);
        }
        Ok((
            Principal {
                tenant,
                user: UserId::parse(claims.sub).map_err(|_| AuthError::Invalid)?,
            },
            claims.nonce.map(|n| (n, claims.purpose)),
        ))
    }

    async fn secret(
        &self,
        tenant: &TenantId,
        kid: &WidgetKeyId,
    ) -> Result<SecretString, AuthError> {
        let key = (tenant.clone(), kid.clone());
        if let Some(s) = self
            .cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
        {
            return Ok(s.clone());
        }
        let (secret, _) = self
            .secrets
            .get_current(&widget_secret_name(tenant, kid))
            .await
            .map_err(|_| AuthError::Unavailable)?
            .ok_or(AuthError::UnknownCredential)?;
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, secret.clone());
        Ok(secret)
    }
}

/// The claims' rules, once the signature verified: tenant, times, lifetime, and N-6's
/// nonce rule.
fn check_claims(
    claims: &Claims,
    tenant: &TenantId,
    now: i64,
    hand_off: bool,
) -> Result<(), AuthError> {
    let lifetime = claims.exp.checked_sub(claims.iat);
    let max_lifetime = if hand_off {
        HAND_OFF_MAX_SECONDS
    } else {
        MAX_TOKEN_SECONDS
    };
    // N-6: a hand-off token carries its page's nonce and is good only at that page's
    // return, once; a widget token carries none. Neither passes for the other: the
    // widget API (and the gateway-token mint behind it) refuses any token with a nonce.
    if claims.nonce.is_some() != hand_off || claims.nonce.as_ref().is_some_and(String::is_empty) {
        return Err(AuthError::Invalid);
    }
    // N-7: the certification's synthetic people are never a person of the chat.
    if claims.sub.starts_with(UserId::TEST_PREFIX) {
        return Err(AuthError::Invalid);
    }
    // Issued in the future, expiring before it was issued, or valid for longer than
    // allowed: refused.
    if claims.tid != tenant.as_str()
        || claims.iat > now.saturating_add(30)
        || lifetime.is_none_or(|l| !(0..=max_lifetime).contains(&l))
    {
        return Err(AuthError::Invalid);
    }
    Ok(())
}

/// Signs a sign-in hand-off token: a widget token with the page's `nonce`, what a
/// tenant's sign-in returns the person to the confirmation page with (tests, the local
/// stack's demo sign-in).
pub fn sign_hand_off(
    secret: &SecretString,
    key_id: &WidgetKeyId,
    who: &Principal,
    nonce: &str,
    iat: i64,
    exp: i64,
) -> Result<String, jsonwebtoken::errors::Error> {
    sign_hand_off_for(secret, key_id, who, nonce, None, iat, exp)
}

/// F-2: a sign-in hand-off token for `purpose` (`enrol`: the tenant signed the person in
/// afresh so they may enrol a passkey).
pub fn sign_hand_off_for(
    secret: &SecretString,
    key_id: &WidgetKeyId,
    who: &Principal,
    nonce: &str,
    purpose: Option<&str>,
    iat: i64,
    exp: i64,
) -> Result<String, jsonwebtoken::errors::Error> {
    let mut header = jsonwebtoken::Header::new(Algorithm::HS256);
    header.kid = Some(key_id.to_string());
    let mut claims = serde_json::json!({
        "sub": who.user.as_str(), "tid": who.tenant.as_str(), "iat": iat, "exp": exp, "nonce": nonce,
    });
    if let Some(purpose) = purpose {
        claims["purpose"] = serde_json::json!(purpose);
    }
    jsonwebtoken::encode(
        &header,
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(secret.expose().as_bytes()),
    )
}

/// Signs a widget token: what a tenant's backend does (tests, the local stack's demo).
pub fn sign_token(
    secret: &SecretString,
    key_id: &WidgetKeyId,
    tenant: &TenantId,
    user: &UserId,
    iat: i64,
    exp: i64,
) -> Result<String, jsonwebtoken::errors::Error> {
    let mut header = jsonwebtoken::Header::new(Algorithm::HS256);
    header.kid = Some(key_id.to_string());
    jsonwebtoken::encode(
        &header,
        &serde_json::json!({"sub": user.as_str(), "tid": tenant.as_str(), "iat": iat, "exp": exp}),
        &jsonwebtoken::EncodingKey::from_secret(secret.expose().as_bytes()),
    )
}
