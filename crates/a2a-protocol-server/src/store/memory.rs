//! The in-memory store: one namespace for every tenant's tasks, keys scoped by tenant.

use std::sync::{Mutex, MutexGuard};

use a2a_protocol_types::{Task, TaskId};
use async_trait::async_trait;

use super::shard::Shard;
use super::{ClaimOutcome, KeyClaim, StoreError, TaskPage, TaskQuery, TaskStore, TaskStoreConfig};

/// Tasks and idempotency keys in process memory, bounded by [`TaskStoreConfig`].
///
/// Tasks share one namespace whatever the request's tenant (use
/// [`TenantAwareInMemoryTaskStore`](super::TenantAwareInMemoryTaskStore) to partition them);
/// idempotency keys are always scoped by tenant and caller.
pub struct InMemoryTaskStore {
    shard: Mutex<Shard>,
}

impl InMemoryTaskStore {
    /// A store with the default limits.
    pub fn new() -> Self {
        Self::with_config(TaskStoreConfig::default())
    }

    /// A store with the given limits.
    pub fn with_config(config: TaskStoreConfig) -> Self {
        Self {
            shard: Mutex::new(Shard::new(config)),
        }
    }

    fn shard(&self) -> MutexGuard<'_, Shard> {
        // A panic while holding the lock cannot leave a shard half-updated in a way that
        // matters more than losing the store, so keep serving.
        self.shard.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many idempotency keys are held.
    pub fn idempotency_key_count(&self) -> usize {
        self.shard().key_count()
    }

    /// How many tasks are held.
    pub fn task_count(&self) -> usize {
        self.shard().task_count()
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
        self.shard().save(task)
    }

    async fn list(&self, _tenant: &str, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        Ok(self.shard().list(query))
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
}
