//! Gateway access tokens (D-4): short-lived HS256 JWTs that bind one conversation
//! (tenant, user, case). The messages function and the local stack mint them; the gateway
//! verifies them. The principal comes from the token, never from tool arguments.
//!
//! The signing secret is a platform secret held in the secret store
//! (`platform/gateway-token-key`), distinct from widget secrets and from the proof key.

use countersign_domain::conversation::Principal;
use countersign_domain::ids::{CaseId, TenantId, UserId};
use countersign_domain::ports::SecretStore;
use countersign_domain::secret::SecretString;
use countersign_domain::time::Timestamp;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::OnceCell;

/// Name of the secret (under the deployment's secret prefix): the domain's one name.
pub const SECRET_NAME: &str = countersign_domain::ports::GATEWAY_TOKEN_KEY;
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

/// Why the gateway token key could not be had.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The secret does not exist (the deployment was not bootstrapped).
    #[error("the gateway token key is missing; run `countersign bootstrap`")]
    Missing,
    /// The secret store failed.
    #[error("reading the gateway token key: {0}")]
    Store(String),
}

/// The key in secret `name` (under the deployment's prefix, [`SECRET_NAME`]): what the
/// gateway verifies tokens with and the messages function mints a person's with.
pub async fn read_key(secrets: &dyn SecretStore, name: &str) -> Result<SecretString, KeyError> {
    match secrets.get_current(name).await {
        Ok(Some((key, _))) => Ok(key),
        Ok(None) => Err(KeyError::Missing),
        Err(e) => Err(KeyError::Store(e.to_string())),
    }
}

/// The gateway token key as one process holds it, prepared as `T` (what it verifies or
/// mints with): read on first use, so a function makes no network call at init (issue
/// 17's cold start), then kept for the life of the process, so a container reads the
/// secret once, not once per request. A failed read is not kept: the next use tries again.
pub struct LazyKey<T> {
    source: Option<(Arc<dyn SecretStore>, String)>,
    cell: OnceCell<T>,
}

impl<T> std::fmt::Debug for LazyKey<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyKey")
            .field("loaded", &self.loaded())
            .finish_non_exhaustive()
    }
}

impl<T> LazyKey<T> {
    /// The key in secret `name` of `secrets` ([`SECRET_NAME`] in a deployment).
    pub fn lazy(secrets: Arc<dyn SecretStore>, name: &str) -> Self {
        Self {
            source: Some((secrets, name.to_owned())),
            cell: OnceCell::new(),
        }
    }

    /// A key known up front (tests, tools, the local stack), already prepared.
    pub fn fixed(prepared: T) -> Self {
        Self {
            source: None,
            cell: OnceCell::new_with(Some(prepared)),
        }
    }

    /// Whether the key was read (or given).
    pub fn loaded(&self) -> bool {
        self.cell.initialized()
    }

    /// The key, read and made into `T` by `prepare` on first use.
    pub async fn get(&self, prepare: impl FnOnce(SecretString) -> T) -> Result<&T, KeyError> {
        self.cell
            .get_or_try_init(|| async {
                let Some((secrets, name)) = &self.source else {
                    return Err(KeyError::Missing);
                };
                Ok(prepare(read_key(secrets.as_ref(), name).await?))
            })
            .await
    }
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
    Verifier::new(secret).verify(token, now)
}

/// How many verified tokens a [`Verifier`] remembers.
const REMEMBERED: usize = 4096;

/// [`verify`] for one key, built once: the key and the rules are prepared once, and each
/// token that verified is remembered (by its exact text) with its grant and expiry, so the
/// same token on a later request costs a lookup instead of an HMAC, two base64 decodes and
/// a JSON parse (a client sends one token with every request for up to 15 minutes; issue
/// 26 measured that work at a tenth of the gateway's time). A remembered token is still
/// refused once it expires; only tokens that verified are remembered, so the memory is
/// bounded by what the key's holder minted, and by [`REMEMBERED`].
pub struct Verifier {
    key: DecodingKey,
    rules: Validation,
    verified: Mutex<HashMap<Box<str>, (Grant, i64)>>,
}

countersign_domain::debug_showing!(Verifier {});

impl Verifier {
    /// A verifier for tokens signed with `secret`.
    pub fn new(secret: &SecretString) -> Self {
        let mut rules = Validation::new(Algorithm::HS256);
        rules.set_issuer(&[ISSUER]);
        rules.set_audience(&[AUDIENCE]);
        rules.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        // Expiry is checked against the caller's clock, not the system clock.
        rules.validate_exp = false;
        Self {
            key: DecodingKey::from_secret(secret.expose().as_bytes()),
            rules,
            verified: Mutex::new(HashMap::new()),
        }
    }

    /// [`verify`] with this verifier's key.
    pub fn verify(&self, token: &str, now: Timestamp) -> Result<Grant, AccessError> {
        let expired = |exp: i64| now.unix_seconds() > exp + 5;
        let mut verified = self.verified.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((grant, exp)) = verified.get(token) {
            if expired(*exp) {
                verified.remove(token);
                return Err(AccessError::Expired);
            }
            return Ok(grant.clone());
        }
        drop(verified);
        let (grant, exp) = self.decode(token)?;
        if expired(exp) {
            return Err(AccessError::Expired);
        }
        let mut verified = self.verified.lock().unwrap_or_else(PoisonError::into_inner);
        if verified.len() >= REMEMBERED {
            verified.retain(|_, (_, exp)| !expired(*exp));
            if verified.len() >= REMEMBERED {
                verified.clear();
            }
        }
        verified.insert(token.into(), (grant.clone(), exp));
        Ok(grant)
    }

    /// The token's grant and expiry, checked for everything but expiry.
    fn decode(&self, token: &str) -> Result<(Grant, i64), AccessError> {
        let c = jsonwebtoken::decode::<Claims>(token, &self.key, &self.rules)
            .map_err(|_| AccessError::Invalid)?
            .claims;
        if c.exp - c.iat > MAX_TTL_SECONDS {
            return Err(AccessError::Expired);
        }
        let grant = Grant {
            principal: Principal {
                tenant: TenantId::parse(c.tid).map_err(|_| AccessError::Invalid)?,
                user: UserId::parse(c.sub).map_err(|_| AccessError::Invalid)?,
            },
            case: CaseId::parse(c.cid).map_err(|_| AccessError::Invalid)?,
        };
        Ok((grant, c.exp))
    }
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

    /// D-4 with the remembering verifier (issue 26): a token that verified once is still
    /// refused after its expiry, a token differing in one character of its signature is
    /// checked (and refused), and a token with a lifetime over the limit is never
    /// remembered as valid.
    #[test]
    fn d4_a_remembered_token_still_expires_and_a_forged_one_is_still_checked() {
        let key = SecretString::new("k".repeat(32));
        let verifier = Verifier::new(&key);
        let t = mint(&key, &grant(), now(), 300).unwrap();
        assert_eq!(verifier.verify(&t, now()), Ok(grant()));
        assert_eq!(verifier.verify(&t, now().plus_seconds(305)), Ok(grant()));
        assert_eq!(
            verifier.verify(&t, now().plus_seconds(306)),
            Err(AccessError::Expired)
        );
        // Forgotten once expired, and never valid again.
        assert_eq!(
            verifier.verify(&t, now().plus_seconds(306)),
            Err(AccessError::Expired)
        );
        let fresh = mint(&key, &grant(), now(), 300).unwrap();
        assert_eq!(verifier.verify(&fresh, now()), Ok(grant()));
        let mut forged = fresh.clone();
        let last = forged.pop().unwrap();
        forged.push(if last == 'A' { 'B' } else { 'A' });
        assert_eq!(verifier.verify(&forged, now()), Err(AccessError::Invalid));
        // Another key's verifier does not share what this one remembered.
        let other = Verifier::new(&SecretString::new("o".repeat(32)));
        assert_eq!(other.verify(&fresh, now()), Err(AccessError::Invalid));
    }

    /// The memory is bounded: past [`REMEMBERED`] tokens, expired ones are dropped first,
    /// then everything, and every token still verifies.
    #[test]
    fn the_verifier_remembers_a_bounded_number_of_tokens() {
        let key = SecretString::new("k".repeat(32));
        let verifier = Verifier::new(&key);
        let grants: Vec<Grant> = (0..REMEMBERED + 10)
            .map(|i| Grant {
                principal: Principal {
                    user: UserId::parse(format!("user-{i}")).unwrap(),
                    ..grant().principal
                },
                ..grant()
            })
            .collect();
        let tokens: Vec<String> = grants
            .iter()
            .map(|g| mint(&key, g, now(), 300).unwrap())
            .collect();
        for round in 0..2 {
            for (t, g) in tokens.iter().zip(&grants) {
                assert_eq!(verifier.verify(t, now()).as_ref(), Ok(g), "round {round}");
            }
            let remembered = verifier.verified.lock().unwrap().len();
            assert!(remembered <= REMEMBERED, "{remembered}");
        }
    }
}
