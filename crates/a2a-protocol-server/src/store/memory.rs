//! The in-memory store: one namespace for every tenant's tasks, keys scoped by tenant.

use std::sync::{Arc, Mutex, MutexGuard};

use a2a_protocol_types::{Task, TaskId};
use async_trait::async_trait;

use super::shard::Shard;
use super::{
    ClaimOutcome, KeyClaim, StoreError, StoredTask, TaskPage, TaskQuery, TaskStore,
    TaskStoreConfig, TaskWrite, WriteOutcome,
};

/// Tasks and idempotency keys in process memory, bounded by [`TaskStoreConfig`].
///
/// Tasks share one namespace whatever the request's tenant (use
/// [`TenantAwareInMemoryTaskStore`](super::TenantAwareInMemoryTaskStore) to partition them);
/// idempotency keys are always scoped by tenant and caller.
///
/// ```
/// use std::sync::Arc;
///
/// use a2a_protocol_server::agents::EchoAgent;
/// use a2a_protocol_server::store::InMemoryTaskStore;
/// use a2a_protocol_server::RequestHandler;
///
/// let handler = RequestHandler::builder(EchoAgent::new())
///     .with_store(Arc::new(InMemoryTaskStore::new()))
///     .build();
/// assert!(handler.store().supports_idempotency());
/// ```
pub struct InMemoryTaskStore {
    shard: Mutex<Shard>,
}

impl InMemoryTaskStore {
    /// A store with the default limits.
    ///
    /// ```
    /// use a2a_protocol_server::store::InMemoryTaskStore;
    ///
    /// assert_eq!(InMemoryTaskStore::new().task_count(), 0);
    /// ```
    pub fn new() -> Self {
        Self::with_config(TaskStoreConfig::default())
    }

    /// A store with the given limits.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, TaskStoreConfig};
    ///
    /// let store = InMemoryTaskStore::with_config(TaskStoreConfig::default().with_max_tasks(100));
    /// assert_eq!(store.idempotency_key_count(), 0);
    /// ```
    pub fn with_config(config: TaskStoreConfig) -> Self {
        Self {
            shard: Mutex::new(Shard::new(config, Arc::default())),
        }
    }

    fn shard(&self) -> MutexGuard<'_, Shard> {
        // A panic while holding the lock cannot leave a shard half-updated in a way that
        // matters more than losing the store, so keep serving.
        self.shard.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many idempotency keys are held.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, KeyClaim, KeyScope, TaskStore};
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
    /// assert_eq!(store.idempotency_key_count(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn idempotency_key_count(&self) -> usize {
        self.shard().key_count()
    }

    /// How many tasks are held.
    ///
    /// ```
    /// use a2a_protocol_server::store::{InMemoryTaskStore, TaskStore};
    /// use a2a_protocol_types::{Task, TaskState, TaskStatus};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = InMemoryTaskStore::new();
    /// store.save("", &Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working))).await?;
    /// assert_eq!(store.task_count(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn task_count(&self) -> usize {
        self.shard().task_count()
    }
}

impl std::fmt::Debug for InMemoryTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemoryTaskStore").finish_non_exhaustive()
    }
}

impl Default for InMemoryTaskStore {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl TaskStore for InMemoryTaskStore {
    async fn get(&self, _tenant: &str, id: &TaskId) -> Result<Option<Task>, StoreError> {
        Ok(self.shard().get(id))
    }

    async fn save(&self, _tenant: &str, task: &Task) -> Result<(), StoreError> {
        self.shard().save(Arc::new(task.clone()))
    }

    async fn save_shared(&self, _tenant: &str, task: &Arc<Task>) -> Result<(), StoreError> {
        self.shard().save(Arc::clone(task))
    }

    async fn list(&self, _tenant: &str, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        Ok(self.shard().list(query))
    }

    async fn load(&self, _tenant: &str, id: &TaskId) -> Result<Option<StoredTask>, StoreError> {
        Ok(self.shard().load(id))
    }

    async fn write(&self, write: &TaskWrite<'_>) -> Result<WriteOutcome, StoreError> {
        self.shard().write(write)
    }

    async fn load_if_changed(
        &self,
        _tenant: &str,
        id: &TaskId,
        revision: u64,
    ) -> Result<super::Loaded, StoreError> {
        Ok(self.shard().load_if_changed(id, revision))
    }

    fn supports_idempotency(&self) -> bool {
        true
    }

    async fn claim_idempotency_key(&self, claim: &KeyClaim) -> Result<ClaimOutcome, StoreError> {
        self.shard().claim(claim)
    }

    async fn release_idempotency_key(&self, claim: &KeyClaim) -> Result<(), StoreError> {
        self.shard().release(claim);
        Ok(())
    }

    async fn find_idempotency_key(
        &self,
        claim: &KeyClaim,
    ) -> Result<Option<ClaimOutcome>, StoreError> {
        Ok(self.shard().find_key(claim))
    }

    fn atomic_writes(&self) -> bool {
        true
    }
}
