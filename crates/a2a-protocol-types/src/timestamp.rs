//! RFC 3339 timestamps in UTC, as `google.protobuf.Timestamp` is written in ProtoJSON.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A point in time, written as RFC 3339 in UTC (`2025-10-28T10:30:00.000Z`).
///
/// Parsing accepts any RFC 3339 offset and converts it to UTC; writing always uses `Z` and as
/// many fractional digits as the value needs (0, 3, 6 or 9), which is what ProtoJSON does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(DateTime<Utc>);

impl Timestamp {
    /// The current time, truncated to milliseconds (the precision the spec recommends).
    pub fn now() -> Self {
        let now = Utc::now();
        let millis = now.timestamp_millis();
        Self(DateTime::from_timestamp_millis(millis).unwrap_or(now))
    }

    /// Wraps a `chrono` UTC time.
    pub fn from_datetime(time: DateTime<Utc>) -> Self {
        Self(time)
    }

    /// The time as a `chrono` UTC time.
    pub fn as_datetime(&self) -> DateTime<Utc> {
        self.0
    }

    /// Milliseconds since the Unix epoch.
    pub fn unix_millis(&self) -> i64 {
        self.0.timestamp_millis()
    }

    /// The time `millis` milliseconds after the Unix epoch, if representable.
    pub fn from_unix_millis(millis: i64) -> Option<Self> {
        DateTime::from_timestamp_millis(millis).map(Self)
    }
}

impl From<DateTime<Utc>> for Timestamp {
    fn from(time: DateTime<Utc>) -> Self {
        Self(time)
    }
}

/// A string that is not an RFC 3339 timestamp.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid timestamp {0:?}: expected RFC 3339 such as 2025-10-28T10:30:00.000Z")]
pub struct TimestampParseError(String);

impl FromStr for Timestamp {
    type Err = TimestampParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DateTime::parse_from_rfc3339(s)
            .map(|t| Self(t.with_timezone(&Utc)))
            .map_err(|_| TimestampParseError(s.chars().take(64).collect()))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.to_rfc3339_opts(SecondsFormat::AutoSi, true))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}
