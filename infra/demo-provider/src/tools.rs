//! The catalog and the consultations. Each consultation answers only for the person named
//! by `X-MCP-User-Id`; another person's resource is "not found", never shown.

use crate::data::{Data, User, diagnosis};
use countersign_provider_kit::contract::PREPARE_FIELDS;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};

/// The seven consultations of the TrackShare demo, meant for a tenant's allowlist.
pub const CONSULTATIONS: [&str; 7] = [
    "get_user_uploads",
    "get_upload_file_details",
    "get_user_sessions",
    "get_session_laps",
    "get_user_cars",
    "get_download_status",
    "get_error_diagnosis",
];

/// What the demo's administrator gives the certification run (H-2, H-3, V-3, V-4): the
/// synthetic test person `countersign-test:u_test` (whose writes the demo answers but does not apply), a
/// sample for each consultation, a second synthetic person who must be refused the first
/// one's upload and session, every operation's sample arguments, and the consent to
/// execute one action per operation.
pub fn certification_request() -> Value {
    json!({
        "testUser": "countersign-test:u_test",
        "secondTestUser": "countersign-test:u_test2",
        "personalConsultations": ["get_upload_file_details", "get_session_laps"],
        "consultations": {
            "get_user_uploads": {},
            "get_upload_file_details": {"uploadId": "up_t1"},
            "get_user_sessions": {},
            "get_session_laps": {"sessionId": "ses_t1"},
            "get_user_cars": {},
            "get_download_status": {},
            "get_error_diagnosis": {"code": "E_TRUNCATED"}
        },
        "actions": {
            "reassign_session_car": {"sessionId": "ses_t1", "carId": "car_t2"}
        },
        "consent": true
    })
}

/// Present but never to be allowlisted: it searches everyone's sessions (grants access).
pub const MATCHING: &str = "get_matching_sessions";
/// Present but never to be allowlisted: a direct write without confirmation.
pub const DIRECT_WRITE: &str = "reassign_session_car";

fn object(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

fn string() -> Value {
    json!({"type": "string"})
}

fn session_summary() -> Value {
    object(
        json!({"sessionId": string(), "track": string(), "date": string(), "carId": string(), "lapCount": {"type": "integer"}}),
        &["sessionId", "track", "date", "carId", "lapCount"],
    )
}

fn upload() -> Value {
    object(
        json!({"uploadId": string(), "fileName": string(), "sizeBytes": {"type": "integer"}, "status": string(), "errorCode": {"type": ["string", "null"]}}),
        &["uploadId", "fileName", "sizeBytes", "status", "errorCode"],
    )
}

fn tool(name: &str, description: &str, input: Value, output: Value, read_only: bool) -> Value {
    json!({
        "name": name,
        "description": description,
        "inputSchema": input,
        "outputSchema": output,
        "annotations": {"readOnlyHint": read_only},
    })
}

/// The full catalog as `tools/list` publishes it (A-12 annotations on the three reserved
/// tools).
pub fn catalog() -> Vec<Value> {
    let mut all = consultations();
    all.extend(writes());
    all
}

/// The consultations, including one that must never be allowlisted.
fn consultations() -> Vec<Value> {
    let none = object(json!({}), &[]);
    vec![
        tool(
            "get_user_uploads",
            "The person's uploaded telemetry files.",
            none.clone(),
            object(
                json!({"uploads": {"type": "array", "items": upload()}}),
                &["uploads"],
            ),
            true,
        ),
        tool(
            "get_upload_file_details",
            "One uploaded file of the person, with the sessions it produced.",
            object(json!({"uploadId": string()}), &["uploadId"]),
            object(
                json!({"upload": upload(), "sessionIds": {"type": "array", "items": string()}}),
                &["upload", "sessionIds"],
            ),
            true,
        ),
        tool(
            "get_user_sessions",
            "The person's driving sessions.",
            none.clone(),
            object(
                json!({"sessions": {"type": "array", "items": session_summary()}}),
                &["sessions"],
            ),
            true,
        ),
        tool(
            "get_session_laps",
            "Lap times of one of the person's sessions.",
            object(json!({"sessionId": string()}), &["sessionId"]),
            object(
                json!({"sessionId": string(), "laps": {"type": "array", "items": object(json!({"lap": {"type": "integer"}, "timeMs": {"type": "integer"}}), &["lap", "timeMs"])}}),
                &["sessionId", "laps"],
            ),
            true,
        ),
        tool(
            "get_user_cars",
            "The person's cars.",
            none.clone(),
            object(
                json!({"cars": {"type": "array", "items": object(json!({"carId": string(), "name": string()}), &["carId", "name"])}}),
                &["cars"],
            ),
            true,
        ),
        tool(
            "get_download_status",
            "The person's export jobs and their progress.",
            none,
            object(
                json!({"downloads": {"type": "array", "items": object(json!({"downloadId": string(), "status": string(), "progress": {"type": "integer"}}), &["downloadId", "status", "progress"])}}),
                &["downloads"],
            ),
            true,
        ),
        tool(
            "get_error_diagnosis",
            "What an upload error code means and how to fix it.",
            object(json!({"code": string()}), &["code"]),
            object(
                json!({"code": string(), "diagnosis": string()}),
                &["code", "diagnosis"],
            ),
            true,
        ),
        matching(),
    ]
}

/// The search across everyone's sessions: read-only, yet never to be allowlisted.
fn matching() -> Value {
    tool(
        MATCHING,
        "Sessions of any person matching a track name. Grants access to others' data: never allowlist it.",
        object(json!({"track": string()}), &["track"]),
        object(json!({"sessions": {"type": "array"}}), &["sessions"]),
        true,
    )
}

/// The writes: one that bypasses confirmation (never allowlist it) and the three reserved
/// tools of the actions contract.
fn writes() -> Vec<Value> {
    let status = object(
        json!({"contractVersion": {"const": 1}, "actionId": string(), "status": string(), "message": string()}),
        &["contractVersion", "actionId", "status"],
    );
    vec![
        tool(
            DIRECT_WRITE,
            "Moves a session to another car immediately, without confirmation. Never allowlist it: use prepare_action.",
            object(
                json!({"sessionId": string(), "carId": string()}),
                &["sessionId", "carId"],
            ),
            object(
                json!({"sessionId": string(), "carId": string()}),
                &["sessionId", "carId"],
            ),
            false,
        ),
        tool(
            "prepare_action",
            "Prepares a write for the person to confirm. Operations: reassign_session_car {sessionId, carId}.",
            object(
                json!({"operation": string(), "arguments": {"type": "object"}}),
                &["operation", "arguments"],
            ),
            object(
                json!({"contractVersion": {"const": 1}, "actionId": string(), "status": string(), "operation": string(), "summary": string(), "argumentsHash": string(), "summaryHash": string(), "expiresAt": string()}),
                &PREPARE_FIELDS,
            ),
            false,
        ),
        tool(
            "execute_action",
            "Executes a confirmed action (platform only; needs X-MCP-Confirmation).",
            object(json!({"actionId": string()}), &["actionId"]),
            status.clone(),
            false,
        ),
        tool(
            "get_action_status",
            "The status of an action (platform only).",
            object(json!({"actionId": string()}), &["actionId"]),
            status,
            true,
        ),
    ]
}

/// A successful structured answer.
pub fn ok(v: Value) -> CallToolResult {
    CallToolResult::structured(v)
}

/// A tool error with a safe message.
pub fn error(message: &str) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

fn arg<'a>(args: &'a Value, name: &str) -> Option<&'a str> {
    args.get(name).and_then(Value::as_str)
}

/// A consultation for `user`; `None` if `name` is not one.
pub fn consult(data: &Data, user: &User, name: &str, args: &Value) -> Option<CallToolResult> {
    let not_found = || error("not found");
    Some(match name {
        "get_user_uploads" => {
            ok(json!({"uploads": user.uploads.iter().map(upload_json).collect::<Vec<_>>()}))
        }
        "get_upload_file_details" => {
            match arg(args, "uploadId").and_then(|id| user.uploads.iter().find(|u| u.id == id)) {
                Some(u) => ok(
                    json!({"upload": upload_json(u), "sessionIds": user.sessions.iter().filter(|s| s.upload_id == u.id).map(|s| s.id).collect::<Vec<_>>()}),
                ),
                None => not_found(),
            }
        }
        "get_user_sessions" => ok(
            json!({"sessions": user.sessions.iter().map(|s| user.session_json(s)).collect::<Vec<_>>()}),
        ),
        "get_session_laps" => match arg(args, "sessionId").and_then(|id| user.session(id)) {
            Some(s) => ok(
                json!({"sessionId": s.id, "laps": s.laps_ms.iter().enumerate().map(|(i, t)| json!({"lap": i + 1, "timeMs": t})).collect::<Vec<_>>()}),
            ),
            None => not_found(),
        },
        "get_user_cars" => ok(
            json!({"cars": user.cars.iter().map(|c| json!({"carId": c.id, "name": c.name})).collect::<Vec<_>>()}),
        ),
        "get_download_status" => ok(
            json!({"downloads": user.downloads.iter().map(|d| json!({"downloadId": d.id, "status": d.status, "progress": d.progress})).collect::<Vec<_>>()}),
        ),
        "get_error_diagnosis" => match arg(args, "code").and_then(|c| diagnosis(c).map(|d| (c, d)))
        {
            Some((c, d)) => ok(json!({"code": c, "diagnosis": d})),
            None => not_found(),
        },
        MATCHING => {
            let track = arg(args, "track").unwrap_or_default().to_lowercase();
            ok(
                json!({"sessions": data.users.values().flat_map(|u| u.sessions.iter().filter(|s| s.track.to_lowercase().contains(&track)).map(move |s| json!({"userId": u.id, "sessionId": s.id, "track": s.track}))).collect::<Vec<_>>()}),
            )
        }
        _ => return None,
    })
}

fn upload_json(u: &crate::data::Upload) -> Value {
    json!({"uploadId": u.id, "fileName": u.file_name, "sizeBytes": u.size_bytes, "status": u.status, "errorCode": u.error_code})
}
