//! Reading a Streamable HTTP answer: JSON or an SSE stream, within a size limit.

use countersign_domain::ports::ProviderError;
use serde_json::Value;

/// What one POST got back.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: reqwest::StatusCode,
    /// `Mcp-Session-Id`, when the server opened a session.
    pub(crate) session: Option<String>,
    /// The JSON-RPC response with the awaited id (none for notifications or empty bodies).
    pub(crate) message: Option<Value>,
}

/// The error chain as one line (for logs; never contains headers).
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

fn too_large(max: usize) -> ProviderError {
    ProviderError::Malformed(format!("the answer is larger than {max} bytes"))
}

fn body_error(e: &reqwest::Error) -> ProviderError {
    if e.is_timeout() {
        ProviderError::Timeout
    } else {
        ProviderError::Interrupted
    }
}

/// Whether `v` is the JSON-RPC response to `id`.
fn answers(v: &Value, id: u64) -> bool {
    v.get("id").and_then(Value::as_u64) == Some(id)
        && (v.get("result").is_some() || v.get("error").is_some())
}

/// Reads the answer. `expect_id` is the request's id (`None` for a notification).
pub(crate) async fn read_answer(
    mut response: reqwest::Response,
    expect_id: Option<u64>,
    max: usize,
) -> Result<Answer, ProviderError> {
    let status = response.status();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if response.content_length().is_some_and(|n| n > max as u64) {
        return Err(too_large(max));
    }
    let mut buffer: Vec<u8> = Vec::new();
    let is_sse = content_type.starts_with("text/event-stream");
    let mut scanned = 0;
    loop {
        let chunk = response.chunk().await.map_err(|e| body_error(&e))?;
        let Some(chunk) = chunk else { break };
        buffer.extend_from_slice(&chunk);
        if buffer.len() > max {
            return Err(too_large(max));
        }
        // An event stream may stay open after the answer: stop at the answer.
        if is_sse && let Some(id) = expect_id {
            let (found, consumed) = scan_events(&buffer[scanned..], id);
            scanned += consumed;
            if let Some(message) = found {
                return Ok(Answer {
                    status,
                    session,
                    message: Some(message),
                });
            }
        }
    }
    let message = match (expect_id, is_sse) {
        (None, _) => None,
        (Some(id), true) => {
            let (found, _) = scan_events(&[&buffer[scanned..], b"\n\n"].concat(), id);
            if found.is_none() && status.is_success() {
                // The stream ended without the answer: the call's outcome is unknown.
                return Err(ProviderError::Interrupted);
            }
            found
        }
        (Some(id), false) if content_type.starts_with("application/json") => {
            match serde_json::from_slice::<Value>(&buffer) {
                Ok(Value::Array(batch)) => batch.into_iter().find(|v| answers(v, id)),
                Ok(v) if answers(&v, id) => Some(v),
                Ok(_) if !status.is_success() => None,
                Ok(_) => {
                    return Err(ProviderError::Malformed(
                        "the answer is not the JSON-RPC response to the request".into(),
                    ));
                }
                Err(_) if !status.is_success() => None,
                Err(_) => return Err(ProviderError::Malformed("the answer is not JSON".into())),
            }
        }
        (Some(_), false) if !status.is_success() => None,
        (Some(_), false) => {
            return Err(ProviderError::Malformed(format!(
                "unexpected content type {content_type:?}"
            )));
        }
    };
    Ok(Answer {
        status,
        session,
        message,
    })
}

/// Scans complete SSE events in `bytes` for the response to `id`; returns it and how many
/// bytes of complete events were consumed.
fn scan_events(bytes: &[u8], id: u64) -> (Option<Value>, usize) {
    let mut consumed = 0;
    loop {
        let rest = &bytes[consumed..];
        let end = find_event_end(rest);
        let Some((len, sep)) = end else {
            return (None, consumed);
        };
        let event = &rest[..len];
        consumed += len + sep;
        let text = String::from_utf8_lossy(event);
        let data: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        if data.is_empty() {
            continue;
        }
        if let Ok(v) = serde_json::from_str::<Value>(&data.join("\n"))
            && answers(&v, id)
        {
            return (Some(v), consumed);
        }
    }
}

/// The end of the first event: its length and the separator's length.
fn find_event_end(bytes: &[u8]) -> Option<(usize, usize)> {
    for i in 0..bytes.len() {
        if bytes[i..].starts_with(b"\r\n\r\n") {
            return Some((i, 4));
        }
        if bytes[i..].starts_with(b"\n\n") {
            return Some((i, 2));
        }
    }
    None
}

/// The `result` of a JSON-RPC response.
pub(crate) fn result_of(message: Option<Value>) -> Result<Value, ProviderError> {
    let Some(mut message) = message else {
        return Err(ProviderError::Malformed("no JSON-RPC response".into()));
    };
    if let Some(result) = message.get_mut("result") {
        return Ok(result.take());
    }
    let code = message
        .pointer("/error/code")
        .and_then(Value::as_i64)
        .ok_or_else(|| ProviderError::Malformed("neither result nor error".into()))?;
    Err(ProviderError::Protocol { code })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_are_scanned_for_the_awaited_answer() {
        let stream = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\nid: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\n data\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"ok\":true}}\r\n\r\npartial";
        let (found, consumed) = scan_events(stream, 7);
        assert_eq!(found.unwrap()["result"]["ok"], true);
        assert_eq!(&stream[consumed..], b"partial");
        assert_eq!(scan_events(stream, 8).0, None);
    }

    #[test]
    fn results_and_errors() {
        assert!(result_of(Some(serde_json::json!({"id": 1, "result": {}}))).is_ok());
        assert!(matches!(
            result_of(Some(
                serde_json::json!({"id": 1, "error": {"code": -32602}})
            )),
            Err(ProviderError::Protocol { code: -32602 })
        ));
        assert!(matches!(result_of(None), Err(ProviderError::Malformed(_))));
    }
}
