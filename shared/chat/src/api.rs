//! The widget API (D-1): `POST /api/cases`, `GET /api/cases/{id}`,
//! `GET /api/cases/{id}/messages`, `POST /api/cases/{id}/messages` (and its streamed twin
//! `…/messages/stream`, S-1, at the end of this file), `POST /api/cases/{id}/close`.
//!
//! Every request carries `Authorization: Bearer <widget JWT>` (D-2), read by the
//! [`WidgetPrincipal`] extractor. Errors are `{"error": {"code", "message", "field"?}}`:
//! 401 `UNAUTHORIZED`, 404 `NOT_FOUND` (also another person's case), 409 `CASE_CLOSED` /
//! `ACTION_IN_PROGRESS`, 400 `INVALID_JSON` / `VALIDATION_ERROR`, 413
//! `PAYLOAD_TOO_LARGE`, 503 `SERVICE_UNAVAILABLE`. Never internal text. The OpenAPI
//! document (`docs/widget-api.openapi.json`) is generated from these types ([`openapi`]).

use crate::service::{Chat, ChatError};
use crate::stream::{Event, Sink};
use crate::widget::{AuthError, WidgetAuth};
use axum::Router;
use axum::body::Body;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use countersign_domain::conversation::{CaseStatus, Message, MessageKind, Principal};
use countersign_domain::ids::{CaseId, MessageId};
use countersign_domain::ports::{NewMessage, ProposalOutcome};
use countersign_domain::texts::{self, Language};
use countersign_http::{ApiError, ErrorBody, GuardErrors, Json, Query, bearer};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::HashSet;
use std::sync::Arc;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;
use utoipa::OpenApi;

/// Largest request body.
pub const MAX_BODY_BYTES: usize = 32 * 1024;
/// Default page of `GET messages`.
pub const PAGE_DEFAULT: usize = 100;
/// Largest page.
pub const PAGE_MAX: usize = 500;

/// Every path the router serves.
pub const PATHS: [&str; 7] = [
    "/api/cases",
    "/api/cases/{id}/messages",
    "/api/cases/{id}/close",
    "/api/cases/{id}",
    STREAM_PATH,
    "/api/cases/{id}/mcp-token",
    "/api/cases/{id}/step-up",
];

/// Every route (method, path) the router serves: the SAM template and the OpenAPI
/// document are checked against it.
pub const ROUTES: [(&str, &str); 8] = [
    ("POST", PATHS[0]),
    ("GET", PATHS[1]),
    ("POST", PATHS[1]),
    ("POST", PATHS[2]),
    ("GET", PATHS[3]),
    ("POST", PATHS[4]),
    ("POST", PATHS[5]),
    ("POST", PATHS[6]),
];

/// The CORS preflights of the API's paths (decision 0025), answered by the function.
pub const PREFLIGHT_ROUTES: [(&str, &str); 7] = [
    ("OPTIONS", PATHS[0]),
    ("OPTIONS", PATHS[1]),
    ("OPTIONS", PATHS[2]),
    ("OPTIONS", PATHS[3]),
    ("OPTIONS", PATHS[4]),
    ("OPTIONS", PATHS[5]),
    ("OPTIONS", PATHS[6]),
];

/// Routes outside the API (not in its OpenAPI document): the widget SDK's files (W-1).
pub const ASSET_ROUTES: [(&str, &str); 1] = [("GET", crate::assets::ASSET_PATH)];

/// The router's state.
#[derive(Clone, Debug)]
pub struct AppState {
    /// The use cases.
    pub chat: Arc<Chat>,
    /// Widget identity.
    pub auth: Arc<WidgetAuth>,
}

impl From<ChatError> for ApiError {
    fn from(e: ChatError) -> Self {
        match e {
            ChatError::NotFound => ApiError::not_found("no such case"),
            ChatError::Closed => ApiError::conflict("CASE_CLOSED", "this case is closed"),
            ChatError::Busy => ApiError::conflict(
                "ACTION_IN_PROGRESS",
                "an action's outcome is still being checked; send a message to check it, then close",
            ),
            e @ ChatError::StepUpRequired => ApiError::conflict("STEP_UP_REQUIRED", e.to_string()),
            e @ ChatError::StepUpRefused(_) => ApiError::conflict("STEP_UP_REFUSED", e.to_string()),
            e @ ChatError::NoStepUpPending => {
                ApiError::conflict("NO_STEP_UP_PENDING", e.to_string())
            }
            ChatError::Invalid { field, message } => {
                ApiError::validation(field, format!("{field}: {message}"))
            }
            e @ (ChatError::RateLimited { retry_after_secs }
            | ChatError::PersonLimited {
                retry_after_secs, ..
            }) => ApiError::rate_limited(e.to_string(), retry_after_secs),
            ChatError::Unavailable(cause) => {
                ApiError::unavailable("a platform service is unavailable; try again", &cause)
            }
        }
    }
}

/// The person behind a request: a verified widget JWT (D-2). A handler that takes it
/// never runs for an unauthenticated request.
#[derive(Debug, Clone)]
pub struct WidgetPrincipal(pub Principal);

impl FromRequestParts<AppState> for WidgetPrincipal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let unauthorized = || ApiError::unauthorized("a valid widget token is required");
        let token = bearer(&parts.headers).ok_or_else(unauthorized)?;
        let origin = crate::cors::cross_origin(&parts.headers);
        match state.auth.authenticate_from(token, origin).await {
            // N-5: the tenant's own request budget, after the token and before anything
            // else (the model, the provider, the conversation's reads).
            Ok(p) => {
                state.chat.spend_request(&p).await.map_err(ApiError::from)?;
                Ok(Self(p))
            }
            Err(AuthError::Origin) => Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "ORIGIN_NOT_ALLOWED",
                "this widget credential may not be used from this web page's origin",
            )),
            Err(AuthError::Unavailable) => Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "SERVICE_UNAVAILABLE",
                "identity service unavailable; try again",
            )),
            Err(e) => {
                tracing::info!(reason = %e, "widget token refused");
                Err(unauthorized())
            }
        }
    }
}

/// The case id of the path (`/api/cases/{id}/…`); a malformed one is an absent case.
#[derive(Debug, Clone)]
pub struct CasePath(pub CaseId);

impl<S: Send + Sync> FromRequestParts<S> for CasePath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let not_found = || ApiError::not_found("no such case");
        let Path(id) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| not_found())?;
        CaseId::parse(id).map(Self).map_err(|_| not_found())
    }
}

/// `POST /api/cases/{id}/messages` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PostMessage {
    /// The person's text (1–4000 characters, not only spaces).
    #[schema(min_length = 1, max_length = 4000, pattern = "\\S")]
    pub content: String,
    /// The id of the last assistant message this tab rendered; required for a
    /// confirmation to count.
    #[serde(default)]
    #[schema(value_type = Option<String>, pattern = "^msg_[0-7][0-9A-HJKMNP-TV-Z]{25}$")]
    pub reply_to_message_id: Option<MessageId>,
}

/// `GET /api/cases/{id}/messages` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only messages after this message id (exclusive).
    #[param(value_type = Option<String>, pattern = "^msg_[0-7][0-9A-HJKMNP-TV-Z]{25}$")]
    pub after: Option<MessageId>,
    /// At most this many (1–500, default 100).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<usize>,
}

/// A message as the widget renders it. A proposal carries the fixed confirm/cancel
/// instructions as a separate field: its `content` is the summary, literally.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageView {
    /// The message id (time-ordered).
    pub id: String,
    /// `user` or `assistant`.
    pub role: String,
    /// `text`, `proposal`, `instructions`, `result` or `notice`.
    pub kind: String,
    /// The text, exactly as stored.
    pub content: String,
    /// RFC 3339.
    pub created_at: String,
    /// For a user message: the message it replied to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_to_message_id: Option<String>,
    /// For a proposal: the fixed confirm/cancel instructions in the case's language.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// How a response words its proposals' instructions: in the case's language, and, for the
/// one waiting proposal that needs the person's passkey, with a link to the confirmation
/// page (F-3) instead of "reply: confirm".
#[derive(Debug, Clone)]
struct Wording {
    lang: Language,
    passkey: Option<(countersign_domain::ids::MessageId, String)>,
}

impl Wording {
    /// `lang`, with the passkey link when one of `messages` presents the waiting passkey
    /// proposal: a link is made only then (one write, off the confirm path). `known`: the
    /// case's proposals as a history page read them, so a page whose proposals need no
    /// passkey (or are settled) costs nothing more.
    async fn of(
        chat: &Chat,
        (who, case): (&Principal, &CaseId),
        messages: &[Message],
        known: Option<&[ProposalView]>,
        lang: Language,
    ) -> Self {
        let waiting = |id: &countersign_domain::ids::MessageId| {
            known.is_none_or(|views| {
                views.iter().any(|v| {
                    v.needs_passkey
                        && v.state == "pending_confirmation"
                        && v.message_id == id.as_str()
                })
            })
        };
        let presented: Vec<&countersign_domain::ids::MessageId> = messages
            .iter()
            .filter(|m| m.kind == MessageKind::Proposal && waiting(&m.id))
            .map(|m| &m.id)
            .collect();
        let passkey = if presented.is_empty() {
            None
        } else {
            chat.step_up_link_for(who, case, &presented).await
        };
        Self { lang, passkey }
    }

    fn instructions(&self, m: &Message) -> Option<String> {
        (m.kind == MessageKind::Proposal).then(|| match &self.passkey {
            Some((id, url)) if *id == m.id => texts::passkey_instructions(self.lang, url),
            _ => texts::confirm_instructions(self.lang).to_owned(),
        })
    }
}

impl MessageView {
    fn new(m: &Message, wording: &Wording) -> Self {
        Self {
            id: m.id.to_string(),
            role: serde_name(&m.role),
            kind: serde_name(&m.kind),
            content: m.content.clone(),
            created_at: m.created_at.to_rfc3339(),
            reply_to_message_id: m.reply_to.as_ref().map(ToString::to_string),
            instructions: wording.instructions(m),
        }
    }
}

/// A domain enum's serde name (`assistant`, `proposal`, …), as the widget sees it.
fn serde_name<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Where one proposal stands (S-3), by the message that presented it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProposalView {
    /// The proposal message (`kind: proposal`) this is about.
    pub message_id: String,
    /// `pending_confirmation`, `executing`, `completed`, `failed`, `conflict`, `expired`,
    /// `cancelled`, `unknown` or `superseded`. A pending proposal past `expiresAt` is
    /// expired, whatever this says.
    pub state: String,
    /// RFC 3339.
    pub expires_at: String,
    /// N-6: present and `true` when this proposal replaced an earlier one (show it on the
    /// card): it can be confirmed only 5 s after it was first shown.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replaced_earlier: bool,
    /// F-1, F-3: present and `true` when confirming it needs the person's passkey: a typed
    /// `confirm` is refused (`409 STEP_UP_REQUIRED`); the card offers the confirmation page
    /// (`POST /api/cases/{id}/step-up`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub needs_passkey: bool,
    /// Issue 50: present and `true` when an app the person connected (an MCP client)
    /// prepared it rather than the chat's assistant: the card says so.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub prepared_outside: bool,
}

impl From<&ProposalOutcome> for ProposalView {
    fn from(o: &ProposalOutcome) -> Self {
        Self {
            message_id: o.presented.to_string(),
            state: o.state.as_str().to_owned(),
            expires_at: o.expires_at.to_rfc3339(),
            replaced_earlier: o.replaced,
            needs_passkey: o.needs_passkey,
            prepared_outside: o.prepared_outside,
        }
    }
}

/// Messages, in order: a page of the history, or what one posted message caused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Messages {
    /// The messages, oldest first.
    pub messages: Vec<MessageView>,
    /// Every proposal of the case as it stands now (S-3), oldest first: a proposal card
    /// shows its outcome and the time left. In a page of the history only (`GET`); the
    /// answer to a posted message leaves it out (it would cost the confirm path a read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposals: Option<Vec<ProposalView>>,
}

/// A case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CaseView {
    /// The case id.
    pub case_id: String,
    /// `open` or `closed`.
    pub status: String,
    /// RFC 3339, on creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// The language of the case's fixed texts (S-4): `en` or `pt-BR`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// The id of the case's newest message (S-2): an open widget reads the messages only
    /// when this changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_message_id: Option<String>,
    /// Issue 50: the tenant's accent (`#rrggbb`), on creation and when asked
    /// (`?include=welcome`); absent when the tenant set none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accent: Option<String>,
    /// Issue 50: the tenant's welcome in the case's language, on creation and when asked
    /// (`?include=welcome`); absent when the tenant wrote none (the widget's own applies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub welcome: Option<WelcomeView>,
}

/// What the widget shows before the person's first message (issue 50).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WelcomeView {
    /// The greeting.
    pub greeting: String,
    /// The assistant's name (the widget's title); empty: the widget's default.
    pub assistant_name: String,
    /// Up to four prompts the person sends with one click.
    pub starters: Vec<String>,
}

impl From<countersign_domain::appearance::Welcome> for WelcomeView {
    fn from(w: countersign_domain::appearance::Welcome) -> Self {
        Self {
            greeting: w.greeting,
            assistant_name: w.assistant_name,
            starters: w.starters,
        }
    }
}

/// `GET /api/cases/{id}` query (issue 50).
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CaseQuery {
    /// `welcome`: add the tenant's accent and welcome (a restored widget's first read;
    /// never the poll's).
    pub include: Option<CaseInclude>,
}

/// What `GET /api/cases/{id}` may add to the case (issue 50).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CaseInclude {
    /// The tenant's accent and welcome in the case's language.
    Welcome,
}

/// `POST /api/cases` body (optional).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateCase {
    /// The person's language (S-4); the tenant's default when absent.
    pub language: Option<LanguageTag>,
}

/// A language of the chat's fixed texts (S-4), as a BCP 47 tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, utoipa::ToSchema)]
pub enum LanguageTag {
    /// English.
    #[serde(rename = "en")]
    En,
    /// Brazilian Portuguese (`pt` is read as this too).
    #[serde(rename = "pt-BR", alias = "pt")]
    PtBr,
}

impl From<LanguageTag> for Language {
    fn from(tag: LanguageTag) -> Self {
        match tag {
            LanguageTag::En => Language::En,
            LanguageTag::PtBr => Language::Pt,
        }
    }
}

/// Opens a case for the person, in the language the body names or the tenant's.
#[utoipa::path(post, path = "/api/cases", tag = "cases", security(("widgetJwt" = [])),
    request_body(content = Option<CreateCase>, content_type = "application/json"),
    responses((status = 201, body = CaseView), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 429, body = ErrorBody, description = "This person opened too many conversations in the last minute (V-7); nothing was stored. `Retry-After` gives the seconds to wait.",
            headers(("Retry-After" = u64, description = "Seconds until the limit renews"))),
        (status = 503, body = ErrorBody)))]
async fn create_case(
    State(state): State<AppState>,
    WidgetPrincipal(who): WidgetPrincipal,
    body: axum::body::Bytes,
) -> Result<(StatusCode, Json<CaseView>), ApiError> {
    if body.len() > MAX_BODY_BYTES {
        let message = format!("the body must be at most {MAX_BODY_BYTES} bytes");
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "PAYLOAD_TOO_LARGE",
            message,
        ));
    }
    // The body is optional: absent (the widget 1.0.0 sends none) or `null`.
    let request: CreateCase = countersign_http::parse_optional_json(&body)?;
    let language = request.language.map(Language::from);
    let opened = state.chat.open_case(&who, language).await?;
    let view = CaseView {
        case_id: opened.case.id.to_string(),
        status: "open".into(),
        created_at: Some(opened.case.created_at.to_rfc3339()),
        language: Some(opened.language.tag().into()),
        last_message_id: None,
        accent: opened.accent,
        welcome: opened.welcome.map(WelcomeView::from),
    };
    Ok((StatusCode::CREATED, Json(view)))
}

/// The case: open or closed, its language, its newest message (S-2, S-3). What an open
/// widget polls: two small reads, however long the conversation.
#[utoipa::path(get, path = "/api/cases/{id}", tag = "cases", security(("widgetJwt" = [])),
    params(("id" = String, Path, description = "The case id"), CaseQuery),
    responses((status = 200, body = CaseView), (status = 400, body = ErrorBody), GuardErrors))]
async fn get_case(
    State(state): State<AppState>,
    WidgetPrincipal(who): WidgetPrincipal,
    CasePath(case): CasePath,
    Query(query): Query<CaseQuery>,
) -> Result<Json<CaseView>, ApiError> {
    let summary = state.chat.summary(&who, &case).await?;
    let (accent, welcome) = match query.include {
        Some(CaseInclude::Welcome) => state.chat.appearance(&who, summary.language).await?,
        None => (None, None),
    };
    Ok(Json(CaseView {
        case_id: summary.case.id.to_string(),
        status: match summary.case.status {
            CaseStatus::Open => "open",
            CaseStatus::Closed => "closed",
        }
        .into(),
        created_at: Some(summary.case.created_at.to_rfc3339()),
        language: Some(summary.language.tag().into()),
        last_message_id: summary.last_message.map(|m| m.to_string()),
        accent,
        welcome: welcome.map(WelcomeView::from),
    }))
}

/// The case's messages, oldest first, after a cursor.
#[utoipa::path(get, path = "/api/cases/{id}/messages", tag = "cases", security(("widgetJwt" = [])),
    params(("id" = String, Path, description = "The case id"), ListQuery),
    responses((status = 200, body = Messages), (status = 400, body = ErrorBody), GuardErrors))]
async fn list_messages(
    State(state): State<AppState>,
    WidgetPrincipal(who): WidgetPrincipal,
    CasePath(case): CasePath,
    Query(query): Query<ListQuery>,
) -> Result<Json<Messages>, ApiError> {
    let limit = countersign_http::page_limit(query.limit, PAGE_DEFAULT, PAGE_MAX)?;
    let (messages, lang) = state
        .chat
        .messages(&who, &case, query.after.as_ref(), limit)
        .await?;
    let proposals = proposal_views(&state, &who, &case).await?;
    let asked = (&who, &case);
    let wording = Wording::of(&state.chat, asked, &messages, Some(&proposals), lang).await;
    let messages = messages
        .iter()
        .map(|m| MessageView::new(m, &wording))
        .collect();
    let proposals = Some(proposals);
    Ok(Json(Messages {
        messages,
        proposals,
    }))
}

/// One message from the person, and everything it caused (the person's message first).
#[utoipa::path(post, path = "/api/cases/{id}/messages", tag = "cases", security(("widgetJwt" = [])),
    params(("id" = String, Path, description = "The case id")), request_body = PostMessage,
    responses((status = 200, body = Messages), (status = 400, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 429, body = ErrorBody, description = "The company's budget of answered messages is spent for now, or this person sent too many messages in the last minute (V-7); nothing was stored. `Retry-After` gives the seconds to wait.",
            headers(("Retry-After" = u64, description = "Seconds until the budget renews"))),
        GuardErrors))]
async fn post_message(
    State(state): State<AppState>,
    WidgetPrincipal(who): WidgetPrincipal,
    CasePath(case): CasePath,
    Json(body): Json<PostMessage, MAX_BODY_BYTES>,
) -> Result<Json<Messages>, ApiError> {
    let reply_to = body.reply_to_message_id;
    let (out, lang) = state
        .chat
        .post(&who, &case, &body.content, reply_to)
        .await?;
    let wording = Wording::of(&state.chat, (&who, &case), &out, None, lang).await;
    let messages = out.iter().map(|m| MessageView::new(m, &wording)).collect();
    // No `proposals` here: reading them would add a query to the confirm path (decision
    // 0007); a widget that needs the states reads them with `GET …/messages`.
    Ok(Json(Messages {
        messages,
        proposals: None,
    }))
}

/// Every proposal of the case as it stands (S-3), read after the request proved the case
/// is the person's.
async fn proposal_views(
    state: &AppState,
    who: &Principal,
    case: &CaseId,
) -> Result<Vec<ProposalView>, ApiError> {
    let outcomes = state.chat.proposal_outcomes(who, case).await?;
    Ok(outcomes.iter().map(ProposalView::from).collect())
}

/// Closes the case; a pending proposal is cancelled with it.
#[utoipa::path(post, path = "/api/cases/{id}/close", tag = "cases", security(("widgetJwt" = [])),
    params(("id" = String, Path, description = "The case id")),
    responses((status = 200, body = CaseView), (status = 409, body = ErrorBody), GuardErrors))]
async fn close_case(
    State(state): State<AppState>,
    WidgetPrincipal(who): WidgetPrincipal,
    CasePath(case): CasePath,
) -> Result<Json<CaseView>, ApiError> {
    state.chat.close(&who, &case).await?;
    Ok(Json(CaseView {
        case_id: case.to_string(),
        status: "closed".into(),
        created_at: None,
        language: None,
        last_message_id: None,
        accent: None,
        welcome: None,
    }))
}

/// `POST /api/cases/{id}/mcp-token` body (optional).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpTokenRequest {
    /// How long the token is valid, in seconds (60 to 900; default 900).
    #[schema(minimum = 60, maximum = 900)]
    #[serde(default, deserialize_with = "countersign_http::optional_whole_number")]
    pub ttl_seconds: Option<i64>,
}

/// A gateway token: shown this once.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpToken {
    /// The bearer token for `POST /mcp`, bound to this person and this conversation.
    pub token: String,
    /// When it stops being accepted (RFC 3339).
    pub expires_at: String,
    /// The MCP endpoint's path on this API's host.
    pub mcp_path: String,
}

/// a gateway token for this conversation, so that an MCP client (a remote model
/// runtime, the person's own agent) can reach `/mcp` for it as this person. Bounded
/// lifetime, recorded in the conversation's audit chain, spent from the person's message
/// budget; refused for a closed case.
#[utoipa::path(post, path = "/api/cases/{id}/mcp-token", tag = "cases", security(("widgetJwt" = [])),
    params(("id" = String, Path, description = "The case id")),
    request_body(content = Option<McpTokenRequest>, content_type = "application/json"),
    responses((status = 201, body = McpToken), (status = 400, body = ErrorBody), (status = 409, body = ErrorBody),
        (status = 429, body = ErrorBody), GuardErrors))]
async fn mint_mcp_token(
    State(state): State<AppState>,
    WidgetPrincipal(who): WidgetPrincipal,
    CasePath(case): CasePath,
    body: axum::body::Bytes,
) -> Result<axum::response::Response, ApiError> {
    // The body is optional: absent, or `null`.
    let request: McpTokenRequest = countersign_http::parse_optional_json(&body)?;
    let ttl = request
        .ttl_seconds
        .unwrap_or(countersign_tools::access::MAX_TTL_SECONDS);
    let (token, expires_at) = state.chat.mint_gateway_token(&who, &case, ttl).await?;
    let body = McpToken {
        token: token.expose().to_owned(),
        expires_at: expires_at.to_rfc3339(),
        mcp_path: "/mcp".into(),
    };
    // A bearer credential: no cache may keep it.
    Ok(created_no_store(body))
}

/// F-3: where the person confirms a passkey operation.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepUpLink {
    /// The platform's confirmation page for the waiting proposal (open it top-level, in a
    /// new tab: the passkey ceremony runs there, never inside the widget's frame).
    pub url: String,
    /// When the proposal (and the link) expires (RFC 3339).
    pub expires_at: String,
}

/// F-3: a link to the confirmation page for the case's waiting proposal that needs the
/// person's passkey. Each call makes a new link; the page signs the person in through the
/// tenant's sign-in first.
#[utoipa::path(post, path = "/api/cases/{id}/step-up", tag = "cases", security(("widgetJwt" = [])),
    params(("id" = String, Path, description = "The case id")),
    responses((status = 201, body = StepUpLink), (status = 409, body = ErrorBody), GuardErrors))]
async fn step_up_link(
    State(state): State<AppState>,
    WidgetPrincipal(who): WidgetPrincipal,
    CasePath(case): CasePath,
) -> Result<Response, ApiError> {
    let (url, expires_at) = state.chat.step_up_link(&who, &case).await?;
    Ok(created_no_store(StepUpLink {
        url,
        expires_at: expires_at.to_rfc3339(),
    }))
}

/// 201 with a body no cache may keep (a credential or a one-person link).
fn created_no_store(body: impl Serialize) -> Response {
    let no_store = [(header::CACHE_CONTROL, "no-store")];
    (StatusCode::CREATED, no_store, axum::Json(body)).into_response()
}

/// The widget API's OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    info(title = "Countersign widget API", version = "1",
        description = "The chat widget's API: cases and messages of one end user, authenticated by a widget JWT the tenant's backend signs (requirement IDs such as A-22 are explained in docs/requirements.md)."),
    paths(create_case, get_case, list_messages, post_message, post_message_stream, close_case, mint_mcp_token, step_up_link),
    components(schemas(ErrorBody, Messages, MessageView, ProposalView, CaseView, WelcomeView, CaseInclude, CreateCase, LanguageTag, PostMessage, McpTokenRequest, McpToken)),
    modifiers(&WidgetJwt)
)]
struct WidgetApi;

struct WidgetJwt;

impl utoipa::Modify for WidgetJwt {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        countersign_http::add_bearer_scheme(
            openapi,
            "widgetJwt",
            Some("JWT"),
            "A widget JWT (HS256) minted by the tenant's backend.",
        );
    }
}

/// The OpenAPI document of [`router`].
pub fn openapi() -> utoipa::openapi::OpenApi {
    WidgetApi::openapi()
}

/// The widget API router.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route(PATHS[0], post(create_case))
        .route(PATHS[1], get(list_messages).post(post_message))
        .route(PATHS[2], post(close_case))
        .route(PATHS[3], get(get_case))
        .route(PATHS[4], post(post_message_stream))
        .route(PATHS[5], post(mint_mcp_token))
        .route(PATHS[6], post(step_up_link))
        // S-4: error messages in Portuguese for a caller who prefers it (codes unchanged).
        .layer(axum::middleware::from_fn(
            countersign_http::language::localized_errors,
        ))
        .layer(axum::middleware::from_fn(crate::cors::cors))
        .route(crate::assets::ASSET_PATH, get(crate::assets::asset))
        .with_state(state)
}

/// N-5: the stream function's router — only the streamed post (with its CORS preflight),
/// the same middleware as [`router`]; every other path is a 404 answered before any I/O.
/// The stream function's public URL has no API Gateway throttle in front of it: it must
/// not serve the admin, erasure, certification, page or JWKS routes.
pub fn stream_router(state: AppState) -> Router {
    Router::new()
        .route(STREAM_PATH, post(post_message_stream))
        .layer(axum::middleware::from_fn(
            countersign_http::language::localized_errors,
        ))
        .layer(axum::middleware::from_fn(crate::cors::cors))
        .fallback(|| async { ApiError::not_found("no such route on the stream URL") })
        .with_state(state)
}

// ---------------------------------------------------------------------------------------
// S-1: `POST /api/cases/{id}/messages/stream` — the buffered post's twin that answers as
// it goes: newline-delimited JSON (`application/x-ndjson`), one event a line:
//
// - `{"type":"delta","text":…}`: a piece of the model's text, as generated (a draft: the
//   stored message that follows is the truth);
// - `{"type":"message","message":{…}}`: a message as stored (the person's first; a
//   proposal only ever as its stored presentation, never from model text, A-21);
// - `{"type":"end"}` once everything is stored, or `{"type":"error","error":{…}}`.
//
// Same authentication, CORS, budgets and turn deadline as the buffered route (the same
// use case runs); what fails before anything is stored answers as it does there (401,
// 404, 409, 429 …). The use case runs in its own task: a reader who drops the stream
// loses nothing, because what it stores stays stored and the widget re-reads it.

/// The path of the streamed post.
pub const STREAM_PATH: &str = "/api/cases/{id}/messages/stream";

type Posted = Result<(Vec<NewMessage>, Language), crate::ChatError>;

/// The handler. S-1: the same as posting a message, answered as it goes: newline-delimited JSON events
/// (`delta` with a piece of the model's text, `message` with each message as stored, then
/// `end`, or `error`). Through the HTTP API the events arrive together at the end; the
/// stream function's URL (template output `StreamUrl`) sends them as they happen.
#[utoipa::path(post, path = "/api/cases/{id}/messages/stream", tag = "cases", security(("widgetJwt" = [])),
    params(("id" = String, Path, description = "The case id")), request_body = PostMessage,
    responses((status = 200, content_type = "application/x-ndjson", body = String,
            description = "One JSON event a line: {\"type\":\"delta\",\"text\"}, {\"type\":\"message\",\"message\"}, {\"type\":\"end\"} or {\"type\":\"error\",\"error\"}."),
        (status = 400, body = ErrorBody), (status = 409, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 429, body = ErrorBody, description = "As for the buffered post; nothing was stored.",
            headers(("Retry-After" = u64, description = "Seconds until the budget renews"))),
        GuardErrors))]
async fn post_message_stream(
    State(state): State<AppState>,
    WidgetPrincipal(who): WidgetPrincipal,
    CasePath(case): CasePath,
    Json(body): Json<PostMessage, MAX_BODY_BYTES>,
) -> Result<Response, ApiError> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let chat = state.chat.clone();
    let asked = (who.clone(), case.clone());
    let task: JoinHandle<Posted> = tokio::spawn(crate::stream::with_sink(Sink(tx), async move {
        chat.post(&who, &case, &body.content, body.reply_to_message_id)
            .await
    }));
    let (who, case) = asked;
    // Nothing happened yet: a refusal (closed case, spent budget …) is the buffered
    // route's answer, with its status.
    let Some(first) = rx.recv().await else {
        let (out, lang) = finished(task).await?;
        let wording = Wording::of(&state.chat, (&who, &case), &out, None, lang).await;
        return Ok(ndjson(Body::from(lines_of(
            &out,
            &wording,
            &HashSet::new(),
            true,
        ))));
    };
    let state = Streaming {
        chat: state.chat.clone(),
        who,
        case,
        pending: Some(first),
        rx,
        task: Some(task),
        seen: HashSet::new(),
    };
    Ok(ndjson(Body::from_stream(futures::stream::unfold(
        state, next_line,
    ))))
}

/// The use case's answer, or its refusal.
async fn finished(task: JoinHandle<Posted>) -> Result<(Vec<NewMessage>, Language), ApiError> {
    match task.await {
        Ok(posted) => posted.map_err(ApiError::from),
        Err(_) => Err(ApiError::unavailable(
            "the message could not be handled; read the conversation again",
            &"the streamed post's task failed",
        )),
    }
}

struct Streaming {
    chat: Arc<Chat>,
    who: Principal,
    case: CaseId,
    pending: Option<Event>,
    rx: UnboundedReceiver<Event>,
    task: Option<JoinHandle<Posted>>,
    /// Messages already sent.
    seen: HashSet<String>,
}

/// The next lines of the stream: an event as it comes, then, once the use case is done,
/// every message it stored that was not sent yet (with the case's language: a proposal's
/// instructions) and the end.
async fn next_line(
    mut s: Streaming,
) -> Option<(Result<String, std::convert::Infallible>, Streaming)> {
    let event = match s.pending.take() {
        Some(e) => Some(e),
        None => s.rx.recv().await,
    };
    if let Some(event) = event {
        let line = match event {
            Event::Delta(text) => line(&json!({"type": "delta", "text": text})),
            // A proposal is sent with its instructions, from the use case's answer.
            Event::Stored(m) if m.kind == MessageKind::Proposal => String::new(),
            Event::Stored(m) => {
                s.seen.insert(m.id.to_string());
                let plain = Wording {
                    lang: Language::En,
                    passkey: None,
                };
                message_line(&m, &plain)
            }
        };
        return Some((Ok(line), s));
    }
    let task = s.task.take()?;
    let text = match finished(task).await {
        Ok((out, lang)) => {
            let wording = Wording::of(&s.chat, (&s.who, &s.case), &out, None, lang).await;
            lines_of(&out, &wording, &s.seen, true)
        }
        Err(e) => line(&json!({"type": "error", "error": e.body().error})),
    };
    Some((Ok(text), s))
}

/// The lines of `out`'s messages not in `seen`, then the end.
fn lines_of(out: &[NewMessage], wording: &Wording, seen: &HashSet<String>, end: bool) -> String {
    let mut text: String = out
        .iter()
        .filter(|m| !seen.contains(m.id.as_str()))
        .map(|m| message_line(m, wording))
        .collect();
    if end {
        text.push_str(&line(&json!({"type": "end"})));
    }
    text
}

fn message_line(m: &NewMessage, wording: &Wording) -> String {
    line(&json!({"type": "message", "message": MessageView::new(m, wording)}))
}

fn line(v: &serde_json::Value) -> String {
    let mut s = v.to_string();
    s.push('\n');
    s
}

/// A streamed answer: not buffered by a proxy, not cached.
fn ndjson(body: Body) -> Response {
    let mut r = body.into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::HeaderName::from_static("x-accel-buffering"),
        HeaderValue::from_static("no"),
    );
    r
}
