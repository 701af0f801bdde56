//! Reading a Streamable HTTP answer: JSON or an SSE stream, within a size limit.

use countersign_domain::ports::ProviderError;
use rmcp::model::{JsonObject, JsonRpcMessage, RequestId};
use serde_json::Value;

/// A JSON-RPC message from the provider; the awaited one is a response or an error.
/// Results are read as objects here and typed by the caller.
pub(crate) type Incoming = JsonRpcMessage<JsonObject, JsonObject, JsonObject>;

/// What one POST got back.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: reqwest::StatusCode,
    /// `Mcp-Session-Id`, when the server opened a session.
    pub(crate) session: Option<String>,
    /// The JSON-RPC response with the awaited id (none for notifications or empty bodies).
    pub(crate) message: Option<Incoming>,
    /// The event stream ended before the answer, after events the server numbered: the
    /// answer can be asked for again by `GET` with `Last-Event-ID` (resumability). The
    /// request itself is never sent again.
    pub(crate) resume: Option<Resume>,
}

/// Where a broken event stream can be picked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resume {
    /// The last event id received.
    pub(crate) last_event_id: String,
    /// The server's `retry` (milliseconds), when it sent one.
    pub(crate) retry_ms: Option<u64>,
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
fn answers(m: &Incoming, id: &RequestId) -> bool {
    match m {
        JsonRpcMessage::Response(r) => r.id == *id,
        JsonRpcMessage::Error(e) => e.id.as_ref() == Some(id),
        _ => false,
    }
}

/// `v`, if it is the JSON-RPC answer to `id`.
fn answer_to(v: Value, id: &RequestId) -> Option<Incoming> {
    serde_json::from_value::<Incoming>(v)
        .ok()
        .filter(|m| answers(m, id))
}

/// Reads the answer. `expect_id` is the request's id (`None` for a notification).
pub(crate) async fn read_answer(
    mut response: reqwest::Response,
    expect_id: Option<&RequestId>,
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
    let mut scanner = Scanner::default();
    loop {
        let chunk = response.chunk().await.map_err(|e| body_error(&e))?;
        let Some(chunk) = chunk else { break };
        buffer.extend_from_slice(&chunk);
        if buffer.len() > max {
            return Err(too_large(max));
        }
        // An event stream may stay open after the answer: stop at the answer.
        if is_sse
            && let Some(id) = expect_id
            && let Some(message) = scanner.feed(&buffer, id)
        {
            return Ok(Answer {
                status,
                session,
                message: Some(message),
                resume: None,
            });
        }
    }
    let rest = &buffer[scanner.scanned..];
    if is_sse
        && status.is_success()
        && let Some(id) = expect_id
    {
        let (message, resume) = stream_end(&mut scanner, rest, id)?;
        return Ok(Answer {
            status,
            session,
            message,
            resume,
        });
    }
    let message = whole_answer(rest, status, &content_type, expect_id)?;
    Ok(Answer {
        status,
        session,
        message,
        resume: None,
    })
}

/// The end of an event stream that has not yet carried the answer to `id`: the answer
/// in its last, unterminated event; else, when the server numbered its events, where to
/// resume; else the call's outcome is unknown.
fn stream_end(
    scanner: &mut Scanner,
    rest: &[u8],
    id: &RequestId,
) -> Result<(Option<Incoming>, Option<Resume>), ProviderError> {
    let end = [rest, b"\n\n"].concat();
    if let Some(message) = scanner_over(scanner, &end, id) {
        return Ok((Some(message), None));
    }
    match scanner.last_event_id.take() {
        Some(last_event_id) => Ok((
            None,
            Some(Resume {
                last_event_id,
                retry_ms: scanner.retry_ms,
            }),
        )),
        None => Err(ProviderError::Interrupted),
    }
}

/// Feeds `bytes` (the stream's unscanned rest) to `scanner` from its start.
fn scanner_over(scanner: &mut Scanner, bytes: &[u8], id: &RequestId) -> Option<Incoming> {
    scanner.scanned = 0;
    scanner.searched = 0;
    scanner.feed(bytes, id)
}

/// The awaited message in a whole body (the rest of an event stream, or a JSON body);
/// `None` for an error status without one.
fn whole_answer(
    rest: &[u8],
    status: reqwest::StatusCode,
    content_type: &str,
    expect_id: Option<&RequestId>,
) -> Result<Option<Incoming>, ProviderError> {
    let is_sse = content_type.starts_with("text/event-stream");
    match (expect_id, is_sse) {
        (None, _) => Ok(None),
        (Some(id), true) => {
            let (found, _) = scan_events(&[rest, b"\n\n"].concat(), id);
            if found.is_none() && status.is_success() {
                // The stream ended without the answer: the call's outcome is unknown.
                return Err(ProviderError::Interrupted);
            }
            Ok(found)
        }
        (Some(id), false) if content_type.starts_with("application/json") => {
            json_answer(rest, status, id)
        }
        (Some(_), false) if !status.is_success() => Ok(None),
        (Some(_), false) => Err(ProviderError::Malformed(format!(
            "unexpected content type {content_type:?}"
        ))),
    }
}

/// The awaited message in a JSON body (one message or a batch).
fn json_answer(
    body: &[u8],
    status: reqwest::StatusCode,
    id: &RequestId,
) -> Result<Option<Incoming>, ProviderError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(batch)) => Ok(batch.into_iter().find_map(|v| answer_to(v, id))),
        Ok(v) => match answer_to(v, id) {
            Some(m) => Ok(Some(m)),
            None if !status.is_success() => Ok(None),
            None => Err(ProviderError::Malformed(
                "the answer is not the JSON-RPC response to the request".into(),
            )),
        },
        Err(_) if !status.is_success() => Ok(None),
        Err(_) => Err(ProviderError::Malformed("the answer is not JSON".into())),
    }
}

/// Reads an event stream as it arrives. Each byte is searched for an event separator
/// once, however the stream is cut into chunks: a provider trickling an event a byte at a
/// time costs linear time, not quadratic.
#[derive(Debug, Default)]
struct Scanner {
    /// Bytes of complete events consumed.
    scanned: usize,
    /// Bytes after `scanned` already searched without finding a separator.
    searched: usize,
    /// Bytes examined in all (tests).
    examined: usize,
    /// The `id` of the last complete event that had one.
    last_event_id: Option<String>,
    /// The last `retry` field, in milliseconds.
    retry_ms: Option<u64>,
}

impl Scanner {
    /// Scans what `buffer` holds beyond the consumed events; the answer to `id`, if a
    /// complete event carries it.
    fn feed(&mut self, buffer: &[u8], id: &RequestId) -> Option<Incoming> {
        loop {
            let rest = &buffer[self.scanned..];
            // A separator may straddle the previous end: look back up to 3 bytes.
            let from = self.searched.saturating_sub(3);
            self.examined += rest.len().saturating_sub(from);
            let Some((len, sep)) = find_event_end(rest, from) else {
                self.searched = rest.len();
                return None;
            };
            self.scanned += len + sep;
            self.searched = 0;
            let event = &rest[..len];
            self.note_fields(event);
            if let Some(m) = event_answer(event, id) {
                return Some(m);
            }
        }
    }
}

impl Scanner {
    /// Keeps the event's `id` and `retry` fields (what a resumption needs).
    fn note_fields(&mut self, event: &[u8]) {
        for line in String::from_utf8_lossy(event).lines() {
            let field = |name: &str| {
                line.strip_prefix(name)
                    .map(|v| v.strip_prefix(' ').unwrap_or(v).to_owned())
            };
            if let Some(v) = field("id:") {
                // An id with NUL is ignored, as the SSE standard says.
                if !v.contains('\0') {
                    self.last_event_id = Some(v);
                }
            } else if let Some(v) = field("retry:")
                && let Ok(ms) = v.trim().parse()
            {
                self.retry_ms = Some(ms);
            }
        }
    }
}

/// The answer to `id`, if this event's data is it.
fn event_answer(event: &[u8], id: &RequestId) -> Option<Incoming> {
    let text = String::from_utf8_lossy(event);
    let data: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| d.strip_prefix(' ').unwrap_or(d))
        .collect();
    if data.is_empty() {
        return None;
    }
    serde_json::from_str::<Value>(&data.join("\n"))
        .ok()
        .and_then(|v| answer_to(v, id))
}

/// Scans complete SSE events in `bytes` for the response to `id`; returns it and how many
/// bytes of complete events were consumed.
fn scan_events(bytes: &[u8], id: &RequestId) -> (Option<Incoming>, usize) {
    let mut scanner = Scanner::default();
    let found = scanner.feed(bytes, id);
    (found, scanner.scanned)
}

/// The end of the first event at or after `from`: its length and the separator's length.
fn find_event_end(bytes: &[u8], from: usize) -> Option<(usize, usize)> {
    for i in from..bytes.len() {
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
/// The result of the awaited answer, or its protocol error.
pub(crate) fn result_of(message: Option<Incoming>) -> Result<JsonObject, ProviderError> {
    match message {
        Some(JsonRpcMessage::Response(r)) => Ok(r.result),
        Some(JsonRpcMessage::Error(e)) => Err(ProviderError::Protocol {
            code: i64::from(e.error.code.0),
        }),
        Some(_) => Err(ProviderError::Malformed("neither result nor error".into())),
        None => Err(ProviderError::Malformed("no JSON-RPC response".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_are_scanned_for_the_awaited_answer() {
        let stream = b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\nid: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\n data\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"ok\":true}}\r\n\r\npartial";
        let (found, consumed) = scan_events(stream, &RequestId::Number(7));
        let result = result_of(found).unwrap();
        assert_eq!(result["ok"], true);
        assert_eq!(&stream[consumed..], b"partial");
        assert_eq!(scan_events(stream, &RequestId::Number(8)).0, None);
    }

    /// Issue 13: an answer trickled one byte per chunk is found, and every byte is
    /// examined a bounded number of times (linear, not quadratic).
    #[test]
    fn a_trickled_event_stream_costs_linear_time() {
        let padding = "x".repeat(100_000);
        let stream = format!(
            "data: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"p\":\"{padding}\"}}}}\n\ndata: {{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{{}}}}\n\n"
        );
        let bytes = stream.as_bytes();
        let mut scanner = Scanner::default();
        let mut found = None;
        for end in 1..=bytes.len() {
            if let Some(m) = scanner.feed(&bytes[..end], &RequestId::Number(7)) {
                found = Some(m);
                break;
            }
        }
        assert!(result_of(found).is_ok());
        assert!(
            scanner.examined <= 5 * bytes.len(),
            "{} bytes examined for {}",
            scanner.examined,
            bytes.len()
        );
    }

    /// Issue 13: provider bytes are other parties' bytes. An event stream, however it is
    /// cut into chunks, gives the same answer as read whole, and arbitrary bytes never
    /// panic the reader (2048 cases, asserted).
    #[test]
    fn any_event_stream_reads_the_same_however_it_is_chunked() {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
        let event = prop_oneof![
            Just("data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}".to_owned()),
            Just("data: {\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}".to_owned()),
            Just("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}".to_owned()),
            Just(": comment".to_owned()),
            "[ -~\n\r]{0,40}",
        ];
        let separator = prop::sample::select(vec!["\n\n", "\r\n\r\n", "\n", ""]);
        let stream = prop::collection::vec((event, separator), 0..8).prop_map(|parts| {
            parts
                .into_iter()
                .flat_map(|(e, s)| e.into_bytes().into_iter().chain(s.bytes()))
                .collect::<Vec<u8>>()
        });
        let cuts = prop::collection::vec(1usize..16, 1..64);
        let config = Config {
            cases: 2048,
            failure_persistence: None,
            ..Config::default()
        };
        let mut runner =
            TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
        let ran = std::sync::atomic::AtomicU32::new(0);
        let result = runner.run(&(stream, cuts), |(bytes, cuts)| {
            ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let id = RequestId::Number(7);
            let whole = Scanner::default().feed(&bytes, &id);
            let mut scanner = Scanner::default();
            let (mut end, mut found) = (0, None);
            for cut in cuts.iter().cycle() {
                end = (end + cut).min(bytes.len());
                found = scanner.feed(&bytes[..end], &id);
                if found.is_some() || end == bytes.len() {
                    break;
                }
            }
            if bytes.is_empty() {
                found = scanner.feed(&bytes, &id);
            }
            prop_assert_eq!(found.is_some(), whole.is_some());
            // The whole-body path never panics either.
            let _ = whole_answer(
                &bytes,
                reqwest::StatusCode::OK,
                "text/event-stream",
                Some(&id),
            );
            let _ = whole_answer(
                &bytes,
                reqwest::StatusCode::OK,
                "application/json",
                Some(&id),
            );
            Ok(())
        });
        assert!(result.is_ok(), "{result:?}");
        assert_eq!(ran.into_inner(), 2048);
    }

    #[test]
    fn results_and_errors() {
        let id = RequestId::Number(1);
        let ok = serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {}});
        assert!(result_of(answer_to(ok, &id)).is_ok());
        let error = serde_json::json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "unknown tool"}});
        assert!(matches!(
            result_of(answer_to(error, &id)),
            Err(ProviderError::Protocol { code: -32602 })
        ));
        let other = serde_json::json!({"jsonrpc": "2.0", "id": 2, "result": {}});
        assert!(answer_to(other, &id).is_none());
        assert!(matches!(result_of(None), Err(ProviderError::Malformed(_))));
    }
}
