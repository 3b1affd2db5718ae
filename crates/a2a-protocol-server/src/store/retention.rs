//! Retention for the SQL stores: they delete nothing until a sweep runs.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::StoreError;

/// What a retention sweep deletes.
///
/// Terminal tasks not updated for `terminal_max_age` go. An idempotency key goes only when it
/// is older than `max(idempotency_key_max_age, terminal_max_age)` **and** its task is no longer
/// stored, so a key never disappears before its task, however long the task runs.
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
}

impl Default for RetentionPolicy {
    fn default() -> Self {
        Self {
            terminal_max_age: Duration::from_secs(7 * 24 * 60 * 60),
            idempotency_key_max_age: Duration::from_secs(24 * 60 * 60),
            batch_size: 1_000,
            max_batches: 100,
        }
    }
}

impl RetentionPolicy {
    /// Sets [`RetentionPolicy::terminal_max_age`].
    pub fn with_terminal_max_age(mut self, age: Duration) -> Self {
        self.terminal_max_age = age;
        self
    }

    /// Sets [`RetentionPolicy::idempotency_key_max_age`].
    pub fn with_idempotency_key_max_age(mut self, age: Duration) -> Self {
        self.idempotency_key_max_age = age;
        self
    }

    /// Sets [`RetentionPolicy::batch_size`] (at least 1).
    pub fn with_batch_size(mut self, size: u32) -> Self {
        self.batch_size = size.max(1);
        self
    }

    /// Sets [`RetentionPolicy::max_batches`] (at least 1).
    pub fn with_max_batches(mut self, batches: u32) -> Self {
        self.max_batches = batches.max(1);
        self
    }

    /// The age past which a key whose task is gone may be deleted.
    pub fn key_age(&self) -> Duration {
        self.idempotency_key_max_age.max(self.terminal_max_age)
    }
}

/// What a sweep deleted.
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
#[async_trait]
pub trait Retention: Send + Sync + 'static {
    /// Deletes what `policy` says has expired.
    async fn purge_expired(&self, policy: &RetentionPolicy) -> Result<PurgeReport, StoreError>;
}

/// A background task that sweeps a store at an interval until stopped or dropped.
#[derive(Debug)]
pub struct RetentionSweeper {
    stop: CancellationToken,
}

impl RetentionSweeper {
    /// Sweeps `store` every `interval` with `policy`, starting after one interval.
    pub fn spawn(store: Arc<dyn Retention>, interval: Duration, policy: RetentionPolicy) -> Self {
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
    pub fn stop(&self) {
        self.stop.cancel();
    }
}

impl Drop for RetentionSweeper {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
