//! Why a proof is refused: one type the verifier and the key set share (the key set
//! answers an unknown `kid` with it), kept apart so neither module needs the other's.

/// Why a proof is refused. The variants are for your logs and tests; answer the platform
/// with a tool error and never execute.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProofRejection {
    /// Not a compact JWS with a JSON header and claims of the expected shape.
    #[error("the proof is malformed: {0}")]
    Malformed(&'static str),
    /// `alg` is not `RS256` (e.g. `none`, `HS256`).
    #[error("algorithm {0:?} is not accepted; only RS256")]
    Algorithm(String),
    /// `typ` is neither `support-action+jwt` nor `support-action-stepup+jwt`.
    #[error("the proof type is not support-action+jwt or support-action-stepup+jwt")]
    Type,
    /// `kid` is missing or not an installed key (nor in the JWKS, fetched again).
    #[error("the proof's key is not installed here")]
    UnknownKey,
    /// `kid` is not known and the JWKS could not be fetched: not executed; the platform
    /// or the network may be down.
    #[error("the platform's keys could not be fetched")]
    KeysUnavailable,
    /// The header carries a key or a key location.
    #[error("the proof header carries {0}; embedded keys are never accepted")]
    EmbeddedKey(&'static str),
    /// The signature does not verify with the installed key.
    #[error("the signature does not verify")]
    BadSignature,
    /// `iss` is not the configured issuer.
    #[error("the issuer is not trusted")]
    Issuer,
    /// `aud` is not this provider.
    #[error("the proof is for another audience")]
    Audience,
    /// `exp` has passed.
    #[error("the proof has expired")]
    Expired,
    /// `iat` is in the future.
    #[error("the proof is not valid yet")]
    NotYetValid,
    /// `exp - iat` exceeds 60 s, or `exp <= iat`.
    #[error("the proof's validity window is not accepted")]
    Lifetime,
    /// A claim differs from the action being executed.
    #[error("claim {0} does not match the action")]
    Mismatch(&'static str),
    /// This proof (`jti`) was already consumed.
    #[error("the proof was already used")]
    Replayed,
    /// The replay guard could not record it: not executed.
    #[error("the replay guard is unavailable")]
    GuardUnavailable,
    /// N-1: this action was already executed (with another proof): execute nothing and
    /// answer the action's recorded status.
    #[error("the action was already executed")]
    AlreadyExecuted,
    /// F-5: a step-up proof, and this verifier was not told the platform's step-up RP ID
    /// and origins (`Verifier::with_step_up`).
    #[error("step-up proofs are not accepted here")]
    StepUpNotAccepted,
    /// F-5: the operation requires a step-up here and the proof carries none.
    #[error("this operation requires the person's passkey; the proof carries none")]
    StepUpRequired,
    /// F-5: the proof's step-up does not hold: which check failed.
    #[error("the step-up does not hold: {0}")]
    StepUp(countersign_domain::stepup::StepUpError),
}
