//! PostgreSQL writes in groups. Most of what a write costs the database is the statement
//! around it (its execution's start and end, its commit, the round trip), not the rows: so
//! when writes arrive faster than statements finish, the ones waiting go together in one
//! statement (creations and updates alike, see [`super::create_and_update`]), each row with
//! the outcome it would have had alone.
//!
//! A write takes a lane (a statement in flight; one for the default pool). A write that finds
//! the queue empty and a lane free runs in a statement of its own at once, exactly as without
//! groups: an idle server adds no latency. Otherwise it waits in the queue, and the next lane
//! to finish takes everything waiting (each task at most once, so every row's outcome is its
//! own) into one statement, after letting the writers it just answered write again. A
//! statement that fails in the database rolls back whole; its writes then run again one by
//! one, so only a write that fails alone fails.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use sqlx::{PgConnection, PgPool, Row as _};
use tokio::sync::oneshot;

use super::classify;
use super::create_and_update;
use super::lane_connections::LaneConnections;
use super::notices::CHANNEL;
use super::one_statement::{Done, Kind, Row, alone};
use crate::store::StoreError;
use crate::store::sql::now_millis;

/// How many times a lane lets the runtime run other tasks, while fewer writes wait than its
/// last statement answered, before it takes the queue. Each turn runs every task ready to
/// run and polls the sockets, so it delays only behind work that is already there.
const TURNS_FOR_ANSWERED_WRITERS: usize = 4;

/// The most writes one statement takes: enough to empty the queue of a busy server, few
/// enough that a statement stays short.
const MOST_PER_STATEMENT: usize = 64;

pub(super) const CREATE_MANY: &str = "\
WITH input AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int8[],
                         $7::bool[], $8::text[], $9::int8[], $10::text[], $11::int4[],
                         $12::text[], $13::text[], $14::text[], $15::text[], $16::text[],
                         $17::text[], $18::text[])
    WITH ORDINALITY AS i(tenant, id, context_id, state, status_millis, terminal, body,
                         generation, owner, recoveries, key_tenant, key_caller, key,
                         message_id, caller, push_id, push_body, ord)
), claim AS (
    INSERT INTO a2a_idempotency_keys
        (tenant, caller, idempotency_key, message_id, task_id, claim_token, created_millis)
    SELECT key_tenant, key_caller, key, message_id, id, '', $6 FROM input WHERE key IS NOT NULL
    ON CONFLICT (tenant, caller, idempotency_key) DO NOTHING
    RETURNING tenant, caller, idempotency_key, task_id
), task AS (
    INSERT INTO a2a_tasks
        (tenant, id, context_id, state, status_millis, updated_millis, terminal, body,
         generation, owner, recoveries, revision, caller)
    SELECT tenant, id, context_id, state, status_millis, $6, terminal, body, generation, owner,
           COALESCE(recoveries, 0), 1, caller
    FROM input i
    WHERE i.key IS NULL OR EXISTS (
        SELECT 1 FROM claim c
        WHERE c.tenant = i.key_tenant AND c.caller = i.key_caller
          AND c.idempotency_key = i.key AND c.task_id = i.id)
    ON CONFLICT (tenant, id) DO NOTHING
    RETURNING tenant, id
), messages AS (
    INSERT INTO a2a_task_messages (tenant, task_id, seq, body)
    SELECT i.tenant, i.id, m.seq, m.body
    FROM unnest($19::int8[], $20::int8[], $21::text[]) AS m(ord, seq, body)
    JOIN input i ON i.ord = m.ord
    WHERE EXISTS (SELECT 1 FROM task t WHERE t.tenant = i.tenant AND t.id = i.id)
), push AS (
    INSERT INTO a2a_push_configs (tenant, task_id, id, body, created_millis)
    SELECT i.tenant, i.id, i.push_id, i.push_body, $6 FROM input i
    WHERE i.push_id IS NOT NULL
      AND EXISTS (SELECT 1 FROM task t WHERE t.tenant = i.tenant AND t.id = i.id)
    ON CONFLICT (tenant, task_id, id) DO UPDATE SET body = excluded.body
)
SELECT i.ord,
       EXISTS (SELECT 1 FROM claim c
               WHERE c.tenant = i.key_tenant AND c.caller = i.key_caller
                 AND c.idempotency_key = i.key AND c.task_id = i.id),
       EXISTS (SELECT 1 FROM task t WHERE t.tenant = i.tenant AND t.id = i.id)
FROM input i";

pub(super) const UPDATE_MANY: &str = "\
WITH input AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int8[],
                         $7::bool[], $8::text[], $9::int8[], $10::text[], $11::int4[],
                         $12::int8[], $13::text[], $14::text[], $15::text[])
    WITH ORDINALITY AS i(tenant, id, context_id, state, status_millis, terminal, body,
                         generation, owner, recoveries, expected, notice, push_id, push_body,
                         ord)
), head AS (
    UPDATE a2a_tasks t SET
        context_id = i.context_id, state = i.state, status_millis = i.status_millis,
        updated_millis = CASE WHEN i.terminal THEN $6 ELSE t.updated_millis END,
        terminal = i.terminal, body = i.body, generation = i.generation, owner = i.owner,
        recoveries = COALESCE(i.recoveries, t.recoveries), revision = t.revision + 1
    FROM input i
    WHERE t.tenant = i.tenant AND t.id = i.id AND t.revision = i.expected
      AND t.terminal = FALSE
    RETURNING t.tenant, t.id
), written AS (
    SELECT i.* FROM input i
    WHERE EXISTS (SELECT 1 FROM head h WHERE h.tenant = i.tenant AND h.id = i.id)
), messages AS (
    INSERT INTO a2a_task_messages (tenant, task_id, seq, body)
    SELECT w.tenant, w.id, m.seq, m.body
    FROM unnest($16::int8[], $17::int8[], $18::text[]) AS m(ord, seq, body)
    JOIN written w ON w.ord = m.ord
), events AS (
    SELECT e.ord, e.generation, e.body
    FROM unnest($19::int8[], $20::int8[], $21::text[]) AS e(ord, generation, body)
), event AS (
    INSERT INTO a2a_task_events (tenant, task_id, generation, body, created_millis)
    SELECT w.tenant, w.id, e.generation, e.body, $6
    FROM unnest($23::int8[], $24::int8[], $25::text[]) AS e(ord, generation, body)
    JOIN written w ON w.ord = e.ord
    ON CONFLICT (tenant, task_id, generation) DO NOTHING
), outbox AS (
    INSERT INTO a2a_push_outbox
        (tenant, task_id, config_id, generation, body, due_millis, created_millis)
    SELECT w.tenant, w.id, c.id, e.generation, e.body, $6, $6
    FROM events e JOIN written w ON w.ord = e.ord
    JOIN a2a_push_configs c ON c.tenant = w.tenant AND c.task_id = w.id
    ON CONFLICT (tenant, task_id, config_id, generation) DO NOTHING
), push AS (
    INSERT INTO a2a_push_configs (tenant, task_id, id, body, created_millis)
    SELECT w.tenant, w.id, w.push_id, w.push_body, $6 FROM written w
    WHERE w.push_id IS NOT NULL
    ON CONFLICT (tenant, task_id, id) DO UPDATE SET body = excluded.body
), notice AS (
    SELECT pg_notify($22 || current_schema(), w.notice) FROM written w
    WHERE w.notice IS NOT NULL
      AND EXISTS (SELECT 1 FROM a2a_followers f
                  WHERE f.tenant = w.tenant AND f.task_id = w.id AND f.expires_millis > $6)
)
SELECT i.ord, EXISTS (SELECT 1 FROM written w WHERE w.ord = i.ord),
       (SELECT count(*) FROM notice) >= 0
FROM input i";

/// The group writer of one store.
pub(super) struct GroupWriter {
    connections: LaneConnections,
    /// Statements in flight at once, at most.
    lanes: usize,
    queue: Mutex<Queue>,
    /// Statements run for groups, and the writes they held (for tests to see groups form).
    #[cfg(test)]
    grouped: std::sync::atomic::AtomicUsize,
    #[cfg(test)]
    groups: std::sync::atomic::AtomicUsize,
}

#[derive(Default)]
struct Queue {
    waiting: VecDeque<Waiting>,
    /// Lanes in use: statements in flight, and lanes about to take the queue.
    busy: usize,
}

/// A write in the queue, and where its outcome goes.
struct Waiting {
    row: Row,
    answer: oneshot::Sender<Answer>,
}

/// A queued write's outcome: done, failed, or to run alone (its group failed).
enum Answer {
    Done(Done),
    Failed(StoreError),
    Alone(Box<Row>),
}

impl GroupWriter {
    /// Writes in groups on `pool`, with at most `lanes` statements in flight.
    pub(super) fn new(pool: PgPool, lanes: usize) -> Arc<Self> {
        let lanes = lanes.max(1);
        Arc::new(Self {
            connections: LaneConnections::new(pool, lanes),
            lanes,
            queue: Mutex::default(),
            #[cfg(test)]
            grouped: Default::default(),
            #[cfg(test)]
            groups: Default::default(),
        })
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Queue> {
        // The queue's state is consistent after every step, so a panic elsewhere leaves it
        // usable.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes `row`: at once in a statement of its own when nothing waits and a lane is
    /// free, else in the next group.
    pub(super) async fn write(self: &Arc<Self>, row: Row) -> Result<Done, StoreError> {
        let receiver = {
            let mut queue = self.queue();
            if queue.waiting.is_empty() && queue.busy < self.lanes {
                queue.busy += 1;
                Err(row)
            } else {
                let (answer, receiver) = oneshot::channel();
                queue.waiting.push_back(Waiting { row, answer });
                // A lane may have been let go by a write whose caller gave up (see `Lane`):
                // then nobody would take the queue.
                if queue.busy < self.lanes {
                    queue.busy += 1;
                    tokio::spawn(Arc::clone(self).drain());
                }
                Ok(receiver)
            }
        };
        let receiver = match receiver {
            Ok(receiver) => receiver,
            Err(row) => {
                let lane = Lane(Arc::clone(self));
                let done = self.alone(&row).await;
                drop(lane);
                return done;
            }
        };
        match receiver.await {
            Ok(Answer::Done(done)) => Ok(done),
            Ok(Answer::Failed(error)) => Err(error),
            Ok(Answer::Alone(row)) => self.alone(&row).await,
            Err(_) => Err(StoreError::Busy(
                "the store's group writer stopped before this write was done".into(),
            )),
        }
    }

    /// `row` in a statement of its own, on a lane's connection.
    async fn alone(&self, row: &Row) -> Result<Done, StoreError> {
        let mut connection = self.connections.take().await.map_err(classify)?;
        let done = alone(&mut *connection, row).await;
        self.connections.give_back(connection, &done);
        done.map_err(classify)
    }

    /// Runs groups from the queue until it is empty, then lets the lane go.
    async fn drain(self: Arc<Self>) {
        let mut answered = 0;
        loop {
            // The writers the last statement answered are running now, and most write again
            // at once (an agent's events after its task's creation; a client's next send
            // after its answer). A few turns of the runtime (never a timer) let them join
            // this statement instead of waiting for all of it in the next.
            for _ in 0..TURNS_FOR_ANSWERED_WRITERS {
                if self.queue().waiting.len() >= answered {
                    break;
                }
                tokio::task::yield_now().await;
            }
            let group = {
                let mut queue = self.queue();
                let group = take_group(&mut queue.waiting);
                if group.is_empty() {
                    queue.busy -= 1;
                    return;
                }
                group
            };
            answered = group.len();
            self.run(group).await;
        }
    }

    /// One statement for `group` (each task once, creations first), each write answered.
    async fn run(&self, group: Vec<Waiting>) {
        let (rows, answers): (Vec<Row>, Vec<oneshot::Sender<Answer>>) =
            group.into_iter().map(|w| (w.row, w.answer)).unzip();
        #[cfg(test)]
        {
            use std::sync::atomic::Ordering::Relaxed;
            self.groups.fetch_add(1, Relaxed);
            self.grouped.fetch_add(rows.len(), Relaxed);
        }
        let outcome = async {
            let mut connection = self.connections.take().await?;
            let creations = rows.iter().take_while(|row| is_creation(row)).count();
            let outcome = if creations == rows.len() {
                create_many(&mut connection, &rows).await
            } else if creations == 0 {
                update_many(&mut connection, &rows).await
            } else {
                create_and_update_many(&mut connection, &rows, creations).await
            };
            self.connections.give_back(connection, &outcome);
            outcome
        }
        .await;
        match outcome {
            Ok(done) if done.len() == rows.len() => {
                for (answer, done) in answers.into_iter().zip(done) {
                    let _ = answer.send(Answer::Done(done));
                }
            }
            Ok(_) => {
                // Not what the statement promises (an answer per write). It committed, so
                // running a write again would misreport it; say so instead of guessing.
                for answer in answers {
                    let _ = answer.send(Answer::Failed(StoreError::Backend(
                        "a group write's answers did not cover its writes; read the tasks \
                         again before retrying"
                            .into(),
                    )));
                }
            }
            // The statement failed in the database and rolled back whole: which write it
            // failed for is unknown, so each runs alone.
            Err(sqlx::Error::Database(_)) if rows.len() > 1 => {
                for (answer, row) in answers.into_iter().zip(rows) {
                    let _ = answer.send(Answer::Alone(Box::new(row)));
                }
            }
            // The connection, the pool or one write alone: every write gets the error (a
            // lost connection may have committed the statement, so none runs again here).
            Err(error) => {
                let error = classify(error);
                let message = error.to_string();
                let busy = matches!(error, StoreError::Busy(_));
                let mut error = Some(error);
                for answer in answers {
                    let error = error.take().unwrap_or_else(|| {
                        if busy {
                            StoreError::Busy(message.clone())
                        } else {
                            StoreError::Backend(message.clone().into())
                        }
                    });
                    let _ = answer.send(Answer::Failed(error));
                }
            }
        }
    }
}

/// A lane held by a write running alone; given back when it finishes or its caller gives up,
/// handing the queue that built up meanwhile to a new drain.
struct Lane(Arc<GroupWriter>);

impl Drop for Lane {
    fn drop(&mut self) {
        let mut queue = self.0.queue();
        if queue.waiting.is_empty() {
            queue.busy -= 1;
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(Arc::clone(&self.0).drain());
            }
            // Outside a runtime nothing can run the queue now; the next write starts it.
            Err(_) => queue.busy -= 1,
        }
    }
}

/// The next group: the waiting writes in order, each task at most once, up to
/// [`MOST_PER_STATEMENT`], creations first (a statement binds them first). Writes whose
/// callers gave up are dropped unwritten. What is not taken keeps its order.
fn take_group(waiting: &mut VecDeque<Waiting>) -> Vec<Waiting> {
    waiting.retain(|w| !w.answer.is_closed());
    let mut group: Vec<Waiting> = Vec::new();
    let mut rest = VecDeque::with_capacity(waiting.len());
    for w in waiting.drain(..) {
        // A scan, not a set: a group is small, and a set would copy every key.
        let fits = group.len() < MOST_PER_STATEMENT
            && !group
                .iter()
                .any(|g| g.row.task.id == w.row.task.id && g.row.task.tenant == w.row.task.tenant);
        if fits {
            group.push(w);
        } else {
            rest.push_back(w);
        }
    }
    *waiting = rest;
    // Stable: the creations keep their order, and so do the updates.
    group.sort_by_key(|w| !is_creation(&w.row));
    group
}

fn is_creation(row: &Row) -> bool {
    matches!(row.kind, Kind::Create { .. })
}

/// The columns every write has, as arrays with one element per write.
#[derive(Default)]
struct Heads<'a> {
    tenant: Vec<&'a str>,
    id: Vec<&'a str>,
    context_id: Vec<&'a str>,
    state: Vec<&'a str>,
    status_millis: Vec<i64>,
    terminal: Vec<bool>,
    head: Vec<&'a str>,
    generation: Vec<i64>,
    owner: Vec<Option<&'a str>>,
    recoveries: Vec<Option<i32>>,
    push_id: Vec<Option<&'a str>>,
    push_body: Vec<Option<&'a str>>,
    /// The new messages of every write: the write's place in the group (from 1), then the
    /// message's place in its history and body.
    message_of: Vec<i64>,
    message_seq: Vec<i64>,
    message_body: Vec<&'a str>,
}

impl<'a> Heads<'a> {
    fn of(rows: &'a [Row]) -> Self {
        let mut heads = Heads::default();
        for (ord, row) in (1..).zip(rows) {
            heads.tenant.push(&row.task.tenant);
            heads.id.push(&row.task.id);
            heads.context_id.push(&row.task.context_id);
            heads.state.push(row.task.state);
            heads.status_millis.push(row.task.status_millis);
            heads.terminal.push(row.task.terminal);
            heads.head.push(&row.task.head);
            heads.generation.push(row.task.generation);
            heads.owner.push(row.task.owner.as_deref());
            heads.recoveries.push(row.task.recoveries);
            heads
                .push_id
                .push(row.push.as_ref().map(|(id, _)| id.as_str()));
            heads
                .push_body
                .push(row.push.as_ref().map(|(_, body)| body.as_str()));
            for (seq, body) in &row.task.messages {
                heads.message_of.push(ord);
                heads.message_seq.push(*seq);
                heads.message_body.push(body);
            }
        }
        heads
    }

    /// Binds the common columns onto `query` as its next 11 parameters (the 6th is now).
    fn bind(self, query: PgQuery<'a>) -> (PgQuery<'a>, PerWrite<'a>) {
        let query = query
            .bind(self.tenant)
            .bind(self.id)
            .bind(self.context_id)
            .bind(self.state)
            .bind(self.status_millis)
            .bind(now_millis())
            .bind(self.terminal)
            .bind(self.head)
            .bind(self.generation)
            .bind(self.owner)
            .bind(self.recoveries);
        let rest = PerWrite {
            push_id: self.push_id,
            push_body: self.push_body,
            message_of: self.message_of,
            message_seq: self.message_seq,
            message_body: self.message_body,
        };
        (query, rest)
    }
}

type PgQuery<'a> = sqlx::query::Query<'a, sqlx::Postgres, sqlx::postgres::PgArguments>;

/// The columns bound after the common ones.
struct PerWrite<'a> {
    push_id: Vec<Option<&'a str>>,
    push_body: Vec<Option<&'a str>>,
    message_of: Vec<i64>,
    message_seq: Vec<i64>,
    message_body: Vec<&'a str>,
}

/// Creates `rows` (creations all) in one statement: for each, whether its key was taken and
/// whether its task was inserted.
async fn create_many(on: &mut PgConnection, rows: &[Row]) -> Result<Vec<Done>, sqlx::Error> {
    let answers = bind_creations(sqlx::query(CREATE_MANY), rows)
        .fetch_all(on)
        .await?;
    in_order(rows.len(), &answers, created)
}

/// Updates `rows` (updates all, each task once) in one statement: for each, whether it was
/// written.
async fn update_many(on: &mut PgConnection, rows: &[Row]) -> Result<Vec<Done>, sqlx::Error> {
    let answers = bind_updates(sqlx::query(UPDATE_MANY), rows)
        .fetch_all(on)
        .await?;
    in_order(rows.len(), &answers, updated)
}

/// Creates the first `creations` of `rows` and updates the rest (each task once), in one
/// statement: one commit for both kinds, so neither waits for a statement of the other.
async fn create_and_update_many(
    on: &mut PgConnection,
    rows: &[Row],
    creations: usize,
) -> Result<Vec<Done>, sqlx::Error> {
    let (creates, updates) = rows.split_at(creations);
    let query = sqlx::query(create_and_update::CREATE_AND_UPDATE_MANY.as_str());
    let answers = bind_updates(bind_creations(query, creates), updates)
        .fetch_all(on)
        .await?;
    // The updates' answers come numbered after the creations'.
    let creations = i64::try_from(creations).unwrap_or(i64::MAX);
    in_order(rows.len(), &answers, |answer| {
        if answer.try_get::<i64, _>(0)? <= creations {
            created(answer)
        } else {
            updated(answer)
        }
    })
}

/// Binds creations `rows` onto `query`: the parameters of [`CREATE_MANY`], in its order.
fn bind_creations<'a>(query: PgQuery<'a>, rows: &'a [Row]) -> PgQuery<'a> {
    let mut key_tenant = Vec::with_capacity(rows.len());
    let mut key_caller = Vec::with_capacity(rows.len());
    let mut key = Vec::with_capacity(rows.len());
    let mut message_id = Vec::with_capacity(rows.len());
    let mut caller = Vec::with_capacity(rows.len());
    for row in rows {
        let (claim, row_caller) = match &row.kind {
            Kind::Create { claim, caller } => (claim.as_ref(), caller.as_deref()),
            Kind::Update { .. } => (None, None),
        };
        key_tenant.push(claim.map(|c| c.0.as_str()));
        key_caller.push(claim.map(|c| c.1.as_str()));
        key.push(claim.map(|c| c.2.as_str()));
        message_id.push(claim.map(|c| c.3.as_str()));
        caller.push(row_caller);
    }
    let (query, rest) = Heads::of(rows).bind(query);
    query
        .bind(key_tenant)
        .bind(key_caller)
        .bind(key)
        .bind(message_id)
        .bind(caller)
        .bind(rest.push_id)
        .bind(rest.push_body)
        .bind(rest.message_of)
        .bind(rest.message_seq)
        .bind(rest.message_body)
}

/// Binds updates `rows` onto `query`: the parameters of [`UPDATE_MANY`], in its order.
fn bind_updates<'a>(query: PgQuery<'a>, rows: &'a [Row]) -> PgQuery<'a> {
    let mut expected = Vec::with_capacity(rows.len());
    let mut notice = Vec::with_capacity(rows.len());
    let mut event_of = Vec::new();
    let mut event_generation = Vec::new();
    let mut event_body = Vec::new();
    let mut event_row_of = Vec::new();
    let mut event_row_generation = Vec::new();
    let mut event_row_body = Vec::new();
    for (ord, row) in (1i64..).zip(rows) {
        let Kind::Update {
            expected: revision,
            events,
            event_rows,
            notice: row_notice,
        } = &row.kind
        else {
            expected.push(-1);
            notice.push(None);
            continue;
        };
        expected.push(*revision);
        notice.push(row_notice.as_deref());
        for (generation, body) in events {
            event_of.push(ord);
            event_generation.push(*generation);
            event_body.push(body.as_str());
        }
        for (generation, body) in event_rows {
            event_row_of.push(ord);
            event_row_generation.push(*generation);
            event_row_body.push(body.as_str());
        }
    }
    let (query, rest) = Heads::of(rows).bind(query);
    query
        .bind(expected)
        .bind(notice)
        .bind(rest.push_id)
        .bind(rest.push_body)
        .bind(rest.message_of)
        .bind(rest.message_seq)
        .bind(rest.message_body)
        .bind(event_of)
        .bind(event_generation)
        .bind(event_body)
        .bind(CHANNEL)
        .bind(event_row_of)
        .bind(event_row_generation)
        .bind(event_row_body)
}

/// A creation's answer: whether its key was taken and whether its task was inserted.
fn created(answer: &sqlx::postgres::PgRow) -> Result<Done, sqlx::Error> {
    Ok(Done::Created {
        claimed: answer.try_get(1)?,
        created: answer.try_get(2)?,
    })
}

/// An update's answer: whether it was written.
fn updated(answer: &sqlx::postgres::PgRow) -> Result<Done, sqlx::Error> {
    Ok(Done::Updated {
        written: answer.try_get(1)?,
    })
}

/// The statement's answers (one per write, each with the write's place from 1 first) in the
/// writes' order; fewer than `count` when the answers do not cover every write once.
fn in_order(
    count: usize,
    answers: &[sqlx::postgres::PgRow],
    done: impl Fn(&sqlx::postgres::PgRow) -> Result<Done, sqlx::Error>,
) -> Result<Vec<Done>, sqlx::Error> {
    let mut ordered = vec![None; count];
    for answer in answers {
        let ord: i64 = answer.try_get(0)?;
        if let Some(slot) = usize::try_from(ord - 1)
            .ok()
            .and_then(|i| ordered.get_mut(i))
        {
            *slot = Some(done(answer)?);
        }
    }
    Ok(ordered.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;
    use std::sync::Arc;
    use std::sync::atomic::Ordering::Relaxed;

    use a2a_protocol_types::{Message, Task, TaskState, TaskStatus};
    use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

    use crate::store::Coordination as _;
    use crate::store::{
        ClaimOutcome, KeyClaim, KeyScope, PostgresTaskStore, StoreError, TaskStore, TaskStoreExt,
        TaskWrite, WriteOutcome,
    };

    /// A store in a schema of its own (dropped at the end), or `None` when
    /// `A2A_TEST_POSTGRES_URL=skip`.
    async fn store() -> Option<(Arc<PostgresTaskStore>, sqlx::PgPool, String)> {
        store_with(8, None).await
    }

    /// Like [`store`], with `connections` in the pool (an eighth of them lanes) and a lock
    /// timeout.
    async fn store_with(
        connections: u32,
        lock_timeout: Option<&str>,
    ) -> Option<(Arc<PostgresTaskStore>, sqlx::PgPool, String)> {
        let (url, admin, schema) = super::super::test_schema("a2a_group").await?;
        // Named after the schema, so a test can find the store's backends.
        let mut options = PgConnectOptions::from_str(&url)
            .unwrap()
            .application_name(&schema)
            .options([("search_path", schema.as_str())]);
        if let Some(timeout) = lock_timeout {
            options = options.options([("lock_timeout", timeout)]);
        }
        let pool = PgPoolOptions::new()
            .max_connections(connections)
            .connect_with(options)
            .await
            .unwrap();
        let store = PostgresTaskStore::from_pool(pool.clone()).await.unwrap();
        Some((Arc::new(store), admin, schema))
    }

    /// The one number `sql` selects, read from the store's database.
    async fn count(store: &PostgresTaskStore, sql: &str) -> i64 {
        sqlx::query_scalar::<_, i64>(sql)
            .fetch_one(&store.pool)
            .await
            .unwrap()
    }

    /// Updates task `id` from revision 1, in a task of its own.
    fn update(
        store: &Arc<PostgresTaskStore>,
        id: &'static str,
    ) -> tokio::task::JoinHandle<Result<WriteOutcome, StoreError>> {
        let store = store.clone();
        tokio::spawn(async move { store.write(&TaskWrite::update("", &task(id, 2), 1)).await })
    }

    /// Waits until the group writer's queue is as `ready` says.
    async fn until(group: &super::GroupWriter, ready: impl Fn(&super::Queue) -> bool) {
        while !ready(&group.queue()) {
            tokio::task::yield_now().await;
        }
    }

    use super::super::drop_schema;

    /// The store's group writer.
    fn group_of(store: &PostgresTaskStore) -> Arc<super::GroupWriter> {
        store.group.clone()
    }

    /// Creates tasks `ids` at revision 1.
    async fn create_all(store: &PostgresTaskStore, ids: &[&str]) {
        for id in ids {
            store
                .write(&TaskWrite::create("", &task(id, 1)))
                .await
                .unwrap();
        }
    }

    /// Locks the rows of tasks `ids` in a transaction of its own, held until it is dropped or
    /// rolled back: writes to them wait.
    async fn lock_rows(
        store: &PostgresTaskStore,
        ids: &[&str],
    ) -> sqlx::Transaction<'static, sqlx::Postgres> {
        let mut locker = store.pool.begin().await.unwrap();
        sqlx::query("SELECT id FROM a2a_tasks WHERE id = ANY($1) FOR UPDATE")
            .bind(ids)
            .execute(&mut *locker)
            .await
            .unwrap();
        locker
    }

    fn claim(key: &str, message: &str, task: &str) -> KeyClaim {
        KeyClaim {
            scope: KeyScope::default(),
            // Test keys are short names, made long enough to be keys.
            key: format!("{key}-0123456789abcdef")
                .parse()
                .expect("a valid key"),
            message_id: message.into(),
            task_id: task.into(),
            charged_to: None,
        }
    }

    fn task(id: &str, generation: u64) -> Arc<Task> {
        let mut task = Task::new(id, "ctx", TaskStatus::new(TaskState::Working));
        task.history.push(Message::user_text("hi"));
        task.generation = generation;
        Arc::new(task)
    }

    /// Writes that queue while every lane is busy go in groups, and each gets the outcome it
    /// would have had alone: a key taken twice is held for the second, a stale revision is
    /// stale, an existing task's creation gives its key back, and what is answered written is
    /// in the database with its messages and events.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn queued_writes_go_in_groups_and_keep_their_own_outcomes() {
        let Some((store, admin, schema)) = store().await else {
            return;
        };
        let group = group_of(&store);
        // Tasks whose rows another transaction locks: their updates hold every lane.
        let lanes = group.lanes;
        let blockers: Vec<String> = (0..lanes).map(|i| format!("l{i}")).collect();
        let blockers: Vec<&str> = blockers.iter().map(String::as_str).collect();
        create_all(&store, &blockers).await;
        create_all(&store, &["dup"]).await;
        let locker = lock_rows(&store, &blockers).await;
        let mut blocked = Vec::new();
        for i in 0..lanes {
            let store = store.clone();
            blocked.push(tokio::spawn(async move {
                let next = task(&format!("l{i}"), 2);
                store.write(&TaskWrite::update("", &next, 1)).await
            }));
        }
        until(&group, |q| q.busy >= lanes).await;

        let mut writes = Vec::new();
        for i in 0..40 {
            let store = store.clone();
            writes.push(tokio::spawn(async move {
                // Keys k0..k19 each claimed twice: by message m{i} for task t{i}.
                let claim = claim(&format!("k{}", i % 20), &format!("m{i}"), &format!("t{i}"));
                let task = task(&format!("t{i}"), 1);
                store
                    .write(&TaskWrite::create("", &task).with_claim(Some(&claim)))
                    .await
            }));
        }
        let stale = {
            let store = store.clone();
            tokio::spawn(async move {
                let next = task("dup", 2);
                store.write(&TaskWrite::update("", &next, 7)).await
            })
        };
        let created_twice = {
            let store = store.clone();
            tokio::spawn(async move {
                let claim = claim("k-dup", "m-dup", "dup");
                store
                    .write(&TaskWrite::create("", &task("dup", 1)).with_claim(Some(&claim)))
                    .await
            })
        };
        let event = a2a_protocol_types::StreamResponse::Task((*task("dup", 3)).clone());
        let updated = {
            let store = store.clone();
            tokio::spawn(async move {
                let mut next = (*task("dup", 3)).clone();
                next.status = TaskStatus::new(TaskState::Completed);
                next.history.push(Message::agent_text("done"));
                let next = Arc::new(next);
                let events = [event.clone(), event];
                store
                    .write(
                        &TaskWrite::update("", &next, 1)
                            .with_new_messages(1)
                            .with_events(&events),
                    )
                    .await
            })
        };
        until(&group, |q| q.waiting.len() >= 43).await;
        locker.commit().await.unwrap();

        for write in blocked {
            assert!(matches!(write.await.unwrap(), Ok(WriteOutcome::Written)));
        }
        let mut written = 0;
        let mut held = 0;
        for write in writes {
            match write.await.unwrap().unwrap() {
                WriteOutcome::Written => written += 1,
                WriteOutcome::KeyHeld(ClaimOutcome::Conflict) => held += 1,
                other => panic!("unexpected outcome {other:?}"),
            }
        }
        assert_eq!((written, held), (20, 20));
        assert!(matches!(stale.await.unwrap(), Ok(WriteOutcome::Stale)));
        assert!(matches!(
            created_twice.await.unwrap(),
            Ok(WriteOutcome::Stale)
        ));
        assert!(matches!(updated.await.unwrap(), Ok(WriteOutcome::Written)));

        // Groups formed: the 43 queued writes took far fewer statements.
        let (groups, grouped) = (group.groups.load(Relaxed), group.grouped.load(Relaxed));
        assert_eq!(grouped, 43, "every queued write went in a group");
        assert!(
            groups <= 3 * lanes,
            "{groups} statements for {grouped} writes"
        );

        assert_eq!(
            count(&store, "SELECT count(*) FROM a2a_tasks WHERE id LIKE 't%'").await,
            20
        );
        assert_eq!(
            count(&store, "SELECT count(*) FROM a2a_idempotency_keys").await,
            20
        );
        assert_eq!(
            count(
                &store,
                "SELECT count(*) FROM a2a_task_messages WHERE task_id LIKE 't%'"
            )
            .await,
            20
        );
        // The write's two events share one row, and read back as two.
        assert_eq!(
            count(
                &store,
                "SELECT count(*) FROM a2a_task_events WHERE task_id = 'dup'"
            )
            .await,
            1
        );
        let dup_ref = crate::store::TaskRef::new("", &"dup".into());
        assert_eq!(store.events_after(&dup_ref, 1).await.unwrap().len(), 2);
        assert_eq!(store.events_after(&dup_ref, 2).await.unwrap().len(), 1);
        let dup = store.get("", &"dup".into()).await.unwrap().unwrap();
        assert_eq!(dup.status.state, TaskState::Completed);
        assert_eq!(dup.history.len(), 2);
        // Every key's task is the one its holder created.
        assert_eq!(
            count(
                &store,
                "SELECT count(*) FROM a2a_idempotency_keys k \
                 JOIN a2a_tasks t ON t.id = k.task_id AND 'm' || substr(t.id, 2) = k.message_id"
            )
            .await,
            20
        );
        drop_schema(admin, schema).await;
    }

    /// Holds the store's only lane: an update of task `l0` (created here) that waits on a
    /// row lock, until the returned transaction ends. Returns the lock and the held write.
    async fn hold_the_lane(
        store: &Arc<PostgresTaskStore>,
    ) -> (
        sqlx::Transaction<'static, sqlx::Postgres>,
        tokio::task::JoinHandle<Result<WriteOutcome, StoreError>>,
    ) {
        let group = group_of(store);
        assert_eq!(group.lanes, 1, "the default pool has one lane");
        create_all(store, &["l0"]).await;
        let locker = lock_rows(store, &["l0"]).await;
        let held = update(store, "l0");
        until(&group, |q| q.busy >= 1).await;
        (locker, held)
    }

    /// Creations and updates waiting together go in one statement, each with the outcome it
    /// would have had alone: a key held by another creation, a stale revision, a written
    /// update with its messages.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn creations_and_updates_waiting_together_share_one_statement() {
        let Some((store, admin, schema)) = store().await else {
            return;
        };
        let group = group_of(&store);
        create_all(&store, &["u0", "u1", "u2", "u3", "stale"]).await;
        let (locker, held) = hold_the_lane(&store).await;

        let mut creations = Vec::new();
        for i in 0..6 {
            let store = store.clone();
            creations.push(tokio::spawn(async move {
                // Keys k0..k2 each claimed twice.
                let claim = claim(&format!("k{}", i % 3), &format!("m{i}"), &format!("c{i}"));
                store
                    .write(
                        &TaskWrite::create("", &task(&format!("c{i}"), 1)).with_claim(Some(&claim)),
                    )
                    .await
            }));
        }
        let updates: Vec<_> = ["u0", "u1", "u2", "u3"]
            .into_iter()
            .map(|id| update(&store, id))
            .collect();
        let stale = {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .write(&TaskWrite::update("", &task("stale", 2), 5))
                    .await
            })
        };
        until(&group, |q| q.waiting.len() >= 11).await;
        let groups_before = group.groups.load(Relaxed);
        locker.commit().await.unwrap();

        assert!(matches!(held.await.unwrap(), Ok(WriteOutcome::Written)));
        let mut outcomes = (0, 0);
        for creation in creations {
            match creation.await.unwrap().unwrap() {
                WriteOutcome::Written => outcomes.0 += 1,
                WriteOutcome::KeyHeld(ClaimOutcome::Conflict) => outcomes.1 += 1,
                other => panic!("unexpected outcome {other:?}"),
            }
        }
        assert_eq!(outcomes, (3, 3), "(created, key held)");
        for written in updates {
            assert!(matches!(written.await.unwrap(), Ok(WriteOutcome::Written)));
        }
        assert!(matches!(stale.await.unwrap(), Ok(WriteOutcome::Stale)));
        assert_eq!(
            group.groups.load(Relaxed) - groups_before,
            1,
            "the eleven writes waiting took one statement"
        );

        assert_eq!(
            count(&store, "SELECT count(*) FROM a2a_tasks WHERE id LIKE 'c%'").await,
            3
        );
        assert_eq!(
            count(
                &store,
                "SELECT count(*) FROM a2a_tasks WHERE id LIKE 'u%' AND revision = 2"
            )
            .await,
            4
        );
        assert_eq!(
            count(
                &store,
                "SELECT count(*) FROM a2a_tasks WHERE id = 'stale' AND revision = 1"
            )
            .await,
            1
        );
        drop_schema(admin, schema).await;
    }

    /// A lane that answered a group lets those writers write again before it takes the queue:
    /// tasks created together, whose writers update them at once (as an agent does), update
    /// together too, instead of the first update going alone and the rest after it.
    #[tokio::test(flavor = "current_thread")]
    async fn writers_answered_together_write_again_together() {
        let Some((store, admin, schema)) = store().await else {
            return;
        };
        let group = group_of(&store);
        let (locker, held) = hold_the_lane(&store).await;
        let sends: Vec<_> = (0..8)
            .map(|i| {
                let store = store.clone();
                tokio::spawn(async move {
                    let id = format!("s{i}");
                    store.write(&TaskWrite::create("", &task(&id, 1))).await?;
                    store.write(&TaskWrite::update("", &task(&id, 2), 1)).await
                })
            })
            .collect();
        until(&group, |q| q.waiting.len() >= 8).await;
        let (groups_before, grouped_before) =
            (group.groups.load(Relaxed), group.grouped.load(Relaxed));
        locker.commit().await.unwrap();

        assert!(matches!(held.await.unwrap(), Ok(WriteOutcome::Written)));
        for send in sends {
            assert!(matches!(send.await.unwrap(), Ok(WriteOutcome::Written)));
        }
        assert_eq!(
            (
                group.groups.load(Relaxed) - groups_before,
                group.grouped.load(Relaxed) - grouped_before
            ),
            (2, 16),
            "(statements, writes in them): the creations, then the updates"
        );
        drop_schema(admin, schema).await;
    }

    /// A lane takes back the connection it used last: writes one after another run on one
    /// backend, not on each connection of the pool in turn (the pool hands out the connection
    /// idle longest).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_one_after_another_run_on_one_connection() {
        let Some((store, admin, schema)) = store().await else {
            return;
        };
        // Six of the pool's connections open and idle.
        let mut open = Vec::new();
        for _ in 0..6 {
            open.push(store.pool.acquire().await.unwrap());
        }
        drop(open);
        let ids: Vec<String> = (0..12).map(|i| format!("s{i}")).collect();
        for id in &ids {
            store
                .write(&TaskWrite::create("", &task(id, 1)))
                .await
                .unwrap();
        }
        for id in &ids {
            let written = store.write(&TaskWrite::update("", &task(id, 2), 1)).await;
            assert!(matches!(written, Ok(WriteOutcome::Written)), "{written:?}");
        }
        let writers: Vec<i32> = sqlx::query_scalar(
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'WITH %'",
        )
        .bind(&schema)
        .fetch_all(&admin)
        .await
        .unwrap();
        assert_eq!(writers.len(), 1, "24 writes ran on backends {writers:?}");
        drop_schema(admin, schema).await;
    }

    /// A store dropped outside a runtime (its connections kept by the lanes go back to the
    /// pool through a task on one) lets them go without panicking.
    #[test]
    fn a_store_dropped_outside_a_runtime_lets_its_kept_connections_go() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let Some((store, admin, schema)) = runtime.block_on(store()) else {
            return;
        };
        runtime.block_on(create_all(&store, &["kept"]));
        drop(store);
        runtime.block_on(drop_schema(admin, schema));
    }

    /// A group that fails in the database (here one write's task is locked past the lock
    /// timeout) rolls back whole; its writes then run alone, so only that write fails.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_group_failing_in_the_database_runs_its_writes_alone() {
        let Some((store, admin, schema)) = store_with(4, Some("2s")).await else {
            return;
        };
        let group = group_of(&store);
        assert_eq!(group.lanes, 1);
        create_all(&store, &["lane", "locked", "a0", "a1", "a2", "a3", "a4"]).await;
        let locker = lock_rows(&store, &["lane", "locked"]).await;
        // The lane waits on its lock; meanwhile the others queue behind it.
        let lane = update(&store, "lane");
        until(&group, |q| q.busy >= 1).await;
        let queued: Vec<_> = ["a0", "a1", "locked", "a2", "a3", "a4"]
            .into_iter()
            .map(|id| (id, update(&store, id)))
            .collect();
        until(&group, |q| q.waiting.len() >= queued.len()).await;
        assert!(matches!(lane.await.unwrap(), Err(StoreError::Busy(_))));
        for (id, write) in queued {
            match (id, write.await.unwrap()) {
                ("locked", outcome) => {
                    assert!(matches!(outcome, Err(StoreError::Busy(_))), "{outcome:?}")
                }
                (_, outcome) => assert!(
                    matches!(outcome, Ok(WriteOutcome::Written)),
                    "{id}: {outcome:?}"
                ),
            }
        }
        assert_eq!(group.groups.load(Relaxed), 1, "the six went in one group");
        locker.rollback().await.unwrap();
        drop_schema(admin, schema).await;
    }

    /// A write running alone whose caller gives up hands its lane back, and the writes that
    /// queued behind it still run (here while the abandoned statement's row stays locked).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_queued_behind_an_abandoned_write_still_run() {
        let Some((store, admin, schema)) = store_with(4, None).await else {
            return;
        };
        let group = group_of(&store);
        create_all(&store, &["lane", "b0", "b1", "b2"]).await;
        let locker = lock_rows(&store, &["lane"]).await;
        let abandoned = update(&store, "lane");
        until(&group, |q| q.busy >= 1).await;
        let queued: Vec<_> = ["b0", "b1", "b2"]
            .into_iter()
            .map(|id| update(&store, id))
            .collect();
        until(&group, |q| q.waiting.len() >= queued.len()).await;
        abandoned.abort();
        // Bounded, so a lane never given back fails the test instead of hanging it.
        for write in queued {
            let outcome = tokio::time::timeout(std::time::Duration::from_secs(60), write)
                .await
                .expect("the queued write ran")
                .unwrap();
            assert!(matches!(outcome, Ok(WriteOutcome::Written)), "{outcome:?}");
        }
        locker.rollback().await.unwrap();
        drop_schema(admin, schema).await;
    }
}
