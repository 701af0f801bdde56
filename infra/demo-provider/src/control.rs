//! The fault switches (tests and demos) and the test/control endpoints under `/_demo/`:
//! the counters, the fault and data controls, and the installed proof keys.

use crate::actions::Store;
use crate::server::{Demo, Faults, lock};
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::Arc;

/// The tool a JSON-RPC body calls, if it is a `tools/call`.
fn called_tool(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    (v.get("method")?.as_str()? == "tools/call")
        .then(|| v.pointer("/params/name")?.as_str().map(str::to_owned))
        .flatten()
}

pub(crate) async fn apply_faults(
    State(demo): State<Arc<Demo>>,
    req: Request,
    next: Next,
) -> Response {
    let session = req.headers().contains_key("mcp-session-id");
    if req.method() == http::Method::DELETE && session {
        lock(&demo.store).stats.session_closes += 1;
    }
    let expire = {
        let mut faults = lock(&demo.faults);
        let expire = faults.expire_sessions && session;
        faults.expire_sessions &= !expire;
        expire
    };
    if expire {
        return StatusCode::NOT_FOUND.into_response();
    }
    let faults = *lock(&demo.faults);
    if faults == Faults::default() {
        return next.run(req).await;
    }
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 1 << 20).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let tool = called_tool(&bytes);
    let req = Request::from_parts(parts, Body::from(bytes));
    let Some(tool) = tool else {
        return next.run(req).await;
    };
    if faults.delay_ms > 0 {
        // The call runs first and its answer is held back: a client that gives up (or
        // dies) meanwhile leaves the work done, as a slow real system would.
        let response = next.run(req).await;
        let (parts, body) = response.into_parts();
        let bytes = axum::body::to_bytes(body, 1 << 20)
            .await
            .unwrap_or_default();
        tokio::time::sleep(std::time::Duration::from_millis(faults.delay_ms)).await;
        return Response::from_parts(parts, Body::from(bytes));
    }
    if faults.garbage {
        return (
            StatusCode::OK,
            [("content-type", "application/json")],
            "{\"jsonrpc\": \"2.0\", garbage",
        )
            .into_response();
    }
    if faults.drop_after_execute && tool == "execute_action" {
        // Let the execution finish completely, then break the connection mid-answer.
        let response = next.run(req).await;
        let _ = axum::body::to_bytes(response.into_body(), 1 << 20).await;
        let broken = futures::stream::once(async {
            Err::<Bytes, std::io::Error>(std::io::Error::other(
                "connection dropped by fault switch",
            ))
        });
        return Response::builder()
            .status(StatusCode::OK)
            .header("content-type", "application/json")
            .body(Body::from_stream(broken))
            .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response());
    }
    next.run(req).await
}

pub(crate) async fn stats(State(demo): State<Arc<Demo>>) -> Response {
    axum::Json(demo.stats()).into_response()
}

/// `POST /_demo/keys {kid, publicKeyPem}`.
pub(crate) async fn keys(
    State(demo): State<Arc<Demo>>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    match (
        body.get("kid").and_then(Value::as_str),
        body.get("publicKeyPem").and_then(Value::as_str),
    ) {
        (Some(kid), Some(pem)) if demo.install_key(kid, pem) => {
            StatusCode::NO_CONTENT.into_response()
        }
        _ => (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "kid and an RSA publicKeyPem are required"})),
        )
            .into_response(),
    }
}

fn on() -> bool {
    true
}

/// A fault the acceptance suite injects, or a change to the demo's data.
#[derive(Debug, serde::Deserialize)]
#[serde(tag = "fault", rename_all = "snake_case")]
enum Control {
    ExpireSessions,
    Delay {
        #[serde(default)]
        ms: u64,
    },
    DropAfterExecute {
        #[serde(default = "on")]
        on: bool,
    },
    Garbage {
        #[serde(default = "on")]
        on: bool,
    },
    UnsafeSummary {
        #[serde(default = "on")]
        on: bool,
    },
    ClockSkew {
        #[serde(default)]
        secs: i64,
    },
    SkipProofVerification {
        #[serde(default = "on")]
        on: bool,
    },
    AcceptExpiredProofs {
        #[serde(default = "on")]
        on: bool,
    },
    AcceptUnsignedProofs {
        #[serde(default = "on")]
        on: bool,
    },
    CarsTurnWrite {
        #[serde(default = "on")]
        on: bool,
    },
    CarsDescriptionChanged {
        #[serde(default = "on")]
        on: bool,
    },
    RequireStepUp {
        #[serde(default = "on")]
        on: bool,
    },
    Reset,
    RevokePermission {
        user: String,
    },
    BlockAccount {
        user: String,
    },
    ChangeSessionCar {
        session: String,
    },
}

/// `POST /_demo/control {fault, …}`: `expire_sessions`, `delay {ms}`, `drop_after_execute {on}`, `garbage
/// {on}`, `unsafe_summary {on}`, `clock_skew {secs}`, `skip_proof_verification {on}`,
/// `accept_expired_proofs {on}`, `accept_unsigned_proofs {on}`, `cars_turn_write {on}`, `cars_description_changed {on}`,
/// `require_step_up {on}` (a setting: the operation's proofs must carry a passkey step-up), `revoke_permission {user}`,
/// `block_account {user}`, `change_session_car {session}`, `reset`.
pub(crate) async fn control(
    State(demo): State<Arc<Demo>>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let done = serde_json::from_value::<Control>(body).is_ok_and(|c| apply(&demo, c));
    if done {
        return StatusCode::NO_CONTENT.into_response();
    }
    let error = json!({"error": "unknown fault or target"});
    (StatusCode::BAD_REQUEST, axum::Json(error)).into_response()
}

/// Applies `control`; `false` when its target does not exist.
fn apply(demo: &Demo, control: Control) -> bool {
    let mut faults = lock(&demo.faults);
    match control {
        Control::ExpireSessions => faults.expire_sessions = true,
        Control::Delay { ms } => faults.delay_ms = ms,
        Control::DropAfterExecute { on } => faults.drop_after_execute = on,
        Control::Garbage { on } => faults.garbage = on,
        Control::UnsafeSummary { on } => faults.unsafe_summary = on,
        Control::ClockSkew { secs } => faults.clock_skew_secs = secs,
        Control::SkipProofVerification { on } => faults.skip_proof_verification = on,
        Control::AcceptExpiredProofs { on } => faults.accept_expired_proofs = on,
        Control::AcceptUnsignedProofs { on } => faults.accept_unsigned_proofs = on,
        Control::CarsTurnWrite { on } => faults.cars_turn_write = on,
        Control::CarsDescriptionChanged { on } => faults.cars_description_changed = on,
        Control::RequireStepUp { on } => faults.require_step_up = on,
        Control::Reset => *faults = Faults::default(),
        Control::RevokePermission { user } => {
            return with_user(demo, &user, |u| u.can_reassign = false);
        }
        Control::BlockAccount { user } => return with_user(demo, &user, |u| u.blocked = true),
        Control::ChangeSessionCar { session } => {
            return change_session_car(&mut lock(&demo.store), &session);
        }
    }
    true
}

/// Changes `user`; `false` when there is no such user.
fn with_user(demo: &Demo, user: &str, change: impl FnOnce(&mut crate::data::User)) -> bool {
    lock(&demo.store)
        .data
        .users
        .get_mut(user)
        .map(change)
        .is_some()
}

/// Moves `session` to a car it is not on, so the state differs from its preparation.
fn change_session_car(store: &mut Store, session: &str) -> bool {
    store.data.users.values_mut().any(|u| {
        let spare = u.cars.iter().map(|c| c.id).collect::<Vec<_>>();
        let Some(s) = u.sessions.iter_mut().find(|s| s.id == session) else {
            return false;
        };
        if let Some(other) = spare.iter().rev().find(|c| **c != s.car_id) {
            s.car_id = (*other).to_owned();
        }
        true
    })
}
