//! PostgreSQL writes in one statement: the head, its messages, its events (with a push
//! notification per config of the task, the outbox) and its notice as
//! data-modifying CTEs, so an event costs one round trip instead of a transaction's five. A
//! statement is atomic by itself. Writes that queue while the database is busy share a
//! statement of the same shape over arrays ([`super::group`]). The notice goes only to a task some process follows from
//! outside (`a2a_followers`): a commit that notifies takes a lock every such commit shares,
//! which the common write, followed by nobody, should not pay for.
//!
//! A task's creation takes its key in the same statement (the task is inserted only if the key
//! was free). A follow-up that takes a key goes through a transaction instead: there the key
//! must be refused together with the message, which one statement cannot undo if the message's
//! write then loses its race.

use sqlx::Row as _;

use super::PostgresTaskStore;
use super::notices::CHANNEL;
use super::notices::encode_notice;
use super::tasks::held_key;
use crate::store::sql::{
    EncodedTask, caller_column, encode_events, encode_push_config, event_rows, now_millis,
};
use crate::store::{StoreError, TaskStore as _, TaskWrite, WriteOutcome};

pub(super) const CREATE: &str = "\
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

pub(super) const UPDATE: &str = "\
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
    FROM unnest($21::bigint[], $22::text[]) AS e(generation, body)
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

/// A write made ready for a statement: everything encoded and owned, so it can wait in the
/// group writer's queue (`super::group`) or be bound at once.
pub(super) struct Row {
    pub(super) task: EncodedTask,
    /// The push config saved with the write: its id and body.
    pub(super) push: Option<(String, String)>,
    pub(super) kind: Kind,
}

/// What distinguishes a creation from an update.
pub(super) enum Kind {
    Create {
        /// The key taken with the creation: its tenant, caller column, key and message id.
        claim: Option<(String, String, String, String)>,
        caller: Option<String>,
    },
    Update {
        expected: i64,
        /// Each event with its generation: the outbox's rows.
        events: Vec<(i64, String)>,
        /// The same events as `a2a_task_events` rows (see `event_rows`).
        event_rows: Vec<(i64, String)>,
        /// The notice for other processes following the task.
        notice: Option<String>,
    },
}

/// What a statement (alone or in a group) did to one write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Done {
    /// A creation: whether its key was taken (by this write) and whether the task was inserted.
    Created { claimed: bool, created: bool },
    /// An update: whether the head was at the expected revision and so written.
    Updated { written: bool },
}

impl Row {
    /// `write` ready to bind; `None` for a follow-up that takes a key (a transaction's work).
    fn new(core: &PostgresTaskStore, write: &TaskWrite<'_>) -> Result<Option<Self>, StoreError> {
        if write.expected.is_some() && write.claim.is_some() {
            return Ok(None);
        }
        let tenant = core.task_tenant(write.tenant);
        let task = &**write.task;
        let push = write
            .push_config
            .map(|c| Ok::<_, StoreError>((c.id.clone(), encode_push_config(c)?)))
            .transpose()?;
        let kind = match write.expected {
            None => Kind::Create {
                claim: write.claim.map(|c| {
                    (
                        c.scope.tenant.clone(),
                        caller_column(&c.scope),
                        c.key.as_str().to_owned(),
                        c.message_id.to_string(),
                    )
                }),
                caller: write.caller.map(str::to_owned),
            },
            Some(expected) => {
                let events = encode_events(write)?;
                let notice = (!events.is_empty())
                    .then(|| encode_notice('g', task.generation, tenant, &task.id))
                    .flatten();
                Kind::Update {
                    expected: i64::try_from(expected).unwrap_or(i64::MAX),
                    event_rows: event_rows(&events),
                    events,
                    notice,
                }
            }
        };
        Ok(Some(Self {
            task: EncodedTask::new(tenant, write)?,
            push,
            kind,
        }))
    }
}

/// Writes `write` in one statement, alone or with others waiting at the same moment (see
/// `super::group`); `None` for a follow-up that takes a key (a transaction's work).
pub(super) async fn write(
    core: &PostgresTaskStore,
    write: &TaskWrite<'_>,
) -> Result<Option<WriteOutcome>, StoreError> {
    let Some(row) = Row::new(core, write)? else {
        return Ok(None);
    };
    let done = core.group.write(row).await?;
    Ok(Some(match done {
        Done::Created { created: true, .. } | Done::Updated { written: true } => {
            WriteOutcome::Written
        }
        Done::Updated { written: false } => WriteOutcome::Stale,
        Done::Created { claimed, .. } => match write.claim {
            None => WriteOutcome::Stale,
            Some(claim) if !claimed => match held_key(&core.pool, claim).await? {
                Some(held) => WriteOutcome::KeyHeld(held),
                // Released the moment after: rare, and a retry settles it.
                None => {
                    return Err(StoreError::Busy(
                        "an idempotency key changed hands during its claim".into(),
                    ));
                }
            },
            Some(claim) => {
                // The key was taken but a task with this id exists: give the key back.
                core.release_idempotency_key(claim).await?;
                WriteOutcome::Stale
            }
        },
    }))
}

/// `row` in a statement of its own.
pub(super) async fn alone<'c>(
    on: impl sqlx::PgExecutor<'c>,
    row: &Row,
) -> Result<Done, sqlx::Error> {
    let head = sqlx::query(match row.kind {
        Kind::Create { .. } => CREATE,
        Kind::Update { .. } => UPDATE,
    })
    .bind(&row.task.tenant)
    .bind(&row.task.id)
    .bind(&row.task.context_id)
    .bind(row.task.state)
    .bind(row.task.status_millis)
    .bind(now_millis())
    .bind(row.task.terminal)
    .bind(&row.task.head)
    .bind(row.task.generation)
    .bind(row.task.owner.as_deref())
    .bind(row.task.recoveries);
    let (seqs, bodies): (Vec<i64>, Vec<&str>) = row
        .task
        .messages
        .iter()
        .map(|(seq, body)| (*seq, body.as_str()))
        .unzip();
    let push_id = row.push.as_ref().map(|(id, _)| id.as_str());
    let push_body = row.push.as_ref().map(|(_, body)| body.as_str());
    match &row.kind {
        Kind::Create { claim, caller } => {
            let claim = claim.as_ref();
            let answer = head
                .bind(claim.map(|c| c.0.as_str()))
                .bind(claim.map(|c| c.1.as_str()))
                .bind(claim.map(|c| c.2.as_str()))
                .bind(claim.map(|c| c.3.as_str()))
                .bind(seqs)
                .bind(bodies)
                .bind(caller.as_deref())
                .bind(push_id)
                .bind(push_body)
                .fetch_one(on)
                .await?;
            let claimed: i64 = answer.try_get(0)?;
            let created: i64 = answer.try_get(1)?;
            Ok(Done::Created {
                claimed: claimed == 1,
                created: created == 1,
            })
        }
        Kind::Update {
            expected,
            events,
            event_rows,
            notice,
        } => {
            let (generations, events): (Vec<i64>, Vec<&str>) =
                events.iter().map(|(g, body)| (*g, body.as_str())).unzip();
            let (row_generations, rows): (Vec<i64>, Vec<&str>) = event_rows
                .iter()
                .map(|(g, body)| (*g, body.as_str()))
                .unzip();
            let answer = head
                .bind(expected)
                .bind(seqs)
                .bind(bodies)
                .bind(events)
                .bind(CHANNEL)
                .bind(notice.as_deref())
                .bind(push_id)
                .bind(push_body)
                .bind(generations)
                .bind(row_generations)
                .bind(rows)
                .fetch_one(on)
                .await?;
            let written: i64 = answer.try_get(0)?;
            Ok(Done::Updated {
                written: written == 1,
            })
        }
    }
}
