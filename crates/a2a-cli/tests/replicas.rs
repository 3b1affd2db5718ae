//! Several `a2a serve` processes on one store, as replicas behind a load balancer run: what one
//! replica accepts, every other one respects. Each test runs on a shared SQLite file and on
//! PostgreSQL.

mod common;

use std::time::Duration;

use common::{Server, fresh_schema, postgres_url};
use futures::future::join_all;
use serde_json::{Value, json};
use sqlx::Executor;

/// A store several processes share, and what to drop afterwards.
struct Shared {
    url: String,
    name: &'static str,
    _dir: Option<tempfile::TempDir>,
    schema: Option<(sqlx::PgPool, String)>,
}

impl Shared {
    async fn drop_schema(self) {
        if let Some((admin, schema)) = self.schema {
            admin
                .execute(format!("DROP SCHEMA {schema} CASCADE").as_str())
                .await
                .expect("drop schema");
        }
    }
}

/// A SQLite file, and a PostgreSQL schema unless PostgreSQL tests are skipped.
async fn shared_stores() -> Vec<Shared> {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut stores = vec![Shared {
        url: format!("sqlite://{}", dir.path().join("shared.db").display()),
        name: "sqlite",
        _dir: Some(dir),
        schema: None,
    }];
    if let Some(url) = postgres_url() {
        let (admin, schema, url) = fresh_schema(&url).await;
        stores.push(Shared {
            url,
            name: "postgres",
            _dir: None,
            schema: Some((admin, schema)),
        });
    }
    stores
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("client")
}

/// A JSON-RPC call; the whole response.
async fn rpc(base: &str, method: &str, params: Value, headers: &[(&str, &str)]) -> Value {
    let mut request = client()
        .post(format!("{base}/"))
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("a JSON-RPC response")
}

fn message(id: &str, text: &str) -> Value {
    json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]})
}

async fn send_no_wait(base: &str, message: Value) -> Value {
    let answer = rpc(
        base,
        "SendMessage",
        json!({"message": message, "configuration": {"returnImmediately": true}}),
        &[],
    )
    .await;
    answer["result"]["task"].clone()
}

async fn get_task(base: &str, id: &str) -> Value {
    rpc(base, "GetTask", json!({"id": id}), &[]).await["result"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_through_another_replica_stays_canceled_and_stops_the_agent() {
    for shared in shared_stores().await {
        {
            let args = ["--agent", "slow-echo", "--work", "3s"];
            let a = Server::start(&shared.url, &args);
            let b = Server::start(&shared.url, &args);
            let task = send_no_wait(&a.base, message("m-cancel", "long job")).await;
            let id = task["id"].as_str().expect("a task id");
            let canceled = rpc(&b.base, "CancelTask", json!({"id": id}), &[]).await;
            assert_eq!(
                canceled["result"]["status"]["state"], "TASK_STATE_CANCELED",
                "{}: {canceled}",
                shared.name
            );
            // Past the agent's three seconds of work: had it kept running, it would have
            // completed the task, or tried to.
            tokio::time::sleep(Duration::from_secs(4)).await;
            for server in [&a, &b] {
                let task = get_task(&server.base, id).await;
                assert_eq!(
                    task["status"]["state"], "TASK_STATE_CANCELED",
                    "{}: {task}",
                    shared.name
                );
                assert!(
                    task.get("artifacts").is_none(),
                    "{}: the agent stopped: {task}",
                    shared.name
                );
            }
        }
        shared.drop_schema().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_follow_ups_through_two_replicas_lose_no_message() {
    for shared in shared_stores().await {
        {
            let a = Server::start(&shared.url, &["--agent", "conformance"]);
            let b = Server::start(&shared.url, &["--agent", "conformance"]);
            let first = rpc(
                &a.base,
                "SendMessage",
                json!({"message": message("tck-input-required-0", "start")}),
                &[],
            )
            .await;
            let task = &first["result"]["task"];
            assert_eq!(
                task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
                "{first}"
            );
            let id = task["id"].as_str().expect("id").to_owned();
            let mut accepted = vec!["tck-input-required-0".to_owned()];
            let mut refused = 0;
            for round in 0..20 {
                let sends = [&a.base, &b.base].into_iter().enumerate().map(|(i, base)| {
                    let mut follow_up = message(&format!("tck-input-required-{round}-{i}"), "more");
                    follow_up["taskId"] = json!(id);
                    let base = base.clone();
                    async move {
                        let id = follow_up["messageId"].as_str().unwrap_or("").to_owned();
                        (
                            id,
                            rpc(&base, "SendMessage", json!({"message": follow_up}), &[]).await,
                        )
                    }
                });
                for (message_id, answer) in join_all(sends).await {
                    if answer.get("result").is_some() {
                        accepted.push(message_id);
                    } else {
                        let text = answer["error"]["message"].as_str().unwrap_or("");
                        assert!(text.contains("still working"), "{}: {answer}", shared.name);
                        refused += 1;
                    }
                }
            }
            let task = get_task(&a.base, &id).await;
            let mut history: Vec<&str> = task["history"]
                .as_array()
                .expect("history")
                .iter()
                .filter(|m| m["role"] == "ROLE_USER")
                .filter_map(|m| m["messageId"].as_str())
                .collect();
            println!(
                "{}: {} follow-ups accepted, {refused} refused as busy, {} user messages in the history",
                shared.name,
                accepted.len() - 1,
                history.len()
            );
            // Two accepted in one round ran one after the other, in an order the answers do not
            // tell; what matters is that every accepted message is there, once.
            history.sort_unstable();
            accepted.sort_unstable();
            assert_eq!(
                history, accepted,
                "{}: every accepted message, once",
                shared.name
            );
        }
        shared.drop_schema().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_renewed_through_another_replica_holds() {
    const LEASE: &str = "https://a2a-rust.com/extensions/lease/v1";
    for shared in shared_stores().await {
        {
            let args = ["--agent", "slow-echo", "--work", "4s", "--max-lease", "1m"];
            let a = Server::start(&shared.url, &args);
            let b = Server::start(&shared.url, &args);
            let mut leased = message("m-leased", "keep me");
            leased["metadata"] = json!({"a2a-rust.com/lease": {"ttlMs": 1500}});
            let task = send_no_wait(&a.base, leased).await;
            let id = task["id"].as_str().expect("a task id").to_owned();
            // Renewed through B only, more often than the lease runs out, until the work ends.
            let mut state = String::new();
            for _ in 0..40 {
                let got = rpc(
                    &b.base,
                    "GetTask",
                    json!({"id": id}),
                    &[("A2A-Extensions", LEASE)],
                )
                .await;
                state = got["result"]["status"]["state"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned();
                if state != "TASK_STATE_WORKING" && state != "TASK_STATE_SUBMITTED" {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            assert_eq!(
                state, "TASK_STATE_COMPLETED",
                "{}: the lease held",
                shared.name
            );
            // And without renewals it lapses, whichever replica notices.
            let mut lapsing = message("m-lapsing", "forget me");
            lapsing["metadata"] = json!({"a2a-rust.com/lease": {"ttlMs": 1000}});
            let task = send_no_wait(&a.base, lapsing).await;
            let id = task["id"].as_str().expect("a task id").to_owned();
            let mut state = String::new();
            for _ in 0..40 {
                tokio::time::sleep(Duration::from_millis(200)).await;
                state = get_task(&b.base, &id).await["status"]["state"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned();
                if state == "TASK_STATE_CANCELED" {
                    break;
                }
            }
            assert_eq!(
                state, "TASK_STATE_CANCELED",
                "{}: an unrenewed lease lapses",
                shared.name
            );
        }
        shared.drop_schema().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_leaves_no_task_unfinished() {
    for shared in shared_stores().await {
        let mut ids = Vec::new();
        {
            let server = Server::start(
                &shared.url,
                &["--agent", "slow-echo", "--work", "1m", "--drain", "1s"],
            );
            for i in 0..20 {
                let task =
                    send_no_wait(&server.base, message(&format!("m-load-{i}"), "work")).await;
                ids.push(task["id"].as_str().expect("a task id").to_owned());
            }
            assert!(
                server.terminate(),
                "{}: SIGTERM is a clean stop",
                shared.name
            );
        }
        let reader = Server::start(&shared.url, &[]);
        let mut states = std::collections::BTreeMap::<String, usize>::new();
        for id in &ids {
            let task = get_task(&reader.base, id).await;
            let state = task["status"]["state"].as_str().unwrap_or("").to_owned();
            *states.entry(state).or_default() += 1;
        }
        println!(
            "{}: after SIGTERM with 20 tasks running: {states:?}",
            shared.name
        );
        assert_eq!(
            states.get("TASK_STATE_FAILED"),
            Some(&20),
            "{}: {states:?}",
            shared.name
        );
        drop(reader);
        shared.drop_schema().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purge_of_a_tenant_aware_store_keeps_the_key_of_a_live_task_in_another_tenant() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("tenants.db").display());
    let server = Server::start(
        &url,
        &["--tenant-aware", "--agent", "slow-echo", "--work", "1m"],
    );
    let key = a2a_protocol_types::idempotency::generate_key();
    let mut keyed = message("m-keyed", "live in acme");
    keyed["metadata"] = json!({"a2a-rust.com/idempotency-key": key});
    let params =
        json!({"tenant": "acme", "message": keyed, "configuration": {"returnImmediately": true}});
    let first = rpc(&server.base, "SendMessage", params.clone(), &[]).await;
    let id = first["result"]["task"]["id"]
        .as_str()
        .expect("a task")
        .to_owned();
    let purge = std::process::Command::new(env!("CARGO_BIN_EXE_a2a"))
        .args([
            "purge",
            "--store",
            &url,
            "--keep-terminal",
            "0s",
            "--keep-keys",
            "0s",
        ])
        .output()
        .expect("a2a purge runs");
    assert!(
        purge.status.success(),
        "{}",
        String::from_utf8_lossy(&purge.stderr)
    );
    let retry = rpc(&server.base, "SendMessage", params, &[]).await;
    assert_eq!(
        retry["result"]["task"]["id"],
        id.as_str(),
        "the retry found the key the sweep kept: {retry}"
    );
    let listed = rpc(&server.base, "ListTasks", json!({"tenant": "acme"}), &[]).await;
    assert_eq!(
        listed["result"]["totalSize"], 1,
        "one task, one run: {listed}"
    );
    // Opened the other way, the store says how it must be opened.
    let plain = std::process::Command::new(env!("CARGO_BIN_EXE_a2a"))
        .args(["serve", "--addr", "127.0.0.1:0", "--store", &url])
        .output()
        .expect("a2a serve runs");
    assert!(!plain.status.success());
    assert!(
        String::from_utf8_lossy(&plain.stderr).contains("tenant-aware"),
        "{}",
        String::from_utf8_lossy(&plain.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_racing_a_stalled_write_gets_a_retryable_answer_never_not_found() {
    let Some(url) = postgres_url() else {
        return;
    };
    let (admin, schema, store) = fresh_schema(&url).await;
    {
        let server = Server::start(&store, &[]);
        let key = a2a_protocol_types::idempotency::generate_key();
        let mut keyed = message("m-stalled", "hello");
        keyed["metadata"] = json!({"a2a-rust.com/idempotency-key": key});
        let params = json!({"message": keyed});
        // Stall every task write: a transaction holds the table against writers.
        let mut stall = admin.begin().await.expect("a transaction");
        stall
            .execute(format!("LOCK TABLE {schema}.a2a_tasks IN EXCLUSIVE MODE").as_str())
            .await
            .expect("the lock");
        let first = tokio::spawn({
            let (base, params) = (server.base.clone(), params.clone());
            async move { rpc(&base, "SendMessage", params, &[]).await }
        });
        tokio::time::sleep(Duration::from_millis(500)).await;
        let retry = rpc(&server.base, "SendMessage", params.clone(), &[]).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        stall.rollback().await.expect("released");
        let first = first.await.expect("joined");
        for (which, answer) in [("first attempt", &first), ("retry", &retry)] {
            if let Some(error) = answer.get("error") {
                assert_ne!(
                    error["code"], -32001,
                    "{which}: never TaskNotFound: {answer}"
                );
                let retryable = error["data"]
                    .as_array()
                    .is_some_and(|d| d.iter().any(|x| x["reason"] == "RESOURCE_EXHAUSTED"));
                assert!(retryable, "{which}: a retryable refusal: {answer}");
            } else {
                assert!(
                    answer["result"]["task"]["id"].is_string(),
                    "{which}: {answer}"
                );
            }
        }
        // Once writes flow again, the identical message gets its one task.
        let settled = rpc(&server.base, "SendMessage", params.clone(), &[]).await;
        let again = rpc(&server.base, "SendMessage", params, &[]).await;
        assert_eq!(
            settled["result"]["task"]["id"], again["result"]["task"]["id"],
            "{settled}"
        );
        let listed = rpc(&server.base, "ListTasks", json!({}), &[]).await;
        assert_eq!(listed["result"]["totalSize"], 1, "{listed}");
    }
    admin
        .execute(format!("DROP SCHEMA {schema} CASCADE").as_str())
        .await
        .expect("drop schema");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_the_server_though_a_client_trickles_and_a_retry_waits() {
    use tokio::io::AsyncWriteExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("term.db").display());
    let server = Server::start(
        &url,
        &["--agent", "slow-echo", "--work", "1m", "--drain", "1s"],
    );
    // A client that sends its request a byte at a time and never finishes it.
    let mut trickle = tokio::net::TcpStream::connect(server.addr())
        .await
        .expect("connect");
    trickle
        .write_all(b"POST /message:send HTTP/1.1\r\nHost: x\r\nContent-Le")
        .await
        .expect("a first byte");
    // A blocking send, and a blocking retry of it, both waiting on a minute of work.
    let key = a2a_protocol_types::idempotency::generate_key();
    let mut keyed = message("m-waiting", "wait");
    keyed["metadata"] = json!({"a2a-rust.com/idempotency-key": key});
    let params = json!({"message": keyed});
    let waiting: Vec<_> = (0..2)
        .map(|i| {
            let (base, params) = (server.base.clone(), params.clone());
            tokio::spawn(async move {
                if i == 1 {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                }
                rpc(&base, "SendMessage", params, &[]).await
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(800)).await;
    let clean = tokio::task::spawn_blocking(move || server.terminate())
        .await
        .expect("joined");
    assert!(clean, "SIGTERM is a clean stop, trickling client or not");
    for answer in waiting {
        let answer = answer.await.expect("joined");
        assert_eq!(
            answer["result"]["task"]["status"]["state"], "TASK_STATE_FAILED",
            "the waiting sends got the settled task: {answer}"
        );
    }
    drop(trickle);
}
