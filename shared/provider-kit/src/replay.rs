//! Each proof is consumed once: the `jti` is remembered until the proof expires.

use async_trait::async_trait;
use std::collections::HashMap;
use std::sync::Mutex;

/// The guard could not record the `jti`: treat the proof as not consumed and refuse.
#[derive(Debug, thiserror::Error)]
#[error("the replay guard is unavailable")]
pub struct GuardUnavailable;

/// Remembers consumed proofs. Implement it over the same store and transaction as the
/// execution itself when you can, so that "consumed" and "executed" cannot disagree.
#[async_trait]
pub trait ReplayGuard: Send + Sync {
    /// Records `jti` (valid until `exp`, seconds since the epoch). `Ok(true)` the first
    /// time, `Ok(false)` for every later call with the same `jti`.
    async fn consume(&self, jti: &str, exp: i64, now: i64) -> Result<bool, GuardUnavailable>;
}

/// An in-process guard: correct for one process; forgets on restart (a proof lives at most
/// 60 s, so a restart within that window reopens it — use a shared store in production).
#[derive(Debug, Default)]
pub struct InMemoryReplayGuard {
    seen: Mutex<HashMap<String, i64>>,
}

#[async_trait]
impl ReplayGuard for InMemoryReplayGuard {
    async fn consume(&self, jti: &str, exp: i64, now: i64) -> Result<bool, GuardUnavailable> {
        let mut seen = self.seen.lock().map_err(|_| GuardUnavailable)?;
        // Expired entries can go: their proofs are refused as expired anyway.
        seen.retain(|_, e| *e >= now - 60);
        if seen.contains_key(jti) {
            return Ok(false);
        }
        seen.insert(jti.to_owned(), exp);
        Ok(true)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_jti_is_consumed_once_even_concurrently() {
        let guard = std::sync::Arc::new(InMemoryReplayGuard::default());
        let mut tasks = Vec::new();
        for _ in 0..32 {
            let g = guard.clone();
            tasks.push(tokio::spawn(async move {
                g.consume("jti-1", 1_060, 1_000).await
            }));
        }
        let mut firsts = 0;
        for t in tasks {
            if t.await.unwrap().unwrap() {
                firsts += 1;
            }
        }
        assert_eq!(firsts, 1);
        assert!(guard.consume("jti-2", 1_060, 1_000).await.unwrap());
    }
}
