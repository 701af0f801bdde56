//! The platform's keys from its JWKS URL (K-2): fetched on first use, kept for the
//! document's `Cache-Control: max-age` (at most [`Jwks::with_max_age`]), fetched again
//! when a proof names a `kid` the cache does not know — at most once per
//! [`Jwks::with_min_refresh`] interval, so a stream of made-up `kid`s cannot make your
//! server hammer the platform.
//!
//! Only RSA keys for signatures (`kty: RSA`, `alg` RS256 or absent, `use` sig or absent)
//! whose `kid` is their RFC 7638 thumbprint are kept: the platform names its keys that
//! way, and a key labelled otherwise is not one of its keys. When a fetch fails the keys
//! already known are kept (a key leaves the JWKS only after every proof it signed has
//! expired, so an outdated set never accepts what a fresh one would refuse).

use crate::rejection::ProofRejection;
use countersign_domain::jwk::rsa_jwk_thumbprint;
use jsonwebtoken::DecodingKey;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// Default ceiling on how long a fetched set is kept.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(300);
/// Default floor between two fetches caused by unknown `kid`s.
pub const DEFAULT_MIN_REFRESH: Duration = Duration::from_secs(10);
/// How long one fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest JWKS document read.
const MAX_DOCUMENT_BYTES: usize = 64 * 1024;

/// Why the JWKS could not be read.
#[derive(Debug, thiserror::Error)]
pub enum JwksError {
    /// The request failed or timed out.
    #[error("the JWKS could not be fetched: {0}")]
    Fetch(String),
    /// The answer was not `200` with a JWK Set (a redirect is not followed).
    #[error("the JWKS answer is not a JWK Set: {0}")]
    Document(String),
    /// The URL is not `https` (plain `http` only on a loopback host, for development).
    #[error("the JWKS URL must be https (http only on localhost, 127.0.0.1 or [::1]): {0}")]
    Insecure(String),
}

/// Whether keys may be fetched from `url`: `https`, or `http` on a loopback host.
fn secure(url: &str) -> bool {
    let Ok(u) = reqwest::Url::parse(url) else {
        return false;
    };
    match u.scheme() {
        "https" => true,
        "http" => matches!(u.host_str(), Some("localhost" | "127.0.0.1" | "[::1]")),
        _ => false,
    }
}

#[derive(Default)]
struct Cache {
    keys: Arc<HashMap<String, DecodingKey>>,
    fetched_at: Option<Instant>,
    ttl: Duration,
    last_attempt: Option<Instant>,
    /// The last fetch failed: a stale set no longer bypasses the floor (a platform that
    /// is down is not asked on every proof).
    last_failed: bool,
}

/// A JWKS URL and what was last read from it. Share one per process (it is cheap to
/// keep and its cache is the point).
pub struct Jwks {
    url: String,
    http: reqwest::Client,
    max_age: Duration,
    min_refresh: Duration,
    cache: RwLock<Cache>,
    fetching: tokio::sync::Mutex<()>,
}

countersign_domain::debug_showing!(Jwks {
    url,
    max_age,
    min_refresh
});

fn read(lock: &RwLock<Cache>) -> std::sync::RwLockReadGuard<'_, Cache> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write(lock: &RwLock<Cache>) -> std::sync::RwLockWriteGuard<'_, Cache> {
    lock.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Jwks {
    /// The platform's JWKS, e.g. `https://support.example.com/.well-known/jwks.json`.
    /// It must be `https` (`http` is accepted on a loopback host, for development only):
    /// any other URL is never fetched, and proofs under keys not installed by hand are
    /// refused as "keys unavailable". Redirects are not followed.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            http: reqwest::Client::builder()
                .timeout(FETCH_TIMEOUT)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap_or_default(),
            max_age: DEFAULT_MAX_AGE,
            min_refresh: DEFAULT_MIN_REFRESH,
            cache: RwLock::new(Cache::default()),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    /// Keeps a fetched set at most this long, whatever its `max-age` says.
    pub fn with_max_age(mut self, max_age: Duration) -> Self {
        self.max_age = max_age;
        self
    }

    /// At most one fetch per `interval` because of unknown `kid`s.
    pub fn with_min_refresh(mut self, interval: Duration) -> Self {
        self.min_refresh = interval;
        self
    }

    /// The cached key `kid`, without fetching (even when the set is stale).
    pub(crate) fn cached(&self, kid: &str) -> Option<DecodingKey> {
        read(&self.cache).keys.get(kid).cloned()
    }

    /// Every `kid` known now.
    pub fn known_kids(&self) -> Vec<String> {
        let mut kids: Vec<String> = read(&self.cache).keys.keys().cloned().collect();
        kids.sort();
        kids
    }

    /// The key `kid`, fetching the set when it is stale, or when `kid` is unknown and
    /// the last fetch is older than the floor.
    pub(crate) async fn key(&self, kid: &str) -> Result<DecodingKey, ProofRejection> {
        if let Some(k) = self.fresh(kid) {
            return Ok(k);
        }
        // One fetch at a time; those who waited look at its result first.
        let _one = self.fetching.lock().await;
        if let Some(k) = self.fresh(kid) {
            return Ok(k);
        }
        let (stale, may_refetch) = {
            let c = read(&self.cache);
            let stale = c.fetched_at.is_none_or(|t| t.elapsed() >= c.ttl) && !c.last_failed;
            let may = c
                .last_attempt
                .is_none_or(|t| t.elapsed() >= self.min_refresh);
            (stale, may)
        };
        if stale || may_refetch {
            write(&self.cache).last_attempt = Some(Instant::now());
            match self.fetch().await {
                Ok((keys, ttl)) => {
                    let mut c = write(&self.cache);
                    c.keys = Arc::new(keys);
                    c.fetched_at = Some(Instant::now());
                    c.ttl = ttl;
                    c.last_failed = false;
                }
                Err(e) => {
                    write(&self.cache).last_failed = true;
                    tracing::warn!(url = %self.url, error = %e, "JWKS fetch failed; keeping the keys already known");
                    return self.cached(kid).ok_or(ProofRejection::KeysUnavailable);
                }
            }
        }
        // While the platform's last answer was a failure, an unknown kid may be a key it
        // could not tell us about: "unavailable", not "unknown".
        let failed = read(&self.cache).last_failed;
        self.cached(kid).ok_or(if failed {
            ProofRejection::KeysUnavailable
        } else {
            ProofRejection::UnknownKey
        })
    }

    /// `kid` from a set younger than its time to live.
    fn fresh(&self, kid: &str) -> Option<DecodingKey> {
        let c = read(&self.cache);
        let fresh = c.fetched_at.is_some_and(|t| t.elapsed() < c.ttl);
        fresh.then(|| c.keys.get(kid).cloned()).flatten()
    }

    async fn fetch(&self) -> Result<(HashMap<String, DecodingKey>, Duration), JwksError> {
        if !secure(&self.url) {
            return Err(JwksError::Insecure(self.url.clone()));
        }
        let answer = self
            .http
            .get(&self.url)
            .header(
                reqwest::header::ACCEPT,
                "application/jwk-set+json, application/json",
            )
            .send()
            .await
            .map_err(|e| JwksError::Fetch(e.to_string()))?;
        if answer.status() != reqwest::StatusCode::OK {
            return Err(JwksError::Document(format!("status {}", answer.status())));
        }
        let ttl = max_age(answer.headers())
            .unwrap_or(self.max_age)
            .min(self.max_age);
        let body = answer
            .bytes()
            .await
            .map_err(|e| JwksError::Fetch(e.to_string()))?;
        if body.len() > MAX_DOCUMENT_BYTES {
            return Err(JwksError::Document("larger than 64 KiB".into()));
        }
        Ok((parse(&body)?, ttl))
    }
}

/// `Cache-Control: max-age=N`, if given.
fn max_age(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::CACHE_CONTROL)?.to_str().ok()?;
    value.split(',').find_map(|d| {
        let d = d.trim();
        if d.eq_ignore_ascii_case("no-store") || d.eq_ignore_ascii_case("no-cache") {
            return Some(Duration::ZERO);
        }
        let secs = d.strip_prefix("max-age=")?.trim().parse::<u64>().ok()?;
        Some(Duration::from_secs(secs))
    })
}

/// The usable keys of a JWK Set document.
pub(crate) fn parse(body: &[u8]) -> Result<HashMap<String, DecodingKey>, JwksError> {
    let doc: Value =
        serde_json::from_slice(body).map_err(|_| JwksError::Document("not JSON".into()))?;
    // V-6: a document or key with a `purpose` (the platform's audit checkpoint keys) is
    // never a source of proof keys.
    if doc.get("purpose").is_some() {
        return Err(JwksError::Document(
            "a key set with a purpose (audit checkpoint keys) is not the proofs' JWKS".into(),
        ));
    }
    let keys = doc
        .get("keys")
        .and_then(Value::as_array)
        .ok_or_else(|| JwksError::Document("no keys array".into()))?;
    let mut out = HashMap::new();
    for k in keys {
        let text = |name: &str| k.get(name).and_then(Value::as_str);
        let usable = text("kty") == Some("RSA")
            && text("alg").is_none_or(|a| a == "RS256")
            && text("use").is_none_or(|u| u == "sig")
            && k.get("purpose").is_none();
        let (Some(kid), Some(n), Some(e), true) = (text("kid"), text("n"), text("e"), usable)
        else {
            continue;
        };
        if rsa_jwk_thumbprint(n, e) != kid {
            continue;
        }
        if let Ok(key) = DecodingKey::from_rsa_components(n, e) {
            out.insert(kid.to_owned(), key);
        }
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const N: &str = "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw";
    const KID: &str = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs";

    /// Only RSA signature keys named by their thumbprint are kept.
    #[test]
    fn k2_only_rs256_keys_named_by_their_thumbprint_are_kept() {
        let doc = serde_json::json!({"keys": [
            {"kty": "RSA", "alg": "RS256", "use": "sig", "kid": KID, "n": N, "e": "AQAB"},
            {"kty": "RSA", "kid": "not-its-thumbprint", "n": N, "e": "AQAB"},
            {"kty": "RSA", "alg": "RS512", "kid": KID, "n": N, "e": "AQAB"},
            {"kty": "RSA", "use": "enc", "kid": KID, "n": N, "e": "AQAB"},
            {"kty": "EC", "kid": "ec", "crv": "P-256", "x": "x", "y": "y"},
            {"kty": "RSA", "n": N, "e": "AQAB"},
        ]});
        let keys = parse(doc.to_string().as_bytes()).unwrap();
        assert_eq!(keys.keys().collect::<Vec<_>>(), [KID]);
        assert!(parse(b"[]").is_err());
        assert!(parse(b"not json").is_err());
        assert!(parse(br#"{"keys": []}"#).unwrap().is_empty());
    }

    /// V-6: the platform's audit checkpoint key is never a proof key: a key marked with a
    /// purpose is left out, and a document marked so is refused whole.
    #[test]
    fn v6_audit_checkpoint_keys_are_never_proof_keys() {
        let marked = serde_json::json!({"keys": [
            {"kty": "RSA", "alg": "RS256", "use": "sig", "kid": KID, "n": N, "e": "AQAB", "purpose": "audit-checkpoint"},
        ]});
        assert!(parse(marked.to_string().as_bytes()).unwrap().is_empty());
        let document = serde_json::json!({"purpose": "audit-checkpoint", "keys": [
            {"kty": "RSA", "alg": "RS256", "use": "sig", "kid": KID, "n": N, "e": "AQAB"},
        ]});
        assert!(parse(document.to_string().as_bytes()).is_err());
    }

    #[test]
    fn cache_control_max_age_is_read() {
        let mut h = reqwest::header::HeaderMap::new();
        assert_eq!(max_age(&h), None);
        h.insert(
            reqwest::header::CACHE_CONTROL,
            "public, max-age=120".parse().unwrap(),
        );
        assert_eq!(max_age(&h), Some(Duration::from_secs(120)));
        h.insert(reqwest::header::CACHE_CONTROL, "no-store".parse().unwrap());
        assert_eq!(max_age(&h), Some(Duration::ZERO));
    }
}
