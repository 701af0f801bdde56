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
    /// Fault switches.
    pub faults: Faults,
}

impl QueuedModel {
    /// Queues a text reply.
    pub fn say(&self, text: &str) -> &Self {
        self.push(ModelReply {
            text: Some(text.to_owned()),
            tool_calls: Vec::new(),
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
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request.clone());
        match self.faults.take("step") {
            Some(Fault::Hang) => std::future::pending::<()>().await,
            Some(Fault::Unavailable | Fault::Timeout | Fault::LostResponse) => {
                return Err(ModelError::Unavailable("fake model: planned fault".into()));
            }
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
            }))
    }
}
