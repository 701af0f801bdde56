//! A model with queued replies, which remembers what it was shown.

use crate::faults::{Fault, Faults};
use async_trait::async_trait;
use countersign_domain::ports::{Model, ModelError, ModelReply, ModelRequest, ToolCall};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

/// The model. With no reply queued it answers the text `ok`. `faults` plans failures for
/// `step`.
#[derive(Debug, Default)]
pub struct QueuedModel {
    replies: Mutex<VecDeque<ModelReply>>,
    requests: Mutex<Vec<ModelRequest>>,
    /// Typed failures planned for given steps (0-based, counted over the model's life).
    failures: Mutex<Vec<(usize, ModelError)>>,
    /// Fault switches.
    pub faults: Faults,
}

impl QueuedModel {
    /// Queues a text reply.
    pub fn say(&self, text: &str) -> &Self {
        self.push(ModelReply {
            text: Some(text.to_owned()),
            tool_calls: Vec::new(),
            truncated: false,
        })
    }

    /// Queues a reply calling one tool.
    pub fn call(&self, tool: &str, arguments: Value) -> &Self {
        self.push(ModelReply {
            text: None,
            tool_calls: vec![ToolCall {
                id: format!("call_{tool}"),
                name: tool.to_owned(),
                arguments,
            }],
            truncated: false,
        })
    }

    /// Queues any reply.
    pub fn push(&self, reply: ModelReply) -> &Self {
        self.replies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(reply);
        self
    }

    /// Plans `error` for step number `step` (0-based, counting every step, retries
    /// included). Several may be planned for one step number: each is used once, in
    /// order, on consecutive steps from that one.
    pub fn fail_at(&self, step: usize, error: ModelError) -> &Self {
        self.failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((step, error));
        self
    }

    /// Every request it was given, in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

#[async_trait]
impl Model for QueuedModel {
    async fn step(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let index = {
            let mut requests = self.requests.lock().unwrap_or_else(PoisonError::into_inner);
            requests.push(request.clone());
            requests.len() - 1
        };
        {
            let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(i) = failures.iter().position(|(at, _)| *at <= index) {
                return Err(failures.remove(i).1);
            }
        }
        match self.faults.take("step") {
            Some(Fault::Hang) => std::future::pending::<()>().await,
            Some(Fault::Unavailable | Fault::LostResponse) => {
                return Err(ModelError::Unavailable("fake model: planned fault".into()));
            }
            Some(Fault::Timeout) => return Err(ModelError::Timeout),
            Some(Fault::Conflict) | None => {}
        }
        Ok(self
            .replies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
            .unwrap_or_else(|| ModelReply {
                text: Some("ok".to_owned()),
                tool_calls: Vec::new(),
                truncated: false,
            }))
    }
}
