//! The signing keys' lifecycle (K-1, K-2): which keys the JWKS publishes and the order in
//! which a key may be announced, start signing and be withdrawn, so that every proof ever
//! signed can be verified by a provider that follows the JWKS for as long as it is valid.
//!
//! ```text
//! announced ──activate──▶ active ──(next activation)──▶ previous ──retire──▶ retired
//!     └─────────────────────retire (never signed)───────────────────────────▶ retired
//! ```
//!
//! Timing rules (all in whole seconds):
//! - a key is activated only once every JWKS cache has had time to see it: `now ≥
//!   announced_at + cache_seconds`;
//! - a previous key is retired only once no proof it signed can still be accepted and no
//!   cache can still lack its successor: `now ≥ deactivated_at + retire_hold(cache)`, where
//!   the hold covers a signing process that has not yet noticed the switch
//!   ([`SIGNER_REFRESH_MAX_SECONDS`]), a proof's lifetime ([`crate::proof::MAX_LIFETIME_SECONDS`]),
//!   a provider's clock leeway ([`VERIFIER_LEEWAY_MAX_SECONDS`]) and the JWKS cache.

use crate::time::Timestamp;
use serde::{Deserialize, Serialize};

/// The longest a signing process keeps using the key it resolved before it looks again
/// (the messages function's refresh interval is clamped to it).
pub const SIGNER_REFRESH_MAX_SECONDS: i64 = 60;
/// The largest clock leeway a provider may allow (the provider kit clamps to it).
pub const VERIFIER_LEEWAY_MAX_SECONDS: i64 = 30;
pub use crate::ports::signer::DEFAULT_CACHE_SECONDS;

pub use crate::ports::signer::KeyStatus;

/// One signing key: its KMS identity and its state. No key material: what the JWKS
/// publishes for it is what KMS returns for its ARN (V-5), so writing the ring cannot
/// publish a key KMS does not hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RingKey {
    /// RFC 7638 thumbprint: the proofs' `kid`.
    pub kid: String,
    /// The KMS key ARN proofs are signed with (never an alias: an alias can move between
    /// reading the public key and signing).
    pub arn: String,
    /// Its state.
    pub status: KeyStatus,
    /// When it was announced (unix seconds).
    pub announced_at: i64,
    /// When it started signing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activated_at: Option<i64>,
    /// When it stopped signing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deactivated_at: Option<i64>,
    /// When it left the JWKS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired_at: Option<i64>,
}

/// The platform's signing keys and the JWKS cache time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyRing {
    /// `Cache-Control: max-age` of the JWKS, in seconds.
    pub cache_seconds: i64,
    /// Every key ever announced, oldest first.
    pub keys: Vec<RingKey>,
}

impl Default for KeyRing {
    fn default() -> Self {
        Self {
            cache_seconds: DEFAULT_CACHE_SECONDS,
            keys: Vec::new(),
        }
    }
}

/// A key as [`KeyRing::announce`] takes it: the thumbprint of the public key KMS returned
/// for the ARN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewKey {
    /// Thumbprint.
    pub kid: String,
    /// KMS ARN.
    pub arn: String,
}

/// Why a key ring change is refused. Nothing is changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RingError {
    /// No key with this `kid`.
    #[error("no key {0} in the key ring")]
    Unknown(String),
    /// The key was announced before (a retired key never comes back).
    #[error("key {0} is already in the key ring ({1})")]
    AlreadyKnown(String, &'static str),
    /// Another key is announced and not active yet: activate or retire it first.
    #[error("key {0} is already announced; activate or retire it before announcing another")]
    AnotherAnnounced(String),
    /// The change needs the key in another state.
    #[error("key {kid} is {status}; {need}")]
    WrongState {
        /// The key.
        kid: String,
        /// Its state.
        status: &'static str,
        /// What the change needs.
        need: &'static str,
    },
    /// Too early: caches or valid proofs could still need the old arrangement.
    #[error("too early: {why}; wait {wait_seconds} more seconds")]
    TooEarly {
        /// What is being waited for.
        why: &'static str,
        /// Seconds to wait.
        wait_seconds: i64,
    },
    /// The cache time is outside 0 ‥ 86 400 seconds.
    #[error("the JWKS cache time must be between 0 and 86400 seconds")]
    CacheTime,
}

impl KeyRing {
    /// The key that signs, if any.
    pub fn active(&self) -> Option<&RingKey> {
        self.keys.iter().find(|k| k.status == KeyStatus::Active)
    }

    /// The keys the JWKS lists: announced, active and previous ones.
    pub fn published(&self) -> impl Iterator<Item = &RingKey> {
        self.keys.iter().filter(|k| k.status.published())
    }

    /// The key with this `kid`.
    pub fn get(&self, kid: &str) -> Option<&RingKey> {
        self.keys.iter().find(|k| k.kid == kid)
    }

    fn get_mut(&mut self, kid: &str) -> Result<&mut RingKey, RingError> {
        self.keys
            .iter_mut()
            .find(|k| k.kid == kid)
            .ok_or_else(|| RingError::Unknown(kid.to_owned()))
    }

    /// How long a previous key stays published after it stopped signing.
    pub fn retire_hold_seconds(&self) -> i64 {
        SIGNER_REFRESH_MAX_SECONDS
            + crate::proof::MAX_LIFETIME_SECONDS
            + VERIFIER_LEEWAY_MAX_SECONDS
            + self.cache_seconds
    }

    /// Sets the JWKS cache time. Lowering it takes effect for new announcements and
    /// retirements at once; caches filled under the old value expire by it, so lower it
    /// only when no rotation is under way.
    pub fn set_cache_seconds(&mut self, seconds: i64) -> Result<(), RingError> {
        if !(0..=86_400).contains(&seconds) {
            return Err(RingError::CacheTime);
        }
        self.cache_seconds = seconds;
        Ok(())
    }

    /// Installs the first key directly as active (a new deployment: no provider can have
    /// cached anything yet). Refused when the ring already has a key.
    pub fn install_first(&mut self, key: NewKey, now: Timestamp) -> Result<(), RingError> {
        if let Some(k) = self.keys.first() {
            return Err(RingError::AlreadyKnown(k.kid.clone(), k.status.as_str()));
        }
        let at = now.unix_seconds();
        self.keys.push(RingKey {
            status: KeyStatus::Active,
            announced_at: at,
            activated_at: Some(at),
            ..ring_key(key, at)
        });
        Ok(())
    }

    /// Publishes a next key (it does not sign yet).
    pub fn announce(&mut self, key: NewKey, now: Timestamp) -> Result<(), RingError> {
        if let Some(k) = self.get(&key.kid) {
            return Err(RingError::AlreadyKnown(k.kid.clone(), k.status.as_str()));
        }
        if let Some(k) = self.keys.iter().find(|k| k.status == KeyStatus::Announced) {
            return Err(RingError::AnotherAnnounced(k.kid.clone()));
        }
        self.keys.push(ring_key(key, now.unix_seconds()));
        Ok(())
    }

    /// The announced key starts signing; the active one becomes previous (still
    /// published). Refused before every JWKS cache can have seen the new key.
    pub fn activate(&mut self, kid: &str, now: Timestamp) -> Result<(), RingError> {
        let now = now.unix_seconds();
        let cache = self.cache_seconds;
        let key = self.get_mut(kid)?;
        if key.status != KeyStatus::Announced {
            return Err(RingError::WrongState {
                kid: kid.to_owned(),
                status: key.status.as_str(),
                need: "only an announced key can be activated",
            });
        }
        let ready = key.announced_at + cache;
        if now < ready {
            return Err(RingError::TooEarly {
                why: "JWKS caches may not have the new key yet",
                wait_seconds: ready - now,
            });
        }
        key.status = KeyStatus::Active;
        key.activated_at = Some(now);
        for k in &mut self.keys {
            if k.status == KeyStatus::Active && k.kid != kid {
                k.status = KeyStatus::Previous;
                k.deactivated_at = Some(now);
            }
        }
        Ok(())
    }

    /// Withdraws a key from the JWKS: a previous key once its proofs can no longer be
    /// accepted anywhere, or an announced key that never signed. Never the active key.
    pub fn retire(&mut self, kid: &str, now: Timestamp) -> Result<(), RingError> {
        let now = now.unix_seconds();
        let hold = self.retire_hold_seconds();
        let key = self.get_mut(kid)?;
        match key.status {
            KeyStatus::Announced => {}
            KeyStatus::Previous => {
                let ready = key.deactivated_at.unwrap_or(now) + hold;
                if now < ready {
                    return Err(RingError::TooEarly {
                        why: "proofs it signed may still be valid or cached JWKS may still lack its successor",
                        wait_seconds: ready - now,
                    });
                }
            }
            status @ (KeyStatus::Active | KeyStatus::Retired) => {
                return Err(RingError::WrongState {
                    kid: kid.to_owned(),
                    status: status.as_str(),
                    need: "activate another key first; only an announced or previous key can be retired",
                });
            }
        }
        key.status = KeyStatus::Retired;
        key.retired_at = Some(now);
        Ok(())
    }
}

fn ring_key(key: NewKey, at: i64) -> RingKey {
    RingKey {
        kid: key.kid,
        arn: key.arn,
        status: KeyStatus::Announced,
        announced_at: at,
        activated_at: None,
        deactivated_at: None,
        retired_at: None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn key(i: u8) -> NewKey {
        NewKey {
            kid: format!("kid{i}"),
            arn: format!("arn:aws:kms:eu-west-1:1:key/{i}"),
        }
    }

    fn at(s: i64) -> Timestamp {
        Timestamp::from_unix_seconds(1_800_000_000 + s).unwrap()
    }

    fn ring() -> KeyRing {
        let mut r = KeyRing::default();
        r.set_cache_seconds(300).unwrap();
        r.install_first(key(1), at(0)).unwrap();
        r
    }

    fn statuses(r: &KeyRing) -> Vec<(&str, KeyStatus)> {
        r.keys.iter().map(|k| (k.kid.as_str(), k.status)).collect()
    }

    /// K-2: announce → (cache time) → activate → (hold) → retire; the JWKS lists the old
    /// key until the end and the new one from the start.
    #[test]
    fn k2_a_rotation_overlaps_both_keys() {
        let mut r = ring();
        r.announce(key(2), at(10)).unwrap();
        let published: Vec<_> = r.published().map(|k| k.kid.as_str()).collect();
        assert_eq!(published, ["kid1", "kid2"]);
        assert_eq!(
            r.active().unwrap().kid,
            "kid1",
            "announced keys do not sign"
        );

        assert_eq!(
            r.activate("kid2", at(309)),
            Err(RingError::TooEarly {
                why: "JWKS caches may not have the new key yet",
                wait_seconds: 1
            })
        );
        r.activate("kid2", at(310)).unwrap();
        assert_eq!(
            statuses(&r),
            [("kid1", KeyStatus::Previous), ("kid2", KeyStatus::Active)]
        );
        assert_eq!(r.published().count(), 2);

        let hold = r.retire_hold_seconds();
        assert_eq!(hold, 60 + 60 + 30 + 300);
        assert!(matches!(
            r.retire("kid1", at(310 + hold - 1)),
            Err(RingError::TooEarly {
                wait_seconds: 1,
                ..
            })
        ));
        r.retire("kid1", at(310 + hold)).unwrap();
        let published: Vec<_> = r.published().map(|k| k.kid.as_str()).collect();
        assert_eq!(published, ["kid2"]);
    }

    /// The CLI refuses every order that would leave a valid proof unverifiable.
    #[test]
    fn k2_orders_that_break_verification_are_refused() {
        let mut r = ring();
        // The active key is never retired; unknown keys are named.
        assert!(matches!(
            r.retire("kid1", at(10_000)),
            Err(RingError::WrongState { .. })
        ));
        assert_eq!(
            r.activate("nope", at(0)),
            Err(RingError::Unknown("nope".into()))
        );
        // Activating an active key, or one never announced.
        assert!(matches!(
            r.activate("kid1", at(10_000)),
            Err(RingError::WrongState { .. })
        ));
        // One announced key at a time; a key is announced once.
        r.announce(key(2), at(0)).unwrap();
        assert_eq!(
            r.announce(key(3), at(0)),
            Err(RingError::AnotherAnnounced("kid2".into()))
        );
        assert_eq!(
            r.announce(key(1), at(0)),
            Err(RingError::AlreadyKnown("kid1".into(), "active"))
        );
        // An announced key that never signed can be withdrawn at once.
        r.retire("kid2", at(1)).unwrap();
        assert_eq!(r.active().unwrap().kid, "kid1");
        // A retired key never comes back.
        assert_eq!(
            r.announce(key(2), at(2)),
            Err(RingError::AlreadyKnown("kid2".into(), "retired"))
        );
        assert!(matches!(
            r.activate("kid2", at(10_000)),
            Err(RingError::WrongState { .. })
        ));
        // Nothing refused changed anything.
        assert_eq!(
            statuses(&r),
            [("kid1", KeyStatus::Active), ("kid2", KeyStatus::Retired)]
        );
        assert_eq!(r.set_cache_seconds(-1), Err(RingError::CacheTime));
        assert_eq!(r.set_cache_seconds(86_401), Err(RingError::CacheTime));
        assert!(matches!(
            KeyRing::default().install_first(key(1), at(0)),
            Ok(())
        ));
        assert!(matches!(
            r.install_first(key(9), at(0)),
            Err(RingError::AlreadyKnown(..))
        ));
    }

    #[test]
    fn the_ring_round_trips_through_json() {
        let mut r = ring();
        r.announce(key(2), at(5)).unwrap();
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains("\"status\":\"announced\""));
        assert_eq!(serde_json::from_str::<KeyRing>(&text).unwrap(), r);
        // V-5: the item holds no key material; items written before carried some, which
        // is read past and never used.
        assert!(!text.contains("pem") && !text.contains("\"n\""), "{text}");
        let old = r#"{"cacheSeconds":300,"keys":[{"kid":"k1","arn":"arn:aws:kms:eu-west-1:1:key/1","n":"x","e":"AQAB","pem":"-----BEGIN","status":"active","announcedAt":1}]}"#;
        let old: KeyRing = serde_json::from_str(old).unwrap();
        assert_eq!(old.keys[0].arn, "arn:aws:kms:eu-west-1:1:key/1");
    }
}
