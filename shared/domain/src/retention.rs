//! R-1 (seed 001 §6, decision 0052): how long a tenant keeps a conversation after its
//! last activity. Pure: the purge (countersign-admin) and the stores apply it.

use crate::ids::{CaseId, UserId};
use crate::time::Timestamp;
use std::collections::BTreeSet;

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

/// a legal hold, on a person (every conversation of theirs) or on one conversation.
/// While it stands, neither the purge nor an erasure removes what it covers.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Hold {
    /// Every conversation of this person, and the person's erasure.
    Person(UserId),
    /// This conversation.
    Conversation(CaseId),
}

impl Hold {
    /// `person` or `conversation`, as the API and the audit record name it.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Person(_) => "person",
            Self::Conversation(_) => "conversation",
        }
    }

    /// The held id.
    #[must_use]
    pub fn id(&self) -> &str {
        match self {
            Self::Person(u) => u.as_str(),
            Self::Conversation(c) => c.as_str(),
        }
    }
}

/// A tenant's legal holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Holds {
    /// Held people.
    pub people: BTreeSet<UserId>,
    /// Held conversations.
    pub conversations: BTreeSet<CaseId>,
}

impl Holds {
    /// Whether `hold` stands.
    #[must_use]
    pub fn contains(&self, hold: &Hold) -> bool {
        match hold {
            Hold::Person(u) => self.people.contains(u),
            Hold::Conversation(c) => self.conversations.contains(c),
        }
    }

    /// Whether `user`'s conversation `case` is held (by either hold).
    #[must_use]
    pub fn keeps(&self, user: &UserId, case: &CaseId) -> bool {
        self.people.contains(user) || self.conversations.contains(case)
    }

    /// Places (`on`) or lifts `hold`; whether that changed anything.
    pub fn set(&mut self, hold: &Hold, on: bool) -> bool {
        match (hold, on) {
            (Hold::Person(u), true) => self.people.insert(u.clone()),
            (Hold::Person(u), false) => self.people.remove(u),
            (Hold::Conversation(c), true) => self.conversations.insert(c.clone()),
            (Hold::Conversation(c), false) => self.conversations.remove(c),
        }
    }

    /// Every hold, people first.
    pub fn iter(&self) -> impl Iterator<Item = Hold> + '_ {
        self.people
            .iter()
            .cloned()
            .map(Hold::Person)
            .chain(self.conversations.iter().cloned().map(Hold::Conversation))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// a person's hold keeps every conversation of theirs; a conversation's keeps
    /// that one only; lifting it keeps nothing.
    #[test]
    fn r3_a_hold_keeps_what_it_covers_until_lifted() {
        let (ana, bruno) = (
            UserId::parse("ana").unwrap(),
            UserId::parse("bruno").unwrap(),
        );
        let (c1, c2) = (
            CaseId::from_ulid_text("01JDZ6Y5X1QW9T3V7N2K4M8P0R").unwrap(),
            CaseId::from_ulid_text("01JDZ6Y5X1QW9T3V7N2K4M8P0S").unwrap(),
        );
        let mut holds = Holds::default();
        assert!(holds.set(&Hold::Person(ana.clone()), true));
        assert!(!holds.set(&Hold::Person(ana.clone()), true), "placed twice");
        assert!(holds.set(&Hold::Conversation(c2.clone()), true));
        assert!(holds.keeps(&ana, &c1));
        assert!(holds.keeps(&bruno, &c2));
        assert!(!holds.keeps(&bruno, &c1));
        assert!(holds.set(&Hold::Person(ana.clone()), false));
        assert!(!holds.keeps(&ana, &c1));
        assert_eq!(holds.iter().count(), 1);
    }

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
