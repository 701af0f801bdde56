//! A DynamoDB that behaves like the real service where the emulator is kinder: an HTTP
//! proxy on loopback in front of moto that applies real DynamoDB's rules to the requests
//! passing through.
//!
//! - **Transaction conflicts**: a `TransactWriteItems` that touches (puts, updates,
//!   deletes or condition-checks) an item an in-flight transaction touches is cancelled
//!   with `TransactionConflict` (moto serialises requests and never does this). Each
//!   transaction is held in flight for `hold` before it is forwarded, as real transactions
//!   take milliseconds.
//! - **Client request tokens**: a token reused with other parameters is refused with
//!   `IdempotentParameterMismatchException`; a token reused with the same parameters after
//!   a commit is answered with success without applying anything again.
//! - **Lost answers**: the next N transactions are applied, and their answers replaced by
//!   a 500 (the SDK retries them; the token rule then answers the retries).
//! - **Throttling**: the next N transactions are refused with `ThrottlingException`
//!   (before the token rule: a throttled resend learns nothing).
//! - **Answers lost while running** (issue 27): the next N transactions are answered with
//!   a 500 at once and applied a little later; a resend under their token while they run
//!   is refused with `TransactionInProgressException`.
//! - **Requests lost on the way**: the next N transactions are answered with a 500 and
//!   never applied (their token stays unused).
//! - **Single-item writes** (`PutItem`, `UpdateItem`, `DeleteItem`) on an item an
//!   in-flight transaction touches are refused with `TransactionConflictException`.
//! - **Per-partition throughput** (issue 27): with [`Faulty::limit_partitions`], a write
//!   (a transaction, or a single-item write) that would take one partition key past its
//!   write units in the current window is refused with
//!   `ProvisionedThroughputExceededException`, as real DynamoDB refuses a partition past
//!   1,000 write units a second whatever the table's capacity. Each item a transaction
//!   touches (condition checks included) is one unit: the limit is real DynamoDB's scaled
//!   down.
//!
//! It counts what it did, and records what the client did that real DynamoDB would
//! punish: a token reused after a definite answer, an eventually consistent read.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the proxy did and saw.
#[derive(Debug, Default)]
pub struct Counters {
    /// Transactions cancelled for touching an item of an in-flight transaction.
    pub conflicts: AtomicUsize,
    /// Transactions forwarded to the emulator.
    pub forwarded: AtomicUsize,
    /// Answers replaced by a 500 after the transaction was applied.
    pub lost: AtomicUsize,
    /// Tokens reused with other parameters (refused).
    pub mismatches: AtomicUsize,
    /// Tokens reused after DynamoDB had answered them definitely (committed or cancelled).
    pub reused_after_answer: AtomicUsize,
    /// `Query` / `GetItem` requests without `ConsistentRead`.
    pub inconsistent_reads: AtomicUsize,
    /// Resends refused because their token's transaction was still running.
    pub in_progress: AtomicUsize,
    /// Transactions lost before they were applied.
    pub dropped: AtomicUsize,
    /// Single-item writes refused for touching an item of an in-flight transaction.
    pub item_conflicts: AtomicUsize,
    /// Writes refused for taking a partition key past its units.
    pub partition_throttles: AtomicUsize,
    /// The partition keys (`table|pk`) those writes would have taken past their units.
    pub hot_partitions: Mutex<HashSet<String>>,
}

/// Write units per partition key per window, and each key's use in its window.
#[derive(Debug, Default)]
struct PartitionLimit {
    units: usize,
    window: Duration,
    used: HashMap<String, (std::time::Instant, usize)>,
}

#[derive(Debug)]
struct TokenUse {
    /// The request without its token.
    params: Value,
    /// Whether a request under it committed.
    committed: bool,
    /// Whether the client was told the outcome (committed or cancelled).
    told: bool,
}

#[derive(Debug, Default)]
struct Shared {
    inflight: Mutex<HashMap<String, usize>>,
    tokens: Mutex<HashMap<String, TokenUse>>,
    lose_next: AtomicUsize,
    /// Every transaction's answer is lost, a refusal's too (N-1).
    lose_every_answer: std::sync::atomic::AtomicBool,
    throttle_next: AtomicUsize,
    detach_next: AtomicUsize,
    drop_next: AtomicUsize,
    throttle_resends: AtomicUsize,
    slow_next: AtomicUsize,
    /// I-2: the next requests of any kind get no answer for [`STALL`].
    stall_next: AtomicUsize,
    /// Tokens whose transaction is still running.
    running: Mutex<HashSet<String>>,
    partitions: Mutex<Option<PartitionLimit>>,
    counters: Counters,
}

/// The proxy: point a DynamoDB client at [`Faulty::url`].
pub struct Faulty {
    url: String,
    shared: Arc<Shared>,
}

#[derive(Clone)]
struct Ctx {
    shared: Arc<Shared>,
    upstream: String,
    http: reqwest::Client,
    hold: Duration,
}

impl Faulty {
    /// Starts a proxy to `upstream` (the emulator's URL) on a free loopback port.
    pub async fn start(upstream: &str, hold: Duration) -> Self {
        let shared = Arc::new(Shared::default());
        let ctx = Ctx {
            shared: shared.clone(),
            upstream: upstream.trim_end_matches('/').to_owned(),
            http: reqwest::Client::new(),
            hold,
        };
        let app = axum::Router::new()
            .fallback(axum::routing::post(handle))
            .with_state(ctx);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { url, shared }
    }

    /// The proxy's endpoint.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The counters.
    pub fn counters(&self) -> &Counters {
        &self.shared.counters
    }

    /// The next `n` transactions are applied and their answers lost.
    pub fn lose_next(&self, n: usize) {
        self.shared.lose_next.store(n, Ordering::SeqCst);
    }

    /// While on, every transaction's answer is lost — a definite refusal's too, as a
    /// broken connection loses whatever it carried: the client learns nothing.
    pub fn lose_every_answer(&self, on: bool) {
        self.shared.lose_every_answer.store(on, Ordering::SeqCst);
    }

    /// The next `n` transactions are refused with `ThrottlingException`.
    pub fn throttle_next(&self, n: usize) {
        self.shared.throttle_next.store(n, Ordering::SeqCst);
    }

    /// The next `n` transactions are answered with a 500 at once and applied after
    /// [`DETACHED_RUN`] (a resend meanwhile meets `TransactionInProgressException`).
    pub fn detach_next(&self, n: usize) {
        self.shared.detach_next.store(n, Ordering::SeqCst);
    }

    /// I-2: the next `n` requests, of any kind, are held unanswered for [`STALL`] (a
    /// stalled DynamoDB: the connection open, no answer).
    pub fn stall_next(&self, n: usize) {
        self.shared.stall_next.store(n, Ordering::SeqCst);
    }

    /// The next `n` transactions stay in flight for [`DETACHED_RUN`] instead of the usual
    /// hold (a slow transaction others run into).
    pub fn slow_next(&self, n: usize) {
        self.shared.slow_next.store(n, Ordering::SeqCst);
    }

    /// The next `n` resends (transactions under a token already seen) are refused with
    /// `ThrottlingException`.
    pub fn throttle_resends(&self, n: usize) {
        self.shared.throttle_resends.store(n, Ordering::SeqCst);
    }

    /// From now on, each partition key takes at most `units` item writes per `window`;
    /// a write past them is refused (`ProvisionedThroughputExceededException`).
    pub fn limit_partitions(&self, units: usize, window: Duration) {
        *self.shared.partitions.lock().unwrap() = Some(PartitionLimit {
            units,
            window,
            used: HashMap::new(),
        });
    }

    /// The next `n` transactions are lost before they reach DynamoDB: a 500, nothing
    /// applied.
    pub fn drop_next(&self, n: usize) {
        self.shared.drop_next.store(n, Ordering::SeqCst);
    }
}

/// How long a stalled request waits before its 500 (far past any client's timeout).
pub const STALL: Duration = Duration::from_secs(120);

/// How long a detached transaction keeps running after its client got its 500.
pub const DETACHED_RUN: Duration = Duration::from_millis(300);

/// Takes one from a countdown, if any is left.
fn take(counter: &AtomicUsize) -> bool {
    counter
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

fn error(status: StatusCode, kind: &str, extra: Value) -> Response {
    let mut body = json!({
        "__type": format!("com.amazonaws.dynamodb.v20120810#{kind}"),
        "message": kind,
    });
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    (
        status,
        [("content-type", "application/x-amz-json-1.0")],
        body.to_string(),
    )
        .into_response()
}

/// Whether writing `keys` (`table|pk|sk`) fits every partition's units; if so they are
/// counted, else nothing is and the hot partitions are recorded.
fn admit(s: &Shared, keys: &[String]) -> bool {
    let mut limit = s.partitions.lock().unwrap();
    let Some(limit) = limit.as_mut() else {
        return true;
    };
    let now = std::time::Instant::now();
    let mut wanted: HashMap<String, usize> = HashMap::new();
    for k in keys {
        let partition = k.rsplit_once('|').map_or(k.as_str(), |(p, _)| p);
        *wanted.entry(partition.to_owned()).or_default() += 1;
    }
    let (units, window) = (limit.units, limit.window);
    let over: Vec<String> = wanted
        .iter()
        .filter(|(p, n)| {
            let used = limit
                .used
                .get(*p)
                .filter(|(since, _)| now.duration_since(*since) < window)
                .map_or(0, |(_, u)| *u);
            used + **n > units
        })
        .map(|(p, _)| p.clone())
        .collect();
    if !over.is_empty() {
        s.counters
            .partition_throttles
            .fetch_add(1, Ordering::SeqCst);
        s.counters.hot_partitions.lock().unwrap().extend(over);
        return false;
    }
    for (p, n) in wanted {
        let slot = limit.used.entry(p).or_insert((now, 0));
        if now.duration_since(slot.0) >= window {
            *slot = (now, 0);
        }
        slot.1 += n;
    }
    true
}

fn throughput_exceeded() -> Response {
    error(
        StatusCode::BAD_REQUEST,
        "ProvisionedThroughputExceededException",
        json!({}),
    )
}

/// `table|pk|sk` of each item a transaction touches, in order.
fn touched(body: &Value) -> Vec<String> {
    let items = body["TransactItems"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    items
        .iter()
        .map(|op| {
            let (_, inner) = op.as_object().and_then(|o| o.iter().next()).unwrap();
            let key = inner.get("Key").or_else(|| inner.get("Item")).unwrap();
            format!(
                "{}|{}|{}",
                inner["TableName"], key["pk"]["S"], key["sk"]["S"]
            )
        })
        .collect()
}

async fn handle(State(ctx): State<Ctx>, headers: HeaderMap, body: Bytes) -> Response {
    let target = headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .rsplit('.')
        .next()
        .unwrap_or("")
        .to_owned();
    if take(&ctx.shared.stall_next) {
        tokio::time::sleep(STALL).await;
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            json!({}),
        );
    }
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let c = &ctx.shared.counters;
    match target.as_str() {
        "Query" | "GetItem" if json["ConsistentRead"] != Value::Bool(true) => {
            c.inconsistent_reads.fetch_add(1, Ordering::SeqCst);
        }
        "TransactWriteItems" => return transact(&ctx, headers, body, json).await,
        "PutItem" | "UpdateItem" | "DeleteItem" => {
            let key = json
                .get("Key")
                .or_else(|| json.get("Item"))
                .unwrap_or(&Value::Null);
            let k = format!(
                "{}|{}|{}",
                json["TableName"], key["pk"]["S"], key["sk"]["S"]
            );
            if ctx.shared.inflight.lock().unwrap().contains_key(&k) {
                c.item_conflicts.fetch_add(1, Ordering::SeqCst);
                return error(
                    StatusCode::BAD_REQUEST,
                    "TransactionConflictException",
                    json!({}),
                );
            }
            if !admit(&ctx.shared, std::slice::from_ref(&k)) {
                return throughput_exceeded();
            }
        }
        _ => {}
    }
    forward(&ctx, headers, body).await
}

async fn transact(ctx: &Ctx, headers: HeaderMap, body: Bytes, json: Value) -> Response {
    let s = &ctx.shared;
    let token = json["ClientRequestToken"].as_str().map(str::to_owned);
    if take(&s.drop_next) {
        s.counters.dropped.fetch_add(1, Ordering::SeqCst);
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            json!({}),
        );
    }
    let resend = token
        .as_ref()
        .is_some_and(|t| s.tokens.lock().unwrap().contains_key(t));
    if take(&s.throttle_next) || (resend && take(&s.throttle_resends)) {
        return error(StatusCode::BAD_REQUEST, "ThrottlingException", json!({}));
    }
    if !admit(s, &touched(&json)) {
        return throughput_exceeded();
    }
    if let Some(t) = &token
        && s.running.lock().unwrap().contains(t)
    {
        s.counters.in_progress.fetch_add(1, Ordering::SeqCst);
        return error(
            StatusCode::BAD_REQUEST,
            "TransactionInProgressException",
            json!({}),
        );
    }
    let answer = match token_rule(s, token.as_deref(), &json) {
        Some(early) => early,
        None if take(&s.detach_next) => return detach(ctx, headers, body, json, token),
        None => apply(ctx, headers, body, &json).await,
    };
    let committed = answer.status().is_success();
    let lost = (committed && take(&s.lose_next)) || s.lose_every_answer.load(Ordering::SeqCst);
    if let Some(t) = &token
        && let Some(u) = s.tokens.lock().unwrap().get_mut(t)
    {
        u.committed |= committed;
        u.told = !lost && answer.status() != StatusCode::INTERNAL_SERVER_ERROR;
    }
    if lost {
        s.counters.lost.fetch_add(1, Ordering::SeqCst);
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            json!({}),
        );
    }
    answer
}

/// Answers a 500 now and applies the transaction in the background for [`DETACHED_RUN`]
/// (its items in flight, its token running), recording its commit under its token.
fn detach(
    ctx: &Ctx,
    headers: HeaderMap,
    body: Bytes,
    json: Value,
    token: Option<String>,
) -> Response {
    let mut running = ctx.clone();
    running.hold = DETACHED_RUN;
    if let Some(t) = &token {
        ctx.shared.running.lock().unwrap().insert(t.clone());
    }
    tokio::spawn(async move {
        let answer = apply(&running, headers, body, &json).await;
        let s = &running.shared;
        if let Some(t) = &token {
            if let Some(u) = s.tokens.lock().unwrap().get_mut(t) {
                u.committed |= answer.status().is_success();
            }
            s.running.lock().unwrap().remove(t);
        }
    });
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "InternalServerError",
        json!({}),
    )
}

/// Real DynamoDB's idempotency rule for `token`: `Some` answers without applying.
fn token_rule(s: &Shared, token: Option<&str>, json: &Value) -> Option<Response> {
    let t = token?;
    let c = &s.counters;
    let mut params = json.clone();
    params.as_object_mut()?.remove("ClientRequestToken");
    let mut tokens = s.tokens.lock().unwrap();
    let Some(used) = tokens.get(t) else {
        tokens.insert(
            t.to_owned(),
            TokenUse {
                params,
                committed: false,
                told: false,
            },
        );
        return None;
    };
    if used.params != params {
        c.mismatches.fetch_add(1, Ordering::SeqCst);
        return Some(error(
            StatusCode::BAD_REQUEST,
            "IdempotentParameterMismatchException",
            json!({}),
        ));
    }
    if used.told {
        c.reused_after_answer.fetch_add(1, Ordering::SeqCst);
    }
    used.committed
        .then(|| (StatusCode::OK, "{}").into_response())
}

/// Applies the rule on conflicts, then forwards while holding the touched items.
async fn apply(ctx: &Ctx, headers: HeaderMap, body: Bytes, json: &Value) -> Response {
    let s = &ctx.shared;
    let keys = touched(json);
    {
        let mut inflight = s.inflight.lock().unwrap();
        let clash: Vec<bool> = keys.iter().map(|k| inflight.contains_key(k)).collect();
        if clash.iter().any(|c| *c) {
            s.counters.conflicts.fetch_add(1, Ordering::SeqCst);
            let reasons: Vec<Value> = clash
                .iter()
                .map(|c| {
                    if *c {
                        json!({"Code": "TransactionConflict", "Message": "Transaction is ongoing for the item"})
                    } else {
                        json!({"Code": "None"})
                    }
                })
                .collect();
            return error(
                StatusCode::BAD_REQUEST,
                "TransactionCanceledException",
                json!({"CancellationReasons": reasons}),
            );
        }
        for k in &keys {
            *inflight.entry(k.clone()).or_default() += 1;
        }
    }
    let held: HashSet<String> = keys.into_iter().collect();
    let hold = if take(&s.slow_next) {
        DETACHED_RUN
    } else {
        ctx.hold
    };
    tokio::time::sleep(hold).await;
    s.counters.forwarded.fetch_add(1, Ordering::SeqCst);
    let answer = forward(ctx, headers, body).await;
    let mut inflight = s.inflight.lock().unwrap();
    for k in &held {
        if let Some(n) = inflight.get_mut(k) {
            *n -= 1;
            if *n == 0 {
                inflight.remove(k);
            }
        }
    }
    answer
}

async fn forward(ctx: &Ctx, headers: HeaderMap, body: Bytes) -> Response {
    let mut req = ctx.http.post(format!("{}/", ctx.upstream)).body(body);
    for (name, value) in &headers {
        if name != "host" && name != "content-length" {
            req = req.header(name, value);
        }
    }
    match req.send().await {
        Ok(r) => {
            let status = StatusCode::from_u16(r.status().as_u16()).unwrap();
            let ct = r
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("application/x-amz-json-1.0")
                .to_owned();
            let bytes = r.bytes().await.unwrap_or_default();
            (status, [("content-type", ct)], bytes).into_response()
        }
        Err(_) => error(StatusCode::BAD_GATEWAY, "InternalServerError", json!({})),
    }
}
