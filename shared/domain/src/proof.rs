//! The proof of human confirmation (A-31 … A-34): an RS256 compact JWS whose header and
//! claims are fixed here, and whose signature comes from a [`ProofSigner`] port (KMS in
//! production). No key material ever enters the domain.
//!
//! The proof is a secret: [`Proof`] never prints, and nothing here stores it.

use crate::confirmation::Authorized;
use crate::ports::signer::{ProofSigner, SignerError};
use crate::proposal::{Proposal, ProposalState};
use crate::secret::SecretString;
use crate::time::Timestamp;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// The header `typ` of every proof.
pub const PROOF_TYPE: &str = "support-action+jwt";
/// The only algorithm.
pub const PROOF_ALG: &str = "RS256";
/// `exp - iat` never exceeds this.
pub const MAX_LIFETIME_SECONDS: i64 = 60;

/// The JOSE header. Exactly `alg`, `typ`, `kid`: never `jku`, `x5u` or `jwk`, which
/// this type cannot express.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ProofHeader {
    /// Always `RS256`.
    pub alg: &'static str,
    /// Always `support-action+jwt`.
    pub typ: &'static str,
    /// The trusted key's id (the JWK thumbprint of the KMS public key).
    pub kid: String,
}

impl ProofHeader {
    /// The header for key `kid`.
    pub fn new(kid: impl Into<String>) -> Self {
        Self {
            alg: PROOF_ALG,
            typ: PROOF_TYPE,
            kid: kid.into(),
        }
    }
}

/// The claim set of A-32, in its wire spelling.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProofClaims {
    /// Configured issuer.
    pub iss: String,
    /// The provider audience: the tenant's `serverUrl` unless it set an explicit audience.
    pub aud: String,
    /// The user id.
    pub sub: String,
    /// The tenant id.
    pub tenant_id: String,
    /// The conversation (case) id.
    pub conversation_id: String,
    /// The action id.
    pub action_id: String,
    /// The operation.
    pub operation: String,
    /// The provider's arguments hash.
    pub arguments_hash: String,
    /// The summary hash.
    pub summary_hash: String,
    /// The confirming user message.
    pub message_id: String,
    /// The presentation it replied to.
    pub presented_message_id: String,
    /// Unique proof id.
    pub jti: String,
    /// Issued at (seconds since the epoch).
    pub iat: i64,
    /// Expiry (seconds since the epoch).
    pub exp: i64,
}

/// Why no proof can be made or signed.
#[derive(Debug, thiserror::Error)]
pub enum ProofError {
    /// The proposal's `expiresAt` has passed (or leaves no whole second of validity).
    #[error("the proposal has expired; no proof is issued")]
    ProposalExpired,
    /// The proposal is not recorded as `executing` (A-35: record first, then sign).
    #[error("the proposal is {0}, not executing; no proof is issued")]
    NotExecuting(ProposalState),
    /// The authorization is for another proposal or message than the one recorded.
    #[error("the authorization does not match the recorded confirmation")]
    AuthorizationMismatch,
    /// The signer failed.
    #[error("signing failed: {0}")]
    Signer(#[from] SignerError),
    /// The signer returned an empty signature.
    #[error("the signer returned an empty signature")]
    EmptySignature,
}

/// What a proof needs besides the proposal.
#[derive(Debug, Clone)]
pub struct ProofContext<'a> {
    /// Configured issuer.
    pub issuer: &'a str,
    /// Provider audience.
    pub audience: &'a str,
    /// A fresh unique id.
    pub jti: &'a str,
    /// The moment of signing.
    pub now: Timestamp,
}

impl ProofClaims {
    /// The claims for an authorized confirmation of `proposal`, already recorded as
    /// `executing` with `authorized.message_id` as its confirmation.
    ///
    /// `iat = now`, `exp = min(iat + 60 s, expiresAt)`; refused when that leaves no
    /// validity.
    pub fn for_confirmation(
        proposal: &Proposal,
        authorized: &Authorized,
        ctx: &ProofContext<'_>,
    ) -> Result<Self, ProofError> {
        if proposal.state != ProposalState::Executing {
            return Err(ProofError::NotExecuting(proposal.state));
        }
        if authorized.action_id != proposal.action_id
            || authorized.presented_message_id != proposal.presented.message_id
            || proposal.confirmation_message_id.as_ref() != Some(&authorized.message_id)
        {
            return Err(ProofError::AuthorizationMismatch);
        }
        let iat = ctx.now.unix_seconds();
        let exp = (iat + MAX_LIFETIME_SECONDS).min(proposal.expires_at.unix_seconds());
        if exp <= iat || proposal.is_expired_at(ctx.now) {
            return Err(ProofError::ProposalExpired);
        }
        Ok(Self {
            iss: ctx.issuer.to_owned(),
            aud: ctx.audience.to_owned(),
            sub: proposal.user.to_string(),
            tenant_id: proposal.tenant.to_string(),
            conversation_id: proposal.case.to_string(),
            action_id: proposal.action_id.to_string(),
            operation: proposal.operation.to_string(),
            arguments_hash: proposal.arguments_hash.to_string(),
            summary_hash: proposal.summary_hash.to_string(),
            message_id: authorized.message_id.to_string(),
            presented_message_id: authorized.presented_message_id.to_string(),
            jti: ctx.jti.to_owned(),
            iat,
            exp,
        })
    }
}

/// A header and claims, encoded, waiting for a signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsignedProof {
    signing_input: String,
}

impl UnsignedProof {
    /// `base64url(header) . base64url(claims)`.
    pub fn new(header: &ProofHeader, claims: &ProofClaims) -> Self {
        Self::encoded(header, claims)
    }

    /// `base64url(header) . base64url(claims)` of any header and claim set: the plain
    /// proof's, or a step-up proof's (F-4).
    pub fn encoded(header: &ProofHeader, claims: &impl serde::Serialize) -> Self {
        // Serialising these plain values cannot fail (string keys, no maps with
        // non-string keys, no floats).
        let h = serde_json::to_vec(header).unwrap_or_default();
        let c = serde_json::to_vec(claims).unwrap_or_default();
        Self {
            signing_input: format!(
                "{}.{}",
                URL_SAFE_NO_PAD.encode(h),
                URL_SAFE_NO_PAD.encode(c)
            ),
        }
    }

    /// The bytes the RS256 signature covers.
    pub fn signing_input(&self) -> &[u8] {
        self.signing_input.as_bytes()
    }

    /// Appends the signature: the compact JWS.
    pub fn finish(self, signature: &[u8]) -> Result<Proof, ProofError> {
        if signature.is_empty() {
            return Err(ProofError::EmptySignature);
        }
        Ok(Proof(SecretString::new(format!(
            "{}.{}",
            self.signing_input,
            URL_SAFE_NO_PAD.encode(signature)
        ))))
    }
}

/// A signed proof (compact JWS). Secret: it goes only into the `X-MCP-Confirmation`
/// header of one `execute_action` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proof(SecretString);

impl Proof {
    /// A compact JWS made elsewhere: the certification run's deliberately bad proofs
    /// (H-3), which no provider may accept.
    pub fn unchecked(compact: String) -> Self {
        Self(SecretString::new(compact))
    }

    /// The compact JWS, for the header. Never log or store it.
    pub fn expose(&self) -> &str {
        self.0.expose()
    }
}

/// Builds the header with the signer's key id, encodes, and signs through the port.
pub async fn sign_proof(
    signer: &dyn ProofSigner,
    claims: &ProofClaims,
) -> Result<Proof, ProofError> {
    let kid = signer.key_id().await?;
    let unsigned = UnsignedProof::new(&ProofHeader::new(kid.clone()), claims);
    let signature = signer.sign_rs256(&kid, unsigned.signing_input()).await?;
    unsigned.finish(&signature)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::test_support::Fixture;
    use serde_json::Value;
    use std::sync::Mutex;

    struct FakeSigner {
        seen: Mutex<Vec<Vec<u8>>>,
    }

    #[async_trait::async_trait]
    impl ProofSigner for FakeSigner {
        async fn key_id(&self) -> Result<String, SignerError> {
            Ok("kid-1".into())
        }
        async fn sign_rs256(
            &self,
            kid: &str,
            signing_input: &[u8],
        ) -> Result<Vec<u8>, SignerError> {
            assert_eq!(kid, "kid-1");
            self.seen.lock().unwrap().push(signing_input.to_vec());
            Ok(vec![0xAB; 256])
        }
    }

    fn executing(f: &Fixture) -> (Proposal, Authorized) {
        let mut p = f.proposal.clone();
        p.state = ProposalState::Executing;
        p.confirmation_message_id = Some(f.confirm_id.clone());
        let a = Authorized {
            action_id: p.action_id.clone(),
            message_id: f.confirm_id.clone(),
            presented_message_id: p.presented.message_id.clone(),
        };
        (p, a)
    }

    fn ctx(now: Timestamp) -> ProofContext<'static> {
        ProofContext {
            issuer: "https://support.example.com/mcp-actions",
            audience: "https://mcp.trackshare.example.com/mcp",
            jti: "jti-1",
            now,
        }
    }

    fn decode(part: &str) -> Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
    }

    /// header has exactly alg/typ/kid; claims carry every binding.
    #[test]
    fn a31_a32_header_and_claims() {
        let f = Fixture::new();
        let (p, a) = executing(&f);
        let claims = ProofClaims::for_confirmation(&p, &a, &ctx(f.now)).unwrap();
        let signer = FakeSigner {
            seen: Mutex::new(vec![]),
        };
        let proof = pollster::block_on(sign_proof(&signer, &claims)).unwrap();
        let parts: Vec<&str> = proof.expose().split('.').collect();
        assert_eq!(parts.len(), 3);
        assert_eq!(
            decode(parts[0]),
            serde_json::json!({"alg": "RS256", "typ": "support-action+jwt", "kid": "kid-1"})
        );
        let c = decode(parts[1]);
        let keys: Vec<&str> = c.as_object().unwrap().keys().map(String::as_str).collect();
        let mut want = vec![
            "iss",
            "aud",
            "sub",
            "tenantId",
            "conversationId",
            "actionId",
            "operation",
            "argumentsHash",
            "summaryHash",
            "messageId",
            "presentedMessageId",
            "jti",
            "iat",
            "exp",
        ];
        let mut got = keys.clone();
        got.sort_unstable();
        want.sort_unstable();
        assert_eq!(got, want);
        assert_eq!(c["sub"], "driver-42");
        assert_eq!(c["actionId"], "act_1");
        assert_eq!(c["messageId"], f.confirm_id.as_str());
        assert_eq!(c["presentedMessageId"], p.presented.message_id.as_str());
        assert_eq!(c["summaryHash"], p.summary_hash.as_str());
        // The signature covers exactly header.claims.
        let seen = signer.seen.lock().unwrap();
        assert_eq!(seen[0], format!("{}.{}", parts[0], parts[1]).into_bytes());
        assert_eq!(URL_SAFE_NO_PAD.decode(parts[2]).unwrap(), vec![0xAB; 256]);
        // Debug never shows the proof.
        assert!(!format!("{proof:?}").contains(parts[1]));
    }

    /// exp = min(iat + 60, expiresAt); never beyond the proposal.
    #[test]
    fn a33_lifetime_is_at_most_60s_and_never_past_expiry() {
        let f = Fixture::new();
        let (mut p, a) = executing(&f);
        let c = ProofClaims::for_confirmation(&p, &a, &ctx(f.now)).unwrap();
        assert_eq!(c.exp - c.iat, 60);
        p.expires_at = f.now.plus_seconds(20);
        let c = ProofClaims::for_confirmation(&p, &a, &ctx(f.now)).unwrap();
        assert_eq!(c.exp, p.expires_at.unix_seconds());
        assert_eq!(c.exp - c.iat, 20);
    }

    /// no proof once the proposal has expired.
    #[test]
    fn a33_expired_proposal_gets_no_proof() {
        let f = Fixture::new();
        let (p, a) = executing(&f);
        for now in [p.expires_at, p.expires_at.plus_seconds(1)] {
            assert!(matches!(
                ProofClaims::for_confirmation(&p, &a, &ctx(now)),
                Err(ProofError::ProposalExpired)
            ));
        }
    }

    /// a proof is only made for a proposal recorded as executing with this
    /// confirmation.
    #[test]
    fn a35_proof_requires_recorded_confirmation() {
        let f = Fixture::new();
        let (p, a) = executing(&f);
        let mut pending = p.clone();
        pending.state = ProposalState::PendingConfirmation;
        assert!(matches!(
            ProofClaims::for_confirmation(&pending, &a, &ctx(f.now)),
            Err(ProofError::NotExecuting(ProposalState::PendingConfirmation))
        ));
        let mut other = a;
        other.message_id = f.other_message_id.clone();
        assert!(matches!(
            ProofClaims::for_confirmation(&p, &other, &ctx(f.now)),
            Err(ProofError::AuthorizationMismatch)
        ));
    }

    #[test]
    fn empty_signature_is_refused() {
        let f = Fixture::new();
        let (p, a) = executing(&f);
        let c = ProofClaims::for_confirmation(&p, &a, &ctx(f.now)).unwrap();
        assert!(matches!(
            UnsignedProof::new(&ProofHeader::new("k"), &c).finish(&[]),
            Err(ProofError::EmptySignature)
        ));
    }
}
