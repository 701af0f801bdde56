//! Each proof is consumed once: the `jti` is remembered until the proof expires;
//! and each action executes once (N-1): its `actionId` is claimed for good, so a second,
//! different proof for an action already executed (another `jti`) executes nothing.

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

    /// N-1: claims `action_id` of `tenant_id` for its one execution, for good (action ids
    /// are never reused, A-14). `Ok(true)` the first time, `Ok(false)` for every later call
    /// with the same pair. Keep it with your actions (a unique key), not beside them.
    async fn claim_action(
        &self,
        tenant_id: &str,
        action_id: &str,
    ) -> Result<bool, GuardUnavailable>;
}

/// An in-process guard: correct for one process; forgets on restart (a proof lives at most
/// 60 s, so a restart within that window reopens it — use a shared store in production).
#[derive(Debug, Default)]
pub struct InMemoryReplayGuard {
    seen: Mutex<HashMap<String, i64>>,
    claimed: Mutex<std::collections::HashSet<(String, String)>>,
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

    async fn claim_action(
        &self,
        tenant_id: &str,
        action_id: &str,
    ) -> Result<bool, GuardUnavailable> {
        let mut claimed = self.claimed.lock().map_err(|_| GuardUnavailable)?;
        Ok(claimed.insert((tenant_id.to_owned(), action_id.to_owned())))
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

    /// N-1: each action is claimed once, even concurrently; another tenant's action of the
    /// same id is its own.
    #[tokio::test]
    async fn n1_each_action_is_claimed_once_even_concurrently() {
        let guard = std::sync::Arc::new(InMemoryReplayGuard::default());
        let mut tasks = Vec::new();
        for _ in 0..32 {
            let g = guard.clone();
            tasks.push(tokio::spawn(
                async move { g.claim_action("t1", "act_1").await },
            ));
        }
        let mut firsts = 0;
        for t in tasks {
            if t.await.unwrap().unwrap() {
                firsts += 1;
            }
        }
        assert_eq!(firsts, 1);
        assert!(guard.claim_action("t2", "act_1").await.unwrap());
        assert!(!guard.claim_action("t1", "act_1").await.unwrap());
    }
}
