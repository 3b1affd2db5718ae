//! The versioned-write contract every bundled store keeps, and the coordination the SQL stores
//! offer processes that share them.

mod common;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use a2a_protocol_server::store::{
    ClaimOutcome, KeyClaim, KeyScope, TaskRef, TaskStore, TaskStoreExt, TaskWrite, WriteOutcome,
};
use a2a_protocol_types::{
    Message, StreamResponse, Task, TaskId, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use common::stores::{StoreUnderTest, all_stores};

fn claim(message: &str, task: &str) -> KeyClaim {
    KeyClaim {
        scope: KeyScope {
            tenant: "acme".into(),
            caller: None,
        },
        key: "8f14e45fceea167a5a36dedd4bea2543"
            .parse()
            .expect("a valid key"),
        message_id: message.into(),
        task_id: task.into(),
        charged_to: None,
    }
}

/// Asserts the store under test writes `write`.
async fn assert_written(s: &StoreUnderTest, write: &TaskWrite<'_>) {
    assert_eq!(
        s.store.write(write).await.expect("ok"),
        WriteOutcome::Written,
        "{}",
        s.name
    );
}

fn status_event(task: &Task) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: task.id.clone(),
        context_id: task.context_id.clone(),
        status: task.status.clone(),
        metadata: None,
        generation: task.generation,
    })
}

#[tokio::test]
async fn a_write_over_a_stale_revision_is_refused_and_changes_nothing() {
    for s in all_stores().await {
        let store = &s.store;
        let mut task = Task::new("t-1", "c-1", TaskStatus::new(TaskState::Submitted));
        task.history.push(Message::user_text("hi"));
        task.generation = 1;
        let created = Arc::new(task.clone());
        assert_written(&s, &TaskWrite::create("acme", &created)).await;
        assert_eq!(
            store
                .write(&TaskWrite::create("acme", &created))
                .await
                .expect("ok"),
            WriteOutcome::Stale,
            "{}: it exists",
            s.name
        );
        task.status = TaskStatus::new(TaskState::Working);
        task.generation = 2;
        let working = Arc::new(task.clone());
        let event = status_event(&working);
        let write = TaskWrite::update("acme", &working, 1).with_event(&event);
        assert_written(&s, &write).await;
        // A second writer that also read revision 1 lost the race.
        task.status = TaskStatus::new(TaskState::Completed);
        task.history.push(Message::agent_text("done"));
        task.generation = 3;
        let late = Arc::new(task.clone());
        let write = TaskWrite::update("acme", &late, 1).with_new_messages(1);
        assert_eq!(
            store.write(&write).await.expect("ok"),
            WriteOutcome::Stale,
            "{}",
            s.name
        );
        let stored = store
            .load_stored("acme", &TaskId::new("t-1"))
            .await
            .expect("ok")
            .expect("stored");
        assert_eq!(stored.revision, 2, "{}", s.name);
        assert_eq!(stored.task.status.state, TaskState::Working, "{}", s.name);
        assert_eq!(
            stored.task.history.len(),
            1,
            "{}: the stale write added nothing",
            s.name
        );
        assert_eq!(stored.task.generation, 2, "{}", s.name);
        // The winner's next write goes over the revision it holds.
        let write = TaskWrite::update("acme", &late, 2).with_new_messages(1);
        assert_written(&s, &write).await;
        let stored = store
            .load_stored("acme", &TaskId::new("t-1"))
            .await
            .expect("ok")
            .expect("stored");
        assert_eq!(stored.task, task, "{}: history appended in order", s.name);
        s.cleanup().await;
    }
}

#[tokio::test]
async fn a_key_is_taken_in_the_same_step_as_its_task_or_not_at_all() {
    for s in all_stores().await {
        let store = &s.store;
        let mut first = Task::new("t-1", "c-1", TaskStatus::new(TaskState::Submitted));
        first.generation = 1;
        let first = Arc::new(first);
        let mine = claim("m-1", "t-1");
        let write = TaskWrite::create("acme", &first).with_claim(Some(&mine));
        assert_written(&s, &write).await;
        // The same key for another task: held, and the other task is not created.
        let mut second = Task::new("t-2", "c-2", TaskStatus::new(TaskState::Submitted));
        second.generation = 1;
        let second = Arc::new(second);
        for (message, expected) in [
            ("m-1", ClaimOutcome::Replay(TaskId::new("t-1"))),
            ("m-2", ClaimOutcome::Conflict),
        ] {
            let other = claim(message, "t-2");
            let write = TaskWrite::create("acme", &second).with_claim(Some(&other));
            assert_eq!(
                store.write(&write).await.expect("ok"),
                WriteOutcome::KeyHeld(expected.clone()),
                "{}",
                s.name
            );
            assert_eq!(
                store.find_idempotency_key(&other).await.expect("ok"),
                Some(expected),
                "{}",
                s.name
            );
        }
        assert!(
            store
                .load_stored("acme", &TaskId::new("t-2"))
                .await
                .expect("ok")
                .is_none(),
            "{}",
            s.name
        );
        // A write that fails on its revision leaves its key free.
        let fresh = KeyClaim {
            key: "9a14e45fceea167a5a36dedd4bea2543"
                .parse()
                .expect("a valid key"),
            ..claim("m-3", "t-1")
        };
        let write = TaskWrite::update("acme", &first, 99).with_claim(Some(&fresh));
        assert_eq!(
            store.write(&write).await.expect("ok"),
            WriteOutcome::Stale,
            "{}",
            s.name
        );
        assert_eq!(
            store.find_idempotency_key(&fresh).await.expect("ok"),
            None,
            "{}",
            s.name
        );
        s.cleanup().await;
    }
}

#[tokio::test]
async fn shared_stores_keep_turn_owners_cancel_requests_leases_and_events() {
    for s in all_stores().await {
        let Some(coordination) = s.store.capabilities().coordination else {
            assert!(
                s.name.contains("memory"),
                "{}: a SQL store coordinates",
                s.name
            );
            continue;
        };
        let store = &s.store;
        let task_ref = TaskRef {
            tenant: "acme".into(),
            id: TaskId::new("t-1"),
        };
        let mut task = Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working));
        task.generation = 1;
        let task = Arc::new(task);
        coordination
            .heartbeat("alive", Duration::from_secs(60))
            .await
            .expect("ok");
        let write = TaskWrite::create("acme", &task).with_owner(Some("alive"));
        store.write(&write).await.expect("ok");
        let stored = store
            .load_stored("acme", &task.id)
            .await
            .expect("ok")
            .expect("stored");
        assert_eq!(
            (stored.owner.as_deref(), stored.owner_alive),
            (Some("alive"), true),
            "{}",
            s.name
        );
        assert!(
            coordination
                .orphaned_turns(10)
                .await
                .expect("ok")
                .is_empty(),
            "{}",
            s.name
        );
        // A process that retires leaves its turns orphaned.
        coordination.retire("alive").await.expect("ok");
        assert_eq!(
            coordination.orphaned_turns(10).await.expect("ok").len(),
            1,
            "{}",
            s.name
        );
        coordination
            .heartbeat("alive", Duration::from_secs(60))
            .await
            .expect("ok");

        coordination.request_cancel(&task_ref).await.expect("ok");
        let asked = coordination.cancel_requests("alive").await.expect("ok");
        assert_eq!(asked.len(), 1, "{}", s.name);
        assert!(
            coordination
                .cancel_requests("another")
                .await
                .expect("ok")
                .is_empty(),
            "{}",
            s.name
        );
        assert!(
            store
                .load_stored("acme", &task.id)
                .await
                .expect("ok")
                .expect("stored")
                .cancel_requested
        );

        assert!(
            !coordination.renew_lease(&task_ref).await.expect("ok"),
            "{}: no lease yet",
            s.name
        );
        coordination
            .grant_lease(&task_ref, Duration::from_millis(1))
            .await
            .expect("ok");
        tokio::time::sleep(Duration::from_millis(20)).await;
        let lapsed = coordination.take_lapsed_leases(10).await.expect("ok");
        assert_eq!(lapsed.len(), 1, "{}", s.name);
        assert!(
            coordination
                .take_lapsed_leases(10)
                .await
                .expect("ok")
                .is_empty(),
            "{}: taken once",
            s.name
        );

        // Events after a generation, in order.
        let mut current = Task::clone(&task);
        for (revision, state) in [(1, TaskState::InputRequired), (2, TaskState::Completed)] {
            current.status = TaskStatus::new(state);
            current.generation += 1;
            let next = Arc::new(current.clone());
            let event = status_event(&next);
            let write = TaskWrite::update("acme", &next, revision).with_event(&event);
            assert_written(&s, &write).await;
        }
        let events = coordination.events_after(&task_ref, 1).await.expect("ok");
        let generations: Vec<u64> = events
            .iter()
            .map(|e| match e {
                StreamResponse::StatusUpdate(update) => update.generation,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(generations, [2, 3], "{}", s.name);
        assert_eq!(
            coordination
                .events_after(&task_ref, 2)
                .await
                .expect("ok")
                .len(),
            1,
            "{}",
            s.name
        );
        assert!(
            coordination
                .orphaned_turns(10)
                .await
                .expect("ok")
                .is_empty(),
            "{}: a finished task has no turn",
            s.name
        );
        s.cleanup().await;
    }
}

/// Tasks as the previous release wrote them, each with its history inside the task's JSON:
/// one finished, one that a server of that release was running when it stopped.
const LEGACY_TASKS: [(&str, &str, bool, &str); 2] = [
    (
        "done",
        "TASK_STATE_COMPLETED",
        true,
        r#"{"id":"done","contextId":"c","status":{"state":"TASK_STATE_COMPLETED"},"history":[{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"one"}]},{"messageId":"m-2","role":"ROLE_AGENT","parts":[{"text":"two"}]}]}"#,
    ),
    (
        "running",
        "TASK_STATE_WORKING",
        false,
        r#"{"id":"running","contextId":"c","status":{"state":"TASK_STATE_WORKING"},"history":[{"messageId":"m-3","role":"ROLE_USER","parts":[{"text":"three"}]}]}"#,
    ),
];

fn first_migration_only() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let source = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/migrations/sqlite/0001_tasks_and_idempotency_keys.sql"
    );
    std::fs::copy(
        source,
        dir.path().join("0001_tasks_and_idempotency_keys.sql"),
    )
    .expect("copied");
    dir
}

/// Checks a store opened over the legacy rows: histories moved to their own rows, and the
/// task a server of the old release was running is settled by recovery.
async fn check_upgraded(name: &str, store: Arc<dyn TaskStore>) {
    let done = store
        .load_stored("", &TaskId::new("done"))
        .await
        .expect("ok")
        .expect("kept");
    assert_eq!(
        done.task.history.len(),
        2,
        "{name}: history moved, in order"
    );
    assert_eq!(done.task.history[1].text(), "two", "{name}");
    let running = store
        .load_stored("", &TaskId::new("running"))
        .await
        .expect("ok")
        .expect("kept");
    assert_eq!(running.task.history.len(), 1, "{name}");
    assert!(
        running.owner.is_some() && !running.owner_alive,
        "{name}: an orphaned turn"
    );
    let handler = a2a_protocol_server::RequestHandler::builder(common::CountingAgent::new())
        .with_store(Arc::clone(&store))
        .with_config(
            a2a_protocol_server::HandlerConfig::default()
                .with_recovery_time(Duration::from_millis(300)),
        )
        .build();
    // Serving starts recovery; a send does too.
    let _ = handler
        .send_message(
            a2a_protocol_types::SendMessageRequest::new(Message::user_text("wake up")),
            &a2a_protocol_server::CallContext::default(),
        )
        .await;
    let mut state = TaskState::Working;
    for _ in 0..50 {
        state = store
            .load_stored("", &TaskId::new("running"))
            .await
            .expect("ok")
            .expect("kept")
            .task
            .status
            .state;
        if state.is_terminal() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        state,
        TaskState::Failed,
        "{name}: settled after the upgrade"
    );
}

/// The previous release's schema and its tasks, written into `pool` (a macro: the two pools
/// are of different databases).
macro_rules! write_previous_release {
    ($pool:expr) => {
        let migrations = first_migration_only();
        sqlx::migrate::Migrator::new(migrations.path())
            .await
            .expect("the first migration")
            .run(&$pool)
            .await
            .expect("schema 0001");
        for (id, state, terminal, body) in LEGACY_TASKS {
            sqlx::query(
                "INSERT INTO a2a_tasks (tenant, id, context_id, state, status_millis, updated_millis, terminal, body) \
                 VALUES ('', $1, 'c', $2, 0, 0, $3, $4)",
            )
            .bind(id)
            .bind(state)
            .bind(terminal)
            .bind(body)
            .execute(&$pool)
            .await
            .expect("a legacy row");
        }
    };
}

#[tokio::test]
async fn a_database_of_the_previous_release_is_upgraded_in_place() {
    // SQLite.
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("old.db").display());
    {
        let options = sqlx::sqlite::SqliteConnectOptions::from_str(&url)
            .expect("url")
            .create_if_missing(true);
        let pool = sqlx::SqlitePool::connect_with(options)
            .await
            .expect("sqlite");
        write_previous_release!(pool);
        pool.close().await;
    }
    let store = a2a_protocol_server::store::SqliteTaskStore::open(&url)
        .await
        .expect("upgraded");
    check_upgraded("sqlite", Arc::new(store)).await;

    // PostgreSQL.
    let Some(schema) = common::stores::PgSchema::create().await else {
        return;
    };
    let pool = schema.pool().await;
    write_previous_release!(pool);
    let store = a2a_protocol_server::store::PostgresTaskStore::from_pool(pool)
        .await
        .expect("upgraded");
    check_upgraded("postgres", Arc::new(store)).await;
    schema.drop_schema().await;
}

#[tokio::test]
async fn postgres_notifies_the_writes_of_followed_tasks_only() {
    use a2a_protocol_server::store::{Notice, PostgresTaskStore};
    let Some(schema) = common::stores::PgSchema::create().await else {
        return;
    };
    let store = PostgresTaskStore::from_pool(schema.pool().await)
        .await
        .expect("postgres");
    let coordination = store.capabilities().coordination.expect("coordinates");
    let mut notices = coordination.notices().expect("PostgreSQL pushes notices");
    let task_at = |generation: u64| {
        let mut task = Task::new("t-1", "c-1", TaskStatus::new(TaskState::Working));
        task.generation = generation;
        Arc::new(task)
    };
    let first = task_at(1);
    store
        .write(&TaskWrite::create("", &first))
        .await
        .expect("ok");
    // Let the listener connect before anything is announced.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let unfollowed = task_at(2);
    let event = status_event(&unfollowed);
    store
        .write(&TaskWrite::update("", &unfollowed, 1).with_event(&event))
        .await
        .expect("ok");
    let task = TaskRef {
        tenant: String::new(),
        id: TaskId::new("t-1"),
    };
    coordination
        .follow(&task, "a-follower", Duration::from_secs(30))
        .await
        .expect("ok");
    let followed = task_at(3);
    let event = status_event(&followed);
    store
        .write(&TaskWrite::update("", &followed, 2).with_event(&event))
        .await
        .expect("ok");
    let notice = tokio::time::timeout(Duration::from_secs(10), notices.recv())
        .await
        .expect("a notice for the followed task")
        .expect("received");
    assert_eq!(
        notice,
        Notice::Changed {
            task,
            generation: 3
        },
        "the first notice is the followed write's: the unfollowed one sent none"
    );
    schema.drop_schema().await;
}

/// The events of one write (a fast turn's working, artifact and completed, say) read back one
/// by one after any generation, whether the write went alone, in a group, or in a transaction
/// with a key.
#[tokio::test]
async fn a_writes_several_events_read_back_after_any_generation() {
    for s in all_stores().await {
        let Some(coordination) = s.store.capabilities().coordination else {
            continue;
        };
        let mut task = Task::new("multi", "ctx", TaskStatus::new(TaskState::Submitted));
        task.generation = 1;
        let first = Arc::new(task.clone());
        assert_written(&s, &TaskWrite::create("acme", &first)).await;
        let mut events = Vec::new();
        let mut write_events = |task: &mut Task, states: &[TaskState]| {
            let mut these = Vec::new();
            for state in states {
                task.status = TaskStatus::new(*state);
                task.generation += 1;
                these.push(status_event(task));
            }
            events.extend(these.iter().cloned());
            (Arc::new(task.clone()), these)
        };
        // Three events in a write of its own, then two in a follow-up that takes a key.
        let (second, three) = write_events(
            &mut task,
            &[
                TaskState::Working,
                TaskState::Working,
                TaskState::InputRequired,
            ],
        );
        let write = TaskWrite::update("acme", &second, 1).with_events(&three);
        assert_written(&s, &write).await;
        let (third, two) = write_events(&mut task, &[TaskState::Working, TaskState::Completed]);
        let key = claim("m-follow-up", "multi");
        let write = TaskWrite::update("acme", &third, 2)
            .with_events(&two)
            .with_claim(Some(&key));
        assert_written(&s, &write).await;
        let task_ref = TaskRef::new("acme", &"multi".into());
        for after in 0..=7u64 {
            let read = coordination
                .events_after(&task_ref, after)
                .await
                .expect("ok");
            let expected: Vec<&StreamResponse> = events
                .iter()
                .filter(|e| matches!(e, StreamResponse::StatusUpdate(u) if u.generation > after))
                .collect();
            assert_eq!(
                read.iter().collect::<Vec<_>>(),
                expected,
                "{}: events after {after}",
                s.name
            );
        }
        s.cleanup().await;
    }
}
