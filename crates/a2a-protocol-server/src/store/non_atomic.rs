//! For a store that cannot write a task and take its key in one atomic step: the composition
//! of the two, under a name that says what it gives up.

use std::sync::Arc;

use a2a_protocol_types::{Task, TaskId};
use async_trait::async_trait;

use super::{
    Capabilities, ClaimOutcome, KeyClaim, Loaded, StoreError, StoredTask, TaskPage, TaskQuery,
    TaskStore, TaskWrite, WriteOutcome,
};

/// A store that saves tasks whole and may keep an idempotency key index, but cannot write a
/// task and take its key in one atomic step (a key-value store without transactions, say).
/// It serves an agent wrapped in [`NonAtomicWrites`].
///
/// As with [`TaskStore`], a store honours keys only once it implements
/// [`claim_idempotency_key`](Self::claim_idempotency_key) and
/// [`release_idempotency_key`](Self::release_idempotency_key) and overrides
/// [`supports_idempotency`](Self::supports_idempotency); the claim must be atomic, and a key
/// must outlive its task.
///
/// ```
/// use std::collections::HashMap;
/// use std::sync::{Arc, Mutex};
///
/// use a2a_protocol_server::store::{KeyFirstStore, NonAtomicWrites, StoreError, TaskPage, TaskQuery, TaskStore};
/// use a2a_protocol_types::{Task, TaskId};
///
/// /// Tasks in a map, and no key index: keyed sends are refused, never run twice.
/// #[derive(Default)]
/// struct Notes(Mutex<HashMap<TaskId, Task>>);
///
/// #[async_trait::async_trait]
/// impl KeyFirstStore for Notes {
///     async fn get(&self, _tenant: &str, id: &TaskId) -> Result<Option<Task>, StoreError> {
///         Ok(self.0.lock().unwrap().get(id).cloned())
///     }
///     async fn list(&self, _tenant: &str, _query: &TaskQuery) -> Result<TaskPage, StoreError> {
///         Ok(TaskPage::default())
///     }
///     async fn save(&self, _tenant: &str, task: &Arc<Task>) -> Result<(), StoreError> {
///         self.0.lock().unwrap().insert(task.id.clone(), Task::clone(task));
///         Ok(())
///     }
/// }
///
/// let store = NonAtomicWrites(Notes::default());
/// assert!(!store.supports_idempotency());
/// assert!(!store.capabilities().atomic_writes);
/// ```
#[async_trait]
pub trait KeyFirstStore: Send + Sync + 'static {
    /// The task, if stored.
    async fn get(&self, tenant: &str, id: &TaskId) -> Result<Option<Task>, StoreError>;

    /// A page of the tasks `query` selects, newest status first.
    async fn list(&self, tenant: &str, query: &TaskQuery) -> Result<TaskPage, StoreError>;

    /// Stores `task` whole, in place of what was stored under its id.
    async fn save(&self, tenant: &str, task: &Arc<Task>) -> Result<(), StoreError>;

    /// Whether this store keeps the idempotency key index; see [`TaskStore::supports_idempotency`].
    fn supports_idempotency(&self) -> bool {
        false
    }

    /// See [`TaskStore::claim_idempotency_key`].
    async fn claim_idempotency_key(&self, claim: &KeyClaim) -> Result<ClaimOutcome, StoreError> {
        let _ = claim;
        Err(StoreError::Unsupported)
    }

    /// See [`TaskStore::release_idempotency_key`].
    async fn release_idempotency_key(&self, claim: &KeyClaim) -> Result<(), StoreError> {
        let _ = claim;
        Err(StoreError::Unsupported)
    }
}

/// A [`TaskStore`] over a [`KeyFirstStore`], whose writes are not atomic. A write claims its
/// key first, then checks that a task to create does not exist yet, then saves the task, and
/// frees the key when the save fails. It does not check revisions, and a key is held for a
/// while without its task: right for one server process, whose turns never overlap; a retry
/// that finds the first send between its claim and its save waits for it (bounded), then is
/// told to retry, and never runs again. Push configs and coordination are not offered.
#[derive(Debug, Default)]
pub struct NonAtomicWrites<S>(pub S);

#[async_trait]
impl<S: KeyFirstStore> TaskStore for NonAtomicWrites<S> {
    async fn load(
        &self,
        tenant: &str,
        id: &TaskId,
        _known: Option<u64>,
    ) -> Result<Loaded, StoreError> {
        Ok(match self.0.get(tenant, id).await? {
            Some(task) => Loaded::Changed(StoredTask::new(task, 0)),
            None => Loaded::Missing,
        })
    }

    async fn list(&self, tenant: &str, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        self.0.list(tenant, query).await
    }

    async fn write(&self, write: &TaskWrite<'_>) -> Result<WriteOutcome, StoreError> {
        if write.expected.is_none() && self.0.get(write.tenant, &write.task.id).await?.is_some() {
            return Ok(WriteOutcome::Stale);
        }
        if let Some(claim) = write.claim {
            match self.0.claim_idempotency_key(claim).await? {
                ClaimOutcome::Claimed => {}
                held => return Ok(WriteOutcome::KeyHeld(held)),
            }
        }
        if let Err(error) = self.0.save(write.tenant, write.task).await {
            if let Some(claim) = write.claim {
                // Nothing was written, so the key may be used again.
                let _ = self.0.release_idempotency_key(claim).await;
            }
            return Err(error);
        }
        Ok(WriteOutcome::Written)
    }

    fn supports_idempotency(&self) -> bool {
        self.0.supports_idempotency()
    }

    async fn claim_idempotency_key(&self, claim: &KeyClaim) -> Result<ClaimOutcome, StoreError> {
        self.0.claim_idempotency_key(claim).await
    }

    async fn release_idempotency_key(&self, claim: &KeyClaim) -> Result<(), StoreError> {
        self.0.release_idempotency_key(claim).await
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities {
            atomic_writes: false,
            ..Capabilities::default()
        }
    }
}
