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

/// `Debug` for a type that holds ports, clients or secrets: `Name { shown, .. }`, only the
/// fields named here and `..` for the rest. Opt-in on purpose: a field added to the type
/// later is not printed until someone names it, so a secret cannot slip into a log line.
///
/// ```
/// struct ApiKey { secret_id: String, key: countersign_domain::secret::SecretString }
/// countersign_domain::debug_showing!(ApiKey { secret_id });
/// let key = ApiKey { secret_id: "id".into(), key: countersign_domain::secret::SecretString::new("k") };
/// assert_eq!(format!("{key:?}"), r#"ApiKey { secret_id: "id", .. }"#);
/// ```
#[macro_export]
macro_rules! debug_showing {
    ($type:ident { $($field:ident),* $(,)? }) => {
        impl ::std::fmt::Debug for $type {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.debug_struct(stringify!($type))
                    $(.field(stringify!($field), &self.$field))*
                    .finish_non_exhaustive()
            }
        }
    };
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

    #[allow(dead_code)] // read only through `Debug`
    struct Holder {
        shown: u8,
        token: SecretString,
        raw: String,
    }
    crate::debug_showing!(Holder { shown });

    #[test]
    fn debug_showing_prints_only_the_named_fields() {
        let h = Holder {
            shown: 7,
            token: SecretString::new("tsk_secret"),
            raw: "raw_secret".into(),
        };
        assert_eq!(format!("{h:?}"), "Holder { shown: 7, .. }");
    }
}
