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
/// sort in creation order (message order, decision 0002); and never before an id this
/// process has seen ([`Ids::observe_message`], A-23).
#[derive(Default)]
pub struct UlidIds {
    /// The last id minted or seen.
    last: Mutex<Option<ulid::Ulid>>,
}

impl std::fmt::Debug for UlidIds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UlidIds")
    }
}

impl UlidIds {
    fn next(&self) -> String {
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let fresh = ulid::Ulid::new();
        // Past the last one: later in its millisecond by a random step of 1 ..= 2^64 (N-1:
        // two instances floored at the same id — one observed by both — never mint the
        // same next id, as `+1` did; a carry past the millisecond's 2^80 only moves the
        // time part on by one millisecond).
        let id = match *last {
            Some(l) if fresh <= l => {
                let step = 1 + (fresh.random() & u128::from(u64::MAX));
                l.0.checked_add(step).map_or(fresh, ulid::Ulid)
            }
            _ => fresh,
        };
        *last = Some(id);
        id.to_string()
    }

    fn observe(&self, seen: &str) {
        let Ok(seen) = ulid::Ulid::from_string(seen) else {
            return;
        };
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if last.is_none_or(|l| seen > l) {
            *last = Some(seen);
        }
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
    fn observe_message(&self, seen: &MessageId) {
        if let Some(ulid) = seen.as_str().strip_prefix(MessageId::PREFIX) {
            self.observe(ulid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A-23 (issue 27): an id seen from a process whose clock is an hour ahead raises the
    /// floor; every id minted afterwards sorts after it, and ids stay in creation order.
    #[test]
    fn ids_minted_after_an_observed_one_sort_after_it() {
        let ahead = ulid::Ulid::from_parts(
            u64::try_from(SystemClock.now().unix_millis() + 3_600_000).unwrap_or(0),
            7,
        );
        let seen = MessageId::from_ulid_text(&ahead.to_string()).unwrap();
        let ids = UlidIds::default();
        let before = ids.message_id();
        assert!(before < seen);
        ids.observe_message(&seen);
        let after: Vec<MessageId> = (0..100).map(|_| ids.message_id()).collect();
        assert!(after[0] > seen, "{} {}", after[0], seen);
        let mut sorted = after.clone();
        sorted.sort();
        assert_eq!(after, sorted);
        // An older id seen later changes nothing.
        ids.observe_message(&before);
        assert!(ids.message_id() > after[99]);
    }

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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod n1_tests {
    use super::*;

    /// N-1: two instances floored at the same id (both observed a presentation minted by
    /// a clock ahead of theirs) mint different ids, each still after it and in order.
    #[test]
    fn n1_two_instances_floored_at_one_id_mint_different_ids() {
        let ahead = ulid::Ulid::from_parts(ulid::Ulid::new().timestamp_ms() + 10_000, 7);
        let (a, b) = (UlidIds::default(), UlidIds::default());
        a.observe(&ahead.to_string());
        b.observe(&ahead.to_string());
        let mint = |ids: &UlidIds| (0..1000).map(|_| ids.next()).collect::<Vec<_>>();
        let (xs, ys) = (mint(&a), mint(&b));
        let all: std::collections::HashSet<&String> = xs.iter().chain(&ys).collect();
        assert_eq!(all.len(), 2000, "an id minted by both");
        for list in [&xs, &ys] {
            assert!(list.windows(2).all(|w| w[0] < w[1]));
            assert!(list[0] > ahead.to_string());
        }
    }
}
