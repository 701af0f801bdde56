//! B-6: what the bridge costs, against the upstream called directly, on loopback.
//!
//!   cargo bench -p countersign-bridge --bench overhead
//!
//! One process: an upstream MCP server over Streamable HTTP (the retail shapes of the
//! bridge's tests, answering from memory, so the figures are the bridge's and not a
//! database's), the bridge in front of it (the HTTP upstream client, a SQLite file), and
//! one client that sends the same JSON-RPC `tools/call` POSTs to both. Reported:
//! - a consultation's latency, sequential (p50, p99), direct and through the bridge, for
//!   one without a guard (the bridge's own cost: token, headers, schema check, projection,
//!   one upstream call) and one with a guard (one lookup more);
//! - throughput with 16 concurrent callers, direct and through the bridge;
//! - a countersigned write's server-side time in the bridge: `prepare_action` (schema,
//!   guards, summary, store) and `execute_action` (proof verification, the claim, the
//!   upstream call, the record), called in process so the HTTP hop is not counted.
//!
//! A plain program (`harness = false`), not criterion: the figures wanted are percentiles
//! and a throughput ratio from one run, printed as a table for `docs/bridge.md`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::panic,
    missing_docs
)]

#[allow(dead_code, unreachable_pub)]
#[path = "../tests/bridge/fake.rs"]
mod fake;

use countersign_bridge::config::Config;
use countersign_bridge::store::sqlite::SqliteStore;
use countersign_bridge::upstream::{RmcpUpstream, Upstream as _};
use countersign_bridge::{Bridge, Settings};
use countersign_provider_kit::{Identity, Verifier};
use fake::Fake;
use rmcp::ErrorData as McpError;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const TRUSTED_KEY: &str = include_str!("../../shared/provider-kit/tests/keys/trusted.key.pem");
const TRUSTED_PUB: &str = include_str!("../../shared/provider-kit/tests/keys/trusted.pub.pem");
const ISS: &str = "https://support.example.com/mcp-actions";
const TOKEN: &str = "svc_bench";
const SEQUENTIAL: usize = 2_000;
const WARMUP: usize = 200;
const CONCURRENCY: usize = 16;
const WINDOW: Duration = Duration::from_secs(3);
const WRITES: usize = 300;

/// The upstream: the tests' stand-in served over Streamable HTTP.
#[derive(Clone)]
struct Server(Arc<Fake>);

impl ServerHandler for Server {
    fn get_info(&self) -> InitializeResult {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = self.0.tools().await.unwrap();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        use countersign_bridge::upstream::Upstream as _;
        let args = request.arguments.unwrap_or_default();
        let result = self.0.call(&request.name, args, None).await.unwrap();
        Ok(CallToolResponse::Complete(result))
    }
}

async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

async fn upstream(fake: Arc<Fake>) -> String {
    let cfg = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true);
    let service = StreamableHttpService::new(
        move || Ok(Server(fake.clone())),
        Arc::new(NeverSessionManager::default()),
        cfg,
    );
    serve(axum::Router::new().nest_service("/mcp", service)).await
}

/// The bridge over `upstream_url`, with the tests' configuration (HTTP upstream, one
/// consultation without a guard added); served, and kept for in-process calls.
async fn bridge(upstream_url: &str, dir: &std::path::Path) -> (String, Arc<Bridge>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let text = format!(
        "[upstream]\nurl = \"{upstream_url}\"\n\n{}",
        CONFIG.replace("[upstream]\ncommand = \"retail-server\"\n", "")
    );
    let config = Config::parse(&text).unwrap();
    let digest: String = countersign_domain::hash::Sha256Hex::digest(text.as_bytes()).into();
    let upstream = Arc::new(RmcpUpstream::new(
        config.upstream.clone(),
        Duration::from_secs(10),
    ));
    let store = Arc::new(SqliteStore::open(&dir.join("bench.db")).unwrap());
    let verifier = Verifier::new(ISS, url.clone())
        .with_key("kid-1", TRUSTED_PUB)
        .unwrap();
    let bridge = Arc::new(
        Bridge::start(
            config,
            digest,
            upstream,
            store,
            verifier,
            Settings::default(),
        )
        .await
        .unwrap(),
    );
    let app = countersign_bridge::serve::router(bridge.clone(), TOKEN);
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, bridge)
}

/// The tests' configuration, plus `get_user_details` without a guard.
const CONFIG: &str = r#"[upstream]
command = "retail-server"

[bind]
state_key = "ns-1"

[[consultation]]
tool = "get_order_details"
read_only = true
guards = ["order_is_the_persons"]
result = "parsed_content"

[[consultation]]
tool = "get_user_details"
read_only = true
result = "parsed_content"

[guard.order_is_the_persons]
lookup = { tool = "get_order_details", arguments = { order_id = "{order_id}" } }
field = "parsed_content.user_id"
equals = "{person}"

[[operation]]
name = "modify_user_address"
tool = "modify_user_address"
identity = { kind = "argument", name = "user_id" }
summary.en = "Move your address to {city}."
"#;

/// One endpoint as the platform calls it: a JSON-RPC `tools/call` POST with the
/// contract's headers (the direct upstream ignores them).
#[derive(Clone)]
struct Endpoint {
    http: reqwest::Client,
    url: String,
    bound: bool,
}

impl Endpoint {
    async fn call(&self, tool: &str, mut arguments: Value) {
        if !self.bound {
            // Called directly, the caller must send what the bridge binds.
            arguments["state_key"] = json!("ns-1");
        }
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        let res = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .bearer_auth(TOKEN)
            .header("x-mcp-tenant-id", "ten_1")
            .header("x-mcp-user-id", "alice")
            .header("x-mcp-conversation-id", "case_1")
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success(), "{}", res.status());
        let answer: Value = serde_json::from_slice(&res.bytes().await.unwrap()).unwrap();
        assert!(
            answer["result"]["isError"] != json!(true),
            "{tool}: {answer}"
        );
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// p50 and p99 of `SEQUENTIAL` calls after `WARMUP`.
async fn latency(e: &Endpoint, tool: &str, args: &Value) -> (Duration, Duration) {
    for _ in 0..WARMUP {
        e.call(tool, args.clone()).await;
    }
    let mut times = Vec::with_capacity(SEQUENTIAL);
    for _ in 0..SEQUENTIAL {
        let t = Instant::now();
        e.call(tool, args.clone()).await;
        times.push(t.elapsed());
    }
    times.sort();
    (percentile(&times, 0.5), percentile(&times, 0.99))
}

/// Calls per second with `CONCURRENCY` callers for `WINDOW`.
async fn throughput(e: &Endpoint, tool: &str, args: &Value) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + WINDOW;
    let workers: Vec<_> = (0..CONCURRENCY)
        .map(|_| {
            let (e, tool, args, done) = (e.clone(), tool.to_owned(), args.clone(), done.clone());
            tokio::spawn(async move {
                while Instant::now() < until {
                    e.call(&tool, args.clone()).await;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for w in workers {
        w.await.unwrap();
    }
    done.load(Ordering::Relaxed) as f64 / WINDOW.as_secs_f64()
}

fn sign(claims: &Value) -> String {
    use base64::Engine as _;
    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    let header = json!({"alg": "RS256", "typ": "support-action+jwt", "kid": "kid-1"});
    let input = format!("{}.{}", b64(&header), b64(claims));
    let key = jsonwebtoken::EncodingKey::from_rsa_pem(TRUSTED_KEY.as_bytes()).unwrap();
    let sig =
        jsonwebtoken::crypto::sign(input.as_bytes(), &key, jsonwebtoken::Algorithm::RS256).unwrap();
    format!("{input}.{sig}")
}

/// Where a consultation's time goes: the bridge's handling in process (no HTTP in front),
/// and the upstream client alone.
async fn breakdown(bridge: &Bridge, upstream_url: &str) {
    use countersign_bridge::upstream::Upstream as _;
    let who = Identity {
        tenant_id: "ten_1".into(),
        user_id: "alice".into(),
        conversation_id: "case_1".into(),
    };
    let client = RmcpUpstream::new(
        countersign_bridge::config::Upstream::Http {
            url: upstream_url.to_owned(),
        },
        Duration::from_secs(10),
    );
    let args = obj(json!({"user_id": "alice", "state_key": "ns-1"}));
    let mut times = [Vec::new(), Vec::new()];
    for i in 0..(WARMUP + SEQUENTIAL) {
        let t = Instant::now();
        client
            .call("get_user_details", args.clone(), None)
            .await
            .unwrap();
        let upstream = t.elapsed();
        let t = Instant::now();
        let args = obj(json!({"user_id": "alice"}));
        bridge
            .call(&who, "get_user_details", args, None, None)
            .await;
        let handled = t.elapsed();
        if i >= WARMUP {
            times[0].push(upstream);
            times[1].push(handled);
        }
    }
    let labels = [
        "  the upstream client alone (rmcp, HTTP)",
        "  the bridge's handling, in process",
    ];
    for (label, t) in labels.into_iter().zip(times.iter_mut()) {
        t.sort();
        println!(
            "{label:<44} {:>9.3} {:>9.3}",
            ms(percentile(t, 0.5)),
            ms(percentile(t, 0.99))
        );
    }
}

fn obj(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

/// p50 and p99 of `prepare_action` and of `execute_action`, in process.
async fn writes(bridge: &Bridge, aud: &str) -> [(Duration, Duration); 2] {
    let (mut prepare, mut execute) = (Vec::new(), Vec::new());
    for i in 0..WRITES {
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        let who = Identity {
            tenant_id: "ten_1".into(),
            user_id: "alice".into(),
            conversation_id: format!("case_{i}"),
        };
        let args = json!({"operation": "modify_user_address", "arguments": {"user_id": "alice", "city": format!("City {i}")}});
        let t = Instant::now();
        let r = bridge
            .call(&who, "prepare_action", obj(args), None, None)
            .await;
        prepare.push(t.elapsed());
        let p = countersign_bridge::upstream::result_json(&r);
        assert_eq!(p["status"], "pending_confirmation", "{p}");
        let proof = sign(&json!({
            "iss": ISS, "aud": aud, "sub": "alice", "tenantId": "ten_1",
            "conversationId": who.conversation_id, "actionId": p["actionId"],
            "operation": p["operation"], "argumentsHash": p["argumentsHash"],
            "summaryHash": p["summaryHash"], "messageId": "msg_2",
            "presentedMessageId": "msg_1", "jti": format!("jti-{i}"),
            "iat": now - 1, "exp": now + 55
        }));
        let args = obj(json!({"actionId": p["actionId"]}));
        let t = Instant::now();
        let r = bridge
            .call(&who, "execute_action", args, Some(&proof), None)
            .await;
        execute.push(t.elapsed());
        let e = countersign_bridge::upstream::result_json(&r);
        assert_eq!(e["status"], "completed", "{e}");
    }
    [&mut prepare, &mut execute].map(|v| {
        v.sort();
        (percentile(v, 0.5), percentile(v, 0.99))
    })
}

#[tokio::main]
async fn main() {
    let fake = Arc::new(Fake::retail());
    let dir = tempfile::tempdir().unwrap();
    let upstream_url = upstream(fake.clone()).await;
    let (bridge_url, bridge) = bridge(&upstream_url, dir.path()).await;
    let http = reqwest::Client::new();
    let direct = Endpoint {
        http: http.clone(),
        url: upstream_url.clone(),
        bound: false,
    };
    let bridged = Endpoint {
        http,
        url: bridge_url.clone(),
        bound: true,
    };
    println!(
        "B-6 overhead, loopback, {SEQUENTIAL} sequential calls after {WARMUP}; {CONCURRENCY} callers for {} s",
        WINDOW.as_secs()
    );
    println!(
        "{:<44} {:>9} {:>9} {:>11}",
        "", "p50 ms", "p99 ms", "calls/s"
    );
    for (label, tool, args) in [
        (
            "consultation without a guard",
            "get_user_details",
            json!({"user_id": "alice"}),
        ),
        (
            "consultation with a guard (1 lookup)",
            "get_order_details",
            json!({"order_id": "#W1"}),
        ),
    ] {
        let mut rows = Vec::new();
        for (side, e) in [("direct", &direct), ("through the bridge", &bridged)] {
            let (p50, p99) = latency(e, tool, &args).await;
            let rate = throughput(e, tool, &args).await;
            println!(
                "{:<44} {:>9.3} {:>9.3} {:>11.0}",
                format!("{label}, {side}"),
                ms(p50),
                ms(p99),
                rate
            );
            rows.push((p50, rate));
        }
        let overhead = ms(rows[1].0) - ms(rows[0].0);
        let ratio = rows[1].1 / rows[0].1 * 100.0;
        println!(
            "{:<44} p50 overhead {overhead:.3} ms; throughput {ratio:.0}% of direct",
            format!("{label}:")
        );
    }
    println!("consultation without a guard, sequential, broken down:");
    breakdown(&bridge, &upstream_url).await;
    let [prepare, execute] = writes(&bridge, &bridge_url).await;
    println!(
        "countersigned write, server side in the bridge ({WRITES} writes, SQLite file, HTTP upstream):"
    );
    println!(
        "{:<44} {:>9.3} {:>9.3}",
        "  prepare_action (schema, summary, store)",
        ms(prepare.0),
        ms(prepare.1)
    );
    println!(
        "{:<44} {:>9.3} {:>9.3}",
        "  execute_action (proof, claim, call, record)",
        ms(execute.0),
        ms(execute.1)
    );
}
