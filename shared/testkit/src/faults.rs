//! Planned failures, per operation name.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

/// How one call fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The service is unreachable: nothing happens and the caller gets an error (store,
    /// secret store or signer unavailable; provider unreachable).
    Unavailable,
    /// The write happens but its answer is lost: the caller gets an error although the
    /// change is stored (a lost response on real DynamoDB).
    LostResponse,
    /// A conditional write loses a race: nothing is written and the store answers its
    /// conflict outcome.
    Conflict,
    /// The provider does not answer in time (after the request may have arrived).
    Timeout,
    /// The call never returns (a model or provider that hangs): what the caller's own
    /// deadline must cut short. Elsewhere it acts as `Unavailable`.
    Hang,
}

/// Fault switches: a whole-service `down` switch and a queue of planned faults per
/// operation (the trait method's name, e.g. `confirm`, or a tool name for a provider).
#[derive(Debug, Default)]
pub struct Faults {
    down: AtomicBool,
    plan: Mutex<HashMap<String, VecDeque<Fault>>>,
}

impl Faults {
    /// Every call fails as [`Fault::Unavailable`] while `down` is set.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// The next call of `op` fails with `fault` (faults queue in order).
    pub fn once(&self, op: &str, fault: Fault) {
        self.plan
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(op.to_owned())
            .or_default()
            .push_back(fault);
    }

    /// The fault for this call of `op`, if any (consumes a planned one).
    pub fn take(&self, op: &str) -> Option<Fault> {
        if self.down.load(Ordering::SeqCst) {
            return Some(Fault::Unavailable);
        }
        self.plan
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_mut(op)
            .and_then(VecDeque::pop_front)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn planned_faults_are_consumed_in_order_and_down_overrides() {
        let f = Faults::default();
        f.once("confirm", Fault::Conflict);
        f.once("confirm", Fault::LostResponse);
        assert_eq!(f.take("confirm"), Some(Fault::Conflict));
        assert_eq!(f.take("load"), None);
        assert_eq!(f.take("confirm"), Some(Fault::LostResponse));
        assert_eq!(f.take("confirm"), None);
        f.set_down(true);
        assert_eq!(f.take("load"), Some(Fault::Unavailable));
    }
}
