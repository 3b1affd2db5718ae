//! The gRPC binding (`lf.a2a.v1.A2AService`) as a [`Transport`]: each call's request is
//! converted to its proto message once, sent over a `tonic` channel with the attempt's headers
//! as metadata, and the answer converted back once. A status the agent answered is its A2A error; a
//! status made on this side (no connection, a cut stream) is a transport failure, told apart
//! by whether the request could have reached the agent.

use std::fmt::Display;
use std::sync::OnceLock;
use std::time::Duration;

use a2a_protocol_grpc::pb;
use a2a_protocol_grpc::pb::a2a_service_client::A2aServiceClient;
use a2a_protocol_types as types;
use futures::{Stream, StreamExt};
use http::HeaderMap;
use tonic::transport::{Channel, Endpoint};

use super::{Answer, Call, Timeouts, Transport, TransportRequest, next_within};
use crate::auth::Placed;
use crate::client::EventStream;
use crate::error::{ClientError, Phase};
use crate::operation::Operation;

/// The largest answer accepted: far above any task or card a sane agent sends, and a bound
/// on what a hostile one can make the client hold.
const MAX_ANSWER_BYTES: usize = 64 * 1024 * 1024;

/// An agent reached over gRPC.
pub(crate) struct GrpcTransport {
    url: String,
    endpoint: Endpoint,
    /// Made on first use, inside the runtime (a channel spawns its connection task), and
    /// shared by every call after: one HTTP/2 connection, multiplexed, reconnected when lost.
    channel: OnceLock<Channel>,
    credentials: Option<Placed>,
    timeouts: Timeouts,
}

impl GrpcTransport {
    pub(crate) fn new(
        url: String,
        credentials: Option<Placed>,
        timeouts: Timeouts,
        connect_timeout: Duration,
    ) -> Result<Self, ClientError> {
        let url = url.trim_end_matches('/').to_owned();
        let mut endpoint = Endpoint::from_shared(url.clone())
            .map_err(|e| {
                ClientError::Config(format!("the gRPC URL {url:?} is not an endpoint: {e}"))
            })?
            .connect_timeout(connect_timeout)
            .tcp_nodelay(true);
        if url.starts_with("https://") {
            endpoint = endpoint
                .tls_config(tonic::transport::ClientTlsConfig::new().with_webpki_roots())
                .map_err(|e| ClientError::Config(format!("TLS for the gRPC URL {url:?}: {e}")))?;
        }
        Ok(Self {
            url,
            endpoint,
            channel: OnceLock::new(),
            credentials,
            timeouts,
        })
    }

    fn client(&self) -> A2aServiceClient<Channel> {
        let channel = self
            .channel
            .get_or_init(|| self.endpoint.connect_lazy())
            .clone();
        A2aServiceClient::new(channel).max_decoding_message_size(MAX_ANSWER_BYTES)
    }

    /// `message` as a gRPC request carrying the attempt's headers and the credentials.
    async fn request<T>(
        &self,
        message: T,
        headers: &HeaderMap,
    ) -> Result<tonic::Request<T>, ClientError> {
        let mut headers = headers.clone();
        if let Some(credentials) = &self.credentials {
            credentials.apply_to_headers(&mut headers).await?;
        }
        let mut request = tonic::Request::new(message);
        *request.metadata_mut() = tonic::metadata::MetadataMap::from_headers(headers);
        if let Some(timeout) = self.timeouts.request {
            // Tells the agent too (`grpc-timeout`); the client enforces it either way.
            request.set_timeout(timeout);
        }
        Ok(request)
    }

    /// One unary rpc: `message` sent by `rpc`, and its proto answer `R` read as `Res`.
    async fn call<P, R, Res, Fut>(
        &self,
        message: P,
        headers: &HeaderMap,
        rpc: impl FnOnce(A2aServiceClient<Channel>, tonic::Request<P>) -> Fut,
    ) -> Result<Res, ClientError>
    where
        Res: TryFrom<R>,
        <Res as TryFrom<R>>::Error: Display,
        Fut: Future<Output = Result<tonic::Response<R>, tonic::Status>>,
    {
        let outgoing = self.request(message, headers).await?;
        let answer = rpc(self.client(), outgoing);
        let answer = match self.timeouts.request {
            Some(limit) => {
                tokio::time::timeout(limit, answer)
                    .await
                    .map_err(|_| ClientError::Timeout {
                        phase: Phase::Request,
                    })?
            }
            None => answer.await,
        };
        let answer = answer.map_err(|status| failure(status, Phase::Request))?;
        Res::try_from(answer.into_inner())
            .map_err(|e| ClientError::Decode(format!("the agent's gRPC answer: {e}")))
    }
}

#[async_trait::async_trait]
impl Transport for GrpcTransport {
    fn binding(&self) -> &str {
        types::agent_card::BINDING_GRPC
    }

    fn url(&self) -> &str {
        &self.url
    }

    async fn unary(&self, request: TransportRequest<'_>) -> Result<Answer, ClientError> {
        let headers = request.headers;
        Ok(match request.call {
            Call::SendMessage(r) => Answer::Sent(
                self.call(
                    pb::SendMessageRequest::from(r.clone()),
                    headers,
                    |mut c, r| async move { c.send_message(r).await },
                )
                .await?,
            ),
            Call::GetTask(r) => Answer::Task(
                self.call(
                    pb::GetTaskRequest::from(r.clone()),
                    headers,
                    |mut c, r| async move { c.get_task(r).await },
                )
                .await?,
            ),
            Call::ListTasks(r) => Answer::Tasks(
                self.call(
                    pb::ListTasksRequest::from(r.clone()),
                    headers,
                    |mut c, r| async move { c.list_tasks(r).await },
                )
                .await?,
            ),
            Call::CancelTask(r) => Answer::Task(
                self.call(
                    pb::CancelTaskRequest::from(r.clone()),
                    headers,
                    |mut c, r| async move { c.cancel_task(r).await },
                )
                .await?,
            ),
            Call::CreateTaskPushNotificationConfig(r) => Answer::PushConfig(
                self.call(
                    pb::TaskPushNotificationConfig::from(r.clone()),
                    headers,
                    |mut c, r| async move { c.create_task_push_notification_config(r).await },
                )
                .await?,
            ),
            Call::GetTaskPushNotificationConfig(r) => Answer::PushConfig(
                self.call(
                    pb::GetTaskPushNotificationConfigRequest::from(r.clone()),
                    headers,
                    |mut c, r| async move { c.get_task_push_notification_config(r).await },
                )
                .await?,
            ),
            Call::ListTaskPushNotificationConfigs(r) => Answer::PushConfigs(
                self.call(
                    pb::ListTaskPushNotificationConfigsRequest::from(r.clone()),
                    headers,
                    |mut c, r| async move { c.list_task_push_notification_configs(r).await },
                )
                .await?,
            ),
            Call::DeleteTaskPushNotificationConfig(r) => {
                let () = self
                    .call(
                        pb::DeleteTaskPushNotificationConfigRequest::from(r.clone()),
                        headers,
                        |mut c, r| async move { c.delete_task_push_notification_config(r).await },
                    )
                    .await?;
                Answer::Deleted
            }
            Call::GetExtendedAgentCard(r) => Answer::AgentCard(
                self.call(
                    pb::GetExtendedAgentCardRequest::from(r.clone()),
                    headers,
                    |mut c, r| async move { c.get_extended_agent_card(r).await },
                )
                .await?,
            ),
            Call::SendStreamingMessage(_) | Call::SubscribeToTask(_) => {
                return Err(not_unary(request.operation()));
            }
        })
    }

    async fn open_stream(&self, request: TransportRequest<'_>) -> Result<EventStream, ClientError> {
        let mut client = self.client();
        let opened = match request.call {
            Call::SendStreamingMessage(r) => {
                let message = pb::SendMessageRequest::from(r.clone());
                let outgoing = self.request(message, request.headers).await?;
                client.send_streaming_message(outgoing).await
            }
            Call::SubscribeToTask(r) => {
                let message = pb::SubscribeToTaskRequest::from(r.clone());
                let outgoing = self.request(message, request.headers).await?;
                client.subscribe_to_task(outgoing).await
            }
            other => return Err(not_unary(other.operation())),
        };
        let events = opened.map_err(|status| failure(status, Phase::Request))?;
        Ok(events_of(events.into_inner(), self.timeouts.stream_idle))
    }
}

fn not_unary(operation: Operation) -> ClientError {
    ClientError::Config(format!(
        "{} is not called this way over gRPC (a stream and a unary call are different rpcs)",
        operation.method()
    ))
}

/// A failed rpc as a client error. A status with no cause on this side is the agent's (or a
/// proxy's) answer, so the A2A error it carries; otherwise the call failed here: before it
/// was sent if no connection could be made, else at `phase`, where it may have reached the
/// agent.
fn failure(status: tonic::Status, phase: Phase) -> ClientError {
    let Some(cause) = std::error::Error::source(&status) else {
        return ClientError::Agent(a2a_protocol_grpc::status::from_status(&status));
    };
    let mut message = status.message().to_owned();
    let mut phase = phase;
    let mut source = Some(cause);
    while let Some(error) = source {
        if error.is::<tonic::ConnectError>() {
            phase = Phase::Connect;
        }
        if error.is::<tonic::TimeoutExpired>() {
            return ClientError::Timeout { phase };
        }
        let text = error.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = error.source();
    }
    ClientError::Transport { phase, message }
}

/// The rpc's stream of events as the client's, each waited for at most `idle`.
fn events_of(
    events: impl Stream<Item = Result<pb::StreamResponse, tonic::Status>> + Send + 'static,
    idle: Option<Duration>,
) -> EventStream {
    let events = Box::pin(events);
    futures::stream::unfold(Some(events), move |state| async move {
        let mut events = state?;
        let next = match next_within(&mut events, idle).await {
            Ok(next) => next,
            Err(timeout) => return Some((Err(timeout), None)),
        };
        match next? {
            Ok(event) => {
                let event = types::StreamResponse::try_from(event)
                    .map_err(|e| ClientError::Decode(format!("stream event: {e}")));
                Some((event, Some(events)))
            }
            Err(status) => Some((Err(failure(status, Phase::Stream)), None)),
        }
    })
    .boxed()
}
