//! The widget API's handlers of one person's cases: open, read, list, post, close, and the
//! gateway token and step-up link (F-3) of a case.

use super::*;

/// Opens a case for the person, in the language the body names or the tenant's.
#[utoipa::path(post, path = "/api/cases", tag = "cases", security(("widgetJwt" = [])),
    request_body(content = Option<CreateCase>, content_type = "application/json"),
    responses((status = 201, body = CaseView), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
        (status = 429, body = ErrorBody, description = "This person opened too many conversations in the last minute (V-7); nothing was stored. `Retry-After` gives the seconds to wait.",
            headers(("Retry-After" = u64, description = "Seconds until the limit renews"))),
        (status = 503, body = ErrorBody)))]
pub(super) async fn create_case(
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
    params(CaseIdPath, CaseQuery),
    responses((status = 200, body = CaseView), (status = 400, body = ErrorBody), GuardErrors))]
pub(super) async fn get_case(
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
    params(CaseIdPath, ListQuery),
    responses((status = 200, body = Messages), (status = 400, body = ErrorBody), GuardErrors))]
pub(super) async fn list_messages(
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
    params(CaseIdPath), request_body = PostMessage,
    responses((status = 200, body = Messages), (status = 400, body = ErrorBody),
        (status = 409, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 429, body = ErrorBody, description = "The company's budget of answered messages is spent for now, or this person sent too many messages in the last minute (V-7); nothing was stored. `Retry-After` gives the seconds to wait.",
            headers(("Retry-After" = u64, description = "Seconds until the budget renews"))),
        GuardErrors))]
pub(super) async fn post_message(
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
pub(super) async fn proposal_views(
    state: &AppState,
    who: &Principal,
    case: &CaseId,
) -> Result<Vec<ProposalView>, ApiError> {
    let outcomes = state.chat.proposal_outcomes(who, case).await?;
    Ok(outcomes.iter().map(ProposalView::from).collect())
}

/// Closes the case; a pending proposal is cancelled with it.
#[utoipa::path(post, path = "/api/cases/{id}/close", tag = "cases", security(("widgetJwt" = [])),
    params(CaseIdPath),
    responses((status = 200, body = CaseView), (status = 409, body = ErrorBody), GuardErrors))]
pub(super) async fn close_case(
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

/// a gateway token for this conversation, so that an MCP client (a remote model
/// runtime, the person's own agent) can reach `/mcp` for it as this person. Bounded
/// lifetime, recorded in the conversation's audit chain, spent from the person's message
/// budget; refused for a closed case.
#[utoipa::path(post, path = "/api/cases/{id}/mcp-token", tag = "cases", security(("widgetJwt" = [])),
    params(CaseIdPath),
    request_body(content = Option<McpTokenRequest>, content_type = "application/json"),
    responses((status = 201, body = McpToken), (status = 400, body = ErrorBody), (status = 409, body = ErrorBody),
        (status = 429, body = ErrorBody), GuardErrors))]
pub(super) async fn mint_mcp_token(
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

/// F-3: a link to the confirmation page for the case's waiting proposal that needs the
/// person's passkey. Each call makes a new link; the page signs the person in through the
/// tenant's sign-in first.
#[utoipa::path(post, path = "/api/cases/{id}/step-up", tag = "cases", security(("widgetJwt" = [])),
    params(CaseIdPath),
    responses((status = 201, body = StepUpLink), (status = 409, body = ErrorBody), GuardErrors))]
pub(super) async fn step_up_link(
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
