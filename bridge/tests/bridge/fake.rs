//! A stand-in for an existing MCP server with the retail server's shapes (results in a
//! `parsed_content` envelope, no annotations), whose data and faults a test controls.

use async_trait::async_trait;
use countersign_bridge::upstream::{CallHeader, Upstream, UpstreamError};
use rmcp::model::{CallToolResult, ContentBlock, Tool};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::Mutex;

#[derive(Debug, Default)]
pub struct State {
    /// order id → {user_id, status, items: [{name}]}
    pub orders: BTreeMap<String, Value>,
    /// user id → address city
    pub cities: BTreeMap<String, String>,
    /// Every write call received: (tool, arguments).
    pub writes: Vec<(String, Value)>,
    /// Every call received: (tool, arguments).
    pub calls: Vec<(String, Value)>,
    /// The next write runs, then its answer is lost.
    pub lose_next_write: bool,
    /// The server is down: nothing is received.
    pub down: bool,
    /// `get_order_details` declares itself destructive.
    pub order_details_destructive: bool,
}

#[derive(Debug, Default)]
pub struct Fake {
    pub state: Mutex<State>,
}

pub(crate) const WRITES: [&str; 2] = ["cancel_pending_order", "modify_user_address"];

impl Fake {
    pub fn retail() -> Self {
        let fake = Self::default();
        {
            let mut s = fake.state.lock().unwrap();
            for (id, user, items) in [
                ("#W1", "alice", vec!["Desk Lamp", "Kettle"]),
                ("#W2", "bob", vec!["Office Chair"]),
            ] {
                let items: Vec<Value> = items.iter().map(|n| json!({"name": n})).collect();
                s.orders.insert(
                    id.into(),
                    json!({"order_id": id, "user_id": user, "status": "pending", "items": items}),
                );
            }
            s.cities.insert("alice".into(), "Austin".into());
            s.cities.insert("bob".into(), "Boston".into());
        }
        fake
    }

    pub fn writes(&self) -> usize {
        self.state.lock().unwrap().writes.len()
    }

    pub fn with_order(&self, id: &str, f: impl FnOnce(&mut Value)) {
        f(self.state.lock().unwrap().orders.get_mut(id).unwrap());
    }
}

fn tool(name: &str, props: Value, required: &[&str], annotations: Option<Value>) -> Tool {
    let mut t = json!({"name": name, "inputSchema": {"type": "object", "properties": props, "required": required, "additionalProperties": false}});
    if let Some(a) = annotations {
        t["annotations"] = a;
    }
    serde_json::from_value(t).unwrap()
}

fn envelope(parsed: Value, error: bool) -> CallToolResult {
    // The server's whole state rides along, as τ²'s retail server does.
    let v = json!({"ok": !error, "parsed_content": parsed, "state": {"everyone": "secret"}});
    let mut r = CallToolResult::structured(v);
    if error {
        r.is_error = Some(true);
    }
    r
}

#[async_trait]
impl Upstream for Fake {
    async fn tools(&self) -> Result<Vec<Tool>, UpstreamError> {
        let s = self.state.lock().unwrap();
        if s.down {
            return Err(UpstreamError::Unavailable("down".into()));
        }
        let key = json!({"type": ["string", "null"]});
        let destructive = s
            .order_details_destructive
            .then(|| json!({"destructiveHint": true}));
        Ok(vec![
            tool(
                "get_order_details",
                json!({"order_id": {"type": "string"}, "state_key": key}),
                &["order_id"],
                destructive,
            ),
            tool(
                "get_user_details",
                json!({"user_id": {"type": "string"}, "state_key": key}),
                &["user_id"],
                None,
            ),
            tool(
                "cancel_pending_order",
                json!({"order_id": {"type": "string"}, "reason": {"type": "string"}, "state_key": key}),
                &["order_id", "reason"],
                None,
            ),
            tool(
                "modify_user_address",
                json!({"user_id": {"type": "string"}, "city": {"type": "string"}, "state_key": key}),
                &["user_id", "city"],
                None,
            ),
        ])
    }

    async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        _header: CallHeader<'_>,
    ) -> Result<CallToolResult, UpstreamError> {
        let mut s = self.state.lock().unwrap();
        if s.down {
            return Err(UpstreamError::Unavailable("down".into()));
        }
        let args = Value::Object(arguments);
        s.calls.push((tool.to_owned(), args.clone()));
        assert_eq!(
            args["state_key"], "ns-1",
            "the bound argument reaches every call"
        );
        if WRITES.contains(&tool) {
            s.writes.push((tool.to_owned(), args.clone()));
        }
        let arg = |k: &str| args[k].as_str().unwrap_or_default().to_owned();
        let result = match tool {
            "get_order_details" => match s.orders.get(&arg("order_id")) {
                Some(o) => envelope(o.clone(), false),
                None => envelope(json!("Error: Order not found"), true),
            },
            "get_user_details" => match s.cities.get(&arg("user_id")) {
                Some(c) => envelope(json!({"user_id": arg("user_id"), "city": c}), false),
                None => envelope(json!("Error: User not found"), true),
            },
            "cancel_pending_order" => {
                let id = arg("order_id");
                match s.orders.get_mut(&id) {
                    Some(o) if o["status"] == "pending" => {
                        o["status"] = json!("cancelled");
                        envelope(o.clone(), false)
                    }
                    _ => envelope(json!("Error: Non-pending order cannot be cancelled"), true),
                }
            }
            "modify_user_address" => {
                let (user, city) = (arg("user_id"), arg("city"));
                s.cities.insert(user.clone(), city.clone());
                envelope(json!({"user_id": user, "city": city}), false)
            }
            other => CallToolResult::error(vec![ContentBlock::text(format!("no tool {other}"))]),
        };
        if WRITES.contains(&tool) && s.lose_next_write {
            s.lose_next_write = false;
            return Err(UpstreamError::Lost("connection reset".into()));
        }
        Ok(result)
    }
}
