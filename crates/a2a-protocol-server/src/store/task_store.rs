//! [`TaskStore`]: what a task store is. Reading tasks, the one atomic write, and the idempotency
//! key index; what a store offers beyond that is in its [`Capabilities`].

use std::sync::Arc;

use a2a_protocol_types::{Task, TaskId};
use async_trait::async_trait;

use super::{
    ClaimOutcome, Coordination, KeyClaim, Loaded, PushStore, StoreError, StoredTask, TaskPage,
    TaskQuery, TaskWrite, WriteOutcome,
};

/// Where tasks and idempotency keys are kept.
///
/// `tenant` partitions tasks in tenant-aware stores; other stores keep one namespace and ignore
/// it for tasks. Keys are always scoped by [`KeyScope`](super::KeyScope).
///
/// A store writes through one method, [`TaskStore::write`], which is atomic: the task, its new
/// messages and events, the key it claims and the push config sent with it are written
/// together or not at all. A store that cannot write atomically implements
/// [`KeyFirstStore`](super::KeyFirstStore) and is wrapped in
/// [`NonAtomicWrites`](super::NonAtomicWrites), whose name says what it gives up.
///
/// ```
/// use std::sync::Arc;
///
/// use a2a_protocol_server::store::{InMemoryTaskStore, TaskStore, TaskStoreExt, TaskWrite};
/// use a2a_protocol_types::{Task, TaskState, TaskStatus};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store: Arc<dyn TaskStore> = Arc::new(InMemoryTaskStore::new());
/// assert!(store.supports_idempotency());
/// let task = Arc::new(Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working)));
/// store.write(&TaskWrite::create("", &task)).await?;
/// assert_eq!(store.get("", &"t-1".into()).await?.unwrap().status.state, TaskState::Working);
/// # Ok(())
/// # }
/// ```
#[async_trait]
pub trait TaskStore: Send + Sync + 'static {
    /// The task with the facts a write is conditional on (its revision, its turn), if stored.
    /// With `known` set to the revision the caller holds, a task still at it comes back as
    /// [`Loaded::Unchanged`] without its history, so a process that keeps a task it just
    /// worked on does not read a long history again; a store may always answer
    /// [`Loaded::Changed`] instead.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, Loaded, TaskStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// assert_eq!(InMemoryTaskStore::new().load("", &"missing".into(), None).await?, Loaded::Missing);
    /// # Ok(())
    /// # }
    /// ```
    async fn load(
        &self,
        tenant: &str,
        id: &TaskId,
        known: Option<u64>,
    ) -> Result<Loaded, StoreError>;

    /// A page of the tasks `query` selects, newest status first.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, TaskQuery, TaskStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let page = InMemoryTaskStore::new().list("", &TaskQuery { page_size: 10, ..Default::default() }).await?;
    /// assert!(page.tasks.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    async fn list(&self, tenant: &str, query: &TaskQuery) -> Result<TaskPage, StoreError>;

    /// Writes one change to a task, atomically: created when [`TaskWrite::expected`] is
    /// `None`, else only over that revision; with [`TaskWrite::claim`], only if the key is free,
    /// and the key is then held together with the task.
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
    async fn write(&self, write: &TaskWrite<'_>) -> Result<WriteOutcome, StoreError>;

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
    /// holds it. A store at capacity answers [`StoreError::CapacityExceeded`]. A store whose
    /// [`write`](Self::write) takes a write's key itself needs this only for
    /// [`find_idempotency_key`](Self::find_idempotency_key)'s default.
    ///
    /// ```
    /// use a2a_protocol_server::store::{ClaimOutcome, InMemoryTaskStore, KeyClaim, KeyScope, TaskStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let claim = KeyClaim {
    ///     scope: KeyScope::default(),
    ///     key: "8f14e45fceea167a5a36dedd4bea2543".parse()?,
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
    ///     key: "8f14e45fceea167a5a36dedd4bea2543".parse()?,
    ///     message_id: "m-1".into(),
    ///     task_id: "t-1".into(),
    ///     charged_to: None,
    /// };
    /// store.claim_idempotency_key(&claim).await?;
    /// store.release_idempotency_key(&claim).await?;
    /// assert_eq!(store.claim_idempotency_key(&claim).await?, ClaimOutcome::Claimed, "free again");
    /// # Ok(())
    /// # }
    /// ```
    async fn release_idempotency_key(&self, claim: &KeyClaim) -> Result<(), StoreError> {
        let _ = claim;
        Err(StoreError::Unsupported)
    }

    /// Who holds `claim.key` already, without taking it: `None` when it is free. The default
    /// claims and, when the key was free, releases it again; a store with a key index to read
    /// should read it instead.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, KeyClaim, KeyScope, TaskStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let claim = KeyClaim {
    ///     scope: KeyScope::default(),
    ///     key: "8f14e45fceea167a5a36dedd4bea2543".parse()?,
    ///     message_id: "m-1".into(),
    ///     task_id: "t-1".into(),
    ///     charged_to: None,
    /// };
    /// assert_eq!(InMemoryTaskStore::new().find_idempotency_key(&claim).await?, None);
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

    /// What this store offers beyond tasks and keys. The default offers nothing, and promises
    /// that [`write`](Self::write) is atomic.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, TaskStore};
    ///
    /// let store = InMemoryTaskStore::new();
    /// let offered = store.capabilities();
    /// assert!(offered.push.is_some(), "push configs and their outbox");
    /// assert!(offered.coordination.is_none(), "one process only");
    /// ```
    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities::default()
    }
}

/// What a store offers beyond [`TaskStore`]'s tasks and keys.
///
/// ```
/// use a2a_protocol_server::store::Capabilities;
///
/// let none = Capabilities::default();
/// assert!(none.coordination.is_none() && none.push.is_none() && none.atomic_writes);
/// ```
#[derive(Clone, Copy)]
#[non_exhaustive]
pub struct Capabilities<'a> {
    /// Turn ownership, cancel requests, leases and event feeds kept in the store, for several
    /// server processes sharing it; `None` when one server uses the store alone and keeps
    /// those facts in its memory. See [`Coordination`].
    pub coordination: Option<&'a dyn Coordination>,
    /// Push notification configs and the outbox of their deliveries; `None` when the store
    /// keeps neither, and the agent then answers the push operations as unsupported.
    pub push: Option<&'a dyn PushStore>,
    /// Whether [`TaskStore::write`] takes a key and writes its task in one atomic step, as
    /// the contract asks. Only [`NonAtomicWrites`](super::NonAtomicWrites) says no: a held
    /// key whose task is missing may then mean its first send is still between the two.
    pub atomic_writes: bool,
}

impl Default for Capabilities<'_> {
    fn default() -> Self {
        Self {
            coordination: None,
            push: None,
            atomic_writes: true,
        }
    }
}

impl<'a> Capabilities<'a> {
    /// Offers `coordination`.
    pub fn with_coordination(mut self, coordination: &'a dyn Coordination) -> Self {
        self.coordination = Some(coordination);
        self
    }

    /// Offers push configs and their outbox.
    pub fn with_push(mut self, push: &'a dyn PushStore) -> Self {
        self.push = Some(push);
        self
    }
}

impl std::fmt::Debug for Capabilities<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capabilities")
            .field("coordination", &self.coordination.is_some())
            .field("push", &self.push.is_some())
            .field("atomic_writes", &self.atomic_writes)
            .finish()
    }
}

/// Conveniences every [`TaskStore`] has.
#[async_trait]
pub trait TaskStoreExt: TaskStore {
    /// The task, if stored.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, TaskStoreExt};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// assert!(InMemoryTaskStore::new().get("", &"missing".into()).await?.is_none());
    /// # Ok(())
    /// # }
    /// ```
    async fn get(&self, tenant: &str, id: &TaskId) -> Result<Option<Task>, StoreError> {
        Ok(self
            .load_stored(tenant, id)
            .await?
            .map(|stored| stored.task))
    }

    /// The task with its revision and turn, if stored.
    async fn load_stored(
        &self,
        tenant: &str,
        id: &TaskId,
    ) -> Result<Option<StoredTask>, StoreError> {
        Ok(match self.load(tenant, id, None).await? {
            Loaded::Missing => None,
            Loaded::Changed(stored) | Loaded::Unchanged(stored) => Some(stored),
        })
    }
}

impl<S: TaskStore + ?Sized> TaskStoreExt for S {}

/// The capabilities a store offers, named: what the server's own code asks of every store.
pub(crate) trait Offers {
    /// [`Capabilities::coordination`].
    fn coordination(&self) -> Option<&dyn Coordination>;
    /// [`Capabilities::push`].
    fn push(&self) -> Option<&dyn PushStore>;
}

impl<S: TaskStore + ?Sized> Offers for S {
    fn coordination(&self) -> Option<&dyn Coordination> {
        self.capabilities().coordination
    }

    fn push(&self) -> Option<&dyn PushStore> {
        self.capabilities().push
    }
}

// A shared store is a store: `Arc<S>` (and `Arc<dyn TaskStore>`) can be passed wherever a store
// is taken, and the same store kept for the retention sweeper or for tests. Every method is
// forwarded, defaults included: the shared store's own versions must run.
#[async_trait]
impl<S: TaskStore + ?Sized> TaskStore for Arc<S> {
    async fn load(
        &self,
        tenant: &str,
        id: &TaskId,
        known: Option<u64>,
    ) -> Result<Loaded, StoreError> {
        (**self).load(tenant, id, known).await
    }

    async fn list(&self, tenant: &str, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        (**self).list(tenant, query).await
    }

    async fn write(&self, write: &TaskWrite<'_>) -> Result<WriteOutcome, StoreError> {
        (**self).write(write).await
    }

    fn supports_idempotency(&self) -> bool {
        (**self).supports_idempotency()
    }

    async fn claim_idempotency_key(&self, claim: &KeyClaim) -> Result<ClaimOutcome, StoreError> {
        (**self).claim_idempotency_key(claim).await
    }

    async fn release_idempotency_key(&self, claim: &KeyClaim) -> Result<(), StoreError> {
        (**self).release_idempotency_key(claim).await
    }

    async fn find_idempotency_key(
        &self,
        claim: &KeyClaim,
    ) -> Result<Option<ClaimOutcome>, StoreError> {
        (**self).find_idempotency_key(claim).await
    }

    fn capabilities(&self) -> Capabilities<'_> {
        (**self).capabilities()
    }
}
