//! X-5 (D-4 finished): a gateway token for the person's own open conversation, so that a
//! remote model runtime or the person's own MCP client can reach `/mcp` for it. Minted
//! with the platform's gateway token key (the same the gateway verifies with), bounded
//! (1 to 15 minutes), spent from the person's message budget, and recorded in the
//! conversation's audit chain before it is handed out: a token no record names is never
//! returned.

use crate::service::{Chat, ChatError};
use countersign_domain::conversation::{CaseStatus, Principal};
use countersign_domain::ids::CaseId;
use countersign_domain::ports::{AuditEntry, StoreError, TransitionOutcome};
use countersign_domain::secret::SecretString;
use countersign_domain::time::Timestamp;
use countersign_tools::access::{self, Grant};
use serde_json::json;

pub use crate::gateway_key::McpTokens;

/// The shortest lifetime a minted token may have.
pub const MIN_TTL_SECONDS: i64 = 60;

impl Chat {
    /// a gateway token for `who`'s open conversation `case`, valid `ttl_seconds`
    /// ([`MIN_TTL_SECONDS`] to [`access::MAX_TTL_SECONDS`]); returns it with its expiry.
    /// Another person's or an unknown case is `NotFound`, a closed one `Closed`.
    pub async fn mint_gateway_token(
        &self,
        who: &Principal,
        case: &CaseId,
        ttl_seconds: i64,
    ) -> Result<(SecretString, Timestamp), ChatError> {
        if !(MIN_TTL_SECONDS..=access::MAX_TTL_SECONDS).contains(&ttl_seconds) {
            return Err(ChatError::Invalid {
                field: "ttlSeconds",
                message: format!(
                    "must be an integer from {MIN_TTL_SECONDS} to {}",
                    access::MAX_TTL_SECONDS
                ),
            });
        }
        let tokens = self.mcp_tokens.as_ref().ok_or_else(|| {
            ChatError::Unavailable(StoreError::Unavailable(
                "gateway tokens are not minted by this deployment".into(),
            ))
        })?;
        self.spend_person(who, "messages").await?;
        let view = self.owned(who, case).await?;
        if view.case.status != CaseStatus::Open {
            return Err(ChatError::Closed);
        }
        let key = tokens.key().await.map_err(ChatError::Unavailable)?;
        let now = self.parts.clock.now();
        let expires_at = now.plus_seconds(ttl_seconds);
        let grant = Grant {
            principal: who.clone(),
            case: case.clone(),
        };
        let token = access::mint(key, &grant, now, ttl_seconds).map_err(|e| {
            ChatError::Unavailable(StoreError::Unavailable(
                format!("minting a gateway token: {e}").into(),
            ))
        })?;
        // The person's own act, in their conversation's chain; the token itself is never
        // recorded, only when it ends.
        let entry = AuditEntry {
            id: self.parts.ids.audit_id(),
            at: now,
            actor: "person".into(),
            action: "gatewayToken.mint".into(),
            changes: json!({"expiresAt": expires_at.to_rfc3339(), "ttlSeconds": ttl_seconds}),
        };
        match self
            .parts
            .conversations
            .record_in_case(&who.tenant, case, &entry)
            .await?
        {
            TransitionOutcome::Applied => Ok((SecretString::new(token), expires_at)),
            // Closed meanwhile: the token is dropped unseen.
            TransitionOutcome::Conflict { .. } => Err(ChatError::Closed),
        }
    }
}
