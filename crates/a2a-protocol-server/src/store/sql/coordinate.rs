//! The statements that let several server processes share one database: heartbeats, orphaned
//! turns, cancel requests, leases and the event feed ([`sql_coordination!`]), and the notices
//! PostgreSQL pushes as they happen ([`NoticeHub`]).

use std::sync::OnceLock;

use a2a_protocol_types::TaskId;
use tokio::sync::broadcast;

use crate::store::{Notice, TaskRef};

/// The channel PostgreSQL notices travel on is this prefix and the store's schema: channels are
/// shared by the whole database, and deployments in other schemas have other tasks.
// Only PostgreSQL pushes notices; a build with SQLite alone has no use for this.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) const CHANNEL: &str = "a2a_notices ";

/// PostgreSQL refuses a payload of 8 000 bytes or more; a longer one is not sent, and its
/// followers find the event at their next look instead.
const MAX_PAYLOAD: usize = 7_900;

/// How many notices a slow subscriber may fall behind by before it is told it lagged (and then
/// looks at the store).
// Only PostgreSQL pushes notices; a build with SQLite alone has no use for this.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
const NOTICE_BUFFER: usize = 1024;

/// The payload of a notice: a kind letter, the generation (for a change), and the task as
/// `<tenant length>:<tenant><id>`, so neither part needs escaping.
pub(crate) fn encode_notice(
    kind: char,
    generation: u64,
    tenant: &str,
    id: &TaskId,
) -> Option<String> {
    let payload = format!("{kind}{generation}:{}:{tenant}{id}", tenant.len());
    (payload.len() < MAX_PAYLOAD).then_some(payload)
}

/// Reads a payload written by [`encode_notice`].
// Only PostgreSQL pushes notices; a build with SQLite alone has no use for this.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) fn decode_notice(payload: &str) -> Option<Notice> {
    let kind = payload.chars().next()?;
    let rest = &payload[kind.len_utf8()..];
    let (generation, rest) = rest.split_once(':')?;
    let (length, rest) = rest.split_once(':')?;
    let length: usize = length.parse().ok()?;
    let tenant = rest.get(..length)?;
    let id = rest.get(length..)?;
    let task = TaskRef {
        tenant: tenant.to_owned(),
        id: TaskId::new(id),
    };
    match kind {
        'g' => Some(Notice::Changed {
            task,
            generation: generation.parse().ok()?,
        }),
        'c' => Some(Notice::CancelRequested(task)),
        _ => None,
    }
}

/// Where a store's pushed notices fan out to every subscriber in the process. The listener
/// that feeds it starts with the first subscriber.
// Only PostgreSQL pushes notices; a build with SQLite alone has no use for this.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
#[derive(Default)]
pub(crate) struct NoticeHub {
    sender: OnceLock<broadcast::Sender<Notice>>,
}

// Only PostgreSQL pushes notices; a build with SQLite alone has no use for this.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
impl NoticeHub {
    /// A receiver of notices, and whether the caller must start the listener (the first time).
    pub(crate) fn subscribe(&self) -> (broadcast::Receiver<Notice>, bool) {
        let mut first = false;
        let sender = self.sender.get_or_init(|| {
            first = true;
            broadcast::channel(NOTICE_BUFFER).0
        });
        (sender.subscribe(), first)
    }

    /// Hands a notice to every subscriber.
    pub(crate) fn publish(&self, notice: Notice) {
        if let Some(sender) = self.sender.get() {
            let _ = sender.send(notice);
        }
    }
}

/// Generates the coordination statements on `SqlCore` (see [`Coordination`](crate::store::Coordination)).
/// `announce` sends a notice inside a transaction (a no-op where the database cannot push).
macro_rules! sql_coordination {
    ($db:ty, $classify:path, announce: $announce:path) => {
        impl SqlCore {
            pub(crate) async fn heartbeat(&self, owner: &str, ttl: Duration) -> Result<(), StoreError> {
                let _turn = self.write_turn().await?;
                sqlx::query(
                    "INSERT INTO a2a_owners (id, expires_millis) VALUES ($1, $2) \
                     ON CONFLICT (id) DO UPDATE SET expires_millis = excluded.expires_millis",
                )
                .bind(owner)
                .bind(now_millis().saturating_add(millis(ttl)))
                .execute(&self.pool)
                .await
                .map_err($classify)?;
                Ok(())
            }

            pub(crate) async fn retire(&self, owner: &str) -> Result<(), StoreError> {
                let _turn = self.write_turn().await?;
                sqlx::query("DELETE FROM a2a_owners WHERE id = $1")
                    .bind(owner)
                    .execute(&self.pool)
                    .await
                    .map_err($classify)?;
                Ok(())
            }

            pub(crate) async fn orphaned_turns(&self, limit: usize) -> Result<Vec<crate::store::TaskRef>, StoreError> {
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
                .map_err($classify)?;
                task_refs(&rows)
            }

            pub(crate) async fn request_cancel(&self, task: &crate::store::TaskRef) -> Result<(), StoreError> {
                let tenant = self.task_tenant(&task.tenant);
                let _turn = self.write_turn().await?;
                let mut tx = self.pool.begin().await.map_err($classify)?;
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
                .map_err($classify)?;
                if let Some(payload) =
                    crate::store::sql::coordinate::encode_notice('c', 0, tenant, &task.id)
                {
                    $announce(&mut tx, &payload).await.map_err($classify)?;
                }
                tx.commit().await.map_err($classify)?;
                Ok(())
            }

            pub(crate) async fn cancel_requests(&self, owner: &str) -> Result<Vec<crate::store::TaskRef>, StoreError> {
                let rows = sqlx::query(
                    "SELECT tenant, id FROM a2a_tasks \
                     WHERE owner = $1 AND cancel_requested = $2 AND terminal = $3",
                )
                .bind(owner)
                .bind(true)
                .bind(false)
                .fetch_all(&self.pool)
                .await
                .map_err($classify)?;
                task_refs(&rows)
            }

            pub(crate) async fn grant_lease(&self, task: &crate::store::TaskRef, ttl: Duration) -> Result<(), StoreError> {
                let ttl = millis(ttl);
                let _turn = self.write_turn().await?;
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
                .map_err($classify)?;
                Ok(())
            }

            pub(crate) async fn renew_lease(&self, task: &crate::store::TaskRef) -> Result<bool, StoreError> {
                let _turn = self.write_turn().await?;
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
                .map_err($classify)?
                .rows_affected();
                Ok(renewed > 0)
            }

            /// Clears each lapsed lease in the statement that finds it: a process that finds
            /// the lease cleared by another's statement (re-checked on the row it waited for)
            /// does not take it.
            pub(crate) async fn take_lapsed_leases(&self, limit: usize) -> Result<Vec<crate::store::TaskRef>, StoreError> {
                let now = now_millis();
                let _turn = self.write_turn().await?;
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
                .map_err($classify)?;
                task_refs(&rows)
            }

            pub(crate) async fn follow(
                &self,
                task: &crate::store::TaskRef,
                process: &str,
                ttl: Duration,
            ) -> Result<(), StoreError> {
                let _turn = self.write_turn().await?;
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
                .map_err($classify)?;
                Ok(())
            }

            pub(crate) async fn events_after(
                &self,
                task: &crate::store::TaskRef,
                generation: u64,
            ) -> Result<Vec<a2a_protocol_types::StreamResponse>, StoreError> {
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
                .map_err($classify)?;
                let mut events = Vec::with_capacity(rows.len());
                for row in &rows {
                    events.extend(crate::store::sql::decode_event_row(
                        row.try_get::<i64, _>(0).map_err($classify)?,
                        &row.try_get::<String, _>(1).map_err($classify)?,
                        generation,
                    )?);
                }
                Ok(events)
            }
        }

        fn task_refs(rows: &[<$db as sqlx::Database>::Row]) -> Result<Vec<crate::store::TaskRef>, StoreError> {
            rows.iter()
                .map(|row| {
                    Ok(crate::store::TaskRef {
                        tenant: row.try_get::<String, _>(0).map_err($classify)?,
                        id: TaskId::new(row.try_get::<String, _>(1).map_err($classify)?),
                    })
                })
                .collect()
        }
    };
}

pub(crate) use sql_coordination;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_read_back_as_written_whatever_the_names_hold() {
        for (tenant, id) in [("", "t-1"), ("acme", "t:2"), ("a:b:c", "x"), ("é", "ü:1")] {
            let payload = encode_notice('g', 42, tenant, &TaskId::new(id)).expect("short enough");
            assert_eq!(
                decode_notice(&payload),
                Some(Notice::Changed {
                    task: TaskRef {
                        tenant: tenant.into(),
                        id: TaskId::new(id)
                    },
                    generation: 42
                })
            );
            let payload = encode_notice('c', 0, tenant, &TaskId::new(id)).expect("short enough");
            assert!(
                matches!(decode_notice(&payload), Some(Notice::CancelRequested(t)) if t.id.as_str() == id)
            );
        }
        assert_eq!(decode_notice("x1:0:t"), None);
        assert_eq!(decode_notice("g1:9:short"), None);
        assert!(encode_notice('g', 1, &"t".repeat(8000), &TaskId::new("x")).is_none());
    }
}
