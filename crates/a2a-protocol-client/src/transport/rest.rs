//! HTTP+JSON: resource paths (under the tenant, when there is one), query parameters for
//! reads, `google.rpc.Status` error bodies.

use std::time::Duration;

use a2a_protocol_types::A2aError;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Map, Value};

use super::{truncate, with_header_retry};
use crate::error::ClientError;
use crate::operation::Operation;

/// Characters left as they are in a path segment.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

fn segment(value: &str) -> String {
    utf8_percent_encode(value, SEGMENT).to_string()
}

fn field<'a>(params: &'a Value, name: &str) -> &'a str {
    params.get(name).and_then(Value::as_str).unwrap_or("")
}

fn query(params: &Value, skip: &[&str]) -> Vec<(String, String)> {
    let Some(object) = params.as_object() else {
        return Vec::new();
    };
    object
        .iter()
        .filter(|(key, _)| !skip.contains(&key.as_str()))
        .filter_map(|(key, value)| match value {
            Value::Null => None,
            Value::String(s) => Some((key.clone(), s.clone())),
            Value::Bool(_) | Value::Number(_) => Some((key.clone(), value.to_string())),
            _ => None,
        })
        .collect()
}

fn body_without(params: &Value, skip: &[&str]) -> Value {
    let object: Map<String, Value> = params
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(k, _)| !skip.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    Value::Object(object)
}

/// A POST body in the A2A media type, with exactly one `Content-Type`.
fn post(http: &reqwest::Client, url: String, body: &Value) -> reqwest::RequestBuilder {
    http.post(url)
        .header(http::header::CONTENT_TYPE, "application/a2a+json")
        .body(body.to_string())
}

pub(super) fn request(
    http: &reqwest::Client,
    base: &str,
    operation: Operation,
    params: &Value,
) -> Result<reqwest::RequestBuilder, ClientError> {
    let tenant = field(params, "tenant");
    let root = if tenant.is_empty() {
        base.to_owned()
    } else {
        format!("{base}/{}", segment(tenant))
    };
    let id = segment(field(params, "id"));
    let task = segment(field(params, "taskId"));
    let path_fields = ["tenant", "id", "taskId"];
    Ok(match operation {
        Operation::SendMessage => post(
            http,
            format!("{root}/message:send"),
            &body_without(params, &["tenant"]),
        ),
        Operation::SendStreamingMessage => post(
            http,
            format!("{root}/message:stream"),
            &body_without(params, &["tenant"]),
        ),
        Operation::GetTask => http
            .get(format!("{root}/tasks/{id}"))
            .query(&query(params, &path_fields)),
        Operation::ListTasks => http
            .get(format!("{root}/tasks"))
            .query(&query(params, &path_fields)),
        Operation::CancelTask => post(
            http,
            format!("{root}/tasks/{id}:cancel"),
            &body_without(params, &path_fields),
        ),
        Operation::SubscribeToTask => http.get(format!("{root}/tasks/{id}:subscribe")),
        Operation::CreateTaskPushNotificationConfig => post(
            http,
            format!("{root}/tasks/{task}/pushNotificationConfigs"),
            &body_without(params, &["tenant"]),
        ),
        Operation::GetTaskPushNotificationConfig => {
            http.get(format!("{root}/tasks/{task}/pushNotificationConfigs/{id}"))
        }
        Operation::ListTaskPushNotificationConfigs => http
            .get(format!("{root}/tasks/{task}/pushNotificationConfigs"))
            .query(&query(params, &path_fields)),
        Operation::DeleteTaskPushNotificationConfig => {
            http.delete(format!("{root}/tasks/{task}/pushNotificationConfigs/{id}"))
        }
        Operation::GetExtendedAgentCard => http.get(format!("{root}/extendedAgentCard")),
    })
}

pub(super) fn decode(
    status: u16,
    retry_after: Option<Duration>,
    body: &[u8],
) -> Result<Value, ClientError> {
    if (200..300).contains(&status) {
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Value::Object(Map::new()));
        }
        return serde_json::from_slice(body)
            .map_err(|e| ClientError::Decode(format!("not JSON: {e}")));
    }
    match serde_json::from_slice::<Value>(body) {
        // A gateway's own 429/502/503/504 page is not the agent's answer.
        Ok(value)
            if value.is_object()
                && (names_an_a2a_error(&value) || !matches!(status, 429 | 502..=504)) =>
        {
            Err(ClientError::Agent(with_header_retry(
                A2aError::from_http_value(status, &value),
                retry_after,
            )))
        }
        _ => Err(ClientError::Http {
            status,
            body: truncate(body),
            retry_after,
        }),
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
