//! The tenant-aware in-memory store: a separate namespace, with its own limits, per tenant.

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, MutexGuard};

use a2a_protocol_types::{Task, TaskId};
use async_trait::async_trait;

use super::shard::Shard;
use super::{
    ClaimOutcome, KeyClaim, StoreError, StoredTask, TaskPage, TaskQuery, TaskStore,
    TaskStoreConfig, TaskWrite, WriteOutcome,
};

/// Like [`InMemoryTaskStore`](super::InMemoryTaskStore), but each tenant has its own tasks,
/// keys and limits: a task of tenant A is invisible to tenant B.
///
/// ```
/// use a2a_protocol_server::store::{TaskStore, TenantAwareInMemoryTaskStore};
/// use a2a_protocol_types::{Task, TaskState, TaskStatus};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = TenantAwareInMemoryTaskStore::new();
/// store.save("a", &Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working))).await?;
/// assert!(store.get("a", &"t-1".into()).await?.is_some());
/// assert!(store.get("b", &"t-1".into()).await?.is_none(), "tenant b cannot see it");
/// # Ok(())
/// # }
/// ```
pub struct TenantAwareInMemoryTaskStore {
    config: TaskStoreConfig,
    tenants: Mutex<HashMap<String, Arc<Mutex<Shard>>>>,
    /// The task bytes all tenants hold together.
    task_bytes: Arc<AtomicUsize>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl TenantAwareInMemoryTaskStore {
    /// A store with the default limits per tenant.
    ///
    /// ```
    /// use a2a_protocol_server::store::{TaskStore, TenantAwareInMemoryTaskStore};
    ///
    /// assert!(TenantAwareInMemoryTaskStore::new().supports_idempotency());
    /// ```
    pub fn new() -> Self {
        Self::with_config(TaskStoreConfig::default())
    }

    /// A store with the given limits per tenant.
    ///
    /// ```
    /// use a2a_protocol_server::store::{TaskStoreConfig, TenantAwareInMemoryTaskStore};
    ///
    /// let store = TenantAwareInMemoryTaskStore::with_config(
    ///     TaskStoreConfig::default().with_max_idempotency_keys(1_000), // per tenant
    /// );
    /// assert_eq!(store.idempotency_key_count("acme"), 0);
    /// ```
    pub fn with_config(config: TaskStoreConfig) -> Self {
        Self {
            config,
            tenants: Mutex::new(HashMap::new()),
            task_bytes: Arc::default(),
        }
    }

    /// The tenant's namespace, made if it is new and there is room: at
    /// [`TaskStoreConfig::max_tenants`], tenants with nothing left are dropped first.
    fn shard(&self, tenant: &str) -> Result<Arc<Mutex<Shard>>, StoreError> {
        let mut tenants = lock(&self.tenants);
        if let Some(shard) = tenants.get(tenant) {
            return Ok(Arc::clone(shard));
        }
        if tenants.len() >= self.config.max_tenants {
            // Only a namespace nobody holds right now may go: every holder got it from this
            // map under this lock, so a count of one means no write is under way in it.
            tenants.retain(|_, shard| {
                Arc::strong_count(shard) > 1
                    || !shard
                        .try_lock()
                        .map(|mut s| s.is_empty_after_expiry())
                        .unwrap_or(false)
            });
            if tenants.len() >= self.config.max_tenants {
                return Err(StoreError::CapacityExceeded("tenants"));
            }
        }
        let shard = Arc::new(Mutex::new(Shard::new(
            self.config.clone(),
            Arc::clone(&self.task_bytes),
        )));
        tenants.insert(tenant.to_owned(), Arc::clone(&shard));
        Ok(shard)
    }

    /// How many tenants the store holds now.
    ///
    /// ```
    /// use a2a_protocol_server::store::TenantAwareInMemoryTaskStore;
    ///
    /// assert_eq!(TenantAwareInMemoryTaskStore::new().tenant_count(), 0);
    /// ```
    pub fn tenant_count(&self) -> usize {
        lock(&self.tenants).len()
    }

    fn existing(&self, tenant: &str) -> Option<Arc<Mutex<Shard>>> {
        lock(&self.tenants).get(tenant).cloned()
    }

    /// How many idempotency keys `tenant` holds.
    ///
    /// ```
    /// use a2a_protocol_server::store::{KeyClaim, KeyScope, TaskStore, TenantAwareInMemoryTaskStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = TenantAwareInMemoryTaskStore::new();
    /// let claim = KeyClaim {
    ///     scope: KeyScope { tenant: "acme".into(), caller: None },
    ///     key: "8f14e45fceea167a5a36dedd4bea2543".into(),
    ///     message_id: "m-1".into(),
    ///     task_id: "t-1".into(),
    ///     charged_to: None,
    /// };
    /// store.claim_idempotency_key(&claim).await?;
    /// assert_eq!((store.idempotency_key_count("acme"), store.idempotency_key_count("other")), (1, 0));
    /// # Ok(())
    /// # }
    /// ```
    pub fn idempotency_key_count(&self, tenant: &str) -> usize {
        self.existing(tenant).map_or(0, |s| lock(&s).key_count())
    }
}

impl std::fmt::Debug for TenantAwareInMemoryTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TenantAwareInMemoryTaskStore")
            .finish_non_exhaustive()
    }
}

impl Default for TenantAwareInMemoryTaskStore {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl TaskStore for TenantAwareInMemoryTaskStore {
    async fn get(&self, tenant: &str, id: &TaskId) -> Result<Option<Task>, StoreError> {
        Ok(self.existing(tenant).and_then(|s| lock(&s).get(id)))
    }

    async fn save(&self, tenant: &str, task: &Task) -> Result<(), StoreError> {
        lock(&*self.shard(tenant)?).save(Arc::new(task.clone()))
    }

    async fn save_shared(&self, tenant: &str, task: &Arc<Task>) -> Result<(), StoreError> {
        lock(&*self.shard(tenant)?).save(Arc::clone(task))
    }

    async fn list(&self, tenant: &str, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        Ok(self
            .existing(tenant)
            .map(|s| lock(&s).list(query))
            .unwrap_or_default())
    }

    async fn load(&self, tenant: &str, id: &TaskId) -> Result<Option<StoredTask>, StoreError> {
        Ok(self.existing(tenant).and_then(|s| lock(&s).load(id)))
    }

    async fn write(&self, write: &TaskWrite<'_>) -> Result<WriteOutcome, StoreError> {
        lock(&*self.shard(write.tenant)?).write(write)
    }

    async fn load_if_changed(
        &self,
        tenant: &str,
        id: &TaskId,
        revision: u64,
    ) -> Result<super::Loaded, StoreError> {
        Ok(self.existing(tenant).map_or(super::Loaded::Missing, |s| {
            lock(&s).load_if_changed(id, revision)
        }))
    }

    fn supports_idempotency(&self) -> bool {
        true
    }

    async fn claim_idempotency_key(&self, claim: &KeyClaim) -> Result<ClaimOutcome, StoreError> {
        lock(&*self.shard(&claim.scope.tenant)?).claim(claim)
    }

    async fn release_idempotency_key(&self, claim: &KeyClaim) -> Result<(), StoreError> {
        if let Some(shard) = self.existing(&claim.scope.tenant) {
            lock(&shard).release(claim);
        }
        Ok(())
    }

    async fn find_idempotency_key(
        &self,
        claim: &KeyClaim,
    ) -> Result<Option<ClaimOutcome>, StoreError> {
        Ok(self
            .existing(&claim.scope.tenant)
            .and_then(|s| lock(&s).find_key(claim)))
    }

    fn atomic_writes(&self) -> bool {
        true
    }
}
