//! S-1: what a streamed post tells the widget while it runs — the model's text as it is
//! generated, then each message as it is stored. The events go to the sink of the task
//! serving the request (a task-local, set by the streaming route only), so the use cases
//! report them without a sink threaded through every call; outside that route nothing is
//! sent.

use countersign_domain::ports::NewMessage;
use tokio::sync::mpsc::UnboundedSender;

/// One event of a streamed post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A piece of the model's text, as generated. Never a proposal: a proposal is only
    /// ever a stored message.
    Delta(String),
    /// A message, as stored.
    Stored(NewMessage),
}

/// Where the events of the request served by this task go.
#[derive(Debug, Clone)]
pub struct Sink(pub UnboundedSender<Event>);

tokio::task_local! {
    static SINK: Sink;
}

/// Runs `f` with its events sent to `sink`.
pub async fn with_sink<F: std::future::Future>(sink: Sink, f: F) -> F::Output {
    SINK.scope(sink, f).await
}

/// Sends `event` to this task's sink, if it has one (a closed sink is ignored: the person
/// stopped reading; what is stored stays stored).
pub(crate) fn emit(event: Event) {
    let _ = SINK.try_with(|sink| sink.0.send(event));
}

/// Whether this task streams (the model is then asked for its text as it comes).
pub(crate) fn streaming() -> bool {
    SINK.try_with(|_| ()).is_ok()
}
