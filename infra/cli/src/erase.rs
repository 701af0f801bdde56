//! `countersign erase`: R-2's erasure of a person, through the deployment's admin API (the
//! receipt is signed with the checkpoint key, which only the messages function may use).
//! The tenant's admin key is read from `COUNTERSIGN_ADMIN_KEY`, never from an argument
//! (shell history, process lists). Prints the erasure's answer, receipt included.

use std::io::Write as _;

/// Erases `person` of `tenant` at the API `base` (the stack's `ApiUrl`).
pub(crate) async fn run(base: &str, tenant: &str, person: &str) -> anyhow::Result<()> {
    let key = std::env::var("COUNTERSIGN_ADMIN_KEY")
        .map_err(|_| anyhow::anyhow!("set COUNTERSIGN_ADMIN_KEY to the tenant's admin key"))?;
    let url = format!(
        "{}/api/admin/tenants/{tenant}/erasures",
        base.trim_end_matches('/')
    );
    let answer = reqwest::Client::new()
        .post(url)
        .bearer_auth(key)
        .json(&serde_json::json!({ "person": person }))
        .send()
        .await?;
    let status = answer.status();
    let body: serde_json::Value = answer.json().await.unwrap_or_default();
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &body)?;
    writeln!(out)?;
    anyhow::ensure!(status.is_success(), "the erasure was refused ({status})");
    Ok(())
}
