//! HTTP+JSON: resource paths (under the tenant, when there is one), query parameters for
//! reads, `google.rpc.Status` error bodies.

use std::time::Duration;

use a2a_protocol_types::{A2aError, Message, Metadata, SendMessageConfiguration};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Call, JsonAnswer, truncate, with_header_retry};
use crate::error::ClientError;

/// Characters left as they are in a path segment.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

fn segment(value: &str) -> String {
    utf8_percent_encode(value, SEGMENT).to_string()
}

/// A send's body: the request but its tenant, which the path carries.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SendBody<'a> {
    message: &'a Message,
    #[serde(skip_serializing_if = "Option::is_none")]
    configuration: Option<&'a SendMessageConfiguration>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<&'a Metadata>,
}

/// A cancel's body: the request but its tenant and id, which the path carries.
#[derive(Serialize)]
struct CancelBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<&'a Metadata>,
}

/// A POST of `body` in the A2A media type, with exactly one `Content-Type`.
fn post(
    http: &reqwest::Client,
    url: String,
    body: &impl Serialize,
) -> Result<reqwest::RequestBuilder, ClientError> {
    let bytes = serde_json::to_vec(body)
        .map_err(|e| ClientError::Decode(format!("the request does not serialize: {e}")))?;
    Ok(http
        .post(url)
        .header(http::header::CONTENT_TYPE, "application/a2a+json")
        .body(bytes))
}

/// The query parameters of a read: each set field by its JSON name.
#[derive(Default)]
struct Query(Vec<(&'static str, String)>);

impl Query {
    fn with(mut self, name: &'static str, value: Option<impl ToString>) -> Self {
        if let Some(value) = value {
            self.0.push((name, value.to_string()));
        }
        self
    }
}

pub(super) fn request(
    http: &reqwest::Client,
    base: &str,
    call: &Call,
) -> Result<reqwest::RequestBuilder, ClientError> {
    let tenant = call.tenant();
    let root = if tenant.is_empty() {
        base.to_owned()
    } else {
        format!("{base}/{}", segment(tenant))
    };
    let push = |task: &str| format!("{root}/tasks/{}/pushNotificationConfigs", segment(task));
    Ok(match call {
        Call::SendMessage(r) | Call::SendStreamingMessage(r) => {
            let verb = if matches!(call, Call::SendMessage(_)) {
                "send"
            } else {
                "stream"
            };
            let body = SendBody {
                message: &r.message,
                configuration: r.configuration.as_ref(),
                metadata: r.metadata.as_ref(),
            };
            post(http, format!("{root}/message:{verb}"), &body)?
        }
        Call::GetTask(r) => http
            .get(format!("{root}/tasks/{}", segment(r.id.as_str())))
            .query(&Query::default().with("historyLength", r.history_length).0),
        Call::ListTasks(r) => {
            let query = Query::default()
                .with("contextId", r.context_id.as_ref().map(|c| c.as_str()))
                .with("status", r.status.map(|s| s.as_str()))
                .with("pageSize", r.page_size)
                .with("pageToken", r.page_token.as_deref())
                .with("historyLength", r.history_length)
                .with("statusTimestampAfter", r.status_timestamp_after)
                .with("includeArtifacts", r.include_artifacts);
            http.get(format!("{root}/tasks")).query(&query.0)
        }
        Call::CancelTask(r) => post(
            http,
            format!("{root}/tasks/{}:cancel", segment(r.id.as_str())),
            &CancelBody {
                metadata: r.metadata.as_ref(),
            },
        )?,
        Call::SubscribeToTask(r) => {
            http.get(format!("{root}/tasks/{}:subscribe", segment(r.id.as_str())))
        }
        Call::CreateTaskPushNotificationConfig(r) => {
            // The tenant travels in the path; the rest of the config is the body.
            let mut body = r.clone();
            body.tenant.clear();
            post(http, push(r.task_id.as_str()), &body)?
        }
        Call::GetTaskPushNotificationConfig(r) => {
            http.get(format!("{}/{}", push(r.task_id.as_str()), segment(&r.id)))
        }
        Call::ListTaskPushNotificationConfigs(r) => {
            let query = Query::default()
                .with("pageSize", (r.page_size > 0).then_some(r.page_size))
                .with(
                    "pageToken",
                    (!r.page_token.is_empty()).then_some(&r.page_token),
                );
            http.get(push(r.task_id.as_str())).query(&query.0)
        }
        Call::DeleteTaskPushNotificationConfig(r) => {
            http.delete(format!("{}/{}", push(r.task_id.as_str()), segment(&r.id)))
        }
        Call::GetExtendedAgentCard(_) => http.get(format!("{root}/extendedAgentCard")),
    })
}

/// An HTTP+JSON answer, with its status and `Retry-After`.
pub(super) struct Answered<'a> {
    pub(super) status: u16,
    pub(super) retry_after: Option<Duration>,
    pub(super) body: &'a [u8],
}

impl JsonAnswer for Answered<'_> {
    fn read<T: DeserializeOwned>(self) -> Result<T, ClientError> {
        if (200..300).contains(&self.status) {
            // An empty body is `google.protobuf.Empty` as some servers write it.
            let body: &[u8] = if self.body.iter().all(u8::is_ascii_whitespace) {
                b"{}"
            } else {
                self.body
            };
            return serde_json::from_slice(body)
                .map_err(|e| ClientError::Decode(format!("not the answer asked for: {e}")));
        }
        Err(error_of(self.status, self.retry_after, self.body))
    }
}

/// An answer that is not a success: the agent's error when the body is one, else the HTTP
/// failure.
pub(super) fn error_of(status: u16, retry_after: Option<Duration>, body: &[u8]) -> ClientError {
    match serde_json::from_slice::<Value>(body) {
        // A gateway's own 429/502/503/504 page is not the agent's answer.
        Ok(value)
            if value.is_object()
                && (names_an_a2a_error(&value) || !matches!(status, 429 | 502..=504)) =>
        {
            ClientError::Agent(with_header_retry(
                A2aError::from_http_value(status, &value),
                retry_after,
            ))
        }
        _ => ClientError::Http {
            status,
            body: truncate(body),
            retry_after,
        },
    }
}

/// Whether an error body carries a `google.rpc.ErrorInfo`, as A2A errors do.
fn names_an_a2a_error(body: &Value) -> bool {
    body.pointer("/error/details")
        .and_then(Value::as_array)
        .is_some_and(|details| {
            details.iter().any(|d| {
                d.get("@type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| t.ends_with("google.rpc.ErrorInfo"))
            })
        })
}
