//! ProtoJSON enums: written as their proto names, read from the name, the proto number, or the
//! lowercase names that A2A v0.3 peers still send. A value this build does not know (a newer
//! peer's, or a peer's own such as `"UNRECOGNIZED"`) reads as the unspecified value, so one new
//! enum value never makes a whole object unreadable; whoever needs a set value checks for it.
//! `FromStr` stays strict, for input that names a value on purpose (a query parameter).

/// Declares a ProtoJSON enum. Each variant lists its proto name, its number, and legacy aliases.
macro_rules! proto_enum {
    (
        $(#[$doc:meta])*
        pub enum $name:ident {
            $( $(#[$vdoc:meta])* $variant:ident = ($proto:literal, $num:literal $(, $alias:literal)*) ),+ $(,)?
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vdoc])* $variant, )+
        }

        impl $name {
            /// Every value, in proto order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The proto name, as written on the wire.
            ///
            /// ```
            #[doc = concat!("use a2a_protocol_types::", stringify!($name), ";")]
            ///
            #[doc = concat!("let value = ", stringify!($name), "::ALL[1];")]
            /// assert_eq!(serde_json::to_value(value).unwrap(), value.as_str());
            /// ```
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $proto,)+ }
            }

            /// The proto field number.
            ///
            /// ```
            #[doc = concat!("use a2a_protocol_types::", stringify!($name), ";")]
            ///
            #[doc = concat!("assert_eq!(", stringify!($name), "::ALL[0].number(), 0, \"the unspecified value\");")]
            /// ```
            pub fn number(self) -> i32 {
                match self { $($name::$variant => $num,)+ }
            }

            /// Reads a proto name, or a legacy (v0.3) alias.
            ///
            /// ```
            #[doc = concat!("use a2a_protocol_types::", stringify!($name), ";")]
            ///
            #[doc = concat!("for value in ", stringify!($name), "::ALL {")]
            #[doc = concat!("    assert_eq!(", stringify!($name), "::from_name(value.as_str()), Some(*value));")]
            /// }
            #[doc = concat!("assert_eq!(", stringify!($name), "::from_name(\"NOT_A_VALUE\"), None);")]
            /// ```
            pub fn from_name(name: &str) -> Option<Self> {
                match name {
                    $($proto $(| $alias)* => Some($name::$variant),)+
                    _ => None,
                }
            }

            /// Reads a proto number.
            ///
            /// ```
            #[doc = concat!("use a2a_protocol_types::", stringify!($name), ";")]
            ///
            #[doc = concat!("let value = ", stringify!($name), "::ALL[1];")]
            #[doc = concat!("assert_eq!(", stringify!($name), "::from_number(value.number().into()), Some(value));")]
            /// ```
            pub fn from_number(number: i64) -> Option<Self> {
                match number {
                    $($num => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::proto_enum::UnknownEnumValue;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::from_name(s).ok_or_else(|| $crate::proto_enum::UnknownEnumValue {
                    enum_name: stringify!($name),
                    value: s.chars().take(64).collect(),
                    expected: &[$($proto),+],
                })
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl serde::de::Visitor<'_> for Visitor {
                    type Value = $name;

                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        write!(f, "a {} name such as {:?}", stringify!($name), $name::ALL[1 % $name::ALL.len()].as_str())
                    }

                    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<$name, E> {
                        Ok($name::from_name(v).unwrap_or($name::ALL[0]))
                    }

                    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<$name, E> {
                        Ok($name::from_number(v).unwrap_or($name::ALL[0]))
                    }

                    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<$name, E> {
                        Ok(i64::try_from(v).ok().and_then($name::from_number).unwrap_or($name::ALL[0]))
                    }
                }
                deserializer.deserialize_any(Visitor)
            }
        }
    };
}

pub(crate) use proto_enum;

/// A string that names no value of a ProtoJSON enum.
///
/// ```
/// use a2a_protocol_types::{TaskState, UnknownEnumValue};
///
/// let error: UnknownEnumValue = "TASK_STATE_DONE".parse::<TaskState>().unwrap_err();
/// assert_eq!(error.value, "TASK_STATE_DONE");
/// assert!(error.to_string().contains("TASK_STATE_COMPLETED"), "it lists what is accepted");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {enum_name} value {value:?}: must be one of {}", expected.join(", "))]
pub struct UnknownEnumValue {
    /// The enum's Rust name.
    pub enum_name: &'static str,
    /// The value that was given (at most 64 characters of it).
    pub value: String,
    /// The accepted proto names.
    pub expected: &'static [&'static str],
}
