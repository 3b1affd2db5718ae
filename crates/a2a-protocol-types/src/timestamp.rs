//! RFC 3339 timestamps in UTC, as `google.protobuf.Timestamp` is written in ProtoJSON.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A point in time, written as RFC 3339 in UTC (`2025-10-28T10:30:00.000Z`).
///
/// Parsing accepts any RFC 3339 offset and converts it to UTC. Writing always uses `Z` and
/// millisecond precision (spec §5.6.1), so every timestamp this SDK makes has one length;
/// a time read with finer precision keeps it (6 or 9 digits), as ProtoJSON allows.
///
/// ```
/// use a2a_protocol_types::Timestamp;
///
/// let time: Timestamp = "2025-10-28T12:30:00+02:00".parse().unwrap();
/// assert_eq!(time.to_string(), "2025-10-28T10:30:00.000Z");
/// assert_eq!(serde_json::to_value(time).unwrap(), "2025-10-28T10:30:00.000Z");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(DateTime<Utc>);

impl Timestamp {
    /// The current time, truncated to milliseconds (the precision the spec recommends).
    ///
    /// ```
    /// use a2a_protocol_types::Timestamp;
    ///
    /// let now = Timestamp::now();
    /// assert_eq!(now.unix_millis() % 1, 0);
    /// assert!(now.as_datetime().timestamp_subsec_nanos() % 1_000_000 == 0, "whole milliseconds");
    /// ```
    pub fn now() -> Self {
        let now = Utc::now();
        let millis = now.timestamp_millis();
        Self(DateTime::from_timestamp_millis(millis).unwrap_or(now))
    }

    /// Wraps a `chrono` UTC time.
    ///
    /// ```
    /// use a2a_protocol_types::Timestamp;
    ///
    /// let time = Timestamp::from_datetime(chrono::DateTime::UNIX_EPOCH);
    /// assert_eq!(time.unix_millis(), 0);
    /// ```
    pub fn from_datetime(time: DateTime<Utc>) -> Self {
        Self(time)
    }

    /// The time as a `chrono` UTC time.
    ///
    /// ```
    /// use a2a_protocol_types::Timestamp;
    ///
    /// let time = Timestamp::from_unix_millis(86_400_000).unwrap();
    /// assert_eq!(time.as_datetime().timestamp(), 86_400);
    /// ```
    pub fn as_datetime(&self) -> DateTime<Utc> {
        self.0
    }

    /// Milliseconds since the Unix epoch.
    ///
    /// ```
    /// use a2a_protocol_types::Timestamp;
    ///
    /// let time: Timestamp = "1970-01-01T00:00:01.500Z".parse().unwrap();
    /// assert_eq!(time.unix_millis(), 1_500);
    /// ```
    pub fn unix_millis(&self) -> i64 {
        self.0.timestamp_millis()
    }

    /// The time `millis` milliseconds after the Unix epoch, if representable.
    ///
    /// ```
    /// use a2a_protocol_types::Timestamp;
    ///
    /// assert_eq!(Timestamp::from_unix_millis(1_500).unwrap().to_string(), "1970-01-01T00:00:01.500Z");
    /// assert_eq!(Timestamp::from_unix_millis(i64::MAX), None);
    /// ```
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
///
/// ```
/// use a2a_protocol_types::Timestamp;
///
/// let error = "yesterday".parse::<Timestamp>().unwrap_err();
/// assert!(error.to_string().contains("RFC 3339"), "{error}");
/// ```
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
        use chrono::{Datelike as _, Timelike as _};
        let (year, nanos) = (self.0.year(), self.0.nanosecond());
        // Every status of every answer carries one, so the common case skips chrono's general
        // formatter (and its allocation); odd years and leap seconds go the long way.
        if !(0..=9999).contains(&year) || nanos >= 1_000_000_000 {
            return f.write_str(&self.0.to_rfc3339_opts(seconds_format(nanos), true));
        }
        let mut out = *b"0000-00-00T00:00:00.000000000Z";
        write_digits(&mut out[0..4], year.unsigned_abs());
        write_digits(&mut out[5..7], self.0.month());
        write_digits(&mut out[8..10], self.0.day());
        write_digits(&mut out[11..13], self.0.hour());
        write_digits(&mut out[14..16], self.0.minute());
        write_digits(&mut out[17..19], self.0.second());
        let (fraction, digits) = match nanos {
            n if n % 1_000_000 == 0 => (n / 1_000_000, 3),
            n if n % 1_000 == 0 => (n / 1_000, 6),
            n => (n, 9),
        };
        write_digits(&mut out[20..20 + digits], fraction);
        let end = 20 + digits;
        out[end] = b'Z';
        f.write_str(std::str::from_utf8(&out[..=end]).map_err(|_| fmt::Error)?)
    }
}

/// Milliseconds, or finer when the time has finer precision.
fn seconds_format(nanos: u32) -> SecondsFormat {
    match nanos % 1_000_000_000 {
        n if n % 1_000_000 == 0 => SecondsFormat::Millis,
        n if n % 1_000 == 0 => SecondsFormat::Micros,
        _ => SecondsFormat::Nanos,
    }
}

/// Writes `value` as decimal digits filling `out`, zero-padded on the left.
fn write_digits(out: &mut [u8], mut value: u32) {
    for byte in out.iter_mut().rev() {
        *byte = b'0' + (value % 10) as u8;
        value /= 10;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_format_writes_what_chrono_writes() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..20_000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let seconds = (seed >> 20) as i64 % 253_402_300_799; // up to 9999-12-31
            let nanos = match i % 4 {
                0 => 0,
                1 => (seed % 1000) as u32 * 1_000_000,
                2 => (seed % 1_000_000) as u32 * 1_000,
                _ => (seed % 1_000_000_000) as u32,
            };
            let time = DateTime::from_timestamp(seconds, nanos).expect("in range");
            let expected = time.to_rfc3339_opts(seconds_format(nanos), true);
            assert_eq!(Timestamp(time).to_string(), expected);
        }
    }

    #[test]
    fn a_whole_second_is_written_with_milliseconds() {
        let time = DateTime::from_timestamp(1_764_767_478, 0).expect("in range");
        assert_eq!(Timestamp(time).to_string(), "2025-12-03T13:11:18.000Z");
    }
}
