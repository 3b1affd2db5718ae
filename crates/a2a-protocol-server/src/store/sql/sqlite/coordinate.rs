//! What server processes sharing one SQLite file agree on: who runs which turn, leases,
//! cancel requests, and the events followers in other processes read.

use std::time::Duration;

use a2a_protocol_types::{StreamResponse, TaskId};
use rusqlite::{Connection, Params, params};
use tokio::sync::broadcast;

use super::statement::rows;
use super::{SqliteTaskStore, int};
use crate::store::sql::{decode_event_row, millis, now_millis};
use crate::store::{Coordination, Notice, StoreError, TaskRef};

/// How often processes sharing the file look for what the others did: SQLite cannot push
/// notices, and a local file answers such a query in microseconds.
const POLL_INTERVAL: Duration = Duration::from_millis(100);

#[async_trait::async_trait]
impl Coordination for SqliteTaskStore {
    async fn heartbeat(&self, owner: &str, ttl: Duration) -> Result<(), StoreError> {
        let owner = owner.to_owned();
        self.execute(
            "INSERT INTO a2a_owners (id, expires_millis) VALUES (?1, ?2) \
             ON CONFLICT (id) DO UPDATE SET expires_millis = excluded.expires_millis",
            move || (owner, now_millis().saturating_add(millis(ttl))),
        )
        .await
        .map(drop)
    }

    async fn retire(&self, owner: &str) -> Result<(), StoreError> {
        let owner = owner.to_owned();
        self.execute("DELETE FROM a2a_owners WHERE id = ?1", move || [owner])
            .await
            .map(drop)
    }

    async fn orphaned_turns(&self, limit: usize) -> Result<Vec<TaskRef>, StoreError> {
        self.database
            .read(move |connection| {
                task_refs(
                    connection,
                    "SELECT t.tenant, t.id FROM a2a_tasks t \
                     LEFT JOIN a2a_owners o ON o.id = t.owner \
                     WHERE t.owner IS NOT NULL AND t.terminal = FALSE \
                       AND (o.id IS NULL OR o.expires_millis <= ?1) \
                     LIMIT ?2",
                    params![now_millis(), int(limit)],
                )
            })
            .await
    }

    async fn request_cancel(&self, task: &TaskRef) -> Result<(), StoreError> {
        let (tenant, id) = (
            self.task_tenant(&task.tenant).to_owned(),
            task.id.to_string(),
        );
        self.execute(
            "UPDATE a2a_tasks SET cancel_requested = TRUE \
             WHERE tenant = ?1 AND id = ?2 AND terminal = FALSE",
            move || (tenant, id),
        )
        .await
        .map(drop)
    }

    async fn cancel_requests(&self, owner: &str) -> Result<Vec<TaskRef>, StoreError> {
        let owner = owner.to_owned();
        self.database
            .read(move |connection| {
                task_refs(
                    connection,
                    "SELECT tenant, id FROM a2a_tasks \
                     WHERE owner = ?1 AND cancel_requested = TRUE AND terminal = FALSE",
                    [owner],
                )
            })
            .await
    }

    async fn grant_lease(&self, task: &TaskRef, ttl: Duration) -> Result<(), StoreError> {
        let (tenant, id) = (
            self.task_tenant(&task.tenant).to_owned(),
            task.id.to_string(),
        );
        let ttl = millis(ttl);
        self.execute(
            "UPDATE a2a_tasks SET lease_ttl_millis = ?1, lease_deadline_millis = ?2 \
             WHERE tenant = ?3 AND id = ?4",
            move || (ttl, now_millis().saturating_add(ttl), tenant, id),
        )
        .await
        .map(drop)
    }

    async fn renew_lease(&self, task: &TaskRef) -> Result<bool, StoreError> {
        let (tenant, id) = (
            self.task_tenant(&task.tenant).to_owned(),
            task.id.to_string(),
        );
        let renewed = self
            .execute(
                "UPDATE a2a_tasks SET lease_deadline_millis = ?1 + lease_ttl_millis \
                 WHERE tenant = ?2 AND id = ?3 AND lease_deadline_millis IS NOT NULL \
                   AND terminal = FALSE",
                move || (now_millis(), tenant, id),
            )
            .await?;
        Ok(renewed > 0)
    }

    /// Clears each lapsed lease in the statement that finds it: a process that finds the
    /// lease cleared by another's statement does not take it.
    async fn take_lapsed_leases(&self, limit: usize) -> Result<Vec<TaskRef>, StoreError> {
        self.database
            .write(move |tx| {
                task_refs(
                    tx,
                    "UPDATE a2a_tasks SET lease_deadline_millis = NULL \
                     WHERE lease_deadline_millis < ?1 AND terminal = FALSE \
                       AND (tenant, id) IN ( \
                         SELECT tenant, id FROM a2a_tasks \
                         WHERE lease_deadline_millis < ?1 AND terminal = FALSE LIMIT ?2) \
                     RETURNING tenant, id",
                    params![now_millis(), int(limit)],
                )
            })
            .await
    }

    async fn follow(&self, task: &TaskRef, process: &str, ttl: Duration) -> Result<(), StoreError> {
        let (tenant, id, process) = (
            self.task_tenant(&task.tenant).to_owned(),
            task.id.to_string(),
            process.to_owned(),
        );
        self.execute(
            "INSERT INTO a2a_followers (tenant, task_id, process, expires_millis) \
             VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (tenant, task_id, process) \
               DO UPDATE SET expires_millis = excluded.expires_millis",
            move || {
                (
                    tenant,
                    id,
                    process,
                    now_millis().saturating_add(millis(ttl)),
                )
            },
        )
        .await
        .map(drop)
    }

    async fn events_after(
        &self,
        task: &TaskRef,
        generation: u64,
    ) -> Result<Vec<StreamResponse>, StoreError> {
        let (tenant, id) = (
            self.task_tenant(&task.tenant).to_owned(),
            task.id.to_string(),
        );
        self.database
            .read(move |connection| {
                // A row holds the events of one write under the last one's generation, so the
                // first row may start at or before `generation`: decoding skips those.
                let rows = rows(
                    connection,
                    "SELECT generation, body FROM a2a_task_events \
                     WHERE tenant = ?1 AND task_id = ?2 AND generation > ?3 ORDER BY generation",
                    params![tenant, id, i64::try_from(generation).unwrap_or(i64::MAX)],
                    |row| Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?)),
                )?;
                let mut events = Vec::with_capacity(rows.len());
                for (row_generation, body) in &rows {
                    events.extend(decode_event_row(*row_generation, body, generation)?);
                }
                Ok(events)
            })
            .await
    }

    fn notices(&self) -> Option<broadcast::Receiver<Notice>> {
        None
    }

    fn poll_interval(&self) -> Duration {
        POLL_INTERVAL
    }
}

/// The tasks a statement returns as (tenant, id) rows.
fn task_refs(
    connection: &Connection,
    sql: &str,
    args: impl Params,
) -> Result<Vec<TaskRef>, StoreError> {
    rows(connection, sql, args, |row| {
        Ok(TaskRef {
            tenant: row.get(0)?,
            id: TaskId::new(row.get::<_, String>(1)?),
        })
    })
}
