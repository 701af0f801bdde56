//! Verifying `X-MCP-Confirmation` (A-31 … A-33): the platform's RS256 proof that the
//! person confirmed exactly this action.
//!
//! Order of checks: the header by hand first (exactly `alg: RS256`, `typ:
//! support-action+jwt`, a `kid` among the installed keys, and no `jku`/`x5u`/`jwk`/`x5c`
//! or any other field), so that no attacker-chosen algorithm or key ever reaches the
//! signature check; then the signature, issuer and audience (`jsonwebtoken`, RS256 only);
//! then the times with the caller's clock; then every binding claim against the action
//! being executed. Replay is the caller's next step ([`crate::replay`]).
//!
//! F-4, F-5: a proof of type `support-action-stepup+jwt` carries, besides the fourteen
//! claims, the person's passkey assertion over this exact action (`stepUp`) and `amr`. A
//! verifier accepts one only once told the platform's step-up RP ID and origins
//! ([`Verifier::with_step_up`]); it then recomputes the challenge from the proof's own
//! claims and checks the assertion itself, and — with [`Verifier::with_pinned_keys`] — that
//! the credential is one you pinned for the person. [`Verifier::require_step_up`] makes an
//! operation refuse any proof without one, whatever the platform's settings say.

pub use crate::rejection::ProofRejection;
use crate::replay::ReplayGuard;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_domain::proof::{MAX_LIFETIME_SECONDS, PROOF_ALG, PROOF_TYPE, ProofClaims};
use countersign_domain::stepup::{self, CredentialKey, Evidence, STEPUP_PROOF_TYPE};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, errors::ErrorKind};
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Default tolerance for clock differences, in seconds.
pub const DEFAULT_LEEWAY_SECONDS: i64 = 5;

/// Header fields that would let a token bring its own key: never accepted.
const EMBEDDED_KEY_FIELDS: [&str; 4] = ["jku", "x5u", "jwk", "x5c"];

/// The action a proof must be bound to: the identity headers of the call and the stored
/// proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedAction<'a> {
    /// `X-MCP-Tenant-Id` (claim `tenantId`).
    pub tenant_id: &'a str,
    /// `X-MCP-User-Id` (claim `sub`).
    pub user_id: &'a str,
    /// `X-MCP-Conversation-Id` (claim `conversationId`).
    pub conversation_id: &'a str,
    /// The proposal (claim `actionId`).
    pub action_id: &'a str,
    /// Its operation.
    pub operation: &'a str,
    /// Its stored `argumentsHash`.
    pub arguments_hash: &'a str,
    /// Its stored `summaryHash`.
    pub summary_hash: &'a str,
    /// Its stored `expiresAt` (Unix seconds), when the server keeps it: the proof's `exp`
    /// may not be later (A-33: `exp = min(iat + 60, expiresAt)`), so a proof cannot
    /// outlive its proposal. `None` skips this check only.
    pub expires_at: Option<i64>,
}

/// A proof that passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedProof {
    /// Its claims (record `jti`, `messageId` and `presentedMessageId` with the execution).
    pub claims: ProofClaims,
    /// F-5: the passkey assertion it carried, checked (record the credential id with the
    /// execution); `None` for a proof without a step-up.
    pub step_up: Option<Evidence>,
}

/// F-5: the credentials you enrolled for a person yourself (your own records, or an export
/// of the platform's enrolments you keep): a step-up by any other key is refused.
pub trait PinnedKeys: Send + Sync {
    /// The keys pinned for `user_id` of `tenant_id`; `None` when you keep none for them (the
    /// platform's word on the credential is then taken).
    fn keys(&self, tenant_id: &str, user_id: &str) -> Option<Vec<CredentialKey>>;
}

/// How step-up proofs are checked here (F-5).
#[derive(Clone, Default)]
struct StepUpPolicy {
    /// The platform's `stepUpRpId` and `stepUpOrigins` (its actionVerification); `None`:
    /// step-up proofs are refused.
    ceremony: Option<(String, Vec<String>)>,
    /// Operations whose proofs must carry a step-up.
    required: BTreeSet<String>,
    pins: Option<Arc<dyn PinnedKeys>>,
}

struct TrustedKey {
    kid: String,
    key: DecodingKey,
}

/// Verifies proofs for one provider: its installed keys, the platform's issuer and its own
/// audience.
pub struct Verifier {
    keys: Vec<TrustedKey>,
    jwks: Option<std::sync::Arc<crate::jwks::Jwks>>,
    issuer: String,
    audience: String,
    leeway: i64,
    step_up: StepUpPolicy,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field(
                "kids",
                &self.keys.iter().map(|k| &k.kid).collect::<Vec<_>>(),
            )
            .field("jwks", &self.jwks)
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("step_up_ceremony", &self.step_up.ceremony)
            .field("step_up_required", &self.step_up.required)
            .finish_non_exhaustive()
    }
}

/// The public key PEM could not be read.
#[derive(Debug, thiserror::Error)]
#[error("the public key is not an RSA public key in PEM")]
pub struct KeyError;

impl Verifier {
    /// A verifier for `issuer` (the `issuer` shown in the admin page's actionVerification)
    /// and `audience` (your configured audience, or your `serverUrl`). Install at least one
    /// key with [`Verifier::with_key`] or follow the platform's JWKS with
    /// [`Verifier::with_jwks`].
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        Self {
            keys: Vec::new(),
            jwks: None,
            issuer: issuer.into(),
            audience: audience.into(),
            leeway: DEFAULT_LEEWAY_SECONDS,
            step_up: StepUpPolicy::default(),
        }
    }

    /// F-5: accepts step-up proofs whose passkey ceremony ran for `rp_id` on one of
    /// `origins` (the platform's `stepUpRpId` and `stepUpOrigins`). Without it every
    /// step-up proof is refused ([`ProofRejection::StepUpNotAccepted`]).
    pub fn with_step_up(mut self, rp_id: impl Into<String>, origins: Vec<String>) -> Self {
        self.step_up.ceremony = Some((rp_id.into(), origins));
        self
    }

    /// F-5: `operation`'s proofs must carry a step-up: a proof without one is refused
    /// ([`ProofRejection::StepUpRequired`]) even if the platform's settings say `none`.
    pub fn require_step_up(mut self, operation: impl Into<String>) -> Self {
        self.step_up.required.insert(operation.into());
        self
    }

    /// F-5: a step-up's credential must be one `pins` holds for the person, when it holds
    /// any for them ([`ProofRejection::StepUp`] with `NotPinned` otherwise).
    pub fn with_pinned_keys(mut self, pins: Arc<dyn PinnedKeys>) -> Self {
        self.step_up.pins = Some(pins);
        self
    }

    /// Installs a trusted key: `keyId` and `publicKeyPem` from actionVerification. Keep the
    /// old key installed during a rotation.
    pub fn with_key(
        mut self,
        kid: impl Into<String>,
        public_key_pem: &str,
    ) -> Result<Self, KeyError> {
        let key = DecodingKey::from_rsa_pem(public_key_pem.as_bytes()).map_err(|_| KeyError)?;
        self.keys.push(TrustedKey {
            kid: kid.into(),
            key,
        });
        Ok(self)
    }

    /// Follows the platform's JWKS (K-2): keys are fetched from it, cached, and fetched
    /// again when a proof names one not yet known, so a key rotation needs nothing from
    /// you. Keys installed with [`Verifier::with_key`] are looked at first. Only
    /// [`Verifier::verify_and_consume`] and [`Verifier::verify_fetching`] fetch;
    /// [`Verifier::verify`] uses what is cached.
    pub fn with_jwks(mut self, jwks: std::sync::Arc<crate::jwks::Jwks>) -> Self {
        self.jwks = Some(jwks);
        self
    }

    /// Clock tolerance in seconds (default 5; at most 30).
    pub fn with_leeway(mut self, seconds: i64) -> Self {
        self.leeway = seconds.clamp(0, 30);
        self
    }

    /// Checks `token` for `expected` at `now` (seconds since the epoch). Does not consume
    /// it: see [`Verifier::verify_and_consume`].
    pub fn verify(
        &self,
        token: &str,
        expected: &ExpectedAction<'_>,
        now: i64,
    ) -> Result<VerifiedProof, ProofRejection> {
        let kid = self.check_header(token)?;
        let key = self
            .installed(&kid)
            .or_else(|| self.jwks.as_ref().and_then(|j| j.cached(&kid)))
            .ok_or(ProofRejection::UnknownKey)?;
        self.verify_with(token, &key, expected, now)
    }

    /// [`Verifier::verify`], fetching the JWKS when the proof's `kid` is not known yet
    /// (or the cached set is stale).
    pub async fn verify_fetching(
        &self,
        token: &str,
        expected: &ExpectedAction<'_>,
        now: i64,
    ) -> Result<VerifiedProof, ProofRejection> {
        let kid = self.check_header(token)?;
        let key = match (self.installed(&kid), &self.jwks) {
            (Some(k), _) => k,
            (None, Some(jwks)) => jwks.key(&kid).await?,
            (None, None) => return Err(ProofRejection::UnknownKey),
        };
        self.verify_with(token, &key, expected, now)
    }

    /// A key installed with [`Verifier::with_key`].
    fn installed(&self, kid: &str) -> Option<DecodingKey> {
        self.keys
            .iter()
            .find(|k| k.kid == kid)
            .map(|k| k.key.clone())
    }

    /// Everything after the header: signature, issuer, audience, times, bindings.
    fn verify_with(
        &self,
        token: &str,
        key: &DecodingKey,
        expected: &ExpectedAction<'_>,
        now: i64,
    ) -> Result<VerifiedProof, ProofRejection> {
        let mut validation = Validation::new(Algorithm::RS256);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["iss", "aud", "sub", "exp"]);
        // Times are checked below against the caller's clock.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.leeway = 0;
        let decoded =
            jsonwebtoken::decode::<Value>(token, key, &validation).map_err(|e| match e.kind() {
                ErrorKind::InvalidSignature => ProofRejection::BadSignature,
                ErrorKind::InvalidIssuer => ProofRejection::Issuer,
                ErrorKind::InvalidAudience => ProofRejection::Audience,
                ErrorKind::InvalidAlgorithm => ProofRejection::Algorithm(String::new()),
                _ => ProofRejection::Malformed("claims"),
            })?;
        let step_up_type = decoded.header.typ.as_deref() == Some(STEPUP_PROOF_TYPE);
        let (claims, evidence) = if step_up_type {
            if self.step_up.ceremony.is_none() {
                return Err(ProofRejection::StepUpNotAccepted);
            }
            let (claims, evidence, _amr) =
                stepup::split_claims(decoded.claims).map_err(ProofRejection::StepUp)?;
            (claims, Some(evidence))
        } else {
            let claims: ProofClaims = serde_json::from_value(decoded.claims)
                .map_err(|_| ProofRejection::Malformed("claims"))?;
            (claims, None)
        };
        if claims.exp <= claims.iat || claims.exp - claims.iat > MAX_LIFETIME_SECONDS {
            return Err(ProofRejection::Lifetime);
        }
        if claims.iat > now + self.leeway {
            return Err(ProofRejection::NotYetValid);
        }
        if now > claims.exp + self.leeway {
            return Err(ProofRejection::Expired);
        }
        let bindings: [(&'static str, &str, &str); 7] = [
            ("tenantId", &claims.tenant_id, expected.tenant_id),
            ("sub", &claims.sub, expected.user_id),
            (
                "conversationId",
                &claims.conversation_id,
                expected.conversation_id,
            ),
            ("actionId", &claims.action_id, expected.action_id),
            ("operation", &claims.operation, expected.operation),
            (
                "argumentsHash",
                &claims.arguments_hash,
                expected.arguments_hash,
            ),
            ("summaryHash", &claims.summary_hash, expected.summary_hash),
        ];
        for (name, got, want) in bindings {
            if got != want {
                return Err(ProofRejection::Mismatch(name));
            }
        }
        if expected.expires_at.is_some_and(|e| claims.exp > e) {
            return Err(ProofRejection::Mismatch("exp"));
        }
        if claims.jti.is_empty() {
            return Err(ProofRejection::Malformed("jti"));
        }
        self.check_step_up(&claims, evidence.as_ref())?;
        Ok(VerifiedProof {
            claims,
            step_up: evidence,
        })
    }

    /// F-5: the step-up a proof carries, checked from its own claims; or none, where the
    /// operation does not require one.
    fn check_step_up(
        &self,
        claims: &ProofClaims,
        evidence: Option<&Evidence>,
    ) -> Result<(), ProofRejection> {
        let (Some(evidence), Some((rp_id, origins))) = (evidence, &self.step_up.ceremony) else {
            return if self.step_up.required.contains(&claims.operation) {
                Err(ProofRejection::StepUpRequired)
            } else {
                Ok(())
            };
        };
        let pinned = self
            .step_up
            .pins
            .as_ref()
            .and_then(|p| p.keys(&claims.tenant_id, &claims.sub));
        evidence
            .verify(claims, rp_id, origins, pinned.as_deref())
            .map(|_| ())
            .map_err(ProofRejection::StepUp)
    }

    /// [`Verifier::verify`], then consumes the proof's `jti` in `guard`: a second use of
    /// the same proof is [`ProofRejection::Replayed`]; then claims its action (N-1): a
    /// second proof for an action already claimed is [`ProofRejection::AlreadyExecuted`].
    /// Execute only after `Ok`.
    pub async fn verify_and_consume(
        &self,
        token: &str,
        expected: &ExpectedAction<'_>,
        guard: &dyn ReplayGuard,
        now: i64,
    ) -> Result<VerifiedProof, ProofRejection> {
        let proof = self.verify_fetching(token, expected, now).await?;
        match guard
            .consume(&proof.claims.jti, proof.claims.exp, now)
            .await
        {
            Ok(true) => {}
            Ok(false) => return Err(ProofRejection::Replayed),
            Err(_) => return Err(ProofRejection::GuardUnavailable),
        }
        match guard
            .claim_action(&proof.claims.tenant_id, &proof.claims.action_id)
            .await
        {
            Ok(true) => Ok(proof),
            Ok(false) => Err(ProofRejection::AlreadyExecuted),
            Err(_) => Err(ProofRejection::GuardUnavailable),
        }
    }

    /// The header rules; returns the `kid`.
    fn check_header(&self, token: &str) -> Result<String, ProofRejection> {
        let mut parts = token.split('.');
        let (Some(header), Some(_), Some(_), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(ProofRejection::Malformed("not a compact JWS"));
        };
        let bytes = URL_SAFE_NO_PAD
            .decode(header)
            .map_err(|_| ProofRejection::Malformed("header encoding"))?;
        let Ok(Value::Object(header)) = serde_json::from_slice::<Value>(&bytes) else {
            return Err(ProofRejection::Malformed("header"));
        };
        for field in EMBEDDED_KEY_FIELDS {
            if header.contains_key(field) {
                return Err(ProofRejection::EmbeddedKey(field));
            }
        }
        match header.get("alg") {
            Some(Value::String(a)) if a == PROOF_ALG => {}
            Some(Value::String(a)) => return Err(ProofRejection::Algorithm(a.clone())),
            _ => return Err(ProofRejection::Algorithm(String::new())),
        }
        let typ = header.get("typ").and_then(Value::as_str);
        if typ != Some(PROOF_TYPE) && typ != Some(STEPUP_PROOF_TYPE) {
            return Err(ProofRejection::Type);
        }
        if header
            .keys()
            .any(|k| !["alg", "typ", "kid"].contains(&k.as_str()))
        {
            return Err(ProofRejection::Malformed("unexpected header field"));
        }
        header
            .get("kid")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or(ProofRejection::UnknownKey)
    }
}
