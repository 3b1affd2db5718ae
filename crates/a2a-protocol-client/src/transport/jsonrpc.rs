//! JSON-RPC 2.0: one POST endpoint; errors in the envelope.

use std::time::Duration;

use a2a_protocol_types::jsonrpc::{JsonRpcRequest, JsonRpcResponse};
use a2a_protocol_types::{A2aError, StreamResponse};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Call, JsonAnswer, truncate, with_header_retry};
use crate::error::ClientError;

/// The request object of `call`, written straight from its typed request.
pub(super) fn body(id: i64, call: &Call) -> Result<Vec<u8>, ClientError> {
    fn envelope<P: Serialize>(
        id: i64,
        call: &Call,
        params: Option<&P>,
    ) -> serde_json::Result<Vec<u8>> {
        serde_json::to_vec(&JsonRpcRequest::new(id, call.operation().method(), params))
    }
    let written = match call {
        Call::SendMessage(r) | Call::SendStreamingMessage(r) => envelope(id, call, Some(r)),
        Call::GetTask(r) => envelope(id, call, Some(r)),
        Call::ListTasks(r) => envelope(id, call, Some(r)),
        Call::CancelTask(r) => envelope(id, call, Some(r)),
        Call::SubscribeToTask(r) => envelope(id, call, Some(r)),
        Call::CreateTaskPushNotificationConfig(r) => envelope(id, call, Some(r)),
        Call::GetTaskPushNotificationConfig(r) => envelope(id, call, Some(r)),
        Call::ListTaskPushNotificationConfigs(r) => envelope(id, call, Some(r)),
        Call::DeleteTaskPushNotificationConfig(r) => envelope(id, call, Some(r)),
        // No params at all when there is nothing to say.
        Call::GetExtendedAgentCard(r) => envelope(id, call, (!r.tenant.is_empty()).then_some(r)),
    };
    written.map_err(|e| ClientError::Decode(format!("the request does not serialize: {e}")))
}

/// A JSON-RPC answer body, with the HTTP status and `Retry-After` it came with.
pub(super) struct Answered<'a> {
    pub(super) status: u16,
    pub(super) retry_after: Option<Duration>,
    pub(super) body: &'a [u8],
}

impl JsonAnswer for Answered<'_> {
    fn read<T: DeserializeOwned>(self) -> Result<T, ClientError> {
        match serde_json::from_slice::<JsonRpcResponse<T>>(self.body) {
            Ok(response) => response.outcome.map_err(|error| {
                ClientError::Agent(with_header_retry(
                    A2aError::from_jsonrpc(&error),
                    self.retry_after,
                ))
            }),
            Err(_) if !(200..300).contains(&self.status) => Err(ClientError::Http {
                status: self.status,
                body: truncate(self.body),
                retry_after: self.retry_after,
            }),
            Err(error) => Err(ClientError::Decode(format!(
                "not a JSON-RPC response of the kind asked for: {error}"
            ))),
        }
    }
}

pub(super) fn decode_event(data: &str) -> Result<StreamResponse, ClientError> {
    let response: JsonRpcResponse<StreamResponse> = serde_json::from_str(data)
        .map_err(|e| ClientError::Decode(format!("stream event: {e}")))?;
    response
        .outcome
        .map_err(|error| ClientError::Agent(A2aError::from_jsonrpc(&error)))
}
