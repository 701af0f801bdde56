//! A wrapper for secret strings (service tokens, widget secrets, proofs) that never
//! prints its content: `Debug` is redacted, and there is no `Display` nor `Serialize`.

use std::fmt;

/// A secret string. Read it only with [`SecretString::expose`], at the point where it
/// leaves the process on purpose (an HTTP header, a KMS or Secrets Manager call).
#[derive(Clone, PartialEq, Eq)]
pub struct SecretString(String);

impl SecretString {
    /// Wraps a secret.
    pub fn new(s: impl Into<String>) -> Self {
        Self(s.into())
    }

    /// The secret itself. Never log or return what this gives.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretString(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_secret() {
        let s = SecretString::new("tsk_supersecret");
        assert!(!format!("{s:?}").contains("supersecret"));
        assert_eq!(s.expose(), "tsk_supersecret");
    }
}
