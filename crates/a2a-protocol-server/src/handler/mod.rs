//! [`RequestHandler`]: the eleven A2A operations, independent of any binding.

mod cancel;
mod card;
mod follow;
mod leases;
mod push;
mod recovery;
mod send;
mod services;
mod shutdown;
mod subscribe;
mod upkeep;
mod validate;

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use a2a_protocol_types::push::{
    ListTaskPushNotificationConfigsResponse, TaskPushNotificationConfig,
};
use a2a_protocol_types::{
    A2aError, AgentCard, ContextId, DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
    ListTaskPushNotificationConfigsRequest, ListTasksRequest, ListTasksResponse, StreamResponse,
    Task, TaskId,
};
use futures::Stream;

use crate::executor::{AgentExecutor, CallerIdentity};
use crate::idempotency::Idempotency;
use crate::runtime::{EventSink, LiveTask, Registry};
use crate::store::{InMemoryTaskStore, TaskStore};
use crate::store::{Offers, TaskStoreExt};

pub(crate) use follow::EndsAt;
pub(crate) use send::{SendAnswer, until};
pub use validate::MAX_IDENTIFIER_BYTES;
pub(crate) use validate::{is_reserved_tenant, reserved_tenant_error};

/// A stream of a task's events, as a streaming operation answers.
///
/// ```
/// use futures::StreamExt;
///
/// use a2a_protocol_server::agents::EchoAgent;
/// use a2a_protocol_server::{CallContext, EventStream, RequestHandler};
/// use a2a_protocol_types::{Message, SendMessageRequest};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), a2a_protocol_types::A2aError> {
/// let handler = RequestHandler::builder(EchoAgent::new()).build();
/// let request = SendMessageRequest::new(Message::user_text("hi"));
/// let events: EventStream = handler.send_streaming_message(request, &CallContext::default()).await?;
/// let events: Vec<_> = events.collect().await;
/// assert!(events.last().unwrap().is_final());
/// # Ok(())
/// # }
/// ```
pub type EventStream = Pin<Box<dyn Stream<Item = StreamResponse> + Send>>;

/// `events`, holding `slot` (see [`CallContext::stream_slot`]) until they are dropped.
fn holding(events: EventStream, slot: Option<tokio::sync::OwnedSemaphorePermit>) -> EventStream {
    use futures::StreamExt as _;
    match slot {
        None => events,
        Some(slot) => Box::pin(events.map(move |event| {
            let _held = &slot;
            event
        })),
    }
}

/// What the binding knows about the caller of one request.
///
/// ```
/// use a2a_protocol_server::{CallContext, CallerIdentity};
///
/// let ctx = CallContext::default()
///     .with_caller(Some(CallerIdentity("alice".into())))
///     .with_extensions(vec!["https://a2a-rust.com/extensions/lease/v1".into()]);
/// assert!(ctx.activated("https://a2a-rust.com/extensions/lease/v1"));
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CallContext {
    /// The authenticated caller, if any.
    pub caller: Option<CallerIdentity>,
    /// Extension URIs the client activated (`A2A-Extensions`).
    pub extensions: Vec<String>,
    /// The client's address, when the server knows it (it does when [`crate::A2aServer::serve`]
    /// accepted the connection). Without an authenticated caller, the idempotency keys a
    /// client holds are counted against this address.
    pub peer: Option<std::net::IpAddr>,
    /// When the request must be answered by. A blocking `SendMessage` still waiting for its
    /// task to settle then answers with the task as it stands (its turn goes on). Set by the
    /// server from [`crate::ServerConfig::request_deadline`]; `None` waits as long as it takes.
    pub deadline: Option<tokio::time::Instant>,
    /// Where this request sits in a distributed trace: a child of the client's `traceparent`,
    /// or a new trace when it sent none. Set by the server; the agent's turn runs with it as
    /// [`a2a_protocol_types::trace::current`].
    pub trace: Option<a2a_protocol_types::trace::TraceContext>,
    /// Over HTTP/1.1, where a stream holds its connection: the slots streams may take. Set by
    /// the server; `None` (HTTP/2, gRPC, an embedding) takes none.
    pub(crate) stream_slots: Option<crate::connections::StreamSlots>,
}

impl CallContext {
    /// A context with a caller.
    ///
    /// ```
    /// use a2a_protocol_server::{CallContext, CallerIdentity};
    ///
    /// let ctx = CallContext::default().with_caller(Some(CallerIdentity("alice".into())));
    /// assert_eq!(ctx.caller.unwrap().0, "alice");
    /// ```
    pub fn with_caller(mut self, caller: Option<CallerIdentity>) -> Self {
        self.caller = caller;
        self
    }

    /// Whether the client activated the extension `uri`.
    ///
    /// ```
    /// use a2a_protocol_server::CallContext;
    ///
    /// assert!(!CallContext::default().activated("https://example.com/ext/v1"));
    /// ```
    pub fn activated(&self, uri: &str) -> bool {
        self.extensions.iter().any(|e| e == uri)
    }

    /// A context with activated extensions.
    ///
    /// ```
    /// use a2a_protocol_server::CallContext;
    ///
    /// let ctx = CallContext::default().with_extensions(vec!["https://example.com/ext/v1".into()]);
    /// assert!(ctx.activated("https://example.com/ext/v1"));
    /// ```
    pub fn with_extensions(mut self, extensions: Vec<String>) -> Self {
        self.extensions = extensions;
        self
    }

    /// A context in the distributed trace `trace`.
    ///
    /// ```
    /// use a2a_protocol_server::CallContext;
    /// use a2a_protocol_types::trace::TraceContext;
    ///
    /// let trace = TraceContext::new_root();
    /// assert_eq!(CallContext::default().with_trace(Some(trace)).trace, Some(trace));
    /// ```
    pub fn with_trace(mut self, trace: Option<a2a_protocol_types::trace::TraceContext>) -> Self {
        self.trace = trace;
        self
    }

    /// A context with the client's address.
    ///
    /// ```
    /// use a2a_protocol_server::CallContext;
    ///
    /// let ctx = CallContext::default().with_peer(Some([192, 0, 2, 7].into()));
    /// assert_eq!(ctx.peer.unwrap().to_string(), "192.0.2.7");
    /// ```
    pub fn with_peer(mut self, peer: Option<std::net::IpAddr>) -> Self {
        self.peer = peer;
        self
    }

    /// A context that must be answered by `deadline`.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::CallContext;
    ///
    /// let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    /// assert_eq!(CallContext::default().with_deadline(Some(deadline)).deadline, Some(deadline));
    /// ```
    pub fn with_deadline(mut self, deadline: Option<tokio::time::Instant>) -> Self {
        self.deadline = deadline;
        self
    }

    /// Whether this caller may see a task `creator` created. Without authentication every
    /// task is visible; with it, only the caller's own, so another caller's task answers
    /// `TaskNotFound` and its existence is not confirmed.
    pub(crate) fn may_see(&self, creator: Option<&str>) -> bool {
        self.caller
            .as_ref()
            .is_none_or(|caller| creator == Some(caller.0.as_str()))
    }

    /// The caller's name as a task records its creator.
    pub(crate) fn creator(&self) -> Option<&str> {
        self.caller.as_ref().map(|c| c.0.as_str())
    }

    /// Over HTTP/1.1: the same with the stream slots requests of its connection take.
    pub(crate) fn with_stream_slots(
        mut self,
        slots: Option<crate::connections::StreamSlots>,
    ) -> Self {
        self.stream_slots = slots;
        self
    }

    /// A slot for the stream this request opens, when the request holds its connection
    /// (HTTP/1.1); refused, before anything runs, when none is free.
    pub(crate) fn stream_slot(
        &self,
    ) -> Result<Option<tokio::sync::OwnedSemaphorePermit>, A2aError> {
        self.stream_slots
            .as_ref()
            .map(|slots| slots.take())
            .transpose()
    }

    /// Whose quota of held idempotency keys a send of this caller counts against: the
    /// authenticated caller, else the client's network (see
    /// [`KeyClaim::charged_to`](crate::store::KeyClaim::charged_to)).
    pub(crate) fn key_holder(&self) -> Option<String> {
        match (&self.caller, self.peer) {
            (Some(caller), _) => Some(format!("caller:{}", caller.0)),
            (None, Some(peer)) => Some(format!("network:{}", crate::network::Network::of(peer))),
            (None, None) => None,
        }
    }
}

/// Tuning of the request handler.
///
/// ```
/// use std::time::Duration;
///
/// use a2a_protocol_server::agents::EchoAgent;
/// use a2a_protocol_server::{HandlerConfig, RequestHandler};
///
/// let config = HandlerConfig::default()
///     .with_replay_wait(Duration::from_secs(10))
///     .with_default_page_size(20);
/// let handler = RequestHandler::builder(EchoAgent::new()).with_config(config).build();
/// # let _ = handler;
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HandlerConfig {
    /// How long a retry waits for the task of a send that is still being created.
    /// Default 3 s.
    pub replay_wait: Duration,
    /// How long a cancel waits for the executor to settle the task before marking it canceled
    /// itself. Default 5 s.
    pub cancel_grace: Duration,
    /// `ListTasks` page size when the client sets none. Default 50.
    pub default_page_size: usize,
    /// With a store that several server processes share: how long a process may go unheard
    /// before the turns it runs count as orphaned and another process (or this one, restarted)
    /// settles them. Processes renew their heartbeat three times within it. Default 30 s.
    pub recovery_time: Duration,
    /// How many times one task's turn is run again after lost processes, for an agent that
    /// declares [`Recovery::RunAgain`](crate::executor::Recovery::RunAgain); after that the
    /// task fails. Default 3.
    pub max_reruns: u32,
    /// The tenants this agent serves, when it serves only some: a request naming another is
    /// refused before anything is stored for it, so made-up names cannot fill the store's
    /// room for tenants. A request without a tenant is always served. `None` (the default)
    /// serves any tenant name.
    pub served_tenants: Option<Arc<std::collections::HashSet<String>>>,
}

impl Default for HandlerConfig {
    fn default() -> Self {
        Self {
            replay_wait: Duration::from_secs(3),
            cancel_grace: Duration::from_secs(5),
            default_page_size: 50,
            recovery_time: Duration::from_secs(30),
            max_reruns: 3,
            served_tenants: None,
        }
    }
}

impl HandlerConfig {
    /// Sets [`HandlerConfig::replay_wait`].
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::HandlerConfig;
    ///
    /// assert_eq!(HandlerConfig::default().with_replay_wait(Duration::from_secs(1)).replay_wait.as_secs(), 1);
    /// ```
    pub fn with_replay_wait(mut self, wait: Duration) -> Self {
        self.replay_wait = wait;
        self
    }

    /// Sets [`HandlerConfig::cancel_grace`].
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::HandlerConfig;
    ///
    /// let config = HandlerConfig::default().with_cancel_grace(Duration::from_millis(500));
    /// assert_eq!(config.cancel_grace, Duration::from_millis(500));
    /// ```
    pub fn with_cancel_grace(mut self, grace: Duration) -> Self {
        self.cancel_grace = grace;
        self
    }

    /// Sets [`HandlerConfig::default_page_size`].
    ///
    /// ```
    /// use a2a_protocol_server::HandlerConfig;
    ///
    /// assert_eq!(HandlerConfig::default().with_default_page_size(1_000).default_page_size, 100, "capped");
    /// ```
    pub fn with_default_page_size(mut self, size: usize) -> Self {
        self.default_page_size = size.clamp(1, validate::MAX_PAGE_SIZE);
        self
    }

    /// Sets [`HandlerConfig::recovery_time`] (at least 300 ms).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::HandlerConfig;
    ///
    /// let config = HandlerConfig::default().with_recovery_time(Duration::from_secs(10));
    /// assert_eq!(config.recovery_time, Duration::from_secs(10));
    /// ```
    pub fn with_recovery_time(mut self, time: Duration) -> Self {
        self.recovery_time = time.max(Duration::from_millis(300));
        self
    }

    /// Sets [`HandlerConfig::max_reruns`].
    ///
    /// ```
    /// use a2a_protocol_server::HandlerConfig;
    ///
    /// assert_eq!(HandlerConfig::default().with_max_reruns(1).max_reruns, 1);
    /// ```
    pub fn with_max_reruns(mut self, reruns: u32) -> Self {
        self.max_reruns = reruns;
        self
    }

    /// Serves only these tenants ([`HandlerConfig::served_tenants`]).
    ///
    /// ```
    /// use a2a_protocol_server::HandlerConfig;
    ///
    /// let config = HandlerConfig::default().with_served_tenants(["acme", "globex"]);
    /// assert!(config.served_tenants.unwrap().contains("acme"));
    /// ```
    pub fn with_served_tenants<I, S>(mut self, tenants: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.served_tenants = Some(Arc::new(tenants.into_iter().map(Into::into).collect()));
        self
    }
}

pub(crate) struct Inner {
    pub(crate) executor: Arc<dyn AgentExecutor>,
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) idempotency: Idempotency,
    /// The tasks whose turns run in this process, and who follows them.
    pub(crate) registry: Registry,
    pub(crate) cards: card::Cards,
    pub(crate) config: HandlerConfig,
    /// What runs beside the requests: heartbeat, recovery, leases, push delivery, shutdown.
    pub(crate) services: services::Services,
}

/// Carries out A2A operations for one agent over one store. Cheap to clone.
///
/// ```
/// use a2a_protocol_server::agents::EchoAgent;
/// use a2a_protocol_server::{CallContext, RequestHandler};
/// use a2a_protocol_types::{GetTaskRequest, Message, SendMessageRequest, SendMessageResponse};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), a2a_protocol_types::A2aError> {
/// let handler = RequestHandler::builder(EchoAgent::new()).build();
/// let ctx = CallContext::default();
/// let SendMessageResponse::Task(task) =
///     handler.send_message(SendMessageRequest::new(Message::user_text("hi")), &ctx).await?
/// else {
///     panic!("a task");
/// };
/// let again = handler.get_task(GetTaskRequest { id: task.id.clone(), ..Default::default() }, &ctx).await?;
/// assert_eq!(again.status.state, task.status.state);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct RequestHandler {
    pub(crate) inner: Arc<Inner>,
}

/// Builds a [`RequestHandler`].
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use a2a_protocol_server::agents::EchoAgent;
/// use a2a_protocol_server::store::InMemoryTaskStore;
/// use a2a_protocol_server::RequestHandler;
///
/// let handler = RequestHandler::builder(EchoAgent::new())
///     .with_agent_card(EchoAgent::card())
///     .with_store(Arc::new(InMemoryTaskStore::new()))
///     .with_leases(Duration::from_secs(300))
///     .build();
/// assert!(handler.agent_card().supports_extension("https://a2a-rust.com/extensions/lease/v1"));
/// ```
pub struct RequestHandlerBuilder {
    executor: Arc<dyn AgentExecutor>,
    store: Option<Arc<dyn TaskStore>>,
    card: Option<AgentCard>,
    extended_card: Option<AgentCard>,
    tailor_extended_card: Option<ExtendedCardTailor>,
    config: HandlerConfig,
    max_lease: Option<Duration>,
    #[cfg(feature = "push")]
    push: Option<crate::push::PushSettings>,
}

/// Shapes the extended card per caller.
use card::ExtendedCardTailor;

impl RequestHandlerBuilder {
    /// Supports the lease extension: a task started with a lease of at most `max_ttl` is
    /// canceled when its lease lapses unrenewed. The card then advertises the extension.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::RequestHandler;
    /// use a2a_protocol_types::lease::LEASE_EXTENSION_URI;
    ///
    /// let plain = RequestHandler::builder(EchoAgent::new()).build();
    /// assert!(!plain.agent_card().supports_extension(LEASE_EXTENSION_URI));
    /// let leasing = RequestHandler::builder(EchoAgent::new()).with_leases(Duration::from_secs(60)).build();
    /// assert!(leasing.agent_card().supports_extension(LEASE_EXTENSION_URI));
    /// ```
    pub fn with_leases(mut self, max_ttl: Duration) -> Self {
        self.max_lease = Some(max_ttl);
        self
    }

    /// Delivers push notifications: the four push config operations work, a send may carry a
    /// config, and every event of a task with configs is POSTed to their webhooks from the
    /// store's outbox (see [`crate::push`]). Needs a store that keeps configs (every bundled
    /// store does); the card then says `pushNotifications: true`.
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::push::PushSettings;
    /// use a2a_protocol_server::RequestHandler;
    ///
    /// let handler = RequestHandler::builder(EchoAgent::new()).with_push(PushSettings::default()).build();
    /// assert_eq!(handler.agent_card().capabilities.push_notifications, Some(true));
    /// let plain = RequestHandler::builder(EchoAgent::new()).build();
    /// assert_eq!(plain.agent_card().capabilities.push_notifications, Some(false));
    /// ```
    #[cfg(feature = "push")]
    #[cfg_attr(docsrs, doc(cfg(feature = "push")))]
    pub fn with_push(mut self, settings: crate::push::PushSettings) -> Self {
        self.push = Some(settings);
        self
    }

    /// Sets the store (default: an [`InMemoryTaskStore`]): a store, or a shared one
    /// (`Arc<S>`, `Arc<dyn TaskStore>`) to keep using elsewhere, say for the retention sweeper.
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::store::{InMemoryTaskStore, InMemoryStoreConfig};
    /// use a2a_protocol_server::RequestHandler;
    ///
    /// let config = InMemoryStoreConfig::default().with_tenant_aware(true).with_max_tasks(500);
    /// let store = InMemoryTaskStore::with_config(config);
    /// let handler = RequestHandler::builder(EchoAgent::new()).with_store(store).build();
    /// assert!(handler.store().supports_idempotency());
    /// ```
    pub fn with_store(mut self, store: impl TaskStore) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// Sets the agent card. Its capabilities (streaming, push notifications, extended card and
    /// the idempotency extension) are derived from the handler's setup, whatever the card says.
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::RequestHandler;
    /// use a2a_protocol_types::idempotency::IDEMPOTENCY_EXTENSION_URI;
    /// use a2a_protocol_types::AgentCard;
    ///
    /// let handler = RequestHandler::builder(EchoAgent::new())
    ///     .with_agent_card(AgentCard::new("Parrot", "Repeats.", "2.0.0"))
    ///     .build();
    /// let card = handler.agent_card();
    /// assert_eq!(card.name, "Parrot");
    /// assert!(card.supports_extension(IDEMPOTENCY_EXTENSION_URI), "derived from the store");
    /// ```
    pub fn with_agent_card(mut self, card: AgentCard) -> Self {
        self.card = Some(card);
        self
    }

    /// Serves `card` from `GetExtendedAgentCard` and advertises it.
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::RequestHandler;
    /// use a2a_protocol_types::AgentCard;
    ///
    /// let handler = RequestHandler::builder(EchoAgent::new())
    ///     .with_extended_agent_card(AgentCard::new("Echo (for partners)", "More skills.", "1.0.0"))
    ///     .build();
    /// assert_eq!(handler.agent_card().capabilities.extended_agent_card, Some(true));
    /// ```
    pub fn with_extended_agent_card(mut self, card: AgentCard) -> Self {
        self.extended_card = Some(card);
        self
    }

    /// Shapes the extended card for each caller (say, listing only the skills a caller may
    /// use): `tailor` gets the caller and the card set with
    /// [`RequestHandlerBuilder::with_extended_agent_card`], and its answer is served.
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::{CallContext, CallerIdentity, RequestHandler};
    /// use a2a_protocol_types::{AgentCard, GetExtendedAgentCardRequest};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_types::A2aError> {
    /// let handler = RequestHandler::builder(EchoAgent::new())
    ///     .with_extended_agent_card(AgentCard::new("Echo+", "For partners.", "1.0.0"))
    ///     .with_extended_card_tailor(|caller, mut card| {
    ///         card.description = format!("For {}.", caller.0);
    ///         card
    ///     })
    ///     .build();
    /// let bob = CallContext::default().with_caller(Some(CallerIdentity("bob".into())));
    /// let card = handler.get_extended_agent_card(GetExtendedAgentCardRequest::default(), &bob).await?;
    /// assert_eq!(card.description, "For bob.");
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_extended_card_tailor(
        mut self,
        tailor: impl Fn(&CallerIdentity, AgentCard) -> AgentCard + Send + Sync + 'static,
    ) -> Self {
        self.tailor_extended_card = Some(Arc::new(tailor));
        self
    }

    /// Sets the tuning.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::{HandlerConfig, RequestHandler};
    ///
    /// let handler = RequestHandler::builder(EchoAgent::new())
    ///     .with_config(HandlerConfig::default().with_cancel_grace(Duration::from_secs(1)))
    ///     .build();
    /// # let _ = handler;
    /// ```
    pub fn with_config(mut self, config: HandlerConfig) -> Self {
        self.config = config;
        self
    }

    /// Builds the handler.
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::RequestHandler;
    ///
    /// let handler = RequestHandler::builder(EchoAgent::new()).build();
    /// let clone = handler.clone(); // Cheap: both share one store and one agent.
    /// assert_eq!(clone.agent_card().name, handler.agent_card().name);
    /// ```
    pub fn build(self) -> RequestHandler {
        let store: Arc<dyn TaskStore> = Arc::new(crate::store::metered::MeteredStore(
            self.store
                .unwrap_or_else(|| Arc::new(InMemoryTaskStore::new())),
        ));
        let base = self.card.unwrap_or_else(|| {
            AgentCard::new("A2A agent", "An agent built with a2a-rust", "0.1.0")
        });
        let leases = self.max_lease.is_some();
        #[cfg(feature = "push")]
        let push = self
            .push
            .filter(|_| store.push().is_some())
            .and_then(
                |settings| match crate::push::worker::PushRuntime::new(settings) {
                    Ok(push) => Some(push),
                    Err(error) => {
                        tracing::error!(%error, "push notifications are off: no HTTP client");
                        None
                    }
                },
            );
        #[cfg(feature = "push")]
        let pushes = push.is_some();
        #[cfg(not(feature = "push"))]
        let pushes = false;
        let card = card::derive(
            base,
            store.as_ref(),
            self.extended_card.is_some(),
            leases,
            pushes,
        );
        let extended_card = self
            .extended_card
            .map(|c| card::derive(c, store.as_ref(), true, leases, pushes));
        let handler = RequestHandler {
            inner: Arc::new(Inner {
                executor: self.executor,
                idempotency: Idempotency::new(Arc::clone(&store), self.config.replay_wait),
                store,
                registry: Registry::default(),
                cards: card::Cards {
                    public: card,
                    extended: extended_card,
                    tailor: self.tailor_extended_card,
                },
                config: self.config,
                services: services::Services::new(
                    self.max_lease.map(leases::Leases::new),
                    #[cfg(feature = "push")]
                    push,
                ),
            }),
        };
        // Deliveries a previous run left pending start now, not at the first request.
        let _ = handler.push_settings();
        handler
    }
}

impl RequestHandler {
    /// Starts building a handler for `executor`.
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::RequestHandler;
    ///
    /// let handler = RequestHandler::builder(EchoAgent::new()).build();
    /// # let _ = handler;
    /// ```
    ///
    /// A shared or chosen-at-run-time executor (`Arc<dyn AgentExecutor>`,
    /// `Box<dyn AgentExecutor>`) is an executor too:
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use a2a_protocol_server::agents::{ConformanceAgent, EchoAgent};
    /// use a2a_protocol_server::{AgentExecutor, RequestHandler};
    ///
    /// let conformance = true;
    /// let agent: Arc<dyn AgentExecutor> =
    ///     if conformance { Arc::new(ConformanceAgent::new()) } else { Arc::new(EchoAgent::new()) };
    /// let handler = RequestHandler::builder(agent).build();
    /// # let _ = handler;
    /// ```
    pub fn builder(executor: impl AgentExecutor) -> RequestHandlerBuilder {
        RequestHandlerBuilder {
            executor: Arc::new(executor),
            store: None,
            card: None,
            extended_card: None,
            tailor_extended_card: None,
            config: HandlerConfig::default(),
            max_lease: None,
            #[cfg(feature = "push")]
            push: None,
        }
    }

    /// The public agent card, with capabilities derived from the setup. Interfaces are filled
    /// in by the server that knows its URL.
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::RequestHandler;
    ///
    /// let handler = RequestHandler::builder(EchoAgent::new()).build();
    /// assert_eq!(handler.agent_card().capabilities.streaming, Some(true));
    /// assert_eq!(handler.agent_card().capabilities.push_notifications, Some(false));
    /// ```
    pub fn agent_card(&self) -> &AgentCard {
        &self.inner.cards.public
    }

    /// The store.
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::RequestHandler;
    ///
    /// let handler = RequestHandler::builder(EchoAgent::new()).build();
    /// assert!(handler.store().supports_idempotency(), "the default in-memory store");
    /// ```
    pub fn store(&self) -> &Arc<dyn TaskStore> {
        &self.inner.store
    }

    /// `GetTask`. With the lease extension activated, it renews the task's lease.
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::{CallContext, RequestHandler};
    /// use a2a_protocol_types::{ErrorKind, GetTaskRequest};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let handler = RequestHandler::builder(EchoAgent::new()).build();
    /// let request = GetTaskRequest { id: "no-such-task".into(), ..Default::default() };
    /// let error = handler.get_task(request, &CallContext::default()).await.unwrap_err();
    /// assert_eq!(error.kind, ErrorKind::TaskNotFound);
    /// # }
    /// ```
    pub async fn get_task(
        &self,
        request: GetTaskRequest,
        ctx: &CallContext,
    ) -> Result<Task, A2aError> {
        self.check_tenant(&request.tenant)?;
        validate::task_id("id", &request.id)?;
        let history = validate::history_length(request.history_length)?;
        let mut task = self.load(&request.tenant, &request.id, ctx).await?;
        if ctx.activated(a2a_protocol_types::lease::LEASE_EXTENSION_URI) {
            self.renew_lease(&request.tenant, &request.id).await;
        }
        task.truncate_history(history);
        Ok(task)
    }

    /// `ListTasks`.
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::{CallContext, RequestHandler};
    /// use a2a_protocol_types::{ListTasksRequest, Message, SendMessageRequest};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_types::A2aError> {
    /// let handler = RequestHandler::builder(EchoAgent::new()).build();
    /// let ctx = CallContext::default();
    /// for text in ["one", "two"] {
    ///     handler.send_message(SendMessageRequest::new(Message::user_text(text)), &ctx).await?;
    /// }
    /// let page = handler.list_tasks(ListTasksRequest { page_size: Some(1), ..Default::default() }, &ctx).await?;
    /// assert_eq!((page.tasks.len(), page.total_size), (1, 2));
    /// assert!(!page.next_page_token.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn list_tasks(
        &self,
        request: ListTasksRequest,
        ctx: &CallContext,
    ) -> Result<ListTasksResponse, A2aError> {
        self.check_tenant(&request.tenant)?;
        let mut query = validate::task_query(&request, self.inner.config.default_page_size)?;
        query.caller = ctx.creator().map(str::to_owned);
        let history = validate::history_length(request.history_length)?;
        let include_artifacts = request.include_artifacts.unwrap_or(false);
        let page = self.inner.store.list(&request.tenant, &query).await?;
        let tasks = page
            .tasks
            .into_iter()
            .map(|mut task| {
                task.truncate_history(history);
                if !include_artifacts {
                    task.artifacts.clear();
                }
                task
            })
            .collect();
        Ok(ListTasksResponse {
            tasks,
            next_page_token: page.next.map(|c| c.encode()).unwrap_or_default(),
            page_size: i32::try_from(query.page_size).unwrap_or(i32::MAX),
            total_size: i32::try_from(page.total_size).unwrap_or(i32::MAX),
        })
    }

    /// `CreateTaskPushNotificationConfig`: registers a webhook for a task's updates. Needs
    /// push delivery on ([`RequestHandlerBuilder::with_push`], the `push` feature); otherwise
    /// `PushNotificationNotSupported`, as the card says. The URL must be `http` or `https`
    /// and reach only public addresses or those [`PushSettings::allowed`](crate::push::PushSettings)
    /// lets through; an empty id is given one. The answer masks the credentials.
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::{CallContext, RequestHandler};
    /// use a2a_protocol_types::push::TaskPushNotificationConfig;
    /// use a2a_protocol_types::ErrorKind;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let handler = RequestHandler::builder(EchoAgent::new()).build();
    /// let config: TaskPushNotificationConfig =
    ///     serde_json::from_str(r#"{"taskId": "t-1", "url": "https://client.example/hook"}"#).unwrap();
    /// let error = handler.create_task_push_notification_config(config, &CallContext::default()).await.unwrap_err();
    /// assert_eq!(error.kind, ErrorKind::PushNotificationNotSupported, "push is off");
    /// # }
    /// ```
    ///
    /// With push on:
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::push::PushSettings;
    /// use a2a_protocol_server::{CallContext, RequestHandler};
    /// use a2a_protocol_types::push::TaskPushNotificationConfig;
    /// use a2a_protocol_types::{ErrorKind, Message, SendMessageRequest, SendMessageResponse};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let settings = PushSettings::default().with_allowed(vec!["127.0.0.1".parse()?]);
    /// let handler = RequestHandler::builder(EchoAgent::new()).with_push(settings).build();
    /// let ctx = CallContext::default();
    /// let request = SendMessageRequest::new(Message::user_text("hi"));
    /// let SendMessageResponse::Task(task) = handler.send_message(request, &ctx).await? else { panic!("a task") };
    ///
    /// let mut config: TaskPushNotificationConfig =
    ///     serde_json::from_str(r#"{"url": "http://127.0.0.1:9/hook"}"#)?;
    /// config.task_id = task.id.clone();
    /// let created = handler.create_task_push_notification_config(config.clone(), &ctx).await?;
    /// assert!(!created.id.is_empty(), "given an id");
    ///
    /// config.url = "http://10.0.0.1/hook".into(); // private, and not allowed
    /// let refused = handler.create_task_push_notification_config(config, &ctx).await.unwrap_err();
    /// assert_eq!(refused.kind, ErrorKind::InvalidParams);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn create_task_push_notification_config(
        &self,
        request: TaskPushNotificationConfig,
        ctx: &CallContext,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        self.create_push_config(request, ctx).await
    }

    /// `GetTaskPushNotificationConfig`, with the credentials masked; `TaskNotFound` when the
    /// task or the config is not there (see
    /// [`RequestHandler::create_task_push_notification_config`]).
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::{CallContext, RequestHandler};
    /// use a2a_protocol_types::{ErrorKind, GetTaskPushNotificationConfigRequest};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let handler = RequestHandler::builder(EchoAgent::new()).build();
    /// let request = GetTaskPushNotificationConfigRequest::default();
    /// let error = handler.get_task_push_notification_config(request, &CallContext::default()).await.unwrap_err();
    /// assert_eq!(error.kind, ErrorKind::PushNotificationNotSupported);
    /// # }
    /// ```
    pub async fn get_task_push_notification_config(
        &self,
        request: GetTaskPushNotificationConfigRequest,
        ctx: &CallContext,
    ) -> Result<TaskPushNotificationConfig, A2aError> {
        self.get_push_config(request, ctx).await
    }

    /// `ListTaskPushNotificationConfigs`: a task's configs in order of id, a page at a time
    /// (50 unless `pageSize` says otherwise, at most 100), credentials masked.
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::{CallContext, RequestHandler};
    /// use a2a_protocol_types::{ErrorKind, ListTaskPushNotificationConfigsRequest};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let handler = RequestHandler::builder(EchoAgent::new()).build();
    /// let request = ListTaskPushNotificationConfigsRequest::default();
    /// let error = handler.list_task_push_notification_configs(request, &CallContext::default()).await.unwrap_err();
    /// assert_eq!(error.kind, ErrorKind::PushNotificationNotSupported);
    /// # }
    /// ```
    pub async fn list_task_push_notification_configs(
        &self,
        request: ListTaskPushNotificationConfigsRequest,
        ctx: &CallContext,
    ) -> Result<ListTaskPushNotificationConfigsResponse, A2aError> {
        self.list_push_configs(request, ctx).await
    }

    /// `DeleteTaskPushNotificationConfig`: no notification goes to the config afterwards, not
    /// even one already waiting. Deleting a config that is not there succeeds.
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::{CallContext, RequestHandler};
    /// use a2a_protocol_types::{DeleteTaskPushNotificationConfigRequest, ErrorKind};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let handler = RequestHandler::builder(EchoAgent::new()).build();
    /// let request = DeleteTaskPushNotificationConfigRequest::default();
    /// let error = handler.delete_task_push_notification_config(request, &CallContext::default()).await.unwrap_err();
    /// assert_eq!(error.kind, ErrorKind::PushNotificationNotSupported);
    /// # }
    /// ```
    pub async fn delete_task_push_notification_config(
        &self,
        request: DeleteTaskPushNotificationConfigRequest,
        ctx: &CallContext,
    ) -> Result<(), A2aError> {
        self.delete_push_config(request, ctx).await
    }

    /// `GetExtendedAgentCard`.
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::{CallContext, CallerIdentity, RequestHandler};
    /// use a2a_protocol_types::{AgentCard, ErrorKind, GetExtendedAgentCardRequest};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_types::A2aError> {
    /// let handler = RequestHandler::builder(EchoAgent::new())
    ///     .with_extended_agent_card(AgentCard::new("Echo+", "For partners.", "1.0.0"))
    ///     .build();
    /// // Only for an authenticated caller (spec §13.3).
    /// let anonymous = handler.get_extended_agent_card(GetExtendedAgentCardRequest::default(), &CallContext::default()).await;
    /// assert_eq!(anonymous.unwrap_err().kind, ErrorKind::Unauthenticated);
    /// let alice = CallContext::default().with_caller(Some(CallerIdentity("alice".into())));
    /// let card = handler.get_extended_agent_card(GetExtendedAgentCardRequest::default(), &alice).await?;
    /// assert_eq!(card.name, "Echo+");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn get_extended_agent_card(
        &self,
        request: GetExtendedAgentCardRequest,
        ctx: &CallContext,
    ) -> Result<AgentCard, A2aError> {
        self.check_tenant(&request.tenant)?;
        let card = self.inner.cards.extended.as_ref().ok_or_else(|| {
            A2aError::unsupported_operation(
                "this agent has no extended agent card (its card says extendedAgentCard: false)",
            )
        })?;
        let Some(caller) = &ctx.caller else {
            return Err(A2aError::unauthenticated(
                "the extended agent card is served to authenticated callers only; authenticate \
                 as the public card's securitySchemes declare",
            ));
        };
        Ok(match &self.inner.cards.tailor {
            Some(tailor) => tailor(caller, card.clone()),
            None => card.clone(),
        })
    }

    pub(crate) fn from_inner(inner: Arc<Inner>) -> Self {
        Self { inner }
    }

    /// This process as the store records turn owners, when the store keeps them.
    pub(crate) fn owner(&self) -> Option<&str> {
        self.inner
            .store
            .coordination()
            .map(|_| &*self.inner.services.owner)
    }

    /// A sink for a turn on `live`.
    pub(crate) fn sink(&self, live: &Arc<LiveTask>, context_id: ContextId) -> EventSink {
        let owner = self
            .inner
            .store
            .coordination()
            .map(|_| Arc::clone(&self.inner.services.owner));
        EventSink::new(
            Arc::clone(live),
            Arc::clone(&self.inner.store),
            context_id,
            owner,
        )
    }

    /// Refuses a tenant no request may name, and one this agent does not serve.
    pub(crate) fn check_tenant(&self, tenant: &str) -> Result<(), A2aError> {
        validate::tenant(tenant)?;
        match &self.inner.config.served_tenants {
            Some(served) if !tenant.is_empty() && !served.contains(tenant) => {
                Err(validate::unserved_tenant(tenant))
            }
            _ => Ok(()),
        }
    }

    /// Refuses new work once shutdown has begun; the refusal is retryable, so a client with
    /// a retry policy moves on to another replica or waits for the restart.
    pub(crate) fn accepting(&self) -> Result<(), A2aError> {
        if self
            .inner
            .services
            .draining
            .load(std::sync::atomic::Ordering::Acquire)
        {
            return Err(A2aError::resource_exhausted(
                "this server is shutting down; nothing ran. Retry shortly",
                crate::store::STORE_RETRY_AFTER,
            ));
        }
        Ok(())
    }

    pub(crate) async fn load(
        &self,
        tenant: &str,
        id: &TaskId,
        ctx: &CallContext,
    ) -> Result<Task, A2aError> {
        if let Some(live) = self.live(tenant, id, ctx)? {
            return Ok(live.snapshot().await);
        }
        if ctx.caller.is_some() {
            return self.load_stored(tenant, id, ctx).await.map(|s| s.task);
        }
        self.inner
            .store
            .get(tenant, id)
            .await?
            .ok_or_else(|| A2aError::task_not_found(id.as_str()))
    }

    /// The task's live state if a turn runs on it in this process; `TaskNotFound` when it
    /// does but the caller may not see the task.
    fn live(
        &self,
        tenant: &str,
        id: &TaskId,
        ctx: &CallContext,
    ) -> Result<Option<Arc<LiveTask>>, A2aError> {
        match self.inner.registry.get(tenant, id) {
            Some(live) if !ctx.may_see(live.caller.as_deref()) => {
                Err(A2aError::task_not_found(id.as_str()))
            }
            live => Ok(live),
        }
    }

    /// The task as stored, with its owner and revision; `TaskNotFound` when there is none or
    /// the caller may not see it.
    async fn load_stored(
        &self,
        tenant: &str,
        id: &TaskId,
        ctx: &CallContext,
    ) -> Result<crate::store::StoredTask, A2aError> {
        self.inner
            .store
            .load_stored(tenant, id)
            .await?
            .filter(|stored| ctx.may_see(stored.caller.as_deref()))
            .ok_or_else(|| A2aError::task_not_found(id.as_str()))
    }
}

/// The refusal of a message to a task whose turn still runs.
pub(crate) fn busy(id: &TaskId) -> A2aError {
    A2aError::unsupported_operation(format!(
        "task {id} is still working on an earlier message; send the next one when it asks for \
         input"
    ))
}
