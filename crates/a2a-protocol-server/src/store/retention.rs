//! Retention for the SQL stores: they delete nothing until a sweep runs.

use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::StoreError;

/// What a retention sweep deletes.
///
/// Terminal tasks not updated for `terminal_max_age` go. An idempotency key goes only when it
/// is older than `max(idempotency_key_max_age, terminal_max_age)` **and** its task is no longer
/// stored, so a key never disappears before its task, however long the task runs.
///
/// ```
/// use std::time::Duration;
///
/// use a2a_protocol_server::store::RetentionPolicy;
///
/// let policy = RetentionPolicy::default().with_terminal_max_age(Duration::from_secs(2 * 24 * 3600));
/// assert_eq!(policy.key_age(), Duration::from_secs(2 * 24 * 3600), "keys never go before tasks");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetentionPolicy {
    /// How long a terminal task is kept after its last update. Default 7 days.
    pub terminal_max_age: Duration,
    /// How long a key is kept at least. Default 24 hours.
    pub idempotency_key_max_age: Duration,
    /// Rows deleted per statement, so a sweep never holds long locks. Default 1 000.
    pub batch_size: u32,
    /// Statements per table and sweep; what is left waits for the next sweep. Default 100.
    pub max_batches: u32,
    /// How long a task's events are kept for followers in other processes. They serve a
    /// follower that is a moment behind; one that falls further behind starts again from the
    /// task. Default 10 minutes.
    pub event_max_age: Duration,
}

impl Default for RetentionPolicy {
    fn default() -> Self {
        Self {
            terminal_max_age: Duration::from_secs(7 * 24 * 60 * 60),
            idempotency_key_max_age: Duration::from_secs(24 * 60 * 60),
            batch_size: 1_000,
            max_batches: 100,
            event_max_age: Duration::from_secs(10 * 60),
        }
    }
}

impl RetentionPolicy {
    /// Sets [`RetentionPolicy::terminal_max_age`].
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::store::RetentionPolicy;
    ///
    /// let policy = RetentionPolicy::default().with_terminal_max_age(Duration::from_secs(3600));
    /// assert_eq!(policy.terminal_max_age.as_secs(), 3600);
    /// ```
    pub fn with_terminal_max_age(mut self, age: Duration) -> Self {
        self.terminal_max_age = age;
        self
    }

    /// Sets [`RetentionPolicy::idempotency_key_max_age`].
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::store::RetentionPolicy;
    ///
    /// let policy = RetentionPolicy::default()
    ///     .with_terminal_max_age(Duration::from_secs(60))
    ///     .with_idempotency_key_max_age(Duration::from_secs(7200));
    /// assert_eq!(policy.key_age(), Duration::from_secs(7200));
    /// ```
    pub fn with_idempotency_key_max_age(mut self, age: Duration) -> Self {
        self.idempotency_key_max_age = age;
        self
    }

    /// Sets [`RetentionPolicy::batch_size`] (at least 1).
    ///
    /// ```
    /// use a2a_protocol_server::store::RetentionPolicy;
    ///
    /// assert_eq!(RetentionPolicy::default().with_batch_size(0).batch_size, 1, "at least one");
    /// ```
    pub fn with_batch_size(mut self, size: u32) -> Self {
        self.batch_size = size.max(1);
        self
    }

    /// Sets [`RetentionPolicy::max_batches`] (at least 1).
    ///
    /// ```
    /// use a2a_protocol_server::store::RetentionPolicy;
    ///
    /// assert_eq!(RetentionPolicy::default().with_max_batches(10).max_batches, 10);
    /// ```
    pub fn with_max_batches(mut self, batches: u32) -> Self {
        self.max_batches = batches.max(1);
        self
    }

    /// Sets [`RetentionPolicy::event_max_age`].
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::store::RetentionPolicy;
    ///
    /// let policy = RetentionPolicy::default().with_event_max_age(Duration::from_secs(60));
    /// assert_eq!(policy.event_max_age, Duration::from_secs(60));
    /// ```
    pub fn with_event_max_age(mut self, age: Duration) -> Self {
        self.event_max_age = age;
        self
    }

    /// The age past which a key whose task is gone may be deleted.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::store::RetentionPolicy;
    ///
    /// let policy = RetentionPolicy::default(); // 7 days for tasks, 24 hours for keys
    /// assert_eq!(policy.key_age(), Duration::from_secs(7 * 24 * 3600));
    /// ```
    pub fn key_age(&self) -> Duration {
        self.idempotency_key_max_age.max(self.terminal_max_age)
    }
}

/// What a sweep deleted.
///
/// ```
/// use a2a_protocol_server::store::PurgeReport;
///
/// let report = PurgeReport::default();
/// assert_eq!((report.tasks_deleted, report.keys_deleted, report.finished), (0, 0, false));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PurgeReport {
    /// Terminal tasks deleted.
    pub tasks_deleted: u64,
    /// Idempotency keys deleted.
    pub keys_deleted: u64,
    /// Whether everything due was deleted (false when `max_batches` cut the sweep short).
    pub finished: bool,
}

/// A store that deletes expired rows on request.
///
/// ```
/// use a2a_protocol_server::store::{Retention, RetentionPolicy, SqliteTaskStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = tempfile::tempdir()?;
/// # let url = format!("sqlite://{}", dir.path().join("tasks.db").display());
/// let store = SqliteTaskStore::open(&url).await?;
/// let sweep: &dyn Retention = &store;
/// assert!(sweep.purge_expired(&RetentionPolicy::default()).await?.finished);
/// # Ok(())
/// # }
/// ```
#[async_trait]
pub trait Retention: Send + Sync + 'static {
    /// Deletes what `policy` says has expired.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use std::sync::Arc;
    ///
    /// use a2a_protocol_server::store::{Retention, RetentionPolicy, SqliteTaskStore, TaskStore, TaskWrite};
    /// use a2a_protocol_types::{Task, TaskState, TaskStatus};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = tempfile::tempdir()?;
    /// # let url = format!("sqlite://{}", dir.path().join("tasks.db").display());
    /// let store = SqliteTaskStore::open(&url).await?;
    /// for (id, state) in [("t-1", TaskState::Completed), ("t-2", TaskState::Working)] {
    ///     let task = Arc::new(Task::new(id, "c-1", TaskStatus::new(state)));
    ///     store.write(&TaskWrite::create("", &task)).await?;
    /// }
    /// let everything_terminal = RetentionPolicy::default().with_terminal_max_age(Duration::ZERO);
    /// let report = store.purge_expired(&everything_terminal).await?;
    /// assert_eq!(report.tasks_deleted, 1, "the working task stays");
    /// # Ok(())
    /// # }
    /// ```
    async fn purge_expired(&self, policy: &RetentionPolicy) -> Result<PurgeReport, StoreError>;
}

/// A shared store sweeps as the store itself does.
#[async_trait]
impl<R: Retention + ?Sized> Retention for std::sync::Arc<R> {
    async fn purge_expired(&self, policy: &RetentionPolicy) -> Result<PurgeReport, StoreError> {
        (**self).purge_expired(policy).await
    }
}

/// A background task that sweeps a store at an interval until stopped or dropped.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use a2a_protocol_server::store::{RetentionPolicy, RetentionSweeper, SqliteTaskStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = tempfile::tempdir()?;
/// # let url = format!("sqlite://{}", dir.path().join("tasks.db").display());
/// let store = Arc::new(SqliteTaskStore::open(&url).await?);
/// let sweeper = RetentionSweeper::spawn(store, Duration::from_secs(3600), RetentionPolicy::default());
/// drop(sweeper); // Stops sweeping.
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct RetentionSweeper {
    stop: CancellationToken,
}

impl RetentionSweeper {
    /// Sweeps `store` every `interval` with `policy`, starting after one interval.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::store::{RetentionPolicy, RetentionSweeper, SqliteTaskStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = tempfile::tempdir()?;
    /// # let url = format!("sqlite://{}", dir.path().join("tasks.db").display());
    /// let store = Arc::new(SqliteTaskStore::open(&url).await?);
    /// let _sweeper = RetentionSweeper::spawn(store, Duration::from_secs(600), RetentionPolicy::default());
    /// # Ok(())
    /// # }
    /// ```
    pub fn spawn(store: impl Retention, interval: Duration, policy: RetentionPolicy) -> Self {
        let stop = CancellationToken::new();
        let token = stop.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(interval);
            ticks.tick().await;
            loop {
                tokio::select! {
                    () = token.cancelled() => break,
                    _ = ticks.tick() => {}
                }
                match store.purge_expired(&policy).await {
                    Ok(report) => tracing::info!(
                        tasks = report.tasks_deleted,
                        keys = report.keys_deleted,
                        finished = report.finished,
                        "retention sweep"
                    ),
                    Err(error) => tracing::warn!(%error, "retention sweep failed"),
                }
            }
        });
        Self { stop }
    }

    /// Stops sweeping.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::store::{RetentionPolicy, RetentionSweeper, SqliteTaskStore};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = tempfile::tempdir()?;
    /// # let url = format!("sqlite://{}", dir.path().join("tasks.db").display());
    /// let store = Arc::new(SqliteTaskStore::open(&url).await?);
    /// let sweeper = RetentionSweeper::spawn(store, Duration::from_secs(600), RetentionPolicy::default());
    /// sweeper.stop();
    /// # Ok(())
    /// # }
    /// ```
    pub fn stop(&self) {
        self.stop.cancel();
    }
}

impl Drop for RetentionSweeper {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
