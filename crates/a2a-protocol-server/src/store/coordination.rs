//! What several server processes sharing one store need of it beyond tasks and keys: who runs
//! each turn and whether that process still lives, cancel requests, client leases, and the
//! events of tasks running elsewhere.
//!
//! A store that one server uses alone needs none of it: its server keeps the same facts in
//! memory. The SQL stores implement it, so any number of servers may share one database.

use std::time::Duration;

use a2a_protocol_types::{StreamResponse, TaskId};
use async_trait::async_trait;
use tokio::sync::broadcast;

use super::StoreError;

/// A task by tenant and id.
///
/// ```
/// use a2a_protocol_server::store::TaskRef;
///
/// let task = TaskRef::new("acme", &"t-1".into());
/// assert_eq!(task.id.as_str(), "t-1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TaskRef {
    /// The tenant the task was created in.
    pub tenant: String,
    /// The task.
    pub id: TaskId,
}

impl TaskRef {
    /// The task `id` in `tenant`.
    pub fn new(tenant: &str, id: &TaskId) -> Self {
        Self {
            tenant: tenant.to_owned(),
            id: id.clone(),
        }
    }
}

/// Something another process did that this one may want to act on at once, rather than at its
/// next look at the store.
///
/// ```
/// use a2a_protocol_server::store::{Notice, TaskRef};
///
/// let notice = Notice::Changed { task: TaskRef { tenant: String::new(), id: "t-1".into() }, generation: 4 };
/// assert!(matches!(notice, Notice::Changed { generation: 4, .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Notice {
    /// The task recorded the event of this generation.
    Changed {
        /// The task.
        task: TaskRef,
        /// Its generation after the event.
        generation: u64,
    },
    /// A cancel of the task was asked for.
    CancelRequested(TaskRef),
}

/// Turn ownership, cancel requests, leases and event feeds, kept in a store that several
/// server processes share (see the module documentation).
///
/// Every method answers for all processes at once: a heartbeat written by one is read by the
/// others; a claim (of a lapsed lease, say) succeeds for one process only.
///
/// ```
/// use a2a_protocol_server::store::{InMemoryTaskStore, TaskStore};
///
/// // A store one server uses alone has nothing to coordinate.
/// assert!(InMemoryTaskStore::new().capabilities().coordination.is_none());
/// ```
#[async_trait]
pub trait Coordination: Send + Sync {
    /// Records that `owner` is alive for `ttl` more. Turns owned by a process whose heartbeat
    /// has lapsed are orphaned.
    async fn heartbeat(&self, owner: &str, ttl: Duration) -> Result<(), StoreError>;

    /// Forgets `owner`: whatever turns it still holds are orphaned at once.
    async fn retire(&self, owner: &str) -> Result<(), StoreError>;

    /// Up to `limit` unfinished tasks whose turn's owner is gone.
    async fn orphaned_turns(&self, limit: usize) -> Result<Vec<TaskRef>, StoreError>;

    /// Asks the process running the task's turn to cancel it.
    async fn request_cancel(&self, task: &TaskRef) -> Result<(), StoreError>;

    /// Unfinished tasks `owner` runs whose cancel was asked for.
    async fn cancel_requests(&self, owner: &str) -> Result<Vec<TaskRef>, StoreError>;

    /// Leases the task for `ttl`: it is to be canceled unless renewed within that time.
    async fn grant_lease(&self, task: &TaskRef, ttl: Duration) -> Result<(), StoreError>;

    /// Renews the task's lease for its granted time; false when it has none.
    async fn renew_lease(&self, task: &TaskRef) -> Result<bool, StoreError>;

    /// Takes up to `limit` unfinished tasks whose lease lapsed, clearing the leases so that
    /// only one process takes each.
    async fn take_lapsed_leases(&self, limit: usize) -> Result<Vec<TaskRef>, StoreError>;

    /// Records that `process` follows `task` from outside the process running it, for `ttl`:
    /// where the store pushes notices, writers of the task then notify it of each event.
    /// Followers renew it while they follow.
    async fn follow(&self, task: &TaskRef, process: &str, ttl: Duration) -> Result<(), StoreError>;

    /// The events the task recorded after `generation`, oldest first. Events are kept for a
    /// while, not forever: a follower that finds a gap starts again from the task.
    async fn events_after(
        &self,
        task: &TaskRef,
        generation: u64,
    ) -> Result<Vec<StreamResponse>, StoreError>;

    /// Notices pushed by the store as other processes act, when it can push them; `None` for
    /// a store whose followers look again every [`Coordination::poll_interval`].
    fn notices(&self) -> Option<broadcast::Receiver<Notice>>;

    /// How often to look at the store for what notices would tell (all the time without
    /// notices, as a safety net with them).
    fn poll_interval(&self) -> Duration;
}
