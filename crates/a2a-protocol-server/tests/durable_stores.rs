//! Exactly-once sends on the SQL stores, over real HTTP: retention never re-opens a double run,
//! and tenants never share a key.

mod common;

use std::time::Duration;

use a2a_protocol_server::store::RetentionPolicy;
use common::stores::all_stores;
use common::*;
use serde_json::json;

fn short_retention() -> RetentionPolicy {
    RetentionPolicy::default()
        .with_terminal_max_age(Duration::from_millis(10))
        .with_idempotency_key_max_age(Duration::from_millis(10))
}

#[tokio::test]
async fn after_a_sweep_removes_a_task_its_retry_gets_task_not_found_and_nothing_runs() {
    for s in all_stores().await {
        let Some(retention) = s.retention.clone() else {
            s.cleanup().await;
            continue;
        };
        let agent = CountingAgent::new();
        let server = serve_handler(handler_with_store(agent.clone(), s.store.clone())).await;
        // Tasks expire quickly; keys are kept for an hour.
        let policy = RetentionPolicy::default().with_terminal_max_age(Duration::from_millis(10));
        for binding in BINDINGS {
            let key = key();
            let message_id = format!("m-{binding:?}");
            call(
                binding,
                &server.base,
                "SendMessage",
                keyed_params(&message_id, "hi", &key),
            )
            .await
            .expect("ok");
            tokio::time::sleep(Duration::from_millis(30)).await;
            let report = retention.purge_expired(&policy).await.expect("swept");
            assert_eq!(report.tasks_deleted, 1, "{}", s.name);
            let error = call(
                binding,
                &server.base,
                "SendMessage",
                keyed_params(&message_id, "hi", &key),
            )
            .await
            .err()
            .unwrap_or_else(|| panic!("{}: the retry found a task", s.name));
            assert_eq!(error.reason, "TASK_NOT_FOUND", "{} {binding:?}", s.name);
            let error = stream(
                binding,
                &server.base,
                "SendStreamingMessage",
                keyed_params(&message_id, "hi", &key),
            )
            .await
            .expect_err("gone");
            assert_eq!(error.reason, "TASK_NOT_FOUND", "{} {binding:?}", s.name);
        }
        assert_eq!(
            agent.runs(),
            BINDINGS.len(),
            "{}: one run per binding, none for the retries",
            s.name
        );
        drop(server);
        s.cleanup().await;
    }
}

#[tokio::test]
async fn a_long_running_task_keeps_its_key_through_every_sweep() {
    for s in all_stores().await {
        let Some(retention) = s.retention.clone() else {
            s.cleanup().await;
            continue;
        };
        let agent = CountingAgent::slow(Duration::from_secs(60));
        let server = serve_handler(handler_with_store(agent.clone(), s.store.clone())).await;
        let key = key();
        let mut params = keyed_params("m-1", "hi", &key);
        params["configuration"] = json!({"returnImmediately": true});
        let first = call(
            Binding::JsonRpc,
            &server.base,
            "SendMessage",
            params.clone(),
        )
        .await
        .expect("ok");
        for _ in 0..3 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            retention
                .purge_expired(&short_retention())
                .await
                .expect("swept");
        }
        let retry = call(Binding::Rest, &server.base, "SendMessage", params)
            .await
            .expect("replayed");
        assert_eq!(task_of(&retry)["id"], task_of(&first)["id"], "{}", s.name);
        assert_eq!(agent.runs(), 1, "{}", s.name);
        drop(server);
        s.cleanup().await;
    }
}

#[tokio::test]
async fn the_same_key_in_two_tenants_makes_two_tasks_that_never_meet() {
    for s in all_stores().await {
        let agent = CountingAgent::new();
        let server = serve_handler(handler_with_store(agent.clone(), s.store.clone())).await;
        let key = key();
        let mut ids = Vec::new();
        for tenant in ["acme", "globex"] {
            let mut params = keyed_params("m-1", "hi", &key);
            params["tenant"] = json!(tenant);
            let first = call(Binding::Rest, &server.base, "SendMessage", params.clone())
                .await
                .expect("ok");
            let retry = call(Binding::JsonRpc, &server.base, "SendMessage", params)
                .await
                .expect("ok");
            assert_eq!(task_of(&first)["id"], task_of(&retry)["id"], "{}", s.name);
            ids.push(task_of(&first)["id"].as_str().expect("id").to_owned());
        }
        assert_ne!(ids[0], ids[1], "{}", s.name);
        assert_eq!(agent.runs(), 2, "{}", s.name);
        if s.tenant_aware {
            let error = call(
                Binding::Rest,
                &server.base,
                "GetTask",
                json!({"id": ids[0], "tenant": "globex"}),
            )
            .await
            .expect_err("another tenant's task");
            assert_eq!(error.reason, "TASK_NOT_FOUND", "{}", s.name);
        }
        drop(server);
        s.cleanup().await;
    }
}

#[tokio::test]
async fn a_locked_sqlite_database_answers_a_retryable_503_and_runs_nothing() {
    use a2a_protocol_server::store::{SqlStoreOptions, SqliteTaskStore};
    use sqlx::{Connection, Executor};

    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("locked.db").display());
    let options = SqlStoreOptions::default().with_busy_timeout(Duration::from_millis(50));
    let store = std::sync::Arc::new(
        SqliteTaskStore::open_with(&url, &options)
            .await
            .expect("sqlite"),
    );
    let agent = CountingAgent::new();
    let server = serve_handler(handler_with_store(agent.clone(), store)).await;

    let mut locker = sqlx::SqliteConnection::connect(&url)
        .await
        .expect("second connection");
    locker
        .execute("BEGIN EXCLUSIVE")
        .await
        .expect("lock the database");
    for binding in BINDINGS {
        let error = call(
            binding,
            &server.base,
            "SendMessage",
            keyed_params("m-1", "hi", &key()),
        )
        .await
        .expect_err("busy");
        assert_status(&error, binding, 503, tonic::Code::Unavailable);
        assert_eq!(error.reason, "RESOURCE_EXHAUSTED");
        assert!(error.retry_after.is_some());
    }
    locker.execute("ROLLBACK").await.expect("unlock");
    call(
        Binding::Rest,
        &server.base,
        "SendMessage",
        keyed_params("m-1", "hi", &key()),
    )
    .await
    .expect("works once the lock is gone");
    assert_eq!(agent.runs(), 1);
}

#[tokio::test]
async fn the_server_can_run_a_retention_sweeper() {
    use a2a_protocol_server::{A2aServer, RequestHandler};

    for s in all_stores().await {
        let Some(retention) = s.retention.clone() else {
            s.cleanup().await;
            continue;
        };
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let wire = a2a_wire_check::Recorder::new();
        let server = strict(
            A2aServer::new(
                RequestHandler::builder(CountingAgent::new())
                    .with_store(s.store.clone())
                    .build(),
            )
            .with_retention_sweeper(
                retention,
                Duration::from_millis(20),
                short_retention(),
            ),
            &wire,
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(server.serve(listener, async {
            let _ = stopped.await;
        }));
        let task = call(
            Binding::Rest,
            &base,
            "SendMessage",
            send_params("m-1", "hi"),
        )
        .await
        .expect("ok");
        let id = task_of(&task)["id"].clone();
        let mut swept = false;
        for _ in 0..500 {
            if call(Binding::Rest, &base, "GetTask", json!({"id": id}))
                .await
                .is_err()
            {
                swept = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(swept, "{}: the sweeper removed the finished task", s.name);
        stop.send(()).expect("running");
        serving.await.expect("joined").expect("served");
        wire.assert_clean();
        s.cleanup().await;
    }
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

#[tokio::test]
async fn a_postgres_database_that_cannot_be_reached_is_reported_with_its_cause() {
    use a2a_protocol_server::store::{PostgresTaskStore, SqlStoreOptions};
    // The cause (here, a refused connection) and not only that a pool waited in vain.
    let url = format!("postgres://postgres@127.0.0.1:{}/none", closed_port());
    let plain = PostgresTaskStore::open(&url)
        .await
        .expect_err("nothing listens");
    let tenanted =
        PostgresTaskStore::open_with(&url, &SqlStoreOptions::default().with_tenant_aware(true))
            .await
            .expect_err("nothing listens");
    for error in [plain.to_string(), tenanted.to_string()] {
        assert!(error.contains("refused"), "{error}");
        assert!(!error.contains("busy"), "{error}");
    }
}
