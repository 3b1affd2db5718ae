//! Request objects read only from JSON objects. A derived serde reader also takes a JSON array
//! as a struct's fields in order, which no A2A binding allows: an array body, array params or
//! an array request must be refused, not run.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

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

/// A member an object in `text` names twice, and how deep that object sits (1 for the
/// document itself). `None` when every object's members are distinct, or when `text` is not
/// JSON at all (the reader proper says what is wrong with it). A derived reader refuses a
/// struct's repeated field but a free-form object keeps the last value silently, so both
/// bindings run this one check on every body before anything reads it.
pub(crate) fn repeated_member(text: &[u8]) -> Option<(usize, String)> {
    let found = RefCell::new(None);
    let mut reader = serde_json::Deserializer::from_slice(text);
    let _ = Walk {
        depth: 0,
        found: &found,
    }
    .deserialize(&mut reader);
    found.into_inner()
}

/// Objects with more members than this are checked with a hash set rather than a scan.
const SCAN_LIMIT: usize = 16;

/// Visits a JSON value, recording the first repeated member it meets and then stopping.
#[derive(Clone, Copy)]
struct Walk<'f> {
    depth: usize,
    found: &'f RefCell<Option<(usize, String)>>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let inner = Walk {
            depth: self.depth + 1,
            ..self
        };
        while seq.next_element_seed(inner)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let inner = Walk {
            depth: self.depth + 1,
            ..self
        };
        let mut few: Vec<Cow<'de, str>> = Vec::new();
        let mut many: HashSet<Cow<'de, str>> = HashSet::new();
        while let Some(Key(name)) = map.next_key::<Key<'de>>()? {
            let repeated = if many.is_empty() && few.len() < SCAN_LIMIT {
                let seen = few.contains(&name);
                few.push(name.clone());
                seen
            } else {
                many.extend(few.drain(..));
                !many.insert(name.clone())
            };
            if repeated {
                *self.found.borrow_mut() = Some((inner.depth, name.into_owned()));
                return Err(de::Error::custom("repeated member"));
            }
            map.next_value_seed(inner)?;
        }
        Ok(())
    }
}

/// An object member's name, borrowed from the text unless it has escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
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

    #[test]
    fn a_repeated_member_is_found_at_any_depth() {
        assert_eq!(repeated_member(br#"{"a":1,"b":2}"#), None);
        assert_eq!(
            repeated_member(br#"{"a":1,"a":2}"#),
            Some((1, "a".to_owned()))
        );
        assert_eq!(
            repeated_member(br#"{"params":{"message":{"metadata":{"k":1,"k":2}}}}"#),
            Some((4, "k".to_owned()))
        );
        assert_eq!(
            repeated_member(br#"[{"x":[{"y":1,"\u0079":2}]}]"#),
            Some((4, "y".to_owned())),
            "an escaped name is the same name"
        );
        // Same names in different objects are fine; so is text that is not JSON.
        assert_eq!(repeated_member(br#"[{"a":1},{"a":2}]"#), None);
        assert_eq!(repeated_member(b"{not json"), None);
    }

    #[test]
    fn a_large_object_is_checked_too() {
        let mut members: Vec<String> = (0..100).map(|i| format!(r#""m{i}":{i}"#)).collect();
        let distinct = format!("{{{}}}", members.join(","));
        assert_eq!(repeated_member(distinct.as_bytes()), None);
        members.push(r#""m42":0"#.to_owned());
        let repeated = format!("{{{}}}", members.join(","));
        assert_eq!(
            repeated_member(repeated.as_bytes()),
            Some((1, "m42".to_owned()))
        );
    }
}
