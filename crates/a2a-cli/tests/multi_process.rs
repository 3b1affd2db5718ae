//! `a2a serve` as real processes: several sharing one store, and one killed and restarted.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use futures::future::join_all;
use serde_json::{Value, json};
use sqlx::Executor;

/// A server process, killed (SIGKILL) when dropped.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(store: &str, extra: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_a2a"))
            .args(["serve", "--addr", "127.0.0.1:0", "--store", store])
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("a2a starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let mut base = None;
        for line in lines.by_ref() {
            let line = line.expect("a line");
            if let Some(card) = line.strip_prefix("Agent card: ") {
                base = Some(
                    card.trim_end_matches("/.well-known/agent-card.json")
                        .to_owned(),
                );
                break;
            }
        }
        // Keep reading, so the server never writes into a closed pipe.
        std::thread::spawn(move || lines.for_each(drop));
        let base = base.expect("the server printed its card URL");
        Self { child, base }
    }

    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

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
    let a = Server::start(&store, &["--slow", "1"]);
    let b = Server::start(&store, &["--slow", "1"]);
    race(&a, &b).await;
}

#[tokio::test]
async fn two_processes_on_one_postgres_database_run_a_raced_keyed_send_once() {
    let url = match std::env::var("A2A_TEST_POSTGRES_URL") {
        Ok(url) if url == "skip" => return,
        Ok(url) => url,
        Err(_) => "postgres://postgres@127.0.0.1:5432/test".to_owned(),
    };
    let admin = sqlx::PgPool::connect(&url)
        .await
        .expect("PostgreSQL is reachable");
    let schema = format!("a2a_cli_test_{}", uuid::Uuid::new_v4().simple());
    admin
        .execute(format!("CREATE SCHEMA {schema}").as_str())
        .await
        .expect("schema");
    let separator = if url.contains('?') { '&' } else { '?' };
    let store = format!("{url}{separator}options=-c%20search_path%3D{schema}");
    {
        let a = Server::start(&store, &["--slow", "1"]);
        let b = Server::start(&store, &["--slow", "1"]);
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

    let first = Server::start(&store, &["--slow", "30"]);
    let created = post(&first.base, "/message:send", &keyed(&key, true)).await;
    let id = created["task"]["id"].as_str().expect("a task").to_owned();
    first.kill();

    let restarted = Server::start(&store, &["--slow", "30"]);
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

fn a2a(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_a2a"))
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("a2a runs");
    assert!(
        output.status.success(),
        "a2a {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test]
async fn the_cli_sends_with_a_key_reads_tasks_and_purges() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = format!("sqlite://{}", dir.path().join("cli.db").display());
    let server = Server::start(&store, &[]);
    let base = server.base.clone();
    let answers = tokio::task::spawn_blocking(move || {
        let card: Value = serde_json::from_str(&a2a(&["card", &base])).expect("a card");
        assert_eq!(card["name"], "Echo agent");
        let key = a2a(&["key"]).trim().to_owned();
        let send = |extra: &[&str]| {
            let mut args = vec![
                "send",
                base.as_str(),
                "hello",
                "--key",
                key.as_str(),
                "--message-id",
                "cli-msg-1",
            ];
            args.extend_from_slice(extra);
            serde_json::from_str::<Value>(&a2a(&args)).expect("JSON")
        };
        let first = send(&[]);
        let again = send(&["--binding", "http-json"]);
        let id = first["task"]["id"].as_str().expect("id").to_owned();
        let fetched: Value = serde_json::from_str(&a2a(&["get", &base, &id])).expect("JSON");
        let listed: Value = serde_json::from_str(&a2a(&["tasks", &base])).expect("JSON");
        (first, again, fetched, listed)
    })
    .await
    .expect("joined");
    let (first, again, fetched, listed) = answers;
    assert_eq!(
        first["task"]["id"], again["task"]["id"],
        "the same key replays"
    );
    assert_eq!(fetched["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(listed["totalSize"], 1);
    drop(server);
    let purged = tokio::task::spawn_blocking(move || {
        a2a(&[
            "purge",
            "--store",
            &store,
            "--keep-terminal",
            "0",
            "--keep-keys",
            "0",
        ])
    })
    .await
    .expect("joined");
    assert!(purged.contains("deleted 1 terminal tasks"), "{purged}");
}
