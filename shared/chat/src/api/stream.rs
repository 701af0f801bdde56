//! S-1: the streamed post.

use super::*;

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
    params(CaseIdPath), request_body = PostMessage,
    responses((status = 200, content_type = "application/x-ndjson", body = String,
            description = "One JSON event a line: {\"type\":\"delta\",\"text\"}, {\"type\":\"message\",\"message\"}, {\"type\":\"end\"} or {\"type\":\"error\",\"error\"}."),
        (status = 400, body = ErrorBody), (status = 409, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 429, body = ErrorBody, description = "As for the buffered post; nothing was stored.",
            headers(("Retry-After" = u64, description = "Seconds until the budget renews"))),
        GuardErrors))]
pub(super) async fn post_message_stream(
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
