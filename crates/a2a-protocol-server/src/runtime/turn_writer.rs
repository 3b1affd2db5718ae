//! The turn writer behind an [`EventSink`](super::EventSink): it applies each event to a
//! draft of the task, batches the events a fast turn reports, writes them over the revision
//! the turn holds, applies them again when another writer went first (rebase), and broadcasts
//! them once stored.

use std::sync::Arc;

use a2a_protocol_types::budget::BUDGET_METADATA_KEY;
use a2a_protocol_types::{A2aError, ContextId, StreamResponse, Task, TaskId};
use tokio::sync::OwnedMutexGuard;

use super::budget::BudgetState;
use super::lifecycle;
use super::live::{LiveState, LiveTask};
use crate::store::TaskStoreExt;
use crate::store::{StoreError, StoredTask, TaskStore, TaskWrite, WriteOutcome};

/// How many times an event is applied again over a newer version of the task before the
/// writer gives up. Writes race only with a cancel or a recovery from another process, so a
/// second try nearly always settles it.
const WRITE_ATTEMPTS: usize = 5;

/// Writes one turn's events. Cheap to clone: clones share the batch in progress.
#[derive(Clone)]
pub(super) struct TurnWriter {
    pub(super) live: Arc<LiveTask>,
    store: Arc<dyn TaskStore>,
    pub(super) context_id: ContextId,
    pub(super) budget: Option<Arc<BudgetState>>,
    /// This process, recorded as the turn's owner while the task is unsettled, when the store
    /// keeps turn owners.
    owner: Option<Arc<str>>,
    /// Events accepted but not yet written, shared by the writer's clones.
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

impl TurnWriter {
    pub(super) fn new(
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

    /// Applies `change` to the task and records its event. An event that settles the task
    /// (or fails to) is written, with every event accepted before it, before this returns,
    /// and then broadcast. Any other event is accepted at once and written soon after, by a
    /// task of its own, or together with the next event if that comes first: a fast turn's
    /// events share one write. Broadcasts follow the write, so no stream sees an event that
    /// is not stored; an error writing deferred events is returned by the next call.
    pub(super) async fn publish(
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

    /// Whether the store failed to record an event of this turn: what the agent did after its
    /// last recorded event is lost.
    pub(super) fn lost_to_the_store(&self) -> bool {
        lock_slot(&self.deferred).store_failed
    }
}

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
