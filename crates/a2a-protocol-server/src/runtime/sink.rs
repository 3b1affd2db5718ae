//! [`EventSink`]: how an executor reports progress. Every event is checked against the task's
//! lifecycle, persisted, and then broadcast to the task's streams, in that order.

use std::sync::Arc;

use a2a_protocol_types::{
    A2aError, Artifact, ContextId, Message, MessageRole, Part, StreamResponse, Task, TaskId,
    TaskState, TaskStatus,
};

use a2a_protocol_types::budget::BUDGET_METADATA_KEY;

use super::budget::BudgetState;
use super::lifecycle;
use super::live::{LiveState, LiveTask};
use crate::store::TaskStoreExt;
use crate::store::{StoreError, StoredTask, TaskStore, TaskWrite, WriteOutcome};
use tokio::sync::OwnedMutexGuard;

/// How many times an event is applied again over a newer version of the task before the
/// writer gives up. Writes race only with a cancel or a recovery from another process, so a
/// second try nearly always settles it.
const WRITE_ATTEMPTS: usize = 5;

/// Where an executor publishes a task's status changes, artifacts and direct replies.
///
/// A call that settles the task (completes, fails, rejects, cancels it, or asks for input)
/// returns once that event and every one before it are stored and broadcast. Other events
/// are accepted at once and stored right after, together with any that follow before the
/// store is free, so a fast turn costs one write rather than one per event; streams see an
/// event only once it is stored. A call returns an error when its event breaks the task's
/// lifecycle (say, an update after the task finished), when the store failed, or when events
/// accepted earlier could not be stored. Cheap to clone.
///
/// ```
/// use a2a_protocol_types::{Artifact, Part};
/// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
/// events.working().await?;
/// events.artifact(Artifact::new("a-1", vec![Part::text(ctx.message.text())])).await?;
/// events.complete(None).await
/// # }).unwrap();
/// # assert_eq!(task.status.state, a2a_protocol_types::TaskState::Completed);
/// # assert_eq!(task.artifacts[0].parts[0].as_text(), Some("hi"));
/// ```
#[derive(Clone)]
pub struct EventSink {
    live: Arc<LiveTask>,
    store: Arc<dyn TaskStore>,
    context_id: ContextId,
    budget: Option<Arc<BudgetState>>,
    /// This process, recorded as the turn's owner while the task is unsettled, when the store
    /// keeps turn owners.
    owner: Option<Arc<str>>,
    /// Events accepted but not yet written, shared by the sink's clones.
    deferred: Arc<std::sync::Mutex<Deferred>>,
}

/// What a sink's calls leave for the deferred writer.
#[derive(Default)]
struct Deferred {
    batch: Option<Batch>,
    /// A deferred writer is spawned and has not yet looked at the slot.
    writer_started: bool,
    /// Why events accepted earlier were not recorded: the next call returns it.
    dropped: Option<A2aError>,
    /// The store failed to record an event of this turn.
    store_failed: bool,
}

/// Accepted events and the draft they made, holding the task's lock until they are written.
struct Batch {
    state: OwnedMutexGuard<LiveState>,
    draft: Arc<Task>,
    events: Vec<StreamResponse>,
    /// History messages the events added to the draft.
    messages: usize,
}

fn lock_slot(slot: &std::sync::Mutex<Deferred>) -> std::sync::MutexGuard<'_, Deferred> {
    slot.lock().unwrap_or_else(|e| e.into_inner())
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSink")
            .field("task_id", &self.live.task_id)
            .finish_non_exhaustive()
    }
}

impl EventSink {
    pub(crate) fn new(
        live: Arc<LiveTask>,
        store: Arc<dyn TaskStore>,
        context_id: ContextId,
        owner: Option<Arc<str>>,
    ) -> Self {
        Self {
            live,
            store,
            context_id,
            budget: None,
            owner,
            deferred: Arc::default(),
        }
    }

    pub(crate) fn with_budget(mut self, budget: Option<Arc<BudgetState>>) -> Self {
        self.budget = budget;
        self
    }

    /// The task this sink reports on.
    ///
    /// ```
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// assert_eq!(events.task_id(), &ctx.task_id);
    /// events.complete(None).await
    /// # }).unwrap();
    /// # assert_eq!(task.status.state, a2a_protocol_types::TaskState::Completed);
    /// ```
    pub fn task_id(&self) -> &TaskId {
        &self.live.task_id
    }

    /// The task's context.
    ///
    /// ```
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// assert_eq!(events.context_id(), &ctx.context_id);
    /// events.complete(None).await
    /// # }).unwrap();
    /// # assert!(!task.context_id.is_empty());
    /// ```
    pub fn context_id(&self) -> &ContextId {
        &self.context_id
    }

    /// An agent message with one text part, addressed to this task.
    ///
    /// ```
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// let message = events.agent_message("done");
    /// assert_eq!(message.task_id.as_ref(), Some(events.task_id()));
    /// events.complete(Some(message)).await
    /// # }).unwrap();
    /// # assert_eq!(task.status.message.unwrap().text(), "done");
    /// ```
    pub fn agent_message(&self, text: impl Into<String>) -> Message {
        self.agent_message_with_parts(vec![Part::text(text)])
    }

    /// An agent message with the given parts, addressed to this task.
    ///
    /// ```
    /// use a2a_protocol_types::Part;
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// let message = events.agent_message_with_parts(vec![Part::text("see"), Part::url("https://x.example/r")]);
    /// events.complete(Some(message)).await
    /// # }).unwrap();
    /// # assert_eq!(task.status.message.unwrap().parts.len(), 2);
    /// ```
    pub fn agent_message_with_parts(&self, parts: Vec<Part>) -> Message {
        Message::new(MessageRole::Agent, parts)
            .with_context_id(self.context_id.clone())
            .with_task_id(self.live.task_id.clone())
    }

    /// The task as it stands.
    ///
    /// ```
    /// use a2a_protocol_types::TaskState;
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// events.working().await?;
    /// assert_eq!(events.task().await.status.state, TaskState::Working);
    /// events.complete(None).await
    /// # }).unwrap();
    /// # assert_eq!(task.status.state, TaskState::Completed);
    /// ```
    pub async fn task(&self) -> Task {
        self.live.snapshot().await
    }

    /// Applies `change` to the task and records its event. An event that settles the task
    /// (or fails to) is written, with every event accepted before it, before this returns,
    /// and then broadcast. Any other event is accepted at once and written soon after, by a
    /// task of its own, or together with the next event if that comes first: a fast turn's
    /// events share one write. Broadcasts follow the write, so no stream sees an event that
    /// is not stored; an error writing deferred events is returned by the next call.
    async fn publish(
        &self,
        change: impl Fn(&mut Task) -> Result<StreamResponse, A2aError>,
    ) -> Result<(), A2aError> {
        let mut batch = self.open_batch().await?;
        let task = Arc::make_mut(&mut batch.draft);
        let messages_before = task.history.len();
        let mut event = match change(task) {
            Ok(event) => event,
            Err(error) => {
                // A refused change leaves the task as it was; what was accepted stays.
                self.put_back(batch);
                return Err(error);
            }
        };
        task.generation += 1;
        StreamResponse::set_generation(&mut event, task.generation);
        self.annotate_budget(task, &mut event);
        batch.messages += task.history.len().saturating_sub(messages_before);
        let settles = task.status.state.is_settled();
        batch.events.push(event);
        if settles {
            return self.flush(batch, false).await;
        }
        self.defer(batch);
        Ok(())
    }

    /// The events accepted but not yet written, with the task's lock they hold: taken from
    /// the deferred slot when the writer has not started on them, else a fresh batch once
    /// the lock is free (after the writer, if it holds it).
    async fn open_batch(&self) -> Result<Batch, A2aError> {
        {
            let mut slot = lock_slot(&self.deferred);
            if let Some(error) = slot.dropped.take() {
                return Err(error);
            }
            if let Some(batch) = slot.batch.take() {
                return Ok(batch);
            }
        }
        let mut state = Arc::clone(&self.live.state).lock_owned().await;
        // A deferred write that failed while this waited is recorded before its lock goes.
        if let Some(error) = lock_slot(&self.deferred).dropped.take() {
            return Err(error);
        }
        let draft = state.draft();
        Ok(Batch {
            state,
            draft,
            events: Vec::new(),
            messages: 0,
        })
    }

    /// Puts `batch` back after a refused change: deferred when it holds accepted events,
    /// else its lock is let go.
    fn put_back(&self, batch: Batch) {
        if batch.events.is_empty() {
            let Batch {
                mut state, draft, ..
            } = batch;
            state.discard(draft);
        } else {
            self.defer(batch);
        }
    }

    /// Leaves `batch` for the next call or the deferred writer, starting that writer unless
    /// one is on its way.
    fn defer(&self, batch: Batch) {
        let mut slot = lock_slot(&self.deferred);
        slot.batch = Some(batch);
        if !slot.writer_started {
            slot.writer_started = true;
            let sink = self.clone();
            tokio::spawn(async move { sink.write_deferred().await });
        }
    }

    /// The deferred writer: writes what is left in the slot, if a call did not take it.
    async fn write_deferred(&self) {
        let batch = {
            let mut slot = lock_slot(&self.deferred);
            slot.writer_started = false;
            slot.batch.take()
        };
        if let Some(batch) = batch {
            // The error, if any, is recorded for the next call inside `flush`.
            let _ = self.flush(batch, true).await;
        }
    }

    /// Writes `batch` over the revision this turn holds, then broadcasts its events. When
    /// another process wrote first, the events are applied again to what it wrote, unless the
    /// task finished or its turn passed to another process: then the turn has lost the task,
    /// its agent is stopped, and the events are refused. For a deferred batch the error is
    /// recorded for the next call before the task's lock is let go.
    async fn flush(&self, batch: Batch, deferred: bool) -> Result<(), A2aError> {
        let Batch {
            mut state,
            draft,
            events,
            messages,
        } = batch;
        let outcome = self.write_batch(&mut state, draft, events, messages).await;
        if deferred && let Err(error) = &outcome {
            lock_slot(&self.deferred).dropped = Some(A2aError::new(
                error.kind,
                format!(
                    "events reported earlier were not recorded: {}",
                    error.message
                ),
            ));
        }
        drop(state);
        outcome
    }

    /// The write of [`Self::flush`], tried again over what another writer left (at most
    /// `WRITE_ATTEMPTS` times); broadcasts the events once written.
    async fn write_batch(
        &self,
        state: &mut LiveState,
        mut draft: Arc<Task>,
        mut events: Vec<StreamResponse>,
        mut messages: usize,
    ) -> Result<(), A2aError> {
        for _ in 0..WRITE_ATTEMPTS {
            let owner = (!draft.status.state.is_settled())
                .then_some(self.owner.as_deref())
                .flatten();
            let write = TaskWrite::update(&self.live.tenant, &draft, state.revision)
                .with_new_messages(messages)
                .with_events(&events)
                .with_owner(owner);
            match self.store.write(&write).await {
                Ok(WriteOutcome::Written) => {
                    state.revision += 1;
                    state.commit(draft);
                    if let Some(sender) = &state.events {
                        for event in events {
                            // No receivers is fine: nobody is streaming this task.
                            let _ = sender.send(Arc::new(event));
                        }
                    }
                    return Ok(());
                }
                Ok(WriteOutcome::Stale) | Ok(WriteOutcome::KeyHeld(_)) => {
                    state.discard(draft);
                    (draft, events, messages) = self.rebase(state, &events).await?;
                }
                Err(error) => {
                    state.discard(draft);
                    lock_slot(&self.deferred).store_failed = true;
                    return Err(unrecorded(error));
                }
            }
        }
        state.discard(draft);
        Err(A2aError::resource_exhausted(
            "the task kept changing under this event; it was not recorded, retry shortly",
            crate::store::STORE_RETRY_AFTER,
        ))
    }

    /// After another writer moved the task: reads it again and, unless the turn lost it,
    /// applies `events` to it once more. The new draft, its events and how many history
    /// messages they add.
    async fn rebase(
        &self,
        state: &mut LiveState,
        events: &[StreamResponse],
    ) -> Result<(Arc<Task>, Vec<StreamResponse>, usize), A2aError> {
        let stored = self
            .store
            .load_stored(&self.live.tenant, &self.live.task_id)
            .await?;
        let Some(stored) = stored else {
            self.live.cancel.cancel();
            return Err(lost(&self.live.task_id, "was removed from the store"));
        };
        if let Some(why) = self.lost_to(&stored) {
            let terminal = stored.task.status.state.is_terminal();
            let status = stored.task.status.clone();
            state.adopt(stored.task, stored.revision);
            if terminal {
                // Streams on this turn end with what the task became.
                if let Some(sender) = &state.events {
                    let _ = sender.send(Arc::new(StreamResponse::StatusUpdate(
                        a2a_protocol_types::TaskStatusUpdateEvent {
                            task_id: self.live.task_id.clone(),
                            context_id: self.context_id.clone(),
                            status,
                            metadata: None,
                            generation: state.task.generation,
                        },
                    )));
                }
            }
            self.live.cancel.cancel();
            return Err(lost(&self.live.task_id, &why));
        }
        state.adopt(stored.task, stored.revision);
        let mut draft = state.draft();
        let task = Arc::make_mut(&mut draft);
        let messages_before = task.history.len();
        let mut replayed = Vec::with_capacity(events.len());
        for event in events {
            match replay(task, event) {
                Ok(mut again) => {
                    task.generation += 1;
                    StreamResponse::set_generation(&mut again, task.generation);
                    self.annotate_budget(task, &mut again);
                    replayed.push(again);
                }
                Err(error) => {
                    state.discard(draft);
                    return Err(error);
                }
            }
        }
        let added = task.history.len().saturating_sub(messages_before);
        Ok((draft, replayed, added))
    }

    /// Why this turn no longer has the task, if it does not: the task finished (a cancel or a
    /// recovery elsewhere), or another process runs its turn now.
    fn lost_to(&self, stored: &StoredTask) -> Option<String> {
        let state = stored.task.status.state;
        if state.is_terminal() {
            return Some(format!("is {state}"));
        }
        match (&stored.owner, &self.owner) {
            (Some(owner), Some(me)) if **owner != **me => {
                Some("is run by another server process now".to_owned())
            }
            _ => None,
        }
    }

    /// With a budget, status updates and the task's metadata report what is left and spent.
    fn annotate_budget(&self, task: &mut Task, event: &mut StreamResponse) {
        let (Some(budget), StreamResponse::StatusUpdate(update)) = (&self.budget, event) else {
            return;
        };
        let Ok(report) = serde_json::to_value(budget.report()) else {
            return;
        };
        update
            .metadata
            .get_or_insert_with(Default::default)
            .insert(BUDGET_METADATA_KEY.into(), report.clone());
        task.metadata
            .get_or_insert_with(Default::default)
            .insert(BUDGET_METADATA_KEY.into(), report);
    }

    /// Records `amount` spent on `meter` against the turn's budget (a no-op without one).
    /// Spending past a granted meter fails the task as budget-exhausted and returns the error
    /// the executor should stop with.
    ///
    /// ```
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// events.spend("tokens", 40).await?; // a no-op without a budget
    /// events.complete(None).await
    /// # }).unwrap();
    /// # assert_eq!(task.status.state, a2a_protocol_types::TaskState::Completed);
    /// ```
    pub async fn spend(&self, meter: &str, amount: u64) -> Result<(), A2aError> {
        let Some(budget) = &self.budget else {
            return Ok(());
        };
        match budget.spend(meter, amount) {
            None => Ok(()),
            Some(meter) => Err(self.exhaust(&meter).await),
        }
    }

    /// The budget report as it stands, when the turn has a budget.
    ///
    /// ```
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// assert!(events.budget().is_none(), "this turn was granted no budget");
    /// events.complete(None).await
    /// # }).unwrap();
    /// # assert_eq!(task.status.state, a2a_protocol_types::TaskState::Completed);
    /// ```
    pub fn budget(&self) -> Option<a2a_protocol_types::budget::BudgetReport> {
        self.budget.as_ref().map(|b| b.report())
    }

    /// Fails the task because `what` ("time" or a meter) ran out; returns the error to stop with.
    pub(crate) async fn exhaust(&self, what: &str) -> A2aError {
        if let Some(budget) = &self.budget {
            budget.exhaust(what);
        }
        let reason = if what == "time" {
            "budget exhausted: the granted time ran out before the work was done".to_owned()
        } else {
            format!("budget exhausted: the granted {what:?} ran out before the work was done")
        };
        if let Err(error) = self.fail(reason.clone()).await {
            tracing::debug!(%error, "the task settled before its budget ran out");
        }
        A2aError::new(a2a_protocol_types::ErrorKind::Internal, reason)
    }

    /// Moves the task to `state`, optionally with a message for the client.
    ///
    /// ```
    /// use a2a_protocol_types::TaskState;
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// events.status(TaskState::Working, None).await?;
    /// events.status(TaskState::Completed, Some(events.agent_message("ok"))).await
    /// # }).unwrap();
    /// # assert_eq!(task.status.state, TaskState::Completed);
    /// ```
    pub async fn status(&self, state: TaskState, message: Option<Message>) -> Result<(), A2aError> {
        let mut status = TaskStatus::new(state);
        status.message = message;
        self.publish(|task| lifecycle::apply_status(task, status.clone()))
            .await
    }

    /// Marks the task working.
    ///
    /// ```
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// events.working().await?;
    /// events.complete(None).await
    /// # }).unwrap();
    /// # assert_eq!(task.status.state, a2a_protocol_types::TaskState::Completed);
    /// ```
    pub async fn working(&self) -> Result<(), A2aError> {
        self.status(TaskState::Working, None).await
    }

    /// Completes the task, optionally with a final message.
    ///
    /// ```
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// events.complete(Some(events.agent_message("all done"))).await?;
    /// assert!(events.working().await.is_err(), "nothing follows the end");
    /// Ok(())
    /// # }).unwrap();
    /// # assert_eq!(task.status.state, a2a_protocol_types::TaskState::Completed);
    /// ```
    pub async fn complete(&self, message: Option<Message>) -> Result<(), A2aError> {
        self.status(TaskState::Completed, message).await
    }

    /// Fails the task, telling the client why.
    ///
    /// ```
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// events.fail("the upstream service is down").await
    /// # }).unwrap();
    /// # assert_eq!(task.status.state, a2a_protocol_types::TaskState::Failed);
    /// # assert_eq!(task.status.message.unwrap().text(), "the upstream service is down");
    /// ```
    pub async fn fail(&self, reason: impl Into<String>) -> Result<(), A2aError> {
        let message = self.agent_message(reason);
        self.status(TaskState::Failed, Some(message)).await
    }

    /// Rejects the task, telling the client why.
    ///
    /// ```
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// events.reject("I only translate").await
    /// # }).unwrap();
    /// # assert_eq!(task.status.state, a2a_protocol_types::TaskState::Rejected);
    /// ```
    pub async fn reject(&self, reason: impl Into<String>) -> Result<(), A2aError> {
        let message = self.agent_message(reason);
        self.status(TaskState::Rejected, Some(message)).await
    }

    /// Asks the client for more input; the task waits for a follow-up message.
    ///
    /// ```
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// events.require_input("Which language?").await
    /// # }).unwrap();
    /// # assert_eq!(task.status.state, a2a_protocol_types::TaskState::InputRequired);
    /// ```
    pub async fn require_input(&self, question: impl Into<String>) -> Result<(), A2aError> {
        let message = self.agent_message(question);
        self.status(TaskState::InputRequired, Some(message)).await
    }

    /// Marks the task canceled.
    ///
    /// ```
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// events.working().await?;
    /// events.cancel().await
    /// # }).unwrap();
    /// # assert_eq!(task.status.state, a2a_protocol_types::TaskState::Canceled);
    /// ```
    pub async fn cancel(&self) -> Result<(), A2aError> {
        self.status(TaskState::Canceled, None).await
    }

    /// Adds an artifact, or replaces the one with the same id.
    ///
    /// ```
    /// use a2a_protocol_types::{Artifact, Part};
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// events.artifact(Artifact::new("r", vec![Part::text("draft")])).await?;
    /// events.artifact(Artifact::new("r", vec![Part::text("final")])).await?;
    /// events.complete(None).await
    /// # }).unwrap();
    /// # assert_eq!(task.artifacts.len(), 1, "the same id replaces");
    /// # assert_eq!(task.artifacts[0].parts[0].as_text(), Some("final"));
    /// ```
    pub async fn artifact(&self, artifact: Artifact) -> Result<(), A2aError> {
        self.publish(|task| lifecycle::apply_artifact(task, artifact.clone(), false, true))
            .await
    }

    /// Appends a chunk to the artifact with the same id (creating it on the first chunk);
    /// `last_chunk` marks the final one.
    ///
    /// ```
    /// use a2a_protocol_types::{Artifact, Part};
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// events.artifact_chunk(Artifact::new("r", vec![Part::text("one ")]), false).await?;
    /// events.artifact_chunk(Artifact::new("r", vec![Part::text("two")]), true).await?;
    /// events.complete(None).await
    /// # }).unwrap();
    /// # assert_eq!(task.artifacts[0].parts.len(), 2, "chunks append");
    /// ```
    pub async fn artifact_chunk(&self, chunk: Artifact, last_chunk: bool) -> Result<(), A2aError> {
        self.publish(|task| lifecycle::apply_artifact(task, chunk.clone(), true, last_chunk))
            .await
    }

    /// Answers with a direct message instead of a task. Only before any other event.
    ///
    /// ```
    /// use a2a_protocol_server::{AgentExecutor, EventSink, RequestContext};
    /// use a2a_protocol_types::A2aError;
    /// # use a2a_protocol_server::{CallContext, RequestHandler};
    /// use a2a_protocol_types::Message;
    /// # use a2a_protocol_types::{SendMessageRequest, SendMessageResponse};
    ///
    /// struct Agent;
    ///
    /// #[async_trait::async_trait]
    /// impl AgentExecutor for Agent {
    ///     async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
    ///         events.reply(Message::agent_text("42")).await
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # let handler = RequestHandler::builder(Agent).build();
    /// # let answer = handler.send_message(SendMessageRequest::new(Message::user_text("hi")), &CallContext::default()).await.unwrap();
    /// # let SendMessageResponse::Message(reply) = answer else { panic!("a reply") };
    /// # assert_eq!(reply.text(), "42");
    /// # }
    /// ```
    pub async fn reply(&self, message: Message) -> Result<(), A2aError> {
        self.publish(|task| lifecycle::apply_reply(task, message.clone()))
            .await
    }

    /// Whether the store failed to record an event of this turn: what the agent did after its
    /// last recorded event is lost.
    pub(crate) fn lost_to_the_store(&self) -> bool {
        lock_slot(&self.deferred).store_failed
    }

    /// Fails the task unless it already settled; used when a turn ends badly.
    pub(crate) async fn settle_as_failed(&self, reason: &str) {
        if self.live.is_settled().await {
            return;
        }
        // A failed deferred write is reported to the first call, which then writes nothing:
        // the second writes the failure.
        let failed = match self.fail(reason).await {
            Err(_) if !self.live.is_settled().await => self.fail(reason).await,
            other => other,
        };
        if let Err(error) = failed {
            // Settled meanwhile by another hand (a cancel, a shutdown, a recovery): fine.
            if self.live.is_settled().await {
                tracing::debug!(task_id = %self.live.task_id, %error, "the task settled before it could be marked failed");
            } else {
                tracing::warn!(task_id = %self.live.task_id, %error, "could not mark the task failed");
            }
        }
    }
}

/// The error an agent gets for an event its turn may no longer record.
/// The change an event records, applied again to `task` (after another writer moved it).
fn replay(task: &mut Task, event: &StreamResponse) -> Result<StreamResponse, A2aError> {
    match event {
        StreamResponse::StatusUpdate(update) => {
            lifecycle::apply_status(task, update.status.clone())
        }
        StreamResponse::ArtifactUpdate(update) => lifecycle::apply_artifact(
            task,
            update.artifact.clone(),
            update.append,
            update.last_chunk,
        ),
        StreamResponse::Message(reply) => lifecycle::apply_reply(task, reply.clone()),
        StreamResponse::Task(_) => Err(A2aError::internal(
            "a whole task is not an event a turn publishes",
        )),
    }
}

/// The error an agent gets for an event the store would not record. The agent has run, so it
/// does not say, as a refused send does, that nothing ran.
fn unrecorded(error: StoreError) -> A2aError {
    let why = match &error {
        StoreError::Busy(_) => "the task store was busy or unreachable".to_owned(),
        StoreError::CapacityExceeded(what) | StoreError::FullUntil { what, .. } => {
            format!("the server is at capacity ({what})")
        }
        other => {
            tracing::error!(error = %other, "task store failure while a turn ran");
            "the task store failed (see the server log)".to_owned()
        }
    };
    A2aError::new(
        a2a_protocol_types::ErrorKind::Internal,
        format!("{why} and did not record this event; stop this turn"),
    )
}

fn lost(task_id: &TaskId, why: &str) -> A2aError {
    A2aError::new(
        a2a_protocol_types::ErrorKind::InvalidAgentResponse,
        format!("task {task_id} {why}; this event was not recorded and the turn should stop"),
    )
}
