//! Shared fixtures for this crate's unit tests.
#![allow(clippy::unwrap_used, unreachable_pub)]

use crate::conversation::{Case, CaseStatus, Principal};
use crate::hash::Sha256Hex;
use crate::ids::{ActionId, CaseId, MessageId, OperationName, TenantId, UserId};
use crate::proposal::{Presentation, Proposal, ProposalState};
use crate::text::SafeText;
use crate::time::Timestamp;

/// A valid ULID text that differs by `n`.
pub fn ulid(n: u8) -> String {
    format!("01JDZ6Y5X1QW9T3V7N2K4M8P{:02}", n % 100)
}

pub fn tenant_id(n: u8) -> TenantId {
    TenantId::from_ulid_text(&ulid(n)).unwrap()
}

pub fn case_id(n: u8) -> CaseId {
    CaseId::from_ulid_text(&ulid(n)).unwrap()
}

pub fn message_id(n: u8) -> MessageId {
    MessageId::from_ulid_text(&ulid(n)).unwrap()
}

/// 2026-11-29T21:15:00Z.
pub fn now() -> Timestamp {
    Timestamp::from_unix_seconds(1_795_986_900).unwrap()
}

pub const SUMMARY: &str = "Move session #4812 from car \"Civic\" to \"GR86\".";

pub struct Fixture {
    pub principal: Principal,
    pub case: Case,
    pub proposal: Proposal,
    pub confirm_id: MessageId,
    pub other_message_id: MessageId,
    pub now: Timestamp,
}

impl Fixture {
    pub fn new() -> Self {
        let principal = Principal {
            tenant: tenant_id(1),
            user: UserId::parse("driver-42").unwrap(),
        };
        let case = Case {
            id: case_id(1),
            tenant: principal.tenant.clone(),
            user: principal.user.clone(),
            status: CaseStatus::Open,
            created_at: now(),
        };
        let proposal = Proposal {
            action_id: ActionId::parse("act_1").unwrap(),
            tenant: principal.tenant.clone(),
            user: principal.user.clone(),
            case: case.id.clone(),
            operation: OperationName::parse("reassign_session_car").unwrap(),
            summary: SafeText::check(SUMMARY).unwrap(),
            summary_hash: Sha256Hex::digest(SUMMARY),
            arguments_hash: Sha256Hex::digest("{}"),
            expires_at: now().plus_seconds(240),
            prepared_at: now(),
            state: ProposalState::PendingConfirmation,
            presented: Presentation {
                replaced: None,
                first_served_at: None,
                message_id: message_id(5),
            },
            confirmation_message_id: None,
            confirm_attempt: None,
            config_version: 1,
            secret_version: None,
            server_url: None,
            audience: None,
            needs_passkey: false,
            prepared_outside: false,
        };
        Self {
            principal,
            case,
            proposal,
            confirm_id: message_id(10),
            other_message_id: message_id(3),
            now: now(),
        }
    }
}
