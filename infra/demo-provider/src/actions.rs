//! The provider's duties in the actions protocol (A-13 … A-44), for the one operation
//! `reassign_session_car`:
//!
//! - one pending proposal per tenant/person/conversation: preparing another cancels the
//!   previous one in the same critical section;
//! - action ids are ULIDs, never reused; preparation changes no business data;
//! - execution re-checks account, permission, ownership and the session's state in one
//!   critical section with the write (`conflict` when anything changed), after the proof
//!   was verified with the provider kit and consumed once;
//! - a repeated execute answers the recorded result and never writes twice.
//!
//! The store's mutex is the "same lock for prepare and execute" of the contract.

use crate::data::{Car, Data, Session, User};
use crate::tools::{error, ok};
use countersign_provider_kit::{
    ActionStatus, Identity, PrepareAnswer, StatusAnswer, arguments_hash,
};
use rmcp::model::CallToolResult;
use serde_json::{Value, json};
use std::collections::HashMap;
use time::OffsetDateTime;

/// The one operation.
pub const OPERATION: &str = "reassign_session_car";

/// A proposal as the provider keeps it.
#[derive(Debug, Clone)]
pub struct Proposal {
    /// Id.
    pub action_id: String,
    /// Whose.
    pub identity: Identity,
    /// The session to move.
    pub session_id: String,
    /// Its car when prepared (state re-checked at execution).
    pub from_car: String,
    /// The target car.
    pub to_car: String,
    /// Hash of the persisted arguments.
    pub arguments_hash: String,
    /// Hash of the summary.
    pub summary_hash: String,
    /// Expiry.
    pub expires_at: OffsetDateTime,
    /// Current status.
    pub status: ActionStatus,
    /// Result message, once terminal.
    pub message: Option<String>,
    /// Prepared in Portuguese (`X-MCP-Language: pt…`): its result message is too.
    pub portuguese: bool,
}

impl Proposal {
    /// Its recorded status, as `execute_action` and `get_action_status` answer it.
    fn status_answer(&self) -> CallToolResult {
        StatusAnswer::new(&self.action_id, self.status, self.message.clone()).to_call_tool_result()
    }
}

/// Counters the tests read (`GET /_demo/stats`).
#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    /// `tools/list` requests answered.
    pub tool_lists: u64,
    /// `prepare_action` calls answered with a proposal.
    pub prepared: u64,
    /// `execute_action` calls received.
    pub execute_calls: u64,
    /// Writes actually made through `execute_action`.
    pub executions: u64,
    /// Proofs refused (any reason, replay included).
    pub proof_refusals: u64,
    /// Proofs refused as replays.
    pub replays: u64,
    /// Calls of the direct-write tool (the platform must never make one).
    pub direct_writes: u64,
    /// MCP `initialize` requests answered (sessions opened, in session mode).
    pub initializes: u64,
    /// Sessions closed by their client (`DELETE` with a session id).
    pub session_closes: u64,
    /// F-5: proofs whose passkey step-up the provider kit verified (executed or not).
    pub step_ups_verified: u64,
}

/// Everything behind the lock.
#[derive(Debug, Default)]
pub struct Store {
    /// Business data.
    pub data: Data,
    /// Proposals by action id (kept: ids are never reused).
    pub proposals: HashMap<String, Proposal>,
    /// Counters.
    pub stats: Stats,
}

/// What the proof must be bound to, copied out of the lock.
#[derive(Debug, Clone)]
pub struct Binding {
    /// Operation.
    pub operation: String,
    /// Hash.
    pub arguments_hash: String,
    /// Hash.
    pub summary_hash: String,
    /// When the proposal expires (a proof may not outlive it, A-33).
    pub expires_at: OffsetDateTime,
}

fn args_str<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

impl Store {
    fn user_ok(&self, who: &Identity) -> Result<&crate::data::User, CallToolResult> {
        self.data
            .users
            .get(&who.user_id)
            .ok_or_else(|| error("unknown user"))
    }

    /// `who`'s proposal `action_id`: another person's is no such action.
    fn proposal_of(&self, who: &Identity, action_id: &str) -> Option<&Proposal> {
        self.proposals.get(action_id).filter(|p| p.identity == *who)
    }

    /// Marks a pending proposal past its expiry as expired.
    fn refresh(&mut self, action_id: &str, now: OffsetDateTime) {
        if let Some(p) = self.proposals.get_mut(action_id)
            && p.status == ActionStatus::PendingConfirmation
            && now >= p.expires_at
        {
            p.status = ActionStatus::Expired;
        }
    }

    /// One pending proposal per tenant/person/conversation: the previous one is cancelled
    /// in the same critical section as the new one is recorded.
    fn cancel_pending_of(&mut self, who: &Identity) {
        for p in self.proposals.values_mut() {
            if p.identity == *who && p.status == ActionStatus::PendingConfirmation {
                p.status = ActionStatus::Cancelled;
                p.message = Some("Replaced by a newer proposal.".into());
            }
        }
    }

    /// `prepare_action {operation, arguments}`.
    pub fn prepare(
        &mut self,
        (who, portuguese): (&Identity, bool),
        args: &Value,
        now: OffsetDateTime,
        ttl: time::Duration,
    ) -> CallToolResult {
        if args_str(args, "operation") != Some(OPERATION) {
            return error("unknown operation: this server prepares only reassign_session_car");
        }
        let Some(arguments) = args.get("arguments").filter(|a| a.is_object()) else {
            return error("arguments must be an object {sessionId, carId}");
        };
        let user = match self.user_ok(who) {
            Ok(u) => u,
            Err(e) => return e,
        };
        let (Some(session_id), Some(car_id)) = (
            args_str(arguments, "sessionId"),
            args_str(arguments, "carId"),
        ) else {
            return error("arguments need sessionId and carId");
        };
        if arguments.as_object().is_some_and(|o| o.len() != 2) {
            return error("arguments take only sessionId and carId");
        }
        let Some(session) = user.session(session_id) else {
            return error("session not found");
        };
        let Some(target) = user.car(car_id) else {
            return error("car not found");
        };
        if session.car_id == car_id {
            return error("the session is already recorded under that car");
        }
        let summary = summary(user, session, target, portuguese);
        let persisted = json!({"sessionId": session_id, "carId": car_id});
        let from_car = session.car_id.clone();
        let action_id = format!("act_{}", ulid::Ulid::new());
        let answer =
            match PrepareAnswer::new(&action_id, OPERATION, summary, &persisted, now, now + ttl) {
                Ok(a) => a,
                Err(_) => return error("cannot prepare: invalid expiry"),
            };
        self.cancel_pending_of(who);
        self.proposals.insert(
            action_id.clone(),
            Proposal {
                action_id,
                identity: who.clone(),
                session_id: session_id.to_owned(),
                from_car,
                to_car: car_id.to_owned(),
                arguments_hash: arguments_hash(&persisted),
                summary_hash: answer.summary_hash.clone(),
                expires_at: now + ttl,
                status: ActionStatus::PendingConfirmation,
                message: None,
                portuguese,
            },
        );
        self.stats.prepared += 1;
        answer.to_call_tool_result()
    }

    /// The proposal's binding for proof verification, if it is this person's.
    pub fn binding(&mut self, who: &Identity, action_id: &str) -> Option<Binding> {
        self.stats.execute_calls += 1;
        let p = self.proposal_of(who, action_id)?;
        Some(Binding {
            operation: OPERATION.into(),
            arguments_hash: p.arguments_hash.clone(),
            summary_hash: p.summary_hash.clone(),
            expires_at: p.expires_at,
        })
    }

    /// Execution after a verified, consumed proof: re-check and write in one step.
    pub fn execute(
        &mut self,
        who: &Identity,
        action_id: &str,
        now: OffsetDateTime,
    ) -> CallToolResult {
        self.refresh(action_id, now);
        let Some(p) = self.proposal_of(who, action_id).cloned() else {
            return error("no such action");
        };
        if p.status != ActionStatus::PendingConfirmation {
            // Repeated execute, superseded or expired: the recorded status, no write.
            return p.status_answer();
        }
        let (status, message) = match self.recheck(&p) {
            Err(why) => (ActionStatus::Conflict, why.to_owned()),
            Ok(()) => {
                if let Some(s) = self
                    .data
                    .users
                    .get_mut(&who.user_id)
                    .filter(|u| !u.synthetic)
                    .and_then(|u| u.sessions.iter_mut().find(|s| s.id == p.session_id))
                {
                    s.car_id = p.to_car.clone();
                }
                self.stats.executions += 1;
                let done = if p.portuguese {
                    "A sessão foi movida para o novo carro."
                } else {
                    "The session was moved to the new car."
                };
                (ActionStatus::Completed, done.to_owned())
            }
        };
        if let Some(stored) = self.proposals.get_mut(action_id) {
            stored.status = status;
            stored.message = Some(message.clone());
        }
        StatusAnswer::new(action_id, status, Some(message)).to_call_tool_result()
    }

    /// Account, permission, ownership and state, as they are now.
    fn recheck(&self, p: &Proposal) -> Result<(), &'static str> {
        let user = self
            .data
            .users
            .get(&p.identity.user_id)
            .ok_or("The account no longer exists.")?;
        if user.blocked {
            return Err("Not done: the account is blocked.");
        }
        if !user.can_reassign {
            return Err("Not done: the account may no longer move sessions between cars.");
        }
        let session = user
            .session(&p.session_id)
            .ok_or("Not done: the session no longer belongs to the account.")?;
        if user.car(&p.to_car).is_none() {
            return Err("Not done: the target car no longer belongs to the account.");
        }
        if session.car_id != p.from_car {
            return Err("Not done: the session changed since the proposal was prepared.");
        }
        Ok(())
    }

    /// `get_action_status {actionId}`.
    pub fn status(
        &mut self,
        who: &Identity,
        action_id: &str,
        now: OffsetDateTime,
    ) -> CallToolResult {
        self.refresh(action_id, now);
        self.proposal_of(who, action_id)
            .map_or_else(|| error("no such action"), Proposal::status_answer)
    }

    /// The direct write (present, never to be allowlisted).
    pub fn direct_write(&mut self, who: &Identity, args: &Value) -> CallToolResult {
        self.stats.direct_writes += 1;
        let (Some(sid), Some(cid)) = (args_str(args, "sessionId"), args_str(args, "carId")) else {
            return error("arguments need sessionId and carId");
        };
        let Some(user) = self.data.users.get_mut(&who.user_id) else {
            return error("unknown user");
        };
        if user.car(cid).is_none() {
            return error("car not found");
        }
        match user.sessions.iter_mut().find(|s| s.id == sid) {
            Some(s) => {
                s.car_id = cid.to_owned();
                ok(json!({"sessionId": sid, "carId": cid}))
            }
            None => error("session not found"),
        }
    }
}

/// The proposal's summary: what the person will see and countersign, in full. In
/// Portuguese for a conversation the platform says is Portuguese (B-2's `X-MCP-Language`):
/// the provider writes the words the person countersigns.
fn summary(user: &User, session: &Session, target: &Car, portuguese: bool) -> String {
    let (track, date) = (session.track, session.date);
    let (laps, to) = (session.laps_ms.len(), target.name);
    let from = user.car(&session.car_id).map(|c| c.name);
    if portuguese {
        let from = from.unwrap_or("(carro desconhecido)");
        format!(
            "Mover a sessão em {track} de {date} ({laps} voltas) do seu carro \"{from}\" para o seu carro \"{to}\". Os tempos de volta passarão a contar para \"{to}\"."
        )
    } else {
        let from = from.unwrap_or("(unknown car)");
        format!(
            "Move the session at {track} on {date} ({laps} laps) from your car \"{from}\" to your car \"{to}\". Its lap times will then count for \"{to}\"."
        )
    }
}
