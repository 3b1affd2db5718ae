//! Push notification configs and the outbox of their deliveries.

use std::time::Duration;

use a2a_protocol_types::TaskId;
use a2a_protocol_types::push::TaskPushNotificationConfig;
use sqlx::Row as _;

use super::{PostgresTaskStore, classify};
use crate::store::sql::{
    decode_event_at, decode_push_config, encode_push_config, millis, now_millis,
};
use crate::store::{
    DeliverySettled, PushConfigSaved, PushDelivery, PushStore, StoreError, epoch_millis,
};

#[async_trait::async_trait]
impl PushStore for PostgresTaskStore {
    /// Saves a push config, in one statement: only for a task that exists, and only
    /// while the task has fewer than `max_per_task` other configs. Two racing saves of
    /// new ids on PostgreSQL may each see room for one, so the cap can be passed by the
    /// number of racing saves; it bounds storage, not correctness.
    async fn save_push_config(
        &self,
        tenant: &str,
        config: &TaskPushNotificationConfig,
        max_per_task: usize,
    ) -> Result<PushConfigSaved, StoreError> {
        let tenant = self.task_tenant(tenant);
        let body = encode_push_config(config)?;
        let saved = sqlx::query(
            "INSERT INTO a2a_push_configs (tenant, task_id, id, body, created_millis) \
             SELECT $1, $2, $3, $4, $5 \
             WHERE EXISTS (SELECT 1 FROM a2a_tasks WHERE tenant = $1 AND id = $2) \
               AND (SELECT COUNT(*) FROM a2a_push_configs \
                    WHERE tenant = $1 AND task_id = $2 AND id <> $3) < $6 \
             ON CONFLICT (tenant, task_id, id) DO UPDATE SET body = excluded.body",
        )
        .bind(tenant)
        .bind(config.task_id.as_str())
        .bind(config.id.as_str())
        .bind(body)
        .bind(now_millis())
        .bind(i64::try_from(max_per_task).unwrap_or(i64::MAX))
        .execute(&self.pool)
        .await
        .map_err(classify)?
        .rows_affected();
        if saved > 0 {
            return Ok(PushConfigSaved::Saved);
        }
        let task = sqlx::query("SELECT 1 FROM a2a_tasks WHERE tenant = $1 AND id = $2")
            .bind(tenant)
            .bind(config.task_id.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(classify)?;
        Ok(if task.is_some() {
            PushConfigSaved::AtCap
        } else {
            PushConfigSaved::TaskMissing
        })
    }

    async fn get_push_config(
        &self,
        tenant: &str,
        task_id: &TaskId,
        id: &str,
    ) -> Result<Option<TaskPushNotificationConfig>, StoreError> {
        let row = sqlx::query(
            "SELECT body FROM a2a_push_configs WHERE tenant = $1 AND task_id = $2 AND id = $3",
        )
        .bind(self.task_tenant(tenant))
        .bind(task_id.as_str())
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(classify)?;
        row.map(|row| decode_push_config(&row.try_get::<String, _>(0).map_err(classify)?))
            .transpose()
    }

    async fn list_push_configs(
        &self,
        tenant: &str,
        task_id: &TaskId,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TaskPushNotificationConfig>, StoreError> {
        // Ids are never empty, so "after the empty id" is "from the first".
        let rows = sqlx::query(
            "SELECT body FROM a2a_push_configs WHERE tenant = $1 AND task_id = $2 AND id > $3 \
             ORDER BY id LIMIT $4",
        )
        .bind(self.task_tenant(tenant))
        .bind(task_id.as_str())
        .bind(after.unwrap_or(""))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(classify)?;
        rows.iter()
            .map(|row| decode_push_config(&row.try_get::<String, _>(0).map_err(classify)?))
            .collect()
    }

    async fn delete_push_config(
        &self,
        tenant: &str,
        task_id: &TaskId,
        id: &str,
    ) -> Result<bool, StoreError> {
        let tenant = self.task_tenant(tenant);
        let mut tx = self.pool.begin().await.map_err(classify)?;
        let deleted = sqlx::query(
            "DELETE FROM a2a_push_configs WHERE tenant = $1 AND task_id = $2 AND id = $3",
        )
        .bind(tenant)
        .bind(task_id.as_str())
        .bind(id)
        .execute(&mut *tx)
        .await
        .map_err(classify)?
        .rows_affected();
        // No notification goes to a deleted config, not even one already waiting.
        sqlx::query(
            "DELETE FROM a2a_push_outbox WHERE tenant = $1 AND task_id = $2 AND config_id = $3",
        )
        .bind(tenant)
        .bind(task_id.as_str())
        .bind(id)
        .execute(&mut *tx)
        .await
        .map_err(classify)?;
        tx.commit().await.map_err(classify)?;
        Ok(deleted > 0)
    }

    /// Claims due notifications: the oldest live one of each task and config, not
    /// claimed by anyone whose claim still runs. Each is taken by a conditional
    /// update, so of two processes that picked the same one only one gets it.
    async fn claim_push_deliveries(
        &self,
        claimant: &str,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<PushDelivery>, StoreError> {
        let now = now_millis();
        let until = now.saturating_add(millis(lease));
        let rows = sqlx::query(
            "SELECT o.tenant, o.task_id, o.config_id, o.generation, o.body, o.attempts, \
                    o.last_error, c.body \
             FROM a2a_push_outbox o JOIN a2a_push_configs c \
               ON c.tenant = o.tenant AND c.task_id = o.task_id AND c.id = o.config_id \
             WHERE o.dead = $1 AND o.due_millis <= $2 AND o.claimed_until_millis <= $2 \
               AND NOT EXISTS (SELECT 1 FROM a2a_push_outbox p \
                               WHERE p.tenant = o.tenant AND p.task_id = o.task_id \
                                 AND p.config_id = o.config_id AND p.dead = $1 \
                                 AND p.generation < o.generation) \
             ORDER BY o.due_millis LIMIT $3",
        )
        .bind(false)
        .bind(now)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(classify)?;
        let mut claimed = Vec::with_capacity(rows.len());
        for row in rows {
            let delivery = decode_delivery(&row)?;
            let taken = sqlx::query(
                "UPDATE a2a_push_outbox SET claimed_by = $5, claimed_until_millis = $6 \
                 WHERE tenant = $1 AND task_id = $2 AND config_id = $3 AND generation = $4 \
                   AND dead = $7 AND claimed_until_millis <= $8",
            )
            .bind(&delivery.tenant)
            .bind(delivery.config.task_id.as_str())
            .bind(delivery.config.id.as_str())
            .bind(i64::try_from(delivery.generation).unwrap_or(i64::MAX))
            .bind(claimant)
            .bind(until)
            .bind(false)
            .bind(now)
            .execute(&self.pool)
            .await
            .map_err(classify)?
            .rows_affected();
            if taken == 1 {
                claimed.push(delivery);
            }
        }
        Ok(claimed)
    }

    /// Records how an attempt went, if `claimant` still holds the notification.
    async fn settle_push_delivery(
        &self,
        claimant: &str,
        delivery: &PushDelivery,
        settled: &DeliverySettled,
    ) -> Result<(), StoreError> {
        let generation = i64::try_from(delivery.generation).unwrap_or(i64::MAX);
        let (due, error, dead) = match settled {
            DeliverySettled::Delivered => (None, None, false),
            DeliverySettled::Retry { at, error } => (Some(epoch_millis(*at)), Some(error), false),
            DeliverySettled::Dead { error } => (Some(now_millis()), Some(error), true),
        };
        let statement = match due {
            None => sqlx::query(
                "DELETE FROM a2a_push_outbox \
                 WHERE tenant = $1 AND task_id = $2 AND config_id = $3 AND generation = $4 \
                   AND claimed_by = $5",
            ),
            // One statement for a retry and a dead letter: a retry leaves `dead` as it is
            // (false: only a live notification is claimed).
            Some(_) => sqlx::query(
                "UPDATE a2a_push_outbox SET attempts = attempts + 1, due_millis = $6, \
                   last_error = $7, dead = (dead OR $8), claimed_by = NULL, \
                   claimed_until_millis = 0 \
                 WHERE tenant = $1 AND task_id = $2 AND config_id = $3 AND generation = $4 \
                   AND claimed_by = $5",
            ),
        };
        let statement = statement
            .bind(delivery.tenant.as_str())
            .bind(delivery.config.task_id.as_str())
            .bind(delivery.config.id.as_str())
            .bind(generation)
            .bind(claimant);
        let statement = match due {
            None => statement,
            Some(due) => statement
                .bind(due)
                .bind(error.map(String::as_str))
                .bind(dead),
        };
        statement.execute(&self.pool).await.map_err(classify)?;
        Ok(())
    }

    /// The dead letters, the most recently given up first.
    async fn dead_push_deliveries(&self, limit: usize) -> Result<Vec<PushDelivery>, StoreError> {
        let rows = sqlx::query(
            "SELECT o.tenant, o.task_id, o.config_id, o.generation, o.body, o.attempts, \
                    o.last_error, c.body \
             FROM a2a_push_outbox o JOIN a2a_push_configs c \
               ON c.tenant = o.tenant AND c.task_id = o.task_id AND c.id = o.config_id \
             WHERE o.dead = $1 ORDER BY o.due_millis DESC LIMIT $2",
        )
        .bind(true)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(classify)?;
        rows.iter().map(decode_delivery).collect()
    }
}

/// A notification as the claim and dead-letter queries select it.
fn decode_delivery(
    row: &<sqlx::Postgres as sqlx::Database>::Row,
) -> Result<PushDelivery, StoreError> {
    let read = || -> Result<_, sqlx::Error> {
        Ok((
            row.try_get::<String, _>(0)?,
            row.try_get::<i64, _>(3)?,
            row.try_get::<String, _>(4)?,
            row.try_get::<i32, _>(5)?,
            row.try_get::<Option<String>, _>(6)?,
            row.try_get::<String, _>(7)?,
        ))
    };
    let (tenant, generation, event, attempts, last_error, config) = read().map_err(classify)?;
    let mut delivery = PushDelivery::new(
        tenant,
        decode_push_config(&config)?,
        u64::try_from(generation).unwrap_or_default(),
        decode_event_at(&event, generation)?,
    );
    delivery.attempts = u32::try_from(attempts).unwrap_or_default();
    delivery.last_error = last_error;
    Ok(delivery)
}
