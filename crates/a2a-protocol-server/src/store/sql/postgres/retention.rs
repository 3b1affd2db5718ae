//! The retention sweep: terminal tasks past their age, then keys whose task is gone, then
//! events no follower needs, a batch per statement.

use sqlx::Row as _;

use super::{PostgresTaskStore, classify};
use crate::store::retention::{PurgeReport, RetentionPolicy};
use crate::store::sql::{millis, now_millis};
use crate::store::{Retention, StoreError};

#[async_trait::async_trait]
impl Retention for PostgresTaskStore {
    async fn purge_expired(&self, policy: &RetentionPolicy) -> Result<PurgeReport, StoreError> {
        let now = now_millis();
        let batch = i64::from(policy.batch_size);
        let mut report = PurgeReport::default();

        let task_cutoff = now.saturating_sub(millis(policy.terminal_max_age));
        let mut drained = false;
        for _ in 0..policy.max_batches {
            // A turn per batch, so sends wait for one batch at most.
            let mut tx = self.pool.begin().await.map_err(classify)?;
            let rows = sqlx::query(
                // `terminal` as written, not bound: PostgreSQL's retention index holds
                // terminal tasks only, and a kept plan cannot tell a bound value.
                "SELECT tenant, id FROM a2a_tasks \
                 WHERE terminal = TRUE AND updated_millis < $1 LIMIT $2",
            )
            .bind(task_cutoff)
            .bind(batch)
            .fetch_all(&mut *tx)
            .await
            .map_err(classify)?;
            let gone = rows
                .iter()
                .map(|row| Ok((row.try_get::<String, _>(0)?, row.try_get::<String, _>(1)?)))
                .collect::<Result<Vec<(String, String)>, sqlx::Error>>()
                .map_err(classify)?;
            for table in [
                "a2a_task_messages",
                "a2a_task_events",
                "a2a_push_configs",
                "a2a_push_outbox",
            ] {
                delete_tasks_rows(&mut tx, table, "task_id", &gone).await?;
            }
            delete_tasks_rows(&mut tx, "a2a_tasks", "id", &gone).await?;
            tx.commit().await.map_err(classify)?;
            report.tasks_deleted += gone.len() as u64;
            if (gone.len() as u64) < u64::from(policy.batch_size) {
                drained = true;
                break;
            }
        }
        let mut finished = drained;

        // A key goes only once its task is gone: never with it, never before it. Its
        // task is stored under the key's tenant in a tenant-aware store and under ''
        // in a plain one; looking in both keeps every live key, however the store is
        // opened.
        let key_cutoff = now.saturating_sub(millis(policy.key_age()));
        let mut drained = false;
        for _ in 0..policy.max_batches {
            let deleted = sqlx::query(
                "DELETE FROM a2a_idempotency_keys WHERE (tenant, caller, idempotency_key) IN ( \
                   SELECT k.tenant, k.caller, k.idempotency_key FROM a2a_idempotency_keys k \
                   WHERE k.created_millis < $1 \
                     AND NOT EXISTS (SELECT 1 FROM a2a_tasks t \
                                     WHERE t.id = k.task_id AND t.tenant IN (k.tenant, '')) \
                   LIMIT $2)",
            )
            .bind(key_cutoff)
            .bind(batch)
            .execute(&self.pool)
            .await
            .map_err(classify)?
            .rows_affected();
            report.keys_deleted += deleted;
            if deleted < u64::from(policy.batch_size) {
                drained = true;
                break;
            }
        }
        finished &= drained;
        finished &= self.trim_events(policy).await?;
        report.finished = finished;
        Ok(report)
    }
}

impl PostgresTaskStore {
    /// Deletes events older than the policy keeps them: they serve followers that are
    /// a moment behind, not history. True when none older are left.
    async fn trim_events(&self, policy: &RetentionPolicy) -> Result<bool, StoreError> {
        let cutoff = now_millis().saturating_sub(millis(policy.event_max_age));
        let batch = i64::from(policy.batch_size);
        for _ in 0..policy.max_batches {
            let deleted = sqlx::query(
                "DELETE FROM a2a_task_events WHERE (tenant, task_id, generation) IN ( \
                   SELECT tenant, task_id, generation FROM a2a_task_events \
                   WHERE created_millis < $1 LIMIT $2)",
            )
            .bind(cutoff)
            .bind(batch)
            .execute(&self.pool)
            .await
            .map_err(classify)?
            .rows_affected();
            if deleted < u64::from(policy.batch_size) {
                sqlx::query("DELETE FROM a2a_followers WHERE expires_millis < $1")
                    .bind(now_millis())
                    .execute(&self.pool)
                    .await
                    .map_err(classify)?;
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// Deletes the rows of `table` that belong to the tasks `gone`.
async fn delete_tasks_rows(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    table: &str,
    id_column: &str,
    gone: &[(String, String)],
) -> Result<(), StoreError> {
    if gone.is_empty() {
        return Ok(());
    }
    let mut query = sqlx::QueryBuilder::<sqlx::Postgres>::new(format!(
        "DELETE FROM {table} WHERE (tenant, {id_column}) IN ("
    ));
    let mut pairs = query.separated(", ");
    for (tenant, id) in gone {
        pairs.push("(");
        pairs.push_bind_unseparated(tenant.as_str());
        pairs.push_unseparated(", ");
        pairs.push_bind_unseparated(id.as_str());
        pairs.push_unseparated(")");
    }
    pairs.push_unseparated(")");
    query.build().execute(&mut **tx).await.map_err(classify)?;
    Ok(())
}
