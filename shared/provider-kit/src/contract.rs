//! The actions contract's answers (A-13, A-40) and hashes, in their wire spelling.

use countersign_domain::canonical::{self, KeyOrder};
use countersign_domain::hash::Sha256Hex;
use rmcp::model::CallToolResult;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The contract version every answer carries.
pub const CONTRACT_VERSION: u32 = 1;

/// The seven statuses of A-40.
pub use countersign_domain::proposal::RemoteStatus as ActionStatus;

/// The fields of a `prepare_action` answer, in the contract's order (A-13): what a
/// server's declared output schema for it requires.
pub use countersign_domain::prepare::FIELDS as PREPARE_FIELDS;

/// A-14: a proposal may live at most this long after preparation.
pub const MAX_PROPOSAL_SECONDS: i64 = countersign_domain::prepare::MAX_EXPIRY_SECONDS;

/// Lowercase hex SHA-256: the platform's own spelling, so both sides agree (A-14).
fn sha256_hex(bytes: &[u8]) -> String {
    Sha256Hex::digest(bytes).into()
}

/// `summaryHash`: SHA-256 of the summary's exact UTF-8 bytes, no normalisation (A-14).
pub fn summary_hash(summary: &str) -> String {
    sha256_hex(summary.as_bytes())
}

/// Canonical JSON: object keys sorted by their UTF-16 code units (as RFC 8785), no
/// insignificant white space, strings escaped by `serde_json`. Integers, strings, booleans
/// and null match RFC 8785 exactly; for floats use strings or integers in arguments if
/// another language must reproduce the hash.
pub fn canonical_json(v: &Value) -> String {
    canonical::canonical_json(v, KeyOrder::Utf16)
}

/// `argumentsHash`: SHA-256 of the canonical JSON of the arguments as persisted. The
/// platform treats it as opaque; the proof carries it back so that execution can check it
/// runs exactly what was presented.
pub fn arguments_hash(arguments: &Value) -> String {
    sha256_hex(canonical_json(arguments).as_bytes())
}

/// The answer of `prepare_action` (A-13): send it as `structuredContent` (or as the only
/// `text` block, serialised).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrepareAnswer {
    /// Always 1.
    pub contract_version: u32,
    /// 1–200 characters of `[A-Za-z0-9_-]`, never reused.
    pub action_id: String,
    /// Always `pending_confirmation`.
    pub status: ActionStatus,
    /// The requested operation.
    pub operation: String,
    /// Plain text with the exact effects (A-20: 1–4,000 characters, no secrets, internal
    /// URLs or direction controls). Presented to the person literally.
    pub summary: String,
    /// [`arguments_hash`] of the persisted arguments.
    pub arguments_hash: String,
    /// [`summary_hash`] of `summary`.
    pub summary_hash: String,
    /// ISO-8601 UTC, in the future, at most 5 minutes after preparation.
    pub expires_at: String,
}

/// Why an answer cannot be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ContractError {
    /// `expiresAt` must be after now and at most 5 minutes away (A-14).
    #[error("expiresAt must be in the future and at most {MAX_PROPOSAL_SECONDS} s away")]
    Expiry,
    /// The time cannot be formatted.
    #[error("expiresAt cannot be formatted")]
    Format,
}

impl PrepareAnswer {
    /// A pending proposal's answer, with both hashes computed here.
    pub fn new(
        action_id: impl Into<String>,
        operation: impl Into<String>,
        summary: impl Into<String>,
        arguments: &Value,
        prepared_at: OffsetDateTime,
        expires_at: OffsetDateTime,
    ) -> Result<Self, ContractError> {
        let lifetime = (expires_at - prepared_at).whole_seconds();
        if expires_at <= prepared_at || lifetime > MAX_PROPOSAL_SECONDS {
            return Err(ContractError::Expiry);
        }
        let summary = summary.into();
        Ok(Self {
            contract_version: CONTRACT_VERSION,
            action_id: action_id.into(),
            status: ActionStatus::PendingConfirmation,
            operation: operation.into(),
            summary_hash: summary_hash(&summary),
            summary,
            arguments_hash: arguments_hash(arguments),
            expires_at: expires_at
                .to_offset(time::UtcOffset::UTC)
                .replace_nanosecond(0)
                .map_err(|_| ContractError::Format)?
                .format(&Rfc3339)
                .map_err(|_| ContractError::Format)?,
        })
    }

    /// The MCP `CallToolResult` carrying this answer.
    pub fn to_call_tool_result(&self) -> CallToolResult {
        call_tool_result(self)
    }
}

/// The answer of `execute_action` and `get_action_status` (A-40).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatusAnswer {
    /// Always 1.
    pub contract_version: u32,
    /// The action asked about.
    pub action_id: String,
    /// One of the seven statuses.
    pub status: ActionStatus,
    /// Optional safe text, same limits as a summary (A-40).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl StatusAnswer {
    /// An answer for `action_id`.
    pub fn new(
        action_id: impl Into<String>,
        status: ActionStatus,
        message: Option<String>,
    ) -> Self {
        Self {
            contract_version: CONTRACT_VERSION,
            action_id: action_id.into(),
            status,
            message,
        }
    }

    /// The MCP `CallToolResult` carrying this answer. Never `isError`: an answered
    /// status is not a tool error (A-41 reads `isError: true` as failure).
    pub fn to_call_tool_result(&self) -> CallToolResult {
        call_tool_result(self)
    }
}

/// The answer as `structuredContent`, and the same JSON as the one text block (A-13).
fn call_tool_result(answer: &impl Serialize) -> CallToolResult {
    CallToolResult::structured(serde_json::to_value(answer).unwrap_or(Value::Null))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use countersign_domain::ids::{ActionId, OperationName};
    use countersign_domain::time::Timestamp;
    use countersign_domain::tool_result::ToolResult;
    use serde_json::json;

    #[test]
    fn canonical_json_sorts_keys_and_drops_white_space() {
        let a = json!({"b": 1, "a": {"d": [1, "x"], "c": null}, "é": true});
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"c":null,"d":[1,"x"]},"b":1,"é":true}"#
        );
        let reordered: Value =
            serde_json::from_str(r#"{ "é": true, "a": {"c": null, "d": [1,"x"]}, "b": 1 }"#)
                .unwrap();
        assert_eq!(arguments_hash(&a), arguments_hash(&reordered));
        assert_ne!(arguments_hash(&a), arguments_hash(&json!({"b": 2})));
    }

    #[test]
    fn a14_summary_hash_is_of_exact_bytes() {
        assert_eq!(
            summary_hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_ne!(summary_hash("abc"), summary_hash("abc "));
    }

    /// A-13, A-14: what the kit builds, the platform's own parser accepts.
    #[test]
    fn a13_prepare_answer_is_accepted_by_the_platform_parser() {
        let now = OffsetDateTime::now_utc();
        let answer = PrepareAnswer::new(
            "act_1",
            "reassign_session_car",
            "Move session S-1 to car GR86.",
            &json!({"sessionId": "S-1", "carId": "car_2"}),
            now,
            now + time::Duration::minutes(4),
        )
        .unwrap();
        let result =
            ToolResult::from_mcp_json(&serde_json::to_value(answer.to_call_tool_result()).unwrap())
                .unwrap();
        let parsed = countersign_domain::prepare::parse_prepare_answer(
            &result,
            &OperationName::parse("reassign_session_car").unwrap(),
            Timestamp::parse_utc(&now.format(&Rfc3339).unwrap()).unwrap(),
        )
        .unwrap();
        assert_eq!(parsed.action_id.as_str(), "act_1");
        assert_eq!(parsed.summary_hash.as_str(), answer.summary_hash);
        assert_eq!(
            PrepareAnswer::new(
                "a",
                "o",
                "s",
                &json!({}),
                now,
                now + time::Duration::seconds(301)
            ),
            Err(ContractError::Expiry)
        );
        assert_eq!(
            PrepareAnswer::new("a", "o", "s", &json!({}), now, now),
            Err(ContractError::Expiry)
        );
    }

    /// A-40: every status answer the kit builds is read back with its status.
    #[test]
    fn a40_status_answers_are_accepted_by_the_platform_parser() {
        for status in ActionStatus::ALL {
            let answer = StatusAnswer::new("act_1", status, Some("Done.".into()));
            let result = ToolResult::from_mcp_json(
                &serde_json::to_value(answer.to_call_tool_result()).unwrap(),
            )
            .unwrap();
            let parsed = countersign_domain::outcome::parse_action_answer(
                &result,
                &ActionId::parse("act_1").unwrap(),
            )
            .unwrap();
            match parsed {
                countersign_domain::outcome::ActionAnswer::Reported(r) => {
                    assert_eq!(r.status, status);
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
