//! SHA-256 digests as 64 lowercase hexadecimal characters, and [`hex`], the one
//! lowercase hex encoder.

use sha2::{Digest, Sha256};
use std::fmt;

/// Why a string is not a SHA-256 hex digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("must be 64 lowercase hexadecimal characters (a SHA-256 digest)")]
pub struct HashFormatError;

/// A SHA-256 digest written as exactly 64 lowercase hex characters. Upper-case hex is
/// refused: the protocol compares hashes as strings, so one spelling only.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(try_from = "String", into = "String")]
pub struct Sha256Hex(String);

impl Sha256Hex {
    /// Parses a 64-character lowercase hex string.
    pub fn parse(s: impl Into<String>) -> Result<Self, HashFormatError> {
        let s = s.into();
        if s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            Ok(Self(s))
        } else {
            Err(HashFormatError)
        }
    }

    /// The digest of `bytes`, exactly as given (no normalisation; A-14).
    pub fn digest(bytes: impl AsRef<[u8]>) -> Self {
        Self(hex(&Sha256::digest(bytes.as_ref())))
    }

    /// The hex text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `bytes` as lowercase hexadecimal, two characters per byte: the project's one hex
/// encoder (digests here, fingerprints and hashes elsewhere), so there is one spelling.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        // A nibble is at most 15: both indexes are in bounds.
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    s
}

impl fmt::Display for Sha256Hex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for Sha256Hex {
    type Error = HashFormatError;
    fn try_from(s: String) -> Result<Self, HashFormatError> {
        Self::parse(s)
    }
}

impl From<Sha256Hex> for String {
    fn from(h: Sha256Hex) -> String {
        h.0
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// hashes are 64 lowercase hex characters.
    #[test]
    fn a14_hash_format_is_64_lowercase_hex() {
        let h = "a".repeat(64);
        assert!(Sha256Hex::parse(h).is_ok());
        assert!(Sha256Hex::parse("A".repeat(64)).is_err());
        assert!(Sha256Hex::parse("a".repeat(63)).is_err());
        assert!(Sha256Hex::parse("a".repeat(65)).is_err());
        assert!(Sha256Hex::parse(format!("{}g", "a".repeat(63))).is_err());
    }

    #[test]
    fn hex_is_lowercase_two_digits_per_byte() {
        assert_eq!(hex(&[]), "");
        assert_eq!(hex(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
    }

    #[test]
    fn digest_matches_known_vector() {
        assert_eq!(
            Sha256Hex::digest("abc").as_str(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            Sha256Hex::parse(Sha256Hex::digest(b"").as_str().to_owned()).unwrap(),
            Sha256Hex::digest(b"")
        );
    }
}
