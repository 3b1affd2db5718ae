//! `SendMessage` and `SendStreamingMessage`: admission (idempotency), task creation or
//! continuation, the agent's turn, and the answer each caller gets.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use a2a_protocol_types::push::TaskPushNotificationConfig;
use a2a_protocol_types::{
    A2aError, ContextId, Message, SendMessageRequest, SendMessageResponse, StreamResponse, Task,
    TaskId, TaskState, TaskStatus,
};
use futures::{FutureExt, StreamExt, stream};
use tokio::sync::broadcast;

use super::{CallContext, EventStream, RequestHandler, busy, validate};
use crate::executor::RequestContext;
use crate::runtime::{BudgetState, LiveTask, SharedEvent, await_settled, follow_live};
use crate::store::{KeyClaim, KeyScope, Loaded, StoredTask, TaskRef, TaskWrite, WriteOutcome};
use crate::telemetry;
use a2a_protocol_types::trace::{self, TraceContext};

/// Why a task failed whose turn's events the store would not record.
const UNRECORDED: &str = "the task store could not record this task's progress while its agent \
                          worked, so what the agent did after its last recorded event was lost; \
                          the task was not completed";

/// How many times a follow-up reads its task again after another process wrote it first.
const FOLLOW_UP_ATTEMPTS: usize = 3;

/// A turn that has started: the task as it was before the agent ran, and its events since.
struct Turn {
    live: Arc<LiveTask>,
    snapshot: Arc<Task>,
    events: Option<broadcast::Receiver<SharedEvent>>,
    new_task: bool,
}

enum Started {
    Turn(Box<Turn>),
    /// A retry: the first attempt's task, as stored.
    Replay(Box<Task>),
}

impl RequestHandler {
    /// `SendMessage`: waits for the task to settle unless `returnImmediately` is set.
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::{CallContext, RequestHandler};
    /// use a2a_protocol_types::idempotency::{generate_key, set_key};
    /// use a2a_protocol_types::{Message, SendMessageRequest, SendMessageResponse};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_types::A2aError> {
    /// let handler = RequestHandler::builder(EchoAgent::new()).build();
    /// let mut message = Message::user_text("hi");
    /// set_key(&mut message, &generate_key()).unwrap();
    /// let request = SendMessageRequest::new(message);
    /// let ctx = CallContext::default();
    /// let (SendMessageResponse::Task(first), SendMessageResponse::Task(retry)) = (
    ///     handler.send_message(request.clone(), &ctx).await?,
    ///     handler.send_message(request, &ctx).await?,
    /// ) else {
    ///     panic!("tasks");
    /// };
    /// assert_eq!(first.id, retry.id, "the retry replays the first send's task");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn send_message(
        &self,
        request: SendMessageRequest,
        ctx: &CallContext,
    ) -> Result<SendMessageResponse, A2aError> {
        self.send_message_answer(request, ctx)
            .await
            .map(SendAnswer::into_response)
    }

    /// [`RequestHandler::send_message`], answering with the task as it is held rather than a
    /// copy of it: the bindings serialize it straight from there.
    pub(crate) async fn send_message_answer(
        &self,
        request: SendMessageRequest,
        ctx: &CallContext,
    ) -> Result<SendAnswer, A2aError> {
        let send = self.valid_send(request)?;
        let (tenant, immediate, history) = (send.tenant.clone(), send.immediate, send.history);
        match self.admit_and_start(send, ctx, false).await? {
            Started::Replay(task) => {
                self.answer_replay(&tenant, *task, immediate, history, ctx.deadline)
                    .await
            }
            Started::Turn(turn) => {
                let Turn {
                    live,
                    snapshot,
                    events,
                    ..
                } = *turn;
                if immediate {
                    return Ok(SendAnswer::task(snapshot, history));
                }
                // Let go of the first version, so the turn's events can reuse it.
                drop(snapshot);
                if let Some(Some(reply)) = until(ctx.deadline, await_settled(events)).await {
                    return Ok(SendAnswer::Message(reply));
                }
                // Settled, or the deadline came first: the task as it stands either way.
                Ok(SendAnswer::task(live.shared().await, history))
            }
        }
    }

    /// `SendStreamingMessage`: the task (or a single direct message), then its events until
    /// it settles.
    ///
    /// ```
    /// use futures::StreamExt;
    ///
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::{CallContext, RequestHandler};
    /// use a2a_protocol_types::{Message, SendMessageRequest, StreamResponse, TaskState};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_types::A2aError> {
    /// let handler = RequestHandler::builder(EchoAgent::new()).build();
    /// let request = SendMessageRequest::new(Message::user_text("hi"));
    /// let events: Vec<StreamResponse> =
    ///     handler.send_streaming_message(request, &CallContext::default()).await?.collect().await;
    /// let StreamResponse::StatusUpdate(last) = events.last().unwrap() else { panic!("a status") };
    /// assert_eq!(last.status.state, TaskState::Completed);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn send_streaming_message(
        &self,
        request: SendMessageRequest,
        ctx: &CallContext,
    ) -> Result<EventStream, A2aError> {
        let send = self.valid_send(request)?;
        let slot = ctx.stream_slot()?;
        let (tenant, history) = (send.tenant.clone(), send.history);
        let events = match self.admit_and_start(send, ctx, true).await? {
            Started::Replay(task) => self.stream_replay(&tenant, *task, history).await,
            Started::Turn(turn) => turn_stream(*turn, history),
        };
        Ok(super::holding(events, slot))
    }

    /// The request checked, its extension data parsed once.
    fn valid_send(&self, request: SendMessageRequest) -> Result<validate::ValidSend, A2aError> {
        self.check_tenant(&request.tenant)?;
        validate::send(
            request,
            &self.inner.cards.public,
            self.inner.services.leases.as_ref(),
        )
    }

    /// Admits a checked send: its key decides new or replay ([`crate::idempotency`]), then the
    /// task is created or continued and the agent's turn started.
    async fn admit_and_start(
        &self,
        send: validate::ValidSend,
        ctx: &CallContext,
        streaming: bool,
    ) -> Result<Started, A2aError> {
        self.accepting()?;
        // A turn is owned through the store only once this process's heartbeat is there.
        self.inner
            .services
            .upkeep
            .ensure_started(&self.inner)
            .await?;
        let scope = KeyScope {
            tenant: send.tenant.clone(),
            caller: ctx.caller.as_ref().map(|c| c.0.clone()),
        };
        let task_id = send
            .message
            .task_id
            .clone()
            .unwrap_or_else(TaskId::time_ordered);
        if let Some(config) = &send.push {
            // Checked before anything runs: a refused webhook refuses the send.
            self.check_attached_push(config).await?;
        }
        let claim =
            self.inner
                .idempotency
                .claim_for(scope, ctx.key_holder(), &send.message, &task_id)?;
        let lease = send.lease;
        let started = match send.message.task_id.clone() {
            Some(id) => self.continue_task(send, ctx, id, claim, streaming).await?,
            None => {
                self.create_task(send, ctx, task_id, claim, streaming)
                    .await?
            }
        };
        if let (Started::Turn(turn), Some(lease)) = (&started, lease) {
            self.grant_lease(&turn.live.tenant, &turn.live.task_id, lease)
                .await;
        }
        Ok(started)
    }

    /// Creates the task, taking the key in the same write, and starts the agent's turn.
    async fn create_task(
        &self,
        send: validate::ValidSend,
        ctx: &CallContext,
        task_id: TaskId,
        claim: Option<KeyClaim>,
        streaming: bool,
    ) -> Result<Started, A2aError> {
        let validate::ValidSend {
            tenant,
            mut message,
            budget,
            push,
            ..
        } = send;
        let context_id = message
            .context_id
            .clone()
            .unwrap_or_else(ContextId::time_ordered);
        message.context_id = Some(context_id.clone());
        message.task_id = Some(task_id.clone());
        let mut task = Task::new(task_id, context_id, TaskStatus::new(TaskState::Submitted));
        task.history.push(message.clone());
        task.generation = 1;
        let task = Arc::new(task);
        let push = push.map(|c| bound_push_config(c, &tenant, &task.id));
        // The config goes in with the task: no event of the turn can precede it.
        let write = TaskWrite::create(&tenant, &task)
            .with_push_config(push.as_ref())
            .with_claim(claim.as_ref())
            .with_owner(self.owner())
            .with_caller(ctx.creator());
        match self.inner.store.write(&write).await? {
            WriteOutcome::Written => {}
            WriteOutcome::KeyHeld(held) => {
                return self
                    .inner
                    .idempotency
                    .replay_held(claim.as_ref(), held)
                    .await
                    .map(Started::Replay);
            }
            WriteOutcome::Stale => {
                return Err(A2aError::internal(
                    "a task with the new task's id exists already",
                ));
            }
        }
        if claim.is_some() {
            self.inner.idempotency.claimed();
        }
        let live = self
            .inner
            .registry
            .begin_turn(&tenant, &task, 1, ctx.creator());
        Ok(Started::Turn(Box::new(
            self.launch(live, tenant, message, budget, None, ctx, streaming, true)
                .await,
        )))
    }

    /// Appends a follow-up message to its task, taking the key in the same write, and starts
    /// the agent's turn. One turn at a time: a task whose turn runs, in this process or in
    /// another sharing the store, refuses the message. The write is conditional on the task
    /// as read, so of two follow-ups racing through two processes exactly one is accepted.
    async fn continue_task(
        &self,
        send: validate::ValidSend,
        ctx: &CallContext,
        id: TaskId,
        claim: Option<KeyClaim>,
        streaming: bool,
    ) -> Result<Started, A2aError> {
        let validate::ValidSend {
            tenant,
            mut message,
            budget,
            push,
            ..
        } = send;
        let store = &self.inner.store;
        let push = push.map(|c| bound_push_config(c, &tenant, &id));
        if let Some(config) = &push {
            self.check_push_room(&tenant, config).await?;
        }
        for _ in 0..FOLLOW_UP_ATTEMPTS {
            let current = self.current(&tenant, &id).await?;
            if !ctx.may_see(current.caller.as_deref()) {
                return Err(A2aError::task_not_found(id.as_str()));
            }
            // A retry is a replay even when the first attempt drove the task terminal.
            if let Some(claim) = &claim
                && let Some(held) = self.inner.idempotency.holder(claim).await?
            {
                return self
                    .inner
                    .idempotency
                    .replay_held(Some(claim), held)
                    .await
                    .map(Started::Replay);
            }
            if message
                .context_id
                .as_ref()
                .is_some_and(|c| *c != current.task.context_id)
            {
                return Err(A2aError::invalid_params(
                    "message.contextId differs from the context of the task named by \
                     message.taskId; omit contextId or send the task's own",
                )
                .with_field_violation("message.contextId", "does not match the task's context"));
            }
            if current.task.status.state.is_terminal() {
                return Err(A2aError::unsupported_operation(format!(
                    "task {} is {} and accepts no more messages; start a new task (reuse its \
                     contextId to continue the conversation)",
                    current.task.id, current.task.status.state
                )));
            }
            let busy_elsewhere = current.owner_alive
                && current
                    .owner
                    .as_deref()
                    .is_some_and(|o| Some(o) != self.owner());
            let live = (!busy_elsewhere)
                .then(|| {
                    self.inner.registry.try_begin_exclusive(
                        &tenant,
                        &current.task,
                        current.revision,
                        current.caller.as_deref(),
                    )
                })
                .flatten()
                .ok_or_else(|| busy(&current.task.id))?;
            // What the agent gets; the live state keeps the shared version.
            let stored = Task::clone(&current.task);
            drop(current);
            message.context_id = Some(stored.context_id.clone());
            let written = async {
                let mut state = live.state.lock().await;
                let mut draft = state.draft();
                Arc::make_mut(&mut draft).history.push(message.clone());
                let write = TaskWrite::update(&tenant, &draft, state.revision)
                    .with_new_messages(1)
                    .with_owner(self.owner())
                    .with_claim(claim.as_ref())
                    .with_push_config(push.as_ref());
                match store.write(&write).await {
                    Ok(WriteOutcome::Written) => {
                        state.revision += 1;
                        state.commit(draft);
                        Ok(WriteOutcome::Written)
                    }
                    other => {
                        state.discard(draft);
                        other.map_err(A2aError::from)
                    }
                }
            }
            .await;
            match written {
                Ok(WriteOutcome::Written) => {
                    if claim.is_some() {
                        self.inner.idempotency.claimed();
                    }
                    let turn = self
                        .launch(
                            live,
                            tenant,
                            message,
                            budget,
                            Some(stored),
                            ctx,
                            streaming,
                            false,
                        )
                        .await;
                    return Ok(Started::Turn(Box::new(turn)));
                }
                Ok(WriteOutcome::KeyHeld(held)) => {
                    self.inner.registry.end_turn(&live).await;
                    return self
                        .inner
                        .idempotency
                        .replay_held(claim.as_ref(), held)
                        .await
                        .map(Started::Replay);
                }
                // Another process wrote first: read the task again and decide anew.
                Ok(WriteOutcome::Stale) => self.inner.registry.end_turn(&live).await,
                Err(error) => {
                    self.inner.registry.end_turn(&live).await;
                    return Err(error);
                }
            }
        }
        Err(busy(&id))
    }

    /// The task as it stands, from what this process kept of it when the store has not moved
    /// past that (no long history read again), else from the store.
    async fn current(&self, tenant: &str, id: &TaskId) -> Result<Current, A2aError> {
        let store = &self.inner.store;
        if let Some((kept, revision)) = self.inner.registry.take_recent(tenant, id) {
            match store.load(tenant, id, Some(revision)).await? {
                Loaded::Missing => return Err(A2aError::task_not_found(id.as_str())),
                Loaded::Unchanged(facts) => return Ok(Current::from_facts(kept, facts)),
                Loaded::Changed(stored) => return Ok(Current::from(stored)),
            }
        }
        // Visibility is the caller's to check: any task is read here.
        self.load_stored(tenant, id, &CallContext::default())
            .await
            .map(Current::from)
    }

    /// Starts the agent's turn on a live task whose message is recorded.
    #[allow(clippy::too_many_arguments)]
    async fn launch(
        &self,
        live: Arc<LiveTask>,
        tenant: String,
        message: Message,
        budget: Option<a2a_protocol_types::budget::BudgetGrant>,
        stored: Option<Task>,
        ctx: &CallContext,
        streaming: bool,
        new_task: bool,
    ) -> Turn {
        let (snapshot, events) = live.subscribe_shared().await;
        let turn_ctx = RequestContext {
            message,
            task_id: live.task_id.clone(),
            context_id: snapshot.context_id.clone(),
            tenant,
            caller: ctx.caller.clone(),
            extensions: ctx.extensions.clone(),
            task: stored,
            streaming,
            cancellation: live.cancel.child_token(),
            budget,
            rerun: false,
            trace: ctx.trace,
        };
        self.spawn_turn(Arc::clone(&live), turn_ctx);
        Turn {
            live,
            snapshot,
            events,
            new_task,
        }
    }

    /// Runs the agent's turn on its own task, so a client that goes away does not stop it. A
    /// budget's time bounds the turn: when it runs out the turn is stopped and the task fails
    /// as budget-exhausted.
    pub(crate) fn spawn_turn(&self, live: Arc<LiveTask>, ctx: RequestContext) {
        let inner = Arc::clone(&self.inner);
        let budget = ctx
            .budget
            .clone()
            .map(|grant| Arc::new(BudgetState::new(grant)));
        let sink = self
            .sink(&live, ctx.context_id.clone())
            .with_budget(budget.clone());
        let trace = ctx.trace.unwrap_or_else(TraceContext::new_root);
        // No trace id of its own: the turn's span is a child of its request's, which has it.
        let span = tracing::info_span!(
            "agent_turn",
            task_id = live.task_id.as_str(),
            context_id = ctx.context_id.as_str(),
        );
        let turn = async move {
            let _active = telemetry::GaugeHeld::active_turn();
            let turn_cancel = ctx.cancellation.clone();
            let run = AssertUnwindSafe(inner.executor.execute(ctx, sink.clone())).catch_unwind();
            let limit = budget.as_ref().and_then(|b| b.time_limit());
            let outcome = match limit {
                None => Some(run.await),
                Some(limit) => tokio::time::timeout(limit, run).await.ok(),
            };
            let reason = match outcome {
                Some(Ok(Ok(()))) => "the agent ended its turn without settling the task".to_owned(),
                Some(Ok(Err(error))) => error.message,
                Some(Err(_)) => "the agent failed unexpectedly".to_owned(),
                None => {
                    turn_cancel.cancel();
                    sink.exhaust("time").await.message
                }
            };
            let reason = if sink.lost_to_the_store() {
                UNRECORDED.to_owned()
            } else {
                reason
            };
            // A turn given up at shutdown, to run again elsewhere, is left as it stands.
            let abandoned = live.abandoned.load(std::sync::atomic::Ordering::Acquire);
            if !abandoned {
                sink.settle_as_failed(&reason).await;
            }
            let handler = RequestHandler::from_inner(Arc::clone(&inner));
            if live.is_settled().await {
                handler.release_lease(&live.tenant, &live.task_id).await;
            } else if !abandoned {
                // The store did not take the settlement: it is tried again until it lands.
                handler.settle_later(
                    TaskRef {
                        tenant: live.tenant.clone(),
                        id: live.task_id.clone(),
                    },
                    reason,
                );
            }
            inner.registry.end_turn(&live).await;
        };
        tokio::spawn(crate::in_span::in_span(
            trace::with_current(trace, turn),
            span,
        ));
    }
}

/// A task as a follow-up finds it: the task, shared, and its turn.
struct Current {
    task: Arc<Task>,
    revision: u64,
    owner: Option<String>,
    owner_alive: bool,
    /// Who created the task.
    caller: Option<String>,
}

impl Current {
    fn from_facts(task: Arc<Task>, facts: StoredTask) -> Self {
        Self {
            task,
            revision: facts.revision,
            owner: facts.owner,
            owner_alive: facts.owner_alive,
            caller: facts.caller,
        }
    }
}

impl From<StoredTask> for Current {
    fn from(stored: StoredTask) -> Self {
        let StoredTask {
            task,
            revision,
            owner,
            owner_alive,
            caller,
            ..
        } = stored;
        Self {
            task: Arc::new(task),
            revision,
            owner,
            owner_alive,
            caller,
        }
    }
}

/// What a send answers: a task (shared with the live state or the store, not copied) or a
/// direct reply. Serializes exactly as [`SendMessageResponse`] does.
pub(crate) enum SendAnswer {
    Task(Arc<Task>),
    Message(Message),
}

impl SendAnswer {
    /// The task, cut to the requested history (which needs a copy only when it cuts).
    pub(crate) fn task(task: Arc<Task>, history: Option<usize>) -> Self {
        match history {
            Some(n) if n < task.history.len() => {
                // The task without its history, then the messages kept: a long history is
                // never copied to be cut.
                let mut cut = crate::store::head_of(&task);
                cut.history = task.history[task.history.len() - n..].to_vec();
                SendAnswer::Task(Arc::new(cut))
            }
            _ => SendAnswer::Task(task),
        }
    }

    fn into_response(self) -> SendMessageResponse {
        match self {
            SendAnswer::Task(task) => SendMessageResponse::Task(Arc::unwrap_or_clone(task)),
            SendAnswer::Message(message) => SendMessageResponse::Message(message),
        }
    }
}

impl From<SendMessageResponse> for SendAnswer {
    fn from(response: SendMessageResponse) -> Self {
        match response {
            SendMessageResponse::Task(task) => SendAnswer::Task(Arc::new(task)),
            SendMessageResponse::Message(message) => SendAnswer::Message(message),
        }
    }
}

impl serde::Serialize for SendAnswer {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // The same wrapper keys as SendMessageResponse: {"task": ...} or {"message": ...}.
        match self {
            SendAnswer::Task(task) => {
                serializer.serialize_newtype_variant("SendMessageResponse", 0, "task", &**task)
            }
            SendAnswer::Message(message) => {
                serializer.serialize_newtype_variant("SendMessageResponse", 1, "message", message)
            }
        }
    }
}

/// The stream of a turn. For a new task the first agent event decides its shape: a direct reply
/// makes a message-only stream; anything else follows the task snapshot.
fn turn_stream(turn: Turn, history: Option<usize>) -> EventStream {
    let Turn {
        live,
        snapshot,
        events,
        new_task,
    } = turn;
    let mut snapshot = Task::clone(&snapshot);
    snapshot.truncate_history(history);
    let mut events = follow_live(live, events);
    if !new_task {
        return stream::iter([StreamResponse::Task(snapshot)])
            .chain(events)
            .boxed();
    }
    stream::once(async move {
        match events.next().await {
            Some(StreamResponse::Message(reply)) => {
                stream::iter(vec![StreamResponse::Message(reply)]).boxed()
            }
            Some(first) => stream::iter(vec![StreamResponse::Task(snapshot), first])
                .chain(events)
                .boxed(),
            None => stream::iter(vec![StreamResponse::Task(snapshot)]).boxed(),
        }
    })
    .flatten()
    .boxed()
}

/// `work`'s output, or `None` once `deadline` passes first. Not an `async fn`, which would hold
/// `work` twice in its state.
pub(crate) fn until<T>(
    deadline: Option<tokio::time::Instant>,
    work: impl std::future::Future<Output = T>,
) -> impl std::future::Future<Output = Option<T>> {
    use futures::future::{Either, FutureExt};
    match deadline {
        Some(deadline) => Either::Left(tokio::time::timeout_at(deadline, work).map(Result::ok)),
        None => Either::Right(work.map(Some)),
    }
}

/// A config sent with a message, bound to the message's task: without an id it takes the
/// task's, so a retried send replaces it rather than adding a second.
fn bound_push_config(
    mut config: TaskPushNotificationConfig,
    tenant: &str,
    task_id: &TaskId,
) -> TaskPushNotificationConfig {
    config.task_id = task_id.clone();
    config.tenant = tenant.to_owned();
    if config.id.is_empty() {
        config.id = task_id.as_str().to_owned();
    }
    config
}
