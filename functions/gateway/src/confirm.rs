//! `prepare_action` through the gateway, answered by the client's era (decision 0051).
//!
//! A preparation that succeeded gets a link to the platform's confirmation page, where only
//! the token's person can confirm or cancel it. The client is told so in the form its
//! protocol era has for it, and only if it declared URL-mode elicitation:
//!
//! - 2026-07-28: an `input_required` result with a URL-mode elicitation (the page's URL,
//!   the literal summary as its message) and a `requestState` ([`StateKey`]); the retry
//!   that carries it gets `input_required` again while the person has not acted, the
//!   execution's result after `confirm`, a typed error after `cancel` or expiry;
//! - 2025-11-25: the URL-elicitation-required error (-32042) with the same URL; the client
//!   then follows `action_status`;
//! - otherwise (an older era, or no URL elicitation declared): an ordinary result with the
//!   link and how to follow the proposal.
//!
//! Nothing the client sends confirms: its elicitation answer (`inputResponses`) is
//! never read, and a `requestState` only ever reads where the proposal stands.

use crate::Gateway;
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::ActionId;
use countersign_domain::ports::Admission;
use countersign_domain::proposal::ProposalState;
use countersign_tools::access::Grant;
use countersign_tools::builtins::{PREPARE_ACTION, PreparedAction};
use countersign_tools::confirmation::{self, Standing};
use countersign_tools::envelope::{Meta, Sealed, Success, seal};
use countersign_tools::errors::{ToolError, code};
use countersign_tools::integration::ToolAnswer;
use countersign_tools::request_state::{RequestState, StateError};
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorCode, InputRequiredResult, ProtocolVersion,
    RequestMetaObject,
};
use serde_json::json;

/// Retries with a `requestState` one conversation may make a minute: the SDKs' drivers
/// make at most ten in a row (backing off to 250 ms when told to wait); a person takes
/// longer on the page, so a client polling faster than this is hammering.
pub const RETRIES_PER_MINUTE: u32 = 60;

/// The URL-elicitation-required error of the 2025-11-25 era.
pub const URL_ELICITATION_REQUIRED: i32 = -32042;

/// Who sent the request, beyond the grant: where links point and which token it was.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The public origin the request reached (`https://host`), for the page's URL.
    pub origin: String,
    /// The SHA-256 of the bearer token (what a client declared at `initialize` is kept
    /// under it).
    pub token_hash: Sha256Hex,
}

/// How the client can be sent to the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2026-07-28 with URL elicitation declared in this request's `_meta`.
    InputRequired,
    /// 2025-11-25 with URL elicitation declared at `initialize`.
    UrlElicitationError,
    /// Anything else: the link in an ordinary result.
    Link,
}

impl Era {
    /// The era of a request: its `_meta` (2026-07-28) or its `MCP-Protocol-Version` header
    /// and what the token's client declared at `initialize` (`declared`).
    pub fn of(meta: Option<&RequestMetaObject>, header: Option<&str>, declared: bool) -> Self {
        if let Some(meta) = meta
            && meta.protocol_version() == Some(ProtocolVersion::V_2026_07_28)
        {
            let url = meta
                .client_capabilities()
                .and_then(|c| c.elicitation)
                .is_some_and(|e| e.url.is_some());
            return if url { Self::InputRequired } else { Self::Link };
        }
        if header == Some(ProtocolVersion::V_2025_11_25.as_str()) && declared {
            Self::UrlElicitationError
        } else {
            Self::Link
        }
    }
}

fn meta() -> Meta {
    Meta {
        tool: PREPARE_ACTION.name.into(),
        version: PREPARE_ACTION.version.into(),
    }
}

fn complete(outcome: Result<Success, ToolError>) -> CallToolResponse {
    CallToolResponse::Complete(seal(&meta(), outcome).into_call_tool_result())
}

/// The envelope's `error.code` of an answer, `none` for a success; a protocol error (a
/// platform service down) is `SERVICE_UNAVAILABLE`, as its envelope would say (G-8).
fn answer_error_type(answer: &Result<CallToolResponse, McpError>) -> String {
    match answer {
        Ok(CallToolResponse::Complete(result)) => result
            .structured_content
            .as_ref()
            .and_then(|v| v.pointer("/error/code"))
            .and_then(serde_json::Value::as_str)
            .unwrap_or("none")
            .to_owned(),
        Ok(_) => "none".to_owned(),
        Err(_) => code::SERVICE_UNAVAILABLE.to_owned(),
    }
}

fn unavailable(e: impl std::fmt::Display) -> McpError {
    tracing::warn!(error = %e, "a confirmation store call failed");
    McpError::internal_error("a platform service is unavailable", None)
}

fn invalid_state(why: &str) -> CallToolResponse {
    complete(Err(ToolError::new(
        code::INVALID_REQUEST_STATE,
        format!("This requestState is not valid ({why}); nothing was done. Call action_status to see where the proposal stands."),
    )
    .retryable(false)))
}

/// What a link-and-poll answer tells the client to do.
fn next_step(url: &str) -> String {
    format!(
        "Nothing has changed yet. Ask the person to open {url} and confirm or cancel there; only they can. Then call action_status to follow it."
    )
}

impl Gateway {
    /// `prepare_action` for `grant`, answered by era.
    pub(crate) async fn prepare_by_era(
        &self,
        grant: &Grant,
        caller: Option<&Caller>,
        header: Option<&str>,
        meta: Option<&RequestMetaObject>,
        mut request: CallToolRequestParams,
    ) -> Result<CallToolResponse, McpError> {
        let (Some(links), Some(caller)) = (&self.links, caller) else {
            return self.call_tool(grant, request).await;
        };
        if let Some(state) = request.request_state.take() {
            return self.measured_resume(grant, caller, &state).await;
        }
        let declared = match header {
            Some(v) if v == ProtocolVersion::V_2025_11_25.as_str() => links
                .url_elicitation(&caller.token_hash)
                .await
                .map_err(unavailable)?,
            _ => false,
        };
        // rmcp moves a request's `_meta` into its context (`meta`); a caller that left it
        // in the parameters is read the same way.
        let era = Era::of(request.meta.as_ref().or(meta), header, declared);
        let answer = self.answer_tool(grant, request).await?;
        let ToolAnswer::Sealed(sealed) = answer else {
            return Ok(CallToolResponse::Complete(answer.into_call_tool_result()));
        };
        let Some(action_id) = prepared_action_id(&sealed) else {
            return Ok(CallToolResponse::Complete(sealed.into_call_tool_result()));
        };
        let conversations = self.services.conversations.as_ref();
        let proposal =
            confirmation::active_proposal(conversations, &grant.principal, &grant.case, &action_id)
                .await
                .map_err(unavailable)?;
        let Some(proposal) = proposal else {
            // Replaced or settled in the meantime: the answer as it is.
            return Ok(CallToolResponse::Complete(sealed.into_call_tool_result()));
        };
        let created = confirmation::create_link(links.as_ref(), &proposal)
            .await
            .map_err(unavailable)?;
        let url = confirmation::page_url(&caller.origin, &created.id);
        let summary = proposal.summary.as_str();
        metrics::counter!("mcp_confirmation_links_total", "era" => format!("{era:?}")).increment(1);
        match era {
            Era::InputRequired => {
                let state = self.new_state(grant, &created.id, &created.link).await?;
                Ok(CallToolResponse::InputRequired(input_required(
                    &url,
                    summary,
                    proposal.action_id.as_str(),
                    Some(&state),
                )?))
            }
            Era::UrlElicitationError => Err(McpError::new(
                ErrorCode(URL_ELICITATION_REQUIRED),
                format!(
                    "The person must confirm this on the page at {url}; nothing changes until they do. Then call action_status."
                ),
                Some(json!({
                    "elicitations": [elicitation(&url, summary, proposal.action_id.as_str())],
                    // For `action_status` once the person answered.
                    "actionId": proposal.action_id.as_str(),
                })),
            )),
            Era::Link => Ok(complete(Success::data(PreparedAction {
                action_id: proposal.action_id.to_string(),
                operation: proposal.operation.to_string(),
                status: ProposalState::PendingConfirmation.as_str().into(),
                expires_at: proposal.expires_at.to_rfc3339(),
                confirmation_url: Some(url.clone()),
                summary: Some(summary.to_owned()),
                next: Some(next_step(&url)),
                result: None,
            }))),
        }
    }

    /// A fresh request state for `link`: bound to the grant, the proposal and both
    /// hashes, expiring with the proposal, spent once.
    async fn new_state(
        &self,
        grant: &Grant,
        link_id: &str,
        link: &countersign_domain::ports::ConfirmationLink,
    ) -> Result<String, McpError> {
        use base64::Engine as _;
        use rand::RngCore as _;
        let mut jti = [0u8; 16];
        rand::rng().fill_bytes(&mut jti);
        let state = RequestState {
            tid: grant.principal.tenant.to_string(),
            sub: grant.principal.user.to_string(),
            cid: grant.case.to_string(),
            aid: link.action_id.to_string(),
            lnk: link_id.to_owned(),
            sh: link.summary_hash.to_string(),
            ah: link.arguments_hash.to_string(),
            jti: base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(jti),
            exp: link.expires_at.unix_seconds(),
        };
        let key = self.token_key.state_key().await.map_err(unavailable)?;
        key.seal(&state).map_err(unavailable)
    }

    /// The retry of a 2026-07-28 client with `state`: where the proposal
    /// stands, never a confirmation.
    /// G-8: a retry with a `requestState` is a call too, measured with what it answered.
    async fn measured_resume(
        &self,
        grant: &Grant,
        caller: &Caller,
        text: &str,
    ) -> Result<CallToolResponse, McpError> {
        let started = std::time::Instant::now();
        let answer = self.resume(grant, caller, text).await;
        countersign_tools::registry::record_duration(
            "prepare_action",
            &answer_error_type(&answer),
            started,
        );
        answer
    }

    async fn resume(
        &self,
        grant: &Grant,
        caller: &Caller,
        text: &str,
    ) -> Result<CallToolResponse, McpError> {
        let Some(links) = &self.links else {
            return Ok(invalid_state("not issued here"));
        };
        // A client retrying a thousand times is bounded per conversation, before its state
        // is read (so a refused retry does not spend it): it may come back with it.
        if let Some(limited) = self.bound_retries(grant).await? {
            return Ok(limited);
        }
        let key = self.token_key.state_key().await.map_err(unavailable)?;
        let now = self.clock.now();
        let state = match key.open(text, now) {
            Ok(state) => state,
            Err(StateError::Expired) => return Ok(invalid_state("expired")),
            Err(StateError::Invalid) => return Ok(invalid_state("not issued by this server")),
        };
        let p = &grant.principal;
        if state.tid != p.tenant.as_str()
            || state.sub != p.user.as_str()
            || state.cid != grant.case.as_str()
        {
            return Ok(invalid_state("issued for another conversation"));
        }
        let exp = countersign_domain::time::Timestamp::from_unix_seconds(state.exp)
            .map_err(unavailable)?;
        if !links
            .spend_state(&state.jti, exp)
            .await
            .map_err(unavailable)?
        {
            return Ok(invalid_state("already used"));
        }
        let link = links
            .get_link(&confirmation::id_hash(&state.lnk))
            .await
            .map_err(unavailable)?
            .filter(|l| {
                l.action_id.as_str() == state.aid
                    && l.summary_hash.as_str() == state.sh
                    && l.arguments_hash.as_str() == state.ah
            });
        let Some(link) = link else {
            return Ok(invalid_state("its proposal is unknown"));
        };
        let standing = confirmation::standing(self.services.conversations.as_ref(), &link, now)
            .await
            .map_err(unavailable)?;
        let Some(standing) = standing else {
            return Ok(invalid_state("its conversation is gone"));
        };
        self.answer_standing(grant, caller, &state.lnk, &link, standing)
            .await
    }

    /// One retry of `grant`'s conversation spent, or the refusal when a client retries
    /// more than [`RETRIES_PER_MINUTE`] times a minute.
    async fn bound_retries(&self, grant: &Grant) -> Result<Option<CallToolResponse>, McpError> {
        let Some((limiter, _)) = &self.budget else {
            return Ok(None);
        };
        let bucket = format!("confirm-retry#{}", grant.case);
        let admission = limiter
            .take(
                &grant.principal.tenant,
                &bucket,
                RETRIES_PER_MINUTE,
                self.clock.now(),
            )
            .await
            .map_err(unavailable)?;
        Ok(match admission {
            Admission::Admitted => None,
            Admission::Limited { retry_after_secs } => {
                tracing::info!(case = %grant.case, retry_after_secs, "confirmation retries limited");
                Some(complete(Err(ToolError::new(
                    code::SERVICE_UNAVAILABLE,
                    format!("Too many retries for this confirmation; try again in {retry_after_secs} s. The person can still answer on the page."),
                )
                .details(json!({"retryAfterSeconds": retry_after_secs}))
                .retryable(true))))
            }
        })
    }

    async fn answer_standing(
        &self,
        grant: &Grant,
        caller: &Caller,
        link_id: &str,
        link: &countersign_domain::ports::ConfirmationLink,
        standing: Standing,
    ) -> Result<CallToolResponse, McpError> {
        let url = confirmation::page_url(&caller.origin, link_id);
        let fresh = self.new_state(grant, link_id, link).await?;
        let done = |status: ProposalState, next: Option<String>| {
            complete(Success::data(PreparedAction {
                action_id: link.action_id.to_string(),
                operation: link.operation.to_string(),
                status: status.as_str().into(),
                expires_at: standing.expires_at.to_rfc3339(),
                confirmation_url: None,
                summary: None,
                next,
                result: standing.result.clone(),
            }))
        };
        Ok(match standing.state {
            // Not answered yet: ask again, with a fresh state (the old one is spent).
            ProposalState::PendingConfirmation => {
                let summary = self.summary_of(link).await?;
                CallToolResponse::InputRequired(input_required(
                    &url,
                    &summary,
                    link.action_id.as_str(),
                    Some(&fresh),
                )?)
            }
            // Running now: come back shortly, with nothing to ask.
            ProposalState::Executing => {
                CallToolResponse::InputRequired(input_required_state_only(&fresh)?)
            }
            ProposalState::Unknown => done(
                ProposalState::Unknown,
                Some("The outcome is being checked with the company's system; call action_status to follow it.".into()),
            ),
            s @ (ProposalState::Completed | ProposalState::Failed | ProposalState::Conflict) => {
                done(s, None)
            }
            s @ (ProposalState::Cancelled | ProposalState::Expired | ProposalState::Superseded) => {
                complete(Err(ToolError::new(
                    code::NOT_CONFIRMED,
                    format!("The proposal was not confirmed ({}); nothing was done.", s.as_str()),
                )
                .details(json!({"state": s.as_str()}))
                .retryable(false)))
            }
        })
    }

    /// The literal summary of `link`'s proposal (the page shows the same bytes).
    async fn summary_of(
        &self,
        link: &countersign_domain::ports::ConfirmationLink,
    ) -> Result<String, McpError> {
        Ok(
            confirmation::summary(self.services.conversations.as_ref(), link)
                .await
                .map_err(unavailable)?
                .unwrap_or_default(),
        )
    }
}

/// The action id of a successful preparation's envelope.
fn prepared_action_id(sealed: &Sealed) -> Option<ActionId> {
    if sealed.is_error {
        return None;
    }
    let envelope = sealed.structured();
    let data = envelope.get("data")?;
    if data.get("status")?.as_str()? != ProposalState::PendingConfirmation.as_str() {
        return None;
    }
    ActionId::parse(data.get("actionId")?.as_str()?).ok()
}

/// A URL-mode elicitation of the page (the spec's `ElicitRequestURLParams`). Its id is
/// the action's: what `action_status` follows (a client's SDK may keep only the
/// elicitations of a -32042 error's data), and nothing that opens the page.
fn elicitation(url: &str, summary: &str, id: &str) -> serde_json::Value {
    json!({"mode": "url", "url": url, "message": summary, "elicitationId": id})
}

fn input_required(
    url: &str,
    summary: &str,
    id: &str,
    state: Option<&str>,
) -> Result<InputRequiredResult, McpError> {
    let mut result = json!({
        "resultType": "input_required",
        "inputRequests": {"countersign-confirmation": {
            "method": "elicitation/create",
            "params": elicitation(url, summary, id),
        }},
    });
    if let Some(state) = state {
        result["requestState"] = state.into();
    }
    serde_json::from_value(result).map_err(unavailable)
}

fn input_required_state_only(state: &str) -> Result<InputRequiredResult, McpError> {
    serde_json::from_value(json!({"resultType": "input_required", "requestState": state}))
        .map_err(unavailable)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// the elicitation answer is one rmcp reads as a URL-mode elicitation.
    #[test]
    fn x2_the_input_request_is_a_url_elicitation() {
        let r = input_required("https://a.example/confirm/x", "Move car", "x", Some("s")).unwrap();
        let v = serde_json::to_value(&r).unwrap();
        let params = &v["inputRequests"]["countersign-confirmation"]["params"];
        assert_eq!(params["mode"], "url");
        assert_eq!(params["url"], "https://a.example/confirm/x");
        assert_eq!(params["message"], "Move car");
        assert_eq!(v["requestState"], "s");
        assert_eq!(v["resultType"], "input_required");
    }

    /// an input request goes only to a client that declared URL elicitation.
    #[test]
    fn x2_only_a_client_that_declared_url_elicitation_is_asked() {
        let with = |caps: serde_json::Value| -> CallToolRequestParams {
            serde_json::from_value(json!({"name": "prepare_action", "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": caps,
            }}))
            .unwrap()
        };
        let url = with(json!({"elicitation": {"url": {}}}));
        assert_eq!(Era::of(url.meta.as_ref(), None, false), Era::InputRequired);
        let form = with(json!({"elicitation": {"form": {}}}));
        assert_eq!(Era::of(form.meta.as_ref(), None, true), Era::Link);
        assert_eq!(
            Era::of(None, Some("2025-11-25"), true),
            Era::UrlElicitationError
        );
        assert_eq!(Era::of(None, Some("2025-11-25"), false), Era::Link);
        assert_eq!(Era::of(None, Some("2025-06-18"), true), Era::Link);
    }
}
