//! The bridge's own tests (B-1 … B-4): the engine on a stand-in upstream with real RS256
//! proofs, and the store contract on SQLite.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../common/contract.rs"]
mod contract;
mod engine;
mod fake;
mod store;

use base64::Engine as _;
use countersign_bridge::config::Config;
use countersign_bridge::store::Store;
use countersign_bridge::store::sqlite::SqliteStore;
use countersign_bridge::{Bridge, Settings};
use countersign_provider_kit::{Identity, Verifier};
use fake::Fake;
use jsonwebtoken::{Algorithm, EncodingKey};
use rmcp::model::CallToolResult;
use serde_json::{Map, Value, json};
use std::sync::Arc;

pub const TRUSTED_KEY: &str =
    include_str!("../../../shared/provider-kit/tests/keys/trusted.key.pem");
pub const TRUSTED_PUB: &str =
    include_str!("../../../shared/provider-kit/tests/keys/trusted.pub.pem");
pub const ATTACKER_KEY: &str =
    include_str!("../../../shared/provider-kit/tests/keys/attacker.key.pem");
pub const ISS: &str = "https://support.example.com/mcp-actions";
pub const AUD: &str = "http://127.0.0.1:8791/mcp";

pub const CONFIG: &str = r#"
[upstream]
command = "retail-server"

[bind]
state_key = "ns-1"

[certification]
accounts = { "countersign-test:u_test" = "alice" }

[[consultation]]
tool = "get_order_details"
read_only = true
guards = ["order_is_the_persons"]
result = "parsed_content"

[[consultation]]
tool = "get_user_details"
read_only = true
guards = ["user_is_the_person"]
result = "parsed_content"

[guard.order_is_the_persons]
lookup = { tool = "get_order_details", arguments = { order_id = "{order_id}" } }
field = "parsed_content.user_id"
equals = "{person}"

[guard.user_is_the_person]
lookup = { tool = "get_user_details", arguments = { user_id = "{user_id}" } }
field = "parsed_content.user_id"
equals = "{person}"

[[operation]]
name = "cancel_pending_order"
tool = "cancel_pending_order"
identity = { kind = "none" }
guards = ["order_is_the_persons"]
summary.en = "Cancel order {order_id} ({lookup.order.parsed_content.items.*.name}); reason: {reason}."
summary.pt = "Cancelar o pedido {order_id} ({lookup.order.parsed_content.items.*.name}); motivo: {reason}."
lookups.order = { tool = "get_order_details", arguments = { order_id = "{order_id}" } }

[[operation]]
name = "modify_user_address"
tool = "modify_user_address"
identity = { kind = "argument", name = "user_id" }
summary.en = "Move your address to {city}."
"#;

/// A bridge over `fake` and `store`, with `config`'s text (its digest is its SHA-256).
pub async fn bridge_with(config: &str, fake: Arc<Fake>, store: Arc<dyn Store>) -> Bridge {
    let digest: String = countersign_domain::hash::Sha256Hex::digest(config.as_bytes()).into();
    let verifier = Verifier::new(ISS, AUD)
        .with_key("kid-1", TRUSTED_PUB)
        .unwrap();
    Bridge::start(
        Config::parse(config).unwrap(),
        digest,
        fake,
        store,
        verifier,
        Settings::default(),
    )
    .await
    .unwrap()
}

#[allow(missing_debug_implementations)]
pub struct Harness {
    pub fake: Arc<Fake>,
    pub store: Arc<SqliteStore>,
    pub bridge: Bridge,
}

pub async fn harness() -> Harness {
    let fake = Arc::new(Fake::retail());
    let store = Arc::new(SqliteStore::in_memory().unwrap());
    let bridge = bridge_with(CONFIG, fake.clone(), store.clone()).await;
    Harness {
        fake,
        store,
        bridge,
    }
}

pub fn who(person: &str, conversation: &str) -> Identity {
    Identity {
        tenant_id: "ten_1".into(),
        user_id: person.into(),
        conversation_id: conversation.into(),
    }
}

pub fn obj(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

/// The answer's JSON (structured content, or its text) and whether it is an error.
pub fn body(r: &CallToolResult) -> (Value, bool) {
    (
        countersign_bridge::upstream::result_json(r),
        r.is_error == Some(true),
    )
}

impl Harness {
    pub async fn call(&self, w: &Identity, tool: &str, args: Value) -> (Value, bool) {
        body(&self.bridge.call(w, tool, obj(args), None, None).await)
    }

    pub async fn prepare(&self, w: &Identity, op: &str, args: Value) -> (Value, bool) {
        self.call(
            w,
            "prepare_action",
            json!({"operation": op, "arguments": args}),
        )
        .await
    }

    /// `prepare_action` of `cancel_pending_order` for `order` (the tests' usual write).
    pub async fn cancel(&self, w: &Identity, order: &str) -> (Value, bool) {
        let args = json!({"order_id": order, "reason": "x"});
        self.prepare(w, "cancel_pending_order", args).await
    }

    pub async fn execute(&self, w: &Identity, action: &Value, proof: &str) -> (Value, bool) {
        let args = obj(json!({"actionId": action["actionId"]}));
        body(
            &self
                .bridge
                .call(w, "execute_action", args, Some(proof), None)
                .await,
        )
    }
}

pub fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// The claims the platform signs for `prepared` (an answer of `prepare_action`).
pub fn claims(w: &Identity, prepared: &Value, jti: &str) -> Value {
    json!({
        "iss": ISS, "aud": AUD, "sub": w.user_id, "tenantId": w.tenant_id,
        "conversationId": w.conversation_id, "actionId": prepared["actionId"],
        "operation": prepared["operation"], "argumentsHash": prepared["argumentsHash"],
        "summaryHash": prepared["summaryHash"], "messageId": "msg_2",
        "presentedMessageId": "msg_1", "jti": jti, "iat": now() - 1, "exp": now() + 55
    })
}

pub fn header() -> Value {
    json!({"alg": "RS256", "typ": "support-action+jwt", "kid": "kid-1"})
}

pub fn b64(v: &Value) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
}

/// Signs any header and claims with `key` (RS256; no checks).
pub fn sign_with(header: &Value, claims: &Value, key: &str) -> String {
    let input = format!("{}.{}", b64(header), b64(claims));
    let key = EncodingKey::from_rsa_pem(key.as_bytes()).unwrap();
    let sig = jsonwebtoken::crypto::sign(input.as_bytes(), &key, Algorithm::RS256).unwrap();
    format!("{input}.{sig}")
}

/// A good proof for `prepared`.
pub fn proof(w: &Identity, prepared: &Value, jti: &str) -> String {
    sign_with(&header(), &claims(w, prepared, jti), TRUSTED_KEY)
}
