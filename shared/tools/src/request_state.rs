//! the `requestState` of an MCP `input_required` answer (protocol 2026-07-28).
//!
//! The client echoes it on its retry and must treat it as opaque; the gateway treats what
//! comes back as attacker-controlled. It is an HS256 JWS (integrity, not secrecy: it names
//! only what the client's own token and the page's URL already tell it) under a key
//! derived from the gateway token secret with its own label, so it is never the action key
//! and never a key a gateway token verifies with (distinct key and audience). It binds
//! tenant, person, conversation, proposal, the confirmation link and both of the
//! proposal's hashes; it expires no later than the proposal; its random id is spent once
//! server-side ([`countersign_domain::ports::ConfirmationLinks::spend_state`]).

use countersign_domain::secret::SecretString;
use countersign_domain::time::Timestamp;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

const ISSUER: &str = "countersign";
const AUDIENCE: &str = "countersign-request-state";
/// The derivation label: a request-state key is never the token key itself.
const LABEL: &[u8] = b"countersign/mcp-request-state/v1\0";

/// What a request state binds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestState {
    /// Tenant.
    pub tid: String,
    /// Person (the gateway token's `sub`).
    pub sub: String,
    /// Conversation.
    pub cid: String,
    /// Proposal (the provider's action id).
    pub aid: String,
    /// The confirmation link's id (what the page's URL carries).
    pub lnk: String,
    /// The proposal's summary hash.
    pub sh: String,
    /// The proposal's arguments hash.
    pub ah: String,
    /// Random, spent once.
    pub jti: String,
    /// Expiry (Unix seconds), never after the proposal's.
    pub exp: i64,
}

#[derive(Serialize, Deserialize)]
struct Claims {
    iss: String,
    aud: String,
    #[serde(flatten)]
    state: RequestState,
}

/// Why a request state was refused. The client is told only that it is not valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// Not one the gateway minted, or altered.
    #[error("invalid request state")]
    Invalid,
    /// Past its expiry.
    #[error("expired request state")]
    Expired,
}

/// The request-state key.
pub struct StateKey {
    encoding: EncodingKey,
    decoding: DecodingKey,
    rules: Validation,
}

countersign_domain::debug_showing!(StateKey {});

impl StateKey {
    /// The key derived from the gateway token secret.
    pub fn derive(gateway_secret: &SecretString) -> Self {
        let mut h = Sha256::new();
        h.update(LABEL);
        h.update(gateway_secret.expose().as_bytes());
        let key = h.finalize();
        let mut rules = Validation::new(Algorithm::HS256);
        rules.set_issuer(&[ISSUER]);
        rules.set_audience(&[AUDIENCE]);
        rules.set_required_spec_claims(&["exp", "iss", "aud"]);
        // Expiry is checked against the caller's clock.
        rules.validate_exp = false;
        Self {
            encoding: EncodingKey::from_secret(&key),
            decoding: DecodingKey::from_secret(&key),
            rules,
        }
    }

    /// The state's text.
    pub fn seal(&self, state: &RequestState) -> Result<String, StateError> {
        let claims = Claims {
            iss: ISSUER.into(),
            aud: AUDIENCE.into(),
            state: state.clone(),
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .map_err(|_| StateError::Invalid)
    }

    /// The state `text` carries, if this key sealed it and it has not expired at `now`.
    pub fn open(&self, text: &str, now: Timestamp) -> Result<RequestState, StateError> {
        let claims = jsonwebtoken::decode::<Claims>(text, &self.decoding, &self.rules)
            .map_err(|_| StateError::Invalid)?
            .claims;
        if now.unix_seconds() >= claims.state.exp {
            return Err(StateError::Expired);
        }
        Ok(claims.state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(exp: i64) -> RequestState {
        RequestState {
            tid: "acme".into(),
            sub: "u-1".into(),
            cid: "01JDZ6Y5X1QW9T3V7N2K4M8P0R".into(),
            aid: "act_1".into(),
            lnk: "link".into(),
            sh: "a".repeat(64),
            ah: "b".repeat(64),
            jti: "j".into(),
            exp,
        }
    }

    fn at(s: i64) -> Timestamp {
        Timestamp::from_unix_seconds(s).unwrap()
    }

    /// a state opens with its own key before its expiry, and only then.
    #[test]
    fn x2_a_state_opens_only_with_its_key_and_before_expiry() {
        let key = StateKey::derive(&SecretString::new("gateway-secret"));
        let text = key.seal(&state(1_000)).unwrap();
        assert_eq!(key.open(&text, at(999)).unwrap(), state(1_000));
        assert_eq!(key.open(&text, at(1_000)), Err(StateError::Expired));
        let other = StateKey::derive(&SecretString::new("another-secret"));
        assert_eq!(other.open(&text, at(10)), Err(StateError::Invalid));
    }

    /// any change to the state (here: another proposal) is refused.
    #[test]
    fn x4_an_altered_state_is_refused() {
        let key = StateKey::derive(&SecretString::new("gateway-secret"));
        let text = key.seal(&state(1_000)).unwrap();
        let mut parts: Vec<String> = text.split('.').map(str::to_owned).collect();
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let mut body: serde_json::Value =
            serde_json::from_slice(&b64.decode(&parts[1]).unwrap()).unwrap();
        body["aid"] = "act_2".into();
        parts[1] = b64.encode(body.to_string());
        assert_eq!(key.open(&parts.join("."), at(10)), Err(StateError::Invalid));
        assert_eq!(key.open("not a state", at(10)), Err(StateError::Invalid));
    }

    /// a gateway token is not a request state, though both come from one secret: the
    /// key and the audience differ.
    #[test]
    fn x2_a_gateway_token_is_not_a_request_state() {
        let secret = SecretString::new("gateway-secret");
        let grant = crate::access::Grant {
            principal: countersign_domain::conversation::Principal {
                tenant: countersign_domain::ids::TenantId::from_ulid_text(
                    "01JDZ6Y5X1QW9T3V7N2K4M8P0R",
                )
                .unwrap(),
                user: countersign_domain::ids::UserId::parse("u-1").unwrap(),
            },
            case: countersign_domain::ids::CaseId::from_ulid_text("01JDZ6Y5X1QW9T3V7N2K4M8P0R")
                .unwrap(),
        };
        let token = crate::access::mint(&secret, &grant, at(0), 600).unwrap();
        let key = StateKey::derive(&secret);
        assert_eq!(key.open(&token, at(10)), Err(StateError::Invalid));
    }
}
