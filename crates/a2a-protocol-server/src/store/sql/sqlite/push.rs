//! Push notification configs and the outbox of their deliveries.

use std::time::Duration;

use a2a_protocol_types::TaskId;
use a2a_protocol_types::push::TaskPushNotificationConfig;
use rusqlite::{Row, params};

use super::statement::{execute, row, rows};
use super::{SqliteTaskStore, int};
use crate::store::sql::{
    decode_event_at, decode_push_config, encode_push_config, millis, now_millis,
};
use crate::store::{
    DeliverySettled, PushConfigSaved, PushDelivery, PushStore, StoreError, epoch_millis,
};

/// The columns of a delivery, as [`delivery_row`] reads them.
const DELIVERY: &str = "SELECT o.tenant, o.task_id, o.config_id, o.generation, o.body, \
            o.attempts, o.last_error, c.body \
     FROM a2a_push_outbox o JOIN a2a_push_configs c \
       ON c.tenant = o.tenant AND c.task_id = o.task_id AND c.id = o.config_id";

/// The row of one notification, by its key and the claimant holding it.
const CLAIMED: &str = "WHERE tenant = ?1 AND task_id = ?2 AND config_id = ?3 AND generation = ?4 \
     AND claimed_by = ?5";

#[async_trait::async_trait]
impl PushStore for SqliteTaskStore {
    /// Saves a push config, in one statement: only for a task that exists, and only while the
    /// task has fewer than `max_per_task` other configs.
    async fn save_push_config(
        &self,
        tenant: &str,
        config: &TaskPushNotificationConfig,
        max_per_task: usize,
    ) -> Result<PushConfigSaved, StoreError> {
        let tenant = self.task_tenant(tenant).to_owned();
        let body = encode_push_config(config)?;
        let (task_id, id) = (config.task_id.to_string(), config.id.to_string());
        self.database
            .write(move |tx| {
                let saved = execute(
                    tx,
                    "INSERT INTO a2a_push_configs (tenant, task_id, id, body, created_millis) \
                     SELECT ?1, ?2, ?3, ?4, ?5 \
                     WHERE EXISTS (SELECT 1 FROM a2a_tasks WHERE tenant = ?1 AND id = ?2) \
                       AND (SELECT COUNT(*) FROM a2a_push_configs \
                            WHERE tenant = ?1 AND task_id = ?2 AND id <> ?3) < ?6 \
                     ON CONFLICT (tenant, task_id, id) DO UPDATE SET body = excluded.body",
                    params![tenant, task_id, id, body, now_millis(), int(max_per_task)],
                )?;
                if saved > 0 {
                    return Ok(PushConfigSaved::Saved);
                }
                let task = row(
                    tx,
                    "SELECT 1 FROM a2a_tasks WHERE tenant = ?1 AND id = ?2",
                    params![tenant, task_id],
                    |_| Ok(()),
                )?;
                Ok(match task {
                    Some(()) => PushConfigSaved::AtCap,
                    None => PushConfigSaved::TaskMissing,
                })
            })
            .await
    }

    async fn get_push_config(
        &self,
        tenant: &str,
        task_id: &TaskId,
        id: &str,
    ) -> Result<Option<TaskPushNotificationConfig>, StoreError> {
        let (tenant, task_id, id) = (
            self.task_tenant(tenant).to_owned(),
            task_id.to_string(),
            id.to_owned(),
        );
        self.database
            .read(move |connection| {
                row(
                    connection,
                    "SELECT body FROM a2a_push_configs \
                     WHERE tenant = ?1 AND task_id = ?2 AND id = ?3",
                    params![tenant, task_id, id],
                    |row| row.get::<_, String>(0),
                )?
                .as_deref()
                .map(decode_push_config)
                .transpose()
            })
            .await
    }

    async fn list_push_configs(
        &self,
        tenant: &str,
        task_id: &TaskId,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<TaskPushNotificationConfig>, StoreError> {
        let (tenant, task_id) = (self.task_tenant(tenant).to_owned(), task_id.to_string());
        // Ids are never empty, so "after the empty id" is "from the first".
        let after = after.unwrap_or("").to_owned();
        self.database
            .read(move |connection| {
                rows(
                    connection,
                    "SELECT body FROM a2a_push_configs \
                     WHERE tenant = ?1 AND task_id = ?2 AND id > ?3 ORDER BY id LIMIT ?4",
                    params![tenant, task_id, after, int(limit)],
                    |row| row.get::<_, String>(0),
                )?
                .iter()
                .map(|body| decode_push_config(body))
                .collect()
            })
            .await
    }

    async fn delete_push_config(
        &self,
        tenant: &str,
        task_id: &TaskId,
        id: &str,
    ) -> Result<bool, StoreError> {
        let (tenant, task_id, id) = (
            self.task_tenant(tenant).to_owned(),
            task_id.to_string(),
            id.to_owned(),
        );
        self.database
            .write(move |tx| {
                let deleted = execute(
                    tx,
                    "DELETE FROM a2a_push_configs WHERE tenant = ?1 AND task_id = ?2 AND id = ?3",
                    params![tenant, task_id, id],
                )?;
                // No notification goes to a deleted config, not even one already waiting.
                execute(
                    tx,
                    "DELETE FROM a2a_push_outbox \
                     WHERE tenant = ?1 AND task_id = ?2 AND config_id = ?3",
                    params![tenant, task_id, id],
                )?;
                Ok(deleted > 0)
            })
            .await
    }

    /// Claims due notifications: the oldest live one of each task and config, not claimed by
    /// anyone whose claim still runs. Each is taken by a conditional update, so of two
    /// processes that picked the same one only one gets it.
    async fn claim_push_deliveries(
        &self,
        claimant: &str,
        lease: Duration,
        limit: usize,
    ) -> Result<Vec<PushDelivery>, StoreError> {
        let claimant = claimant.to_owned();
        self.database
            .write(move |tx| {
                let now = now_millis();
                let due = rows(
                    tx,
                    &format!(
                        "{DELIVERY} \
                         WHERE o.dead = FALSE AND o.due_millis <= ?1 \
                           AND o.claimed_until_millis <= ?1 \
                           AND NOT EXISTS (SELECT 1 FROM a2a_push_outbox p \
                                           WHERE p.tenant = o.tenant AND p.task_id = o.task_id \
                                             AND p.config_id = o.config_id AND p.dead = FALSE \
                                             AND p.generation < o.generation) \
                         ORDER BY o.due_millis LIMIT ?2"
                    ),
                    params![now, int(limit)],
                    delivery_row,
                )?;
                let mut claimed = Vec::with_capacity(due.len());
                for row in due {
                    let delivery = delivery(row)?;
                    let taken = execute(
                        tx,
                        "UPDATE a2a_push_outbox SET claimed_by = ?5, claimed_until_millis = ?6 \
                         WHERE tenant = ?1 AND task_id = ?2 AND config_id = ?3 \
                           AND generation = ?4 AND dead = FALSE AND claimed_until_millis <= ?7",
                        params![
                            delivery.tenant,
                            delivery.config.task_id.as_str(),
                            delivery.config.id.as_str(),
                            i64::try_from(delivery.generation).unwrap_or(i64::MAX),
                            claimant,
                            now.saturating_add(millis(lease)),
                            now
                        ],
                    )?;
                    if taken == 1 {
                        claimed.push(delivery);
                    }
                }
                Ok(claimed)
            })
            .await
    }

    /// Records how an attempt went, if `claimant` still holds the notification.
    async fn settle_push_delivery(
        &self,
        claimant: &str,
        delivery: &PushDelivery,
        settled: &DeliverySettled,
    ) -> Result<(), StoreError> {
        let key = (
            delivery.tenant.clone(),
            delivery.config.task_id.to_string(),
            delivery.config.id.to_string(),
            i64::try_from(delivery.generation).unwrap_or(i64::MAX),
            claimant.to_owned(),
        );
        let settled = settled.clone();
        self.database
            .write(move |tx| {
                let (tenant, task_id, config_id, generation, claimant) = key;
                let (due, error, dead) = match settled {
                    DeliverySettled::Delivered => {
                        return execute(
                            tx,
                            &format!("DELETE FROM a2a_push_outbox {CLAIMED}"),
                            params![tenant, task_id, config_id, generation, claimant],
                        )
                        .map(drop);
                    }
                    DeliverySettled::Retry { at, error } => (epoch_millis(at), error, false),
                    DeliverySettled::Dead { error } => (now_millis(), error, true),
                };
                // One statement for both: a retry leaves `dead` as it is (false: only a live
                // notification is claimed).
                execute(
                    tx,
                    &format!(
                        "UPDATE a2a_push_outbox SET attempts = attempts + 1, due_millis = ?6, \
                           last_error = ?7, dead = (dead OR ?8), claimed_by = NULL, \
                           claimed_until_millis = 0 {CLAIMED}"
                    ),
                    params![
                        tenant, task_id, config_id, generation, claimant, due, error, dead
                    ],
                )
                .map(drop)
            })
            .await
    }

    /// The dead letters, the most recently given up first.
    async fn dead_push_deliveries(&self, limit: usize) -> Result<Vec<PushDelivery>, StoreError> {
        self.database
            .read(move |connection| {
                rows(
                    connection,
                    &format!("{DELIVERY} WHERE o.dead = TRUE ORDER BY o.due_millis DESC LIMIT ?1"),
                    [int(limit)],
                    delivery_row,
                )?
                .into_iter()
                .map(delivery)
                .collect()
            })
            .await
    }
}

/// A delivery's columns: tenant, generation, event, attempts, last error, config.
type DeliveryRow = (String, i64, String, u32, Option<String>, String);

fn delivery_row(row: &Row<'_>) -> rusqlite::Result<DeliveryRow> {
    Ok((
        row.get(0)?,
        row.get(3)?,
        row.get(4)?,
        row.get(5)?,
        row.get(6)?,
        row.get(7)?,
    ))
}

fn delivery(
    (tenant, generation, event, attempts, last_error, config): DeliveryRow,
) -> Result<PushDelivery, StoreError> {
    let mut delivery = PushDelivery::new(
        tenant,
        decode_push_config(&config)?,
        u64::try_from(generation).unwrap_or_default(),
        decode_event_at(&event, generation)?,
    );
    delivery.attempts = attempts;
    delivery.last_error = last_error;
    Ok(delivery)
}
