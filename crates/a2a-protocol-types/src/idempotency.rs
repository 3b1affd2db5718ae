//! The idempotency extension (`https://a2a-rust.com/extensions/idempotency/v1`).
//!
//! A client attaches an unguessable key to a send; a server that honours the extension runs
//! the send once per key and answers every retry with the task the first attempt created.
//! The key travels in `Message.metadata` under [`IDEMPOTENCY_METADATA_KEY`], and
//! [`set_key`] declares [`IDEMPOTENCY_EXTENSION_URI`] in `Message.extensions` beside it. A key
//! present without the URI is still a key: whoever set it meant to be deduplicated.
//!
//! Keys are scoped to the tenant (and the authenticated caller, when there is one), never to
//! the context. Generate them with [`generate_key`]; never derive them from message content.

use serde_json::Value;

use crate::extensions::{attach, metadata_value};
use crate::message::Message;

/// The extension's URI, as listed on agent cards and in `Message.extensions`.
pub const IDEMPOTENCY_EXTENSION_URI: &str = "https://a2a-rust.com/extensions/idempotency/v1";
/// The `Message.metadata` key the idempotency key is stored under.
pub const IDEMPOTENCY_METADATA_KEY: &str = "a2a-rust.com/idempotency-key";
/// The shortest key accepted, in bytes.
pub const MIN_KEY_LEN: usize = 16;
/// The longest key accepted, in bytes.
pub const MAX_KEY_LEN: usize = 255;

/// Why a string is not an acceptable idempotency key.
///
/// ```
/// use a2a_protocol_types::idempotency::{KeyError, key_of};
/// use a2a_protocol_types::{Message, Metadata};
///
/// let mut message = Message::user_text("hi");
/// let mut metadata = Metadata::new();
/// metadata.insert("a2a-rust.com/idempotency-key".into(), serde_json::json!(12345));
/// message.metadata = Some(metadata);
/// assert_eq!(key_of(&message), Err(KeyError::NotAString));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// Fewer than [`MIN_KEY_LEN`] bytes.
    #[error(
        "idempotency key is too short: use at least 16 bytes from a CSPRNG, such as idempotency::generate_key()"
    )]
    TooShort,
    /// More than [`MAX_KEY_LEN`] bytes.
    #[error(
        "idempotency key is too long: use at most 255 bytes, such as idempotency::generate_key()"
    )]
    TooLong,
    /// A byte other than an ASCII letter, digit, `-`, `_`, `.` or `:`.
    #[error(
        "idempotency key has a character outside ASCII letters, digits, '-', '_', '.' and ':': render random bytes as hex or URL-safe base64"
    )]
    InvalidCharacter,
    /// The metadata value under the key's name is not a JSON string.
    #[error("metadata[\"a2a-rust.com/idempotency-key\"] must be a JSON string holding the key")]
    NotAString,
}

fn is_key_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b':')
}

/// Checks that `key` is 16..=255 bytes of ASCII letters, digits, `-`, `_`, `.` and `:`.
///
/// The length rules reject counters and words; they cannot detect a long key with little
/// entropy, so generate keys from a CSPRNG ([`generate_key`]).
///
/// ```
/// use a2a_protocol_types::idempotency::{KeyError, validate_key};
///
/// assert!(validate_key("8f14e45fceea167a5a36dedd4bea2543").is_ok());
/// assert_eq!(validate_key("short"), Err(KeyError::TooShort));
/// assert_eq!(validate_key("has spaces in it, sadly"), Err(KeyError::InvalidCharacter));
/// ```
pub fn validate_key(key: &str) -> Result<(), KeyError> {
    if key.len() > MAX_KEY_LEN {
        return Err(KeyError::TooLong);
    }
    if !key.bytes().all(is_key_byte) {
        return Err(KeyError::InvalidCharacter);
    }
    if key.len() < MIN_KEY_LEN {
        return Err(KeyError::TooShort);
    }
    Ok(())
}

/// The message's idempotency key: `Ok(None)` when it has none, an error when the one it has is
/// malformed.
///
/// ```
/// use a2a_protocol_types::Message;
/// use a2a_protocol_types::idempotency::{key_of, set_key};
///
/// let mut message = Message::user_text("hi");
/// assert_eq!(key_of(&message), Ok(None));
/// set_key(&mut message, "8f14e45fceea167a5a36dedd4bea2543").unwrap();
/// assert_eq!(key_of(&message), Ok(Some("8f14e45fceea167a5a36dedd4bea2543")));
/// ```
pub fn key_of(message: &Message) -> Result<Option<&str>, KeyError> {
    match metadata_value(message, IDEMPOTENCY_METADATA_KEY) {
        None => Ok(None),
        Some(Value::String(key)) => validate_key(key).map(|()| Some(key.as_str())),
        Some(_) => Err(KeyError::NotAString),
    }
}

/// Attaches `key` to the message (replacing any earlier key) and declares the extension once.
/// Nothing changes when the key is invalid.
///
/// ```
/// use a2a_protocol_types::Message;
/// use a2a_protocol_types::idempotency::{KeyError, declares_extension, set_key};
///
/// let mut message = Message::user_text("hi");
/// assert_eq!(set_key(&mut message, "tiny"), Err(KeyError::TooShort));
/// assert!(message.metadata.is_none(), "nothing changes on an invalid key");
/// set_key(&mut message, "8f14e45fceea167a5a36dedd4bea2543").unwrap();
/// assert!(declares_extension(&message));
/// ```
pub fn set_key(message: &mut Message, key: &str) -> Result<(), KeyError> {
    validate_key(key)?;
    attach(
        message,
        IDEMPOTENCY_EXTENSION_URI,
        IDEMPOTENCY_METADATA_KEY,
        Value::String(key.to_owned()),
    );
    Ok(())
}

/// Whether the message declares the idempotency extension in `Message.extensions`.
///
/// ```
/// use a2a_protocol_types::Message;
/// use a2a_protocol_types::idempotency::{IDEMPOTENCY_EXTENSION_URI, declares_extension};
///
/// let mut message = Message::user_text("hi");
/// assert!(!declares_extension(&message));
/// message.declare_extension(IDEMPOTENCY_EXTENSION_URI);
/// assert!(declares_extension(&message));
/// ```
pub fn declares_extension(message: &Message) -> bool {
    message.declares(IDEMPOTENCY_EXTENSION_URI)
}

/// A fresh key: 32 bytes from the operating system's CSPRNG, as 64 lowercase hex digits.
///
/// # Panics
///
/// If the operating system cannot provide random bytes, which leaves no safe way to make a key.
///
/// ```
/// use a2a_protocol_types::idempotency::{generate_key, validate_key};
///
/// let key = generate_key();
/// assert_eq!(key.len(), 64);
/// assert!(validate_key(&key).is_ok());
/// ```
pub fn generate_key() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the OS random number generator is unavailable");
    let mut key = String::with_capacity(64);
    for byte in bytes {
        key.push(char::from(HEX[usize::from(byte >> 4)]));
        key.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    key
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A valid idempotency key: made by [`IdempotencyKey::generate`] or checked by
/// [`IdempotencyKey::parse`], so attaching it to a message cannot fail. Its `Debug` shows only
/// a prefix, so a key logged by accident cannot be replayed by whoever reads the log.
///
/// ```
/// use a2a_protocol_types::Message;
/// use a2a_protocol_types::idempotency::{IdempotencyKey, KeyError, key_of};
///
/// let key = IdempotencyKey::generate();
/// let mut message = Message::user_text("charge order 1042");
/// key.set_on(&mut message); // Infallible: the key is valid by construction.
/// assert_eq!(key_of(&message)?, Some(key.as_str()));
/// assert_eq!(IdempotencyKey::of(&message)?, Some(key.clone()));
///
/// // A key kept with the operation, read back before a resend:
/// let stored = key.as_str().to_owned();
/// assert_eq!(IdempotencyKey::parse(stored)?, key);
/// assert_eq!(IdempotencyKey::parse("tiny"), Err(KeyError::TooShort));
/// # Ok::<(), KeyError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// A fresh key, as [`generate_key`] makes.
    ///
    /// # Panics
    ///
    /// As [`generate_key`]: if the operating system cannot provide random bytes.
    pub fn generate() -> Self {
        Self(generate_key())
    }

    /// `key` if it is valid ([`validate_key`]).
    ///
    /// # Errors
    ///
    /// The [`KeyError`] saying what is wrong with it.
    pub fn parse(key: impl Into<String>) -> Result<Self, KeyError> {
        let key = key.into();
        validate_key(&key)?;
        Ok(Self(key))
    }

    /// The key a message carries, if any.
    ///
    /// # Errors
    ///
    /// A [`KeyError`] when the message carries a malformed key.
    pub fn of(message: &Message) -> Result<Option<Self>, KeyError> {
        Ok(key_of(message)?.map(|key| Self(key.to_owned())))
    }

    /// Attaches this key to `message` (replacing any earlier key) and declares the extension.
    pub fn set_on(&self, message: &mut Message) {
        attach(
            message,
            IDEMPOTENCY_EXTENSION_URI,
            IDEMPOTENCY_METADATA_KEY,
            Value::String(self.0.clone()),
        );
    }

    /// The key's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key's text, owned.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl std::fmt::Debug for IdempotencyKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let prefix: String = self.0.chars().take(6).collect();
        write!(f, "IdempotencyKey({prefix}…)")
    }
}

impl std::fmt::Display for IdempotencyKey {
    /// The whole key: it is written where it must be sent or stored.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for IdempotencyKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for IdempotencyKey {
    type Err = KeyError;

    fn from_str(key: &str) -> Result<Self, KeyError> {
        Self::parse(key)
    }
}

impl TryFrom<String> for IdempotencyKey {
    type Error = KeyError;

    fn try_from(key: String) -> Result<Self, KeyError> {
        Self::parse(key)
    }
}

impl From<IdempotencyKey> for String {
    fn from(key: IdempotencyKey) -> String {
        key.0
    }
}

impl serde::Serialize for IdempotencyKey {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for IdempotencyKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let key = String::deserialize(deserializer)?;
        Self::parse(key).map_err(serde::de::Error::custom)
    }
}
