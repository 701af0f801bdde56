//! Test support (feature `testing`): an in-memory stand-in for the stores, for this
//! crate's and the functions' tests. Not part of any production build.
#![allow(clippy::unwrap_used)]

use async_trait::async_trait;
use countersign_domain::conversation::{Case, Message};
use countersign_domain::hash::Sha256Hex;
use countersign_domain::ids::{ActionId, CaseId, MessageId, TenantId};
use countersign_domain::ports::{
    AuditEntry, ConfirmWrite, ConversationStore, ConversationView, CreateProposalOutcome,
    NewMessage, StoreError, StoredMcpConfig, Tenant, TenantStore, TransitionOutcome,
};
use countersign_domain::proposal::{Proposal, ProposalState};
use std::sync::Mutex;

/// In-memory stand-ins for the two stores: just enough state for the built-ins. Every
/// other method fails as if the store were down.
#[derive(Debug, Default)]
pub struct Fake {
    /// What `load` returns.
    pub view: Mutex<Option<ConversationView>>,
    /// What `get_mcp_config` returns.
    pub config: Mutex<Option<StoredMcpConfig>>,
    /// Makes `load` and `get_mcp_config` fail.
    pub fail: bool,
}

fn unavailable() -> StoreError {
    StoreError::Unavailable("store down (internal detail 10.0.0.7)".into())
}

#[async_trait]
impl ConversationStore for Fake {
    async fn create_case(
        &self,
        _: &Case,
        _: countersign_domain::texts::Language,
    ) -> Result<(), StoreError> {
        Err(unavailable())
    }
    async fn load(&self, _: &TenantId, _: &CaseId) -> Result<Option<ConversationView>, StoreError> {
        if self.fail {
            return Err(unavailable());
        }
        Ok(self.view.lock().unwrap().clone())
    }
    async fn append_message(&self, _: &TenantId, _: &NewMessage) -> Result<(), StoreError> {
        Err(unavailable())
    }
    async fn list_messages(
        &self,
        _: &TenantId,
        _: &CaseId,
        _: Option<&MessageId>,
        _: usize,
    ) -> Result<Vec<Message>, StoreError> {
        Err(unavailable())
    }
    async fn create_proposal(
        &self,
        _: &Proposal,
        _: &[NewMessage],
    ) -> Result<CreateProposalOutcome, StoreError> {
        Err(unavailable())
    }
    async fn confirm(&self, _: &ConfirmWrite) -> Result<TransitionOutcome, StoreError> {
        Err(unavailable())
    }
    async fn transition(
        &self,
        _: &TenantId,
        _: &CaseId,
        _: &ActionId,
        _: ProposalState,
        _: ProposalState,
        _: Option<&NewMessage>,
    ) -> Result<TransitionOutcome, StoreError> {
        Err(unavailable())
    }
    async fn close_case(&self, _: &TenantId, _: &CaseId) -> Result<TransitionOutcome, StoreError> {
        Err(unavailable())
    }
    async fn recent_messages(
        &self,
        _: &TenantId,
        _: &CaseId,
        _: usize,
    ) -> Result<Vec<Message>, StoreError> {
        Err(unavailable())
    }
    async fn invalidate_pending(
        &self,
        _: &TenantId,
        _: Option<(u64, &str)>,
        _: &(
             dyn for<'c> Fn(&'c CaseId, countersign_domain::texts::Language) -> NewMessage
                 + Send
                 + Sync
         ),
    ) -> Result<usize, StoreError> {
        Err(unavailable())
    }
    async fn list_unsettled(
        &self,
        _: &TenantId,
    ) -> Result<Vec<countersign_domain::ports::UnsettledAction>, StoreError> {
        Err(unavailable())
    }
    async fn note_status(
        &self,
        _: &TenantId,
        _: &countersign_domain::ids::ActionId,
        _: &str,
        _: countersign_domain::time::Timestamp,
    ) -> Result<(), StoreError> {
        Err(unavailable())
    }
    async fn settle_by_admin(
        &self,
        _: &countersign_domain::ports::SettleByAdmin<'_>,
    ) -> Result<countersign_domain::ports::TransitionOutcome, StoreError> {
        Err(unavailable())
    }
}

#[async_trait]
impl TenantStore for Fake {
    async fn create_tenant(&self, _: &Tenant) -> Result<(), StoreError> {
        Err(unavailable())
    }
    async fn get_tenant(&self, _: &TenantId) -> Result<Option<Tenant>, StoreError> {
        Err(unavailable())
    }
    async fn list_tenants(&self) -> Result<Vec<Tenant>, StoreError> {
        Err(unavailable())
    }
    async fn tenant_by_admin_key_hash(
        &self,
        _: &Sha256Hex,
    ) -> Result<Option<TenantId>, StoreError> {
        Err(unavailable())
    }
    async fn set_admin_key_hash(
        &self,
        _: &TenantId,
        _: &Sha256Hex,
        _: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        Err(unavailable())
    }
    async fn get_mcp_config(&self, _: &TenantId) -> Result<Option<StoredMcpConfig>, StoreError> {
        if self.fail {
            return Err(unavailable());
        }
        Ok(self.config.lock().unwrap().clone())
    }
    async fn put_widget_key(
        &self,
        _: &TenantId,
        _: &countersign_domain::ports::WidgetKey,
        _: &AuditEntry,
    ) -> Result<(), StoreError> {
        Err(unavailable())
    }
    async fn get_widget_key(
        &self,
        _: &TenantId,
        _: &countersign_domain::ids::WidgetKeyId,
    ) -> Result<Option<countersign_domain::ports::WidgetKey>, StoreError> {
        Err(unavailable())
    }
    async fn list_widget_keys(
        &self,
        _: &TenantId,
    ) -> Result<Vec<countersign_domain::ports::WidgetKey>, StoreError> {
        Err(unavailable())
    }
    async fn delete_widget_key(
        &self,
        _: &TenantId,
        _: &countersign_domain::ids::WidgetKeyId,
        _: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        Err(unavailable())
    }
    async fn delete_mcp_config(
        &self,
        _: &TenantId,
        _: u64,
        _: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        Err(unavailable())
    }
    async fn put_mcp_config(
        &self,
        _: &TenantId,
        _: &StoredMcpConfig,
        _: Option<u64>,
        _: &AuditEntry,
    ) -> Result<TransitionOutcome, StoreError> {
        Err(unavailable())
    }
    async fn put_certification(
        &self,
        _: &TenantId,
        _: &countersign_domain::certification::Certification,
        _: &countersign_domain::ports::AuditEntry,
    ) -> Result<(), StoreError> {
        Err(unavailable())
    }
    async fn latest_certification(
        &self,
        _: &TenantId,
    ) -> Result<Option<countersign_domain::certification::Certification>, StoreError> {
        Err(unavailable())
    }
    async fn list_audit(
        &self,
        _: &TenantId,
        _: Option<&countersign_domain::ids::AuditId>,
        _: usize,
    ) -> Result<countersign_domain::ports::AuditPage, StoreError> {
        Err(unavailable())
    }
    async fn audit_trail(
        &self,
        _: &TenantId,
    ) -> Result<countersign_domain::ports::AuditTrail, StoreError> {
        Err(unavailable())
    }
}
