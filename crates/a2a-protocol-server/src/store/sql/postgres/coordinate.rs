//! What server processes sharing one database agree on: who runs which turn, leases, cancel
//! requests, the events followers in other processes read, and the notices PostgreSQL pushes
//! as they happen.

use std::sync::{Arc, Weak};
use std::time::Duration;

use a2a_protocol_types::{StreamResponse, TaskId};
use sqlx::Row as _;
use sqlx::postgres::{PgListener, PgPool};
use tokio::sync::broadcast;

use super::notices::{CHANNEL, NoticeHub, decode_notice};
use super::{PostgresTaskStore, classify};
use crate::store::sql::{decode_event_row, millis, now_millis};
use crate::store::{Coordination, Notice, StoreError, TaskRef};

#[async_trait::async_trait]
impl Coordination for PostgresTaskStore {
    async fn heartbeat(&self, owner: &str, ttl: Duration) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO a2a_owners (id, expires_millis) VALUES ($1, $2) \
             ON CONFLICT (id) DO UPDATE SET expires_millis = excluded.expires_millis",
        )
        .bind(owner)
        .bind(now_millis().saturating_add(millis(ttl)))
        .execute(&self.pool)
        .await
        .map_err(classify)?;
        Ok(())
    }

    async fn retire(&self, owner: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM a2a_owners WHERE id = $1")
            .bind(owner)
            .execute(&self.pool)
            .await
            .map_err(classify)?;
        Ok(())
    }

    async fn orphaned_turns(&self, limit: usize) -> Result<Vec<TaskRef>, StoreError> {
        let rows = sqlx::query(
            "SELECT t.tenant, t.id FROM a2a_tasks t \
             LEFT JOIN a2a_owners o ON o.id = t.owner \
             WHERE t.owner IS NOT NULL AND t.terminal = $1 \
               AND (o.id IS NULL OR o.expires_millis <= $2) \
             LIMIT $3",
        )
        .bind(false)
        .bind(now_millis())
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(classify)?;
        task_refs(&rows)
    }

    async fn request_cancel(&self, task: &TaskRef) -> Result<(), StoreError> {
        let tenant = self.task_tenant(&task.tenant);
        let mut tx = self.pool.begin().await.map_err(classify)?;
        sqlx::query(
            "UPDATE a2a_tasks SET cancel_requested = $1 \
             WHERE tenant = $2 AND id = $3 AND terminal = $4",
        )
        .bind(true)
        .bind(tenant)
        .bind(task.id.as_str())
        .bind(false)
        .execute(&mut *tx)
        .await
        .map_err(classify)?;
        if let Some(payload) = super::notices::encode_notice('c', 0, tenant, &task.id) {
            announce(&mut tx, &payload).await.map_err(classify)?;
        }
        tx.commit().await.map_err(classify)?;
        Ok(())
    }

    async fn cancel_requests(&self, owner: &str) -> Result<Vec<TaskRef>, StoreError> {
        let rows = sqlx::query(
            "SELECT tenant, id FROM a2a_tasks \
             WHERE owner = $1 AND cancel_requested = $2 AND terminal = $3",
        )
        .bind(owner)
        .bind(true)
        .bind(false)
        .fetch_all(&self.pool)
        .await
        .map_err(classify)?;
        task_refs(&rows)
    }

    async fn grant_lease(&self, task: &TaskRef, ttl: Duration) -> Result<(), StoreError> {
        let ttl = millis(ttl);
        sqlx::query(
            "UPDATE a2a_tasks SET lease_ttl_millis = $1, lease_deadline_millis = $2 \
             WHERE tenant = $3 AND id = $4",
        )
        .bind(ttl)
        .bind(now_millis().saturating_add(ttl))
        .bind(self.task_tenant(&task.tenant))
        .bind(task.id.as_str())
        .execute(&self.pool)
        .await
        .map_err(classify)?;
        Ok(())
    }

    async fn renew_lease(&self, task: &TaskRef) -> Result<bool, StoreError> {
        let renewed = sqlx::query(
            "UPDATE a2a_tasks SET lease_deadline_millis = $1 + lease_ttl_millis \
             WHERE tenant = $2 AND id = $3 AND lease_deadline_millis IS NOT NULL \
               AND terminal = $4",
        )
        .bind(now_millis())
        .bind(self.task_tenant(&task.tenant))
        .bind(task.id.as_str())
        .bind(false)
        .execute(&self.pool)
        .await
        .map_err(classify)?
        .rows_affected();
        Ok(renewed > 0)
    }

    /// Clears each lapsed lease in the statement that finds it: a process that finds
    /// the lease cleared by another's statement (re-checked on the row it waited for)
    /// does not take it.
    async fn take_lapsed_leases(&self, limit: usize) -> Result<Vec<TaskRef>, StoreError> {
        let now = now_millis();
        let rows = sqlx::query(
            "UPDATE a2a_tasks SET lease_deadline_millis = NULL \
             WHERE lease_deadline_millis < $1 AND terminal = $2 \
               AND (tenant, id) IN ( \
                 SELECT tenant, id FROM a2a_tasks \
                 WHERE lease_deadline_millis < $1 AND terminal = $2 LIMIT $3) \
             RETURNING tenant, id",
        )
        .bind(now)
        .bind(false)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(classify)?;
        task_refs(&rows)
    }

    async fn follow(&self, task: &TaskRef, process: &str, ttl: Duration) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO a2a_followers (tenant, task_id, process, expires_millis) \
             VALUES ($1, $2, $3, $4) \
             ON CONFLICT (tenant, task_id, process) \
               DO UPDATE SET expires_millis = excluded.expires_millis",
        )
        .bind(self.task_tenant(&task.tenant))
        .bind(task.id.as_str())
        .bind(process)
        .bind(now_millis().saturating_add(millis(ttl)))
        .execute(&self.pool)
        .await
        .map_err(classify)?;
        Ok(())
    }

    async fn events_after(
        &self,
        task: &TaskRef,
        generation: u64,
    ) -> Result<Vec<StreamResponse>, StoreError> {
        // A row holds the events of one write under the last one's generation, so the
        // first row may start at or before `generation`: decoding skips those.
        let rows = sqlx::query(
            "SELECT generation, body FROM a2a_task_events \
             WHERE tenant = $1 AND task_id = $2 AND generation > $3 ORDER BY generation",
        )
        .bind(self.task_tenant(&task.tenant))
        .bind(task.id.as_str())
        .bind(i64::try_from(generation).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(classify)?;
        let mut events = Vec::with_capacity(rows.len());
        for row in &rows {
            events.extend(decode_event_row(
                row.try_get::<i64, _>(0).map_err(classify)?,
                &row.try_get::<String, _>(1).map_err(classify)?,
                generation,
            )?);
        }
        Ok(events)
    }

    /// Notices from other processes; the first subscriber starts the listening connection.
    fn notices(&self) -> Option<broadcast::Receiver<Notice>> {
        let (receiver, first) = self.notices.subscribe();
        if first {
            let pool = self.pool.clone();
            let hub = Arc::downgrade(&self.notices);
            tokio::spawn(listen(pool, hub));
        }
        Some(receiver)
    }

    fn poll_interval(&self) -> Duration {
        POLL_INTERVAL
    }
}

fn task_refs(rows: &[<sqlx::Postgres as sqlx::Database>::Row]) -> Result<Vec<TaskRef>, StoreError> {
    rows.iter()
        .map(|row| {
            Ok(TaskRef {
                tenant: row.try_get::<String, _>(0).map_err(classify)?,
                id: TaskId::new(row.try_get::<String, _>(1).map_err(classify)?),
            })
        })
        .collect()
}

/// Sends a notice when the transaction commits, to every process listening on the channel of
/// the store's schema.
pub(super) async fn announce(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    payload: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_notify($1 || current_schema(), $2)")
        .bind(CHANNEL)
        .bind(payload)
        .execute(&mut **tx)
        .await
        .map(|_| ())
}

/// Followers look at the store this often even with notices, in case one was lost (a
/// listening connection that broke and came back misses what was sent meanwhile).
const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// Listens on the channel of the store's schema for as long as the store lives, reconnecting
/// after a failure.
async fn listen(pool: PgPool, hub: Weak<NoticeHub>) {
    loop {
        let listener = async {
            let mut listener = PgListener::connect_with(&pool).await?;
            let schema: String = sqlx::query_scalar("SELECT current_schema()")
                .fetch_one(&mut listener)
                .await?;
            listener.listen(&format!("{CHANNEL}{schema}")).await?;
            Ok::<_, sqlx::Error>(listener)
        };
        let mut listener = match listener.await {
            Ok(listener) => listener,
            Err(error) => {
                tracing::warn!(%error, "cannot listen for store notices; retrying in 1 s");
                tokio::time::sleep(Duration::from_secs(1)).await;
                if hub.strong_count() == 0 {
                    return;
                }
                continue;
            }
        };
        loop {
            // Checked between notices, so a dropped store's listener ends within a second.
            match tokio::time::timeout(Duration::from_secs(1), listener.try_recv()).await {
                Err(_) => {}
                Ok(Ok(Some(notification))) => {
                    if let (Some(hub), Some(notice)) =
                        (hub.upgrade(), decode_notice(notification.payload()))
                    {
                        hub.publish(notice);
                    }
                }
                Ok(Ok(None)) => {} // The connection was lost and will be re-established.
                Ok(Err(error)) => {
                    tracing::warn!(%error, "listening for store notices failed");
                    break;
                }
            }
            if hub.strong_count() == 0 {
                return;
            }
        }
    }
}
