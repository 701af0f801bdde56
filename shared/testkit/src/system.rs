//! A settable clock and time-ordered ids.

use countersign_domain::ids::{AuditId, CaseId, MessageId, TenantId, WidgetKeyId};
use countersign_domain::ports::{Clock, Ids};
use countersign_domain::time::Timestamp;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// A clock that moves only when told (starts at 2026-11-29T21:15:00Z).
#[derive(Debug)]
pub struct TestClock(Mutex<Timestamp>);

impl Default for TestClock {
    fn default() -> Self {
        Self(Mutex::new(
            Timestamp::from_unix_seconds(1_795_986_900).unwrap_or(Timestamp::EPOCH),
        ))
    }
}

impl TestClock {
    /// Moves the clock forward.
    pub fn advance_secs(&self, secs: i64) {
        let mut t = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        *t = t.plus_seconds(secs);
    }

    /// Moves the clock forward by `ms` milliseconds.
    pub fn advance_millis(&self, ms: i64) {
        let mut t = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        *t = Timestamp::from_unix_millis(t.unix_millis() + ms).unwrap_or(*t);
    }
}

impl Clock for TestClock {
    fn now(&self) -> Timestamp {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// ULIDs whose time part is the clock's and whose random part is a counter: ids sort in
/// creation order, as the production generator's do (decision 0002), and the time in a
/// message id follows the test clock (the stuck-execution rule reads it).
#[derive(Debug)]
pub struct SeqIds {
    clock: Arc<TestClock>,
    next: AtomicU64,
    /// The last id minted or seen ([`Ids::observe_message`]).
    last: Mutex<u128>,
}

impl SeqIds {
    /// Ids stamped with `clock`'s time.
    pub fn new(clock: Arc<TestClock>) -> Self {
        Self {
            clock,
            next: AtomicU64::new(1),
            last: Mutex::new(0),
        }
    }

    fn ulid(&self) -> String {
        let ms = u64::try_from(self.clock.now().unix_millis()).unwrap_or(0);
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let id = ulid::Ulid::from_parts(ms, u128::from(n)).0.max(*last + 1);
        *last = id;
        ulid::Ulid(id).to_string()
    }
}

macro_rules! make {
    ($self:ident, $ty:ty) => {
        match <$ty>::from_ulid_text(&$self.ulid()) {
            Ok(id) => id,
            Err(_) => unreachable!("a ULID always parses"),
        }
    };
}

impl Ids for SeqIds {
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
        self.ulid()
    }
    fn audit_id(&self) -> AuditId {
        make!(self, AuditId)
    }
    fn observe_message(&self, seen: &MessageId) {
        let seen = seen.as_str().strip_prefix(MessageId::PREFIX).unwrap_or("");
        if let Ok(u) = ulid::Ulid::from_string(seen) {
            let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
            *last = (*last).max(u.0);
        }
    }
}

/// Gives way once to other futures of the same task (as every real store call does), so
/// that requests joined in one test interleave at each store call.
pub(crate) async fn yield_now() {
    struct YieldOnce(bool);
    impl std::future::Future for YieldOnce {
        type Output = ();
        fn poll(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<()> {
            if self.0 {
                return std::task::Poll::Ready(());
            }
            self.0 = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    }
    YieldOnce(false).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_sort_in_creation_order_even_when_the_clock_stands_still() {
        let ids = SeqIds::new(Arc::new(TestClock::default()));
        let v: Vec<MessageId> = (0..100).map(|_| ids.message_id()).collect();
        let mut sorted = v.clone();
        sorted.sort();
        assert_eq!(v, sorted);
    }
}
