//! One conformance suite, run against all six bundled stores: task CRUD, listing and paging,
//! state changes, every claim outcome, tenant isolation, and (for the SQL stores) retention.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use a2a_protocol_server::store::{
    ClaimOutcome, KeyClaim, KeyScope, PageCursor, RetentionPolicy, TaskQuery, TaskStoreExt,
};
use a2a_protocol_types::{ContextId, MessageId, Task, TaskId, TaskState, TaskStatus, Timestamp};
use common::stores::{all_stores, put};

const KEY: &str = "8f14e45fceea167a5a36dedd4bea2543";

fn task_at(id: &str, context: &str, state: TaskState, millis: i64) -> Task {
    let mut status = TaskStatus::new(state);
    status.timestamp = Timestamp::from_unix_millis(millis);
    Task::new(id, context, status)
}

fn claim(tenant: &str, caller: Option<&str>, message: &str, task: &str) -> KeyClaim {
    KeyClaim {
        scope: KeyScope {
            tenant: tenant.into(),
            caller: caller.map(str::to_owned),
        },
        key: KEY.parse().expect("a valid key"),
        message_id: MessageId::new(message),
        task_id: TaskId::new(task),
        charged_to: None,
    }
}

fn query(page_size: usize) -> TaskQuery {
    TaskQuery {
        page_size,
        ..TaskQuery::default()
    }
}

#[tokio::test]
async fn tasks_are_saved_read_back_and_replaced() {
    for s in all_stores().await {
        let store = &s.store;
        assert_eq!(
            store.get("", &TaskId::new("t1")).await.expect("ok"),
            None,
            "{}",
            s.name
        );
        let mut task = task_at("t1", "c1", TaskState::Submitted, 1_000);
        task.history
            .push(a2a_protocol_types::Message::user_text("hello"));
        put(store, "", task.clone()).await.expect("saved");
        assert_eq!(
            store.get("", &TaskId::new("t1")).await.expect("ok"),
            Some(task.clone()),
            "{}",
            s.name
        );
        task.status = TaskStatus::new(TaskState::Completed);
        task.artifacts.push(a2a_protocol_types::Artifact::new(
            "a",
            vec![a2a_protocol_types::Part::text("x")],
        ));
        put(store, "", task.clone()).await.expect("replaced");
        assert_eq!(
            store.get("", &TaskId::new("t1")).await.expect("ok"),
            Some(task),
            "{}",
            s.name
        );
        s.cleanup().await;
    }
}

#[tokio::test]
async fn lists_filter_and_page_newest_status_first() {
    for s in all_stores().await {
        let store = &s.store;
        for i in 0..7 {
            let context = if i % 2 == 0 { "even" } else { "odd" };
            let state = if i == 3 {
                TaskState::InputRequired
            } else {
                TaskState::Completed
            };
            put(
                store,
                "",
                task_at(&format!("t{i}"), context, state, 1_000 + i),
            )
            .await
            .expect("saved");
        }
        let all = store.list("", &query(100)).await.expect("ok");
        let ids: Vec<&str> = all.tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(
            ids,
            ["t6", "t5", "t4", "t3", "t2", "t1", "t0"],
            "{}",
            s.name
        );
        assert_eq!(all.total_size, 7);
        assert_eq!(all.next, None);

        let even = store
            .list(
                "",
                &TaskQuery {
                    context_id: Some(ContextId::new("even")),
                    ..query(100)
                },
            )
            .await
            .expect("ok");
        assert_eq!(even.total_size, 4, "{}", s.name);
        let waiting = store
            .list(
                "",
                &TaskQuery {
                    status: Some(TaskState::InputRequired),
                    ..query(100)
                },
            )
            .await
            .expect("ok");
        assert_eq!(waiting.tasks.len(), 1);
        assert_eq!(waiting.tasks[0].id, "t3");
        let recent = store
            .list(
                "",
                &TaskQuery {
                    status_timestamp_after: Timestamp::from_unix_millis(1_004),
                    ..query(100)
                },
            )
            .await
            .expect("ok");
        assert_eq!(recent.total_size, 2, "{}", s.name);

        let mut seen = Vec::new();
        let mut cursor: Option<PageCursor> = None;
        loop {
            let page = store
                .list(
                    "",
                    &TaskQuery {
                        cursor: cursor.clone(),
                        ..query(3)
                    },
                )
                .await
                .expect("ok");
            assert_eq!(page.total_size, 7, "{}", s.name);
            seen.extend(page.tasks.iter().map(|t| t.id.to_string()));
            match page.next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(
            seen, ids,
            "{}: pages cover every task once, in order",
            s.name
        );
        s.cleanup().await;
    }
}

#[tokio::test]
async fn a_task_keeps_the_caller_that_created_it_and_lists_filter_on_it() {
    use a2a_protocol_server::store::TaskWrite;
    for s in all_stores().await {
        let store = &s.store;
        let mine = Arc::new(task_at("t-alice", "c1", TaskState::Working, 1_000));
        let theirs = Arc::new(task_at("t-bob", "c1", TaskState::Working, 2_000));
        let anyone = Arc::new(task_at("t-none", "c1", TaskState::Working, 3_000));
        for (task, caller) in [
            (&mine, Some("alice")),
            (&theirs, Some("bob")),
            (&anyone, None),
        ] {
            store
                .write(&TaskWrite::create("", task).with_caller(caller))
                .await
                .expect("created");
        }
        // A later write, which names no caller, does not change hands.
        let mut done = Task::clone(&mine);
        done.status = TaskStatus::new(TaskState::Completed);
        store
            .write(&TaskWrite::update("", &Arc::new(done), 1))
            .await
            .expect("updated");
        let loaded = store
            .load_stored("", &mine.id)
            .await
            .expect("ok")
            .expect("there");
        assert_eq!(loaded.caller.as_deref(), Some("alice"), "{}", s.name);
        assert_eq!(loaded.task.status.state, TaskState::Completed, "{}", s.name);
        let loaded = store
            .load_stored("", &anyone.id)
            .await
            .expect("ok")
            .expect("there");
        assert_eq!(loaded.caller, None, "{}", s.name);
        for (caller, expected) in [
            (Some("alice"), vec!["t-alice"]),
            (Some("bob"), vec!["t-bob"]),
            (Some("carol"), vec![]),
            // Completing it made alice's the newest status.
            (None, vec!["t-alice", "t-none", "t-bob"]),
        ] {
            let page = store
                .list(
                    "",
                    &TaskQuery {
                        caller: caller.map(str::to_owned),
                        ..query(10)
                    },
                )
                .await
                .expect("listed");
            let ids: Vec<&str> = page.tasks.iter().map(|t| t.id.as_str()).collect();
            assert_eq!(ids, expected, "{} as {caller:?}", s.name);
            assert_eq!(page.total_size, expected.len(), "{}", s.name);
        }
        s.cleanup().await;
    }
}

#[tokio::test]
async fn a_state_change_moves_the_task_between_filters() {
    for s in all_stores().await {
        let store = &s.store;
        put(store, "", task_at("t", "c", TaskState::Working, 1_000))
            .await
            .expect("ok");
        let working = TaskQuery {
            status: Some(TaskState::Working),
            ..query(10)
        };
        assert_eq!(
            store.list("", &working).await.expect("ok").total_size,
            1,
            "{}",
            s.name
        );
        put(store, "", task_at("t", "c", TaskState::Completed, 2_000))
            .await
            .expect("ok");
        assert_eq!(
            store.list("", &working).await.expect("ok").total_size,
            0,
            "{}",
            s.name
        );
        let done = TaskQuery {
            status: Some(TaskState::Completed),
            ..query(10)
        };
        assert_eq!(
            store.list("", &done).await.expect("ok").total_size,
            1,
            "{}",
            s.name
        );
        s.cleanup().await;
    }
}

#[tokio::test]
async fn claims_are_claimed_replayed_or_conflicting() {
    for s in all_stores().await {
        let store = &s.store;
        assert!(store.supports_idempotency(), "{}", s.name);
        let first = claim("", None, "m1", "t1");
        assert_eq!(
            store.claim_idempotency_key(&first).await.expect("ok"),
            ClaimOutcome::Claimed,
            "{}",
            s.name
        );
        assert_eq!(
            store
                .claim_idempotency_key(&claim("", None, "m1", "t2"))
                .await
                .expect("ok"),
            ClaimOutcome::Replay(TaskId::new("t1")),
            "{}",
            s.name
        );
        assert_eq!(
            store
                .claim_idempotency_key(&claim("", None, "m2", "t3"))
                .await
                .expect("ok"),
            ClaimOutcome::Conflict,
            "{}",
            s.name
        );
        for scope in [("other", None), ("", Some("alice")), ("", Some(""))] {
            assert_eq!(
                store
                    .claim_idempotency_key(&claim(scope.0, scope.1, "m9", "t9"))
                    .await
                    .expect("ok"),
                ClaimOutcome::Claimed,
                "{}: {scope:?} is another scope",
                s.name
            );
        }
        store
            .release_idempotency_key(&claim("", None, "m1", "t-other"))
            .await
            .expect("ok");
        assert!(
            matches!(
                store.claim_idempotency_key(&first).await.expect("ok"),
                ClaimOutcome::Replay(_)
            ),
            "{}: releasing for another task frees nothing",
            s.name
        );
        store.release_idempotency_key(&first).await.expect("ok");
        assert_eq!(
            store
                .claim_idempotency_key(&claim("", None, "m5", "t5"))
                .await
                .expect("ok"),
            ClaimOutcome::Claimed,
            "{}: released",
            s.name
        );
        s.cleanup().await;
    }
}

#[tokio::test]
async fn racing_claims_have_exactly_one_winner() {
    for s in all_stores().await {
        let claims = (0..32).map(|i| {
            let store = Arc::clone(&s.store);
            tokio::spawn(async move {
                store
                    .claim_idempotency_key(&claim("", None, "m1", &format!("t{i}")))
                    .await
            })
        });
        let outcomes: Vec<ClaimOutcome> = futures::future::join_all(claims)
            .await
            .into_iter()
            .map(|o| {
                o.expect("joined")
                    .unwrap_or_else(|e| panic!("{}: {e}", s.name))
            })
            .collect();
        let winners = outcomes
            .iter()
            .filter(|o| **o == ClaimOutcome::Claimed)
            .count();
        assert_eq!(winners, 1, "{}", s.name);
        let replayed: HashSet<_> = outcomes
            .iter()
            .filter_map(|o| match o {
                ClaimOutcome::Replay(id) => Some(id.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(
            replayed.len(),
            1,
            "{}: every loser sees the one winner",
            s.name
        );
        s.cleanup().await;
    }
}

#[tokio::test]
async fn claims_racing_releases_never_fail() {
    for s in all_stores().await {
        let mut handles = Vec::new();
        for i in 0..16 {
            let store = Arc::clone(&s.store);
            handles.push(tokio::spawn(async move {
                for round in 0..30 {
                    let mine = claim("", None, "m1", &format!("t{i}-{round}"));
                    if store.claim_idempotency_key(&mine).await? == ClaimOutcome::Claimed {
                        store.release_idempotency_key(&mine).await?;
                    }
                }
                Ok::<_, a2a_protocol_server::store::StoreError>(())
            }));
        }
        for handle in handles {
            handle
                .await
                .expect("joined")
                .unwrap_or_else(|e| panic!("{}: {e}", s.name));
        }
        s.cleanup().await;
    }
}

#[tokio::test]
async fn tenants_are_isolated_where_the_store_is_tenant_aware() {
    for s in all_stores().await {
        let store = &s.store;
        put(store, "acme", task_at("t1", "c", TaskState::Working, 1_000))
            .await
            .expect("ok");
        let seen_by_other = store.get("globex", &TaskId::new("t1")).await.expect("ok");
        let listed_by_other = store
            .list("globex", &query(10))
            .await
            .expect("ok")
            .total_size;
        if s.tenant_aware {
            assert_eq!(seen_by_other, None, "{}", s.name);
            assert_eq!(listed_by_other, 0, "{}", s.name);
            assert!(
                store
                    .get("acme", &TaskId::new("t1"))
                    .await
                    .expect("ok")
                    .is_some()
            );
        } else {
            assert!(seen_by_other.is_some(), "{}: one namespace", s.name);
        }
        assert_eq!(
            store
                .claim_idempotency_key(&claim("acme", None, "m1", "t1"))
                .await
                .expect("ok"),
            ClaimOutcome::Claimed
        );
        assert_eq!(
            store
                .claim_idempotency_key(&claim("globex", None, "m1", "t2"))
                .await
                .expect("ok"),
            ClaimOutcome::Claimed,
            "{}: keys are always per tenant",
            s.name
        );
        s.cleanup().await;
    }
}

#[tokio::test]
async fn retention_deletes_old_terminal_tasks_then_their_keys_never_a_live_tasks_key() {
    for s in all_stores().await {
        let Some(retention) = s.retention.clone() else {
            s.cleanup().await;
            continue;
        };
        let store = &s.store;
        let tenant = "acme";
        put(
            store,
            tenant,
            task_at("done", "c", TaskState::Completed, 1_000),
        )
        .await
        .expect("ok");
        put(
            store,
            tenant,
            task_at("running", "c", TaskState::Working, 1_000),
        )
        .await
        .expect("ok");
        store
            .claim_idempotency_key(&claim(tenant, None, "m-done", "done"))
            .await
            .expect("ok");
        let mut running_key = claim(tenant, None, "m-running", "running");
        running_key.key = format!("{KEY}-running").parse().expect("a valid key");
        store.claim_idempotency_key(&running_key).await.expect("ok");

        // Nothing is old enough yet.
        let report = retention
            .purge_expired(&RetentionPolicy::default())
            .await
            .expect("ok");
        assert_eq!(
            (report.tasks_deleted, report.keys_deleted, report.finished),
            (0, 0, true),
            "{}",
            s.name
        );

        tokio::time::sleep(Duration::from_millis(30)).await;
        let policy = RetentionPolicy::default()
            .with_terminal_max_age(Duration::from_millis(10))
            .with_idempotency_key_max_age(Duration::from_millis(10));
        for sweep in 0..3 {
            let report = retention.purge_expired(&policy).await.expect("ok");
            if sweep == 0 {
                assert_eq!(report.tasks_deleted, 1, "{}: the terminal task", s.name);
                assert_eq!(
                    report.keys_deleted, 1,
                    "{}: its key, now that it is gone",
                    s.name
                );
            } else {
                assert_eq!(
                    (report.tasks_deleted, report.keys_deleted),
                    (0, 0),
                    "{}",
                    s.name
                );
            }
            assert!(report.finished);
        }
        assert!(
            store
                .get(tenant, &TaskId::new("running"))
                .await
                .expect("ok")
                .is_some()
        );
        assert!(
            matches!(
                store.claim_idempotency_key(&running_key).await.expect("ok"),
                ClaimOutcome::Replay(_)
            ),
            "{}: a running task keeps its key through every sweep",
            s.name
        );
        s.cleanup().await;
    }
}

#[tokio::test]
async fn a_key_is_kept_as_long_as_terminal_tasks_are_even_after_its_task_is_gone() {
    for s in all_stores().await {
        let Some(retention) = s.retention.clone() else {
            s.cleanup().await;
            continue;
        };
        let store = &s.store;
        // A key whose task never got stored (say, the send failed and the release was lost).
        store
            .claim_idempotency_key(&claim("", None, "m", "never-stored"))
            .await
            .expect("ok");
        tokio::time::sleep(Duration::from_millis(30)).await;
        let keeps_terminal_long = RetentionPolicy::default()
            .with_idempotency_key_max_age(Duration::from_millis(10))
            .with_terminal_max_age(Duration::from_secs(3600));
        let report = retention
            .purge_expired(&keeps_terminal_long)
            .await
            .expect("ok");
        assert_eq!(
            report.keys_deleted, 0,
            "{}: never sooner than terminal tasks expire",
            s.name
        );
        let short = keeps_terminal_long.with_terminal_max_age(Duration::from_millis(10));
        let report = retention.purge_expired(&short).await.expect("ok");
        assert_eq!(report.keys_deleted, 1, "{}", s.name);
        s.cleanup().await;
    }
}

#[tokio::test]
async fn sweeps_work_in_bounded_batches_and_say_when_they_are_done() {
    for s in all_stores().await {
        let Some(retention) = s.retention.clone() else {
            s.cleanup().await;
            continue;
        };
        for i in 0..5 {
            put(
                &*s.store,
                "",
                task_at(&format!("t{i}"), "c", TaskState::Failed, 1_000),
            )
            .await
            .expect("ok");
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
        let policy = RetentionPolicy::default()
            .with_terminal_max_age(Duration::from_millis(10))
            .with_batch_size(2)
            .with_max_batches(2);
        let first = retention.purge_expired(&policy).await.expect("ok");
        assert_eq!(
            (first.tasks_deleted, first.finished),
            (4, false),
            "{}",
            s.name
        );
        let second = retention.purge_expired(&policy).await.expect("ok");
        assert_eq!(
            (second.tasks_deleted, second.finished),
            (1, true),
            "{}",
            s.name
        );
        s.cleanup().await;
    }
}

fn push_config(
    task: &str,
    id: &str,
    url: &str,
) -> a2a_protocol_types::push::TaskPushNotificationConfig {
    serde_json::from_value(serde_json::json!({
        "taskId": task,
        "id": id,
        "url": url,
        "token": "tok",
        "authentication": {"scheme": "Bearer", "credentials": "secret"},
    }))
    .expect("a config")
}

#[tokio::test]
async fn push_configs_are_saved_replaced_paged_and_deleted_with_their_task() {
    use a2a_protocol_server::store::PushConfigSaved;

    for s in all_stores().await {
        let store = &s.store;
        let push = store
            .capabilities()
            .push
            .expect("every bundled store keeps push configs");
        let name = s.name;
        assert!(store.capabilities().push.is_some(), "{name}");
        let task = TaskId::new("t1");
        assert_eq!(
            push.save_push_config("acme", &push_config("t1", "a", "https://h/1"), 3)
                .await
                .expect("ok"),
            PushConfigSaved::TaskMissing,
            "{name}: no task, no config"
        );
        put(store, "acme", task_at("t1", "c", TaskState::Working, 1_000))
            .await
            .expect("ok");
        for id in ["c", "a", "b"] {
            let saved = push
                .save_push_config("acme", &push_config("t1", id, "https://h/1"), 3)
                .await
                .expect("ok");
            assert_eq!(saved, PushConfigSaved::Saved, "{name}: {id}");
        }
        assert_eq!(
            push.save_push_config("acme", &push_config("t1", "d", "https://h/1"), 3)
                .await
                .expect("ok"),
            PushConfigSaved::AtCap,
            "{name}: a fourth id is past the cap"
        );
        assert_eq!(
            push.save_push_config("acme", &push_config("t1", "b", "https://h/2"), 3)
                .await
                .expect("ok"),
            PushConfigSaved::Saved,
            "{name}: replacing one at the cap is fine"
        );
        let b = push
            .get_push_config("acme", &task, "b")
            .await
            .expect("ok")
            .expect("b is there");
        assert_eq!(
            b,
            push_config("t1", "b", "https://h/2"),
            "{name}: replaced whole"
        );
        assert_eq!(
            push.get_push_config("acme", &task, "z").await.expect("ok"),
            None,
            "{name}"
        );

        let ids = |configs: Vec<a2a_protocol_types::push::TaskPushNotificationConfig>| {
            configs.into_iter().map(|c| c.id).collect::<Vec<_>>()
        };
        let first = push
            .list_push_configs("acme", &task, None, 2)
            .await
            .expect("ok");
        assert_eq!(ids(first), ["a", "b"], "{name}: in order of id");
        let rest = push
            .list_push_configs("acme", &task, Some("b"), 2)
            .await
            .expect("ok");
        assert_eq!(ids(rest), ["c"], "{name}");
        let other_task = push
            .list_push_configs("acme", &TaskId::new("t2"), None, 10)
            .await
            .expect("ok");
        assert!(other_task.is_empty(), "{name}");

        let other_tenant = push
            .get_push_config("globex", &task, "a")
            .await
            .expect("ok");
        assert_eq!(
            other_tenant.is_some(),
            !s.tenant_aware,
            "{name}: configs live where their task does"
        );

        assert!(
            push.delete_push_config("acme", &task, "a")
                .await
                .expect("ok")
        );
        assert!(
            !push
                .delete_push_config("acme", &task, "a")
                .await
                .expect("ok"),
            "{name}: deleting twice finds nothing the second time"
        );
        assert_eq!(
            ids(push
                .list_push_configs("acme", &task, None, 10)
                .await
                .expect("ok")),
            ["b", "c"],
            "{name}"
        );

        // A task rewritten keeps its configs.
        put(
            store,
            "acme",
            task_at("t1", "c", TaskState::Completed, 2_000),
        )
        .await
        .expect("ok");
        assert_eq!(
            push.list_push_configs("acme", &task, None, 10)
                .await
                .expect("ok")
                .len(),
            2,
            "{name}: a write of the task keeps its configs"
        );

        if let Some(retention) = s.retention.clone() {
            tokio::time::sleep(Duration::from_millis(30)).await;
            let policy = RetentionPolicy::default()
                .with_terminal_max_age(Duration::from_millis(10))
                .with_idempotency_key_max_age(Duration::from_millis(10));
            let report = retention.purge_expired(&policy).await.expect("ok");
            assert_eq!(report.tasks_deleted, 1, "{name}");
            assert!(
                push.list_push_configs("acme", &task, None, 10)
                    .await
                    .expect("ok")
                    .is_empty(),
                "{name}: the configs went with their task"
            );
            // A new task under the same id starts with none.
            put(store, "acme", task_at("t1", "c", TaskState::Working, 3_000))
                .await
                .expect("ok");
            assert!(
                push.get_push_config("acme", &task, "b")
                    .await
                    .expect("ok")
                    .is_none(),
                "{name}"
            );
        }
        s.cleanup().await;
    }
}

#[tokio::test]
async fn the_push_outbox_is_written_with_events_and_delivered_in_order_once_per_claim() {
    use a2a_protocol_server::store::{DeliverySettled, TaskWrite};
    use a2a_protocol_types::StreamResponse;
    use std::time::SystemTime;

    let lease = Duration::from_secs(30);
    for s in all_stores().await {
        let store = &s.store;
        let push = store
            .capabilities()
            .push
            .expect("every bundled store keeps push configs");
        let name = s.name;
        let mut task = task_at("t1", "c", TaskState::Submitted, 1_000);
        task.generation = 1;
        let created = Arc::new(task.clone());
        store
            .write(&TaskWrite::create("acme", &created))
            .await
            .expect("ok");
        for id in ["a", "b"] {
            push.save_push_config("acme", &push_config("t1", id, "https://h/1"), 5)
                .await
                .expect("ok");
        }
        // Two events, then a write without one (it notifies nobody).
        let mut revision = 1;
        for (generation, state) in [(2, TaskState::Working), (3, TaskState::Working)] {
            task.generation = generation;
            task.status = TaskStatus::new(state);
            let event = StreamResponse::Task(task.clone());
            let written = Arc::new(task.clone());
            let write = TaskWrite::update("acme", &written, revision).with_event(&event);
            store.write(&write).await.expect("ok");
            revision += 1;
        }
        task.generation = 4;
        store
            .write(&TaskWrite::update(
                "acme",
                &Arc::new(task.clone()),
                revision,
            ))
            .await
            .expect("ok");

        let ids = |deliveries: &[a2a_protocol_server::store::PushDelivery]| {
            let mut ids: Vec<String> = deliveries.iter().map(|d| d.delivery_id()).collect();
            ids.sort();
            ids
        };
        let first = push
            .claim_push_deliveries("p1", lease, 10)
            .await
            .expect("ok");
        assert_eq!(
            ids(&first),
            ["t1:a:2", "t1:b:2"],
            "{name}: the first event of each config only, so each sees them in order"
        );
        let a2 = first.iter().find(|d| d.config.id == "a").expect("a");
        let b2 = first.iter().find(|d| d.config.id == "b").expect("b");
        assert_eq!(a2.event.task_id().map(|t| t.as_str()), Some("t1"), "{name}");
        assert_eq!(
            a2.config.url, "https://h/1",
            "{name}: the config comes along"
        );
        assert_eq!(
            a2.tenant,
            if s.tenant_aware { "acme" } else { "" },
            "{name}: the tenant the task is kept under"
        );
        assert!(
            push.claim_push_deliveries("p2", lease, 10)
                .await
                .expect("ok")
                .is_empty(),
            "{name}: claimed by p1, and the later events wait behind them"
        );

        push.settle_push_delivery("p1", a2, &DeliverySettled::Delivered)
            .await
            .expect("ok");
        // Not p2's to settle: nothing happens.
        push.settle_push_delivery("p2", b2, &DeliverySettled::Delivered)
            .await
            .expect("ok");
        let next = push
            .claim_push_deliveries("p1", lease, 10)
            .await
            .expect("ok");
        assert_eq!(ids(&next), ["t1:a:3"], "{name}: b's first is still held");

        let retry = DeliverySettled::Retry {
            at: SystemTime::now() - Duration::from_millis(5),
            error: "HTTP 503".into(),
        };
        push.settle_push_delivery("p1", b2, &retry)
            .await
            .expect("ok");
        let again = push
            .claim_push_deliveries("p2", lease, 10)
            .await
            .expect("ok");
        assert_eq!(
            ids(&again),
            ["t1:b:2"],
            "{name}: the same notification, same id"
        );
        assert_eq!(again[0].attempts, 1, "{name}");
        assert_eq!(again[0].last_error.as_deref(), Some("HTTP 503"), "{name}");

        let dead = DeliverySettled::Dead {
            error: "HTTP 410".into(),
        };
        push.settle_push_delivery("p2", &again[0], &dead)
            .await
            .expect("ok");
        let letters = push.dead_push_deliveries(10).await.expect("ok");
        assert_eq!(ids(&letters), ["t1:b:2"], "{name}");
        assert_eq!(letters[0].attempts, 2, "{name}");
        assert_eq!(letters[0].last_error.as_deref(), Some("HTTP 410"), "{name}");

        // A dead letter does not hold up the next event; a lapsed claim passes on.
        let short = push
            .claim_push_deliveries("p3", Duration::from_millis(1), 10)
            .await
            .expect("ok");
        assert_eq!(ids(&short), ["t1:b:3"], "{name}");
        tokio::time::sleep(Duration::from_millis(20)).await;
        let taken_over = push
            .claim_push_deliveries("p4", lease, 10)
            .await
            .expect("ok");
        assert_eq!(ids(&taken_over), ["t1:b:3"], "{name}: p3's claim lapsed");
        push.settle_push_delivery("p3", &short[0], &DeliverySettled::Delivered)
            .await
            .expect("ok");
        push.settle_push_delivery("p4", &taken_over[0], &retry)
            .await
            .expect("ok");
        assert_eq!(
            ids(&push
                .claim_push_deliveries("p4", lease, 10)
                .await
                .expect("ok")),
            ["t1:b:3"],
            "{name}: p3 no longer held it, so its settle changed nothing"
        );

        // Deleting a config drops what waits for it, claimed or not.
        assert!(
            push.delete_push_config("acme", &TaskId::new("t1"), "a")
                .await
                .expect("ok")
        );
        let held_a3 = next.iter().find(|d| d.config.id == "a").expect("a3");
        push.settle_push_delivery("p1", held_a3, &retry)
            .await
            .expect("ok");
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(
            push.claim_push_deliveries("p5", Duration::from_millis(1), 10)
                .await
                .expect("ok")
                .iter()
                .all(|d| d.config.id != "a"),
            "{name}: nothing goes to a deleted config"
        );
        s.cleanup().await;
    }
}

#[tokio::test]
async fn a_push_config_written_with_a_task_is_saved_with_it_and_notified_at_once() {
    use a2a_protocol_server::store::TaskWrite;
    use a2a_protocol_types::StreamResponse;

    for s in all_stores().await {
        let store = &s.store;
        let push = store
            .capabilities()
            .push
            .expect("every bundled store keeps push configs");
        let name = s.name;
        let config = push_config("t1", "t1", "https://h/1");
        let mut task = task_at("t1", "c", TaskState::Submitted, 1_000);
        task.generation = 1;
        let created = Arc::new(task.clone());
        store
            .write(&TaskWrite::create("acme", &created).with_push_config(Some(&config)))
            .await
            .expect("ok");
        assert_eq!(
            push.get_push_config("acme", &TaskId::new("t1"), "t1")
                .await
                .expect("ok"),
            Some(config.clone()),
            "{name}: saved in the same write as the task"
        );
        // Sent again with a follow-up (same id): replaced, not added.
        let mut replaced = config.clone();
        replaced.url = "https://h/2".into();
        task.generation = 2;
        task.status = TaskStatus::new(TaskState::Working);
        let event = StreamResponse::Task(task.clone());
        let working = Arc::new(task.clone());
        store
            .write(
                &TaskWrite::update("acme", &working, 1)
                    .with_push_config(Some(&replaced))
                    .with_event(&event),
            )
            .await
            .expect("ok");
        let configs = push
            .list_push_configs("acme", &TaskId::new("t1"), None, 10)
            .await
            .expect("ok");
        assert_eq!(configs, [replaced.clone()], "{name}");
        let claimed = push
            .claim_push_deliveries("p1", Duration::from_secs(30), 10)
            .await
            .expect("ok");
        assert_eq!(claimed.len(), 1, "{name}: the event is notified");
        s.cleanup().await;
    }
}

#[tokio::test]
async fn every_bundled_store_passes_the_exported_conformance_suite() {
    use a2a_protocol_server::store::conformance::Conformance;
    for s in all_stores().await {
        let report = Conformance::new(Arc::clone(&s.store))
            .with_tenant_aware(s.tenant_aware)
            .run()
            .await
            .unwrap_or_else(|failure| panic!("{}: {failure}", s.name));
        println!(
            "{}: passed {:?}; not offered {:?}",
            s.name, report.passed, report.not_offered
        );
        assert_eq!(
            report.passed.len(),
            7 + usize::from(s.tenant_aware),
            "{}",
            s.name
        );
        s.cleanup().await;
    }
}

#[tokio::test]
async fn the_conformance_suite_catches_a_store_that_writes_over_any_revision() {
    use a2a_protocol_server::store::conformance::{Conformance, Failure};
    use a2a_protocol_server::store::{
        InMemoryTaskStore, Loaded, StoreError, TaskPage, TaskStore, TaskWrite, WriteOutcome,
    };

    /// The in-memory store, except that an update is written over whatever revision is
    /// stored: the lost update the contract forbids.
    struct Careless(InMemoryTaskStore);

    #[async_trait::async_trait]
    impl TaskStore for Careless {
        async fn load(
            &self,
            tenant: &str,
            id: &TaskId,
            known: Option<u64>,
        ) -> Result<Loaded, StoreError> {
            self.0.load(tenant, id, known).await
        }
        async fn list(&self, tenant: &str, query: &TaskQuery) -> Result<TaskPage, StoreError> {
            self.0.list(tenant, query).await
        }
        async fn write(&self, write: &TaskWrite<'_>) -> Result<WriteOutcome, StoreError> {
            let mut write = *write;
            if write.expected.is_some()
                && let Some(stored) = self.0.load_stored(write.tenant, &write.task.id).await?
            {
                write.expected = Some(stored.revision);
            }
            self.0.write(&write).await
        }
    }

    let failure = Conformance::new(Arc::new(Careless(InMemoryTaskStore::new())))
        .run()
        .await
        .expect_err("the suite finds the lost update");
    assert!(
        matches!(
            failure,
            Failure::Broken {
                check: "writes are conditional on the revision read",
                ..
            }
        ),
        "{failure}"
    );
}
