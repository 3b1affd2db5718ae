//! JSON-RPC 2.0 envelopes (spec §9) and the A2A method names.

use serde::de::Error as _;
use serde::ser::SerializeStruct;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The only JSON-RPC version.
pub const JSONRPC_VERSION: &str = "2.0";

/// The A2A method names (spec §5.3).
pub mod methods {
    /// `SendMessage`.
    pub const SEND_MESSAGE: &str = "SendMessage";
    /// `SendStreamingMessage`.
    pub const SEND_STREAMING_MESSAGE: &str = "SendStreamingMessage";
    /// `GetTask`.
    pub const GET_TASK: &str = "GetTask";
    /// `ListTasks`.
    pub const LIST_TASKS: &str = "ListTasks";
    /// `CancelTask`.
    pub const CANCEL_TASK: &str = "CancelTask";
    /// `SubscribeToTask`.
    pub const SUBSCRIBE_TO_TASK: &str = "SubscribeToTask";
    /// `CreateTaskPushNotificationConfig`.
    pub const CREATE_TASK_PUSH_NOTIFICATION_CONFIG: &str = "CreateTaskPushNotificationConfig";
    /// `GetTaskPushNotificationConfig`.
    pub const GET_TASK_PUSH_NOTIFICATION_CONFIG: &str = "GetTaskPushNotificationConfig";
    /// `ListTaskPushNotificationConfigs`.
    pub const LIST_TASK_PUSH_NOTIFICATION_CONFIGS: &str = "ListTaskPushNotificationConfigs";
    /// `DeleteTaskPushNotificationConfig`.
    pub const DELETE_TASK_PUSH_NOTIFICATION_CONFIG: &str = "DeleteTaskPushNotificationConfig";
    /// `GetExtendedAgentCard`.
    pub const GET_EXTENDED_AGENT_CARD: &str = "GetExtendedAgentCard";

    /// All eleven, in spec order.
    pub const ALL: [&str; 11] = [
        SEND_MESSAGE,
        SEND_STREAMING_MESSAGE,
        GET_TASK,
        LIST_TASKS,
        CANCEL_TASK,
        SUBSCRIBE_TO_TASK,
        CREATE_TASK_PUSH_NOTIFICATION_CONFIG,
        GET_TASK_PUSH_NOTIFICATION_CONFIG,
        LIST_TASK_PUSH_NOTIFICATION_CONFIGS,
        DELETE_TASK_PUSH_NOTIFICATION_CONFIG,
        GET_EXTENDED_AGENT_CARD,
    ];
}

/// A request id: a string, a number, or `null`.
///
/// ```
/// use a2a_protocol_types::jsonrpc::JsonRpcId;
///
/// let id: JsonRpcId = serde_json::from_str("7").unwrap();
/// assert_eq!(id, JsonRpcId::from(7));
/// assert_eq!(serde_json::to_string(&JsonRpcId::from("req-1")).unwrap(), r#""req-1""#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum JsonRpcId {
    /// A numeric id.
    Number(serde_json::Number),
    /// A string id.
    String(String),
    /// `null`, used in answers to requests whose id could not be read.
    Null,
}

impl From<i64> for JsonRpcId {
    fn from(id: i64) -> Self {
        Self::Number(id.into())
    }
}

impl From<String> for JsonRpcId {
    fn from(id: String) -> Self {
        Self::String(id)
    }
}

impl From<&str> for JsonRpcId {
    fn from(id: &str) -> Self {
        Self::String(id.into())
    }
}

/// A JSON-RPC request. `id` is `None` for a notification, `Some(JsonRpcId::Null)` for
/// `"id": null`.
///
/// ```
/// use a2a_protocol_types::jsonrpc::{JsonRpcRequest, methods};
///
/// let request: JsonRpcRequest = serde_json::from_str(
///     r#"{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t-1"}}"#,
/// )
/// .unwrap();
/// assert_eq!(request.method, methods::GET_TASK);
/// ```
///
/// `P` is the type `params` is read as: a `serde_json::Value` by default. A server can read
/// them as `Box<serde_json::value::RawValue>` (serde_json's `raw_value` feature) and decode them
/// once, straight into the typed request of the method named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcRequest<P = Value> {
    /// Must be `"2.0"`.
    pub jsonrpc: String,
    /// The request id.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub id: Option<JsonRpcId>,
    /// The method name.
    pub method: String,
    /// The parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<P>,
}

impl<P> JsonRpcRequest<P> {
    /// A request for `method` with `params`.
    ///
    /// ```
    /// use a2a_protocol_types::jsonrpc::{JsonRpcRequest, methods};
    ///
    /// let request = JsonRpcRequest::new(1, methods::GET_TASK, Some(serde_json::json!({"id": "t-1"})));
    /// let json = serde_json::to_value(&request).unwrap();
    /// assert_eq!((json["jsonrpc"].as_str(), json["id"].as_i64()), (Some("2.0"), Some(1)));
    /// ```
    pub fn new(id: impl Into<JsonRpcId>, method: impl Into<String>, params: Option<P>) -> Self {
        Self {
            jsonrpc: JSONRPC_VERSION.into(),
            id: Some(id.into()),
            method: method.into(),
            params,
        }
    }
}

/// A JSON-RPC error object.
///
/// ```
/// use a2a_protocol_types::jsonrpc::JsonRpcError;
///
/// let error: JsonRpcError = serde_json::from_str(r#"{"code": -32601, "message": "no such method"}"#).unwrap();
/// assert_eq!(error.code, -32601);
/// assert!(error.data.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcError {
    /// The error code.
    pub code: i32,
    /// What went wrong.
    #[serde(default)]
    pub message: String,
    /// Detail objects (an array of `google.rpc` details for A2A errors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// A JSON-RPC response: a result or an error, never both.
///
/// ```
/// use a2a_protocol_types::jsonrpc::{JsonRpcId, JsonRpcResponse};
///
/// let response: JsonRpcResponse =
///     serde_json::from_str(r#"{"jsonrpc": "2.0", "id": 1, "result": {"ok": true}}"#).unwrap();
/// assert_eq!(response.id, JsonRpcId::from(1));
/// assert_eq!(response.outcome.unwrap()["ok"], true);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct JsonRpcResponse<T = Value> {
    /// The id of the request answered.
    pub id: JsonRpcId,
    /// The result or the error.
    pub outcome: Result<T, JsonRpcError>,
}

impl<T> JsonRpcResponse<T> {
    /// A success.
    ///
    /// ```
    /// use a2a_protocol_types::jsonrpc::{JsonRpcId, JsonRpcResponse};
    ///
    /// let response = JsonRpcResponse::success(JsonRpcId::from(1), serde_json::json!({"ok": true}));
    /// assert_eq!(serde_json::to_value(&response).unwrap()["result"]["ok"], true);
    /// ```
    pub fn success(id: JsonRpcId, result: T) -> Self {
        Self {
            id,
            outcome: Ok(result),
        }
    }

    /// A failure.
    ///
    /// ```
    /// use a2a_protocol_types::A2aError;
    /// use a2a_protocol_types::jsonrpc::{JsonRpcId, JsonRpcResponse};
    ///
    /// let response: JsonRpcResponse =
    ///     JsonRpcResponse::error(JsonRpcId::Null, A2aError::invalid_params("no id").to_jsonrpc());
    /// let json = serde_json::to_value(&response).unwrap();
    /// assert_eq!(json["error"]["code"], -32602);
    /// assert!(json["id"].is_null() && json.get("result").is_none());
    /// ```
    pub fn error(id: JsonRpcId, error: JsonRpcError) -> Self {
        Self {
            id,
            outcome: Err(error),
        }
    }
}

impl<T: Serialize> Serialize for JsonRpcResponse<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("JsonRpcResponse", 3)?;
        s.serialize_field("jsonrpc", JSONRPC_VERSION)?;
        s.serialize_field("id", &self.id)?;
        match &self.outcome {
            Ok(result) => s.serialize_field("result", result)?,
            Err(error) => s.serialize_field("error", error)?,
        }
        s.end()
    }
}

#[derive(Deserialize)]
#[serde(bound(deserialize = "T: Deserialize<'de>"))]
struct WireResponse<T> {
    #[serde(default)]
    jsonrpc: Option<String>,
    #[serde(default = "null_id")]
    id: JsonRpcId,
    #[serde(default = "Option::default", deserialize_with = "present")]
    result: Option<T>,
    #[serde(default)]
    error: Option<JsonRpcError>,
}

/// A member that is there, even as `null`, is `Some`: `"id": null` is a request (not a
/// notification), and `"result": null` a successful answer (an operation that returns nothing,
/// as `DeleteTaskPushNotificationConfig` does on other SDKs), which a plain `Option` would read
/// as no member at all.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(deserializer).map(Some)
}

fn null_id() -> JsonRpcId {
    JsonRpcId::Null
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for JsonRpcResponse<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = WireResponse::<T>::deserialize(deserializer)?;
        if wire.jsonrpc.as_deref() != Some(JSONRPC_VERSION) {
            return Err(D::Error::custom(
                "not a JSON-RPC 2.0 response (jsonrpc must be \"2.0\")",
            ));
        }
        let outcome = match (wire.result, wire.error) {
            (_, Some(error)) => Err(error),
            (Some(result), None) => Ok(result),
            (None, None) => {
                return Err(D::Error::custom(
                    "JSON-RPC response has neither result nor error",
                ));
            }
        };
        Ok(Self {
            id: wire.id,
            outcome,
        })
    }
}
