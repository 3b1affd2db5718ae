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
