//! Instants of the protocol: UTC timestamps written as ISO-8601 / RFC 3339.

use std::fmt;
use time::{OffsetDateTime, UtcOffset, format_description::well_known::Rfc3339};

/// Why a string is not an ISO-8601 UTC timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TimestampError {
    /// Not RFC 3339 (the ISO-8601 profile the protocol uses).
    #[error("must be an ISO-8601 timestamp such as 2026-11-29T21:15:00Z")]
    Format,
    /// A valid timestamp with a non-zero UTC offset.
    #[error("must be in UTC (offset Z or +00:00)")]
    NotUtc,
    /// Out of the representable range.
    #[error("is out of range")]
    OutOfRange,
}

/// A UTC instant. Parsing accepts RFC 3339 with offset `Z` or `+00:00` and fractional
/// seconds; writing always uses `Z`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(OffsetDateTime);

impl Timestamp {
    /// 1970-01-01T00:00:00Z.
    pub const EPOCH: Self = Self(OffsetDateTime::UNIX_EPOCH);

    /// Parses an ISO-8601 UTC timestamp (A-14: `expiresAt`).
    pub fn parse_utc(s: &str) -> Result<Self, TimestampError> {
        let t = OffsetDateTime::parse(s, &Rfc3339).map_err(|_| TimestampError::Format)?;
        if t.offset() != UtcOffset::UTC {
            return Err(TimestampError::NotUtc);
        }
        Ok(Self(t))
    }

    /// From whole seconds since the Unix epoch.
    pub fn from_unix_seconds(secs: i64) -> Result<Self, TimestampError> {
        OffsetDateTime::from_unix_timestamp(secs)
            .map(Self)
            .map_err(|_| TimestampError::OutOfRange)
    }

    /// From milliseconds since the Unix epoch.
    pub fn from_unix_millis(ms: i64) -> Result<Self, TimestampError> {
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
            .map(Self)
            .map_err(|_| TimestampError::OutOfRange)
    }

    /// Whole seconds since the Unix epoch, rounded down (JWT `NumericDate`).
    pub fn unix_seconds(self) -> i64 {
        self.0.unix_timestamp()
    }

    /// Milliseconds since the Unix epoch, rounded down.
    pub fn unix_millis(self) -> i64 {
        // In range for any year the `time` crate can represent.
        i64::try_from(self.0.unix_timestamp_nanos().div_euclid(1_000_000)).unwrap_or(i64::MAX)
    }

    /// This instant plus `secs` seconds (saturating at the representable range).
    pub fn plus_seconds(self, secs: i64) -> Self {
        Self(
            self.0
                .checked_add(time::Duration::seconds(secs))
                .unwrap_or(self.0),
        )
    }

    /// Seconds from `self` to `later` (negative when `later` is earlier), rounded down.
    pub fn seconds_until(self, later: Self) -> i64 {
        (later.0 - self.0).whole_seconds()
    }

    /// RFC 3339 text with `Z`.
    pub fn to_rfc3339(self) -> String {
        // Formatting a UTC OffsetDateTime as RFC 3339 only fails for years outside
        // 0..=9999, which `parse_utc` and the clock never produce.
        self.0
            .format(&Rfc3339)
            .unwrap_or_else(|_| self.0.unix_timestamp().to_string())
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp({})", self.to_rfc3339())
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_rfc3339())
    }
}

impl serde::Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_rfc3339())
    }
}

impl<'de> serde::Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Self::parse_utc(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// `expiresAt` is ISO-8601 UTC.
    #[test]
    fn a14_expires_at_must_be_iso8601_utc() {
        let t = Timestamp::parse_utc("2026-11-29T21:15:00Z").unwrap();
        assert_eq!(t.unix_seconds(), 1_795_986_900);
        assert_eq!(
            Timestamp::parse_utc("2026-11-29T21:15:00+00:00").unwrap(),
            t
        );
        assert!(Timestamp::parse_utc("2026-11-29T21:15:00.250Z").is_ok());
        assert_eq!(
            Timestamp::parse_utc("2026-11-29T21:15:00-03:00"),
            Err(TimestampError::NotUtc)
        );
        for bad in [
            "2026-11-29",
            "2026-11-29 21:15:00",
            "tomorrow",
            "",
            "1795468500",
        ] {
            assert_eq!(
                Timestamp::parse_utc(bad),
                Err(TimestampError::Format),
                "{bad}"
            );
        }
    }

    #[test]
    fn arithmetic_and_formatting() {
        let t = Timestamp::from_unix_seconds(1_795_986_900).unwrap();
        assert_eq!(t.to_rfc3339(), "2026-11-29T21:15:00Z");
        assert_eq!(t.plus_seconds(60).unix_seconds(), 1_795_986_960);
        assert_eq!(t.seconds_until(t.plus_seconds(-5)), -5);
        assert_eq!(
            Timestamp::from_unix_millis(1_500).unwrap().unix_millis(),
            1_500
        );
    }
}
