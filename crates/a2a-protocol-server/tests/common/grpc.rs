//! The harness's third binding: a call given as A2A JSON (what the HTTP bindings send) is
//! read into the public model, sent as its proto message by a client generated from the
//! spec's proto, over HTTP/2 to the same port, and its answer (or status) handed back as
//! the HTTP bindings' would be. A request that the proto cannot say (a malformed field, say)
//! fails the test: such a test belongs to the HTTP bindings only.
// The harness's error carries the whole answer for assertions; its size is no concern here.
#![allow(clippy::result_large_err)]

use a2a_protocol_grpc::pb;
use a2a_protocol_grpc::pb::a2a_service_client::A2aServiceClient;
use a2a_protocol_types as types;
use futures::{Stream, StreamExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tonic::transport::Channel;

use super::WireError;

/// A stream of events from the service, as the A2A JSON of each.
pub type Events = std::pin::Pin<Box<dyn Stream<Item = Result<Value, WireError>> + Send>>;

/// A client of the service at `base`, over a fresh HTTP/2 connection.
pub async fn client(base: &str) -> A2aServiceClient<Channel> {
    let channel = Channel::from_shared(base.to_owned())
        .expect("a URL")
        .connect()
        .await
        .expect("an HTTP/2 connection");
    A2aServiceClient::new(channel)
}

fn read<T: DeserializeOwned>(method: &str, params: Value) -> T {
    serde_json::from_value(params.clone())
        .unwrap_or_else(|e| panic!("{method} {params} cannot be said over gRPC: {e}"))
}

fn request<T>(message: T, headers: &[(&str, &str)]) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("a2a-version", "1.0".parse().expect("ascii"));
    for (name, value) in headers {
        let name = tonic::metadata::MetadataKey::from_bytes(name.to_ascii_lowercase().as_bytes())
            .expect("a metadata key");
        request
            .metadata_mut()
            .insert(name, value.parse().expect("an ASCII value"));
    }
    request
}

/// A status as the harness reports errors: the A2A reason and message from its details, the
/// status code, and `RetryInfo`'s delay in whole seconds.
pub fn wire_error(status: &tonic::Status) -> WireError {
    let error = a2a_protocol_grpc::status::from_status(status);
    WireError {
        status: 0,
        code: None,
        grpc: Some(status.code()),
        reason: error.kind.reason().to_owned(),
        message: status.message().to_owned(),
        retry_after: error.retry_after().map(|d| d.as_secs().to_string()),
        body: serde_json::to_value(&error.details).unwrap_or(Value::Null),
    }
}

fn answer<R, T>(answer: Result<tonic::Response<R>, tonic::Status>) -> Result<Value, WireError>
where
    T: TryFrom<R> + Serialize,
    <T as TryFrom<R>>::Error: std::fmt::Debug,
{
    let answer = answer.map_err(|status| wire_error(&status))?.into_inner();
    let answer = T::try_from(answer).expect("the answer is a valid A2A value");
    Ok(serde_json::to_value(answer).expect("serializable"))
}

/// Calls a unary operation over gRPC.
pub async fn call(
    base: &str,
    method: &str,
    params: Value,
    headers: &[(&str, &str)],
) -> Result<Value, WireError> {
    use types::push::{ListTaskPushNotificationConfigsResponse, TaskPushNotificationConfig};
    use types::*;
    let mut c = client(base).await;
    match method {
        "SendMessage" => {
            let m: pb::SendMessageRequest = read::<SendMessageRequest>(method, params).into();
            answer::<_, SendMessageResponse>(c.send_message(request(m, headers)).await)
        }
        "GetTask" => {
            let m: pb::GetTaskRequest = read::<GetTaskRequest>(method, params).into();
            answer::<_, Task>(c.get_task(request(m, headers)).await)
        }
        "ListTasks" => {
            let m: pb::ListTasksRequest = read::<ListTasksRequest>(method, params).into();
            answer::<_, ListTasksResponse>(c.list_tasks(request(m, headers)).await)
        }
        "CancelTask" => {
            let m: pb::CancelTaskRequest = read::<CancelTaskRequest>(method, params).into();
            answer::<_, Task>(c.cancel_task(request(m, headers)).await)
        }
        "GetExtendedAgentCard" => {
            let m: pb::GetExtendedAgentCardRequest =
                read::<GetExtendedAgentCardRequest>(method, params).into();
            answer::<_, AgentCard>(c.get_extended_agent_card(request(m, headers)).await)
        }
        "CreateTaskPushNotificationConfig" => {
            let m: pb::TaskPushNotificationConfig =
                read::<TaskPushNotificationConfig>(method, params).into();
            answer::<_, TaskPushNotificationConfig>(
                c.create_task_push_notification_config(request(m, headers))
                    .await,
            )
        }
        "GetTaskPushNotificationConfig" => {
            let m: pb::GetTaskPushNotificationConfigRequest =
                read::<GetTaskPushNotificationConfigRequest>(method, params).into();
            answer::<_, TaskPushNotificationConfig>(
                c.get_task_push_notification_config(request(m, headers))
                    .await,
            )
        }
        "ListTaskPushNotificationConfigs" => {
            let m: pb::ListTaskPushNotificationConfigsRequest =
                read::<ListTaskPushNotificationConfigsRequest>(method, params).into();
            answer::<_, ListTaskPushNotificationConfigsResponse>(
                c.list_task_push_notification_configs(request(m, headers))
                    .await,
            )
        }
        "DeleteTaskPushNotificationConfig" => {
            let m: pb::DeleteTaskPushNotificationConfigRequest =
                read::<DeleteTaskPushNotificationConfigRequest>(method, params).into();
            answer::<_, ()>(
                c.delete_task_push_notification_config(request(m, headers))
                    .await,
            )
        }
        // A stream asked for as a call: refused, or its first event.
        "SendStreamingMessage" | "SubscribeToTask" => {
            let mut events = open_with(base, method, params, headers).await?;
            events.next().await.expect("an event")
        }
        other => panic!("no gRPC mapping for {other} in the harness"),
    }
}

/// Opens a streaming operation over gRPC: its events, or the status it was refused with.
pub async fn open(base: &str, method: &str, params: Value) -> Result<Events, WireError> {
    open_with(base, method, params, &[]).await
}

/// [`open`] with `headers` as metadata.
pub async fn open_with(
    base: &str,
    method: &str,
    params: Value,
    headers: &[(&str, &str)],
) -> Result<Events, WireError> {
    let mut c = client(base).await;
    let opened = match method {
        "SendStreamingMessage" => {
            let m: pb::SendMessageRequest =
                read::<types::SendMessageRequest>(method, params).into();
            c.send_streaming_message(request(m, headers)).await
        }
        "SubscribeToTask" => {
            let m: pb::SubscribeToTaskRequest =
                read::<types::SubscribeToTaskRequest>(method, params).into();
            c.subscribe_to_task(request(m, headers)).await
        }
        other => panic!("{other} is not a streaming operation"),
    };
    let events = opened.map_err(|status| wire_error(&status))?.into_inner();
    Ok(events
        .map(|event| {
            let event = event.map_err(|status| wire_error(&status))?;
            let event = types::StreamResponse::try_from(event).expect("a valid event");
            Ok(serde_json::to_value(event).expect("serializable"))
        })
        .boxed())
}
