//! Unsettled actions: a provider that never gives a final status leaves its action
//! `executing` or `unknown`, and its conversation blocked for new actions and
//! unclosable. The administrator, having checked their own system, records the outcome
//! (completed or failed, with a reason): audited, shown to the person as a fixed notice,
//! and the conversation is unblocked. Nothing is ever re-executed.

use crate::state::{AdminError, AdminState};
use countersign_domain::conversation::{MessageKind, Role};
use countersign_domain::ids::{ActionId, CaseId};
use countersign_domain::ports::{SettleByAdmin, Tenant, TransitionOutcome};
use countersign_domain::proposal::ProposalState;
use countersign_domain::texts;
use countersign_domain::time::Timestamp;
use serde_json::json;

/// An `executing` action may still be running for this long after its confirmation (the
/// functions' own timeout is 29 s); an `unknown` one can be settled at once.
pub const SETTLE_AFTER_SECONDS: i64 = 120;

/// The longest reason.
pub const MAX_REASON_CHARS: usize = 500;

/// An unsettled action as the administrator sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsettled {
    /// Its conversation.
    pub case: CaseId,
    /// The action.
    pub action_id: ActionId,
    /// The person.
    pub user: String,
    /// The operation.
    pub operation: String,
    /// The summary the person confirmed.
    pub summary: String,
    /// `executing` or `unknown`.
    pub state: ProposalState,
    /// When it was confirmed.
    pub since: Timestamp,
    /// Seconds since then.
    pub age_seconds: i64,
    /// The provider's last status answer that settled nothing, and when.
    pub last_status: Option<(String, Timestamp)>,
    /// Whether the administrator may settle it now.
    pub settleable: bool,
}

/// The outcome the administrator records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Their system shows the change.
    Completed,
    /// It does not.
    Failed,
}

/// The tenant's unsettled actions, oldest first.
pub async fn list(state: &AdminState, tenant: &Tenant) -> Result<Vec<Unsettled>, AdminError> {
    let now = state.clock.now();
    let index = state.stores.unsettled.list_unsettled(&tenant.id).await?;
    let mut out = Vec::with_capacity(index.len());
    for entry in index {
        let view = state.stores.cases.load(&tenant.id, &entry.case).await?;
        // The conversation's slot is the truth; an index entry it does not confirm is
        // skipped.
        let Some(p) = view
            .and_then(|v| v.active)
            .filter(|p| p.action_id == entry.action_id && p.state.blocks_preparation())
        else {
            continue;
        };
        let age_seconds = now.unix_seconds() - entry.since.unix_seconds();
        out.push(Unsettled {
            case: entry.case,
            action_id: entry.action_id,
            user: p.user.to_string(),
            operation: p.operation.to_string(),
            summary: p.summary.as_str().to_owned(),
            state: p.state,
            since: entry.since,
            age_seconds,
            last_status: entry.last_status,
            settleable: p.state == ProposalState::Unknown || age_seconds >= SETTLE_AFTER_SECONDS,
        });
    }
    Ok(out)
}

/// Records the administrator's outcome for `action` in `case`.
pub async fn settle(
    state: &AdminState,
    tenant: &Tenant,
    case: &CaseId,
    action: &ActionId,
    outcome: Outcome,
    reason: &str,
) -> Result<ProposalState, AdminError> {
    let reason = reason.trim();
    if reason.is_empty() || reason.chars().count() > MAX_REASON_CHARS {
        return Err(AdminError::invalid_field(
            "reason",
            countersign_domain::said!(
                "give a reason of 1 to {MAX_REASON_CHARS} characters",
                "informe um motivo de 1 a {MAX_REASON_CHARS} caracteres"
            ),
        ));
    }
    let found = list(state, tenant)
        .await?
        .into_iter()
        .find(|u| &u.case == case && &u.action_id == action)
        .ok_or(AdminError::NoSuchAction)?;
    if !found.settleable {
        return Err(AdminError::StillRunning(SETTLE_AFTER_SECONDS));
    }
    let language = state
        .stores
        .cases
        .load(&tenant.id, case)
        .await?
        .map_or(tenant.language, |v| v.language);
    let (to, completed) = match outcome {
        Outcome::Completed => (ProposalState::Completed, true),
        Outcome::Failed => (ProposalState::Failed, false),
    };
    let notice = countersign_domain::conversation::Message {
        id: state.ids.message_id(),
        case: case.clone(),
        role: Role::Assistant,
        kind: MessageKind::Notice,
        content: texts::settled_by_admin_notice(language, completed).to_owned(),
        reply_to: None,
        created_at: state.clock.now(),
    };
    let changes = json!({
        "caseId": case.as_str(),
        "actionId": action.as_str(),
        "operation": found.operation,
        "from": found.state.as_str(),
        "to": to.as_str(),
        "reason": reason,
    });
    let audit = crate::audit::by_admin(state, tenant, "action.settle", changes);
    let settle = SettleByAdmin {
        tenant: &tenant.id,
        case,
        action_id: action,
        from: found.state,
        to,
        notice: &notice,
        audit: &audit,
    };
    match state.stores.unsettled.settle_by_admin(&settle).await? {
        TransitionOutcome::Applied => Ok(to),
        TransitionOutcome::Conflict { .. } => Err(AdminError::NoSuchAction),
    }
}
