//! Versioned writes: every change to a task is written over the revision its writer read, so
//! two writers that raced cannot both win, and a writer that lost finds out.

use std::sync::Arc;

use a2a_protocol_types::push::TaskPushNotificationConfig;
use a2a_protocol_types::{StreamResponse, Task};

use super::{ClaimOutcome, KeyClaim};

/// A task as the store holds it: the A2A object, the revision writes are checked against, and
/// who runs its current turn.
///
/// ```
/// use a2a_protocol_server::store::{InMemoryTaskStore, StoredTask, TaskStore, TaskStoreExt, TaskWrite};
/// use a2a_protocol_types::{Task, TaskState, TaskStatus};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = InMemoryTaskStore::new();
/// let task = std::sync::Arc::new(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working)));
/// store.write(&TaskWrite::create("", &task)).await?;
/// let stored: StoredTask = store.load_stored("", &task.id).await?.expect("stored");
/// assert_eq!((stored.revision, stored.owner), (1, None));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StoredTask {
    /// The task, with its whole history.
    pub task: Task,
    /// Increased by every write; a write names the revision it read.
    pub revision: u64,
    /// The server process running the task's current turn, if one does.
    pub owner: Option<String>,
    /// Whether that process still answers for it (its heartbeat is current). A task whose
    /// owner is gone has an orphaned turn, which recovery settles.
    pub owner_alive: bool,
    /// A cancel was asked for while another process ran the turn.
    pub cancel_requested: bool,
    /// How many times the task's turn was run again after its process was lost.
    pub recoveries: u32,
    /// The authenticated caller that created the task; only that caller may see it when
    /// requests are authenticated. `None` for a task created without one.
    pub caller: Option<String>,
}

impl StoredTask {
    /// A task as a store without turn bookkeeping holds it: revision `revision`, no owner.
    ///
    /// ```
    /// use a2a_protocol_server::store::StoredTask;
    /// use a2a_protocol_types::{Task, TaskState, TaskStatus};
    ///
    /// let stored = StoredTask::new(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working)), 3);
    /// assert!(stored.owner.is_none() && !stored.cancel_requested);
    /// ```
    pub fn new(task: Task, revision: u64) -> Self {
        Self {
            task,
            revision,
            owner: None,
            owner_alive: false,
            cancel_requested: false,
            recoveries: 0,
            caller: None,
        }
    }

    /// Sets [`StoredTask::caller`].
    ///
    /// ```
    /// use a2a_protocol_server::store::StoredTask;
    /// use a2a_protocol_types::{Task, TaskState, TaskStatus};
    ///
    /// let task = Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working));
    /// let stored = StoredTask::new(task, 1).with_caller(Some("alice".into()));
    /// assert_eq!(stored.caller.as_deref(), Some("alice"));
    /// ```
    pub fn with_caller(mut self, caller: Option<String>) -> Self {
        self.caller = caller;
        self
    }
}

/// One change to a task, written only over the revision its writer read.
///
/// ```
/// use std::sync::Arc;
///
/// use a2a_protocol_server::store::{InMemoryTaskStore, TaskStore, TaskWrite, WriteOutcome};
/// use a2a_protocol_types::{Task, TaskState, TaskStatus};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = InMemoryTaskStore::new();
/// let mut task = Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working));
/// store.write(&TaskWrite::create("", &Arc::new(task.clone()))).await?;
/// task.status = TaskStatus::new(TaskState::Completed);
/// let done = Arc::new(task);
/// assert_eq!(store.write(&TaskWrite::update("", &done, 1)).await?, WriteOutcome::Written);
/// // A second writer that also read revision 1 lost the race.
/// assert_eq!(store.write(&TaskWrite::update("", &done, 1)).await?, WriteOutcome::Stale);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct TaskWrite<'a> {
    /// The request's tenant.
    pub tenant: &'a str,
    /// The task after the change, whole.
    pub task: &'a Arc<Task>,
    /// The revision the writer read; `None` creates the task.
    pub expected: Option<u64>,
    /// How many messages at the end of `task.history` this change adds. A store that keeps
    /// history apart appends only these.
    pub new_messages: usize,
    /// The events the change produced, in order, kept for followers in other processes and
    /// for push notifications. The last one's generation is `task.generation`, and each
    /// before it is one less ([`TaskWrite::event_generation`]): a turn's fast events may be
    /// written together.
    pub events: &'a [StreamResponse],
    /// The process that runs the task's turn after this write; `None` once it settled.
    pub owner: Option<&'a str>,
    /// An idempotency key to take in the same step: the write happens only if it is free.
    pub claim: Option<&'a KeyClaim>,
    /// A new count of recoveries, when this write runs the turn again after a lost process.
    pub recoveries: Option<u32>,
    /// The authenticated caller creating the task, recorded with it when it is created (and
    /// ignored by later writes: a task never changes hands).
    pub caller: Option<&'a str>,
    /// A push notification config sent with the message this write records, saved with the
    /// task in the same step (replacing the task's config with the same id), so no event of
    /// the turn it starts goes unnotified. Not subject to the per-task cap; the handler checks
    /// that beforehand.
    pub push_config: Option<&'a TaskPushNotificationConfig>,
}

impl<'a> TaskWrite<'a> {
    /// Creates `task` (with every message of its history).
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use a2a_protocol_server::store::TaskWrite;
    /// use a2a_protocol_types::{Task, TaskState, TaskStatus};
    ///
    /// let task = Arc::new(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Submitted)));
    /// assert!(TaskWrite::create("", &task).expected.is_none());
    /// ```
    pub fn create(tenant: &'a str, task: &'a Arc<Task>) -> Self {
        Self {
            tenant,
            task,
            expected: None,
            new_messages: task.history.len(),
            events: &[],
            owner: None,
            claim: None,
            recoveries: None,
            caller: None,
            push_config: None,
        }
    }

    /// Replaces the task written at revision `expected` with `task`.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use a2a_protocol_server::store::TaskWrite;
    /// use a2a_protocol_types::{Task, TaskState, TaskStatus};
    ///
    /// let task = Arc::new(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working)));
    /// assert_eq!(TaskWrite::update("", &task, 4).expected, Some(4));
    /// ```
    pub fn update(tenant: &'a str, task: &'a Arc<Task>, expected: u64) -> Self {
        Self {
            expected: Some(expected),
            new_messages: 0,
            ..Self::create(tenant, task)
        }
    }

    /// Sets [`TaskWrite::new_messages`].
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use a2a_protocol_server::store::TaskWrite;
    /// use a2a_protocol_types::{Message, Task, TaskState, TaskStatus};
    ///
    /// let mut task = Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working));
    /// task.history.push(Message::user_text("more"));
    /// let task = Arc::new(task);
    /// assert_eq!(TaskWrite::update("", &task, 1).with_new_messages(1).new_messages, 1);
    /// ```
    pub fn with_new_messages(mut self, count: usize) -> Self {
        self.new_messages = count;
        self
    }

    /// Sets [`TaskWrite::events`] to one event.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use a2a_protocol_server::store::TaskWrite;
    /// use a2a_protocol_types::{StreamResponse, Task, TaskState, TaskStatus};
    ///
    /// let task = Arc::new(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working)));
    /// let event = StreamResponse::Task(Task::clone(&task));
    /// assert_eq!(TaskWrite::update("", &task, 1).with_event(&event).events.len(), 1);
    /// ```
    pub fn with_event(mut self, event: &'a StreamResponse) -> Self {
        self.events = std::slice::from_ref(event);
        self
    }

    /// Sets [`TaskWrite::events`]: several events of one change, oldest first.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use a2a_protocol_server::store::TaskWrite;
    /// use a2a_protocol_types::{StreamResponse, Task, TaskState, TaskStatus};
    ///
    /// let mut task = Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working));
    /// task.generation = 3;
    /// let task = Arc::new(task);
    /// let events = [StreamResponse::Task(Task::clone(&task)), StreamResponse::Task(Task::clone(&task))];
    /// let write = TaskWrite::update("", &task, 1).with_events(&events);
    /// assert_eq!((write.event_generation(0), write.event_generation(1)), (2, 3));
    /// ```
    pub fn with_events(mut self, events: &'a [StreamResponse]) -> Self {
        self.events = events;
        self
    }

    /// The generation of `events[index]`: the last event's is the task's, each earlier one
    /// is one less.
    pub fn event_generation(&self, index: usize) -> u64 {
        let after = self.events.len().saturating_sub(index + 1);
        self.task
            .generation
            .saturating_sub(u64::try_from(after).unwrap_or(u64::MAX))
    }

    /// Sets [`TaskWrite::owner`].
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use a2a_protocol_server::store::TaskWrite;
    /// use a2a_protocol_types::{Task, TaskState, TaskStatus};
    ///
    /// let task = Arc::new(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working)));
    /// assert_eq!(TaskWrite::create("", &task).with_owner(Some("p-1")).owner, Some("p-1"));
    /// ```
    pub fn with_owner(mut self, owner: Option<&'a str>) -> Self {
        self.owner = owner;
        self
    }

    /// Sets [`TaskWrite::claim`].
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use a2a_protocol_server::store::{KeyClaim, KeyScope, TaskWrite};
    /// use a2a_protocol_types::{Task, TaskState, TaskStatus};
    ///
    /// let task = Arc::new(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Submitted)));
    /// let claim = KeyClaim {
    ///     scope: KeyScope::default(),
    ///     key: "8f14e45fceea167a5a36dedd4bea2543".parse()?,
    ///     message_id: "m-1".into(),
    ///     task_id: "t-1".into(),
    ///     charged_to: None,
    /// };
    /// assert!(TaskWrite::create("", &task).with_claim(Some(&claim)).claim.is_some());
    /// # Ok::<(), a2a_protocol_types::idempotency::KeyError>(())
    /// ```
    pub fn with_claim(mut self, claim: Option<&'a KeyClaim>) -> Self {
        self.claim = claim;
        self
    }

    /// Sets [`TaskWrite::recoveries`].
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use a2a_protocol_server::store::TaskWrite;
    /// use a2a_protocol_types::{Task, TaskState, TaskStatus};
    ///
    /// let task = Arc::new(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working)));
    /// assert_eq!(TaskWrite::update("", &task, 2).with_recoveries(1).recoveries, Some(1));
    /// ```
    pub fn with_recoveries(mut self, recoveries: u32) -> Self {
        self.recoveries = Some(recoveries);
        self
    }

    /// Sets [`TaskWrite::caller`].
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use a2a_protocol_server::store::TaskWrite;
    /// use a2a_protocol_types::{Task, TaskState, TaskStatus};
    ///
    /// let task = Arc::new(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Submitted)));
    /// assert_eq!(TaskWrite::create("", &task).with_caller(Some("alice")).caller, Some("alice"));
    /// ```
    pub fn with_caller(mut self, caller: Option<&'a str>) -> Self {
        self.caller = caller;
        self
    }
}

impl<'a> TaskWrite<'a> {
    /// Sets [`TaskWrite::push_config`].
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use a2a_protocol_server::store::TaskWrite;
    /// use a2a_protocol_types::push::TaskPushNotificationConfig;
    /// use a2a_protocol_types::{Task, TaskState, TaskStatus};
    ///
    /// let task = Arc::new(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Submitted)));
    /// let mut hook = TaskPushNotificationConfig::new("https://client.example/hook");
    /// hook.id = "t-1".into();
    /// hook.task_id = "t-1".into();
    /// assert!(TaskWrite::create("", &task).with_push_config(Some(&hook)).push_config.is_some());
    /// ```
    pub fn with_push_config(mut self, config: Option<&'a TaskPushNotificationConfig>) -> Self {
        self.push_config = config;
        self
    }
}

/// What a write did.
///
/// ```
/// use a2a_protocol_server::store::{ClaimOutcome, WriteOutcome};
///
/// let outcome = WriteOutcome::KeyHeld(ClaimOutcome::Conflict);
/// assert_ne!(outcome, WriteOutcome::Written, "nothing was written");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Written; the task is now at the next revision.
    Written,
    /// Nothing was written: the task moved past the expected revision, is terminal (a
    /// terminal task is never written over), or, when creating, exists already. Read it
    /// again and decide anew.
    Stale,
    /// Nothing was written: the write's idempotency key is held, by this message
    /// ([`ClaimOutcome::Replay`]) or another ([`ClaimOutcome::Conflict`]).
    KeyHeld(ClaimOutcome),
}

/// What [`TaskStore::load`](super::TaskStore::load) found.
///
/// ```
/// use a2a_protocol_server::store::{InMemoryTaskStore, Loaded, TaskStore, TaskWrite};
/// use a2a_protocol_types::{Task, TaskState, TaskStatus};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = InMemoryTaskStore::new();
/// let task = std::sync::Arc::new(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working)));
/// store.write(&TaskWrite::create("", &task)).await?;
/// assert!(matches!(store.load("", &task.id, Some(1)).await?, Loaded::Unchanged(_)));
/// assert!(matches!(store.load("", &task.id, Some(0)).await?, Loaded::Changed(_)));
/// assert!(matches!(store.load("", &task.id, None).await?, Loaded::Changed(_)));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Loaded {
    /// No such task.
    Missing,
    /// Still at the revision the caller holds. The task is given without its history, which
    /// the caller has; the rest is current.
    Unchanged(StoredTask),
    /// Changed since: the whole task.
    Changed(StoredTask),
}

/// The task without its history, copied field by field so the history is never copied.
pub(crate) fn head_of(task: &Task) -> Task {
    // Destructured in full, so a field added to `Task` cannot be forgotten here.
    let Task {
        id,
        context_id,
        status,
        artifacts,
        history: _,
        metadata,
        generation,
    } = task;
    Task {
        id: id.clone(),
        context_id: context_id.clone(),
        status: status.clone(),
        artifacts: artifacts.clone(),
        history: Vec::new(),
        metadata: metadata.clone(),
        generation: *generation,
    }
}
