//! Gateway access tokens (D-4): short-lived HS256 JWTs that bind one conversation
//! (tenant, user, case). The messages function and the local stack mint them; the gateway
//! verifies them. The principal comes from the token, never from tool arguments.
//!
//! The signing secret is a platform secret held in the secret store
//! (`platform/gateway-token-key`), distinct from widget secrets and from the proof key.

use countersign_domain::conversation::Principal;
use countersign_domain::ids::{CaseId, TenantId, UserId};
use countersign_domain::secret::SecretString;
use countersign_domain::time::Timestamp;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};

/// Name of the secret (under the deployment's secret prefix).
pub const SECRET_NAME: &str = "platform/gateway-token-key";
/// Longest validity a token may have.
pub const MAX_TTL_SECONDS: i64 = 15 * 60;
const ISSUER: &str = "countersign";
const AUDIENCE: &str = "countersign-gateway";

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Claims {
    iss: String,
    aud: String,
    tid: String,
    sub: String,
    cid: String,
    iat: i64,
    exp: i64,
}

/// Whom a valid token speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// Tenant and user.
    pub principal: Principal,
    /// The one conversation the token opens.
    pub case: CaseId,
}

/// Why a token was refused. Deliberately coarse: the HTTP answer is 401 either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AccessError {
    /// No bearer token.
    #[error("missing bearer token")]
    Missing,
    /// Bad signature, wrong algorithm, issuer or audience, malformed claims.
    #[error("invalid token")]
    Invalid,
    /// Past `exp`, or valid for longer than allowed.
    #[error("expired token")]
    Expired,
}

/// Mints a token for `grant`, valid `ttl_seconds` (at most [`MAX_TTL_SECONDS`]) from `now`.
pub fn mint(
    secret: &SecretString,
    grant: &Grant,
    now: Timestamp,
    ttl_seconds: i64,
) -> Result<String, AccessError> {
    let iat = now.unix_seconds();
    let claims = Claims {
        iss: ISSUER.into(),
        aud: AUDIENCE.into(),
        tid: grant.principal.tenant.to_string(),
        sub: grant.principal.user.to_string(),
        cid: grant.case.to_string(),
        iat,
        exp: iat + ttl_seconds.clamp(1, MAX_TTL_SECONDS),
    };
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(secret.expose().as_bytes()),
    )
    .map_err(|_| AccessError::Invalid)
}

/// Verifies a token at `now`: HS256 only, issuer, audience, expiry (5 s leeway), a
/// lifetime no longer than [`MAX_TTL_SECONDS`], and well-formed ids.
pub fn verify(secret: &SecretString, token: &str, now: Timestamp) -> Result<Grant, AccessError> {
    let mut v = Validation::new(Algorithm::HS256);
    v.set_issuer(&[ISSUER]);
    v.set_audience(&[AUDIENCE]);
    v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    // Expiry is checked below against the caller's clock, not the system clock.
    v.validate_exp = false;
    let data = jsonwebtoken::decode::<Claims>(
        token,
        &DecodingKey::from_secret(secret.expose().as_bytes()),
        &v,
    )
    .map_err(|_| AccessError::Invalid)?;
    let c = data.claims;
    if now.unix_seconds() > c.exp + 5 || c.exp - c.iat > MAX_TTL_SECONDS {
        return Err(AccessError::Expired);
    }
    Ok(Grant {
        principal: Principal {
            tenant: TenantId::parse(c.tid).map_err(|_| AccessError::Invalid)?,
            user: UserId::parse(c.sub).map_err(|_| AccessError::Invalid)?,
        },
        case: CaseId::parse(c.cid).map_err(|_| AccessError::Invalid)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ULID: &str = "01JDZ6Y5X1QW9T3V7N2K4M8P0R";

    fn grant() -> Grant {
        Grant {
            principal: Principal {
                tenant: TenantId::from_ulid_text(ULID).unwrap(),
                user: UserId::parse("driver-42").unwrap(),
            },
            case: CaseId::from_ulid_text(ULID).unwrap(),
        }
    }

    fn now() -> Timestamp {
        Timestamp::from_unix_seconds(1_795_986_900).unwrap()
    }

    /// D-4: a minted token verifies to the same grant; expired, forged or mis-keyed ones
    /// are refused.
    #[test]
    fn d4_tokens_bind_one_conversation_and_expire() {
        let key = SecretString::new("k".repeat(32));
        let t = mint(&key, &grant(), now(), 300).unwrap();
        assert_eq!(verify(&key, &t, now()), Ok(grant()));
        assert_eq!(
            verify(&key, &t, now().plus_seconds(306)),
            Err(AccessError::Expired)
        );
        assert_eq!(
            verify(&SecretString::new("other"), &t, now()),
            Err(AccessError::Invalid)
        );
        assert_eq!(
            verify(&key, "not.a.token", now()),
            Err(AccessError::Invalid)
        );
        // A token claiming a longer life than allowed is refused even if signed.
        let long = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &Claims {
                iss: ISSUER.into(),
                aud: AUDIENCE.into(),
                tid: grant().principal.tenant.to_string(),
                sub: "driver-42".into(),
                cid: grant().case.to_string(),
                iat: now().unix_seconds(),
                exp: now().unix_seconds() + 86_400,
            },
            &EncodingKey::from_secret(key.expose().as_bytes()),
        )
        .unwrap();
        assert_eq!(verify(&key, &long, now()), Err(AccessError::Expired));
        // `alg: none` is never accepted.
        let parts: Vec<&str> = t.split('.').collect();
        let none = format!("eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.{}.", parts[1]);
        assert_eq!(verify(&key, &none, now()), Err(AccessError::Invalid));
    }
}
