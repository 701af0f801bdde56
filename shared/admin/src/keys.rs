//! Tenant admin keys (C-1): `tsk_` followed by 256 random bits (base64url, 43
//! characters). Only the SHA-256 of a key is stored; presented keys are compared with the
//! stored hash in constant time.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_domain::hash::Sha256Hex;
use countersign_domain::secret::SecretString;
use rand::RngCore as _;
use subtle::ConstantTimeEq as _;

/// The prefix of every admin key.
pub const PREFIX: &str = "tsk_";
/// Random bytes in a key.
pub const RANDOM_BYTES: usize = 32;

/// A new admin key and the hash to store. Show the key once; keep only the hash.
pub fn generate() -> (SecretString, Sha256Hex) {
    let mut bytes = [0u8; RANDOM_BYTES];
    rand::rng().fill_bytes(&mut bytes);
    let key = format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes));
    let hash = Sha256Hex::digest(key.as_bytes());
    (SecretString::new(key), hash)
}

/// A new widget secret (C-9): `wsk_` + 256 random bits, shown once, kept in the secret
/// store; the tenant's backend signs its users' widget JWTs (HS256) with it (D-2).
pub fn generate_widget_secret() -> SecretString {
    let mut bytes = [0u8; RANDOM_BYTES];
    rand::rng().fill_bytes(&mut bytes);
    SecretString::new(format!("wsk_{}", URL_SAFE_NO_PAD.encode(bytes)))
}

/// Whether `presented` is the key whose hash is `stored` (constant-time comparison of
/// the digests, so timing reveals nothing about how much of a guess matched).
pub fn matches(presented: &str, stored: &Sha256Hex) -> bool {
    let digest = Sha256Hex::digest(presented.as_bytes());
    bool::from(digest.as_str().as_bytes().ct_eq(stored.as_str().as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    /// C-1: keys are `tsk_` + 256 random bits; only their hash is kept; they are
    /// recognised by the platform's own secret checker so they never leak into text.
    #[test]
    fn c1_admin_keys_are_random_prefixed_and_hashed() {
        let mut seen = HashSet::new();
        for _ in 0..200 {
            let (key, hash) = generate();
            let k = key.expose();
            assert!(k.starts_with(PREFIX));
            assert_eq!(k.len(), PREFIX.len() + 43);
            assert_eq!(
                URL_SAFE_NO_PAD.decode(&k[PREFIX.len()..]).unwrap().len(),
                RANDOM_BYTES
            );
            assert_eq!(hash, Sha256Hex::digest(k));
            assert!(seen.insert(k.to_owned()), "keys never repeat");
            assert!(countersign_domain::text::SafeText::check(format!("your key is {k}")).is_err());
        }
    }

    #[test]
    fn c1_only_the_right_key_matches() {
        let (key, hash) = generate();
        assert!(matches(key.expose(), &hash));
        assert!(!matches("tsk_wrong", &hash));
        assert!(!matches("", &hash));
        let mut near = key.expose().to_owned();
        near.pop();
        assert!(!matches(&near, &hash));
    }
}
