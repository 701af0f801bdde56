//! L-1: what the audit trail records of each step of a proposal's life. The domain says it
//! once, here; every store writes these records, in the same write as the step (and, in
//! the DynamoDB store, on the conversation's chain, L-2), and composes none of its own.
//! Ids and times come from the caller (the `Ids` and `Clock` ports), except where a step
//! must give the same record each time it is written (the confirmation, resent under one
//! token, takes its id and time from the confirming message).
//!
//! Never a proof, a token or a secret: ids, states, hashes and times only.

use crate::audit_chain::AuditEntry;
use crate::ids::{ActionId, AuditId, CaseId};
use crate::ports::conversations::ConfirmWrite;
use crate::proposal::{Proposal, ProposalState};
use crate::time::Timestamp;
use serde_json::json;

/// Who took a step.
const MODEL: &str = "model";
const PERSON: &str = "person";
const PLATFORM: &str = "platform";

/// When a record was made and its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// The record's id.
    pub id: AuditId,
    /// When.
    pub at: Timestamp,
}

fn entry(
    id: AuditId,
    at: Timestamp,
    actor: &str,
    to: &str,
    changes: serde_json::Value,
) -> AuditEntry {
    AuditEntry {
        id,
        at,
        actor: actor.to_owned(),
        action: format!("proposal.{to}"),
        changes,
    }
}

/// Prepared and presented (one write), by the model for its person; at the preparation's
/// time.
pub fn prepared(p: &Proposal, id: AuditId) -> AuditEntry {
    entry(
        id,
        p.prepared_at,
        MODEL,
        "prepared",
        json!({
            "actionId": p.action_id.as_str(),
            "userId": p.user.as_str(),
            "caseId": p.case.as_str(),
            "operation": p.operation.as_str(),
            "summaryHash": p.summary_hash.as_str(),
            "argumentsHash": p.arguments_hash.as_str(),
            "presentedMessageId": p.presented.message_id.as_str(),
            "expiresAt": p.expires_at.to_rfc3339(),
            "to": ProposalState::PendingConfirmation.as_str(),
        }),
    )
}

/// The pending `old` superseded by the new proposal `by`, in the same write.
pub fn superseded(old: &ActionId, case: &CaseId, by: &ActionId, stamp: Stamp) -> AuditEntry {
    entry(
        stamp.id,
        stamp.at,
        PLATFORM,
        ProposalState::Superseded.as_str(),
        json!({
            "actionId": old.as_str(),
            "caseId": case.as_str(),
            "from": ProposalState::PendingConfirmation.as_str(),
            "to": ProposalState::Superseded.as_str(),
            "by": by.as_str(),
        }),
    )
}

/// Confirmed by the person, executing from now. Its id is the confirming message's ULID
/// and its time the message's, so a resend of the write carries the very same record.
pub fn confirmed(w: &ConfirmWrite) -> Option<AuditEntry> {
    let ulid = w.message.id.as_str().strip_prefix("msg_")?;
    let id = AuditId::from_ulid_text(ulid).ok()?;
    Some(entry(
        id,
        w.message.created_at,
        PERSON,
        "confirmed",
        json!({
            "actionId": w.action_id.as_str(),
            "caseId": w.case.as_str(),
            "from": ProposalState::PendingConfirmation.as_str(),
            "to": ProposalState::Executing.as_str(),
            "confirmationMessageId": w.message.id.as_str(),
            "presentedMessageId": w.presented_message_id.as_str(),
        }),
    ))
}

/// A move `from → to` by the platform (an outcome, a reconciliation, an expiry, a C-8
/// cancellation). An administrator's settlement is recorded by its own record instead.
pub fn stepped(
    action: &ActionId,
    case: &CaseId,
    (from, to): (ProposalState, ProposalState),
    stamp: Stamp,
) -> AuditEntry {
    entry(
        stamp.id,
        stamp.at,
        PLATFORM,
        to.as_str(),
        json!({
            "actionId": action.as_str(),
            "caseId": case.as_str(),
            "from": from.as_str(),
            "to": to.as_str(),
        }),
    )
}

/// The pending `action` cancelled because its conversation was closed.
pub fn cancelled_with_case(action: &ActionId, case: &CaseId, stamp: Stamp) -> AuditEntry {
    entry(
        stamp.id,
        stamp.at,
        PLATFORM,
        ProposalState::Cancelled.as_str(),
        json!({
            "actionId": action.as_str(),
            "caseId": case.as_str(),
            "from": ProposalState::PendingConfirmation.as_str(),
            "to": ProposalState::Cancelled.as_str(),
            "reason": "conversation closed",
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::{MessageKind, Role};
    use crate::ids::MessageId;
    use crate::ports::conversations::NewMessage;

    const ULID: &str = "01JDZ6Y5X1QW9T3V7N2K4M8P0R";

    fn write() -> ConfirmWrite {
        let case = CaseId::from_ulid_text(ULID).unwrap();
        ConfirmWrite {
            tenant: crate::ids::TenantId::from_ulid_text(ULID).unwrap(),
            case: case.clone(),
            action_id: ActionId::parse("act_1").unwrap(),
            presented_message_id: MessageId::from_ulid_text("01JDZ6Y5X1QW9T3V7N2K4M8P0S").unwrap(),
            message: NewMessage {
                id: MessageId::from_ulid_text(ULID).unwrap(),
                case,
                role: Role::User,
                kind: MessageKind::Text,
                content: "confirm".into(),
                reply_to: None,
                created_at: Timestamp::from_unix_seconds(1_795_986_900).unwrap(),
            },
            attempt: "attempt-1".into(),
        }
    }

    /// L-1: a resent confirmation gives the very same record (its id and time are the
    /// message's), by the person, pending → executing.
    #[test]
    fn l1_the_confirmation_record_is_the_same_on_every_write() {
        let a = confirmed(&write()).unwrap();
        assert_eq!(Some(a.clone()), confirmed(&write()));
        assert_eq!(a.id.as_str(), format!("aud_{ULID}"));
        assert_eq!(
            (a.actor.as_str(), a.action.as_str()),
            ("person", "proposal.confirmed")
        );
        assert_eq!(a.changes["to"], "executing");
    }

    /// L-1: a step names its action, conversation, both states, and nothing else.
    #[test]
    fn l1_a_step_records_ids_and_states_only() {
        let stamp = Stamp {
            id: AuditId::from_ulid_text(ULID).unwrap(),
            at: Timestamp::from_unix_seconds(1_795_986_900).unwrap(),
        };
        let e = stepped(
            &ActionId::parse("act_1").unwrap(),
            &CaseId::from_ulid_text(ULID).unwrap(),
            (ProposalState::Executing, ProposalState::Completed),
            stamp,
        );
        assert_eq!(e.action, "proposal.completed");
        assert_eq!(
            e.changes,
            json!({"actionId": "act_1", "caseId": format!("case_{ULID}"), "from": "executing", "to": "completed"})
        );
    }
}
