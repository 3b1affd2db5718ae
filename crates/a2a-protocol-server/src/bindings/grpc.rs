//! The gRPC binding (spec §10): `lf.a2a.v1.A2AService` on the same port as the HTTP bindings,
//! told apart by its path (`/lf.a2a.v1.A2AService/<method>`), over HTTP/2. Every rpc calls the
//! same [`RequestHandler`] as the other bindings, with the same call context (caller, tenant
//! in the request, `A2A-Version` and `A2A-Extensions` from metadata, deadline, trace), so every
//! rule behaves the same on all three; errors are statuses as §5.4 maps them.

use std::pin::Pin;

use a2a_protocol_grpc::pb;
use a2a_protocol_grpc::pb::a2a_service_server::{A2aService, A2aServiceServer};
use a2a_protocol_grpc::status::to_status;
use a2a_protocol_types::{A2aError, StreamResponse};
use futures::{Stream, StreamExt};
use tonic::{Request, Response, Status};

use super::AppState;
use super::call::Head;
use crate::handler::{CallContext, EventStream, SendAnswer};
use crate::telemetry;

/// The path prefix of the service's methods.
pub(crate) const SERVICE_PATH: &str = "/lf.a2a.v1.A2AService/{*method}";

/// Whether a request is a gRPC call (`application/grpc`, with or without a subtype).
pub(crate) fn is_grpc(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/grpc"))
}

/// A stream of events as the generated service answers it.
type Events = Pin<Box<dyn Stream<Item = Result<pb::StreamResponse, Status>> + Send>>;

/// A gRPC answer.
type GrpcResponse = http::Response<tonic::body::Body>;

/// The service, its answers rewritten by [`client_input_is_invalid_argument`].
type Service = tower::util::MapResponse<A2aServiceServer<Grpc>, fn(GrpcResponse) -> GrpcResponse>;

/// The service over the shared state; `Clone` and cheap, as a tower service must be.
pub(crate) fn service(state: AppState) -> Service {
    let limit = state.config.max_body_bytes;
    let service = A2aServiceServer::new(Grpc { state })
        .max_decoding_message_size(limit)
        .max_encoding_message_size(usize::MAX);
    tower::util::MapResponse::new(service, client_input_is_invalid_argument as fn(_) -> _)
}

/// A request tonic could not read (not protobuf, a field of the wrong wire type, a compressed
/// message without `grpc-encoding`) is answered by tonic itself, as `INTERNAL`; but the fault
/// is the client's, and the other bindings answer such a request as invalid. Every status the
/// service makes itself carries A2A details (`grpc-status-details-bin`), so an `INTERNAL`
/// without them is tonic's refusal of the input, and becomes `INVALID_ARGUMENT`.
fn client_input_is_invalid_argument(mut response: GrpcResponse) -> GrpcResponse {
    let headers = response.headers_mut();
    let tonic_internal = headers.get("grpc-status").is_some_and(|s| s == "13")
        && !headers.contains_key("grpc-status-details-bin");
    if tonic_internal {
        headers.insert("grpc-status", http::HeaderValue::from_static("3"));
    }
    response
}

pub(crate) struct Grpc {
    state: AppState,
}

/// A peer's message that is no valid A2A value is an invalid-params error, as it would be on
/// the other bindings.
fn invalid(error: a2a_protocol_grpc::ProtoError) -> Status {
    to_status(&A2aError::invalid_params(error.to_string()))
}

impl Grpc {
    /// Runs one rpc through the request pipeline every binding runs (see
    /// [`call`](super::call)): the version and call context from the metadata, then `call`
    /// in the request's span, timed, within its deadline.
    async fn run<T, F, Fut>(
        &self,
        operation: &'static str,
        metadata: tonic::metadata::MetadataMap,
        extensions: &http::Extensions,
        call: F,
    ) -> Result<Response<T>, Status>
    where
        F: FnOnce(CallContext) -> Fut,
        Fut: Future<Output = Result<(T, CallContext, Vec<String>), A2aError>>,
    {
        let headers = metadata.into_headers();
        let mut head =
            Head::read(&self.state, &headers, None, extensions).map_err(|e| to_status(&e))?;
        let observed = head.observe(&self.state, "grpc", operation, &headers);
        // The operation borrows nothing of the head: it takes the context and gives it back.
        let outcome = observed.run(call(std::mem::take(&mut head.ctx))).await;
        let (value, ctx, declared) = outcome.map_err(|error| to_status(&error))?;
        head.ctx = ctx;
        let mut response = Response::new(value);
        if let Some(value) = head.activated_extensions(&self.state, &declared)
            && let Ok(value) = value.to_str()
            && let Ok(value) = value.parse()
        {
            response.metadata_mut().insert("a2a-extensions", value);
        }
        Ok(response)
    }

    /// The handler's events as the service streams them, ended when the server shuts down.
    fn events(&self, events: EventStream) -> Events {
        let shutdown = self.state.shutdown.clone();
        // Counted open until the response, and so this stream, is dropped.
        let open = telemetry::GaugeHeld::open_stream();
        events
            .take_until(async move { shutdown.cancelled().await })
            .map(move |event: StreamResponse| {
                let _open = &open;
                Ok(pb::StreamResponse::from(event))
            })
            .boxed()
    }
}

/// A send's answer on the wire, converted from the task as the server holds it: taking it
/// out of its `Arc` would copy the whole task first (the live state shares it), and then
/// convert the copy.
fn send_response(answer: &SendAnswer) -> pb::SendMessageResponse {
    use pb::send_message_response::Payload;
    let payload = match answer {
        SendAnswer::Task(task) => Payload::Task(pb::Task::from(&**task)),
        SendAnswer::Message(message) => Payload::Message(pb::Message::from(message)),
    };
    pb::SendMessageResponse {
        payload: Some(payload),
    }
}

/// The extensions a send's message declares, for the response's `a2a-extensions`.
fn declared(request: &a2a_protocol_types::SendMessageRequest) -> Vec<String> {
    request.message.extensions.clone().unwrap_or_default()
}

#[tonic::async_trait]
impl A2aService for Grpc {
    async fn send_message(
        &self,
        request: Request<pb::SendMessageRequest>,
    ) -> Result<Response<pb::SendMessageResponse>, Status> {
        let (metadata, extensions, message) = request.into_parts();
        let request = a2a_protocol_types::SendMessageRequest::try_from(message).map_err(invalid)?;
        let handler = &self.state.handler;
        self.run("SendMessage", metadata, &extensions, |ctx| async move {
            let declared = declared(&request);
            // Boxed here, so the future tonic boxes (and copies) is small: a send's own
            // future is several KiB.
            let answer = Box::pin(handler.send_message_answer(request, &ctx)).await?;
            Ok((send_response(&answer), ctx, declared))
        })
        .await
    }

    type SendStreamingMessageStream = Events;

    async fn send_streaming_message(
        &self,
        request: Request<pb::SendMessageRequest>,
    ) -> Result<Response<Events>, Status> {
        let (metadata, extensions, message) = request.into_parts();
        let request = a2a_protocol_types::SendMessageRequest::try_from(message).map_err(invalid)?;
        let handler = &self.state.handler;
        self.run(
            "SendStreamingMessage",
            metadata,
            &extensions,
            |ctx| async move {
                let declared = declared(&request);
                let events = Box::pin(handler.send_streaming_message(request, &ctx)).await?;
                Ok((self.events(events), ctx, declared))
            },
        )
        .await
    }

    async fn get_task(
        &self,
        request: Request<pb::GetTaskRequest>,
    ) -> Result<Response<pb::Task>, Status> {
        let (metadata, extensions, message) = request.into_parts();
        let handler = &self.state.handler;
        self.run("GetTask", metadata, &extensions, |ctx| async move {
            let task = handler.get_task(message.into(), &ctx).await?;
            Ok((task.into(), ctx, Vec::new()))
        })
        .await
    }

    async fn list_tasks(
        &self,
        request: Request<pb::ListTasksRequest>,
    ) -> Result<Response<pb::ListTasksResponse>, Status> {
        let (metadata, extensions, message) = request.into_parts();
        let request = a2a_protocol_types::ListTasksRequest::try_from(message).map_err(invalid)?;
        let handler = &self.state.handler;
        self.run("ListTasks", metadata, &extensions, |ctx| async move {
            let page = handler.list_tasks(request, &ctx).await?;
            Ok((page.into(), ctx, Vec::new()))
        })
        .await
    }

    async fn cancel_task(
        &self,
        request: Request<pb::CancelTaskRequest>,
    ) -> Result<Response<pb::Task>, Status> {
        let (metadata, extensions, message) = request.into_parts();
        let handler = &self.state.handler;
        self.run("CancelTask", metadata, &extensions, |ctx| async move {
            let task = handler.cancel_task(message.into(), &ctx).await?;
            Ok((task.into(), ctx, Vec::new()))
        })
        .await
    }

    type SubscribeToTaskStream = Events;

    async fn subscribe_to_task(
        &self,
        request: Request<pb::SubscribeToTaskRequest>,
    ) -> Result<Response<Events>, Status> {
        let (metadata, extensions, message) = request.into_parts();
        let handler = &self.state.handler;
        self.run("SubscribeToTask", metadata, &extensions, |ctx| async move {
            let events = handler.subscribe_to_task(message.into(), &ctx).await?;
            Ok((self.events(events), ctx, Vec::new()))
        })
        .await
    }

    async fn create_task_push_notification_config(
        &self,
        request: Request<pb::TaskPushNotificationConfig>,
    ) -> Result<Response<pb::TaskPushNotificationConfig>, Status> {
        let (metadata, extensions, message) = request.into_parts();
        let handler = &self.state.handler;
        self.run(
            "CreateTaskPushNotificationConfig",
            metadata,
            &extensions,
            |ctx| async move {
                let config = handler
                    .create_task_push_notification_config(message.into(), &ctx)
                    .await?;
                Ok((config.into(), ctx, Vec::new()))
            },
        )
        .await
    }

    async fn get_task_push_notification_config(
        &self,
        request: Request<pb::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<pb::TaskPushNotificationConfig>, Status> {
        let (metadata, extensions, message) = request.into_parts();
        let handler = &self.state.handler;
        self.run(
            "GetTaskPushNotificationConfig",
            metadata,
            &extensions,
            |ctx| async move {
                let config = handler
                    .get_task_push_notification_config(message.into(), &ctx)
                    .await?;
                Ok((config.into(), ctx, Vec::new()))
            },
        )
        .await
    }

    async fn list_task_push_notification_configs(
        &self,
        request: Request<pb::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<pb::ListTaskPushNotificationConfigsResponse>, Status> {
        let (metadata, extensions, message) = request.into_parts();
        let handler = &self.state.handler;
        self.run(
            "ListTaskPushNotificationConfigs",
            metadata,
            &extensions,
            |ctx| async move {
                let page = handler
                    .list_task_push_notification_configs(message.into(), &ctx)
                    .await?;
                Ok((page.into(), ctx, Vec::new()))
            },
        )
        .await
    }

    async fn get_extended_agent_card(
        &self,
        request: Request<pb::GetExtendedAgentCardRequest>,
    ) -> Result<Response<pb::AgentCard>, Status> {
        let (metadata, extensions, message) = request.into_parts();
        let handler = &self.state.handler;
        self.run(
            "GetExtendedAgentCard",
            metadata,
            &extensions,
            |ctx| async move {
                let card = handler
                    .get_extended_agent_card(message.into(), &ctx)
                    .await?;
                Ok((card.into(), ctx, Vec::new()))
            },
        )
        .await
    }

    async fn delete_task_push_notification_config(
        &self,
        request: Request<pb::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<()>, Status> {
        let (metadata, extensions, message) = request.into_parts();
        let handler = &self.state.handler;
        self.run(
            "DeleteTaskPushNotificationConfig",
            metadata,
            &extensions,
            |ctx| async move {
                handler
                    .delete_task_push_notification_config(message.into(), &ctx)
                    .await?;
                Ok(((), ctx, Vec::new()))
            },
        )
        .await
    }
}
