//! [`A2aClient`]: the eleven operations, typed, with the retry policy applied.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use a2a_protocol_types::idempotency::key_of;
use a2a_protocol_types::push::{
    ListTaskPushNotificationConfigsResponse, TaskPushNotificationConfig,
};
use a2a_protocol_types::{
    AgentCard, CancelTaskRequest, DeleteTaskPushNotificationConfigRequest, ErrorKind,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTasksRequest, ListTasksResponse,
    SendMessageRequest, SendMessageResponse, StreamResponse, SubscribeToTaskRequest, Task, TaskId,
};
use futures::{Stream, StreamExt};
use http::{HeaderMap, HeaderValue};
use tokio::time::Instant;

use crate::error::ClientError;
use crate::operation::Operation;
use crate::retry::{RetryPolicy, may_retry, next_pause};
use crate::transport::{
    Answer, Call, EXTENSIONS, RequestHook, Transport, TransportRequest, mismatched,
};

/// A stream of a task's events, as a streaming call answers.
///
/// ```no_run
/// use futures::StreamExt;
///
/// use a2a_protocol_client::{ClientBuilder, EventStream};
/// use a2a_protocol_types::{Message, SendMessageRequest};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
/// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
/// let mut events: EventStream =
///     client.send_streaming_message(SendMessageRequest::new(Message::user_text("hi"))).await?;
/// while let Some(event) = events.next().await {
///     println!("{:?}", event?);
/// }
/// # Ok(())
/// # }
/// ```
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamResponse, ClientError>> + Send>>;

struct Inner {
    transport: Arc<dyn Transport>,
    /// The headers of every attempt, before the hook and the trace context.
    headers: HeaderMap,
    hook: Option<Arc<dyn RequestHook>>,
    tenant: String,
    retry: Option<RetryPolicy>,
    honours_idempotency: bool,
    card: Option<AgentCard>,
}

/// Calls one A2A agent. Cheap to clone: clones share the connection pool.
///
/// ```no_run
/// use a2a_protocol_client::{ClientBuilder, RetryPolicy};
/// use a2a_protocol_types::idempotency::{generate_key, set_key};
/// use a2a_protocol_types::{Message, SendMessageRequest, SendMessageResponse};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = ClientBuilder::discover("http://127.0.0.1:8080")
///     .await?
///     .with_retry_policy(RetryPolicy::default())
///     .build()?;
/// let mut message = Message::user_text("summarise the incident");
/// set_key(&mut message, &generate_key())?; // Safe to retry: the agent deduplicates on it.
/// if let SendMessageResponse::Task(task) = client.send_message(SendMessageRequest::new(message)).await? {
///     println!("task {} is {}", task.id, task.status.state);
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct A2aClient {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for A2aClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aClient")
            .field("url", &self.inner.transport.url())
            .field("binding", &self.inner.transport.binding())
            .field("honours_idempotency", &self.inner.honours_idempotency)
            .finish_non_exhaustive()
    }
}

impl A2aClient {
    pub(crate) fn new(
        transport: Arc<dyn Transport>,
        headers: HeaderMap,
        hook: Option<Arc<dyn RequestHook>>,
        tenant: String,
        retry: Option<RetryPolicy>,
        honours_idempotency: bool,
        card: Option<AgentCard>,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                transport,
                headers,
                hook,
                tenant,
                retry,
                honours_idempotency,
                card,
            }),
        }
    }

    /// Whether the agent is known to honour idempotency keys (its card lists the extension, or
    /// the builder asserted it). Only then is a keyed send retried after an ambiguous failure.
    ///
    /// ```
    /// use a2a_protocol_client::ClientBuilder;
    ///
    /// assert!(!ClientBuilder::new("http://127.0.0.1:8080").build().unwrap().honours_idempotency());
    /// ```
    pub fn honours_idempotency(&self) -> bool {
        self.inner.honours_idempotency
    }

    /// A client for the same agent that also activates the extensions `uris` on every request
    /// (the `A2A-Extensions` header). It shares this client's connections and settings.
    ///
    /// ```
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_types::lease::LEASE_EXTENSION_URI;
    ///
    /// let client = ClientBuilder::new("http://127.0.0.1:8080").build().unwrap();
    /// let renewing = client.activating(&[LEASE_EXTENSION_URI]);
    /// assert_eq!(renewing.url(), client.url());
    /// ```
    pub fn activating(&self, uris: &[&str]) -> A2aClient {
        let mut headers = self.inner.headers.clone();
        let mut all: Vec<String> = headers
            .get(EXTENSIONS)
            .and_then(|v| v.to_str().ok())
            .map(a2a_protocol_types::extensions::parse_extensions_header)
            .unwrap_or_default();
        for uri in uris {
            if !all.iter().any(|u| u == uri) {
                all.push((*uri).to_owned());
            }
        }
        if let Ok(value) = HeaderValue::from_str(
            &a2a_protocol_types::extensions::format_extensions_header(&all),
        ) {
            headers.insert(EXTENSIONS, value);
        }
        Self {
            inner: Arc::new(Inner {
                transport: Arc::clone(&self.inner.transport),
                headers,
                hook: self.inner.hook.clone(),
                tenant: self.inner.tenant.clone(),
                retry: self.inner.retry.clone(),
                honours_idempotency: self.inner.honours_idempotency,
                card: self.inner.card.clone(),
            }),
        }
    }

    /// The card the client was built from, if any.
    ///
    /// ```
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_types::agent_card::{AgentCard, AgentInterface, BINDING_JSONRPC};
    ///
    /// let card = AgentCard::new("Echo", "Repeats.", "1.0.0")
    ///     .with_interface(AgentInterface::new("https://a.example/rpc", BINDING_JSONRPC));
    /// let client = ClientBuilder::from_card(&card).build().unwrap();
    /// assert_eq!(client.agent_card().unwrap().name, "Echo");
    /// assert!(ClientBuilder::new("https://a.example/rpc").build().unwrap().agent_card().is_none());
    /// ```
    pub fn agent_card(&self) -> Option<&AgentCard> {
        self.inner.card.as_ref()
    }

    /// The endpoint URL in use.
    ///
    /// ```
    /// use a2a_protocol_client::ClientBuilder;
    ///
    /// assert_eq!(ClientBuilder::new("https://a.example/rpc").build().unwrap().url(), "https://a.example/rpc");
    /// ```
    pub fn url(&self) -> &str {
        self.inner.transport.url()
    }

    /// The binding in use, as the card names it (`JSONRPC`, `HTTP+JSON`, `GRPC`).
    ///
    /// ```
    /// use a2a_protocol_client::ClientBuilder;
    ///
    /// assert_eq!(ClientBuilder::new("https://a.example/rpc").build().unwrap().binding(), "JSONRPC");
    /// ```
    pub fn binding(&self) -> &str {
        self.inner.transport.binding()
    }

    /// The headers of one attempt: the client's, the hook's, and inside an agent's turn (or any
    /// `trace::with_current` scope) a `traceparent` that makes the call a child of the caller's
    /// current span.
    async fn attempt_headers(&self) -> Result<HeaderMap, ClientError> {
        let mut headers = self.inner.headers.clone();
        if let Some(hook) = &self.inner.hook {
            hook.before_request(&mut headers).await?;
        }
        let header = a2a_protocol_types::trace::TRACEPARENT_HEADER;
        if let Some(trace) =
            a2a_protocol_types::trace::current().filter(|_| !headers.contains_key(header))
            && let Ok(value) = HeaderValue::from_str(&trace.child().to_string())
        {
            headers.insert(header, value);
        }
        Ok(headers)
    }

    /// One attempt of a unary call.
    async fn unary_attempt(&self, call: &Call) -> Result<Answer, ClientError> {
        let headers = self.attempt_headers().await?;
        self.inner
            .transport
            .unary(TransportRequest {
                call,
                headers: &headers,
            })
            .await
    }

    /// One attempt at opening a stream.
    async fn stream_attempt(&self, call: &Call) -> Result<EventStream, ClientError> {
        let headers = self.attempt_headers().await?;
        self.inner
            .transport
            .open_stream(TransportRequest {
                call,
                headers: &headers,
            })
            .await
    }

    /// Runs `attempt` until it succeeds or the policy says stop.
    async fn with_retries<T, F, Fut>(
        &self,
        operation: Operation,
        keyed: bool,
        mut attempt: F,
    ) -> Result<T, ClientError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, ClientError>>,
    {
        let Some(policy) = &self.inner.retry else {
            return attempt().await;
        };
        let deadline = Instant::now() + policy.deadline;
        let keyed_to_honouring = keyed && self.inner.honours_idempotency;
        let mut retries = 0;
        loop {
            let error = match attempt().await {
                Ok(value) => return Ok(value),
                Err(error) => error,
            };
            if !may_retry(error.class(), operation, keyed_to_honouring) {
                return Err(error);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(pause) = next_pause(policy, retries, &error, left) else {
                return Err(error);
            };
            tracing::debug!(operation = operation.method(), %error, ?pause, "retrying");
            tokio::time::sleep(pause).await;
            retries += 1;
        }
    }

    /// A unary call under the client's tenant and retry policy, its answer taken by `pick`
    /// (`None` for an answer of another kind).
    async fn call<T>(
        &self,
        mut call: Call,
        keyed: bool,
        pick: fn(Answer) -> Option<T>,
    ) -> Result<T, ClientError> {
        call.default_tenant(&self.inner.tenant);
        let operation = call.operation();
        let answer = self
            .with_retries(operation, keyed, || self.unary_attempt(&call))
            .await?;
        pick(answer).ok_or_else(|| mismatched(operation))
    }

    /// `SendMessage`. A keyed send (see `idempotency::set_key`) to an agent known to honour
    /// keys is retried after an ambiguous failure; any other send is not.
    ///
    /// ```no_run
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_types::{Message, SendMessageRequest, SendMessageResponse};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
    /// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
    /// match client.send_message(SendMessageRequest::new(Message::user_text("hi"))).await? {
    ///     SendMessageResponse::Task(task) => println!("task {}: {}", task.id, task.status.state),
    ///     SendMessageResponse::Message(reply) => println!("reply: {}", reply.text()),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn send_message(
        &self,
        request: SendMessageRequest,
    ) -> Result<SendMessageResponse, ClientError> {
        let keyed = matches!(key_of(&request.message), Ok(Some(_)));
        self.call(Call::SendMessage(request), keyed, |answer| match answer {
            Answer::Sent(sent) => Some(sent),
            _ => None,
        })
        .await
    }

    /// `SendStreamingMessage`. With a retry policy, a keyed stream cut before its first event is
    /// re-sent (to an agent known to honour keys), and any stream cut after the task is known
    /// resumes with `SubscribeToTask`.
    ///
    /// ```no_run
    /// use futures::StreamExt;
    ///
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_types::{Message, SendMessageRequest, StreamResponse};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
    /// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
    /// let mut events = client.send_streaming_message(SendMessageRequest::new(Message::user_text("hi"))).await?;
    /// while let Some(event) = events.next().await {
    ///     if let StreamResponse::ArtifactUpdate(update) = event? {
    ///         println!("artifact {}", update.artifact.artifact_id);
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn send_streaming_message(
        &self,
        request: SendMessageRequest,
    ) -> Result<EventStream, ClientError> {
        let keyed = matches!(key_of(&request.message), Ok(Some(_)));
        self.resilient_stream(Call::SendStreamingMessage(request), keyed, None)
            .await
    }

    /// `GetTask`.
    ///
    /// ```no_run
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_types::{ErrorKind, GetTaskRequest};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
    /// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
    /// match client.get_task(GetTaskRequest { id: "t-1".into(), ..Default::default() }).await {
    ///     Ok(task) => println!("{}", task.status.state),
    ///     Err(error) if error.kind() == Some(ErrorKind::TaskNotFound) => println!("no such task"),
    ///     Err(error) => return Err(error),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn get_task(&self, request: GetTaskRequest) -> Result<Task, ClientError> {
        self.call(Call::GetTask(request), false, task).await
    }

    /// `ListTasks`.
    ///
    /// ```no_run
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_types::{ListTasksRequest, TaskState};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
    /// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
    /// let mut request = ListTasksRequest { status: Some(TaskState::Working), ..Default::default() };
    /// loop {
    ///     let page = client.list_tasks(request.clone()).await?;
    ///     for task in &page.tasks {
    ///         println!("{}", task.id);
    ///     }
    ///     if page.next_page_token.is_empty() {
    ///         break;
    ///     }
    ///     request.page_token = Some(page.next_page_token);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn list_tasks(
        &self,
        request: ListTasksRequest,
    ) -> Result<ListTasksResponse, ClientError> {
        self.call(Call::ListTasks(request), false, |answer| match answer {
            Answer::Tasks(tasks) => Some(tasks),
            _ => None,
        })
        .await
    }

    /// `CancelTask`.
    ///
    /// ```no_run
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_types::CancelTaskRequest;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
    /// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
    /// let task = client.cancel_task(CancelTaskRequest { id: "t-1".into(), ..Default::default() }).await?;
    /// println!("{}", task.status.state);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn cancel_task(&self, request: CancelTaskRequest) -> Result<Task, ClientError> {
        self.call(Call::CancelTask(request), false, task).await
    }

    /// `SubscribeToTask`: the task, then its events until it settles; resumes after a cut when
    /// a retry policy is set.
    ///
    /// ```no_run
    /// use futures::StreamExt;
    ///
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_types::SubscribeToTaskRequest;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
    /// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
    /// let request = SubscribeToTaskRequest { id: "t-1".into(), ..Default::default() };
    /// let mut events = client.subscribe_to_task(request).await?;
    /// while let Some(event) = events.next().await {
    ///     println!("{:?}", event?);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn subscribe_to_task(
        &self,
        request: SubscribeToTaskRequest,
    ) -> Result<EventStream, ClientError> {
        let id = request.id.clone();
        self.resilient_stream(Call::SubscribeToTask(request), false, Some(id))
            .await
    }

    /// `CreateTaskPushNotificationConfig`.
    ///
    /// ```no_run
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_types::push::TaskPushNotificationConfig;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
    /// let config: TaskPushNotificationConfig =
    ///     serde_json::from_str(r#"{"taskId": "t-1", "url": "https://client.example/hook"}"#)?;
    /// let created = client.create_task_push_notification_config(config).await?;
    /// println!("config {}", created.id);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn create_task_push_notification_config(
        &self,
        request: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, ClientError> {
        self.call(
            Call::CreateTaskPushNotificationConfig(request),
            false,
            push_config,
        )
        .await
    }

    /// `GetTaskPushNotificationConfig`.
    ///
    /// ```no_run
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_types::GetTaskPushNotificationConfigRequest;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
    /// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
    /// let request = GetTaskPushNotificationConfigRequest { task_id: "t-1".into(), id: "cfg-1".into(), ..Default::default() };
    /// println!("{}", client.get_task_push_notification_config(request).await?.url);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn get_task_push_notification_config(
        &self,
        request: GetTaskPushNotificationConfigRequest,
    ) -> Result<TaskPushNotificationConfig, ClientError> {
        self.call(
            Call::GetTaskPushNotificationConfig(request),
            false,
            push_config,
        )
        .await
    }

    /// `ListTaskPushNotificationConfigs`.
    ///
    /// ```no_run
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_types::ListTaskPushNotificationConfigsRequest;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
    /// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
    /// let request = ListTaskPushNotificationConfigsRequest { task_id: "t-1".into(), ..Default::default() };
    /// println!("{} configs", client.list_task_push_notification_configs(request).await?.configs.len());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn list_task_push_notification_configs(
        &self,
        request: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, ClientError> {
        let call = Call::ListTaskPushNotificationConfigs(request);
        self.call(call, false, |answer| match answer {
            Answer::PushConfigs(configs) => Some(configs),
            _ => None,
        })
        .await
    }

    /// `DeleteTaskPushNotificationConfig`.
    ///
    /// ```no_run
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_types::DeleteTaskPushNotificationConfigRequest;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
    /// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
    /// let request = DeleteTaskPushNotificationConfigRequest { task_id: "t-1".into(), id: "cfg-1".into(), ..Default::default() };
    /// client.delete_task_push_notification_config(request).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn delete_task_push_notification_config(
        &self,
        request: DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), ClientError> {
        let call = Call::DeleteTaskPushNotificationConfig(request);
        self.call(call, false, |answer| match answer {
            Answer::Deleted => Some(()),
            _ => None,
        })
        .await
    }

    /// `GetExtendedAgentCard`.
    ///
    /// ```no_run
    /// use a2a_protocol_client::ClientBuilder;
    /// use a2a_protocol_types::GetExtendedAgentCardRequest;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_client::ClientError> {
    /// let client = ClientBuilder::discover("http://127.0.0.1:8080").await?.build()?;
    /// let card = client.get_extended_agent_card(GetExtendedAgentCardRequest::default()).await?;
    /// println!("{} skills for authenticated callers", card.skills.len());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn get_extended_agent_card(
        &self,
        request: GetExtendedAgentCardRequest,
    ) -> Result<AgentCard, ClientError> {
        self.call(
            Call::GetExtendedAgentCard(request),
            false,
            |answer| match answer {
                Answer::AgentCard(card) => Some(card),
                _ => None,
            },
        )
        .await
    }

    async fn resilient_stream(
        &self,
        mut call: Call,
        keyed: bool,
        task_id: Option<TaskId>,
    ) -> Result<EventStream, ClientError> {
        call.default_tenant(&self.inner.tenant);
        let operation = call.operation();
        let first = self
            .with_retries(operation, keyed, || self.stream_attempt(&call))
            .await?;
        let state = Resilient {
            client: self.clone(),
            call,
            keyed,
            task_id,
            current: Some(first),
            finished: false,
            retries: 0,
            started: Instant::now(),
        };
        Ok(futures::stream::unfold(state, |mut state| async move {
            let item = state.next().await?;
            Some((item, state))
        })
        .boxed())
    }
}

/// A task answer (`GetTask`, `CancelTask`).
fn task(answer: Answer) -> Option<Task> {
    match answer {
        Answer::Task(task) => Some(task),
        _ => None,
    }
}

/// A push config answer (create, get).
fn push_config(answer: Answer) -> Option<TaskPushNotificationConfig> {
    match answer {
        Answer::PushConfig(config) => Some(config),
        _ => None,
    }
}

/// A stream that survives cuts: it re-sends a keyed send cut before its first event, and
/// resumes any stream whose task is known with `SubscribeToTask`.
struct Resilient {
    client: A2aClient,
    /// The call that opened the stream, tenant set.
    call: Call,
    keyed: bool,
    task_id: Option<TaskId>,
    current: Option<EventStream>,
    finished: bool,
    retries: u32,
    started: Instant,
}

impl Resilient {
    async fn next(&mut self) -> Option<Result<StreamResponse, ClientError>> {
        if self.finished {
            return None;
        }
        let mut failure = match self.current.as_mut()?.next().await {
            Some(Ok(event)) => {
                if self.task_id.is_none() {
                    self.task_id = event.task_id().cloned();
                }
                self.finished = event.is_final();
                return Some(Ok(event));
            }
            Some(Err(error)) => error,
            None => ClientError::StreamCut,
        };
        self.current = None;
        loop {
            let Some(policy) = self.client.inner.retry.clone() else {
                self.finished = true;
                return Some(Err(failure));
            };
            // Once the task is known, recovering is a read; before, it is a re-send.
            let (operation, keyed) = match &self.task_id {
                Some(_) => (Operation::SubscribeToTask, false),
                None => (
                    self.call.operation(),
                    self.keyed && self.client.inner.honours_idempotency,
                ),
            };
            let left = policy.deadline.saturating_sub(self.started.elapsed());
            let pause = may_retry(failure.class(), operation, keyed)
                .then(|| next_pause(&policy, self.retries, &failure, left))
                .flatten();
            let Some(pause) = pause else {
                self.finished = true;
                return Some(Err(failure));
            };
            tokio::time::sleep(pause).await;
            self.retries += 1;
            let resumed;
            let call = match &self.task_id {
                Some(id) => {
                    resumed = Call::SubscribeToTask(SubscribeToTaskRequest {
                        tenant: self.call.tenant().to_owned(),
                        id: id.clone(),
                    });
                    &resumed
                }
                None => &self.call,
            };
            match self.client.stream_attempt(call).await {
                Ok(events) => {
                    self.current = Some(events);
                    return Box::pin(self.next()).await;
                }
                Err(error)
                    if error.kind() == Some(ErrorKind::UnsupportedOperation)
                        && self.task_id.is_some() =>
                {
                    // The task finished while we were away: its final state ends the stream.
                    self.finished = true;
                    let id = self.task_id.clone().unwrap_or_default();
                    let request = GetTaskRequest {
                        tenant: self.call.tenant().to_owned(),
                        id,
                        history_length: None,
                    };
                    return Some(
                        self.client
                            .get_task(request)
                            .await
                            .map(StreamResponse::Task),
                    );
                }
                Err(error) => failure = error,
            }
        }
    }
}
