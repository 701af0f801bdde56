//! Identifiers of the protocol, as newtypes that can only hold valid values
//! ("parse, don't validate"). Each has a `parse` constructor, `as_str`, and serde support
//! that goes through the same parser, so an invalid id cannot be deserialised either.

use std::fmt;

/// Why a string is not a valid identifier. `kind` names the identifier
/// (for example `"actionId"`), so the message is useful without context.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// The string is empty.
    #[error("{kind} must not be empty")]
    Empty {
        /// The identifier's name.
        kind: &'static str,
    },
    /// The string is longer than allowed (in characters).
    #[error("{kind} must be at most {max} characters (got {len})")]
    TooLong {
        /// The identifier's name.
        kind: &'static str,
        /// The maximum length.
        max: usize,
        /// The actual length.
        len: usize,
    },
    /// A character outside the allowed set.
    #[error("{kind} may contain only {allowed} (found {found:?} at position {position})")]
    InvalidCharacter {
        /// The identifier's name.
        kind: &'static str,
        /// The allowed set, described for people.
        allowed: &'static str,
        /// The first offending character.
        found: char,
        /// Its position, in characters.
        position: usize,
    },
    /// A platform identifier without its prefix or with a malformed body.
    #[error("{kind} must be {prefix} followed by 26 Crockford base-32 characters")]
    Malformed {
        /// The identifier's name.
        kind: &'static str,
        /// The expected prefix.
        prefix: &'static str,
    },
}

/// `[A-Za-z0-9_-]`: the alphabet of action ids and operation names (C-4).
pub fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn check_charset(
    kind: &'static str,
    s: &str,
    max: usize,
    allowed: &'static str,
    ok: impl Fn(char) -> bool,
) -> Result<(), IdError> {
    if s.is_empty() {
        return Err(IdError::Empty { kind });
    }
    if let Some((position, found)) = s.chars().enumerate().find(|(_, c)| !ok(*c)) {
        return Err(IdError::InvalidCharacter {
            kind,
            allowed,
            found,
            position,
        });
    }
    // All characters are ASCII here, so bytes == characters.
    if s.len() > max {
        return Err(IdError::TooLong {
            kind,
            max,
            len: s.len(),
        });
    }
    Ok(())
}

/// Defines a string newtype with a private field, `parse`, `as_str`, `Display`, and serde
/// through `parse`.
macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal, |$s:ident| $check:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// The identifier's name in messages and field names.
            pub const KIND: &'static str = $kind;

            /// Parses and validates.
            pub fn parse($s: impl Into<String>) -> Result<Self, IdError> {
                let $s: String = $s.into();
                $check?;
                Ok(Self($s))
            }

            /// The identifier as a string.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl TryFrom<String> for $name {
            type Error = IdError;
            fn try_from(s: String) -> Result<Self, IdError> {
                Self::parse(s)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

string_id!(
    /// A provider's action id: 1–200 characters of `[A-Za-z0-9_-]`. Never reused
    /// within a tenant (the store guards that; A-14).
    ActionId,
    "actionId",
    |s| check_charset(Self::KIND, &s, 200, "letters, digits, '_' and '-'", is_token_char)
);

string_id!(
    /// An operation name (C-4): 1–64 characters of `[A-Za-z0-9_-]`.
    OperationName,
    "operation",
    |s| check_charset(Self::KIND, &s, 64, "letters, digits, '_' and '-'", is_token_char)
);

string_id!(
    /// An MCP tool name: 1–128 characters of `[A-Za-z0-9_.-]` (the MCP specification's
    /// recommended tool-name alphabet).
    ToolName,
    "tool",
    |s| check_charset(Self::KIND, &s, 128, "letters, digits, '_', '-' and '.'", |c| {
        is_token_char(c) || c == '.'
    })
);

string_id!(
    /// A tenant's own id for its end user (the widget JWT's `sub`, D-2). It travels in the
    /// `X-MCP-User-Id` header and the proof's `sub`, so it is restricted to
    /// 1–256 visible ASCII characters: no spaces, no control characters.
    UserId,
    "userId",
    |s| check_charset(Self::KIND, &s, 256, "visible ASCII characters", |c| c.is_ascii_graphic())
);

impl UserId {
    /// N-7: the reserved prefix of the synthetic people a certification run acts for. A
    /// run's consented proofs are only ever for such a person, and no real person of the
    /// chat can carry it (widget tokens with it are refused): a provider can route every
    /// `sub` with this prefix to a test account.
    pub const TEST_PREFIX: &'static str = "countersign-test:";

    /// N-7: whether this is a certification's synthetic person ([`Self::TEST_PREFIX`]).
    pub fn is_test_person(&self) -> bool {
        self.as_str().starts_with(Self::TEST_PREFIX)
    }
}

/// Crockford base-32 alphabet as the `ulid` crate writes it (upper case).
fn is_crockford(c: char) -> bool {
    matches!(c, '0'..='9' | 'A'..='H' | 'J' | 'K' | 'M' | 'N' | 'P'..='T' | 'V'..='Z')
}

fn check_prefixed(kind: &'static str, prefix: &'static str, s: &str) -> Result<(), IdError> {
    let body = s.strip_prefix(prefix);
    match body {
        // A ULID's first character is at most '7' (48 bits of milliseconds).
        Some(b) if b.len() == 26 && b.chars().all(is_crockford) && b.as_bytes()[0] <= b'7' => {
            Ok(())
        }
        _ if s.is_empty() => Err(IdError::Empty { kind }),
        _ => Err(IdError::Malformed { kind, prefix }),
    }
}

/// Defines a platform-generated id: a fixed prefix and a ULID (time-ordered, so ids of
/// one kind sort by creation time).
macro_rules! prefixed_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal, $prefix:literal) => {
        string_id!($(#[$doc])* $name, $kind, |s| check_prefixed(Self::KIND, Self::PREFIX, &s));

        impl $name {
            /// The prefix of every id of this kind.
            pub const PREFIX: &'static str = $prefix;

            /// Builds the id from a ULID's canonical 26-character text.
            pub fn from_ulid_text(ulid: &str) -> Result<Self, IdError> {
                Self::parse(format!("{}{}", Self::PREFIX, ulid))
            }
        }
    };
}

prefixed_id!(
    /// A tenant, registered by an operator (C-1).
    TenantId,
    "tenantId",
    "ten_"
);
prefixed_id!(
    /// A case, which is the conversation of the protocol (D-1).
    CaseId,
    "caseId",
    "case_"
);
prefixed_id!(
    /// A chat message (A-22: `msg_...`).
    MessageId,
    "messageId",
    "msg_"
);
prefixed_id!(
    /// A widget credential of a tenant (C-9, D-2); the widget JWT's `kid`.
    WidgetKeyId,
    "widgetKeyId",
    "wk_"
);

prefixed_id!(
    /// An audit record of a tenant's configuration changes; ids sort by time.
    AuditId,
    "auditId",
    "aud_"
);

/// The protocol's conversation is the support case (D-1).
pub type ConversationId = CaseId;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const ULID: &str = "01JDZ6Y5X1QW9T3V7N2K4M8P0R";

    /// action ids are 1–200 characters of `[A-Za-z0-9_-]`.
    #[test]
    fn a14_action_id_accepts_token_chars_up_to_200() {
        assert!(ActionId::parse("act_1-Z").is_ok());
        assert!(ActionId::parse("a".repeat(200)).is_ok());
        assert_eq!(
            ActionId::parse("a".repeat(201)),
            Err(IdError::TooLong {
                kind: "actionId",
                max: 200,
                len: 201
            })
        );
        assert_eq!(
            ActionId::parse(""),
            Err(IdError::Empty { kind: "actionId" })
        );
        for bad in ["a b", "a/b", "a.b", "é", "a\n", "a:b"] {
            assert!(
                matches!(ActionId::parse(bad), Err(IdError::InvalidCharacter { .. })),
                "{bad:?}"
            );
        }
    }

    /// C-4: operation names are 1–64 characters of `[A-Za-z0-9_-]`.
    #[test]
    fn c4_operation_name_limits() {
        assert!(OperationName::parse("reassign_session_car").is_ok());
        assert!(OperationName::parse("x".repeat(64)).is_ok());
        assert!(OperationName::parse("x".repeat(65)).is_err());
        assert!(OperationName::parse("").is_err());
        assert!(OperationName::parse("change date").is_err());
    }

    #[test]
    fn tool_names_allow_dots() {
        assert!(ToolName::parse("files.get_details").is_ok());
        assert!(ToolName::parse("x".repeat(129)).is_err());
        assert!(ToolName::parse("get user").is_err());
    }

    #[test]
    fn user_ids_are_header_safe() {
        assert!(UserId::parse("user+42@example.com").is_ok());
        assert!(UserId::parse("two words").is_err());
        assert!(UserId::parse("line\r\nInjected: yes").is_err());
        assert!(UserId::parse("ünicode").is_err());
        assert!(UserId::parse("u".repeat(257)).is_err());
    }

    #[test]
    fn prefixed_ids_need_their_prefix_and_a_ulid() {
        let id = CaseId::from_ulid_text(ULID).unwrap();
        assert_eq!(id.as_str(), format!("case_{ULID}"));
        assert!(MessageId::parse(format!("msg_{ULID}")).is_ok());
        assert!(MessageId::parse(format!("case_{ULID}")).is_err());
        assert!(MessageId::parse("msg_").is_err());
        assert!(MessageId::parse(format!("msg_{}", ULID.to_lowercase())).is_err());
        assert!(MessageId::parse("msg_81JDZ6Y5X1QW9T3V7N2K4M8P0R").is_err());
        assert!(TenantId::parse(format!("ten_{ULID}I")).is_err());
        assert_eq!(
            TenantId::parse(""),
            Err(IdError::Empty { kind: "tenantId" })
        );
    }

    #[test]
    fn ids_deserialize_through_the_parser() {
        let ok: ActionId = serde_json::from_str("\"act_1\"").unwrap();
        assert_eq!(ok.as_str(), "act_1");
        assert!(serde_json::from_str::<ActionId>("\"act 1\"").is_err());
        assert_eq!(serde_json::to_string(&ok).unwrap(), "\"act_1\"");
    }
}
