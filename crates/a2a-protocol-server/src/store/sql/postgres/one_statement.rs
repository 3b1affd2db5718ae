//! PostgreSQL writes in one statement: the head, its messages, its event (with a push
//! notification per config of the task, the outbox) and its notice as
//! data-modifying CTEs, so an event costs one round trip instead of a transaction's five. A
//! statement is atomic by itself. The notice goes only to a task some process follows from
//! outside (`a2a_followers`): a commit that notifies takes a lock every such commit shares,
//! which the common write, followed by nobody, should not pay for.
//!
//! A task's creation takes its key in the same statement (the task is inserted only if the key
//! was free). A follow-up that takes a key goes through a transaction instead: there the key
//! must be refused together with the message, which one statement cannot undo if the message's
//! write then loses its race.

use sqlx::Row as _;

use super::statements::{SqlCore, held_key};
use super::{CHANNEL, classify};
use crate::store::sql::coordinate::encode_notice;
use crate::store::sql::{
    caller_column, encode_events, encode_head, encode_message, encode_push_config, now_millis,
    status_millis,
};
use crate::store::{StoreError, TaskWrite, WriteOutcome};

const CREATE: &str = "\
WITH claim AS (
    INSERT INTO a2a_idempotency_keys
        (tenant, caller, idempotency_key, message_id, task_id, claim_token, created_millis)
    SELECT $12, $13, $14, $15, $2, '', $6 WHERE $14::text IS NOT NULL
    ON CONFLICT (tenant, caller, idempotency_key) DO NOTHING
    RETURNING 1
), task AS (
    INSERT INTO a2a_tasks
        (tenant, id, context_id, state, status_millis, updated_millis, terminal, body,
         generation, owner, recoveries, revision, caller)
    SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, COALESCE($11, 0), 1, $18
    WHERE $14::text IS NULL OR EXISTS (SELECT 1 FROM claim)
    ON CONFLICT (tenant, id) DO NOTHING
    RETURNING 1
), messages AS (
    INSERT INTO a2a_task_messages (tenant, task_id, seq, body)
    SELECT $1, $2, m.seq, m.body FROM unnest($16::bigint[], $17::text[]) AS m(seq, body)
    WHERE EXISTS (SELECT 1 FROM task)
), push AS (
    INSERT INTO a2a_push_configs (tenant, task_id, id, body, created_millis)
    SELECT $1, $2, $19, $20, $6 WHERE $19::text IS NOT NULL AND EXISTS (SELECT 1 FROM task)
    ON CONFLICT (tenant, task_id, id) DO UPDATE SET body = excluded.body
)
SELECT (SELECT count(*) FROM claim), (SELECT count(*) FROM task)";

const UPDATE: &str = "\
WITH head AS (
    UPDATE a2a_tasks SET
        context_id = $3, state = $4, status_millis = $5,
        updated_millis = CASE WHEN $7 THEN $6 ELSE updated_millis END, terminal = $7,
        body = $8, generation = $9, owner = $10, recoveries = COALESCE($11, recoveries),
        revision = revision + 1
    WHERE tenant = $1 AND id = $2 AND revision = $12 AND terminal = FALSE
    RETURNING 1
), messages AS (
    INSERT INTO a2a_task_messages (tenant, task_id, seq, body)
    SELECT $1, $2, m.seq, m.body FROM unnest($13::bigint[], $14::text[]) AS m(seq, body)
    WHERE EXISTS (SELECT 1 FROM head)
), event AS (
    INSERT INTO a2a_task_events (tenant, task_id, generation, body, created_millis)
    SELECT $1, $2, e.generation, e.body, $6
    FROM unnest($20::bigint[], $15::text[]) AS e(generation, body)
    WHERE EXISTS (SELECT 1 FROM head)
    ON CONFLICT (tenant, task_id, generation) DO NOTHING
), outbox AS (
    INSERT INTO a2a_push_outbox
        (tenant, task_id, config_id, generation, body, due_millis, created_millis)
    SELECT $1, $2, c.id, e.generation, e.body, $6, $6
    FROM a2a_push_configs c, unnest($20::bigint[], $15::text[]) AS e(generation, body)
    WHERE c.tenant = $1 AND c.task_id = $2 AND EXISTS (SELECT 1 FROM head)
    ON CONFLICT (tenant, task_id, config_id, generation) DO NOTHING
), push AS (
    INSERT INTO a2a_push_configs (tenant, task_id, id, body, created_millis)
    SELECT $1, $2, $18, $19, $6 WHERE $18::text IS NOT NULL AND EXISTS (SELECT 1 FROM head)
    ON CONFLICT (tenant, task_id, id) DO UPDATE SET body = excluded.body
), notice AS (
    SELECT pg_notify($16 || current_schema(), $17)
    WHERE $17::text IS NOT NULL AND EXISTS (SELECT 1 FROM head)
      AND EXISTS (SELECT 1 FROM a2a_followers f
                  WHERE f.tenant = $1 AND f.task_id = $2 AND f.expires_millis > $6)
)
SELECT (SELECT count(*) FROM head), (SELECT count(*) FROM notice)";

/// Writes `write` in one statement; `None` for a follow-up that takes a key (a transaction's
/// work).
pub(super) async fn write(
    core: &SqlCore,
    write: &TaskWrite<'_>,
) -> Result<Option<WriteOutcome>, StoreError> {
    if write.expected.is_some() && write.claim.is_some() {
        return Ok(None);
    }
    let tenant = core.task_tenant(write.tenant);
    let task = &**write.task;
    let first_new = task.history.len().saturating_sub(write.new_messages);
    let seqs: Vec<i64> = (first_new..task.history.len())
        .map(|i| i64::try_from(i).unwrap_or(i64::MAX))
        .collect();
    let bodies = task.history[first_new..]
        .iter()
        .map(encode_message)
        .collect::<Result<Vec<String>, StoreError>>()?;
    let generation = i64::try_from(task.generation).unwrap_or(i64::MAX);
    let push_id = write.push_config.map(|c| c.id.as_str());
    let push_body = write.push_config.map(encode_push_config).transpose()?;
    let head = sqlx::query(if write.expected.is_some() {
        UPDATE
    } else {
        CREATE
    })
    .bind(tenant)
    .bind(task.id.as_str())
    .bind(task.context_id.as_str())
    .bind(task.status.state.as_str())
    .bind(status_millis(task))
    .bind(now_millis())
    .bind(task.status.state.is_terminal())
    .bind(encode_head(task)?)
    .bind(generation)
    .bind(write.owner)
    .bind(
        write
            .recoveries
            .map(|n| i32::try_from(n).unwrap_or(i32::MAX)),
    );
    let Some(expected) = write.expected else {
        let claim = write.claim;
        let row = head
            .bind(claim.map(|c| c.scope.tenant.as_str()))
            .bind(claim.map(|c| caller_column(&c.scope)))
            .bind(claim.map(|c| c.key.as_str()))
            .bind(claim.map(|c| c.message_id.as_str()))
            .bind(seqs)
            .bind(bodies)
            .bind(write.caller)
            .bind(push_id)
            .bind(push_body.as_deref())
            .fetch_one(&core.pool)
            .await
            .map_err(classify)?;
        let claimed: i64 = row.try_get(0).map_err(classify)?;
        let created: i64 = row.try_get(1).map_err(classify)?;
        return Ok(Some(match (claim, claimed, created) {
            (_, _, 1) => WriteOutcome::Written,
            (Some(claim), 0, _) => match held_key(&core.pool, claim).await? {
                Some(held) => WriteOutcome::KeyHeld(held),
                // Released the moment after: rare, and a retry settles it.
                None => {
                    return Err(StoreError::Busy(
                        "an idempotency key changed hands during its claim".into(),
                    ));
                }
            },
            (Some(claim), _, _) => {
                // The key was taken but a task with this id exists: give the key back.
                core.release(claim).await?;
                WriteOutcome::Stale
            }
            (None, _, _) => WriteOutcome::Stale,
        }));
    };
    let (event_generations, events): (Vec<i64>, Vec<String>) =
        encode_events(write)?.into_iter().unzip();
    let notice = (!events.is_empty())
        .then(|| encode_notice('g', task.generation, tenant, &task.id))
        .flatten();
    let row = head
        .bind(i64::try_from(expected).unwrap_or(i64::MAX))
        .bind(seqs)
        .bind(bodies)
        .bind(events)
        .bind(CHANNEL)
        .bind(notice)
        .bind(push_id)
        .bind(push_body.as_deref())
        .bind(event_generations)
        .fetch_one(&core.pool)
        .await
        .map_err(classify)?;
    let written: i64 = row.try_get(0).map_err(classify)?;
    Ok(Some(if written == 1 {
        WriteOutcome::Written
    } else {
        WriteOutcome::Stale
    }))
}
