//! `prepare_action` inside a model turn: the shared preparation
//! (`countersign_tools::prepare`, A-2, A-10 … A-21, C-6) with what is particular to a chat
//! turn: one presentation per turn, and the provider's refusal remembered so the
//! person is told (D-6).

use crate::service::ChatParts;
use async_trait::async_trait;
use countersign_domain::ports::NewMessage;
use countersign_domain::text::SafeText;
use countersign_tools::builtins::{ActionPreparer, CallContext, PreparedAction};
use countersign_tools::errors::{ToolError, code};
use countersign_tools::integration::Connected;
use countersign_tools::prepare::Preparation;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

/// Prepares actions for one turn, and remembers what it presented. It must be `'static`
/// (it sits in an `Arc<dyn ActionPreparer>`), so it holds the ports by value.
pub(crate) struct TurnPreparer {
    preparation: Preparation,
    integration: Option<Connected>,
    /// The operations' argument schemas the tenant's server declared this turn
    /// (decision 0024).
    schemas: BTreeMap<String, Value>,
    presented: Mutex<Vec<NewMessage>>,
    /// Whether the tenant's server refused or broke the contract in this turn (D-6: the
    /// person is then told so, with a fixed text).
    refused: std::sync::atomic::AtomicBool,
    /// The tenant's server's own words for its refusal, when they pass A-20.
    refusal: Mutex<Option<SafeText>>,
}

#[async_trait]
impl ActionPreparer for TurnPreparer {
    async fn prepare(
        &self,
        ctx: &CallContext,
        operation: &str,
        arguments: &Map<String, Value>,
    ) -> Result<PreparedAction, ToolError> {
        self.one_per_turn()?;
        match self
            .preparation
            .prepare(ctx, self.integration.as_ref(), operation, arguments)
            .await
        {
            Ok((data, message)) => {
                self.presented
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(message);
                Ok(data)
            }
            Err(failure) => {
                if failure.provider_refused {
                    self.refused
                        .store(true, std::sync::atomic::Ordering::Relaxed);
                }
                if let Some(reason) = failure.reason {
                    *self.refusal.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason);
                }
                Err(failure.error)
            }
        }
    }

    fn argument_schema(&self, operation: &str) -> Option<Value> {
        self.schemas.get(operation).cloned()
    }
}

impl TurnPreparer {
    pub(crate) fn new(
        parts: ChatParts,
        passkeys: Option<std::sync::Arc<dyn countersign_domain::ports::Passkeys>>,
        integration: Option<Connected>,
        schemas: BTreeMap<String, Value>,
    ) -> Self {
        Self {
            preparation: Preparation {
                conversations: parts.conversations,
                proposals: parts.proposals,
                integration: parts.integration,
                signer: parts.signer,
                clock: parts.clock,
                ids: parts.ids,
                passkeys,
            },
            integration,
            schemas,
            presented: Mutex::new(Vec::new()),
            refused: std::sync::atomic::AtomicBool::new(false),
            refusal: Mutex::new(None),
        }
    }
    /// The tenant's server's words for a refusal in this turn, when they pass A-20.
    pub(crate) fn refusal_reason(&self) -> Option<SafeText> {
        self.refusal
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Whether the tenant's server refused a preparation in this turn, or answered it
    /// outside the contract.
    pub(crate) fn was_refused(&self) -> bool {
        self.refused.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The presentation stored in this turn, if any (taken: asked once per call).
    pub(crate) fn take_presented(&self) -> Vec<NewMessage> {
        std::mem::take(
            &mut *self
                .presented
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// Whether a proposal was presented in this turn.
    pub(crate) fn has_presented(&self) -> bool {
        !self
            .presented
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
    }

    /// one presentation per turn; it ends the turn.
    fn one_per_turn(&self) -> Result<(), ToolError> {
        let presented = self
            .presented
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if presented.is_empty() {
            return Ok(());
        }
        Err(ToolError::new(
            code::TOOL_ERROR,
            "A proposal was already presented in this turn; wait for the person's reply.",
        )
        .retryable(false))
    }
}
