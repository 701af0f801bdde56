//! The provider's answers to `execute_action` and `get_action_status`, and
//! what each means for the local proposal.

use crate::contract::{
    ContractViolation, check_contract_version, check_unknown_fields, payload_object, required_str,
};
use crate::ids::ActionId;
use crate::proposal::{ProposalEvent, RemoteStatus};
use crate::text::SafeText;
use crate::tool_result::ToolResult;
use serde_json::Value;

/// The fields of an execute / status answer. Anything else is refused.
pub const FIELDS: [&str; 4] = ["contractVersion", "actionId", "status", "message"];

/// A valid status report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionReport {
    /// Equal to the action asked about.
    pub action_id: ActionId,
    /// One of the seven statuses.
    pub status: RemoteStatus,
    /// Optional safe text (checked like a summary, A-40).
    pub message: Option<SafeText>,
}

/// A provider's answer, once read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ActionAnswer {
    /// A valid `{contractVersion, actionId, status, message?}`.
    Reported(ActionReport),
    /// The tool answered `isError: true`: a failure, whatever the HTTP status.
    /// Its text is not shown: it was not checked against A-20.
    ToolError,
}

/// Parses and validates an `execute_action` or `get_action_status` answer for
/// `expected`. A `message` breaking A-20 makes the whole answer invalid.
pub fn parse_action_answer(
    result: &ToolResult,
    expected: &ActionId,
) -> Result<ActionAnswer, Vec<ContractViolation>> {
    if result.is_error {
        return Ok(ActionAnswer::ToolError);
    }
    let obj = payload_object(result)?;
    let mut out = Vec::new();
    check_contract_version(&obj, &mut out);
    let action_id = required_str(&obj, "actionId", &mut out).and_then(|s| {
        if s == expected.as_str() {
            Some(expected.clone())
        } else {
            out.push(ContractViolation::ActionIdMismatch);
            None
        }
    });
    let status = required_str(&obj, "status", &mut out).and_then(|s| {
        RemoteStatus::parse(s)
            .ok_or(())
            .map_err(|()| out.push(ContractViolation::UnknownStatus))
            .ok()
    });
    let message = match obj.get("message") {
        None | Some(Value::Null) => Some(None),
        Some(Value::String(s)) => SafeText::check(s.as_str())
            .map(Some)
            .map_err(|violations| out.push(ContractViolation::Message { violations }))
            .ok(),
        Some(_) => {
            out.push(ContractViolation::WrongType {
                field: "message",
                expected: "a string",
            });
            None
        }
    };
    check_unknown_fields(&obj, &FIELDS, &mut out);
    match (action_id, status, message) {
        (Some(action_id), Some(status), Some(message)) if out.is_empty() => {
            Ok(ActionAnswer::Reported(ActionReport {
                action_id,
                status,
                message,
            }))
        }
        _ => Err(out),
    }
}

/// What an `execute_action` call's outcome means for the local proposal.
/// `answer` is `None` when the call timed out, the connection dropped, the process
/// restarted, or the answer was invalid: the outcome is then uncertain, never retried.
pub fn event_after_execute(answer: Option<&ActionAnswer>) -> ProposalEvent {
    match answer {
        Some(ActionAnswer::Reported(r)) => ProposalEvent::ExecutionAnswered(r.status),
        // `isError: true` is a failure.
        Some(ActionAnswer::ToolError) => ProposalEvent::ExecutionAnswered(RemoteStatus::Failed),
        None => ProposalEvent::ExecutionUncertain,
    }
}

/// What a `get_action_status` outcome means. A failed status query says nothing
/// about the action itself, so an error leaves the outcome uncertain.
pub fn event_after_status(answer: Option<&ActionAnswer>) -> ProposalEvent {
    match answer {
        Some(ActionAnswer::Reported(r)) => ProposalEvent::StatusAnswered(r.status),
        Some(ActionAnswer::ToolError) | None => ProposalEvent::StatusUnavailable,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::proposal::{ProposalState, transition};
    use serde_json::json;

    fn id() -> ActionId {
        ActionId::parse("act_01").unwrap()
    }

    fn answer(v: Value) -> Result<ActionAnswer, Vec<ContractViolation>> {
        parse_action_answer(
            &ToolResult {
                structured_content: Some(v),
                content: vec![],
                is_error: false,
            },
            &id(),
        )
    }

    /// each of the seven statuses, with and without a message.
    #[test]
    fn a40_every_status_is_read() {
        for s in RemoteStatus::ALL {
            let a =
                answer(json!({"contractVersion": 1, "actionId": "act_01", "status": s.as_str()}))
                    .unwrap();
            assert_eq!(
                a,
                ActionAnswer::Reported(ActionReport {
                    action_id: id(),
                    status: s,
                    message: None
                })
            );
        }
        let a = answer(json!({"contractVersion": 1, "actionId": "act_01", "status": "completed", "message": "Session 4812 now uses GR86."}))
            .unwrap();
        let ActionAnswer::Reported(r) = a else {
            panic!()
        };
        assert_eq!(r.message.unwrap().as_str(), "Session 4812 now uses GR86.");
    }

    /// wrong action id, unknown status, unsafe message, extra fields are refused.
    #[test]
    fn a40_invalid_answers_are_refused() {
        let base = json!({"contractVersion": 1, "actionId": "act_01", "status": "completed"});
        let with = |k: &str, v: Value| {
            let mut b = base.clone();
            b[k] = v;
            b
        };
        assert_eq!(
            answer(with("actionId", json!("act_02"))),
            Err(vec![ContractViolation::ActionIdMismatch])
        );
        assert_eq!(
            answer(with("status", json!("done"))),
            Err(vec![ContractViolation::UnknownStatus])
        );
        assert!(matches!(
            answer(with("message", json!("see http://10.0.0.1/")))
                .unwrap_err()
                .as_slice(),
            [ContractViolation::Message { .. }]
        ));
        assert_eq!(
            answer(with("message", json!(5))),
            Err(vec![ContractViolation::WrongType {
                field: "message",
                expected: "a string"
            }])
        );
        assert_eq!(
            answer(with("success", json!(true))),
            Err(vec![ContractViolation::UnknownField {
                field: "success".into()
            }])
        );
        assert_eq!(
            answer(with("contractVersion", json!(2))),
            Err(vec![ContractViolation::ContractVersion])
        );
    }

    /// `isError: true` is a failure, never success, whatever else the result says.
    #[test]
    fn a41_is_error_is_failure() {
        let r = ToolResult {
            structured_content: Some(
                json!({"contractVersion": 1, "actionId": "act_01", "status": "completed"}),
            ),
            content: vec![],
            is_error: true,
        };
        let a = parse_action_answer(&r, &id()).unwrap();
        assert_eq!(a, ActionAnswer::ToolError);
        assert_eq!(
            transition(ProposalState::Executing, event_after_execute(Some(&a))),
            Ok(ProposalState::Failed)
        );
    }

    /// no answer or a non-terminal answer to execute leaves the outcome unknown; a
    /// failed status query never turns into failure.
    #[test]
    fn a43_uncertain_outcomes_become_unknown() {
        assert_eq!(
            transition(ProposalState::Executing, event_after_execute(None)),
            Ok(ProposalState::Unknown)
        );
        let executing = ActionAnswer::Reported(ActionReport {
            action_id: id(),
            status: RemoteStatus::Executing,
            message: None,
        });
        assert_eq!(
            transition(
                ProposalState::Executing,
                event_after_execute(Some(&executing))
            ),
            Ok(ProposalState::Unknown)
        );
        assert_eq!(
            transition(
                ProposalState::Unknown,
                event_after_status(Some(&ActionAnswer::ToolError))
            ),
            Ok(ProposalState::Unknown)
        );
        let done = ActionAnswer::Reported(ActionReport {
            action_id: id(),
            status: RemoteStatus::Completed,
            message: None,
        });
        assert_eq!(
            transition(ProposalState::Unknown, event_after_status(Some(&done))),
            Ok(ProposalState::Completed)
        );
    }
}
