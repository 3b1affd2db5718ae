//! Conversions between the generated messages and [`a2a_protocol_types`]: `From` toward the
//! wire (every value of the model has a proto form), `TryFrom` from it (a message from a peer
//! may lack a required field).

mod card;
mod requests;
mod task;

use a2a_protocol_types::{Metadata, Timestamp};
use prost_types::value::Kind;
use serde_json::{Number, Value};

/// A message from a peer that is not a valid A2A value: a required field is missing, or a
/// field holds what the model cannot take. The server answers it as `InvalidParams`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtoError {
    /// A required field is not set.
    #[error("the required field `{0}` is not set")]
    Missing(&'static str),
    /// A field holds a value the model cannot take.
    #[error("the field `{field}` is invalid: {problem}")]
    Invalid {
        /// The field, as the proto names it.
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
}

/// An empty proto string is an unset one.
fn some(value: String) -> Option<String> {
    (!value.is_empty()).then_some(value)
}

/// An empty proto list is an unset one.
fn some_list<T>(values: Vec<T>) -> Option<Vec<T>> {
    (!values.is_empty()).then_some(values)
}

fn required<T>(value: Option<T>, field: &'static str) -> Result<T, ProtoError> {
    value.ok_or(ProtoError::Missing(field))
}

/// JSON object to `google.protobuf.Struct`. Toward the wire, values are converted from a
/// borrow: the server's answers are tasks it shares with its live state, which it would
/// otherwise copy whole first.
pub(crate) fn to_struct(metadata: &Metadata) -> prost_types::Struct {
    prost_types::Struct {
        fields: metadata
            .iter()
            .map(|(name, value)| (name.clone(), to_value(value)))
            .collect(),
    }
}

/// `google.protobuf.Struct` to a JSON object.
pub(crate) fn from_struct(fields: prost_types::Struct) -> Metadata {
    fields
        .fields
        .into_iter()
        .map(|(name, value)| (name, from_value(value)))
        .collect()
}

fn to_metadata(metadata: Option<&Metadata>) -> Option<prost_types::Struct> {
    metadata.map(to_struct)
}

fn from_metadata(metadata: Option<prost_types::Struct>) -> Option<Metadata> {
    metadata.map(from_struct)
}

/// JSON to `google.protobuf.Value`.
pub(crate) fn to_value(value: &Value) -> prost_types::Value {
    let kind = match value {
        Value::Null => Kind::NullValue(0),
        Value::Bool(b) => Kind::BoolValue(*b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => Kind::StringValue(s.clone()),
        Value::Array(items) => Kind::ListValue(prost_types::ListValue {
            values: items.iter().map(to_value).collect(),
        }),
        Value::Object(map) => Kind::StructValue(to_struct(map)),
    };
    prost_types::Value { kind: Some(kind) }
}

/// The largest magnitude below which every integer is exact in a double.
const EXACT_INTEGERS: f64 = 9_007_199_254_740_992.0;

/// `google.protobuf.Value` to JSON. An integral number comes back as an integer, as it most
/// likely was; a number JSON cannot hold (NaN, infinities) as ProtoJSON writes it, a string.
pub(crate) fn from_value(value: prost_types::Value) -> Value {
    match value.kind {
        None | Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::BoolValue(b)) => Value::Bool(b),
        Some(Kind::NumberValue(n)) => number(n),
        Some(Kind::StringValue(s)) => Value::String(s),
        Some(Kind::ListValue(list)) => {
            Value::Array(list.values.into_iter().map(from_value).collect())
        }
        Some(Kind::StructValue(fields)) => Value::Object(from_struct(fields)),
    }
}

fn number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < EXACT_INTEGERS {
        // Exact: the magnitude is below 2^53.
        #[allow(clippy::cast_possible_truncation)]
        return Value::from(n as i64);
    }
    match Number::from_f64(n) {
        Some(number) => Value::Number(number),
        None if n.is_nan() => Value::from("NaN"),
        None if n > 0.0 => Value::from("Infinity"),
        None => Value::from("-Infinity"),
    }
}

fn to_timestamp(time: Timestamp) -> prost_types::Timestamp {
    let time = time.as_datetime();
    prost_types::Timestamp {
        seconds: time.timestamp(),
        // Below one billion, so it fits.
        #[allow(clippy::cast_possible_wrap)]
        nanos: time.timestamp_subsec_nanos() as i32,
    }
}

fn from_timestamp(
    time: prost_types::Timestamp,
    field: &'static str,
) -> Result<Timestamp, ProtoError> {
    u32::try_from(time.nanos)
        .ok()
        .and_then(|nanos| chrono::DateTime::from_timestamp(time.seconds, nanos))
        .map(Timestamp::from_datetime)
        .ok_or_else(|| ProtoError::Invalid {
            field,
            problem: format!("{}s {}ns is not a time", time.seconds, time.nanos),
        })
}
