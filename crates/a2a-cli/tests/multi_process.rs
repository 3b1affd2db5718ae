//! `a2a serve` as real processes: several sharing one store, and one killed and restarted.

use std::process::Command;
use std::time::Duration;

mod common;

use common::{Server, fresh_schema, postgres_url};
use futures::future::join_all;
use serde_json::{Value, json};
use sqlx::Executor;

fn keyed(key: &str, immediate: bool) -> Value {
    json!({
        "message": {
            "messageId": "the-one-message",
            "role": "ROLE_USER",
            "parts": [{"text": "hello"}],
            "metadata": {"a2a-rust.com/idempotency-key": key}
        },
        "configuration": {"returnImmediately": immediate}
    })
}

async fn post(base: &str, path: &str, body: &Value) -> Value {
    let response = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .header("A2A-Version", "1.0")
        .json(body)
        .timeout(Duration::from_secs(60))
        .send()
        .await
        .expect("sent");
    let status = response.status();
    let body: Value = response.json().await.expect("JSON");
    assert!(status.is_success(), "{status}: {body}");
    body
}

async fn list(base: &str) -> Value {
    reqwest::Client::new()
        .get(format!("{base}/tasks?includeArtifacts=true"))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("JSON")
}

/// 32 concurrent sends of one keyed message, alternating between two servers on one store.
async fn race(a: &Server, b: &Server) {
    let key = a2a_protocol_types::idempotency::generate_key();
    let body = keyed(&key, false);
    let sends = (0..32).map(|i| {
        let base = if i % 2 == 0 {
            a.base.clone()
        } else {
            b.base.clone()
        };
        let body = body.clone();
        async move { post(&base, "/message:send", &body).await }
    });
    let results = join_all(sends).await;
    let ids: std::collections::HashSet<&str> = results
        .iter()
        .map(|r| r["task"]["id"].as_str().expect("a task"))
        .collect();
    assert_eq!(ids.len(), 1, "every send names the same task: {ids:?}");
    for result in &results {
        assert_eq!(
            result["task"]["status"]["state"], "TASK_STATE_COMPLETED",
            "{result}"
        );
    }
    let listed = list(&a.base).await;
    assert_eq!(
        listed["totalSize"], 1,
        "one task in the shared store: {listed}"
    );
    let task = &listed["tasks"][0];
    assert_eq!(
        task["artifacts"].as_array().expect("artifacts").len(),
        1,
        "the agent ran once"
    );
}

#[tokio::test]
async fn two_processes_on_one_sqlite_file_run_a_raced_keyed_send_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = format!("sqlite://{}", dir.path().join("shared.db").display());
    let a = Server::start(&store, &["--agent", "slow-echo", "--work", "1s"]);
    let b = Server::start(&store, &["--agent", "slow-echo", "--work", "1s"]);
    race(&a, &b).await;
}

#[tokio::test]
async fn two_processes_on_one_postgres_database_run_a_raced_keyed_send_once() {
    let Some(url) = postgres_url() else {
        return;
    };
    let (admin, schema, store) = fresh_schema(&url).await;
    {
        let a = Server::start(&store, &["--agent", "slow-echo", "--work", "1s"]);
        let b = Server::start(&store, &["--agent", "slow-echo", "--work", "1s"]);
        race(&a, &b).await;
    }
    admin
        .execute(format!("DROP SCHEMA {schema} CASCADE").as_str())
        .await
        .expect("drop schema");
}

#[tokio::test]
async fn a_retry_after_the_server_is_killed_and_restarted_returns_the_same_task() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = format!("sqlite://{}", dir.path().join("durable.db").display());
    let key = a2a_protocol_types::idempotency::generate_key();

    let first = Server::start(&store, &["--agent", "slow-echo", "--work", "30s"]);
    let created = post(&first.base, "/message:send", &keyed(&key, true)).await;
    let id = created["task"]["id"].as_str().expect("a task").to_owned();
    first.kill();

    let restarted = Server::start(&store, &["--agent", "slow-echo", "--work", "30s"]);
    let retry = post(&restarted.base, "/message:send", &keyed(&key, true)).await;
    assert_eq!(
        retry["task"]["id"],
        id.as_str(),
        "the retry finds the task the first attempt created"
    );
    let listed = list(&restarted.base).await;
    assert_eq!(
        listed["totalSize"], 1,
        "the agent did not run again: {listed}"
    );
    assert_eq!(
        listed["tasks"][0]["history"].as_array().map(Vec::len),
        Some(1),
        "only the first attempt's message"
    );
}

#[tokio::test]
async fn a_server_whose_stdout_is_closed_keeps_serving() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = format!("sqlite://{}", dir.path().join("tasks.db").display());
    // A pipe whose reader is already gone: every write to it fails with EPIPE.
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = Command::new(env!("CARGO_BIN_EXE_a2a"))
        .args([
            "serve",
            "--addr",
            &format!("127.0.0.1:{port}"),
            "--store",
            &store,
        ])
        .env("RUST_LOG", "warn")
        .stdout(writer)
        .spawn()
        .expect("a2a starts");
    let server = Server {
        child,
        base: format!("http://127.0.0.1:{port}"),
    };
    let client = reqwest::Client::new();
    let mut ready = false;
    for _ in 0..100 {
        if client
            .get(format!("{}/.well-known/agent-card.json", server.base))
            .send()
            .await
            .is_ok()
        {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        ready,
        "the server survived writing its banner to a closed stdout"
    );
    let key = a2a_protocol_types::idempotency::generate_key();
    let sent = post(&server.base, "/message:send", &keyed(&key, false)).await;
    assert_eq!(sent["task"]["status"]["state"], "TASK_STATE_COMPLETED");
}
