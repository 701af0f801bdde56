//! `countersign erase`: R-2's erasure of a person, through the deployment's admin API. The
//! request is queued (N-3, decision 0062) and carried out by the erasure worker within
//! about a minute; this waits for the job and prints it, receipt included. The tenant's
//! admin key is read from `COUNTERSIGN_ADMIN_KEY`, never from an argument (shell history,
//! process lists).

use std::io::Write as _;
use std::time::Duration;

/// Erases `person` of `tenant` at the API `base` (the stack's `ApiUrl`), waiting at most
/// `wait` for the job to be done before printing where it stands.
pub(crate) async fn run(
    base: &str,
    tenant: &str,
    person: &str,
    wait: Duration,
) -> anyhow::Result<()> {
    let key = std::env::var("COUNTERSIGN_ADMIN_KEY")
        .map_err(|_| anyhow::anyhow!("set COUNTERSIGN_ADMIN_KEY to the tenant's admin key"))?;
    let url = format!(
        "{}/api/admin/tenants/{tenant}/erasures",
        base.trim_end_matches('/')
    );
    let http = reqwest::Client::new();
    let answer = http
        .post(&url)
        .bearer_auth(&key)
        .json(&serde_json::json!({ "person": person }))
        .send()
        .await?;
    let status = answer.status();
    let mut body: serde_json::Value = answer.json().await.unwrap_or_default();
    if status.is_success() {
        let id = body["jobId"].as_str().unwrap_or_default().to_owned();
        let started = std::time::Instant::now();
        while body["status"] != "done" && started.elapsed() < wait {
            tokio::time::sleep(Duration::from_secs(5)).await;
            body = http
                .get(format!("{url}/{id}"))
                .bearer_auth(&key)
                .send()
                .await?
                .json()
                .await
                .unwrap_or_default();
        }
    }
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &body)?;
    writeln!(out)?;
    anyhow::ensure!(status.is_success(), "the erasure was refused ({status})");
    Ok(())
}
