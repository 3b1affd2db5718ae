//! The A2A error model (spec §3.3.2, §5.4, §9.5, §11.6): every error type with its JSON-RPC
//! code, HTTP status and `google.rpc.ErrorInfo` reason, the `google.rpc` detail objects, and the
//! conversions to and from both bindings' error bodies. The mapping lives here, once.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::Metadata;
use crate::jsonrpc::JsonRpcError;

/// The `domain` of every `ErrorInfo` this crate writes.
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";
/// `@type` of `google.rpc.ErrorInfo`.
pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";
/// `@type` of `google.rpc.BadRequest`.
pub const BAD_REQUEST_TYPE: &str = "type.googleapis.com/google.rpc.BadRequest";
/// `@type` of `google.rpc.RetryInfo`.
pub const RETRY_INFO_TYPE: &str = "type.googleapis.com/google.rpc.RetryInfo";

macro_rules! error_kinds {
    ($( $(#[$doc:meta])* $kind:ident => ($code:literal, $http:literal, $status:literal, $reason:literal, $msg:literal) ),+ $(,)?) => {
        /// Every error type a server can answer with.
        ///
        /// ```
        /// use a2a_protocol_types::ErrorKind;
        ///
        /// let kind = ErrorKind::TaskNotFound;
        /// assert_eq!((kind.jsonrpc_code(), kind.http_status()), (-32001, 404));
        /// assert_eq!(kind.to_string(), "TASK_NOT_FOUND");
        /// ```
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorKind {
            $( $(#[$doc])* $kind, )+
        }

        impl ErrorKind {
            /// Every kind.
            pub const ALL: &'static [ErrorKind] = &[$(ErrorKind::$kind),+];

            /// The JSON-RPC `error.code`.
            ///
            /// ```
            /// use a2a_protocol_types::ErrorKind;
            ///
            /// assert_eq!(ErrorKind::InvalidParams.jsonrpc_code(), -32602);
            /// ```
            pub fn jsonrpc_code(self) -> i32 {
                match self { $(ErrorKind::$kind => $code,)+ }
            }

            /// The HTTP status the HTTP+JSON binding answers with.
            ///
            /// ```
            /// use a2a_protocol_types::ErrorKind;
            ///
            /// assert_eq!(ErrorKind::TaskNotCancelable.http_status(), 400);
            /// ```
            pub fn http_status(self) -> u16 {
                match self { $(ErrorKind::$kind => $http,)+ }
            }

            /// The `google.rpc.Code` name written as `error.status` in HTTP+JSON bodies.
            ///
            /// ```
            /// use a2a_protocol_types::ErrorKind;
            ///
            /// assert_eq!(ErrorKind::TaskNotFound.rpc_status(), "NOT_FOUND");
            /// ```
            pub fn rpc_status(self) -> &'static str {
                match self { $(ErrorKind::$kind => $status,)+ }
            }

            /// The `ErrorInfo.reason`: the type in UPPER_SNAKE_CASE without the `Error` suffix.
            ///
            /// ```
            /// use a2a_protocol_types::ErrorKind;
            ///
            /// assert_eq!(ErrorKind::VersionNotSupported.reason(), "VERSION_NOT_SUPPORTED");
            /// ```
            pub fn reason(self) -> &'static str {
                match self { $(ErrorKind::$kind => $reason,)+ }
            }

            /// The standard message for the kind.
            ///
            /// ```
            /// use a2a_protocol_types::ErrorKind;
            ///
            /// assert!(!ErrorKind::TaskNotFound.default_message().is_empty());
            /// ```
            pub fn default_message(self) -> &'static str {
                match self { $(ErrorKind::$kind => $msg,)+ }
            }

            /// The kind an `ErrorInfo.reason` names.
            ///
            /// ```
            /// use a2a_protocol_types::ErrorKind;
            ///
            /// assert_eq!(ErrorKind::from_reason("TASK_NOT_FOUND"), Some(ErrorKind::TaskNotFound));
            /// assert_eq!(ErrorKind::from_reason("NO_SUCH_REASON"), None);
            /// ```
            pub fn from_reason(reason: &str) -> Option<Self> {
                match reason { $($reason => Some(ErrorKind::$kind),)+ _ => None }
            }
        }
    };
}

error_kinds! {
    /// `-32700`: the body is not valid JSON.
    ParseError => (-32700, 400, "INVALID_ARGUMENT", "PARSE_ERROR", "Invalid JSON payload"),
    /// `-32600`: the JSON is not a valid request object.
    InvalidRequest => (-32600, 400, "INVALID_ARGUMENT", "INVALID_REQUEST", "Request payload validation error"),
    /// `-32601`: no such method.
    MethodNotFound => (-32601, 404, "NOT_FOUND", "METHOD_NOT_FOUND", "Method not found"),
    /// `-32602`: the parameters are invalid.
    InvalidParams => (-32602, 400, "INVALID_ARGUMENT", "INVALID_PARAMS", "Invalid parameters"),
    /// `-32603`: the server failed.
    Internal => (-32603, 500, "INTERNAL", "INTERNAL", "Internal error"),
    /// `TaskNotFoundError`.
    TaskNotFound => (-32001, 404, "NOT_FOUND", "TASK_NOT_FOUND", "Task not found"),
    /// `TaskNotCancelableError`.
    TaskNotCancelable => (-32002, 400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE", "Task cannot be canceled"),
    /// `PushNotificationNotSupportedError`.
    PushNotificationNotSupported => (-32003, 400, "FAILED_PRECONDITION", "PUSH_NOTIFICATION_NOT_SUPPORTED", "Push notifications are not supported"),
    /// `UnsupportedOperationError`.
    UnsupportedOperation => (-32004, 400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION", "This operation is not supported"),
    /// `ContentTypeNotSupportedError`.
    ContentTypeNotSupported => (-32005, 400, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED", "Incompatible content types"),
    /// `InvalidAgentResponseError`.
    InvalidAgentResponse => (-32006, 500, "INTERNAL", "INVALID_AGENT_RESPONSE", "Invalid agent response"),
    /// `ExtendedAgentCardNotConfiguredError`.
    ExtendedAgentCardNotConfigured => (-32007, 400, "FAILED_PRECONDITION", "EXTENDED_AGENT_CARD_NOT_CONFIGURED", "Extended agent card is not configured"),
    /// `ExtensionSupportRequiredError`.
    ExtensionSupportRequired => (-32008, 400, "FAILED_PRECONDITION", "EXTENSION_SUPPORT_REQUIRED", "A required extension was not activated"),
    /// `VersionNotSupportedError`.
    VersionNotSupported => (-32009, 400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED", "Protocol version not supported"),
    /// No credential the agent's card asks for was presented, or the one presented was not
    /// accepted. JSON-RPC `-32000` with reason `UNAUTHENTICATED`; HTTP 401 with
    /// `WWW-Authenticate` saying what to send.
    Unauthenticated => (-32000, 401, "UNAUTHENTICATED", "UNAUTHENTICATED", "Authentication required"),
    /// The credential is valid but lacks a permission (scope) the request needs. JSON-RPC
    /// `-32000` with reason `PERMISSION_DENIED`; HTTP 403.
    PermissionDenied => (-32000, 403, "PERMISSION_DENIED", "PERMISSION_DENIED", "Permission denied"),
    /// The server is at capacity or overloaded: nothing ran; retry after the advised delay.
    /// JSON-RPC `-32603` with reason `RESOURCE_EXHAUSTED`, HTTP 503.
    ResourceExhausted => (-32603, 503, "UNAVAILABLE", "RESOURCE_EXHAUSTED", "Temporarily unavailable"),
}

impl ErrorKind {
    /// The kind a JSON-RPC code names (`-32603` reads as [`ErrorKind::Internal`] and `-32000`
    /// as [`ErrorKind::Unauthenticated`]; the `ErrorInfo.reason` tells
    /// [`ErrorKind::ResourceExhausted`] and [`ErrorKind::PermissionDenied`] apart).
    ///
    /// ```
    /// use a2a_protocol_types::ErrorKind;
    ///
    /// assert_eq!(ErrorKind::from_jsonrpc_code(-32001), Some(ErrorKind::TaskNotFound));
    /// assert_eq!(ErrorKind::from_jsonrpc_code(-32603), Some(ErrorKind::Internal));
    /// ```
    pub fn from_jsonrpc_code(code: i32) -> Option<Self> {
        Self::ALL.iter().copied().find(|k| {
            k.jsonrpc_code() == code
                && !matches!(k, Self::ResourceExhausted | Self::PermissionDenied)
        })
    }

    /// Whether a retry of the same request may succeed (the server ran nothing).
    ///
    /// ```
    /// use a2a_protocol_types::ErrorKind;
    ///
    /// assert!(ErrorKind::ResourceExhausted.is_retryable());
    /// assert!(!ErrorKind::TaskNotFound.is_retryable());
    /// ```
    pub fn is_retryable(self) -> bool {
        matches!(self, Self::ResourceExhausted)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.reason())
    }
}

/// `google.rpc.ErrorInfo`: why the error happened, machine-readably.
///
/// ```
/// use a2a_protocol_types::A2aError;
///
/// let error = A2aError::task_not_found("t-1");
/// let info = error.error_info().unwrap();
/// assert_eq!((info.reason.as_str(), info.domain.as_str()), ("TASK_NOT_FOUND", "a2a-protocol.org"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorInfo {
    /// The error type in UPPER_SNAKE_CASE, such as `TASK_NOT_FOUND`.
    #[serde(default)]
    pub reason: String,
    /// Who defines the reason; [`ERROR_DOMAIN`] for A2A errors.
    #[serde(default)]
    pub domain: String,
    /// Context, such as the task id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, String>,
}

/// One invalid field of a `google.rpc.BadRequest`.
///
/// ```
/// use a2a_protocol_types::error::FieldViolation;
///
/// let violation = FieldViolation {
///     field: "message.parts".into(),
///     description: "a message needs at least one part".into(),
/// };
/// assert_eq!(serde_json::to_value(&violation).unwrap()["field"], "message.parts");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldViolation {
    /// The field's path, such as `message.parts`.
    pub field: String,
    /// What is wrong and how to fix it.
    pub description: String,
}

/// `google.rpc.BadRequest`: which fields are invalid.
///
/// ```
/// use a2a_protocol_types::A2aError;
/// use a2a_protocol_types::error::ErrorDetail;
///
/// let error = A2aError::invalid_params("bad request")
///     .with_field_violation("message.messageId", "must not be empty");
/// let bad = error.details.iter().find_map(|d| match d {
///     ErrorDetail::BadRequest(bad) => Some(bad),
///     _ => None,
/// });
/// assert_eq!(bad.unwrap().field_violations[0].field, "message.messageId");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BadRequest {
    /// The invalid fields.
    #[serde(default)]
    #[serde(alias = "field_violations")]
    pub field_violations: Vec<FieldViolation>,
}

/// `google.rpc.RetryInfo`: how long to wait before retrying.
///
/// ```
/// use std::time::Duration;
///
/// use a2a_protocol_types::error::RetryInfo;
///
/// let info = RetryInfo { retry_delay: Duration::from_millis(1500) };
/// assert_eq!(serde_json::to_value(info).unwrap()["retryDelay"], "1.500s");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryInfo {
    /// The delay, written as a ProtoJSON duration (`"1.500s"`).
    #[serde(with = "proto_duration")]
    #[serde(alias = "retry_delay")]
    pub retry_delay: Duration,
}

mod proto_duration {
    use super::*;

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        let millis = d.subsec_millis();
        if millis == 0 {
            s.collect_str(&format_args!("{}s", d.as_secs()))
        } else {
            s.collect_str(&format_args!("{}.{millis:03}s", d.as_secs()))
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        let seconds: f64 = text
            .strip_suffix('s')
            .and_then(|n| n.parse().ok())
            .filter(|n: &f64| n.is_finite() && *n >= 0.0)
            .ok_or_else(|| D::Error::custom("retryDelay must be a duration such as \"1.5s\""))?;
        Duration::try_from_secs_f64(seconds).map_err(D::Error::custom)
    }
}

/// One entry of an error's `details` / `data` array, identified by its `@type`.
///
/// ```
/// use a2a_protocol_types::error::ErrorDetail;
///
/// let detail: ErrorDetail = serde_json::from_value(serde_json::json!({
///     "@type": "type.googleapis.com/google.rpc.RetryInfo",
///     "retryDelay": "2s"
/// }))
/// .unwrap();
/// assert!(matches!(detail, ErrorDetail::RetryInfo(info) if info.retry_delay.as_secs() == 2));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum ErrorDetail {
    /// `google.rpc.ErrorInfo`.
    ErrorInfo(ErrorInfo),
    /// `google.rpc.BadRequest`.
    BadRequest(BadRequest),
    /// `google.rpc.RetryInfo`.
    RetryInfo(RetryInfo),
    /// Any other object, kept as received.
    Other(Metadata),
}

impl Serialize for ErrorDetail {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (type_url, body) = match self {
            Self::ErrorInfo(info) => (ERROR_INFO_TYPE, serde_json::to_value(info)),
            Self::BadRequest(bad) => (BAD_REQUEST_TYPE, serde_json::to_value(bad)),
            Self::RetryInfo(retry) => (RETRY_INFO_TYPE, serde_json::to_value(retry)),
            Self::Other(map) => return map.serialize(serializer),
        };
        let mut object = match body.map_err(serde::ser::Error::custom)? {
            Value::Object(object) => object,
            _ => Metadata::new(),
        };
        object.insert("@type".into(), Value::String(type_url.into()));
        object.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ErrorDetail {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let object = Metadata::deserialize(deserializer)?;
        let type_url = object.get("@type").and_then(Value::as_str).unwrap_or("");
        let parsed = match type_url {
            ERROR_INFO_TYPE => ErrorInfo::deserialize(&Value::Object(object.clone()))
                .map(ErrorDetail::ErrorInfo)
                .ok(),
            BAD_REQUEST_TYPE => BadRequest::deserialize(&Value::Object(object.clone()))
                .map(ErrorDetail::BadRequest)
                .ok(),
            RETRY_INFO_TYPE => RetryInfo::deserialize(&Value::Object(object.clone()))
                .map(ErrorDetail::RetryInfo)
                .ok(),
            _ => None,
        };
        Ok(parsed.unwrap_or(ErrorDetail::Other(object)))
    }
}

/// An A2A error: its kind, a message for humans, and structured details.
///
/// Every error made here carries an `ErrorInfo` with the kind's reason, as spec §11.6 requires.
///
/// ```
/// use a2a_protocol_types::{A2aError, ErrorKind};
///
/// let error = A2aError::task_not_found("t-1");
/// assert_eq!(error.kind, ErrorKind::TaskNotFound);
/// assert_eq!(error.to_jsonrpc().code, -32001);
/// assert_eq!(error.to_http().0, 404);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct A2aError {
    /// The error type.
    pub kind: ErrorKind,
    /// What went wrong and what to do about it.
    pub message: String,
    /// `google.rpc` detail objects; the first `ErrorInfo` names the kind.
    pub details: Vec<ErrorDetail>,
}

impl fmt::Display for A2aError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.reason(), self.message)
    }
}

impl std::error::Error for A2aError {}

impl A2aError {
    /// An error of `kind` with `message` and an `ErrorInfo` naming the kind.
    ///
    /// ```
    /// use a2a_protocol_types::{A2aError, ErrorKind};
    ///
    /// let error = A2aError::new(ErrorKind::UnsupportedOperation, "streaming is off");
    /// assert_eq!(error.error_info().unwrap().reason, "UNSUPPORTED_OPERATION");
    /// ```
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            details: vec![ErrorDetail::ErrorInfo(ErrorInfo {
                reason: kind.reason().into(),
                domain: ERROR_DOMAIN.into(),
                metadata: BTreeMap::new(),
            })],
        }
    }

    /// Adds a key to the `ErrorInfo` metadata.
    ///
    /// ```
    /// use a2a_protocol_types::{A2aError, ErrorKind};
    ///
    /// let error = A2aError::new(ErrorKind::InvalidParams, "bad page token")
    ///     .with_metadata("field", "pageToken");
    /// assert_eq!(error.error_info().unwrap().metadata["field"], "pageToken");
    /// ```
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let Some(info) = self.error_info_mut() {
            info.metadata.insert(key.into(), value.into());
        }
        self
    }

    /// Adds a detail object.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_types::error::{ErrorDetail, RetryInfo};
    /// use a2a_protocol_types::{A2aError, ErrorKind};
    ///
    /// let error = A2aError::new(ErrorKind::Internal, "busy")
    ///     .with_detail(ErrorDetail::RetryInfo(RetryInfo { retry_delay: Duration::from_secs(1) }));
    /// assert_eq!(error.retry_after(), Some(Duration::from_secs(1)));
    /// ```
    pub fn with_detail(mut self, detail: ErrorDetail) -> Self {
        self.details.push(detail);
        self
    }

    /// Adds a `BadRequest` field violation (merging into an existing `BadRequest`).
    ///
    /// ```
    /// use a2a_protocol_types::A2aError;
    ///
    /// let error = A2aError::invalid_params("two fields are wrong")
    ///     .with_field_violation("message.role", "must be ROLE_USER")
    ///     .with_field_violation("message.parts", "must not be empty");
    /// assert_eq!(error.details.len(), 2, "one ErrorInfo, one BadRequest with both fields");
    /// ```
    pub fn with_field_violation(
        mut self,
        field: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        let violation = FieldViolation {
            field: field.into(),
            description: description.into(),
        };
        for detail in &mut self.details {
            if let ErrorDetail::BadRequest(bad) = detail {
                bad.field_violations.push(violation);
                return self;
            }
        }
        self.details.push(ErrorDetail::BadRequest(BadRequest {
            field_violations: vec![violation],
        }));
        self
    }

    /// Adds a `RetryInfo` advising the delay before a retry.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_types::{A2aError, ErrorKind};
    ///
    /// let error = A2aError::new(ErrorKind::ResourceExhausted, "full")
    ///     .with_retry_after(Duration::from_secs(3));
    /// assert_eq!(error.retry_after(), Some(Duration::from_secs(3)));
    /// ```
    pub fn with_retry_after(mut self, delay: Duration) -> Self {
        self.details
            .retain(|d| !matches!(d, ErrorDetail::RetryInfo(_)));
        self.details
            .push(ErrorDetail::RetryInfo(RetryInfo { retry_delay: delay }));
        self
    }

    /// `TaskNotFoundError` for `task_id`.
    ///
    /// ```
    /// use a2a_protocol_types::{A2aError, ErrorKind};
    ///
    /// let error = A2aError::task_not_found("t-1");
    /// assert_eq!(error.kind, ErrorKind::TaskNotFound);
    /// assert!(error.message.contains("t-1"));
    /// ```
    pub fn task_not_found(task_id: &str) -> Self {
        Self::new(
            ErrorKind::TaskNotFound,
            format!(
                "task {} does not exist or is not accessible",
                quoted(task_id)
            ),
        )
        .with_metadata("taskId", truncate(task_id))
    }

    /// `TaskNotCancelableError` for a task in `state`.
    ///
    /// ```
    /// use a2a_protocol_types::{A2aError, ErrorKind, TaskState};
    ///
    /// let error = A2aError::task_not_cancelable("t-1", TaskState::Completed);
    /// assert_eq!(error.kind, ErrorKind::TaskNotCancelable);
    /// ```
    pub fn task_not_cancelable(task_id: &str, state: crate::task::TaskState) -> Self {
        Self::new(
            ErrorKind::TaskNotCancelable,
            format!("task {} is {state} and cannot be canceled", quoted(task_id)),
        )
        .with_metadata("taskId", truncate(task_id))
    }

    /// `InvalidParams` with a message.
    ///
    /// ```
    /// use a2a_protocol_types::{A2aError, ErrorKind};
    ///
    /// assert_eq!(A2aError::invalid_params("no parts").kind, ErrorKind::InvalidParams);
    /// ```
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidParams, message)
    }

    /// `UnsupportedOperationError` with a message.
    ///
    /// ```
    /// use a2a_protocol_types::{A2aError, ErrorKind};
    ///
    /// let error = A2aError::unsupported_operation("no streaming here");
    /// assert_eq!(error.kind, ErrorKind::UnsupportedOperation);
    /// ```
    pub fn unsupported_operation(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::UnsupportedOperation, message)
    }

    /// `PushNotificationNotSupportedError`.
    ///
    /// ```
    /// use a2a_protocol_types::A2aError;
    ///
    /// assert_eq!(A2aError::push_notification_not_supported().to_jsonrpc().code, -32003);
    /// ```
    pub fn push_notification_not_supported() -> Self {
        Self::new(
            ErrorKind::PushNotificationNotSupported,
            "this agent does not support push notifications (its card says pushNotifications: false)",
        )
    }

    /// `VersionNotSupportedError` for a requested version.
    ///
    /// ```
    /// use a2a_protocol_types::{A2aError, ErrorKind};
    ///
    /// let error = A2aError::version_not_supported("0.2", &["1.0"]);
    /// assert_eq!(error.kind, ErrorKind::VersionNotSupported);
    /// assert!(error.message.contains("1.0"));
    /// ```
    pub fn version_not_supported(requested: &str, supported: &[&str]) -> Self {
        Self::new(
            ErrorKind::VersionNotSupported,
            format!(
                "A2A protocol version {} is not supported; send A2A-Version: {}",
                quoted(requested),
                supported.join(" or ")
            ),
        )
        .with_metadata("requestedVersion", truncate(requested))
        .with_metadata("supportedVersions", supported.join(","))
    }

    /// `InternalError` with a message (never the cause's internals: log those instead).
    ///
    /// ```
    /// use a2a_protocol_types::A2aError;
    ///
    /// assert_eq!(A2aError::internal("the store failed").to_http().0, 500);
    /// ```
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }

    /// Temporarily unavailable: nothing ran; retry after `retry_after`.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_types::A2aError;
    ///
    /// let error = A2aError::resource_exhausted("the key index is full", Duration::from_secs(1));
    /// assert_eq!(error.to_http().0, 503);
    /// assert_eq!(error.to_jsonrpc().code, -32603);
    /// assert_eq!(error.retry_after(), Some(Duration::from_secs(1)));
    /// ```
    pub fn resource_exhausted(message: impl Into<String>, retry_after: Duration) -> Self {
        Self::new(ErrorKind::ResourceExhausted, message).with_retry_after(retry_after)
    }

    /// Missing or refused credentials (HTTP 401).
    ///
    /// ```
    /// use a2a_protocol_types::{A2aError, ErrorKind};
    ///
    /// let error = A2aError::unauthenticated("present an API key in X-API-Key");
    /// assert_eq!((error.kind.http_status(), error.to_jsonrpc().code), (401, -32000));
    /// ```
    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unauthenticated, message)
    }

    /// Valid credentials without the permission the request needs (HTTP 403).
    ///
    /// ```
    /// use a2a_protocol_types::{A2aError, ErrorKind};
    ///
    /// let error = A2aError::permission_denied("the token lacks scope tasks:write");
    /// assert_eq!(error.kind.http_status(), 403);
    /// ```
    pub fn permission_denied(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::PermissionDenied, message)
    }

    /// The first `ErrorInfo` detail.
    ///
    /// ```
    /// use a2a_protocol_types::A2aError;
    ///
    /// assert_eq!(A2aError::invalid_params("x").error_info().unwrap().reason, "INVALID_PARAMS");
    /// ```
    pub fn error_info(&self) -> Option<&ErrorInfo> {
        self.details.iter().find_map(|d| match d {
            ErrorDetail::ErrorInfo(info) => Some(info),
            _ => None,
        })
    }

    fn error_info_mut(&mut self) -> Option<&mut ErrorInfo> {
        self.details.iter_mut().find_map(|d| match d {
            ErrorDetail::ErrorInfo(info) => Some(info),
            _ => None,
        })
    }

    /// The advised retry delay, from a `RetryInfo` detail.
    ///
    /// ```
    /// use a2a_protocol_types::A2aError;
    ///
    /// assert_eq!(A2aError::internal("x").retry_after(), None);
    /// ```
    pub fn retry_after(&self) -> Option<Duration> {
        self.details.iter().find_map(|d| match d {
            ErrorDetail::RetryInfo(retry) => Some(retry.retry_delay),
            _ => None,
        })
    }

    /// The JSON-RPC error object (spec §9.5).
    ///
    /// ```
    /// use a2a_protocol_types::A2aError;
    ///
    /// let error = A2aError::task_not_found("t-1").to_jsonrpc();
    /// assert_eq!(error.code, -32001);
    /// assert!(error.data.is_some(), "the details travel in data");
    /// ```
    pub fn to_jsonrpc(&self) -> JsonRpcError {
        JsonRpcError {
            code: self.kind.jsonrpc_code(),
            message: self.message.clone(),
            data: Some(details_value(&self.details)),
        }
    }

    /// Reads a JSON-RPC error object; the `ErrorInfo` reason, when present, decides the kind.
    ///
    /// ```
    /// use a2a_protocol_types::{A2aError, ErrorKind};
    ///
    /// let wire = A2aError::task_not_found("t-1").to_jsonrpc();
    /// assert_eq!(A2aError::from_jsonrpc(&wire).kind, ErrorKind::TaskNotFound);
    /// ```
    pub fn from_jsonrpc(error: &JsonRpcError) -> Self {
        let details = parse_details(error.data.as_ref());
        let by_reason = reason_kind(&details);
        let kind = by_reason
            .filter(|k| k.jsonrpc_code() == error.code)
            .or_else(|| ErrorKind::from_jsonrpc_code(error.code))
            .unwrap_or(ErrorKind::Internal);
        Self {
            kind,
            message: error.message.clone(),
            details,
        }
    }

    /// The HTTP status and `google.rpc.Status` body of the HTTP+JSON binding (spec §11.6).
    ///
    /// ```
    /// use a2a_protocol_types::A2aError;
    ///
    /// let (status, body) = A2aError::task_not_found("t-1").to_http();
    /// assert_eq!((status, body.error.status.as_str()), (404, "NOT_FOUND"));
    /// ```
    pub fn to_http(&self) -> (u16, HttpErrorBody) {
        let status = self.kind.http_status();
        let body = HttpErrorBody {
            error: HttpError {
                code: i32::from(status),
                status: self.kind.rpc_status().into(),
                message: self.message.clone(),
                details: self.details.clone(),
            },
        };
        (status, body)
    }

    /// Reads an HTTP+JSON error; the `ErrorInfo` reason decides the kind, else the status.
    ///
    /// ```
    /// use a2a_protocol_types::{A2aError, ErrorKind};
    ///
    /// let (status, body) = A2aError::task_not_found("t-1").to_http();
    /// assert_eq!(A2aError::from_http(status, &body).kind, ErrorKind::TaskNotFound);
    /// ```
    pub fn from_http(status: u16, body: &HttpErrorBody) -> Self {
        let kind = reason_kind(&body.error.details).unwrap_or(match status {
            404 => ErrorKind::TaskNotFound,
            429 | 503 => ErrorKind::ResourceExhausted,
            400..=499 => ErrorKind::InvalidParams,
            _ => ErrorKind::Internal,
        });
        Self {
            kind,
            message: body.error.message.clone(),
            details: body.error.details.clone(),
        }
    }
}

impl A2aError {
    /// Reads any error body a peer may answer with over HTTP: the `google.rpc.Status` shape of
    /// spec §11.6, or an RFC 9457 `application/problem+json` body (whose `type` URL's last
    /// segment, such as `version-not-supported`, names the kind). Falls back to the status.
    ///
    /// ```
    /// use a2a_protocol_types::{A2aError, ErrorKind};
    ///
    /// let problem = serde_json::json!({
    ///     "type": "https://a2a-protocol.org/errors/version-not-supported",
    ///     "title": "Version not supported",
    /// });
    /// assert_eq!(A2aError::from_http_value(400, &problem).kind, ErrorKind::VersionNotSupported);
    /// assert_eq!(A2aError::from_http_value(404, &serde_json::json!("?")).kind, ErrorKind::TaskNotFound);
    /// ```
    pub fn from_http_value(status: u16, body: &Value) -> Self {
        if let Ok(parsed) = HttpErrorBody::deserialize(body) {
            return Self::from_http(status, &parsed);
        }
        let text = |key: &str| body.get(key).and_then(Value::as_str).unwrap_or("");
        let by_type = text("type")
            .rsplit('/')
            .next()
            .map(|slug| slug.replace('-', "_").to_ascii_uppercase())
            .and_then(|reason| ErrorKind::from_reason(&reason));
        let fallback = Self::from_http(
            status,
            &HttpErrorBody {
                error: HttpError {
                    code: i32::from(status),
                    status: String::new(),
                    message: String::new(),
                    details: Vec::new(),
                },
            },
        );
        let message = [text("detail"), text("title"), text("message")]
            .into_iter()
            .find(|m| !m.is_empty())
            .map(str::to_owned)
            .unwrap_or_else(|| format!("HTTP {status}"));
        let mut error = Self::new(by_type.unwrap_or(fallback.kind), message);
        if let Some(Value::Array(violations)) = body.get("errors") {
            for violation in violations {
                let field = violation.get("field").and_then(Value::as_str).unwrap_or("");
                let description = violation
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                error = error.with_field_violation(field, description);
            }
        }
        error
    }
}

fn reason_kind(details: &[ErrorDetail]) -> Option<ErrorKind> {
    details.iter().find_map(|d| match d {
        ErrorDetail::ErrorInfo(info) => ErrorKind::from_reason(&info.reason),
        _ => None,
    })
}

fn details_value(details: &[ErrorDetail]) -> Value {
    serde_json::to_value(details).unwrap_or(Value::Array(Vec::new()))
}

fn parse_details(data: Option<&Value>) -> Vec<ErrorDetail> {
    match data {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|item| ErrorDetail::deserialize(item).ok())
            .collect(),
        Some(Value::Object(object)) => ErrorDetail::deserialize(&Value::Object(object.clone()))
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

/// Quotes an identifier from a request for an error message, cut to a safe length and with
/// control characters escaped, so it cannot forge log lines.
fn quoted(text: &str) -> String {
    format!("{:?}", truncate(text))
}

fn truncate(text: &str) -> String {
    text.chars().take(128).collect()
}

/// The body of an HTTP+JSON error response: `{"error": {...}}`.
///
/// ```
/// use a2a_protocol_types::A2aError;
///
/// let (_, body) = A2aError::invalid_params("no parts").to_http();
/// let json = serde_json::to_value(&body).unwrap();
/// assert_eq!(json["error"]["status"], "INVALID_ARGUMENT");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpErrorBody {
    /// The error.
    pub error: HttpError,
}

/// `google.rpc.Status` as the HTTP+JSON binding writes it.
///
/// ```
/// use a2a_protocol_types::A2aError;
///
/// let (_, body) = A2aError::task_not_found("t-1").to_http();
/// assert_eq!(body.error.code, 404);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpError {
    /// The HTTP status code.
    pub code: i32,
    /// The `google.rpc.Code` name, such as `NOT_FOUND`.
    #[serde(default)]
    pub status: String,
    /// What went wrong.
    #[serde(default)]
    pub message: String,
    /// Detail objects.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<ErrorDetail>,
}
