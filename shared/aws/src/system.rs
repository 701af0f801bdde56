//! The system clock and ULID ids: the production implementations of the `Clock` and
//! `Ids` ports.

use countersign_domain::ids::{CaseId, MessageId, TenantId, WidgetKeyId};
use countersign_domain::ports::{Clock, Ids};
use countersign_domain::time::Timestamp;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0);
        // Out of range only for a clock beyond year 9999.
        Timestamp::from_unix_millis(ms).unwrap_or(Timestamp::EPOCH)
    }
}

/// ULID ids, monotonic within this process: two ids made in the same millisecond still
/// sort in creation order (message order, decision 0002).
#[derive(Default)]
pub struct UlidIds {
    generator: Mutex<ulid::Generator>,
}

impl std::fmt::Debug for UlidIds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UlidIds")
    }
}

impl UlidIds {
    fn next(&self) -> String {
        let mut g = self
            .generator
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Overflow of the random part within one millisecond (2^80 ids) cannot happen in
        // practice; fall back to a fresh ULID rather than failing.
        g.generate()
            .unwrap_or_else(|_| ulid::Ulid::new())
            .to_string()
    }
}

macro_rules! make {
    ($self:ident, $ty:ty) => {
        <$ty>::from_ulid_text(&$self.next()).unwrap_or_else(|_| unreachable_ulid())
    };
}

#[allow(clippy::panic)]
fn unreachable_ulid() -> ! {
    panic!("a generated ULID always parses")
}

impl Ids for UlidIds {
    fn tenant_id(&self) -> TenantId {
        make!(self, TenantId)
    }
    fn case_id(&self) -> CaseId {
        make!(self, CaseId)
    }
    fn message_id(&self) -> MessageId {
        make!(self, MessageId)
    }
    fn widget_key_id(&self) -> WidgetKeyId {
        make!(self, WidgetKeyId)
    }
    fn proof_jti(&self) -> String {
        self.next()
    }
    fn audit_id(&self) -> countersign_domain::ids::AuditId {
        make!(self, countersign_domain::ids::AuditId)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_ids_sort_in_creation_order() {
        let ids = UlidIds::default();
        let v: Vec<MessageId> = (0..1000).map(|_| ids.message_id()).collect();
        let mut sorted = v.clone();
        sorted.sort();
        assert_eq!(v, sorted);
        assert!(SystemClock.now().unix_seconds() > 1_700_000_000);
    }
}
