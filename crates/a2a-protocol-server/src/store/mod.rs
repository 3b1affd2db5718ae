//! Task stores: where tasks and idempotency keys live.
//!
//! [`TaskStore`] is object-safe and async. Every bundled store honours idempotency keys; a
//! custom store does not until it implements [`TaskStore::claim_idempotency_key`] and
//! [`TaskStore::release_idempotency_key`] and overrides [`TaskStore::supports_idempotency`].
//! That default is deliberate: a store without the index produces a missing card advertisement
//! and refused keyed sends, never a send that quietly runs twice.
//!
//! Two obligations for an implementation of the key index:
//! - the claim is atomic: two racing claims of one key in one scope have exactly one winner;
//! - a key is never deleted with its task: a retry after the task is gone must find the key
//!   and get `TaskNotFound`, not a free key and a second run.

mod config;
mod coordination;
pub(crate) mod footprint;
mod key_index;
mod memory;
pub(crate) mod metered;
mod page_token;
mod push_configs;
mod push_outbox;
mod retention;
mod shard;
mod shared;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
mod tenant;
mod write;

use std::sync::Arc;
use std::time::Duration;

use a2a_protocol_types::push::TaskPushNotificationConfig;
use a2a_protocol_types::{A2aError, ContextId, MessageId, Task, TaskId, TaskState, Timestamp};
use async_trait::async_trait;

pub use config::TaskStoreConfig;
pub use coordination::{Coordination, Notice, TaskRef};
pub use memory::InMemoryTaskStore;
pub use page_token::PageCursor;
pub use push_configs::PushConfigSaved;
pub(crate) use push_outbox::epoch_millis;
pub use push_outbox::{DeliverySettled, PushDelivery};
pub use retention::{PurgeReport, Retention, RetentionPolicy, RetentionSweeper};
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use sql::SqlStoreOptions;
#[cfg(feature = "postgres")]
pub use sql::postgres::PostgresTaskStore;
#[cfg(feature = "sqlite")]
pub use sql::sqlite::SqliteTaskStore;
pub(crate) use write::head_of;
pub use write::{Loaded, StoredTask, TaskWrite, WriteOutcome};

/// Whom an idempotency key belongs to: the tenant, and the authenticated caller when known.
///
/// ```
/// use a2a_protocol_server::store::KeyScope;
///
/// let scope = KeyScope { tenant: "acme".into(), caller: Some("alice".into()) };
/// assert_ne!(scope, KeyScope { tenant: "acme".into(), caller: None }, "another caller, another scope");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct KeyScope {
    /// The request's tenant; empty for none.
    pub tenant: String,
    /// The authenticated caller, when the server knows one.
    pub caller: Option<String>,
}

/// An attempt to take an idempotency key for a send.
///
/// ```
/// use a2a_protocol_server::store::{KeyClaim, KeyScope};
///
/// let claim = KeyClaim {
///     scope: KeyScope::default(),
///     key: "8f14e45fceea167a5a36dedd4bea2543".into(),
///     message_id: "m-1".into(),
///     task_id: "t-1".into(),
///     charged_to: None,
/// };
/// assert!(claim.scope.tenant.is_empty(), "no tenant");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyClaim {
    /// Whose key it is.
    pub scope: KeyScope,
    /// The key, already validated.
    pub key: String,
    /// The id of the message being sent.
    pub message_id: MessageId,
    /// The id the task will have if this claim wins.
    pub task_id: TaskId,
    /// Whose quota of held keys this key counts against: the authenticated caller, else the
    /// client's address; `None` when neither is known. It never changes what the key means
    /// (that is [`KeyClaim::scope`]), only who may hold how many (see
    /// [`TaskStoreConfig::max_idempotency_keys_per_holder`]).
    pub charged_to: Option<String>,
}

/// What a claim found.
///
/// ```
/// use a2a_protocol_server::store::{ClaimOutcome, InMemoryTaskStore, KeyClaim, KeyScope, TaskStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = InMemoryTaskStore::new();
/// let claim = |message: &str, task: &str| KeyClaim {
///     scope: KeyScope::default(),
///     key: "8f14e45fceea167a5a36dedd4bea2543".into(),
///     message_id: message.into(),
///     task_id: task.into(),
///     charged_to: None,
/// };
/// assert_eq!(store.claim_idempotency_key(&claim("m-1", "t-1")).await?, ClaimOutcome::Claimed);
/// assert_eq!(
///     store.claim_idempotency_key(&claim("m-1", "t-2")).await?,
///     ClaimOutcome::Replay("t-1".into()),
/// );
/// assert_eq!(store.claim_idempotency_key(&claim("m-2", "t-3")).await?, ClaimOutcome::Conflict);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// The key was free and is now held for this send.
    Claimed,
    /// The key is held by the same message: a retry. Answer with this task.
    Replay(TaskId),
    /// The key is held by a different message: the key was reused across two sends.
    Conflict,
}

/// Which tasks `ListTasks` wants, already validated.
///
/// ```
/// use a2a_protocol_server::store::TaskQuery;
/// use a2a_protocol_types::TaskState;
///
/// let query = TaskQuery { status: Some(TaskState::Working), page_size: 20, ..TaskQuery::default() };
/// assert!(query.cursor.is_none(), "the first page");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskQuery {
    /// Only tasks in this context.
    pub context_id: Option<ContextId>,
    /// Only tasks in this state.
    pub status: Option<TaskState>,
    /// Only tasks whose status changed after this time.
    pub status_timestamp_after: Option<Timestamp>,
    /// Page size, 1..=100.
    pub page_size: usize,
    /// Where the previous page ended.
    pub cursor: Option<PageCursor>,
    /// Only tasks this authenticated caller created ([`StoredTask::caller`]); `None` lists
    /// every caller's tasks.
    pub caller: Option<String>,
}

/// One page of tasks, newest status first.
///
/// ```
/// use a2a_protocol_server::store::{InMemoryTaskStore, TaskQuery, TaskStore};
/// use a2a_protocol_types::{Task, TaskState, TaskStatus};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = InMemoryTaskStore::new();
/// for id in ["t-1", "t-2", "t-3"] {
///     store.save("", &Task::new(id, "c-1", TaskStatus::new(TaskState::Completed))).await?;
/// }
/// let page = store.list("", &TaskQuery { page_size: 2, ..TaskQuery::default() }).await?;
/// assert_eq!((page.tasks.len(), page.total_size), (2, 3));
/// let rest = store.list("", &TaskQuery { page_size: 2, cursor: page.next, ..TaskQuery::default() }).await?;
/// assert_eq!(rest.tasks.len(), 1);
/// assert!(rest.next.is_none(), "the last page");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskPage {
    /// The tasks.
    pub tasks: Vec<Task>,
    /// Where this page ended, when more tasks follow.
    pub next: Option<PageCursor>,
    /// How many tasks match the query in all.
    pub total_size: usize,
}

/// Why a store operation failed.
///
/// ```
/// use a2a_protocol_server::store::StoreError;
/// use a2a_protocol_types::{A2aError, ErrorKind};
///
/// let busy: A2aError = StoreError::Busy("the pool is exhausted".into()).into();
/// assert_eq!(busy.kind, ErrorKind::ResourceExhausted, "retryable: nothing ran");
/// let broken: A2aError = StoreError::Corrupt("bad row".into()).into();
/// assert_eq!(broken.kind, ErrorKind::Internal);
/// assert!(!broken.message.contains("bad row"), "internals stay in the server log");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store is busy or briefly unreachable; the same call may succeed later.
    #[error("task store is busy: {0}")]
    Busy(String),
    /// A bounded store is full of entries it may not evict; retry later.
    #[error("task store is at capacity: {0}")]
    CapacityExceeded(&'static str),
    /// A bounded store is full of entries it may not evict until `retry_after` has passed,
    /// when the first of them expires.
    #[error("task store is at capacity: {what}; room in {retry_after:?}")]
    FullUntil {
        /// What is full.
        what: &'static str,
        /// When room frees up, at the earliest.
        retry_after: Duration,
    },
    /// The store does not implement the operation.
    #[error("the task store does not support this operation")]
    Unsupported,
    /// Stored data could not be read back.
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// The store was created partitioned by tenant and opened as one namespace, or the other
    /// way round.
    #[error("the store was opened in the wrong mode: {0}")]
    ModeMismatch(String),
    /// Any other backend failure.
    #[error("task store failed: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// How long a client is told to wait after a retryable store refusal.
pub const STORE_RETRY_AFTER: Duration = Duration::from_secs(1);

impl From<StoreError> for A2aError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Busy(_) => A2aError::resource_exhausted(
                "the task store is busy; nothing ran, retry shortly",
                STORE_RETRY_AFTER,
            ),
            StoreError::CapacityExceeded(what) => A2aError::resource_exhausted(
                format!("the server is at capacity ({what}); nothing ran, retry later"),
                STORE_RETRY_AFTER,
            ),
            StoreError::FullUntil { what, retry_after } => A2aError::resource_exhausted(
                format!(
                    "the server is at capacity ({what}); nothing ran, retry in {} s",
                    retry_after.as_secs_f64().ceil().max(1.0)
                ),
                retry_after.max(STORE_RETRY_AFTER),
            ),
            StoreError::Unsupported => {
                A2aError::unsupported_operation("the task store does not support this operation")
            }
            other => {
                tracing::error!(error = %other, "task store failure");
                A2aError::internal("the task store failed; see the server log")
            }
        }
    }
}

/// Where tasks and idempotency keys are kept.
///
/// `tenant` partitions tasks in tenant-aware stores; other stores keep one namespace and ignore
/// it for tasks. Keys are always scoped by [`KeyScope`].
///
/// ```
/// use std::sync::Arc;
///
/// use a2a_protocol_server::store::{InMemoryTaskStore, TaskStore};
/// use a2a_protocol_types::{Task, TaskState, TaskStatus};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store: Arc<dyn TaskStore> = Arc::new(InMemoryTaskStore::new());
/// assert!(store.supports_idempotency());
/// store.save("", &Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working))).await?;
/// assert_eq!(store.get("", &"t-1".into()).await?.unwrap().status.state, TaskState::Working);
/// # Ok(())
/// # }
/// ```
#[async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// The task, if stored.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, TaskStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// assert!(InMemoryTaskStore::new().get("", &"missing".into()).await?.is_none());
    /// # Ok(())
    /// # }
    /// ```
    async fn get(&self, tenant: &str, id: &TaskId) -> Result<Option<Task>, StoreError>;

    /// Inserts or replaces the task.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, TaskStore};
    /// use a2a_protocol_types::{Task, TaskState, TaskStatus};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = InMemoryTaskStore::new();
    /// let mut task = Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working));
    /// store.save("", &task).await?;
    /// task.status = TaskStatus::new(TaskState::Completed);
    /// store.save("", &task).await?;
    /// assert_eq!(store.get("", &task.id).await?.unwrap().status.state, TaskState::Completed);
    /// # Ok(())
    /// # }
    /// ```
    async fn save(&self, tenant: &str, task: &Task) -> Result<(), StoreError>;

    /// Inserts or replaces the task, which the caller shares rather than hands over. A store
    /// that keeps tasks in memory can hold on to the `Arc` instead of copying the task; the
    /// default saves a copy with [`TaskStore::save`].
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use a2a_protocol_server::store::{InMemoryTaskStore, TaskStore};
    /// use a2a_protocol_types::{Task, TaskState, TaskStatus};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = InMemoryTaskStore::new();
    /// let task = Arc::new(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working)));
    /// store.save_shared("", &task).await?;
    /// assert_eq!(store.get("", &task.id).await?.as_ref(), Some(&*task));
    /// # Ok(())
    /// # }
    /// ```
    async fn save_shared(&self, tenant: &str, task: &Arc<Task>) -> Result<(), StoreError> {
        self.save(tenant, task).await
    }

    /// A page of tasks matching `query`, newest status first.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, TaskQuery, TaskStore};
    /// use a2a_protocol_types::{Task, TaskState, TaskStatus};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = InMemoryTaskStore::new();
    /// store.save("", &Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working))).await?;
    /// store.save("", &Task::new("t-2", "c-2", TaskStatus::new(TaskState::Completed))).await?;
    /// let query = TaskQuery { context_id: Some("c-2".into()), page_size: 10, ..TaskQuery::default() };
    /// let page = store.list("", &query).await?;
    /// assert_eq!(page.tasks[0].id.as_str(), "t-2");
    /// # Ok(())
    /// # }
    /// ```
    async fn list(&self, tenant: &str, query: &TaskQuery) -> Result<TaskPage, StoreError>;

    /// The task with its revision and turn, if stored. The default reads it with
    /// [`TaskStore::get`], at revision 0, with no owner.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, TaskStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// assert!(InMemoryTaskStore::new().load("", &"missing".into()).await?.is_none());
    /// # Ok(())
    /// # }
    /// ```
    async fn load(&self, tenant: &str, id: &TaskId) -> Result<Option<StoredTask>, StoreError> {
        Ok(self
            .get(tenant, id)
            .await?
            .map(|task| StoredTask::new(task, 0)))
    }

    /// The task, unless it is still at `revision`: then only what a caller holding that
    /// revision does not have (everything but the history), so a process that keeps a task it
    /// just worked on does not read a long history again. The default loads it whole.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, Loaded, TaskStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let loaded = InMemoryTaskStore::new().load_if_changed("", &"missing".into(), 3).await?;
    /// assert_eq!(loaded, Loaded::Missing);
    /// # Ok(())
    /// # }
    /// ```
    async fn load_if_changed(
        &self,
        tenant: &str,
        id: &TaskId,
        revision: u64,
    ) -> Result<Loaded, StoreError> {
        Ok(match self.load(tenant, id).await? {
            None => Loaded::Missing,
            Some(mut stored) if stored.revision == revision => {
                stored.task.history.clear();
                Loaded::Unchanged(stored)
            }
            Some(stored) => Loaded::Changed(stored),
        })
    }

    /// Writes one change to a task: created when [`TaskWrite::expected`] is `None`, else only
    /// over that revision; with [`TaskWrite::claim`], only if the key is free, and the key is
    /// then held together with the task.
    ///
    /// The bundled stores do all of it in one atomic step. The default, for a store that
    /// implements only [`TaskStore::save`] and the key index, claims the key, checks that a
    /// task to create does not exist yet, and saves; it does not check revisions, so it is
    /// right for one server process, whose turns never overlap.
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
    /// let task = Arc::new(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Submitted)));
    /// assert_eq!(store.write(&TaskWrite::create("", &task)).await?, WriteOutcome::Written);
    /// assert_eq!(store.write(&TaskWrite::create("", &task)).await?, WriteOutcome::Stale, "it exists");
    /// # Ok(())
    /// # }
    /// ```
    async fn write(&self, write: &TaskWrite<'_>) -> Result<WriteOutcome, StoreError> {
        if write.expected.is_none() && self.get(write.tenant, &write.task.id).await?.is_some() {
            return Ok(WriteOutcome::Stale);
        }
        if let Some(claim) = write.claim {
            match self.claim_idempotency_key(claim).await? {
                ClaimOutcome::Claimed => {}
                held => return Ok(WriteOutcome::KeyHeld(held)),
            }
        }
        if let Err(error) = self.save_shared(write.tenant, write.task).await {
            if let Some(claim) = write.claim {
                // Nothing was written, so the key may be used again.
                let _ = self.release_idempotency_key(claim).await;
            }
            return Err(error);
        }
        if let Some(config) = write.push_config {
            self.save_push_config(write.tenant, config, usize::MAX)
                .await?;
        }
        Ok(WriteOutcome::Written)
    }

    /// Turn ownership, cancel requests, leases and event feeds kept in the store, for several
    /// server processes sharing it; `None` (the default) when one server uses the store alone
    /// and keeps those facts in its memory. See [`Coordination`].
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, TaskStore};
    ///
    /// assert!(InMemoryTaskStore::new().coordination().is_none());
    /// ```
    fn coordination(&self) -> Option<&dyn Coordination> {
        None
    }

    /// Whether this store implements the idempotency key index. The agent card advertises the
    /// idempotency extension exactly when this is true.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, TaskStore};
    ///
    /// assert!(InMemoryTaskStore::new().supports_idempotency());
    /// ```
    fn supports_idempotency(&self) -> bool {
        false
    }

    /// Atomically takes `claim.key` in `claim.scope` for `claim.message_id`, or reports who
    /// holds it. A store at capacity answers [`StoreError::CapacityExceeded`].
    ///
    /// ```
    /// use a2a_protocol_server::store::{ClaimOutcome, InMemoryTaskStore, KeyClaim, KeyScope, TaskStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let claim = KeyClaim {
    ///     scope: KeyScope::default(),
    ///     key: "8f14e45fceea167a5a36dedd4bea2543".into(),
    ///     message_id: "m-1".into(),
    ///     task_id: "t-1".into(),
    ///     charged_to: None,
    /// };
    /// assert_eq!(InMemoryTaskStore::new().claim_idempotency_key(&claim).await?, ClaimOutcome::Claimed);
    /// # Ok(())
    /// # }
    /// ```
    async fn claim_idempotency_key(&self, claim: &KeyClaim) -> Result<ClaimOutcome, StoreError> {
        let _ = claim;
        Err(StoreError::Unsupported)
    }

    /// Frees a key this send claimed, when the send failed before the agent started. Frees
    /// nothing if the key is now held for another task.
    ///
    /// ```
    /// use a2a_protocol_server::store::{ClaimOutcome, InMemoryTaskStore, KeyClaim, KeyScope, TaskStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = InMemoryTaskStore::new();
    /// let claim = KeyClaim {
    ///     scope: KeyScope::default(),
    ///     key: "8f14e45fceea167a5a36dedd4bea2543".into(),
    ///     message_id: "m-1".into(),
    ///     task_id: "t-1".into(),
    ///     charged_to: None,
    /// };
    /// store.claim_idempotency_key(&claim).await?;
    /// store.release_idempotency_key(&claim).await?; // The send failed before the agent started.
    /// assert_eq!(store.claim_idempotency_key(&claim).await?, ClaimOutcome::Claimed, "free again");
    /// # Ok(())
    /// # }
    /// ```
    async fn release_idempotency_key(&self, claim: &KeyClaim) -> Result<(), StoreError> {
        let _ = claim;
        Err(StoreError::Unsupported)
    }

    /// Who holds `claim`'s key, without taking it: a replay, a conflict, or `None` when the
    /// key is free. The default takes the key and, finding it free, releases it again.
    ///
    /// ```
    /// use a2a_protocol_server::store::{ClaimOutcome, InMemoryTaskStore, KeyClaim, KeyScope, TaskStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = InMemoryTaskStore::new();
    /// let claim = KeyClaim {
    ///     scope: KeyScope::default(),
    ///     key: "8f14e45fceea167a5a36dedd4bea2543".into(),
    ///     message_id: "m-1".into(),
    ///     task_id: "t-1".into(),
    ///     charged_to: None,
    /// };
    /// assert_eq!(store.find_idempotency_key(&claim).await?, None, "free");
    /// store.claim_idempotency_key(&claim).await?;
    /// assert_eq!(store.find_idempotency_key(&claim).await?, Some(ClaimOutcome::Replay("t-1".into())));
    /// # Ok(())
    /// # }
    /// ```
    async fn find_idempotency_key(
        &self,
        claim: &KeyClaim,
    ) -> Result<Option<ClaimOutcome>, StoreError> {
        match self.claim_idempotency_key(claim).await? {
            ClaimOutcome::Claimed => {
                self.release_idempotency_key(claim).await?;
                Ok(None)
            }
            held => Ok(Some(held)),
        }
    }

    /// Whether [`TaskStore::write`] takes a key and writes its task in one atomic step, so a
    /// held key always has its task (unless retention removed it). False by default: a retry
    /// that finds a key without its task may then be racing the first attempt, and waits.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, TaskStore};
    ///
    /// assert!(InMemoryTaskStore::new().atomic_writes());
    /// ```
    fn atomic_writes(&self) -> bool {
        false
    }

    /// Whether this store keeps push notification configs (the four methods below). False by
    /// default: a server over a store without them answers every push operation with
    /// `PushNotificationNotSupported` and says so on its card.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, TaskStore};
    ///
    /// assert!(InMemoryTaskStore::new().supports_push_configs());
    /// ```
    fn supports_push_configs(&self) -> bool {
        false
    }

    /// Saves `config` for its task (`config.task_id`), replacing the task's config with the
    /// same id. The config goes with its task: a task deleted (by retention, say) takes its
    /// configs along. A new id is refused once the task has `max_per_task` configs.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, PushConfigSaved, TaskStore};
    /// use a2a_protocol_types::push::TaskPushNotificationConfig;
    /// use a2a_protocol_types::{Task, TaskState, TaskStatus};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = InMemoryTaskStore::new();
    /// store.save("", &Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working))).await?;
    /// let config: TaskPushNotificationConfig = serde_json::from_str(
    ///     r#"{"id": "cfg-1", "taskId": "t-1", "url": "https://client.example/hook"}"#,
    /// )?;
    /// assert_eq!(store.save_push_config("", &config, 10).await?, PushConfigSaved::Saved);
    /// let mut other = config.clone();
    /// other.task_id = "t-2".into();
    /// assert_eq!(store.save_push_config("", &other, 10).await?, PushConfigSaved::TaskMissing);
    /// # Ok(())
    /// # }
    /// ```
    async fn save_push_config(
        &self,
        tenant: &str,
        config: &TaskPushNotificationConfig,
        max_per_task: usize,
    ) -> Result<PushConfigSaved, StoreError> {
        let _ = (tenant, config, max_per_task);
        Err(StoreError::Unsupported)
    }

    /// The config `id` of task `task_id`, if there is one.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, TaskStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = InMemoryTaskStore::new();
    /// assert_eq!(store.get_push_config("", &"t-1".into(), "cfg-1").await?, None);
    /// # Ok(())
    /// # }
    /// ```
    async fn get_push_config(
        &self,
        tenant: &str,
        task_id: &TaskId,
        id: &str,
    ) -> Result<Option<TaskPushNotificationConfig>, StoreError> {
        let _ = (tenant, task_id, id);
        Err(StoreError::Unsupported)
    }

    /// Up to `limit` configs of task `task_id`, in order of id, starting after id `after`
    /// (from the first when `None`).
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, TaskStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = InMemoryTaskStore::new();
    /// assert!(store.list_push_configs("", &"t-1".into(), None, 10).await?.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    async fn list_push_configs(
        &self,
        tenant: &str,
        task_id: &TaskId,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TaskPushNotificationConfig>, StoreError> {
        let _ = (tenant, task_id, after, limit);
        Err(StoreError::Unsupported)
    }

    /// Deletes the config `id` of task `task_id`; whether there was one.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, TaskStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = InMemoryTaskStore::new();
    /// assert!(!store.delete_push_config("", &"t-1".into(), "cfg-1").await?, "nothing to delete");
    /// # Ok(())
    /// # }
    /// ```
    async fn delete_push_config(
        &self,
        tenant: &str,
        task_id: &TaskId,
        id: &str,
    ) -> Result<bool, StoreError> {
        let _ = (tenant, task_id, id);
        Err(StoreError::Unsupported)
    }

    /// Claims up to `limit` notifications that are due, for `claimant` (a server process)
    /// for `lease`: no other claimant gets them until the lease runs out or `claimant`
    /// settles them. Only the oldest waiting notification of each task and config is due, so
    /// a webhook receives a task's events in order. A store that keeps push configs keeps
    /// this outbox too: [`TaskStore::write`] queues a notification per config of the task
    /// in the same step that records each event ([`TaskWrite::events`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::store::{DeliverySettled, InMemoryTaskStore, TaskStore, TaskWrite};
    /// use a2a_protocol_types::push::TaskPushNotificationConfig;
    /// use a2a_protocol_types::{StreamResponse, Task, TaskState, TaskStatus};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = InMemoryTaskStore::new();
    /// let mut task = Task::new("t-1", "c-1", TaskStatus::new(TaskState::Submitted));
    /// store.write(&TaskWrite::create("", &Arc::new(task.clone()))).await?;
    /// let config: TaskPushNotificationConfig =
    ///     serde_json::from_str(r#"{"id": "cfg-1", "taskId": "t-1", "url": "https://client.example/hook"}"#)?;
    /// store.save_push_config("", &config, 10).await?;
    ///
    /// task.status = TaskStatus::new(TaskState::Completed);
    /// task.generation = 2;
    /// let event = StreamResponse::Task(task.clone());
    /// store.write(&TaskWrite::update("", &Arc::new(task), 1).with_event(&event)).await?;
    ///
    /// let lease = Duration::from_secs(30);
    /// let claimed = store.claim_push_deliveries("p-1", lease, 10).await?;
    /// assert_eq!(claimed[0].delivery_id(), "t-1:cfg-1:2");
    /// assert!(store.claim_push_deliveries("p-2", lease, 10).await?.is_empty(), "claimed by p-1");
    /// store.settle_push_delivery("p-1", &claimed[0], &DeliverySettled::Delivered).await?;
    /// # Ok(())
    /// # }
    /// ```
    async fn claim_push_deliveries(
        &self,
        claimant: &str,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<PushDelivery>, StoreError> {
        let _ = (claimant, lease, limit);
        Err(StoreError::Unsupported)
    }

    /// Records how an attempt at a notification `claimant` claimed ended: delivered (it
    /// leaves the outbox), to be retried later, or dead (kept for
    /// [`TaskStore::dead_push_deliveries`]). Nothing happens if the claim has passed to
    /// another claimant meanwhile.
    ///
    /// ```
    /// use a2a_protocol_server::store::{DeliverySettled, InMemoryTaskStore, PushDelivery, TaskStore};
    /// use a2a_protocol_types::push::TaskPushNotificationConfig;
    /// use a2a_protocol_types::{StreamResponse, Task, TaskState, TaskStatus};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let config: TaskPushNotificationConfig =
    ///     serde_json::from_str(r#"{"id": "cfg-1", "taskId": "t-1", "url": "https://client.example/hook"}"#)?;
    /// let event = StreamResponse::Task(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working)));
    /// let unclaimed = PushDelivery::new("", config, 2, event);
    /// let store = InMemoryTaskStore::new();
    /// store.settle_push_delivery("p-1", &unclaimed, &DeliverySettled::Delivered).await?; // nothing to do
    /// # Ok(())
    /// # }
    /// ```
    async fn settle_push_delivery(
        &self,
        claimant: &str,
        delivery: &PushDelivery,
        settled: &DeliverySettled,
    ) -> Result<(), StoreError> {
        let _ = (claimant, delivery, settled);
        Err(StoreError::Unsupported)
    }

    /// Up to `limit` notifications that were given up on, newest first.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, TaskStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// assert!(InMemoryTaskStore::new().dead_push_deliveries(10).await?.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    async fn dead_push_deliveries(&self, limit: usize) -> Result<Vec<PushDelivery>, StoreError> {
        let _ = limit;
        Err(StoreError::Unsupported)
    }
}
