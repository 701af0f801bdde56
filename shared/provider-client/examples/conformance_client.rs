//! E-3: the platform's provider client as the official MCP conformance suite's client
//! (`infra/conformance/conformance.py`). The suite starts one of its servers and runs this
//! command with the server's URL as the last argument and the scenario's name in
//! `MCP_CONFORMANCE_SCENARIO`; the suite itself checks what it received.
//!
//! - `initialize`: the handshake the client makes before a call that must be sent once
//!   ([`Provider::open`]), then `tools/list`.
//! - `tools_call`: `tools/list`, then `add_numbers` as the platform calls a consultation.
//! - `sse-retry`: a call whose event stream the server closes before the answer: the
//!   client resumes it with `GET` and `Last-Event-ID` after the server's `retry`.
//! - any other: what the platform does with any server, the handshake and `tools/list`
//!   with the tenant's service token (the scenarios that need more are excluded in
//!   `infra/conformance/scenarios.toml`, each with its reason).
//!
//! The suite serves on `localhost`; the client's address rule admits the loopback address
//! only as `127.0.0.1` (D-5), so the URL is given that way. What the client got goes to
//! standard error, which the suite keeps with the scenario's results.

#![allow(clippy::print_stderr)]

use countersign_domain::config::{ServerUrl, UrlPolicy};
use countersign_domain::ids::{CaseId, TenantId, UserId};
use countersign_domain::ports::{Provider, ProviderContext};
use countersign_domain::secret::SecretString;
use countersign_provider_client::{HttpProvider, Settings};
use serde_json::{Map, json};
use std::process::ExitCode;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance client: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    let url = std::env::args()
        .next_back()
        .ok_or("the server URL is the last argument")?;
    let url = url.replacen("://localhost:", "://127.0.0.1:", 1);
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let policy = UrlPolicy {
        allow_loopback_http: true,
    };
    let client = HttpProvider::new(Settings {
        url_policy: policy,
        ..Settings::default()
    })
    .map_err(|e| e.to_string())?;
    let ctx = ProviderContext {
        tenant: TenantId::parse("ten_01J00000000000000000000000").map_err(|e| e.to_string())?,
        user: UserId::parse("u_conformance").map_err(|e| e.to_string())?,
        conversation: CaseId::parse("case_01J00000000000000000000000")
            .map_err(|e| e.to_string())?,
        server_url: ServerUrl::parse(&url, policy).map_err(|e| format!("{url}: {e:?}"))?,
        service_token: SecretString::new("conformance-token"),
        config_version: 1,
        language: None,
    };
    match scenario.as_str() {
        "initialize" => {
            client.open(&ctx).await.map_err(|e| e.to_string())?;
            client.list_tools(&ctx).await.map_err(|e| e.to_string())?;
        }
        "tools_call" => {
            let tools = client.list_tools(&ctx).await.map_err(|e| e.to_string())?;
            eprintln!(
                "tools: {:?}",
                tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>()
            );
            let args: Map<_, _> = json!({"a": 2, "b": 3})
                .as_object()
                .cloned()
                .unwrap_or_default();
            let answer = client
                .call_tool(&ctx, "add_numbers", &args, None)
                .await
                .map_err(|e| e.to_string())?;
            eprintln!("add_numbers: {answer}");
        }
        "sse-retry" => {
            client.list_tools(&ctx).await.map_err(|e| e.to_string())?;
            let answer = client
                .call_tool(&ctx, "test_reconnection", &Map::new(), None)
                .await
                .map_err(|e| e.to_string())?;
            eprintln!("test_reconnection: {answer}");
        }
        // Any other scenario: what the platform does with any server — the handshake and
        // `tools/list`, with the tenant's service token and nothing else.
        _ => {
            client.open(&ctx).await.map_err(|e| e.to_string())?;
            client.list_tools(&ctx).await.map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}
