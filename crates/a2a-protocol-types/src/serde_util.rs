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
