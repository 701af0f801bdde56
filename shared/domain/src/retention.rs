//! R-1 (seed 001 §6, decision 0052): how long a tenant keeps a conversation after its
//! last activity. Pure: the purge (countersign-admin) and the stores apply it.

use crate::time::Timestamp;

/// The fewest days a tenant may keep a conversation.
pub const MIN_DAYS: u32 = 1;
/// The most: ten years. Longer is not retention (and overflows nothing below it).
pub const MAX_DAYS: u32 = 3650;

/// A tenant's `retentionDays`, within [`MIN_DAYS`] ..= [`MAX_DAYS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct RetentionDays(u32);

/// Why a `retentionDays` was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("retentionDays must be a whole number of days from {MIN_DAYS} to {MAX_DAYS}")]
pub struct RetentionError;

impl RetentionDays {
    /// `days`, if within bounds (0, negative and absurd values are refused).
    pub fn new(days: i64) -> Result<Self, RetentionError> {
        u32::try_from(days)
            .ok()
            .filter(|d| (MIN_DAYS..=MAX_DAYS).contains(d))
            .map(Self)
            .ok_or(RetentionError)
    }

    /// The number of days.
    #[must_use]
    pub fn days(self) -> u32 {
        self.0
    }

    /// When a conversation last active at `last` is due for purge.
    #[must_use]
    pub fn due_at(self, last: Timestamp) -> Timestamp {
        last.plus_seconds(i64::from(self.0) * 86_400)
    }

    /// Whether a conversation last active at `last` is due for purge at `now`.
    #[must_use]
    pub fn is_due(self, last: Timestamp, now: Timestamp) -> bool {
        now >= self.due_at(last)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// R-1 (bad input): 0, negative and absurd values are refused; the bounds are kept.
    #[test]
    fn r1_retention_days_are_bounded() {
        for bad in [0, -1, -30, 3651, i64::from(u32::MAX) + 1, i64::MAX] {
            assert_eq!(RetentionDays::new(bad), Err(RetentionError), "{bad}");
        }
        assert_eq!(RetentionDays::new(1).map(RetentionDays::days), Ok(1));
        assert_eq!(RetentionDays::new(3650).map(RetentionDays::days), Ok(3650));
    }

    /// due exactly `days` after the last activity, not before.
    #[test]
    fn r1_a_conversation_is_due_days_after_its_last_activity() {
        let last = Timestamp::from_unix_seconds(1_800_000_000).unwrap();
        let thirty = RetentionDays::new(30).unwrap();
        assert!(!thirty.is_due(last, last.plus_seconds(30 * 86_400 - 1)));
        assert!(thirty.is_due(last, last.plus_seconds(30 * 86_400)));
    }
}
