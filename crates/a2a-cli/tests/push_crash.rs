//! Push crash test: sends with a push config while `a2a serve` processes are killed with
//! SIGKILL and restarted (two replicas on one PostgreSQL database, then one server on a SQLite
//! file). A webhook on 127.0.0.1 refuses some first attempts and records every POST. At the
//! end every task's every event has reached the webhook at least once (generations 2 up to the
//! task's own), duplicates are recognised by their delivery id and counted, and no delivery
//! was ever being made by two servers at once. Prints its counts.
//!
//! Settings: `A2A_PUSH_CRASH_SENDS` (300 per store), `A2A_TEST_POSTGRES_URL` as the other tests.

mod common;

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use a2a_protocol_client::{A2aClient, ClientBuilder, RetryPolicy};
use a2a_protocol_types::idempotency::{generate_key, set_key};
use a2a_protocol_types::push::TaskPushNotificationConfig;
use a2a_protocol_types::{GetTaskRequest, Message, SendMessageRequest, SendMessageResponse};
use axum::http::{HeaderMap, StatusCode};
use common::{Fleet, fresh_schema, postgres_url};
use sqlx::Executor;

const CLIENTS: usize = 8;

fn sends() -> usize {
    std::env::var("A2A_PUSH_CRASH_SENDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

/// What the webhook saw.
#[derive(Default)]
struct Seen {
    /// POSTs per delivery id, refused ones included.
    posts: HashMap<String, usize>,
    /// Acknowledged POSTs per delivery id.
    acked: HashMap<String, usize>,
    /// Generations acknowledged per task.
    generations: HashMap<String, BTreeSet<u64>>,
    /// POSTs of one delivery id in flight at once, now and at most.
    in_flight: HashMap<String, usize>,
    max_in_flight: usize,
    refused: usize,
}

#[derive(Clone, Default)]
struct Webhook(Arc<Mutex<Seen>>);

impl Webhook {
    async fn start() -> (String, Self) {
        let hook = Self::default();
        let state = hook.clone();
        let app = axum::Router::new().fallback(move |headers: HeaderMap, body: String| {
            let state = state.clone();
            async move { state.receive(headers, body).await }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (base, hook)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn receive(&self, headers: HeaderMap, body: String) -> StatusCode {
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned()
        };
        let id = header("a2a-delivery-id");
        let generation: u64 = header("a2a-task-generation").parse().unwrap_or(0);
        let event: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let task = ["statusUpdate", "artifactUpdate"]
            .iter()
            .find_map(|kind| event[kind]["taskId"].as_str())
            .or(event["task"]["id"].as_str())
            .unwrap_or("")
            .to_owned();
        let refuse = {
            let mut seen = self.lock();
            let posts = seen.posts.entry(id.clone()).or_default();
            *posts += 1;
            // A third of the notifications are refused on their first attempt.
            let refuse = *posts == 1 && id.bytes().map(u64::from).sum::<u64>() % 3 == 0;
            let in_flight = seen.in_flight.entry(id.clone()).or_default();
            *in_flight += 1;
            let now = *in_flight;
            seen.max_in_flight = seen.max_in_flight.max(now);
            refuse
        };
        // Ends the POST's time in flight however the handler ends: hyper drops it unfinished
        // when the server that sent it is killed.
        let _in_flight = InFlight {
            hook: self.clone(),
            id: id.clone(),
        };
        // Long enough that two servers delivering one notification at once would overlap.
        tokio::time::sleep(Duration::from_millis(30)).await;
        let mut seen = self.lock();
        if refuse {
            seen.refused += 1;
            return StatusCode::SERVICE_UNAVAILABLE;
        }
        *seen.acked.entry(id).or_default() += 1;
        seen.generations.entry(task).or_default().insert(generation);
        StatusCode::OK
    }
}

struct InFlight {
    hook: Webhook,
    id: String,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(n) = self.hook.lock().in_flight.get_mut(&self.id) {
            *n -= 1;
        }
    }
}

/// What every server of the fleet runs with.
const SERVER_ARGS: &[&str] = &[
    "--agent",
    "slow-echo",
    "--work",
    "100ms",
    "--recovery-time",
    "2s",
    "--drain",
    "1s",
    "--allow-push-to",
    "127.0.0.1",
    "--push-timeout",
    "1s",
];

fn client(base: &str) -> A2aClient {
    ClientBuilder::new(base)
        .with_peer_honouring_idempotency(true)
        .with_retry_policy(
            RetryPolicy::new()
                .with_max_attempts(3)
                .with_initial_backoff(Duration::from_millis(100))
                .with_max_backoff(Duration::from_secs(1))
                .with_deadline(Duration::from_secs(5)),
        )
        .with_request_timeout(Duration::from_secs(20))
        .build()
        .expect("a client")
}

/// Sends one keyed message with a push config until some server answers; the task id.
async fn send_until_answered(
    clients: &[A2aClient],
    first: usize,
    message: Message,
    hook: &str,
) -> Option<String> {
    for round in 0..60 {
        let client = &clients[(first + round) % clients.len()];
        let request = SendMessageRequest::new(message.clone())
            .with_push_config(TaskPushNotificationConfig::new(hook).with_token("crash"));
        match client.send_message(request).await {
            Ok(SendMessageResponse::Task(task)) => return Some(task.id.to_string()),
            Ok(SendMessageResponse::Message(_)) => panic!("the echo agent answers with a task"),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    None
}

async fn run(name: &str, store: &str, replicas: usize) {
    let total = sends();
    let started = Instant::now();
    let (hook_base, hook) = Webhook::start().await;
    let hook_url = format!("{hook_base}/hook");
    let fleet = Fleet::start(store, replicas, SERVER_ARGS);
    let bases: Vec<String> = fleet.addrs.iter().map(|a| format!("http://{a}")).collect();
    let done = Arc::new(AtomicBool::new(false));
    let chaos = {
        let (fleet, done) = (Arc::clone(&fleet), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut round = 0usize;
            while !done.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(600 + (round % 3) as u64 * 300));
                if done.load(Ordering::SeqCst) {
                    break;
                }
                fleet.crash(round % fleet.addrs.len(), Duration::from_millis(300));
                round += 1;
            }
        })
    };
    let next = Arc::new(AtomicUsize::new(0));
    let tasks = Arc::new(Mutex::new(Vec::new()));
    let unanswered = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..CLIENTS)
        .map(|worker| {
            let (next, tasks, unanswered) = (
                Arc::clone(&next),
                Arc::clone(&tasks),
                Arc::clone(&unanswered),
            );
            let clients: Vec<A2aClient> = bases.iter().map(|b| client(b)).collect();
            let hook_url = hook_url.clone();
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= total {
                        return;
                    }
                    let mut message = Message::user_text(format!("send {i}"));
                    set_key(&mut message, &generate_key()).expect("a valid key");
                    match send_until_answered(&clients, worker, message, &hook_url).await {
                        Some(task) => tasks.lock().unwrap_or_else(|e| e.into_inner()).push(task),
                        None => {
                            unanswered.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.expect("a client worker");
    }
    done.store(true, Ordering::SeqCst);
    chaos.join().expect("the chaos loop");
    let sending_took = started.elapsed();
    let tasks: Vec<String> = std::mem::take(&mut *tasks.lock().unwrap_or_else(|e| e.into_inner()));

    // Every server is up again. Wait (boundedly) until each task is terminal and each of its
    // events has been acknowledged: generations 2 ..= the task's.
    let reader = client(&bases[0]);
    let wait_started = Instant::now();
    let mut missing = Vec::new();
    let mut expected = 0;
    for _ in 0..240 {
        missing.clear();
        expected = 0;
        for task_id in &tasks {
            let task = reader
                .get_task(GetTaskRequest {
                    id: task_id.as_str().into(),
                    ..Default::default()
                })
                .await
                .expect("the task");
            let wanted: BTreeSet<u64> = (2..=task.generation).collect();
            expected += wanted.len();
            let seen = hook.lock();
            let got = seen.generations.get(task_id).cloned().unwrap_or_default();
            if !task.status.state.is_terminal() || !wanted.is_subset(&got) {
                missing.push((task_id.clone(), task.status.state, wanted, got));
            }
        }
        if missing.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let seen = hook.lock();
    let posts: usize = seen.posts.values().sum();
    let acked: usize = seen.acked.values().sum();
    let duplicates: usize = seen.acked.values().map(|n| n.saturating_sub(1)).sum();
    println!(
        "push crash test ({name}, {replicas} replica(s)): {} sends in {:.1} s, {} SIGKILLs, {} \
         unanswered; {} notifications expected, {} distinct acknowledged, {posts} POSTs ({} \
         refused on purpose), {acked} acknowledged, {duplicates} duplicates (same delivery id), \
         most POSTs of one delivery in flight at once {}; all delivered {:.1} s after the last \
         send; missing {}",
        tasks.len(),
        sending_took.as_secs_f64(),
        fleet.kills.load(Ordering::SeqCst),
        unanswered.load(Ordering::SeqCst),
        expected,
        seen.acked.len(),
        seen.refused,
        seen.max_in_flight,
        wait_started.elapsed().as_secs_f64(),
        missing.len(),
    );
    assert!(
        fleet.kills.load(Ordering::SeqCst) > 0,
        "{name}: the chaos loop killed servers"
    );
    assert_eq!(
        unanswered.load(Ordering::SeqCst),
        0,
        "{name}: every send answered"
    );
    assert!(
        missing.is_empty(),
        "{name}: notifications lost: {:?}",
        &missing[..missing.len().min(5)]
    );
    assert_eq!(
        seen.max_in_flight, 1,
        "{name}: a delivery is made by one server at a time"
    );
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        if let Some(url) = postgres_url() {
            let (admin, schema, store) = fresh_schema(&url).await;
            run("postgres", &store, 2).await;
            admin
                .execute(format!("DROP SCHEMA {schema} CASCADE").as_str())
                .await
                .expect("drop schema");
        } else {
            println!("push crash test (postgres): skipped, A2A_TEST_POSTGRES_URL=skip");
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let store = format!("sqlite://{}", dir.path().join("push-crash.db").display());
        run("sqlite", &store, 1).await;
    });
}
