//! Request objects read only from JSON objects. A derived serde reader also takes a JSON array
//! as a struct's fields in order, which no A2A binding allows: an array body, array params or
//! an array request must be refused, not run.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};

/// A `T` read from a JSON object and nothing else, at no extra cost: the object's members go
/// straight to `T`'s own reader.
pub(crate) struct ObjectOnly<T>(pub(crate) T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ObjectOnly<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_map(ObjectVisitor(PhantomData))
            .map(ObjectOnly)
    }
}

struct ObjectVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map))
    }
}

/// Whether `text` is a JSON array (it may start with whitespace).
pub(crate) fn is_array(text: &[u8]) -> bool {
    text.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')
}

#[cfg(test)]
mod tests {
    use a2a_protocol_types::SendMessageRequest;

    use super::*;

    const MESSAGE: &str = r#"{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]}"#;

    #[test]
    fn an_object_reads_as_the_type_would() {
        let text = format!(r#"{{"message":{MESSAGE}}}"#);
        let ObjectOnly(request) =
            serde_json::from_str::<ObjectOnly<SendMessageRequest>>(&text).expect("an object");
        assert_eq!(request.message.id.as_str(), "m-1");
    }

    #[test]
    fn an_array_of_the_fields_is_refused() {
        // What the derived reader alone takes as a send: the fields in declaration order.
        let text = format!(r#"["", {MESSAGE}]"#);
        let error = serde_json::from_str::<ObjectOnly<SendMessageRequest>>(&text)
            .err()
            .expect("refused");
        assert!(
            error.to_string().contains("expected a JSON object"),
            "{error}"
        );
        assert!(is_array(b"  [1]") && !is_array(b"{}"));
    }
}
