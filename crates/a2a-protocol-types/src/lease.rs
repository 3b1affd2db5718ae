//! The lease extension (`https://a2a-rust.com/extensions/lease/v1`): the data.
//!
//! A parent grants its child task a time-to-live on the message that starts it
//! (`metadata["a2a-rust.com/lease"] = {"ttlMs": 30000}`). The child's server cancels the task
//! when the lease lapses unrenewed, so a parent that goes silent does not leave work running.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::extensions::{attach, metadata_value};
use crate::message::Message;

/// The extension's URI.
pub const LEASE_EXTENSION_URI: &str = "https://a2a-rust.com/extensions/lease/v1";
/// The `Message.metadata` key the lease is stored under.
pub const LEASE_METADATA_KEY: &str = "a2a-rust.com/lease";
/// The shortest lease accepted, in milliseconds.
pub const MIN_LEASE_TTL_MS: u64 = 1_000;

/// A lease granted to a child task.
///
/// ```
/// use std::time::Duration;
///
/// use a2a_protocol_types::lease::Lease;
///
/// let lease = Lease::new(Duration::from_secs(30));
/// assert_eq!(serde_json::to_string(&lease).unwrap(), r#"{"ttlMs":30000}"#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    /// How long the task may run without a renewal, in milliseconds.
    #[serde(alias = "ttl_ms")]
    pub ttl_ms: u64,
}

impl Lease {
    /// A lease of `ttl` (whole milliseconds, saturating).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_types::lease::Lease;
    ///
    /// assert_eq!(Lease::new(Duration::from_millis(1_500)).ttl_ms, 1_500);
    /// ```
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// The time-to-live.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_types::lease::Lease;
    ///
    /// assert_eq!(Lease { ttl_ms: 2_000 }.ttl(), Duration::from_secs(2));
    /// ```
    pub fn ttl(&self) -> Duration {
        Duration::from_millis(self.ttl_ms)
    }

    /// Checks the lease is at least [`MIN_LEASE_TTL_MS`].
    ///
    /// ```
    /// use a2a_protocol_types::lease::{Lease, LeaseError};
    ///
    /// assert_eq!(Lease { ttl_ms: 999 }.validate(), Err(LeaseError::TooShort));
    /// assert!(Lease { ttl_ms: 1_000 }.validate().is_ok());
    /// ```
    pub fn validate(&self) -> Result<(), LeaseError> {
        if self.ttl_ms < MIN_LEASE_TTL_MS {
            return Err(LeaseError::TooShort);
        }
        Ok(())
    }
}

/// Why a lease is not acceptable.
///
/// ```
/// use a2a_protocol_types::lease::{LeaseError, lease_of};
/// use a2a_protocol_types::{Message, Metadata};
///
/// let mut message = Message::user_text("work");
/// let mut metadata = Metadata::new();
/// metadata.insert("a2a-rust.com/lease".into(), serde_json::json!("30s"));
/// message.metadata = Some(metadata);
/// assert_eq!(lease_of(&message), Err(LeaseError::Malformed));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum LeaseError {
    /// Below [`MIN_LEASE_TTL_MS`].
    #[error("lease ttlMs is too short: grant at least 1000 ms")]
    TooShort,
    /// The metadata value is not `{"ttlMs": <non-negative integer>}`.
    #[error("metadata[\"a2a-rust.com/lease\"] must be an object {{\"ttlMs\": <milliseconds>}}")]
    Malformed,
}

/// The message's lease: `Ok(None)` when it has none, an error when the one it has is malformed.
///
/// ```
/// use std::time::Duration;
///
/// use a2a_protocol_types::Message;
/// use a2a_protocol_types::lease::{Lease, lease_of, set_lease};
///
/// let mut message = Message::user_text("work");
/// assert_eq!(lease_of(&message), Ok(None));
/// set_lease(&mut message, Lease::new(Duration::from_secs(30))).unwrap();
/// assert_eq!(lease_of(&message).unwrap().unwrap().ttl(), Duration::from_secs(30));
/// ```
pub fn lease_of(message: &Message) -> Result<Option<Lease>, LeaseError> {
    let Some(value) = metadata_value(message, LEASE_METADATA_KEY) else {
        return Ok(None);
    };
    let lease = Lease::deserialize(value).map_err(|_| LeaseError::Malformed)?;
    lease.validate()?;
    Ok(Some(lease))
}

/// Attaches the lease to the message and declares the extension once.
///
/// ```
/// use std::time::Duration;
///
/// use a2a_protocol_types::Message;
/// use a2a_protocol_types::lease::{LEASE_EXTENSION_URI, Lease, LeaseError, set_lease};
///
/// let mut message = Message::user_text("work");
/// set_lease(&mut message, Lease::new(Duration::from_secs(30))).unwrap();
/// assert!(message.declares(LEASE_EXTENSION_URI));
/// assert_eq!(set_lease(&mut message, Lease { ttl_ms: 10 }), Err(LeaseError::TooShort));
/// ```
pub fn set_lease(message: &mut Message, lease: Lease) -> Result<(), LeaseError> {
    lease.validate()?;
    let value = serde_json::to_value(lease).map_err(|_| LeaseError::Malformed)?;
    attach(message, LEASE_EXTENSION_URI, LEASE_METADATA_KEY, value);
    Ok(())
}
