//! Tasks read, listed and written, and the idempotency key index.

use a2a_protocol_types::{Message, Task, TaskId};
use rusqlite::types::Value;
use rusqlite::{Connection, params, params_from_iter};

use super::statement::{execute, row, rows};
use super::{SqliteTaskStore, classify, int};
use crate::store::sql::{
    LISTED, caller_column, decode_head, decode_message, holder_outcome, now_millis, status_millis,
};
use crate::store::{
    Capabilities, ClaimOutcome, KeyClaim, Loaded, PageCursor, StoreError, StoredTask, TaskPage,
    TaskQuery, TaskStore, TaskWrite, WriteOutcome,
};

#[async_trait::async_trait]
impl TaskStore for SqliteTaskStore {
    /// The head, then the history, unless the head is still at revision `known`: a message
    /// written between the two reads makes the history one ahead of the revision, so a write
    /// over that revision fails and its writer reads again; it never writes over history it
    /// has not seen.
    async fn load(
        &self,
        tenant: &str,
        id: &TaskId,
        known: Option<u64>,
    ) -> Result<Loaded, StoreError> {
        let tenant = self.task_tenant(tenant).to_owned();
        let id = id.to_string();
        self.database
            .read(move |connection| {
                let Some(mut stored) = head(connection, &tenant, &id)? else {
                    return Ok(Loaded::Missing);
                };
                if Some(stored.revision) == known {
                    return Ok(Loaded::Unchanged(stored));
                }
                stored.task.history = history(connection, &tenant, &id)?;
                Ok(Loaded::Changed(stored))
            })
            .await
    }

    async fn list(&self, tenant: &str, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        let tenant = self.task_tenant(tenant).to_owned();
        let query = query.clone();
        self.database
            .read(move |connection| list(connection, &tenant, &query))
            .await
    }

    async fn write(&self, write: &TaskWrite<'_>) -> Result<WriteOutcome, StoreError> {
        self.database
            .write_task(self.task_tenant(write.tenant), write)
            .await
    }

    fn supports_idempotency(&self) -> bool {
        true
    }

    async fn claim_idempotency_key(&self, claim: &KeyClaim) -> Result<ClaimOutcome, StoreError> {
        // Retries are the common case for a held key: answer them with a read.
        if let Some(held) = self.find_idempotency_key(claim).await? {
            return Ok(held);
        }
        let claim = claim.clone();
        self.database
            .write(move |tx| {
                Ok(match claim_key(tx, &claim)? {
                    Claimed::Ours(_) => ClaimOutcome::Claimed,
                    Claimed::Held(held) => held,
                })
            })
            .await
    }

    async fn release_idempotency_key(&self, claim: &KeyClaim) -> Result<(), StoreError> {
        let claim = claim.clone();
        self.database
            .write(move |tx| {
                execute(
                    tx,
                    "DELETE FROM a2a_idempotency_keys \
                     WHERE tenant = ?1 AND caller = ?2 AND idempotency_key = ?3 AND task_id = ?4",
                    params![
                        claim.scope.tenant,
                        caller_column(&claim.scope),
                        claim.key.as_str(),
                        claim.task_id.as_str()
                    ],
                )
                .map(drop)
            })
            .await
    }

    async fn find_idempotency_key(
        &self,
        claim: &KeyClaim,
    ) -> Result<Option<ClaimOutcome>, StoreError> {
        let claim = claim.clone();
        self.database
            .read(move |connection| {
                let held = row(
                    connection,
                    "SELECT message_id, task_id FROM a2a_idempotency_keys \
                     WHERE tenant = ?1 AND caller = ?2 AND idempotency_key = ?3",
                    params![
                        claim.scope.tenant,
                        caller_column(&claim.scope),
                        claim.key.as_str()
                    ],
                    |row| Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?)),
                )?;
                Ok(held.map(|(message_id, task_id)| holder_outcome(&claim, &message_id, task_id)))
            })
            .await
    }

    fn capabilities(&self) -> Capabilities<'_> {
        Capabilities::default()
            .with_coordination(self)
            .with_push(self)
    }
}

/// The task without its history, with its revision and turn.
/// What taking a key found.
pub(super) enum Claimed {
    /// This write took it; its row carries this token.
    Ours(String),
    /// Another send holds it.
    Held(crate::store::ClaimOutcome),
}

/// Takes the key, or says who holds it. The row carries a token only this claim knows, so
/// the row returned is this claim's exactly when the token is.
pub(super) fn claim_key(connection: &Connection, claim: &KeyClaim) -> Result<Claimed, StoreError> {
    let token = uuid::Uuid::new_v4().to_string();
    let holder = row(
        connection,
        "INSERT INTO a2a_idempotency_keys \
           (tenant, caller, idempotency_key, message_id, task_id, claim_token, created_millis) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
         ON CONFLICT (tenant, caller, idempotency_key) \
           DO UPDATE SET idempotency_key = excluded.idempotency_key \
         RETURNING message_id, task_id, claim_token",
        params![
            claim.scope.tenant,
            caller_column(&claim.scope),
            claim.key.as_str(),
            claim.message_id.as_str(),
            claim.task_id.as_str(),
            token,
            now_millis(),
        ],
        |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
            ))
        },
    )?;
    match holder {
        Some((_, _, holder_token)) if holder_token == token => Ok(Claimed::Ours(token)),
        Some((message_id, task_id, _)) => {
            Ok(Claimed::Held(holder_outcome(claim, &message_id, task_id)))
        }
        None => Err(StoreError::Backend(
            format!(
                "claiming an idempotency key for task {} returned no row",
                claim.task_id
            )
            .into(),
        )),
    }
}

/// A head row: body, generation, revision, owner, cancel requested, recoveries, when the
/// owner's heartbeat expires, caller.
type HeadRow = (
    String,
    i64,
    u64,
    Option<String>,
    bool,
    u32,
    Option<i64>,
    Option<String>,
);

fn head(connection: &Connection, tenant: &str, id: &str) -> Result<Option<StoredTask>, StoreError> {
    let head: Option<HeadRow> = row(
        connection,
        "SELECT t.body, t.generation, t.revision, t.owner, t.cancel_requested, \
                t.recoveries, o.expires_millis, t.caller \
         FROM a2a_tasks t LEFT JOIN a2a_owners o ON o.id = t.owner \
         WHERE t.tenant = ?1 AND t.id = ?2",
        params![tenant, id],
        |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
            ))
        },
    )?;
    let Some((body, generation, revision, owner, cancel_requested, recoveries, expires, caller)) =
        head
    else {
        return Ok(None);
    };
    let mut stored = StoredTask::new(decode_head(&body, generation)?, revision).with_caller(caller);
    stored.owner_alive = expires.is_some_and(|at| at > now_millis());
    stored.owner = owner;
    stored.cancel_requested = cancel_requested;
    stored.recoveries = recoveries;
    Ok(Some(stored))
}

fn history(connection: &Connection, tenant: &str, id: &str) -> Result<Vec<Message>, StoreError> {
    rows(
        connection,
        "SELECT body FROM a2a_task_messages WHERE tenant = ?1 AND task_id = ?2 ORDER BY seq",
        params![tenant, id],
        |row| row.get::<_, String>(0),
    )?
    .iter()
    .map(|body| decode_message(body))
    .collect()
}

/// A page of tasks, newest status first, and how many tasks match in all.
fn list(connection: &Connection, tenant: &str, query: &TaskQuery) -> Result<TaskPage, StoreError> {
    let mut filters = format!("tenant = ?1 AND {LISTED}");
    let mut binds = vec![Value::from(tenant.to_owned())];
    let mut filter = |binds: &mut Vec<Value>, column: &str, op: &str, value: Value| {
        binds.push(value);
        filters.push_str(&format!(" AND {column} {op} ?{}", binds.len()));
    };
    if let Some(caller) = &query.caller {
        filter(&mut binds, "caller", "=", Value::from(caller.clone()));
    }
    if let Some(context) = &query.context_id {
        filter(
            &mut binds,
            "context_id",
            "=",
            Value::from(context.to_string()),
        );
    }
    if let Some(state) = query.status {
        filter(
            &mut binds,
            "state",
            "=",
            Value::from(state.as_str().to_owned()),
        );
    }
    if let Some(after) = query.status_timestamp_after {
        filter(
            &mut binds,
            "status_millis",
            ">",
            Value::from(after.unix_millis()),
        );
    }
    let total: i64 = connection
        .prepare(&format!("SELECT COUNT(*) FROM a2a_tasks WHERE {filters}"))
        .and_then(|mut statement| statement.query_row(params_from_iter(&binds), |row| row.get(0)))
        .map_err(classify)?;
    if let Some(cursor) = &query.cursor {
        binds.push(Value::from(cursor.status_millis));
        binds.push(Value::from(cursor.task_id.clone()));
        filters.push_str(&format!(
            " AND (status_millis < ?{a} OR (status_millis = ?{a} AND id < ?{b}))",
            a = binds.len() - 1,
            b = binds.len()
        ));
    }
    binds.push(Value::from(int(query.page_size).saturating_add(1)));
    // Prepared on every call, not cached: the statement differs with the filters named.
    let rows = connection
        .prepare(&format!(
            "SELECT body, generation FROM a2a_tasks WHERE {filters} \
             ORDER BY status_millis DESC, id DESC LIMIT ?{}",
            binds.len()
        ))
        .and_then(|mut statement| {
            statement
                .query_map(params_from_iter(&binds), |row| {
                    Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
                })?
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(classify)?;
    let mut tasks = rows
        .iter()
        .map(|(body, generation)| decode_head(body, *generation))
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
    for task in &mut tasks {
        task.history = history(connection, tenant, task.id.as_str())?;
    }
    Ok(TaskPage {
        tasks,
        next,
        total_size: usize::try_from(total).unwrap_or(0),
    })
}
