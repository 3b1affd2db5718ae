//! The retention sweep: terminal tasks past their age, then keys whose task is gone, then
//! events no follower needs, a batch per transaction.

use rusqlite::{Transaction, params};

use super::SqliteTaskStore;
use super::statement::{execute, rows};
use crate::store::sql::{millis, now_millis};
use crate::store::{PurgeReport, Retention, RetentionPolicy, StoreError};

/// The tables holding rows of a task, besides the task's own.
const TASK_ROWS: [&str; 4] = [
    "a2a_task_messages",
    "a2a_task_events",
    "a2a_push_configs",
    "a2a_push_outbox",
];

#[async_trait::async_trait]
impl Retention for SqliteTaskStore {
    async fn purge_expired(&self, policy: &RetentionPolicy) -> Result<PurgeReport, StoreError> {
        let now = now_millis();
        let batch = i64::from(policy.batch_size);
        let full = |deleted: usize| deleted as u64 >= u64::from(policy.batch_size);
        let mut report = PurgeReport::default();

        // A transaction per batch, so writes wait for one batch at most.
        let task_cutoff = now.saturating_sub(millis(policy.terminal_max_age));
        let mut drained = false;
        for _ in 0..policy.max_batches {
            let gone = self
                .database
                .write(move |tx| purge_tasks(tx, task_cutoff, batch))
                .await?;
            report.tasks_deleted += gone as u64;
            if !full(gone) {
                drained = true;
                break;
            }
        }
        let mut finished = drained;

        // A key goes only once its task is gone: never with it, never before it. Its task is
        // stored under the key's tenant in a tenant-aware store and under '' in a plain one;
        // looking in both keeps every live key, however the store is opened.
        let key_cutoff = now.saturating_sub(millis(policy.key_age()));
        let mut drained = false;
        for _ in 0..policy.max_batches {
            let deleted = self
                .execute(
                    "DELETE FROM a2a_idempotency_keys WHERE (tenant, caller, idempotency_key) IN ( \
                       SELECT k.tenant, k.caller, k.idempotency_key FROM a2a_idempotency_keys k \
                       WHERE k.created_millis < ?1 \
                         AND NOT EXISTS (SELECT 1 FROM a2a_tasks t \
                                         WHERE t.id = k.task_id AND t.tenant IN (k.tenant, '')) \
                       LIMIT ?2)",
                    move || (key_cutoff, batch),
                )
                .await?;
            report.keys_deleted += deleted as u64;
            if !full(deleted) {
                drained = true;
                break;
            }
        }
        finished &= drained;

        // Events serve followers that are a moment behind, not history.
        let event_cutoff = now_millis().saturating_sub(millis(policy.event_max_age));
        let mut drained = false;
        for _ in 0..policy.max_batches {
            let deleted = self
                .execute(
                    "DELETE FROM a2a_task_events WHERE (tenant, task_id, generation) IN ( \
                       SELECT tenant, task_id, generation FROM a2a_task_events \
                       WHERE created_millis < ?1 LIMIT ?2)",
                    move || (event_cutoff, batch),
                )
                .await?;
            if !full(deleted) {
                drained = true;
                break;
            }
        }
        if drained {
            self.execute(
                "DELETE FROM a2a_followers WHERE expires_millis < ?1",
                || [now_millis()],
            )
            .await?;
        }
        report.finished = finished && drained;
        Ok(report)
    }
}

/// Deletes up to `batch` terminal tasks last written before `cutoff`, with their rows; how
/// many went.
fn purge_tasks(tx: &Transaction<'_>, cutoff: i64, batch: i64) -> Result<usize, StoreError> {
    let gone = rows(
        tx,
        "SELECT tenant, id FROM a2a_tasks WHERE terminal = TRUE AND updated_millis < ?1 LIMIT ?2",
        params![cutoff, batch],
        |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)),
    )?;
    for (tenant, id) in &gone {
        for table in TASK_ROWS {
            let sql = format!("DELETE FROM {table} WHERE tenant = ?1 AND task_id = ?2");
            execute(tx, &sql, params![tenant, id])?;
        }
        execute(
            tx,
            "DELETE FROM a2a_tasks WHERE tenant = ?1 AND id = ?2",
            params![tenant, id],
        )?;
    }
    Ok(gone.len())
}
