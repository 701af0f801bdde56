//! B-1: the existing MCP server behind the bridge, over stdio (a command the bridge
//! starts and supervises: restarted on the next call after it dies) or Streamable HTTP.
//!
//! The one distinction that matters for writes: whether a call may have reached the
//! server. A failure to connect is [`UpstreamError::Unavailable`] (nothing was sent, safe
//! to report as not executed); anything after the request left — a timeout, a dropped
//! connection, a child that died mid-call — is [`UpstreamError::Lost`]: the write may have
//! run, and the bridge never sends it again (B-3).

use crate::config;
use async_trait::async_trait;
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{RoleClient, RunningService, ServiceExt as _};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Why an upstream call has no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpstreamError {
    /// The server could not be reached: nothing was sent.
    #[error("the upstream server is unavailable: {0}")]
    Unavailable(String),
    /// The request was sent and no answer came back: it may have run.
    #[error("the upstream server's answer was lost: {0}")]
    Lost(String),
}

/// A header to send with one call (an operation whose identity is a header).
pub type CallHeader<'a> = Option<(&'a str, &'a str)>;

/// The existing server, as the bridge needs it.
#[async_trait]
pub trait Upstream: Send + Sync {
    /// Its tools (`tools/list`, every page).
    async fn tools(&self) -> Result<Vec<Tool>, UpstreamError>;

    /// Calls `tool` once with `arguments` (and `header`, when the upstream is HTTP).
    async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        header: CallHeader<'_>,
    ) -> Result<CallToolResult, UpstreamError>;
}

type Session = Arc<RunningService<RoleClient, ()>>;

/// Long-lived sessions with an HTTP upstream, used in turn: rmcp's client runs each
/// session through one task, which caps a single session's throughput at one core's worth
/// of its work (B-6). A stdio upstream is one process, so one session.
const HTTP_SESSIONS: usize = 4;

/// The upstream over rmcp: long-lived sessions, each reopened when it closes.
pub struct RmcpUpstream {
    spec: config::Upstream,
    timeout: Duration,
    sessions: Vec<tokio::sync::Mutex<Option<Session>>>,
    next: std::sync::atomic::AtomicUsize,
}

countersign_domain::debug_showing!(RmcpUpstream { spec });

impl RmcpUpstream {
    /// The upstream `spec`, each call bounded by `timeout`.
    pub fn new(spec: config::Upstream, timeout: Duration) -> Self {
        let n = match spec {
            config::Upstream::Http { .. } => HTTP_SESSIONS,
            config::Upstream::Stdio { .. } => 1,
        };
        Self {
            spec,
            timeout,
            sessions: (0..n).map(|_| tokio::sync::Mutex::new(None)).collect(),
            next: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    async fn connect(&self, header: CallHeader<'_>) -> Result<Session, UpstreamError> {
        let unavailable = |e: String| UpstreamError::Unavailable(e);
        let running = match &self.spec {
            config::Upstream::Stdio { command, args } => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args);
                let transport = rmcp::transport::TokioChildProcess::new(cmd)
                    .map_err(|e| unavailable(format!("cannot start `{command}`: {e}")))?;
                tokio::time::timeout(self.timeout, ().serve(transport)).await
            }
            config::Upstream::Http { url } => {
                use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
                let mut headers = HashMap::new();
                if let Some((name, value)) = header {
                    let name = http::HeaderName::try_from(name)
                        .map_err(|e| unavailable(format!("header name: {e}")))?;
                    let value = http::HeaderValue::try_from(value)
                        .map_err(|e| unavailable(format!("header value: {e}")))?;
                    headers.insert(name, value);
                }
                let cfg = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(headers);
                let transport = rmcp::transport::StreamableHttpClientTransport::from_config(cfg);
                tokio::time::timeout(self.timeout, ().serve(transport)).await
            }
        };
        match running {
            Ok(Ok(service)) => Ok(Arc::new(service)),
            Ok(Err(e)) => Err(unavailable(e.to_string())),
            Err(_) => Err(unavailable("the handshake timed out".into())),
        }
    }

    /// A live session (the next in turn), reopened (the command restarted) when it has
    /// closed.
    async fn session(&self) -> Result<Session, UpstreamError> {
        let i = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            % self.sessions.len().max(1);
        let Some(slot) = self.sessions.get(i) else {
            return Err(UpstreamError::Unavailable("no upstream session".into()));
        };
        let mut slot = slot.lock().await;
        if let Some(s) = slot.as_ref().filter(|s| !s.is_closed()) {
            return Ok(s.clone());
        }
        if slot.is_some() {
            tracing::warn!("the upstream session closed; reopening it");
        }
        let fresh = self.connect(None).await?;
        *slot = Some(fresh.clone());
        Ok(fresh)
    }
}

#[async_trait]
impl Upstream for RmcpUpstream {
    async fn tools(&self) -> Result<Vec<Tool>, UpstreamError> {
        let session = self.session().await?;
        match tokio::time::timeout(self.timeout, session.peer().list_all_tools()).await {
            Ok(Ok(tools)) => Ok(tools),
            Ok(Err(e)) => Err(UpstreamError::Unavailable(e.to_string())),
            Err(_) => Err(UpstreamError::Unavailable("tools/list timed out".into())),
        }
    }

    async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        header: CallHeader<'_>,
    ) -> Result<CallToolResult, UpstreamError> {
        // A per-person header needs its own session (rmcp sets headers per transport).
        let session = match header {
            Some(_) => self.connect(header).await?,
            None => self.session().await?,
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let answer = tokio::time::timeout(self.timeout, session.peer().call_tool(params)).await;
        match answer {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(e)) => Err(UpstreamError::Lost(e.to_string())),
            Err(_) => Err(UpstreamError::Lost(format!(
                "no answer within {} s",
                self.timeout.as_secs()
            ))),
        }
    }
}

/// A tool result as JSON: its `structuredContent`, else its one text block parsed as JSON,
/// else that text as a string (lookups and guards read fields of it).
pub fn result_json(result: &CallToolResult) -> Value {
    if let Some(v) = &result.structured_content {
        return v.clone();
    }
    let text: String = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("");
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}
