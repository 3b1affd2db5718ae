//! Abuse from outside against `a2a serve` as a process: the server still answers a fresh
//! request. Bounded loops, counts printed at the end.

mod common;

use std::time::Duration;

use common::Server;
use serde_json::{Value, json};

/// How long a fresh request may take while the abuse goes on before the test fails.
const PATIENCE: Duration = Duration::from_secs(30);

async fn fresh_send_answered(base: &str) -> Result<Value, String> {
    let client = reqwest::Client::builder()
        .timeout(PATIENCE)
        .build()
        .map_err(|e| e.to_string())?;
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER", "parts": [{"text": "still there?"}]}},
    });
    let response = client
        .post(format!("{base}/"))
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    response.json().await.map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_socket_flood_past_the_file_limit_does_not_stop_the_server() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("flood.db").display());
    // A server with the default limits that may open 1 024 files, flooded with 1 100 silent
    // connections: the previous release ran out of descriptors and answered nobody.
    let server = Server::start_with_file_limit(&url, &[], 1024);
    let mut flood = Vec::new();
    for _ in 0..1100 {
        match tokio::net::TcpStream::connect(server.addr()).await {
            Ok(socket) => flood.push(socket),
            Err(error) => panic!("the test could not open its flood: {error}"),
        }
    }
    let answer = fresh_send_answered(&server.base).await;
    let state = answer
        .as_ref()
        .map(|a| a["result"]["task"]["status"]["state"].clone())
        .unwrap_or(Value::Null);
    println!(
        "idle flood: 1100 silent sockets against a server limited to 1024 files (default connection limit); fresh send: {}",
        match &answer {
            Ok(_) => format!("answered, {state}"),
            Err(error) => format!("not answered ({error})"),
        }
    );
    assert_eq!(state, "TASK_STATE_COMPLETED", "{answer:?}");
    drop(flood);
}

/// The server's resident memory, from `/proc`, in MiB.
fn rss_mib(pid: u32) -> u64 {
    memory_mib(pid, "VmRSS:")
}

/// The most resident memory the server has had, from `/proc`, in MiB.
fn peak_rss_mib(pid: u32) -> u64 {
    memory_mib(pid, "VmHWM:")
}

fn memory_mib(pid: u32, field: &str) -> u64 {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the server's status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |kib| kib / 1024)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn byte_heavy_keyed_sends_stay_within_the_task_budget() {
    let server = Server::start("memory:", &["--max-task-mib", "64"]);
    let client = reqwest::Client::builder()
        .timeout(PATIENCE)
        .build()
        .expect("client");
    let text = "x".repeat(3_500_000);
    let before = rss_mib(server.child.id());
    let mut peak = before;
    let mut completed = 0;
    // 60 sends of 3.5 MB each, every task holding it three times (the message, the echo in
    // the history and in the status): 630 MB against a budget of 64 MiB.
    for _ in 0..60 {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": {
                "messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                "parts": [{"text": text}],
                "metadata": {"a2a-rust.com/idempotency-key": a2a_protocol_types::idempotency::generate_key()},
            }},
        });
        let answer: Value = client
            .post(format!("{}/", server.base))
            .header("A2A-Version", "1.0")
            .json(&body)
            .send()
            .await
            .expect("sent")
            .json()
            .await
            .expect("JSON");
        if answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED" {
            completed += 1;
        }
        peak = peak.max(rss_mib(server.child.id()));
    }
    let fresh = fresh_send_answered(&server.base).await;
    println!(
        "byte-heavy sends: 60 keyed sends of 3.5 MB against a 64 MiB task budget; {completed} completed; RSS {before} MiB before, peak {peak} MiB; fresh send answered: {}",
        fresh.is_ok()
    );
    assert_eq!(completed, 60, "finished tasks make room for new ones");
    // The budget, plus room for requests in flight and the process itself.
    assert!(peak < 64 + 192, "peak RSS {peak} MiB");
    assert!(fresh.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_large_bodies_at_once_stay_within_the_large_body_budget() {
    let server = Server::start("memory:", &["--max-task-mib", "64"]);
    let client = reqwest::Client::builder()
        .timeout(PATIENCE * 4)
        .build()
        .expect("client");
    let text = "x".repeat(3_900_000);
    // 64 sends near the 4 MiB body limit, all at once: unbounded, each cost about 20 MB until
    // answered, and the server peaked past 1.3 GiB.
    let sends = (0..64).map(|_| {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": {
                "messageId": uuid::Uuid::new_v4().to_string(), "role": "ROLE_USER",
                "parts": [{"text": text}],
            }},
        });
        let request = client
            .post(format!("{}/", server.base))
            .header("A2A-Version", "1.0")
            .json(&body);
        async move {
            let response = request.send().await.map_err(|e| e.to_string())?;
            let status = response.status().as_u16();
            let answer: Value = response.json().await.map_err(|e| e.to_string())?;
            Ok::<_, String>((status, answer))
        }
    });
    let answers = futures::future::join_all(sends).await;
    let (mut completed, mut refused) = (0, 0);
    for answer in &answers {
        match answer {
            Ok((200, answer))
                if answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED" =>
            {
                completed += 1;
            }
            Ok((503, answer)) => {
                let message = answer["error"]["message"].as_str().unwrap_or_default();
                assert!(message.contains("nothing ran"), "{answer}");
                refused += 1;
            }
            other => panic!("a large send answered {other:?}"),
        }
    }
    let peak = peak_rss_mib(server.child.id());
    let fresh = fresh_send_answered(&server.base).await;
    println!(
        "64 sends of 3.9 MB at once: {completed} completed, {refused} refused (503, nothing ran); \
         peak RSS {peak} MiB; fresh send answered: {}",
        fresh.is_ok()
    );
    assert_eq!(completed + refused, 64);
    assert!(completed >= 8, "the budget serves some at once");
    assert!(peak < 640, "peak RSS {peak} MiB");
    assert!(fresh.is_ok());
}
