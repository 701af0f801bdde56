//! G-8 in the messages function (issue 17): the tool calls of a turn, proposals by outcome
//! and confirm latency are recorded. The recorder is this thread's (the tests run on
//! tokio's current-thread runtime), so parallel tests do not mix their metrics.

use crate::harness::H;
use countersign_domain::proposal::ProposalState;
use countersign_testkit::{Reply, action_answer};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

/// (name, its first label's value, count or number of samples). A snapshot drains what it
/// reads, so each test takes one.
fn seen(snapshotter: &Snapshotter) -> Vec<(String, String, u64)> {
    let mut seen: Vec<(String, String, u64)> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(k, _, _, v)| {
            let value = k
                .key()
                .labels()
                .next()
                .map(|l| l.value().to_owned())
                .unwrap_or_default();
            let n = match v {
                DebugValue::Counter(c) => c,
                DebugValue::Histogram(h) => h.len() as u64,
                DebugValue::Gauge(_) => 0,
            };
            (k.key().name().to_owned(), value, n)
        })
        .collect();
    seen.sort();
    seen
}

fn has(seen: &[(String, String, u64)], name: &str, value: &str, n: u64) -> bool {
    seen.iter()
        .any(|(k, v, c)| k == name && v == value && *c == n)
}

#[tokio::test]
async fn g8_a_confirmed_action_counts_its_outcome_its_latency_and_the_turns_tool_call() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _guard = metrics::set_default_local_recorder(&recorder);
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    h.provider.answer(
        "execute_action",
        Reply::Result(action_answer(action.as_str(), "completed", Some("Moved."))),
    );
    h.reply("confirm", &presented).await;
    assert_eq!(h.state(&action), ProposalState::Completed);
    let seen = seen(&snapshotter);
    assert!(has(&seen, "proposals_total", "executed", 1), "{seen:?}");
    assert!(
        has(&seen, "confirm_duration_seconds", "executed", 1),
        "{seen:?}"
    );
    assert!(
        has(&seen, "mcp_tool_duration_seconds", "prepare_action", 1),
        "{seen:?}"
    );
}

/// Failed, unknown, expired and cancelled, each in a fresh conversation. (`superseded` is
/// counted where a preparation replaces a pending proposal; in a chat a new message
/// discards the pending one first, so only a race reaches it.)
#[tokio::test]
async fn g8_unknown_failed_expired_and_cancelled_are_counted() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _guard = metrics::set_default_local_recorder(&recorder);
    let h = H::new().await;
    let (_, presented) = h.propose().await;
    h.provider.answer("execute_action", Reply::Timeout);
    h.reply("confirm", &presented).await;
    let h = H::new().await;
    let (action, presented) = h.propose().await;
    h.provider.answer(
        "execute_action",
        Reply::Result(action_answer(action.as_str(), "failed", Some("No."))),
    );
    h.reply("confirm", &presented).await;
    let h = H::new().await;
    let (_, presented) = h.propose().await;
    h.clock.advance_secs(241);
    h.reply("confirm", &presented).await;
    let h = H::new().await;
    let (_, presented) = h.propose().await;
    h.reply("cancel", &presented).await;
    let seen = seen(&snapshotter);
    assert!(
        has(&seen, "confirm_duration_seconds", "unknown", 1),
        "{seen:?}"
    );
    assert!(
        has(&seen, "confirm_duration_seconds", "failed", 1),
        "{seen:?}"
    );
    for outcome in ["unknown", "failed", "expired", "cancelled"] {
        assert!(
            has(&seen, "proposals_total", outcome, 1),
            "{outcome}: {seen:?}"
        );
    }
}
