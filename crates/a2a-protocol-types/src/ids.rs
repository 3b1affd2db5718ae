//! Identifier newtypes, so a task id cannot be passed where a context id is expected.

use std::fmt;

use serde::{Deserialize, Serialize};

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        ///
        /// ```
        #[doc = concat!("use a2a_protocol_types::", stringify!($name), ";")]
        ///
        #[doc = concat!("let id = ", stringify!($name), "::new(\"id-1\");")]
        /// assert_eq!(serde_json::to_value(&id).unwrap(), "id-1", "written as a plain string");
        /// ```
        #[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// Wraps an existing identifier.
            ///
            /// ```
            #[doc = concat!("use a2a_protocol_types::", stringify!($name), ";")]
            ///
            #[doc = concat!("assert_eq!(", stringify!($name), "::new(\"id-1\").as_str(), \"id-1\");")]
            /// ```
            pub fn new(id: impl Into<String>) -> Self {
                Self(id.into())
            }

            /// A fresh random identifier (a UUID v4).
            ///
            /// ```
            #[doc = concat!("use a2a_protocol_types::", stringify!($name), ";")]
            ///
            #[doc = concat!("let (a, b) = (", stringify!($name), "::random(), ", stringify!($name), "::random());")]
            /// assert_ne!(a, b);
            /// assert_eq!(a.as_str().len(), 36);
            /// ```
            pub fn random() -> Self {
                Self(uuid::Uuid::new_v4().to_string())
            }

            /// A fresh identifier that sorts after every one made in an earlier millisecond
            /// (a UUID v7: the time in milliseconds, then 74 random bits, as many as the
            /// format leaves). A database indexes such ids near one end instead of all over,
            /// which is why the server names new tasks and contexts this way. Nothing may rely
            /// on the order, only on the id being unique and unguessable.
            ///
            /// ```
            #[doc = concat!("use a2a_protocol_types::", stringify!($name), ";")]
            ///
            #[doc = concat!("let a = ", stringify!($name), "::time_ordered();")]
            /// std::thread::sleep(std::time::Duration::from_millis(2));
            #[doc = concat!("let b = ", stringify!($name), "::time_ordered();")]
            /// assert!(a.as_str() < b.as_str());
            /// assert_eq!(a.as_str().len(), 36);
            /// ```
            pub fn time_ordered() -> Self {
                Self(crate::ids::time_ordered_uuid())
            }

            /// The identifier as a string slice.
            ///
            /// ```
            #[doc = concat!("use a2a_protocol_types::", stringify!($name), ";")]
            ///
            #[doc = concat!("assert_eq!(", stringify!($name), "::from(\"abc\").as_str(), \"abc\");")]
            /// ```
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// Whether the identifier is empty, which on the wire means "not set".
            ///
            /// ```
            #[doc = concat!("use a2a_protocol_types::", stringify!($name), ";")]
            ///
            #[doc = concat!("assert!(", stringify!($name), "::default().is_empty());")]
            #[doc = concat!("assert!(!", stringify!($name), "::new(\"x\").is_empty());")]
            /// ```
            pub fn is_empty(&self) -> bool {
                self.0.is_empty()
            }

            /// Unwraps the identifier.
            ///
            /// ```
            #[doc = concat!("use a2a_protocol_types::", stringify!($name), ";")]
            ///
            #[doc = concat!("assert_eq!(", stringify!($name), "::new(\"x\").into_string(), String::from(\"x\"));")]
            /// ```
            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<String> for $name {
            fn from(id: String) -> Self {
                Self(id)
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> Self {
                Self(id.to_owned())
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

string_id!(
    /// Identifies a [`Message`](crate::message::Message); chosen by its sender.
    MessageId
);
string_id!(
    /// Identifies a [`Task`](crate::task::Task); chosen by the server.
    TaskId
);
string_id!(
    /// Groups related tasks and messages into one conversation; chosen by the server.
    ContextId
);
string_id!(
    /// Identifies an [`Artifact`](crate::task::Artifact) within its task.
    ArtifactId
);

/// A UUID v7 with every bit after the time random (from the same generator as v4 ids): unlike
/// `Uuid::now_v7`, whose ids in one millisecond count up from one random start, a neighbour's
/// id cannot be worked out from this one.
fn time_ordered_uuid() -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        });
    // Bytes 6 and 8 of a v4 id hold its version and variant, not randomness.
    let random = uuid::Uuid::new_v4().into_bytes();
    let tail = [0, 1, 2, 3, 4, 5, 7, 9, 10, 11].map(|i| random[i]);
    uuid::Builder::from_unix_timestamp_millis(millis, &tail)
        .into_uuid()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_ordered_ids_are_uuids_v7_with_random_tails() {
        let ids: Vec<uuid::Uuid> = (0..1000)
            .map(|_| uuid::Uuid::parse_str(TaskId::time_ordered().as_str()).unwrap())
            .collect();
        for id in &ids {
            assert_eq!(id.get_version_num(), 7);
            assert_eq!(id.get_variant(), uuid::Variant::RFC4122);
        }
        let distinct: std::collections::HashSet<_> = ids.iter().collect();
        assert_eq!(distinct.len(), ids.len());
        // Ids of one millisecond do not count up from one another (as `Uuid::now_v7`'s do,
        // in the 42 bits after the time): a neighbour cannot be worked out from an id.
        let millis = |id: &uuid::Uuid| id.as_u128() >> 80;
        let counter = |id: &uuid::Uuid| {
            ((id.as_u128() >> 64) & 0xfff) << 30 | ((id.as_u128() >> 32) & 0x3fff_ffff)
        };
        let same_millisecond: Vec<_> = ids
            .windows(2)
            .filter(|p| millis(&p[0]) == millis(&p[1]))
            .collect();
        assert!(
            !same_millisecond.is_empty(),
            "1000 ids took a millisecond each"
        );
        let counted = same_millisecond
            .iter()
            .filter(|p| counter(&p[1]) == counter(&p[0]) + 1)
            .count();
        assert_eq!(
            counted,
            0,
            "of {} neighbours in one millisecond",
            same_millisecond.len()
        );
    }
}
