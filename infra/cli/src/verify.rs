//! O-2: `countersign verify-deployment --url BASE`: proves a deployed stack serves each
//! route as documented, publishes exactly the keys KMS returns for the key ring, and (given
//! a widget token of a synthetic tenant) answers a person's message end to end. Prints one
//! line per check; the caller exits non-zero when any failed.

use countersign_aws::AwsSettings;
use countersign_domain::ports::ProofSigner as _;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::io::Write;

/// What a check saw: `Ok` with a detail, or `Err` with what is wrong.
type Seen = Result<String, String>;

/// One documented answer: method, path, body, the status it must have, and what the body
/// must hold.
struct Route {
    method: &'static str,
    path: &'static str,
    body: Option<Value>,
    status: u16,
    holds: fn(&str) -> bool,
}

fn routes() -> [Route; 6] {
    [
        Route {
            method: "GET",
            path: "/.well-known/jwks.json",
            body: None,
            status: 200,
            holds: |b| b.contains("\"keys\""),
        },
        Route {
            method: "GET",
            path: "/.well-known/countersign-audit-keys.json",
            body: None,
            status: 200,
            holds: |b| b.contains("audit-checkpoint"),
        },
        Route {
            method: "GET",
            path: "/api/admin/tenants/ten_00000000000000000000000000/mcp",
            body: None,
            status: 401,
            holds: |b| b.contains("\"code\""),
        },
        Route {
            method: "POST",
            path: "/api/cases",
            body: None,
            status: 401,
            holds: |b| b.contains("\"code\""),
        },
        Route {
            method: "POST",
            path: "/mcp",
            body: Some(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})),
            status: 401,
            holds: |_| true,
        },
        Route {
            method: "GET",
            path: "/admin",
            body: None,
            status: 200,
            holds: |b| b.contains("<form"),
        },
    ]
}

/// Runs every check against `base` and prints each; `true` when all passed.
pub(crate) async fn run(
    base: &str,
    stream_url: Option<&str>,
    widget_jwt: Option<&str>,
    message: &str,
    sdk: &aws_config::SdkConfig,
    settings: &AwsSettings,
) -> anyhow::Result<bool> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(std::time::Duration::from_secs(30))
        .build()?;
    let base = base.trim_end_matches('/');
    let mut checks: Vec<(String, Seen)> = Vec::new();
    for r in routes() {
        let seen = route(&http, base, &r).await;
        checks.push((format!("route {} {}", r.method, r.path), seen));
    }
    checks.push((
        "jwks equals KMS".into(),
        jwks(&http, base, sdk, settings).await,
    ));
    match widget_jwt {
        Some(jwt) => {
            checks.push((
                "a synthetic person's message".into(),
                conversation(&http, base, jwt, message).await,
            ));
            checks.push((
                "the streamed answer (S-1)".into(),
                match stream_url {
                    Some(url) => streamed(&http, base, url.trim_end_matches('/'), jwt).await,
                    None => Err("not checked: give --stream-url (the StreamUrl output)".into()),
                },
            ));
            checks.push((
                "the person's MCP token at the gateway (X-5, X-1)".into(),
                mcp_token(&http, base, jwt).await,
            ));
        }
        None => checks.push((
            "a synthetic person's message".into(),
            Err("not checked: give --widget-jwt of a synthetic tenant's person".into()),
        )),
    }
    let mut out = std::io::stdout().lock();
    let mut all = true;
    for (name, seen) in &checks {
        match seen {
            Ok(detail) => writeln!(out, "ok    {name}: {detail}")?,
            Err(why) => {
                all = false;
                writeln!(out, "FAIL  {name}: {why}")?;
            }
        }
    }
    Ok(all)
}

async fn route(http: &reqwest::Client, base: &str, r: &Route) -> Seen {
    let url = format!("{base}{}", r.path);
    let mut req = match r.method {
        "POST" => http.post(&url),
        _ => http.get(&url),
    };
    if let Some(body) = &r.body {
        req = req
            .header("accept", "application/json, text/event-stream")
            .json(body);
    }
    let res = req.send().await.map_err(|e| format!("no answer: {e}"))?;
    let status = res.status().as_u16();
    let body = res.text().await.unwrap_or_default();
    if status != r.status {
        return Err(format!("answered {status}, documented {}", r.status));
    }
    if !(r.holds)(&body) {
        return Err(format!("answered {status} but not the documented body"));
    }
    Ok(format!("{status} as documented"))
}

/// The JWKS served must list exactly the keys KMS returns for the ring's ARNs.
async fn jwks(
    http: &reqwest::Client,
    base: &str,
    sdk: &aws_config::SdkConfig,
    settings: &AwsSettings,
) -> Seen {
    let served: Value = http
        .get(format!("{base}/.well-known/jwks.json"))
        .send()
        .await
        .map_err(|e| format!("no answer: {e}"))?
        .json()
        .await
        .map_err(|_| "the JWKS is not JSON".to_owned())?;
    let served: BTreeSet<String> = served["keys"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|k| k["kid"].as_str().map(str::to_owned))
        .collect();
    let published = settings
        .signer(sdk)
        .published_keys()
        .await
        .map_err(|e| format!("KMS or the key ring could not be read: {e}"))?;
    let vouched: BTreeSet<String> = published
        .keys
        .iter()
        .map(|k| k.key.key_id.clone())
        .collect();
    if served == vouched {
        Ok(format!("{} key(s), each vouched for by KMS", served.len()))
    } else {
        Err(format!(
            "served {served:?}, KMS vouches for {vouched:?} (a key published that KMS does not return, or one missing)"
        ))
    }
}

/// The synthetic person's (`jwt`) post to `url`, with the JSON `body` if any; `Err` when
/// nothing answered.
async fn post_as(
    http: &reqwest::Client,
    url: String,
    jwt: &str,
    body: Option<Value>,
) -> Result<reqwest::Response, String> {
    let mut post = http.post(url).bearer_auth(jwt);
    if let Some(body) = body {
        post = post.json(&body);
    }
    post.send().await.map_err(|e| format!("no answer: {e}"))
}

/// The JSON body of a `201 Created` answer; otherwise why not, naming the request
/// (`asked`) or what it made (`made`).
async fn created(res: reqwest::Response, asked: &str, made: &str) -> Result<Value, String> {
    if res.status().as_u16() != 201 {
        return Err(format!("{asked} answered {}", res.status().as_u16()));
    }
    res.json().await.map_err(|_| format!("{made} is not JSON"))
}

/// Opens a case for the synthetic person; its id.
async fn open_case(http: &reqwest::Client, base: &str, jwt: &str) -> Result<String, String> {
    let res = post_as(http, format!("{base}/api/cases"), jwt, None).await?;
    let case = created(res, "opening a case", "the case").await?;
    Ok(case["caseId"].as_str().ok_or("no caseId")?.to_owned())
}

/// S-1: the stream function's URL answers a post with NDJSON events: the stored messages,
/// then the end.
async fn streamed(http: &reqwest::Client, base: &str, stream_url: &str, jwt: &str) -> Seen {
    let id = open_case(http, base, jwt).await?;
    let url = format!("{stream_url}/api/cases/{id}/messages/stream");
    let body = json!({"content": "say checking the stream"});
    let res = post_as(http, url, jwt, Some(body)).await?;
    let status = res.status().as_u16();
    let ndjson = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-ndjson"));
    let body = res.text().await.unwrap_or_default();
    let events: Vec<Value> = body
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let stored = events.iter().filter(|e| e["type"] == "message").count();
    let ended = events.last().is_some_and(|e| e["type"] == "end");
    if status == 200 && ndjson && stored >= 2 && ended {
        Ok(format!(
            "{} events, {stored} messages stored, then the end",
            events.len()
        ))
    } else {
        Err(format!(
            "answered {status} (ndjson: {ndjson}) with {} events, {stored} messages, ended: {ended}",
            events.len()
        ))
    }
}

/// the person mints a token for a conversation, and the gateway lists the tools
/// for it, `prepare_action` among them.
async fn mcp_token(http: &reqwest::Client, base: &str, jwt: &str) -> Seen {
    let id = open_case(http, base, jwt).await?;
    let url = format!("{base}/api/cases/{id}/mcp-token");
    let res = post_as(http, url, jwt, Some(json!({"ttlSeconds": 60}))).await?;
    let minted = created(res, "minting", "the token").await?;
    let token = minted["token"].as_str().ok_or("no token")?;
    let res = http
        .post(format!("{base}/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .map_err(|e| format!("no answer: {e}"))?;
    let status = res.status().as_u16();
    let body: Value = res.json().await.unwrap_or(Value::Null);
    let names: Vec<&str> = body["result"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    if status == 200 && names.contains(&"prepare_action") {
        Ok(format!("{} tools listed for the token", names.len()))
    } else {
        Err(format!("the gateway answered {status} listing {names:?}"))
    }
}

/// A person of a synthetic tenant opens a conversation and sends `message`: the answer
/// must hold the assistant's reply.
async fn conversation(http: &reqwest::Client, base: &str, jwt: &str, message: &str) -> Seen {
    let id = open_case(http, base, jwt).await?;
    let url = format!("{base}/api/cases/{id}/messages");
    let res = post_as(http, url, jwt, Some(json!({"content": message}))).await?;
    let status = res.status().as_u16();
    let body: Value = res.json().await.unwrap_or(Value::Null);
    let reply = body["messages"]
        .as_array()
        .and_then(|m| m.iter().rev().find(|m| m["role"] == "assistant"));
    match (status, reply) {
        (200, Some(reply)) => match failure_in(reply) {
            None => Ok(format!("case {id} answered")),
            Some(why) => Err(format!("case {id} answered, but {why}")),
        },
        _ => Err(format!("the message answered {status} without a reply")),
    }
}

/// The platform's error codes a consultation's answer carries when it did not reach the
/// tenant's system (or its answer could not be read): a reply that shows one is not an
/// answered consultation.
const FAILURE_CODES: [&str; 4] = [
    "PROVIDER_UNAVAILABLE",
    "PROVIDER_CONTRACT_VIOLATION",
    "SERVICE_UNAVAILABLE",
    "INTERNAL_ERROR",
];

/// Why `reply` does not show an answered consultation: the platform's own notice (the
/// assistant unavailable), or a tool's error code in what the (synthetic tenant's
/// scripted) model relayed. A real model's prose cannot be read this way; the synthetic
/// tenant's scripted model relays the tool's answer as it is.
fn failure_in(reply: &Value) -> Option<String> {
    if reply["kind"] == "notice" {
        return Some("with the platform's notice, not an answer".to_owned());
    }
    let content = reply["content"].as_str().unwrap_or_default();
    FAILURE_CODES
        .iter()
        .find(|code| content.contains(*code))
        .map(|code| format!("its consultation failed ({code})"))
}
