//! The error model of every built-in answer (G-5): UPPER_SNAKE codes, and one classifier
//! from domain and adapter errors to `{code, message, retryable, hint, details}`.
//!
//! Messages are written for the model and never carry an internal cause: unexpected
//! errors get an `errorId`, and the cause is logged under that id.

use countersign_domain::ports::{ProviderError, SecretError, SignerError, StoreError};
use serde::Serialize;
use serde_json::Value;

/// Error codes: one spelling per failure, the same in the envelope and the metric (G-8).
pub mod code {
    /// Arguments do not match the tool's input schema (G-12 names the field).
    pub const VALIDATION_ERROR: &str = "VALIDATION_ERROR";
    /// The thing asked about does not exist (or is not visible to this principal).
    pub const NOT_FOUND: &str = "NOT_FOUND";
    /// The operation is not configured and enabled for this tenant.
    pub const OPERATION_NOT_ENABLED: &str = "OPERATION_NOT_ENABLED";
    /// The conversation holds an executing or unknown proposal.
    pub const PROPOSAL_BLOCKED: &str = "PROPOSAL_BLOCKED";
    /// The tenant's provider could not be reached or failed.
    pub const PROVIDER_UNAVAILABLE: &str = "PROVIDER_UNAVAILABLE";
    /// The provider answered outside its published contract (G-6, A-13).
    pub const PROVIDER_CONTRACT_VIOLATION: &str = "PROVIDER_CONTRACT_VIOLATION";
    /// No action signing key is installed (C-6).
    pub const ACTION_SIGNING_UNAVAILABLE: &str = "ACTION_SIGNING_UNAVAILABLE";
    /// A platform dependency (store, secrets) is unavailable; safe to retry.
    pub const SERVICE_UNAVAILABLE: &str = "SERVICE_UNAVAILABLE";
    /// The answer would exceed the size ceiling (G-7).
    pub const RESPONSE_TOO_LARGE: &str = "RESPONSE_TOO_LARGE";
    /// The tool ran and failed for a reason it explains.
    pub const TOOL_ERROR: &str = "TOOL_ERROR";
    /// Unexpected: see `errorId` in the logs.
    pub const INTERNAL_ERROR: &str = "INTERNAL_ERROR";
    /// a `requestState` the gateway did not mint for this caller, altered, expired
    /// or already used. Nothing ran.
    pub const INVALID_REQUEST_STATE: &str = "INVALID_REQUEST_STATE";
    /// the person cancelled the proposal, or it expired or was replaced: nothing ran.
    pub const NOT_CONFIRMED: &str = "NOT_CONFIRMED";

    /// Every code, for tests and documentation.
    pub const ALL: [&str; 13] = [
        VALIDATION_ERROR,
        NOT_FOUND,
        OPERATION_NOT_ENABLED,
        PROPOSAL_BLOCKED,
        PROVIDER_UNAVAILABLE,
        PROVIDER_CONTRACT_VIOLATION,
        ACTION_SIGNING_UNAVAILABLE,
        SERVICE_UNAVAILABLE,
        RESPONSE_TOO_LARGE,
        TOOL_ERROR,
        INTERNAL_ERROR,
        INVALID_REQUEST_STATE,
        NOT_CONFIRMED,
    ];
}

/// The `error` object of an envelope (G-1).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolError {
    /// One of [`code`].
    pub code: &'static str,
    /// For the model: what went wrong, in a sentence. Never an internal cause.
    pub message: String,
    /// Structured detail (e.g. `{"field": "operation"}`).
    /// (Boxed: it is rare, and it keeps `Result<_, ToolError>` small.)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Box<Value>>,
    /// Whether the same call may succeed later.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retryable: Option<bool>,
    /// What to do next.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// Correlates with the log line holding the cause (unexpected errors only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_id: Option<String>,
}

impl ToolError {
    /// An error with a code and message.
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: None,
            retryable: None,
            hint: None,
            error_id: None,
        }
    }

    /// `VALIDATION_ERROR` naming `field` (G-12).
    pub fn validation(field: &str, message: impl Into<String>) -> Self {
        Self::new(code::VALIDATION_ERROR, message)
            .details(serde_json::json!({ "field": field }))
            .retryable(false)
    }

    /// Adds details.
    #[must_use]
    pub fn details(mut self, details: Value) -> Self {
        self.details = Some(Box::new(details));
        self
    }

    /// Sets `retryable`.
    #[must_use]
    pub fn retryable(mut self, retryable: bool) -> Self {
        self.retryable = Some(retryable);
        self
    }

    /// Adds a hint.
    #[must_use]
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// An unexpected failure: a fresh `errorId` goes in the answer, and `cause` goes only
    /// to the log, under that id.
    pub fn internal(tool: &str, cause: &dyn std::fmt::Display) -> Self {
        let id = ulid::Ulid::new().to_string();
        tracing::error!(error_id = %id, tool, cause = %cause, "unexpected tool failure");
        Self {
            error_id: Some(id),
            ..Self::new(code::INTERNAL_ERROR, "The tool failed unexpectedly.")
                .retryable(true)
                .hint("Retry once; if it fails again, tell the user the service has a problem.")
        }
    }
}

/// Classifies a store failure.
pub fn from_store(tool: &str, e: &StoreError) -> ToolError {
    match e {
        StoreError::Unavailable(_) => {
            tracing::warn!(tool, cause = %DisplayChain(e), "store unavailable");
            ToolError::new(
                code::SERVICE_UNAVAILABLE,
                "The conversation store is unavailable.",
            )
            .retryable(true)
            .hint("Retry in a moment.")
        }
        // N-4: purged while this request worked in it.
        StoreError::Gone => ToolError::new(code::NOT_FOUND, "The conversation no longer exists."),
        StoreError::Corrupt(_) | StoreError::IllegalTransition { .. } => {
            ToolError::internal(tool, &DisplayChain(e))
        }
    }
}

/// Classifies a secret-store failure.
pub fn from_secrets(tool: &str, e: &SecretError) -> ToolError {
    tracing::warn!(tool, cause = %DisplayChain(e), "secret store unavailable");
    ToolError::new(
        code::SERVICE_UNAVAILABLE,
        "A platform service is unavailable.",
    )
    .retryable(true)
    .hint("Retry in a moment.")
}

/// Classifies a signer failure (C-6).
pub fn from_signer(tool: &str, e: &SignerError) -> ToolError {
    match e {
        SignerError::NotConfigured => ToolError::new(
            code::ACTION_SIGNING_UNAVAILABLE,
            "Actions are unavailable: the platform has no signing key installed.",
        )
        .retryable(false)
        .hint("Tell the user this change cannot be made in the chat right now."),
        SignerError::Unavailable(_) => {
            tracing::warn!(tool, cause = %DisplayChain(e), "signer unavailable");
            ToolError::new(
                code::SERVICE_UNAVAILABLE,
                "The signing service is unavailable.",
            )
            .retryable(true)
            .hint("Retry in a moment.")
        }
    }
}

/// Classifies a provider failure (T-5).
pub fn from_provider(tool: &str, e: &ProviderError) -> ToolError {
    tracing::warn!(tool, cause = %DisplayChain(e), "provider call failed");
    match e {
        ProviderError::Unreachable(_) | ProviderError::Timeout | ProviderError::Interrupted => {
            ToolError::new(
                code::PROVIDER_UNAVAILABLE,
                "The company's system did not answer.",
            )
            .retryable(true)
            .hint("Retry once; if it fails again, tell the user the system is unavailable.")
        }
        ProviderError::Http { status } => ToolError::new(
            code::PROVIDER_UNAVAILABLE,
            "The company's system answered with an error.",
        )
        .details(serde_json::json!({ "httpStatus": status }))
        .retryable(*status >= 500 || *status == 429),
        ProviderError::Malformed(_) | ProviderError::Protocol { .. } => ToolError::new(
            code::PROVIDER_CONTRACT_VIOLATION,
            "The company's system answered in an unexpected format.",
        )
        .retryable(false)
        .hint("Tell the user this information cannot be read right now."),
    }
}

/// Displays an error with its `source()` chain, for logs only.
struct DisplayChain<'a>(&'a dyn std::error::Error);

impl std::fmt::Display for DisplayChain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut src = self.0.source();
        while let Some(s) = src {
            write!(f, ": {s}")?;
            src = s.source();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("db password=hunter2 at 10.0.0.1")]
    struct Secretive;

    fn boxed() -> countersign_domain::ports::Cause {
        Box::new(Secretive)
    }

    /// G-5: codes are UPPER_SNAKE and distinct.
    #[test]
    fn g5_codes_are_upper_snake_and_distinct() {
        let mut seen = std::collections::HashSet::new();
        for c in code::ALL {
            assert!(
                c.chars().all(|ch| ch.is_ascii_uppercase() || ch == '_'),
                "{c}"
            );
            assert!(seen.insert(c), "{c} twice");
        }
    }

    /// G-5: each mapping, case by case — its code, whether to retry, and the hint the
    /// model is given; no internal cause ever reaches the message.
    #[test]
    fn g5_classifier_maps_each_failure() {
        const MOMENT: Option<&str> = Some("Retry in a moment.");
        const SYSTEM: Option<&str> =
            Some("Retry once; if it fails again, tell the user the system is unavailable.");
        const UNREADABLE: Option<&str> =
            Some("Tell the user this information cannot be read right now.");
        let cases: Vec<(ToolError, &str, Option<bool>, Option<&str>)> = vec![
            (
                from_store("t", &StoreError::Unavailable(boxed())),
                code::SERVICE_UNAVAILABLE,
                Some(true),
                MOMENT,
            ),
            (
                from_store("t", &StoreError::Gone),
                code::NOT_FOUND,
                None,
                None,
            ),
            (
                from_store("t", &StoreError::Corrupt("x".into())),
                code::INTERNAL_ERROR,
                Some(true),
                Some("Retry once; if it fails again, tell the user the service has a problem."),
            ),
            (
                from_secrets("t", &SecretError::Unavailable(boxed())),
                code::SERVICE_UNAVAILABLE,
                Some(true),
                MOMENT,
            ),
            (
                from_signer("t", &SignerError::NotConfigured),
                code::ACTION_SIGNING_UNAVAILABLE,
                Some(false),
                Some("Tell the user this change cannot be made in the chat right now."),
            ),
            (
                from_signer("t", &SignerError::Unavailable(boxed())),
                code::SERVICE_UNAVAILABLE,
                Some(true),
                MOMENT,
            ),
            (
                from_provider("t", &ProviderError::Unreachable(boxed())),
                code::PROVIDER_UNAVAILABLE,
                Some(true),
                SYSTEM,
            ),
            (
                from_provider("t", &ProviderError::Timeout),
                code::PROVIDER_UNAVAILABLE,
                Some(true),
                SYSTEM,
            ),
            // Sent, then the answer lost: the same for the model as no answer.
            (
                from_provider("t", &ProviderError::Interrupted),
                code::PROVIDER_UNAVAILABLE,
                Some(true),
                SYSTEM,
            ),
            (
                from_provider("t", &ProviderError::Http { status: 503 }),
                code::PROVIDER_UNAVAILABLE,
                Some(true),
                None,
            ),
            (
                from_provider("t", &ProviderError::Http { status: 403 }),
                code::PROVIDER_UNAVAILABLE,
                Some(false),
                None,
            ),
            (
                from_provider("t", &ProviderError::Malformed("secret body".into())),
                code::PROVIDER_CONTRACT_VIOLATION,
                Some(false),
                UNREADABLE,
            ),
            (
                from_provider("t", &ProviderError::Protocol { code: -32602 }),
                code::PROVIDER_CONTRACT_VIOLATION,
                Some(false),
                UNREADABLE,
            ),
        ];
        for (e, want, retryable, hint) in cases {
            assert_eq!(e.code, want, "{e:?}");
            assert_eq!(e.retryable, retryable, "{e:?}");
            assert_eq!(e.hint.as_deref(), hint, "{e:?}");
            let json = serde_json::to_string(&e).unwrap();
            assert!(
                !json.contains("hunter2")
                    && !json.contains("10.0.0.1")
                    && !json.contains("secret body"),
                "{json}"
            );
        }
    }

    /// G-5: unexpected errors carry an errorId, never the cause.
    #[test]
    fn g5_internal_errors_have_an_error_id_and_no_cause() {
        let e = ToolError::internal("t", &Secretive);
        assert_eq!(e.code, code::INTERNAL_ERROR);
        assert_eq!(e.error_id.as_ref().map(String::len), Some(26));
        assert!(!serde_json::to_string(&e).unwrap().contains("hunter2"));
    }
}
