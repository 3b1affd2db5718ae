//! JSON-RPC 2.0: one POST endpoint; errors in the envelope.

use std::time::Duration;

use a2a_protocol_types::jsonrpc::{JsonRpcRequest, JsonRpcResponse};
use a2a_protocol_types::{A2aError, StreamResponse};
use serde_json::Value;

use super::{truncate, with_header_retry};
use crate::error::ClientError;
use crate::operation::Operation;

pub(super) fn request(
    http: &reqwest::Client,
    url: &str,
    id: i64,
    operation: Operation,
    params: &Value,
) -> reqwest::RequestBuilder {
    let params = match params {
        Value::Object(map) if map.is_empty() && operation == Operation::GetExtendedAgentCard => {
            None
        }
        other => Some(other.clone()),
    };
    http.post(url)
        .json(&JsonRpcRequest::new(id, operation.method(), params))
}

pub(super) fn decode(
    status: u16,
    retry_after: Option<Duration>,
    body: &[u8],
) -> Result<Value, ClientError> {
    match serde_json::from_slice::<JsonRpcResponse<Value>>(body) {
        Ok(response) => response.outcome.map_err(|error| {
            ClientError::Agent(with_header_retry(
                A2aError::from_jsonrpc(&error),
                retry_after,
            ))
        }),
        Err(_) if !(200..300).contains(&status) => Err(ClientError::Http {
            status,
            body: truncate(body),
            retry_after,
        }),
        Err(error) => Err(ClientError::Decode(format!(
            "not a JSON-RPC response: {error}"
        ))),
    }
}

pub(super) fn decode_event(data: &str) -> Result<StreamResponse, ClientError> {
    let response: JsonRpcResponse<StreamResponse> = serde_json::from_str(data)
        .map_err(|e| ClientError::Decode(format!("stream event: {e}")))?;
    response
        .outcome
        .map_err(|error| ClientError::Agent(A2aError::from_jsonrpc(&error)))
}
