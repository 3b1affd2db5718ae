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
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::time::Instant;

use crate::error::ClientError;
use crate::operation::Operation;
use crate::retry::{RetryPolicy, may_retry, next_pause};
use crate::transport::{EXTENSIONS, RequestHook, Transport, TransportRequest};

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

fn params<T: Serialize>(request: &T) -> Result<Value, ClientError> {
    serde_json::to_value(request)
        .map_err(|e| ClientError::Decode(format!("request does not serialize: {e}")))
}

fn decode<T: DeserializeOwned>(value: Value) -> Result<T, ClientError> {
    serde_json::from_value(value).map_err(|e| ClientError::Decode(e.to_string()))
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
    async fn unary_attempt(
        &self,
        operation: Operation,
        params: &Value,
    ) -> Result<Value, ClientError> {
        let headers = self.attempt_headers().await?;
        self.inner
            .transport
            .unary(TransportRequest {
                operation,
                params,
                headers: &headers,
            })
            .await
    }

    /// One attempt at opening a stream.
    async fn stream_attempt(
        &self,
        operation: Operation,
        params: &Value,
    ) -> Result<EventStream, ClientError> {
        let headers = self.attempt_headers().await?;
        self.inner
            .transport
            .open_stream(TransportRequest {
                operation,
                params,
                headers: &headers,
            })
            .await
    }

    fn tenant(&self, tenant: &mut String) {
        if tenant.is_empty() {
            tenant.clone_from(&self.inner.tenant);
        }
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

    async fn call<T: DeserializeOwned>(
        &self,
        operation: Operation,
        params: Value,
        keyed: bool,
    ) -> Result<T, ClientError> {
        let value = self
            .with_retries(operation, keyed, || self.unary_attempt(operation, &params))
            .await?;
        decode(value)
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
        mut request: SendMessageRequest,
    ) -> Result<SendMessageResponse, ClientError> {
        self.tenant(&mut request.tenant);
        let keyed = matches!(key_of(&request.message), Ok(Some(_)));
        self.call(Operation::SendMessage, params(&request)?, keyed)
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
        mut request: SendMessageRequest,
    ) -> Result<EventStream, ClientError> {
        self.tenant(&mut request.tenant);
        let keyed = matches!(key_of(&request.message), Ok(Some(_)));
        let tenant = request.tenant.clone();
        self.resilient_stream(
            Operation::SendStreamingMessage,
            params(&request)?,
            keyed,
            tenant,
            None,
        )
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
    pub async fn get_task(&self, mut request: GetTaskRequest) -> Result<Task, ClientError> {
        self.tenant(&mut request.tenant);
        self.call(Operation::GetTask, params(&request)?, false)
            .await
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
        mut request: ListTasksRequest,
    ) -> Result<ListTasksResponse, ClientError> {
        self.tenant(&mut request.tenant);
        self.call(Operation::ListTasks, params(&request)?, false)
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
    pub async fn cancel_task(&self, mut request: CancelTaskRequest) -> Result<Task, ClientError> {
        self.tenant(&mut request.tenant);
        self.call(Operation::CancelTask, params(&request)?, false)
            .await
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
        mut request: SubscribeToTaskRequest,
    ) -> Result<EventStream, ClientError> {
        self.tenant(&mut request.tenant);
        let id = request.id.clone();
        let tenant = request.tenant.clone();
        self.resilient_stream(
            Operation::SubscribeToTask,
            params(&request)?,
            false,
            tenant,
            Some(id),
        )
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
        mut request: TaskPushNotificationConfig,
    ) -> Result<TaskPushNotificationConfig, ClientError> {
        self.tenant(&mut request.tenant);
        self.call(
            Operation::CreateTaskPushNotificationConfig,
            params(&request)?,
            false,
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
        mut request: GetTaskPushNotificationConfigRequest,
    ) -> Result<TaskPushNotificationConfig, ClientError> {
        self.tenant(&mut request.tenant);
        self.call(
            Operation::GetTaskPushNotificationConfig,
            params(&request)?,
            false,
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
        mut request: ListTaskPushNotificationConfigsRequest,
    ) -> Result<ListTaskPushNotificationConfigsResponse, ClientError> {
        self.tenant(&mut request.tenant);
        self.call(
            Operation::ListTaskPushNotificationConfigs,
            params(&request)?,
            false,
        )
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
        mut request: DeleteTaskPushNotificationConfigRequest,
    ) -> Result<(), ClientError> {
        self.tenant(&mut request.tenant);
        let _: Value = self
            .call(
                Operation::DeleteTaskPushNotificationConfig,
                params(&request)?,
                false,
            )
            .await?;
        Ok(())
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
        mut request: GetExtendedAgentCardRequest,
    ) -> Result<AgentCard, ClientError> {
        self.tenant(&mut request.tenant);
        self.call(Operation::GetExtendedAgentCard, params(&request)?, false)
            .await
    }

    async fn resilient_stream(
        &self,
        operation: Operation,
        params: Value,
        keyed: bool,
        tenant: String,
        task_id: Option<TaskId>,
    ) -> Result<EventStream, ClientError> {
        let first = self
            .with_retries(operation, keyed, || self.stream_attempt(operation, &params))
            .await?;
        let state = Resilient {
            client: self.clone(),
            operation,
            params,
            keyed,
            tenant,
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

/// A stream that survives cuts: it re-sends a keyed send cut before its first event, and
/// resumes any stream whose task is known with `SubscribeToTask`.
struct Resilient {
    client: A2aClient,
    operation: Operation,
    params: Value,
    keyed: bool,
    tenant: String,
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
                    self.operation,
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
            let params = match &self.task_id {
                Some(id) => serde_json::json!({ "id": id, "tenant": self.tenant }),
                None => self.params.clone(),
            };
            match self.client.stream_attempt(operation, &params).await {
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
                        tenant: self.tenant.clone(),
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
