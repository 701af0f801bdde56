//! The stateless fast path (issue 26 C, decision 0038): `tools/list` and `tools/call` on a
//! plain stateless request of the `initialize` eras are answered here, without rmcp's
//! per-request service machinery (a serve loop, a task and two channels per request), and
//! the result is serialised once. Every message is still one of rmcp's types, and the
//! answer is the one rmcp's handler would give (the same `Gateway` methods, the same
//! legacy-peer shaping), which `tests/mcp.rs` holds by sending every request to both.
//!
//! Anything this module does not recognise as plainly valid — another method, a batch, a
//! notification, `prepare_action` (answered by era, X-2), the 2026-07-28 era (per-request
//! `_meta`, standard headers), an unknown or
//! missing `MCP-Protocol-Version`, an `Origin` header, a `Host` outside the list, media
//! types with parameters, a declared body length over the limit, JSON that is not a
//! request — goes to rmcp untouched, so rmcp keeps deciding every refusal.

use crate::{Gateway, Handler};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use countersign_tools::access::Grant;
use countersign_tools::envelope::Sealed;
use countersign_tools::integration::ToolAnswer;
use http::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, HOST, ORIGIN};
use http::{HeaderMap, Method, StatusCode};
use rmcp::model::{
    CallToolRequestParams, PaginatedRequestParams, ProtocolVersion, RequestId,
    ServerJsonRpcMessage, ServerResult,
};
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use serde_json::value::RawValue;
use std::sync::Arc;

/// rmcp's default request body limit (4 MiB); a larger body goes to rmcp, which refuses it.
const MAX_BODY_BYTES: u64 = 4 * 1024 * 1024;

/// The protocol versions whose stateless requests the fast path answers: the `initialize`
/// eras, which carry no per-request `_meta` and no standard headers (both before
/// `ProtocolVersion::STANDARD_HEADERS`).
const LEGACY_ERAS: [ProtocolVersion; 2] =
    [ProtocolVersion::V_2025_06_18, ProtocolVersion::V_2025_11_25];

/// `POST /mcp` behind the auth layer: the fast path, or rmcp.
pub(crate) struct Mcp {
    pub(crate) gateway: Arc<Gateway>,
    pub(crate) rmcp: StreamableHttpService<Handler, NeverSessionManager>,
    /// Host names accepted without asking rmcp; `None`: the Host check is off (`*`).
    pub(crate) hosts: Option<Vec<String>>,
}

/// The route's handler.
pub(crate) async fn serve(State(mcp): State<Arc<Mcp>>, req: Request) -> Response {
    // Which path answered: an operator sees how much traffic still takes the slow one.
    match answer(&mcp, req).await {
        Ok(response) => {
            metrics::counter!("mcp_requests_total", "path" => "fast").increment(1);
            response
        }
        Err(req) => {
            metrics::counter!("mcp_requests_total", "path" => "rmcp").increment(1);
            mcp.rmcp.handle(req).await.map(Body::new)
        }
    }
}

/// The fast answer, or the request back (body intact) for rmcp.
async fn answer(mcp: &Mcp, req: Request) -> Result<Response, Request> {
    if !eligible(req.method(), req.headers(), mcp.hosts.as_deref()) {
        return Err(req);
    }
    let Some(grant) = req.extensions().get::<Grant>().cloned() else {
        return Err(req);
    };
    let (parts, body) = req.into_parts();
    let bytes = match axum::body::to_bytes(body, MAX_BODY_BYTES as usize).await {
        Ok(bytes) => bytes,
        // Over the limit (a declared length over it went to rmcp already) or a broken
        // connection: rmcp's refusal of an oversized body.
        Err(_) => {
            let text = format!("Payload Too Large: request body exceeds {MAX_BODY_BYTES} bytes");
            return Ok((StatusCode::PAYLOAD_TOO_LARGE, text).into_response());
        }
    };
    let Some((id, request)) = plain_request(&bytes) else {
        return Err(Request::from_parts(parts, Body::from(bytes)));
    };
    let result = match request {
        Plain::ListTools => mcp
            .gateway
            .list_tools(&grant)
            .await
            .map(ServerResult::ListToolsResult),
        Plain::CallTool(params) => match mcp.gateway.answer_tool(&grant, params).await {
            Ok(ToolAnswer::Sealed(sealed)) => return Ok(sealed_response(id, sealed)),
            Ok(ToolAnswer::Plain(result)) => Ok(ServerResult::CallToolResult(result)),
            Err(e) => Err(e),
        },
    };
    let message = match result {
        Ok(mut result) => {
            // What rmcp's handler does for a peer before 2026-07-28.
            result.strip_result_type_for_legacy_peer();
            result.strip_non_object_output_for_legacy_peer();
            ServerJsonRpcMessage::response(result, id)
        }
        Err(error) => ServerJsonRpcMessage::error(error, Some(id)),
    };
    Ok(json_response(&message))
}

/// A built-in tool's answer with its envelope written once. The sealed text *is* the
/// envelope serialised (G-1), so `structuredContent` is that text, not the envelope
/// serialised a second time; everything else is rmcp's `CallToolResult`, shaped for a
/// legacy peer as rmcp's handler shapes it.
fn sealed_response(id: RequestId, sealed: Sealed) -> Response {
    #[derive(serde::Serialize)]
    struct Message<'a> {
        jsonrpc: &'static str,
        id: &'a RequestId,
        result: &'a ServerResult,
    }
    let mut result = ServerResult::CallToolResult(sealed.into_text_only_result());
    result.strip_result_type_for_legacy_peer();
    let message = Message {
        jsonrpc: "2.0",
        id: &id,
        result: &result,
    };
    // The envelope's text, read from the text block it was moved into (not copied).
    let envelope = match &result {
        ServerResult::CallToolResult(r) => r.content.last().and_then(|c| c.as_text()),
        _ => None,
    };
    match (serde_json::to_vec(&message), envelope) {
        // `result` is the message's last member and a non-empty object (its `content` is
        // always there): the body ends with its closing brace and the message's.
        (Ok(mut body), Some(envelope)) if body.ends_with(b"}}") && !body.ends_with(b"{}}") => {
            body.truncate(body.len() - 2);
            body.extend_from_slice(br#","structuredContent":"#);
            body.extend_from_slice(envelope.text.as_bytes());
            body.extend_from_slice(b"}}");
            (
                StatusCode::OK,
                [(CONTENT_TYPE, "application/json")],
                Body::from(body),
            )
                .into_response()
        }
        _ => {
            tracing::error!("an MCP answer could not be serialised");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// The one serialisation of the answer (rmcp's own JSON response: 200, JSON-RPC body).
fn json_response(message: &ServerJsonRpcMessage) -> Response {
    match serde_json::to_vec(message) {
        Ok(body) => (
            StatusCode::OK,
            [(CONTENT_TYPE, "application/json")],
            Body::from(body),
        )
            .into_response(),
        Err(e) => {
            tracing::error!(error = %e, "an MCP answer could not be serialised");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// A plain request the fast path answers.
#[derive(Debug)]
enum Plain {
    /// `tools/list` (one page: the gateway lists every tool at once).
    ListTools,
    /// `tools/call`, its parameters as rmcp's type.
    CallTool(CallToolRequestParams),
}

/// A JSON-RPC request's members, borrowed from the body: read in one pass, where rmcp's
/// message type buffers the whole body twice to find out what kind of message it is (a
/// tenth of the gateway's time under load, issue 26). Any other member, a duplicate, an
/// escaped string or a `null` parameter fails here and the request goes to rmcp.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Members<'a> {
    jsonrpc: &'a str,
    id: RequestId,
    method: &'a str,
    #[serde(default, borrow)]
    params: Params<'a>,
}

/// `params` as written (`null` included), or absent.
#[derive(Default)]
struct Params<'a>(Option<&'a RawValue>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for Params<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'a RawValue as serde::Deserialize>::deserialize(d).map(|raw| Self(Some(raw)))
    }
}

/// A single JSON-RPC request of `tools/list` or `tools/call` without a per-request
/// protocol version, or `None`.
fn plain_request(bytes: &[u8]) -> Option<(RequestId, Plain)> {
    let m: Members<'_> = serde_json::from_slice(bytes).ok()?;
    if m.jsonrpc != "2.0" || m.params.0.is_some_and(|p| p.get() == "null") {
        return None;
    }
    let request = match m.method {
        "tools/list" => {
            let params: Option<PaginatedRequestParams> = match m.params.0 {
                Some(raw) => Some(serde_json::from_str(raw.get()).ok()?),
                None => None,
            };
            let inline = params
                .as_ref()
                .and_then(|p| p.meta.as_ref())
                .is_some_and(|meta| meta.protocol_version().is_some());
            (!inline).then_some(Plain::ListTools)?
        }
        "tools/call" => {
            let params: CallToolRequestParams = serde_json::from_str(m.params.0?.get()).ok()?;
            let inline = params
                .meta
                .as_ref()
                .is_some_and(|meta| meta.protocol_version().is_some());
            // `prepare_action` is answered by era (X-2, `confirm`): rmcp's handler.
            let by_era = params.name == countersign_tools::builtins::PREPARE_ACTION.name;
            (!inline && !by_era).then_some(Plain::CallTool(params))?
        }
        _ => return None,
    };
    Some((m.id, request))
}

/// Whether the request's method and headers are ones rmcp plainly accepts for a stateless
/// JSON answer (conservatively: anything unusual is rmcp's to judge).
fn eligible(method: &Method, headers: &HeaderMap, hosts: Option<&[String]>) -> bool {
    method == Method::POST
        && headers.get(ORIGIN).is_none()
        && hosts.is_none_or(|hosts| host_allowed(headers, hosts))
        && accepts_json_and_sse(headers)
        && single_value(headers, CONTENT_TYPE)
            .is_some_and(|v| v.eq_ignore_ascii_case("application/json"))
        && single_value(headers, "mcp-protocol-version")
            .is_some_and(|v| LEGACY_ERAS.iter().any(|era| era.as_str() == v))
        && headers.get_all(CONTENT_LENGTH).iter().all(|v| {
            v.to_str()
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .is_some_and(|n| n <= MAX_BODY_BYTES)
        })
}

/// The header's one value as text (trimmed), or `None` when absent, repeated or not text.
fn single_value<K: http::header::AsHeaderName>(headers: &HeaderMap, name: K) -> Option<&str> {
    let mut values = headers.get_all(name).iter();
    let first = values.next()?;
    if values.next().is_some() {
        return None;
    }
    first.to_str().ok().map(str::trim)
}

/// `Host` names one of `hosts` exactly (any port); IPv6 literals and anything else are
/// left to rmcp.
fn host_allowed(headers: &HeaderMap, hosts: &[String]) -> bool {
    let Some(host) = single_value(headers, HOST) else {
        return false;
    };
    if host.starts_with('[') {
        return false;
    }
    let name = host.split_once(':').map_or(host, |(name, _)| name);
    hosts.iter().any(|h| h.eq_ignore_ascii_case(name))
}

/// `Accept` lists both `application/json` and `text/event-stream`, with no parameters or
/// quoting (a weighted list is rmcp's to read).
fn accepts_json_and_sse(headers: &HeaderMap) -> bool {
    let (mut json, mut sse) = (false, false);
    for value in headers.get_all(ACCEPT) {
        let Ok(value) = value.to_str() else {
            return false;
        };
        if value.contains([';', '"']) {
            return false;
        }
        for essence in value.split(',').map(str::trim) {
            json |= essence.eq_ignore_ascii_case("application/json");
            sse |= essence.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && sse
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    const PLAIN: [(&str, &str); 5] = [
        ("host", "127.0.0.1:8787"),
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
        ("mcp-protocol-version", "2025-06-18"),
        ("content-length", "80"),
    ];

    fn hosts() -> Vec<String> {
        vec!["127.0.0.1".into(), "localhost".into()]
    }

    #[test]
    fn a_plain_stateless_post_is_eligible() {
        assert!(eligible(&Method::POST, &headers(&PLAIN), Some(&hosts())));
        assert!(eligible(&Method::POST, &headers(&PLAIN), None));
        // A body without a declared length is read up to the limit.
        let mut chunked = headers(&PLAIN);
        chunked.remove("content-length");
        assert!(eligible(&Method::POST, &chunked, Some(&hosts())));
    }

    /// Each departure from the plain form leaves the request to rmcp.
    #[test]
    fn anything_unusual_goes_to_rmcp() {
        assert!(!eligible(&Method::GET, &headers(&PLAIN), None));
        let variants: [(&str, &str); 9] = [
            ("host", "evil.example"),
            ("accept", "application/json"),
            ("accept", "application/json;q=0, text/event-stream"),
            ("content-type", "text/plain"),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-protocol-version", "2025-03-26"),
            ("content-length", "5000000"),
            ("content-length", "many"),
            ("origin", "https://evil.example"),
        ];
        for (name, value) in variants {
            let mut h = headers(&PLAIN);
            h.insert(name, value.parse().unwrap());
            assert!(
                !eligible(&Method::POST, &h, Some(&hosts())),
                "{name}: {value}"
            );
        }
        for missing in ["host", "mcp-protocol-version", "accept"] {
            let mut h = headers(&PLAIN);
            h.remove(missing);
            assert!(!eligible(&Method::POST, &h, Some(&hosts())), "{missing}");
        }
        let mut twice = headers(&PLAIN);
        twice.append("mcp-protocol-version", "2025-06-18".parse().unwrap());
        assert!(!eligible(&Method::POST, &twice, Some(&hosts())));
    }

    #[test]
    fn only_single_tool_requests_without_inline_versions_are_plain() {
        let list = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        assert!(plain_request(list).is_some());
        let call = br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x"}}"#;
        assert!(plain_request(call).is_some());
        let inline = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        assert!(plain_request(inline).is_none());
        for other in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#[..],
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            b"not json",
        ] {
            assert!(
                plain_request(other).is_none(),
                "{}",
                String::from_utf8_lossy(other)
            );
        }
    }
}
