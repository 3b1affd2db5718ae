//! A JSON-RPC request, read in one pass where it can be.
//!
//! When `method` comes before `params`, as clients write it, a send's params are decoded
//! straight into its typed request. Otherwise (params first, or any other method) the params
//! are kept as text and decoded once the method is known. A body the one-pass reader refuses
//! is read again the general way, which also words the error, so the reader changes only how
//! fast a request is read, never what it means. Both ways take a request and a send's params
//! from JSON objects only (see [`ObjectOnly`]).

use std::fmt;

use a2a_protocol_types::SendMessageRequest;
use a2a_protocol_types::jsonrpc::{JsonRpcId, JsonRpcRequest, methods};
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use super::objects::ObjectOnly;

/// A request's params as read.
pub(crate) enum Params {
    /// A send's params, already decoded.
    Send(Box<SendMessageRequest>),
    /// The params as the text they arrived in, if any.
    Raw(Option<Box<RawValue>>),
}

impl Params {
    /// The params as text, as every method but the sends decodes them. (Only sends are ever
    /// decoded early; should another be, it is written back out rather than lost.)
    pub(crate) fn text(self) -> Option<Box<RawValue>> {
        match self {
            Params::Raw(raw) => raw,
            Params::Send(request) => serde_json::value::to_raw_value(&request).ok(),
        }
    }
}

/// A JSON-RPC request object.
pub(crate) struct Envelope {
    pub(crate) jsonrpc: String,
    /// `None` when the member is missing (a notification), `Some(Null)` for `"id": null`.
    pub(crate) id: Option<JsonRpcId>,
    pub(crate) method: String,
    pub(crate) params: Params,
}

impl Envelope {
    /// Reads `body`; the error is the general reader's, for the caller to classify.
    pub(crate) fn read(body: &[u8]) -> Result<Self, serde_json::Error> {
        if let Ok(envelope) = serde_json::from_slice::<Envelope>(body) {
            return Ok(envelope);
        }
        let ObjectOnly(request): ObjectOnly<JsonRpcRequest<Box<RawValue>>> =
            serde_json::from_slice(body)?;
        Ok(Self {
            jsonrpc: request.jsonrpc,
            id: request.id,
            method: request.method,
            params: Params::Raw(request.params),
        })
    }
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Member {
    Jsonrpc,
    Id,
    Method,
    Params,
    #[serde(other)]
    Other,
}

impl<'de> Deserialize<'de> for Envelope {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(EnvelopeVisitor)
    }
}

struct EnvelopeVisitor;

/// Sets a member once; a repeated member is refused, as the general reader refuses it.
fn once<T, E: de::Error>(slot: &mut Option<T>, value: T, name: &'static str) -> Result<(), E> {
    if slot.is_some() {
        return Err(E::duplicate_field(name));
    }
    *slot = Some(value);
    Ok(())
}

impl<'de> Visitor<'de> for EnvelopeVisitor {
    type Value = Envelope;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC request object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
        let (mut jsonrpc, mut id, mut method, mut params) = (None, None, None, None);
        while let Some(member) = map.next_key::<Member>()? {
            match member {
                Member::Jsonrpc => once(&mut jsonrpc, map.next_value::<String>()?, "jsonrpc")?,
                Member::Id => once(&mut id, map.next_value::<JsonRpcId>()?, "id")?,
                Member::Method => once(&mut method, map.next_value::<String>()?, "method")?,
                Member::Params => {
                    let read = match method.as_deref() {
                        Some(methods::SEND_MESSAGE | methods::SEND_STREAMING_MESSAGE) => {
                            let ObjectOnly(request) = map.next_value()?;
                            Params::Send(request)
                        }
                        _ => Params::Raw(map.next_value()?),
                    };
                    once(&mut params, read, "params")?;
                }
                Member::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Envelope {
            jsonrpc: jsonrpc.ok_or_else(|| de::Error::missing_field("jsonrpc"))?,
            id,
            method: method.ok_or_else(|| de::Error::missing_field("method"))?,
            params: params.unwrap_or(Params::Raw(None)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MESSAGE: &str = r#"{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]}"#;

    fn read(body: &str) -> Envelope {
        Envelope::read(body.as_bytes()).expect("a request")
    }

    #[test]
    fn a_send_with_method_first_is_decoded_in_one_pass() {
        let envelope = read(&format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{{"message":{MESSAGE}}}}}"#
        ));
        let Params::Send(request) = envelope.params else {
            panic!("decoded params")
        };
        assert_eq!(request.message.id.as_str(), "m-1");
        assert_eq!(envelope.id, Some(JsonRpcId::Number(7.into())));
    }

    #[test]
    fn params_before_the_method_are_kept_as_text() {
        let envelope = read(&format!(
            r#"{{"params":{{"message":{MESSAGE}}},"method":"SendMessage","jsonrpc":"2.0","id":"a"}}"#
        ));
        assert!(matches!(envelope.params, Params::Raw(Some(_))));
        assert_eq!(envelope.method, "SendMessage");
    }

    #[test]
    fn bodies_the_one_pass_reader_refuses_are_read_the_general_way() {
        // Send params that are not a send request: the general reader still takes the envelope,
        // so the caller can answer InvalidParams with the request's id.
        let envelope =
            read(r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"nope":1}}"#);
        assert!(matches!(envelope.params, Params::Raw(Some(_))));
        let envelope = read(r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":null}"#);
        assert!(matches!(envelope.params, Params::Raw(None)));
        // Positional params are kept as text too, for the caller to refuse.
        let envelope = read(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":["",{MESSAGE}]}}"#
        ));
        assert!(matches!(envelope.params, Params::Raw(Some(_))));
    }

    #[test]
    fn a_missing_id_and_a_null_id_stay_apart() {
        assert_eq!(read(r#"{"jsonrpc":"2.0","method":"GetTask"}"#).id, None);
        assert_eq!(
            read(r#"{"jsonrpc":"2.0","id":null,"method":"GetTask"}"#).id,
            Some(JsonRpcId::Null)
        );
    }

    #[test]
    fn repeated_members_and_missing_methods_are_refused() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","method":"CancelTask"}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"[1,2]"#,
            r#"["2.0",1,"GetTask",{}]"#,
        ] {
            assert!(Envelope::read(body.as_bytes()).is_err(), "{body}");
        }
    }
}
