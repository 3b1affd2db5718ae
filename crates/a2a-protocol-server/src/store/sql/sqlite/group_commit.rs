//! Group commit for SQLite: one writer thread, one connection of its own, and every task write
//! that is waiting when it takes its turn goes into one transaction and one fsync.
//!
//! SQLite admits one writer at a time, so a server's writes queue anyway; with a transaction
//! each they queue behind each other's fsync and behind a hand-off to a database thread per
//! statement. Here a write is encoded on the caller's task, queued, and answered once the
//! transaction holding it is committed (`synchronous=FULL`: on disk). Each write runs in a
//! savepoint, so one that meets a held key, a newer revision or an error is undone alone and
//! the others still commit. An idle server pays nothing: the thread starts on the first write
//! it sees and takes along only what is already queued.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use rusqlite::{Connection, params};
use tokio::sync::oneshot;

use super::classify;
use super::statement::{execute, row};
use super::tasks::{Claimed, claim_key};
use crate::store::sql::{
    EncodedTask, caller_column, encode_events, encode_push_config, event_rows, now_millis,
};
use crate::store::{KeyClaim, StoreError, TaskWrite, WriteOutcome};

/// At most this many writes share a transaction, so a long queue is answered in steps.
const MAX_BATCH: usize = 256;

/// A queued write: not yet taken, taken by the writer, or withdrawn by its caller.
const PENDING: u8 = 0;
const TAKEN: u8 = 1;
const WITHDRAWN: u8 = 2;

/// The writer thread's handle: where writes are queued. Dropping it ends the thread once
/// the queue is empty.
pub(crate) struct GroupWriter {
    queue: mpsc::Sender<Job>,
    /// Transactions committed, for tests that show writes sharing them.
    #[cfg(test)]
    commits: Arc<std::sync::atomic::AtomicUsize>,
    /// Writes queued so far, for the same tests.
    #[cfg(test)]
    submitted: std::sync::atomic::AtomicUsize,
    /// How long a write waits in the queue before it is withdrawn and answered "busy".
    busy_timeout: Duration,
}

impl std::fmt::Debug for GroupWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupWriter").finish_non_exhaustive()
    }
}

/// Work on the writer's connection that is not a task write (a key released, a push config,
/// a heartbeat, a purge batch): it runs alone, between groups, and answers for itself.
type Exclusive = Box<dyn FnOnce(&mut Connection) + Send>;

struct Job {
    state: Arc<AtomicU8>,
    work: Work,
}

enum Work {
    Task {
        write: Box<OwnedWrite>,
        reply: oneshot::Sender<Result<WriteOutcome, StoreError>>,
    },
    Exclusive(Exclusive),
}

/// A task write with everything encoded and owned, ready for the writer thread.
struct OwnedWrite {
    task: EncodedTask,
    /// The revision the writer read; `None` creates the task.
    expected: Option<i64>,
    caller: Option<String>,
    /// (id, body) of a push config saved with the task.
    push_config: Option<(String, String)>,
    /// (generation, body) of each event, oldest first: the outbox's rows.
    events: Vec<(i64, String)>,
    /// The same events as `a2a_task_events` rows (see `event_rows`).
    event_rows: Vec<(i64, String)>,
    claim: Option<KeyClaim>,
}

impl OwnedWrite {
    fn encode(tenant: &str, write: &TaskWrite<'_>) -> Result<Self, StoreError> {
        let events = encode_events(write)?;
        Ok(Self {
            task: EncodedTask::new(tenant, write)?,
            expected: write.expected.map(|r| i64::try_from(r).unwrap_or(i64::MAX)),
            caller: write.caller.map(str::to_owned),
            push_config: write
                .push_config
                .map(|c| Ok::<_, StoreError>((c.id.to_string(), encode_push_config(c)?)))
                .transpose()?,
            event_rows: event_rows(&events),
            events,
            claim: write.claim.cloned(),
        })
    }
}

impl GroupWriter {
    /// Starts the writer thread on `connection`, which it then owns: every write of this
    /// process goes through it, so two of them never meet in SQLite's busy handler (other
    /// processes sharing the file still may).
    pub(crate) fn start(
        connection: Connection,
        busy_timeout: Duration,
    ) -> Result<Self, StoreError> {
        let (queue, jobs) = mpsc::channel();
        let commits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = commits.clone();
        std::thread::Builder::new()
            .name("a2a-sqlite-writer".to_owned())
            .spawn(move || run(connection, jobs, &counted))
            .map_err(|e| StoreError::Backend(Box::new(e)))?;
        #[cfg(not(test))]
        let _ = commits;
        Ok(Self {
            queue,
            #[cfg(test)]
            commits,
            #[cfg(test)]
            submitted: std::sync::atomic::AtomicUsize::new(0),
            busy_timeout,
        })
    }

    /// Queues `write` (its task rows under `tenant`) and waits until the transaction holding
    /// it is committed. A write still queued after the busy timeout is withdrawn, unwritten,
    /// and answered "busy"; one the writer has taken is always waited for.
    pub(crate) async fn write(
        &self,
        tenant: &str,
        write: &TaskWrite<'_>,
    ) -> Result<WriteOutcome, StoreError> {
        let (reply, answer) = oneshot::channel();
        let write = Box::new(OwnedWrite::encode(tenant, write)?);
        self.queue_and_wait(Work::Task { write, reply }, answer)
            .await
    }

    /// Runs `work` on the writer's connection, alone, and returns what it returns. Queued as
    /// a task write is: withdrawn and answered "busy" if it waits past the busy timeout.
    pub(crate) async fn exclusive<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (reply, answer) = oneshot::channel();
        let work = Work::Exclusive(Box::new(move |connection| {
            // A caller that went away learns nothing.
            let _ = reply.send(work(connection));
        }));
        self.queue_and_wait(work, answer).await
    }

    async fn queue_and_wait<T>(
        &self,
        work: Work,
        mut answer: oneshot::Receiver<Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let state = Arc::new(AtomicU8::new(PENDING));
        #[cfg(test)]
        self.submitted.fetch_add(1, Ordering::Relaxed);
        let job = Job {
            state: state.clone(),
            work,
        };
        self.queue.send(job).map_err(|_| gone())?;
        match tokio::time::timeout(self.busy_timeout, &mut answer).await {
            Ok(answered) => answered.map_err(|_| gone())?,
            Err(_) => {
                if state
                    .compare_exchange(PENDING, WITHDRAWN, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
                {
                    return Err(StoreError::Busy(format!(
                        "the write waited more than {:?} for its turn",
                        self.busy_timeout
                    )));
                }
                answer.await.map_err(|_| gone())?
            }
        }
    }
}

#[cfg(test)]
impl GroupWriter {
    /// How many writes were queued so far.
    fn queued(&self) -> usize {
        self.submitted.load(Ordering::Relaxed)
    }

    /// Occupies the writer until the returned sender is dropped or sent to, so tests can
    /// queue writes behind it. Returns once the writer has started on it.
    pub(crate) async fn hold(&self) -> std::sync::mpsc::Sender<()> {
        let (release, released) = std::sync::mpsc::channel::<()>();
        let (started, running) = oneshot::channel();
        let (reply, _answer) = oneshot::channel::<Result<(), StoreError>>();
        let work = Work::Exclusive(Box::new(move |_| {
            let _ = started.send(());
            let _ = released.recv();
            let _ = reply.send(Ok(()));
        }));
        let job = Job {
            state: Arc::new(AtomicU8::new(PENDING)),
            work,
        };
        self.queue.send(job).expect("the writer runs");
        running.await.expect("the writer started on the hold");
        release
    }
}

fn gone() -> StoreError {
    StoreError::Backend("the SQLite writer thread stopped; restart the server".into())
}

/// The writer thread: takes what is queued, writes the task writes among it in one
/// transaction, runs the rest alone in order, and answers each.
fn run(
    mut connection: Connection,
    jobs: mpsc::Receiver<Job>,
    commits: &std::sync::atomic::AtomicUsize,
) {
    while let Ok(first) = jobs.recv() {
        let mut taken = vec![first];
        while taken.len() < MAX_BATCH {
            match jobs.try_recv() {
                Ok(job) => taken.push(job),
                Err(_) => break,
            }
        }
        // A job its caller withdrew is neither run nor answered.
        taken.retain(|job| {
            job.state
                .compare_exchange(PENDING, TAKEN, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        });
        let mut group = Vec::new();
        for job in taken {
            match job.work {
                Work::Task { write, reply } => group.push((*write, reply)),
                Work::Exclusive(work) => {
                    commit_group(&connection, std::mem::take(&mut group), commits);
                    work(&mut connection);
                }
            }
        }
        commit_group(&connection, group, commits);
    }
}

type Queued = (
    OwnedWrite,
    oneshot::Sender<Result<WriteOutcome, StoreError>>,
);

fn commit_group(
    connection: &Connection,
    group: Vec<Queued>,
    commits: &std::sync::atomic::AtomicUsize,
) {
    if group.is_empty() {
        return;
    }
    let (writes, replies): (Vec<OwnedWrite>, Vec<_>) = group.into_iter().unzip();
    let outcomes = write_batch(connection, &writes);
    commits.fetch_add(1, Ordering::Relaxed);
    for (reply, outcome) in replies.into_iter().zip(outcomes) {
        // A caller that went away learns nothing; its write stands or not as answered.
        let _ = reply.send(outcome);
    }
}

/// Writes `batch` in one transaction; an outcome per job, in order. Each write undoes its own
/// key when its task write finds a newer revision, so the common batch needs no savepoints
/// (which would copy every page they touch); a write that fails outright rolls the batch back,
/// and it runs again with a savepoint per write, so the failure is that write's alone.
fn write_batch(
    connection: &Connection,
    batch: &[OwnedWrite],
) -> Vec<Result<WriteOutcome, StoreError>> {
    match try_batch(connection, batch, false) {
        Ok(outcomes) => outcomes,
        Err(Failed::One) => match try_batch(connection, batch, true) {
            Ok(outcomes) => outcomes,
            Err(Failed::One) => failed_all(batch, &gone()),
            Err(Failed::All(error)) => failed_all(batch, &error),
        },
        Err(Failed::All(error)) => failed_all(batch, &error),
    }
}

/// Why a batch was not committed.
enum Failed {
    /// A write failed without a savepoint to undo it alone; the batch was rolled back.
    One,
    /// The transaction failed as a whole (busy, I/O, disk full).
    All(StoreError),
}

/// One try at `batch`: with a savepoint per write (`careful`), or none.
fn try_batch(
    connection: &Connection,
    batch: &[OwnedWrite],
    careful: bool,
) -> Result<Vec<Result<WriteOutcome, StoreError>>, Failed> {
    run_cached(connection, "BEGIN IMMEDIATE").map_err(|e| Failed::All(classify(e)))?;
    let mut outcomes = Vec::with_capacity(batch.len());
    for job in batch {
        let outcome = if careful {
            write_one(connection, job)
        } else {
            apply(connection, job)
        };
        if let Err(error) = &outcome {
            if connection.is_autocommit() {
                // SQLite rolled the whole transaction back: nothing of the batch is written.
                return Err(Failed::All(copy_error(error)));
            }
            if !careful {
                rollback(connection);
                return Err(Failed::One);
            }
        }
        outcomes.push(outcome);
    }
    if let Err(error) = run_cached(connection, "COMMIT") {
        rollback(connection);
        return Err(Failed::All(classify(error)));
    }
    Ok(outcomes)
}

fn rollback(connection: &Connection) {
    if !connection.is_autocommit() {
        // A failed rollback leaves the connection in autocommit mode anyway; nothing to add.
        let _ = connection.execute_batch("ROLLBACK");
    }
}

/// The same error for every write of a batch that failed as a whole.
fn failed_all(batch: &[OwnedWrite], error: &StoreError) -> Vec<Result<WriteOutcome, StoreError>> {
    batch.iter().map(|_| Err(copy_error(error))).collect()
}

/// A copy of `error` that keeps whether it is worth retrying.
fn copy_error(error: &StoreError) -> StoreError {
    match error {
        StoreError::Busy(message) => StoreError::Busy(message.clone()),
        other => StoreError::Backend(other.to_string().into()),
    }
}

/// Runs a statement without parameters or rows, prepared once per connection.
fn run_cached(connection: &Connection, sql: &str) -> rusqlite::Result<()> {
    connection.prepare_cached(sql)?.execute([]).map(drop)
}

/// One write inside its own savepoint: undone alone unless it is written whole.
fn write_one(connection: &Connection, write: &OwnedWrite) -> Result<WriteOutcome, StoreError> {
    run_cached(connection, "SAVEPOINT a2a_write").map_err(classify)?;
    let outcome = apply(connection, write);
    let keep = matches!(outcome, Ok(WriteOutcome::Written));
    let undo = if keep {
        run_cached(connection, "RELEASE a2a_write")
    } else {
        run_cached(connection, "ROLLBACK TO a2a_write")
            .and_then(|()| run_cached(connection, "RELEASE a2a_write"))
    };
    match (outcome, undo) {
        (Err(error), _) => Err(error),
        (Ok(_), Err(error)) => Err(classify(error)),
        (Ok(outcome), Ok(())) => Ok(outcome),
    }
}

/// The statements of one write: the key, the head over the expected revision, the new
/// messages, the push config, the event and its outbox rows.
fn apply(connection: &Connection, write: &OwnedWrite) -> Result<WriteOutcome, StoreError> {
    let token = match &write.claim {
        Some(claim) => match claim_key(connection, claim)? {
            Claimed::Ours(token) => Some((claim, token)),
            Claimed::Held(held) => return Ok(WriteOutcome::KeyHeld(held)),
        },
        None => None,
    };
    let task = &write.task;
    let now = now_millis();
    // ?12 is the caller recorded on a new task, or the revision an update expects.
    let (sql, last): (&str, &dyn rusqlite::ToSql) = match &write.expected {
        None => (
            "INSERT INTO a2a_tasks \
               (tenant, id, context_id, state, status_millis, updated_millis, terminal, \
                body, generation, owner, recoveries, revision, caller) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, COALESCE(?11, 0), 1, ?12) \
             ON CONFLICT (tenant, id) DO NOTHING",
            &write.caller,
        ),
        Some(revision) => (
            "UPDATE a2a_tasks SET \
               context_id = ?3, state = ?4, status_millis = ?5, \
               updated_millis = CASE WHEN ?7 THEN ?6 ELSE updated_millis END, \
               terminal = ?7, body = ?8, generation = ?9, owner = ?10, \
               recoveries = COALESCE(?11, recoveries), revision = revision + 1 \
             WHERE tenant = ?1 AND id = ?2 AND revision = ?12 AND terminal = FALSE",
            revision,
        ),
    };
    let written = execute(
        connection,
        sql,
        params![
            task.tenant,
            task.id,
            task.context_id,
            task.state,
            task.status_millis,
            now,
            task.terminal,
            task.head,
            task.generation,
            task.owner,
            task.recoveries,
            last,
        ],
    )?;
    if written == 0 {
        if let Some((claim, token)) = token {
            // Undone here rather than by a savepoint: the row this write just took.
            execute(
                connection,
                "DELETE FROM a2a_idempotency_keys \
                 WHERE tenant = ?1 AND caller = ?2 AND idempotency_key = ?3 AND claim_token = ?4",
                params![
                    claim.scope.tenant,
                    caller_column(&claim.scope),
                    claim.key.as_str(),
                    token
                ],
            )?;
        }
        return Ok(WriteOutcome::Stale);
    }
    for (seq, body) in &task.messages {
        execute(
            connection,
            "INSERT INTO a2a_task_messages (tenant, task_id, seq, body) VALUES (?1, ?2, ?3, ?4)",
            params![task.tenant, task.id, seq, body],
        )?;
    }
    if let Some((id, body)) = &write.push_config {
        execute(
            connection,
            "INSERT INTO a2a_push_configs (tenant, task_id, id, body, created_millis) \
             VALUES (?1, ?2, ?3, ?4, ?5) \
             ON CONFLICT (tenant, task_id, id) DO UPDATE SET body = excluded.body",
            params![task.tenant, task.id, id, body, now],
        )?;
    }
    for (generation, row) in &write.event_rows {
        execute(
            connection,
            "INSERT INTO a2a_task_events (tenant, task_id, generation, body, created_millis) \
             VALUES (?1, ?2, ?3, ?4, ?5) \
             ON CONFLICT (tenant, task_id, generation) DO NOTHING",
            params![task.tenant, task.id, generation, row, now],
        )?;
    }
    // The outbox: a notification per push config of the task, in the same transaction, so
    // none is lost and none announces an event not written. Most tasks have no config: one
    // look says so for all the write's events.
    let pushes = !write.events.is_empty()
        && row(
            connection,
            "SELECT 1 FROM a2a_push_configs WHERE tenant = ?1 AND task_id = ?2",
            params![task.tenant, task.id],
            |_| Ok(()),
        )?
        .is_some();
    for (generation, event) in write.events.iter().filter(|_| pushes) {
        execute(
            connection,
            "INSERT INTO a2a_push_outbox \
               (tenant, task_id, config_id, generation, body, due_millis, created_millis) \
             SELECT tenant, task_id, id, ?3, ?4, ?5, ?5 FROM a2a_push_configs \
             WHERE tenant = ?1 AND task_id = ?2 \
             ON CONFLICT (tenant, task_id, config_id, generation) DO NOTHING",
            params![task.tenant, task.id, generation, event, now],
        )?;
    }
    Ok(WriteOutcome::Written)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use a2a_protocol_types::{Message, Task, TaskState, TaskStatus};

    use crate::store::{
        ClaimOutcome, KeyClaim, KeyScope, SqliteTaskStore, TaskStore, TaskStoreExt, TaskWrite,
        WriteOutcome,
    };

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

    fn task(id: &str) -> Arc<Task> {
        let mut task = Task::new(id, "ctx", TaskStatus::new(TaskState::Submitted));
        task.history.push(Message::user_text("hi"));
        task.generation = 1;
        Arc::new(task)
    }

    /// The log is copied into the database file only every `CHECKPOINT_PAGES` pages, not at
    /// SQLite's default 1 000: the log file grows past 1 000 pages before its first reset.
    #[tokio::test]
    async fn the_log_grows_past_sqlites_default_before_a_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.db");
        let store = SqliteTaskStore::open(&format!("sqlite://{}", path.display()))
            .await
            .unwrap();
        let text = "x".repeat(16 * 1024);
        for i in 0..300 {
            let mut task = Task::new(
                format!("t{i}"),
                "ctx",
                TaskStatus::new(TaskState::Submitted),
            );
            task.history.push(Message::user_text(text.clone()));
            task.generation = 1;
            let written = store
                .write(&TaskWrite::create("", &Arc::new(task)))
                .await
                .unwrap();
            assert_eq!(written, WriteOutcome::Written);
        }
        // A frame is a 4 KiB page and a 24-byte header; a log reset at 1 000 frames would
        // have kept the file below this.
        let log = std::fs::metadata(dir.path().join("tasks.db-wal"))
            .unwrap()
            .len();
        assert!(
            log > 1_100 * (4096 + 24),
            "the log was reset at SQLite's default: {log} bytes"
        );
    }

    /// Writes that queue while the writer is held share one transaction, and each gets its own
    /// outcome: a key taken twice in the batch is held for the second, a stale revision is
    /// stale, and only what was answered "written" is in the file.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn queued_writes_share_a_commit_and_keep_their_own_outcomes() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("tasks.db").display());
        let store = Arc::new(SqliteTaskStore::open(&url).await.unwrap());
        let group = store.database.writer();
        let dup = task("dup");
        store.write(&TaskWrite::create("", &dup)).await.unwrap();
        let before = group.commits.load(std::sync::atomic::Ordering::Relaxed);
        let queued_before = group.queued();

        let held = group.hold().await;
        let mut writes = Vec::new();
        for i in 0..40 {
            let store = store.clone();
            writes.push(tokio::spawn(async move {
                // Keys k0..k19 each claimed twice: by message m{i} for task t{i}.
                let key = format!("k{}", i % 20);
                let claim = claim(&key, &format!("m{i}"), &format!("t{i}"));
                let task = task(&format!("t{i}"));
                store
                    .write(&TaskWrite::create("", &task).with_claim(Some(&claim)))
                    .await
            }));
        }
        let stale_task = task("never");
        let stale = {
            let store = store.clone();
            tokio::spawn(async move { store.write(&TaskWrite::update("", &stale_task, 7)).await })
        };
        let stale_create = {
            let store = store.clone();
            tokio::spawn(async move {
                let claim = claim("k-dup", "m-dup", "dup");
                store
                    .write(&TaskWrite::create("", &task("dup")).with_claim(Some(&claim)))
                    .await
            })
        };
        // Everything queued behind the hold before it is let go.
        while group.queued() < queued_before + 42 {
            tokio::task::yield_now().await;
        }
        drop(held);

        let mut written = 0;
        let mut held_keys = 0;
        for write in writes {
            match write.await.unwrap().unwrap() {
                WriteOutcome::Written => written += 1,
                WriteOutcome::KeyHeld(ClaimOutcome::Conflict) => held_keys += 1,
                other => panic!("unexpected outcome {other:?}"),
            }
        }
        assert_eq!(stale.await.unwrap().unwrap(), WriteOutcome::Stale);
        assert_eq!(stale_create.await.unwrap().unwrap(), WriteOutcome::Stale);
        assert_eq!((written, held_keys), (20, 20));
        let commits = group.commits.load(std::sync::atomic::Ordering::Relaxed) - before;
        println!("42 writes in {commits} commits");
        assert_eq!(
            commits, 1,
            "42 writes queued behind the hold share one commit"
        );
        // The stale create gave its key back: another message takes it now.
        let again = claim("k-dup", "m-again", "after-dup");
        assert_eq!(
            store
                .write(&TaskWrite::create("", &task("after-dup")).with_claim(Some(&again)))
                .await
                .unwrap(),
            WriteOutcome::Written
        );

        let mut stored = 0;
        for i in 0..40 {
            if store
                .get("", &format!("t{i}").into())
                .await
                .unwrap()
                .is_some()
            {
                stored += 1;
            }
        }
        assert_eq!(stored, 20, "exactly the written tasks are stored");
        assert!(store.get("", &"never".into()).await.unwrap().is_none());
    }

    /// A write that fails outright (here a history message already stored) fails alone: the
    /// batch runs again with a savepoint per write and the others are written. A write whose
    /// task is stale gives back the key it took in the same batch.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failing_write_fails_alone_and_a_stale_one_frees_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("tasks.db").display());
        let store = Arc::new(SqliteTaskStore::open(&url).await.unwrap());
        let existing = task("existing");
        assert_eq!(
            store
                .write(&TaskWrite::create("", &existing))
                .await
                .unwrap(),
            WriteOutcome::Written
        );
        let group = store.database.writer();
        let queued_before = group.queued();

        let held = group.hold().await;
        let broken = {
            let store = store.clone();
            tokio::spawn(async move {
                // Revision 1 is current, but "one new message" is the one stored already.
                let mut again = Task::clone(&task("existing"));
                again.status = TaskStatus::new(TaskState::Working);
                let again = Arc::new(again);
                store
                    .write(&TaskWrite::update("", &again, 1).with_new_messages(1))
                    .await
            })
        };
        let stale = {
            let store = store.clone();
            tokio::spawn(async move {
                let claim = claim("k-stale", "m-stale", "existing");
                store
                    .write(&TaskWrite::create("", &task("existing")).with_claim(Some(&claim)))
                    .await
            })
        };
        let mut good = Vec::new();
        for i in 0..5 {
            let store = store.clone();
            good.push(tokio::spawn(async move {
                let claim = claim(&format!("g{i}"), &format!("gm{i}"), &format!("g{i}"));
                store
                    .write(&TaskWrite::create("", &task(&format!("g{i}"))).with_claim(Some(&claim)))
                    .await
            }));
        }
        while group.queued() < queued_before + 7 {
            tokio::task::yield_now().await;
        }
        drop(held);

        assert!(broken.await.unwrap().is_err(), "the broken write fails");
        assert_eq!(stale.await.unwrap().unwrap(), WriteOutcome::Stale);
        for write in good {
            assert_eq!(write.await.unwrap().unwrap(), WriteOutcome::Written);
        }
        for i in 0..5 {
            assert!(
                store
                    .get("", &format!("g{i}").into())
                    .await
                    .unwrap()
                    .is_some()
            );
        }
        let stored = store
            .load_stored("", &"existing".into())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (stored.revision, stored.task.status.state),
            (1, TaskState::Submitted),
            "nothing of the broken write stayed"
        );
        // The stale create's key is free again: a new claim of it wins.
        let again = claim("k-stale", "m-other", "fresh");
        assert_eq!(
            store
                .write(&TaskWrite::create("", &task("fresh")).with_claim(Some(&again)))
                .await
                .unwrap(),
            WriteOutcome::Written
        );
    }

    /// A write's events take one row in the events table (a fast turn writes three), and a
    /// task with no push config gets no outbox rows.
    #[tokio::test]
    async fn a_writes_events_take_one_row() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("tasks.db").display());
        let store = SqliteTaskStore::open(&url).await.unwrap();
        let first = task("t");
        store.write(&TaskWrite::create("", &first)).await.unwrap();
        let mut next = (*first).clone();
        next.generation = 4;
        next.status = TaskStatus::new(TaskState::Completed);
        let next = Arc::new(next);
        let event = a2a_protocol_types::StreamResponse::Task((*next).clone());
        let events = [event.clone(), event.clone(), event];
        let write = TaskWrite::update("", &next, 1).with_events(&events);
        assert_eq!(store.write(&write).await.unwrap(), WriteOutcome::Written);
        let (rows, generation, outbox): (i64, i64, i64) = store
            .database
            .read(|connection| {
                Ok(connection
                    .query_row(
                        "SELECT (SELECT count(*) FROM a2a_task_events), \
                                (SELECT max(generation) FROM a2a_task_events), \
                                (SELECT count(*) FROM a2a_push_outbox)",
                        [],
                        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
                    )
                    .unwrap())
            })
            .await
            .unwrap();
        assert_eq!((rows, generation, outbox), (1, 4, 0));
    }
}
