//! The provider's answer to `prepare_action`: where it is read from, and
//! every rule it must satisfy before a proposal is stored or shown.
//!
//! Parsing returns **all** broken rules at once (one [`ContractViolation`] each), so the
//! model and the provider's engineers see the whole problem. "Now" is an argument: the
//! domain has no clock.
//!
//! Not checked here: that the `actionId` was never used before in the tenant. That
//! needs the store, whose conditional put refuses a reused id.

use crate::contract::{
    ContractViolation, check_contract_version, check_unknown_fields, payload_object, required_str,
};
use crate::hash::Sha256Hex;
use crate::ids::{ActionId, OperationName};
use crate::text::SafeText;
use crate::time::Timestamp;
use crate::tool_result::ToolResult;
use serde_json::Value;

/// `expiresAt` may be at most this many seconds after the moment of preparation.
pub const MAX_EXPIRY_SECONDS: i64 = 300;

/// The fields of a prepare answer, in the contract's order. Anything else is refused
/// "anything else is rejected").
pub const FIELDS: [&str; 8] = [
    "contractVersion",
    "actionId",
    "status",
    "operation",
    "summary",
    "argumentsHash",
    "summaryHash",
    "expiresAt",
];

/// A prepare answer that satisfies every rule of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedAction {
    /// The provider's id for this proposal.
    pub action_id: ActionId,
    /// The operation (equal to the requested one).
    pub operation: OperationName,
    /// The checked summary, byte for byte as sent.
    pub summary: SafeText,
    /// `sha256(summary)`, verified.
    pub summary_hash: Sha256Hex,
    /// Opaque to the platform; format checked.
    pub arguments_hash: Sha256Hex,
    /// When the provider stops accepting the proposal.
    pub expires_at: Timestamp,
}

/// Parses and validates a provider's `prepare_action` answer.
///
/// `requested` is the operation the model asked for; `now` is the moment of preparation.
pub fn parse_prepare_answer(
    result: &ToolResult,
    requested: &OperationName,
    now: Timestamp,
) -> Result<PreparedAction, Vec<ContractViolation>> {
    if result.is_error {
        return Err(vec![ContractViolation::ProviderError]);
    }
    let obj = payload_object(result)?;
    let mut out = Vec::new();

    check_contract_version(&obj, &mut out);

    let action_id = required_str(&obj, "actionId", &mut out).and_then(|s| {
        ActionId::parse(s)
            .map_err(|_| out.push(ContractViolation::ActionId))
            .ok()
    });

    if let Some(s) = required_str(&obj, "status", &mut out)
        && s != "pending_confirmation"
    {
        out.push(ContractViolation::Status);
    }

    let operation = operation(&obj, requested, &mut out);

    let summary_text = required_str(&obj, "summary", &mut out);
    let summary = summary_text.and_then(|s| {
        SafeText::check(s)
            .map_err(|violations| out.push(ContractViolation::Summary { violations }))
            .ok()
    });

    let arguments_hash = required_str(&obj, "argumentsHash", &mut out).and_then(|s| {
        Sha256Hex::parse(s)
            .map_err(|_| out.push(ContractViolation::ArgumentsHashFormat))
            .ok()
    });

    let summary_hash = summary_hash(&obj, summary_text, &mut out);

    let expires_at = expires_at(&obj, now, &mut out);

    check_unknown_fields(&obj, &FIELDS, &mut out);

    match (
        action_id,
        operation,
        summary,
        arguments_hash,
        summary_hash,
        expires_at,
    ) {
        (
            Some(action_id),
            Some(operation),
            Some(summary),
            Some(arguments_hash),
            Some(summary_hash),
            Some(expires_at),
        ) if out.is_empty() => Ok(PreparedAction {
            action_id,
            operation,
            summary,
            summary_hash,
            arguments_hash,
            expires_at,
        }),
        _ => Err(out),
    }
}

/// `operation`, which must be the one the model asked for.
fn operation(
    obj: &serde_json::Map<String, Value>,
    requested: &OperationName,
    out: &mut Vec<ContractViolation>,
) -> Option<OperationName> {
    let s = required_str(obj, "operation", out)?;
    if s == requested.as_str() {
        return Some(requested.clone());
    }
    let requested = requested.to_string();
    out.push(ContractViolation::OperationMismatch { requested });
    None
}

/// `summaryHash`, which must be the SHA-256 of the summary's exact bytes (no
/// normalisation). Checked even when the summary itself is unsafe, so that every broken
/// rule is reported.
fn summary_hash(
    obj: &serde_json::Map<String, Value>,
    summary: Option<&str>,
    out: &mut Vec<ContractViolation>,
) -> Option<Sha256Hex> {
    let hash = required_str(obj, "summaryHash", out).and_then(|s| {
        Sha256Hex::parse(s)
            .map_err(|_| out.push(ContractViolation::SummaryHashFormat))
            .ok()
    })?;
    if summary.is_some_and(|text| Sha256Hex::digest(text.as_bytes()) != hash) {
        out.push(ContractViolation::SummaryHashMismatch);
    }
    Some(hash)
}

/// `expiresAt`, an RFC 3339 UTC time after `now` and at most
/// [`MAX_EXPIRY_SECONDS`] later.
fn expires_at(
    obj: &serde_json::Map<String, Value>,
    now: Timestamp,
    out: &mut Vec<ContractViolation>,
) -> Option<Timestamp> {
    let s = required_str(obj, "expiresAt", out)?;
    let Ok(t) = Timestamp::parse_utc(s) else {
        out.push(ContractViolation::ExpiresAtFormat);
        return None;
    };
    if t <= now {
        out.push(ContractViolation::ExpiresAtNotInFuture);
        None
    } else if t > now.plus_seconds(MAX_EXPIRY_SECONDS) {
        out.push(ContractViolation::ExpiresAtTooFar {
            max_seconds: MAX_EXPIRY_SECONDS,
        });
        None
    } else {
        Some(t)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::test_support::{SUMMARY, now};
    use crate::tool_result::ContentBlock;
    use serde_json::json;

    fn op() -> OperationName {
        OperationName::parse("reassign_session_car").unwrap()
    }

    fn good() -> Value {
        json!({
            "contractVersion": 1,
            "actionId": "act_01",
            "status": "pending_confirmation",
            "operation": "reassign_session_car",
            "summary": SUMMARY,
            "argumentsHash": Sha256Hex::digest("{\"sessionId\":4812}").as_str(),
            "summaryHash": Sha256Hex::digest(SUMMARY).as_str(),
            "expiresAt": now().plus_seconds(240).to_rfc3339(),
        })
    }

    fn structured(v: Value) -> ToolResult {
        ToolResult {
            structured_content: Some(v),
            content: vec![],
            is_error: false,
        }
    }

    fn parse(v: Value) -> Result<PreparedAction, Vec<ContractViolation>> {
        parse_prepare_answer(&structured(v), &op(), now())
    }

    fn with(field: &str, value: Value) -> Value {
        let mut v = good();
        v[field] = value;
        v
    }

    /// a valid answer from structuredContent, and the same from one text block.
    #[test]
    fn a13_valid_answer_from_structured_content_or_single_text_block() {
        let p = parse(good()).unwrap();
        assert_eq!(p.action_id.as_str(), "act_01");
        assert_eq!(p.summary.as_str(), SUMMARY);
        let text = ToolResult {
            structured_content: None,
            content: vec![ContentBlock::Text(good().to_string())],
            is_error: false,
        };
        assert_eq!(parse_prepare_answer(&text, &op(), now()).unwrap(), p);
    }

    /// `isError`, several blocks, non-JSON text and non-objects are rejected.
    #[test]
    fn a13_other_shapes_are_rejected() {
        let err = ToolResult {
            structured_content: Some(good()),
            content: vec![],
            is_error: true,
        };
        assert_eq!(
            parse_prepare_answer(&err, &op(), now()),
            Err(vec![ContractViolation::ProviderError])
        );
        let two = ToolResult {
            structured_content: None,
            content: vec![
                ContentBlock::Text(good().to_string()),
                ContentBlock::Text("also".into()),
            ],
            is_error: false,
        };
        assert!(matches!(
            parse_prepare_answer(&two, &op(), now())
                .unwrap_err()
                .as_slice(),
            [ContractViolation::Payload { .. }]
        ));
        assert_eq!(parse(json!([1])), Err(vec![ContractViolation::NotAnObject]));
    }

    /// every field is required; unknown fields are refused.
    #[test]
    fn a13_missing_and_unknown_fields() {
        for field in FIELDS {
            let mut v = good();
            v.as_object_mut().unwrap().remove(field);
            let errs = parse(v).unwrap_err();
            assert!(
                errs.contains(&ContractViolation::MissingField {
                    field: FIELDS.iter().find(|f| **f == field).unwrap()
                }),
                "{field}: {errs:?}"
            );
        }
        assert_eq!(
            parse(with("confirmed", json!(true))),
            Err(vec![ContractViolation::UnknownField {
                field: "confirmed".into()
            }])
        );
    }

    /// contractVersion 1 and status pending_confirmation.
    #[test]
    fn a13_contract_version_and_status() {
        assert_eq!(
            parse(with("contractVersion", json!(2))),
            Err(vec![ContractViolation::ContractVersion])
        );
        assert_eq!(
            parse(with("contractVersion", json!("1"))),
            Err(vec![ContractViolation::WrongType {
                field: "contractVersion",
                expected: "the number 1"
            }])
        );
        assert_eq!(
            parse(with("status", json!("completed"))),
            Err(vec![ContractViolation::Status])
        );
    }

    /// action id format, operation equality, hash formats, summary hash.
    #[test]
    fn a14_ids_operation_and_hashes() {
        assert_eq!(
            parse(with("actionId", json!("act 01"))),
            Err(vec![ContractViolation::ActionId])
        );
        assert_eq!(
            parse(with("actionId", json!("a".repeat(201)))),
            Err(vec![ContractViolation::ActionId])
        );
        assert_eq!(
            parse(with("operation", json!("delete_account"))),
            Err(vec![ContractViolation::OperationMismatch {
                requested: "reassign_session_car".into()
            }])
        );
        assert_eq!(
            parse(with("argumentsHash", json!("ABC"))),
            Err(vec![ContractViolation::ArgumentsHashFormat])
        );
        assert_eq!(
            parse(with("argumentsHash", json!("A".repeat(64)))),
            Err(vec![ContractViolation::ArgumentsHashFormat])
        );
        assert_eq!(
            parse(with("summaryHash", json!("0".repeat(64)))),
            Err(vec![ContractViolation::SummaryHashMismatch])
        );
    }

    /// summaryHash is over the exact bytes: a normalised variant (NFC vs NFD, or
    /// trimmed white space) does not match.
    #[test]
    fn a14_summary_hash_uses_exact_bytes_without_normalisation() {
        let nfd = "Cafe\u{301} session";
        let nfc = "Caf\u{e9} session";
        let mut v = with("summary", json!(nfd));
        v["summaryHash"] = json!(Sha256Hex::digest(nfc).as_str());
        assert_eq!(parse(v), Err(vec![ContractViolation::SummaryHashMismatch]));

        let mut v = with("summary", json!(format!("{SUMMARY}\n")));
        v["summaryHash"] = json!(Sha256Hex::digest(SUMMARY).as_str());
        assert_eq!(parse(v), Err(vec![ContractViolation::SummaryHashMismatch]));
    }

    /// expiresAt is UTC, strictly in the future, at most five minutes ahead.
    #[test]
    fn a14_expiry_window() {
        let at = |secs: i64| with("expiresAt", json!(now().plus_seconds(secs).to_rfc3339()));
        assert!(parse(at(1)).is_ok());
        assert!(parse(at(300)).is_ok());
        assert_eq!(
            parse(at(0)),
            Err(vec![ContractViolation::ExpiresAtNotInFuture])
        );
        assert_eq!(
            parse(at(-10)),
            Err(vec![ContractViolation::ExpiresAtNotInFuture])
        );
        assert_eq!(
            parse(at(301)),
            Err(vec![ContractViolation::ExpiresAtTooFar {
                max_seconds: 300
            }])
        );
        assert_eq!(
            parse(with("expiresAt", json!("2026-11-29T21:17:00-03:00"))),
            Err(vec![ContractViolation::ExpiresAtFormat])
        );
        assert_eq!(
            parse(with("expiresAt", json!(1_795_987_000))),
            Err(vec![ContractViolation::WrongType {
                field: "expiresAt",
                expected: "a string"
            }])
        );
    }

    /// A-20 via A-13: an unsafe summary is rejected, never edited.
    #[test]
    fn a20_unsafe_summary_rejects_the_proposal() {
        let bad = "Move session\u{202E} 4812";
        let mut v = with("summary", json!(bad));
        v["summaryHash"] = json!(Sha256Hex::digest(bad).as_str());
        let errs = parse(v).unwrap_err();
        assert!(
            matches!(errs.as_slice(), [ContractViolation::Summary { .. }]),
            "{errs:?}"
        );
    }

    /// Every broken rule is reported at once.
    #[test]
    fn reports_every_violation() {
        let v = json!({
            "contractVersion": 3,
            "actionId": "",
            "status": "done",
            "operation": "other",
            "summary": "",
            "argumentsHash": "x",
            "summaryHash": "y",
            "expiresAt": "soon",
            "extra": 1
        });
        let errs = parse(v).unwrap_err();
        assert_eq!(errs.len(), 9, "{errs:?}");
        for e in &errs {
            assert!(!e.to_string().is_empty());
        }
    }
}
