//! Tasks read, listed and written, and the idempotency key index.

use a2a_protocol_types::{Message, Task, TaskId};
use sqlx::Row as _;

use super::coordinate::announce;
use super::{PostgresTaskStore, classify};
use crate::store::sql::codec::{encode_head, encode_message};
use crate::store::sql::{
    LISTED, caller_column, decode_head, decode_message, encode_events, encode_push_config,
    event_rows, holder_outcome, now_millis, status_millis,
};
use crate::store::{
    Capabilities, ClaimOutcome, KeyClaim, Loaded, PageCursor, StoreError, StoredTask, TaskPage,
    TaskQuery, TaskStore, TaskWrite, WriteOutcome,
};

#[async_trait::async_trait]
impl TaskStore for PostgresTaskStore {
    /// The head, then the history, unless the head is still at revision `known`: a
    /// message written between the two reads makes the history one ahead of the
    /// revision, so a write over that revision fails and its writer reads again; it
    /// never writes over history it has not seen.
    async fn load(
        &self,
        tenant: &str,
        id: &TaskId,
        known: Option<u64>,
    ) -> Result<Loaded, StoreError> {
        let Some(mut stored) = self.head(tenant, id).await? else {
            return Ok(Loaded::Missing);
        };
        if Some(stored.revision) == known {
            return Ok(Loaded::Unchanged(stored));
        }
        stored.task.history = self.history(self.task_tenant(tenant), id.as_str()).await?;
        Ok(Loaded::Changed(stored))
    }

    async fn list(&self, tenant: &str, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        let tenant = self.task_tenant(tenant);
        let mut filters = format!("tenant = $1 AND {}", LISTED);
        let mut binds = vec![Bind::Text(tenant.to_owned())];
        if let Some(caller) = &query.caller {
            binds.push(Bind::Text(caller.clone()));
            filters.push_str(&format!(" AND caller = ${}", binds.len()));
        }
        if let Some(context) = &query.context_id {
            binds.push(Bind::Text(context.to_string()));
            filters.push_str(&format!(" AND context_id = ${}", binds.len()));
        }
        if let Some(state) = query.status {
            binds.push(Bind::Text(state.as_str().to_owned()));
            filters.push_str(&format!(" AND state = ${}", binds.len()));
        }
        if let Some(after) = query.status_timestamp_after {
            binds.push(Bind::Int(after.unix_millis()));
            filters.push_str(&format!(" AND status_millis > ${}", binds.len()));
        }
        let count_sql = format!("SELECT COUNT(*) FROM a2a_tasks WHERE {filters}");
        let mut page_filters = filters.clone();
        let mut page_binds = binds.clone();
        if let Some(cursor) = &query.cursor {
            page_binds.push(Bind::Int(cursor.status_millis));
            page_binds.push(Bind::Text(cursor.task_id.clone()));
            page_filters.push_str(&format!(
                " AND (status_millis < ${a} OR (status_millis = ${a} AND id < ${b}))",
                a = page_binds.len() - 1,
                b = page_binds.len()
            ));
        }
        let limit = i64::try_from(query.page_size)
            .unwrap_or(i64::MAX)
            .saturating_add(1);
        page_binds.push(Bind::Int(limit));
        let page_sql = format!(
            "SELECT body, generation FROM a2a_tasks WHERE {page_filters} \
             ORDER BY status_millis DESC, id DESC LIMIT ${}",
            page_binds.len()
        );

        // Planned on every call, not kept: which listing index suits a filter depends
        // on how many tasks there are, and a plan kept from an empty table would walk
        // every task of the tenant to find one context's.
        let bound = |sql, binds: Vec<Bind>| {
            binds.into_iter().fold(
                sqlx::query(sql).persistent(false),
                |query, bind| match bind {
                    Bind::Text(s) => query.bind(s),
                    Bind::Int(i) => query.bind(i),
                },
            )
        };
        let total: i64 = bound(&count_sql, binds)
            .fetch_one(&self.pool)
            .await
            .map_err(classify)?
            .try_get(0)
            .map_err(classify)?;

        let rows = bound(&page_sql, page_binds)
            .fetch_all(&self.pool)
            .await
            .map_err(classify)?;
        let mut tasks = rows
            .iter()
            .map(|row| {
                decode_head(
                    &row.try_get::<String, _>(0).map_err(classify)?,
                    row.try_get(1).map_err(classify)?,
                )
            })
            .collect::<Result<Vec<Task>, StoreError>>()?;
        let next = if tasks.len() > query.page_size {
            tasks.truncate(query.page_size);
            tasks.last().map(|last| PageCursor {
                status_millis: status_millis(last),
                task_id: last.id.to_string(),
            })
        } else {
            None
        };
        self.attach_histories(tenant, &mut tasks).await?;
        Ok(TaskPage {
            tasks,
            next,
            total_size: usize::try_from(total).unwrap_or(0),
        })
    }

    /// One change: a statement through the group writer (see `one_statement.rs`), except
    /// for a follow-up that takes a key, which needs a transaction.
    async fn write(&self, write: &TaskWrite<'_>) -> Result<WriteOutcome, StoreError> {
        if let Some(outcome) = super::one_statement::write(self, write).await? {
            return Ok(outcome);
        }
        self.write_in_transaction(write).await
    }

    async fn claim_idempotency_key(&self, claim: &KeyClaim) -> Result<ClaimOutcome, StoreError> {
        // Retries are the common case for a held key: answer them with a read.
        if let Some(held) = held_key(&self.pool, claim).await? {
            return Ok(held);
        }
        let mut tx = self.pool.begin().await.map_err(classify)?;
        let held = claim_in(&mut tx, claim).await?;
        tx.commit().await.map_err(classify)?;
        Ok(held.unwrap_or(ClaimOutcome::Claimed))
    }

    async fn release_idempotency_key(&self, claim: &KeyClaim) -> Result<(), StoreError> {
        sqlx::query(
            "DELETE FROM a2a_idempotency_keys \
             WHERE tenant = $1 AND caller = $2 AND idempotency_key = $3 AND task_id = $4",
        )
        .bind(&claim.scope.tenant)
        .bind(caller_column(&claim.scope))
        .bind(claim.key.as_str())
        .bind(claim.task_id.as_str())
        .execute(&self.pool)
        .await
        .map_err(classify)?;
        Ok(())
    }

    async fn find_idempotency_key(
        &self,
        claim: &KeyClaim,
    ) -> Result<Option<ClaimOutcome>, StoreError> {
        held_key(&self.pool, claim).await
    }

    fn supports_idempotency(&self) -> bool {
        true
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities::default()
            .with_coordination(self)
            .with_push(self)
    }
}

impl PostgresTaskStore {
    /// The task without its history, with its revision and turn.
    async fn head(&self, tenant: &str, id: &TaskId) -> Result<Option<StoredTask>, StoreError> {
        let tenant = self.task_tenant(tenant);
        let Some(row) = sqlx::query(
            "SELECT t.body, t.generation, t.revision, t.owner, t.cancel_requested, \
                    t.recoveries, o.expires_millis, t.caller \
             FROM a2a_tasks t LEFT JOIN a2a_owners o ON o.id = t.owner \
             WHERE t.tenant = $1 AND t.id = $2",
        )
        .bind(tenant)
        .bind(id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(classify)?
        else {
            return Ok(None);
        };
        let task = decode_head(
            &row.try_get::<String, _>(0).map_err(classify)?,
            row.try_get(1).map_err(classify)?,
        )?;
        let revision: i64 = row.try_get(2).map_err(classify)?;
        let owner: Option<String> = row.try_get(3).map_err(classify)?;
        let cancel_requested: bool = row.try_get(4).map_err(classify)?;
        let recoveries: i32 = row.try_get(5).map_err(classify)?;
        let owner_expires: Option<i64> = row.try_get(6).map_err(classify)?;
        let caller: Option<String> = row.try_get(7).map_err(classify)?;
        let mut stored =
            StoredTask::new(task, u64::try_from(revision).unwrap_or(0)).with_caller(caller);
        stored.owner_alive = owner_expires.is_some_and(|at| at > now_millis());
        stored.owner = owner;
        stored.cancel_requested = cancel_requested;
        stored.recoveries = u32::try_from(recoveries).unwrap_or(0);
        Ok(Some(stored))
    }

    async fn history(&self, tenant: &str, id: &str) -> Result<Vec<Message>, StoreError> {
        let rows = sqlx::query(
            "SELECT body FROM a2a_task_messages WHERE tenant = $1 AND task_id = $2 ORDER BY seq",
        )
        .bind(tenant)
        .bind(id)
        .fetch_all(&self.pool)
        .await
        .map_err(classify)?;
        rows.iter()
            .map(|row| decode_message(&row.try_get::<String, _>(0).map_err(classify)?))
            .collect()
    }

    /// One change, in one transaction: the key (if any), the head over the expected
    /// revision, the new messages and the event. Anything that does not hold rolls it
    /// all back.
    async fn write_in_transaction(
        &self,
        write: &TaskWrite<'_>,
    ) -> Result<WriteOutcome, StoreError> {
        let tenant = self.task_tenant(write.tenant);
        let task = &**write.task;
        let head = encode_head(task)?;
        let events = encode_events(write)?;
        let mut tx = self.pool.begin().await.map_err(classify)?;
        if let Some(claim) = write.claim
            && let Some(held) = claim_in(&mut tx, claim).await?
        {
            tx.rollback().await.map_err(classify)?;
            return Ok(WriteOutcome::KeyHeld(held));
        }
        let generation = i64::try_from(task.generation).unwrap_or(i64::MAX);
        let statement = match write.expected {
            None => sqlx::query(
                "INSERT INTO a2a_tasks \
                   (tenant, id, context_id, state, status_millis, updated_millis, terminal, \
                    body, generation, owner, recoveries, revision, caller) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, COALESCE($11, 0), 1, $12) \
                 ON CONFLICT (tenant, id) DO NOTHING",
            ),
            Some(_) => sqlx::query(
                "UPDATE a2a_tasks SET \
                   context_id = $3, state = $4, status_millis = $5,
                   updated_millis = CASE WHEN $7 THEN $6 ELSE updated_millis END, \
                   terminal = $7, body = $8, generation = $9, owner = $10, \
                   recoveries = COALESCE($11, recoveries), revision = revision + 1 \
                 WHERE tenant = $1 AND id = $2 AND revision = $12 AND terminal = FALSE",
            ),
        }
        .bind(tenant)
        .bind(task.id.as_str())
        .bind(task.context_id.as_str())
        .bind(task.status.state.as_str())
        .bind(status_millis(task))
        .bind(now_millis())
        .bind(task.status.state.is_terminal())
        .bind(head)
        .bind(generation)
        .bind(write.owner)
        .bind(
            write
                .recoveries
                .map(|n| i32::try_from(n).unwrap_or(i32::MAX)),
        );
        let statement = match write.expected {
            Some(revision) => statement.bind(i64::try_from(revision).unwrap_or(i64::MAX)),
            None => statement.bind(write.caller),
        };
        let written = statement
            .execute(&mut *tx)
            .await
            .map_err(classify)?
            .rows_affected();
        if written == 0 {
            tx.rollback().await.map_err(classify)?;
            return Ok(WriteOutcome::Stale);
        }
        insert_messages(&mut tx, tenant, task, write.new_messages).await?;
        if let Some(config) = write.push_config {
            sqlx::query(
                "INSERT INTO a2a_push_configs (tenant, task_id, id, body, created_millis) \
                 VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (tenant, task_id, id) DO UPDATE SET body = excluded.body",
            )
            .bind(tenant)
            .bind(task.id.as_str())
            .bind(config.id.as_str())
            .bind(encode_push_config(config)?)
            .bind(now_millis())
            .execute(&mut *tx)
            .await
            .map_err(classify)?;
        }
        for (row_generation, row) in event_rows(&events) {
            sqlx::query(
                "INSERT INTO a2a_task_events (tenant, task_id, generation, body, created_millis) \
                 VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (tenant, task_id, generation) DO NOTHING",
            )
            .bind(tenant)
            .bind(task.id.as_str())
            .bind(row_generation)
            .bind(row)
            .bind(now_millis())
            .execute(&mut *tx)
            .await
            .map_err(classify)?;
        }
        for (event_generation, event) in &events {
            // The outbox: a notification per push config of the task, in this
            // transaction, so none is lost and none announces an event not written.
            sqlx::query(
                "INSERT INTO a2a_push_outbox \
                   (tenant, task_id, config_id, generation, body, due_millis, created_millis) \
                 SELECT tenant, task_id, id, $3, $4, $5, $5 FROM a2a_push_configs \
                 WHERE tenant = $1 AND task_id = $2 \
                 ON CONFLICT (tenant, task_id, config_id, generation) DO NOTHING",
            )
            .bind(tenant)
            .bind(task.id.as_str())
            .bind(event_generation)
            .bind(event.as_str())
            .bind(now_millis())
            .execute(&mut *tx)
            .await
            .map_err(classify)?;
        }
        if !events.is_empty() {
            let payload = super::notices::encode_notice('g', task.generation, tenant, &task.id);
            if let Some(payload) = payload {
                announce(&mut tx, &payload).await.map_err(classify)?;
            }
        }
        tx.commit().await.map_err(classify)?;
        Ok(WriteOutcome::Written)
    }

    /// Fills in the histories of a page of tasks with one query.
    async fn attach_histories(&self, tenant: &str, tasks: &mut [Task]) -> Result<(), StoreError> {
        if tasks.is_empty() {
            return Ok(());
        }
        let mut query = sqlx::QueryBuilder::<sqlx::Postgres>::new(
            "SELECT task_id, body FROM a2a_task_messages WHERE tenant = ",
        );
        query.push_bind(tenant).push(" AND task_id IN (");
        let mut ids = query.separated(", ");
        for task in tasks.iter() {
            ids.push_bind(task.id.as_str());
        }
        ids.push_unseparated(") ORDER BY task_id, seq");
        let rows = query
            .build()
            .fetch_all(&self.pool)
            .await
            .map_err(classify)?;
        let mut by_task: std::collections::HashMap<String, Vec<Message>> =
            std::collections::HashMap::new();
        for row in &rows {
            let id: String = row.try_get(0).map_err(classify)?;
            let message = decode_message(&row.try_get::<String, _>(1).map_err(classify)?)?;
            by_task.entry(id).or_default().push(message);
        }
        for task in tasks.iter_mut() {
            task.history = by_task.remove(task.id.as_str()).unwrap_or_default();
        }
        Ok(())
    }
}

/// Appends the last `count` messages of `task.history`, numbered by their place in it.
async fn insert_messages(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    tenant: &str,
    task: &Task,
    count: usize,
) -> Result<(), StoreError> {
    let first = task.history.len().saturating_sub(count);
    if first == task.history.len() {
        return Ok(());
    }
    let rows = task.history[first..]
        .iter()
        .enumerate()
        .map(|(i, message)| {
            Ok((
                i64::try_from(first + i).unwrap_or(i64::MAX),
                encode_message(message)?,
            ))
        })
        .collect::<Result<Vec<(i64, String)>, StoreError>>()?;
    let mut query = sqlx::QueryBuilder::<sqlx::Postgres>::new(
        "INSERT INTO a2a_task_messages (tenant, task_id, seq, body) ",
    );
    query.push_values(rows, |mut row, (seq, body)| {
        row.push_bind(tenant)
            .push_bind(task.id.as_str())
            .push_bind(seq)
            .push_bind(body);
    });
    query.build().execute(&mut **tx).await.map_err(classify)?;
    Ok(())
}

/// Who holds the claim's key, if anyone does.
pub(crate) async fn held_key<'e, E>(
    executor: E,
    claim: &KeyClaim,
) -> Result<Option<ClaimOutcome>, StoreError>
where
    E: sqlx::Executor<'e, Database = sqlx::Postgres>,
{
    let held = sqlx::query(
        "SELECT message_id, task_id FROM a2a_idempotency_keys \
         WHERE tenant = $1 AND caller = $2 AND idempotency_key = $3",
    )
    .bind(&claim.scope.tenant)
    .bind(caller_column(&claim.scope))
    .bind(claim.key.as_str())
    .fetch_optional(executor)
    .await
    .map_err(classify)?;
    held.map(|row| {
        let message_id: String = row.try_get(0).map_err(classify)?;
        let task_id: String = row.try_get(1).map_err(classify)?;
        Ok(holder_outcome(claim, &message_id, task_id))
    })
    .transpose()
}

/// Takes the claim's key inside `tx`; `Some(holder)` when another send holds it. One
/// statement inserts the key or touches the holder's row without changing it, and
/// either way returns the holder: reading our own token back means we inserted. So a
/// claim racing a release sees the holder or a free key, never neither; a claim
/// racing another claim's transaction waits for it.
async fn claim_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    claim: &KeyClaim,
) -> Result<Option<ClaimOutcome>, StoreError> {
    let token = uuid::Uuid::new_v4().to_string();
    let holder = sqlx::query(
        "INSERT INTO a2a_idempotency_keys \
           (tenant, caller, idempotency_key, message_id, task_id, claim_token, created_millis) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) \
         ON CONFLICT (tenant, caller, idempotency_key) \
           DO UPDATE SET idempotency_key = excluded.idempotency_key \
         RETURNING message_id, task_id, claim_token",
    )
    .bind(&claim.scope.tenant)
    .bind(caller_column(&claim.scope))
    .bind(claim.key.as_str())
    .bind(claim.message_id.as_str())
    .bind(claim.task_id.as_str())
    .bind(&token)
    .bind(now_millis())
    .fetch_one(&mut **tx)
    .await
    .map_err(classify)?;
    let message_id: String = holder.try_get(0).map_err(classify)?;
    let task_id: String = holder.try_get(1).map_err(classify)?;
    let holder_token: String = holder.try_get(2).map_err(classify)?;
    if holder_token == token {
        return Ok(None);
    }
    Ok(Some(holder_outcome(claim, &message_id, task_id)))
}

/// A bound value of a statement built for its filters.
#[derive(Clone)]
enum Bind {
    Text(String),
    Int(i64),
}
