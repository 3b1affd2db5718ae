//! Tasks with a turn in progress in this process: their current state and the broadcast every
//! stream on them follows. A task is live from the start of its first concurrent turn to the
//! end of its last; then its streams end and the store alone holds it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use a2a_protocol_types::{StreamResponse, Task, TaskId};
use tokio::sync::{Mutex as AsyncMutex, Notify, broadcast};
use tokio_util::sync::CancellationToken;

use super::refresh::refresh;
use crate::store::head_of;

use crate::TaskIdHasher;

/// One tenant's live tasks.
type TenantTasks = HashMap<TaskId, Arc<LiveTask>, TaskIdHasher>;

/// How many tasks whose turn ended are kept, as last written, for their next follow-up...
const RECENT_TASKS: usize = 256;
/// ...and how many bytes of them at most, so large tasks cannot make the cache a memory sink.
const RECENT_BYTES: usize = 32 * 1024 * 1024;

/// Tasks kept after their turn ended, by tenant and id, with the revision they were written at
/// and their size, oldest first; and the bytes they hold together.
#[derive(Default)]
struct RecentTasks {
    tasks: hashlink::LinkedHashMap<(String, TaskId), (Arc<Task>, u64, usize)>,
    bytes: usize,
}

impl RecentTasks {
    fn take(&mut self, key: &(String, TaskId)) -> Option<(Arc<Task>, u64)> {
        let (task, revision, size) = self.tasks.remove(key)?;
        self.bytes = self.bytes.saturating_sub(size);
        Some((task, revision))
    }

    /// Keeps `task`, dropping the oldest while there are too many or they hold too much.
    fn keep(&mut self, key: (String, TaskId), task: Arc<Task>, revision: u64) {
        self.take(&key);
        let size = crate::store::footprint::task_bytes(&task);
        if size > RECENT_BYTES {
            return;
        }
        self.tasks.insert(key, (task, revision, size));
        self.bytes += size;
        while self.tasks.len() > RECENT_TASKS || self.bytes > RECENT_BYTES {
            let Some((_, (_, _, dropped))) = self.tasks.pop_front() else {
                break;
            };
            self.bytes = self.bytes.saturating_sub(dropped);
        }
    }
}

/// Events a stream may fall behind by before it is sent a fresh snapshot instead. Events are
/// shared (`Arc`), so a slot costs a pointer; tasks emit a handful of events a turn.
const STREAM_BUFFER: usize = 32;

/// One event, shared by every stream following the task.
pub(crate) type SharedEvent = Arc<StreamResponse>;

pub(crate) struct LiveState {
    /// The task as last saved; shared with stores that keep tasks in memory.
    pub(crate) task: Arc<Task>,
    /// The store revision `task` was written at: the next write is conditional on it.
    pub(crate) revision: u64,
    /// Taken when the last turn ends, which ends every stream.
    pub(crate) events: Option<broadcast::Sender<SharedEvent>>,
    /// The version before `task`, kept to become the next draft once nothing else holds it.
    spare: Option<Arc<Task>>,
    /// The draft out now has `task`'s history, lent rather than copied.
    history_lent: bool,
}

impl LiveState {
    /// A private copy of the task to change and then [`commit`](Self::commit) or
    /// [`discard`](Self::discard). Changing a copy means a refused change or a failed save
    /// leaves the task as it was. When nothing else holds the current version, the copy
    /// borrows its history (given back on discard), so an event costs the same however long
    /// the history. Otherwise the copy is the previous version, refreshed, when nothing holds
    /// it any more (the store has moved on to the current one); or else a fresh copy.
    pub(crate) fn draft(&mut self) -> Arc<Task> {
        if let Some(current) = Arc::get_mut(&mut self.task) {
            let mut draft = head_of(current);
            draft.history = std::mem::take(&mut current.history);
            self.history_lent = true;
            return Arc::new(draft);
        }
        if let Some(mut spare) = self.spare.take()
            && let Some(copy) = Arc::get_mut(&mut spare)
        {
            refresh(copy, &self.task);
            return spare;
        }
        Arc::new(Task::clone(&self.task))
    }

    /// Makes a saved draft the current task.
    pub(crate) fn commit(&mut self, draft: Arc<Task>) {
        self.history_lent = false;
        self.spare = Some(std::mem::replace(&mut self.task, draft));
    }

    /// Puts back a draft that was not saved (and the history it borrowed); the next draft
    /// refreshes it in full.
    pub(crate) fn discard(&mut self, mut draft: Arc<Task>) {
        if std::mem::take(&mut self.history_lent) {
            let lent = match Arc::get_mut(&mut draft) {
                Some(draft) => std::mem::take(&mut draft.history),
                None => draft.history.clone(),
            };
            Arc::make_mut(&mut self.task).history = lent;
        }
        self.spare = Some(draft);
    }

    /// Takes the task as another writer left it in the store.
    pub(crate) fn adopt(&mut self, task: Task, revision: u64) {
        self.history_lent = false;
        self.spare = Some(std::mem::replace(&mut self.task, Arc::new(task)));
        self.revision = revision;
    }
}

/// A task with a turn in progress.
pub(crate) struct LiveTask {
    pub(crate) tenant: String,
    pub(crate) task_id: TaskId,
    /// The authenticated caller that created the task, if one did.
    pub(crate) caller: Option<Arc<str>>,
    pub(crate) state: Arc<AsyncMutex<LiveState>>,
    pub(crate) cancel: CancellationToken,
    /// Set by the first cancel of the turn, so a cancel requested again while one is under
    /// way (another process asking twice, say) is not run twice.
    pub(crate) canceling: std::sync::atomic::AtomicBool,
    /// Set when shutdown gives the turn up to be run again by another process: the turn's end
    /// then writes nothing.
    pub(crate) abandoned: std::sync::atomic::AtomicBool,
    /// Turns in progress; changed only under the registry's lock.
    turns: Mutex<usize>,
}

impl LiveTask {
    /// The current task and a receiver of every event after it, taken atomically.
    pub(crate) async fn subscribe(&self) -> (Task, Option<broadcast::Receiver<SharedEvent>>) {
        let (task, events) = self.subscribe_shared().await;
        (Task::clone(&task), events)
    }

    /// Like [`LiveTask::subscribe`], sharing the task rather than copying it.
    pub(crate) async fn subscribe_shared(
        &self,
    ) -> (Arc<Task>, Option<broadcast::Receiver<SharedEvent>>) {
        let state = self.state.lock().await;
        (
            Arc::clone(&state.task),
            state.events.as_ref().map(broadcast::Sender::subscribe),
        )
    }

    /// The current task.
    pub(crate) async fn snapshot(&self) -> Task {
        Task::clone(&self.state.lock().await.task)
    }

    /// The current task, shared rather than copied.
    pub(crate) async fn shared(&self) -> Arc<Task> {
        Arc::clone(&self.state.lock().await.task)
    }

    /// Whether the task is terminal or waits for input, without copying it.
    pub(crate) async fn is_settled(&self) -> bool {
        self.state.lock().await.task.status.state.is_settled()
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

fn new_live(tenant: &str, task: &Arc<Task>, revision: u64, caller: Option<&str>) -> Arc<LiveTask> {
    let (events, _) = broadcast::channel(STREAM_BUFFER);
    Arc::new(LiveTask {
        tenant: tenant.to_owned(),
        task_id: task.id.clone(),
        caller: caller.map(Arc::from),
        state: Arc::new(AsyncMutex::new(LiveState {
            task: Arc::clone(task),
            revision,
            events: Some(events),
            spare: None,
            history_lent: false,
        })),
        cancel: CancellationToken::new(),
        canceling: std::sync::atomic::AtomicBool::new(false),
        abandoned: std::sync::atomic::AtomicBool::new(false),
        turns: Mutex::new(1),
    })
}

/// The live tasks of this process, by tenant, then by task: lookups borrow their keys.
#[derive(Default)]
pub(crate) struct Registry {
    live: Mutex<HashMap<String, TenantTasks>>,
    /// Woken whenever a task becomes live, for subscribers waiting between its turns.
    became_live: Notify,
    /// Woken whenever a task stops being live, for a shutdown waiting for turns to end.
    went_idle: Notify,
    /// Tasks whose turn ended here lately, with the revision they were written at: a
    /// follow-up that finds the store still at that revision takes the task from here
    /// instead of reading its whole history again.
    recent: Mutex<RecentTasks>,
}

impl Registry {
    /// Starts a turn on `task` (stored at `revision`, created by `caller`), making it live if
    /// it is not.
    pub(crate) fn begin_turn(
        &self,
        tenant: &str,
        task: &Arc<Task>,
        revision: u64,
        caller: Option<&str>,
    ) -> Arc<LiveTask> {
        let mut live = lock(&self.live);
        if let Some(entry) = live.get(tenant).and_then(|tasks| tasks.get(&task.id)) {
            *lock(&entry.turns) += 1;
            return Arc::clone(entry);
        }
        let entry = new_live(tenant, task, revision, caller);
        tenant_tasks(&mut live, tenant).insert(task.id.clone(), Arc::clone(&entry));
        self.became_live.notify_waiters();
        entry
    }

    /// Starts a turn on `task` (stored at `revision`, created by `caller`) only if no turn is
    /// in progress on it.
    pub(crate) fn try_begin_exclusive(
        &self,
        tenant: &str,
        task: &Arc<Task>,
        revision: u64,
        caller: Option<&str>,
    ) -> Option<Arc<LiveTask>> {
        let mut live = lock(&self.live);
        if live
            .get(tenant)
            .is_some_and(|tasks| tasks.contains_key(&task.id))
        {
            return None;
        }
        let entry = new_live(tenant, task, revision, caller);
        tenant_tasks(&mut live, tenant).insert(task.id.clone(), Arc::clone(&entry));
        self.became_live.notify_waiters();
        Some(entry)
    }

    /// Resolves when some task next becomes live (create the future before checking).
    pub(crate) fn next_live(&self) -> tokio::sync::futures::Notified<'_> {
        self.became_live.notified()
    }

    /// Every task with a turn in progress.
    pub(crate) fn all(&self) -> Vec<Arc<LiveTask>> {
        lock(&self.live)
            .values()
            .flat_map(|tasks| tasks.values().cloned())
            .collect()
    }

    /// Waits until no turn is in progress in this process.
    pub(crate) async fn idle(&self) {
        loop {
            let went_idle = self.went_idle.notified();
            tokio::pin!(went_idle);
            went_idle.as_mut().enable();
            if lock(&self.live).is_empty() {
                return;
            }
            went_idle.await;
        }
    }

    /// Takes the task as this process last wrote it, and the revision, if it ended a turn
    /// here lately. (Taken, not copied: the turn that takes it is then its only holder, and
    /// lends its history to each change instead of copying it.)
    pub(crate) fn take_recent(&self, tenant: &str, id: &TaskId) -> Option<(Arc<Task>, u64)> {
        lock(&self.recent).take(&(tenant.to_owned(), id.clone()))
    }

    /// The task's live state, if a turn is in progress.
    pub(crate) fn get(&self, tenant: &str, id: &TaskId) -> Option<Arc<LiveTask>> {
        lock(&self.live)
            .get(tenant)
            .and_then(|tasks| tasks.get(id))
            .cloned()
    }

    /// Ends a turn. After the last one the task leaves the registry and its streams end.
    pub(crate) async fn end_turn(&self, task: &Arc<LiveTask>) {
        let last = {
            let mut live = lock(&self.live);
            let mut turns = lock(&task.turns);
            *turns = turns.saturating_sub(1);
            let last = *turns == 0;
            if last && let Some(tasks) = live.get_mut(task.tenant.as_str()) {
                tasks.remove(&task.task_id);
                if tasks.is_empty() {
                    live.remove(task.tenant.as_str());
                }
            }
            last
        };
        if last {
            let mut state = task.state.lock().await;
            state.events = None;
            let (kept, revision) = (Arc::clone(&state.task), state.revision);
            drop(state);
            // A settled task takes no follow-up: nothing to keep it for.
            if !kept.status.state.is_terminal() {
                lock(&self.recent).keep(
                    (task.tenant.clone(), task.task_id.clone()),
                    kept,
                    revision,
                );
            }
            self.went_idle.notify_waiters();
        }
    }
}

/// A tenant's live tasks, created on first use. (The key costs nothing for the empty tenant.)
fn tenant_tasks<'a>(
    live: &'a mut HashMap<String, TenantTasks>,
    tenant: &str,
) -> &'a mut TenantTasks {
    live.entry(tenant.to_owned()).or_default()
}
