//! Small serde helpers shared by the wire types.
//!
//! The policy they implement, once: ProtoJSON omits fields that hold their default value, so we
//! never emit empty strings or lists for unset fields; and we accept what real peers send for an
//! unset field (`null`, `""`, `[]`) as "unset".

use serde::{Deserialize, Deserializer};

/// Deserializes `null` as the type's default (an empty string, list or map).
pub(crate) fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Deserializes an optional string-like value, treating `null` and `""` as unset.
pub(crate) fn non_empty_string<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: From<String>,
{
    let value = Option::<String>::deserialize(deserializer)?;
    Ok(value.filter(|s| !s.is_empty()).map(T::from))
}

/// Deserializes an optional list, treating `null` and `[]` as unset.
pub(crate) fn non_empty_vec<'de, D, T>(deserializer: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    let value = Option::<Vec<T>>::deserialize(deserializer)?;
    Ok(value.filter(|v| !v.is_empty()))
}

/// `skip_serializing_if` for an optional list: skip when unset or empty.
pub(crate) fn is_none_or_empty<T>(value: &Option<Vec<T>>) -> bool {
    value.as_ref().is_none_or(Vec::is_empty)
}

/// `skip_serializing_if` for plain booleans that default to `false`.
pub(crate) fn is_false(value: &bool) -> bool {
    !*value
}

/// Reads a ProtoJSON 64-bit integer from a decimal string or a number (`null` reads as zero,
/// the unset value).
pub(crate) fn int64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    deserializer.deserialize_any(Int64)
}

struct Int64;

impl serde::de::Visitor<'_> for Int64 {
    type Value = u64;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a non-negative integer, as a number or a decimal string")
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| E::custom(format!("{v} is negative")))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<u64, E> {
        if v.fract() == 0.0 && (0.0..1.8e19).contains(&v) {
            Ok(v as u64)
        } else {
            Err(E::custom(format!("{v} is not a non-negative integer")))
        }
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<u64, E> {
        v.trim().parse().map_err(|_| {
            E::custom(format!(
                "{:?} is not a non-negative integer",
                v.chars().take(32).collect::<String>()
            ))
        })
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<u64, E> {
        Ok(0)
    }
}
