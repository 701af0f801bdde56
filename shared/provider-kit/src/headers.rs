//! The headers the platform sets on every provider call. The model never
//! chooses them; a provider must take the principal from here, never from arguments.

use http::HeaderMap;

/// `X-MCP-Tenant-Id`.
pub const TENANT: &str = "x-mcp-tenant-id";
/// `X-MCP-User-Id`.
pub const USER: &str = "x-mcp-user-id";
/// `X-MCP-Conversation-Id`.
pub const CONVERSATION: &str = "x-mcp-conversation-id";
/// `X-MCP-Confirmation`: the proof, on `execute_action` only.
pub const CONFIRMATION: &str = "x-mcp-confirmation";

/// Who a call is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The tenant.
    pub tenant_id: String,
    /// The person (the proof's `sub`).
    pub user_id: String,
    /// The conversation.
    pub conversation_id: String,
}

/// A required header is missing, repeated, or not visible ASCII.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("header {0} is missing or malformed")]
pub struct HeaderError(pub &'static str);

fn one(headers: &HeaderMap, name: &'static str) -> Result<String, HeaderError> {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (Some(v), None) => v
            .to_str()
            .ok()
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .ok_or(HeaderError(name)),
        _ => Err(HeaderError(name)),
    }
}

impl Identity {
    /// Reads the three identity headers; each must be present exactly once.
    pub fn from_headers(headers: &HeaderMap) -> Result<Self, HeaderError> {
        Ok(Self {
            tenant_id: one(headers, TENANT)?,
            user_id: one(headers, USER)?,
            conversation_id: one(headers, CONVERSATION)?,
        })
    }
}

/// The proof, if exactly one `X-MCP-Confirmation` header is present.
pub fn confirmation(headers: &HeaderMap) -> Result<String, HeaderError> {
    one(headers, CONFIRMATION)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a11_identity_needs_each_header_exactly_once() {
        let mut h = HeaderMap::new();
        h.insert(TENANT, "ten_1".parse().unwrap());
        h.insert(USER, "u_alice".parse().unwrap());
        assert_eq!(Identity::from_headers(&h), Err(HeaderError(CONVERSATION)));
        h.insert(CONVERSATION, "case_1".parse().unwrap());
        assert_eq!(Identity::from_headers(&h).unwrap().user_id, "u_alice");
        h.append(USER, "u_mallory".parse().unwrap());
        assert_eq!(Identity::from_headers(&h), Err(HeaderError(USER)));
        assert!(confirmation(&h).is_err());
    }
}
