//! Time and identifiers.

use crate::ids::{CaseId, MessageId, TenantId, WidgetKeyId};
use crate::time::Timestamp;

/// The current time.
pub trait Clock: Send + Sync {
    /// Now, in UTC.
    fn now(&self) -> Timestamp;
}

/// Fresh identifiers. Implementations use ULIDs (time-ordered, 80 random bits).
pub trait Ids: Send + Sync {
    /// A new tenant id.
    fn tenant_id(&self) -> TenantId;
    /// A new case id.
    fn case_id(&self) -> CaseId;
    /// A new message id.
    fn message_id(&self) -> MessageId;
    /// A new widget credential id.
    fn widget_key_id(&self) -> WidgetKeyId;
    /// A new, unique proof `jti`.
    fn proof_jti(&self) -> String;
    /// A new audit record id.
    fn audit_id(&self) -> crate::ids::AuditId;
    /// Raises this process's floor: every id minted afterwards sorts after `seen`, whatever
    /// the clock of the process that minted `seen` said (a hybrid logical clock). Called
    /// with the presentation of the proposal a request read, so that "written after the
    /// presentation" (A-23) follows the conversation, not the clocks of the instances that
    /// served it (issue 27).
    fn observe_message(&self, seen: &MessageId);
}
