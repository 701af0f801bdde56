//! X-5 (D-4 finished): the person's own gateway token for their open conversation.

use crate::harness::H;
use countersign_chat::ChatError;
use countersign_chat::mcp_token::McpTokens;
use countersign_domain::conversation::Principal;
use countersign_domain::ids::UserId;
use countersign_domain::ports::{AuditRecords, Clock, SecretStore};
use countersign_domain::secret::SecretString;
use countersign_testkit::Fault;
use countersign_tools::access::{self, Grant};

const KEY: &str = "gateway-token-key-0123456789abcdef0123456789";

async fn with_tokens() -> H {
    let mut h = H::new().await;
    h.chat.mcp_tokens = Some(McpTokens::fixed(SecretString::new(KEY)));
    h
}

async fn mints(h: &H) -> Vec<serde_json::Value> {
    h.store
        .list_audit(&h.who.tenant, None, 50)
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|r| r.action == "gatewayToken.mint")
        .map(|r| serde_json::json!({"actor": r.actor, "changes": r.changes}))
        .collect()
}

/// The token opens exactly this person's conversation at the gateway, for the lifetime
/// asked; the mint is recorded in the conversation's chain, without the token.
#[tokio::test]
async fn x5_the_person_gets_a_token_bound_to_their_conversation_and_it_is_recorded() {
    let h = with_tokens().await;
    let now = h.clock.now();
    let (token, expires_at) = h
        .chat
        .mint_gateway_token(&h.who, &h.case, 300)
        .await
        .unwrap();
    assert_eq!(expires_at, now.plus_seconds(300));
    let grant = access::verify(&SecretString::new(KEY), token.expose(), now).unwrap();
    assert_eq!(
        grant,
        Grant {
            principal: h.who.clone(),
            case: h.case.clone(),
        }
    );
    // It ends when it said: refused just after.
    assert!(
        access::verify(
            &SecretString::new(KEY),
            token.expose(),
            now.plus_seconds(306)
        )
        .is_err()
    );
    let recorded = mints(&h).await;
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0]["actor"], "person");
    assert_eq!(recorded[0]["changes"]["ttlSeconds"], 300);
    assert!(
        !recorded[0].to_string().contains(token.expose()),
        "the token is never recorded"
    );
}

/// Another person's conversation is absent; a closed one is refused; a lifetime outside
/// 60 … 900 s is invalid: none of them mints or records anything.
#[tokio::test]
async fn x5_no_token_for_another_person_a_closed_case_or_a_bad_lifetime() {
    let h = with_tokens().await;
    let bob = Principal {
        tenant: h.who.tenant.clone(),
        user: UserId::parse("u_bob").unwrap(),
    };
    assert!(matches!(
        h.chat.mint_gateway_token(&bob, &h.case, 300).await,
        Err(ChatError::NotFound)
    ));
    for ttl in [0, 59, 901, -5] {
        assert!(matches!(
            h.chat.mint_gateway_token(&h.who, &h.case, ttl).await,
            Err(ChatError::Invalid {
                field: "ttlSeconds",
                ..
            })
        ));
    }
    h.chat.close(&h.who, &h.case).await.unwrap();
    assert!(matches!(
        h.chat.mint_gateway_token(&h.who, &h.case, 300).await,
        Err(ChatError::Closed)
    ));
    assert!(mints(&h).await.is_empty());
}

/// Without the key (not bootstrapped, or its store down) or when the record cannot be
/// written, no token is handed out: every token has its record.
#[tokio::test]
async fn x5_no_key_or_no_record_means_no_token() {
    let h = H::new().await;
    assert!(matches!(
        h.chat.mint_gateway_token(&h.who, &h.case, 300).await,
        Err(ChatError::Unavailable(_))
    ));
    let mut h = H::new().await;
    h.chat.mcp_tokens = Some(McpTokens::lazy(h.secrets.clone(), access::SECRET_NAME));
    assert!(matches!(
        h.chat.mint_gateway_token(&h.who, &h.case, 300).await,
        Err(ChatError::Unavailable(_))
    ));
    h.secrets
        .put(access::SECRET_NAME, &SecretString::new(KEY))
        .await
        .unwrap();
    h.store.faults.once("record_in_case", Fault::Unavailable);
    assert!(matches!(
        h.chat.mint_gateway_token(&h.who, &h.case, 300).await,
        Err(ChatError::Unavailable(_))
    ));
    assert!(mints(&h).await.is_empty());
    // The key read once the secret exists; the next request succeeds.
    assert!(
        h.chat
            .mint_gateway_token(&h.who, &h.case, 300)
            .await
            .is_ok()
    );
    assert_eq!(mints(&h).await.len(), 1);
}
