//! Chaos: 1 000 keyed sends from 9 concurrent clients with the retry policy, a third each on
//! JSON-RPC, HTTP+JSON and gRPC, through a proxy that breaks about 30 % of connections (of
//! calls, on gRPC's shared HTTP/2 connections) at random points (closed on accept, cut after
//! the request, cut mid-answer, cut mid-stream), against the in-memory, SQLite and PostgreSQL
//! stores, unary and streaming mixed. Every send must end with exactly one task, the agent must
//! run exactly once per key, and the server must log no error.
//!
//! A plain `main` (harness = false), so it prints its counts on every run. Set
//! `A2A_CHAOS_SEED` to repeat a run; `A2A_TEST_POSTGRES_URL=skip` skips PostgreSQL.

use std::collections::{HashMap, HashSet};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use a2a_integration_tests::support::serve;
use a2a_protocol_client::{A2aClient, Binding, ClientBuilder, RetryPolicy};
use a2a_protocol_server::store::{
    InMemoryTaskStore, PostgresTaskStore, SqliteTaskStore, TaskQuery, TaskStore, TaskStoreExt,
};
use a2a_protocol_server::{AgentExecutor, EventSink, RequestContext, RequestHandler};
use a2a_protocol_types::idempotency::{generate_key, key_of, set_key};
use a2a_protocol_types::{
    A2aError, Artifact, Message, Part, SendMessageRequest, SendMessageResponse, StreamResponse,
    TaskId, TaskState,
};
use a2a_test_kit::fault_proxy::{Chaos, FaultCounts, FaultProxy};
use futures::StreamExt;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt;

const SENDS: usize = 1_000;
const CLIENTS: usize = 9;
const FAULT_RATE: f64 = 0.3;

/// Echoes after a short pause, and records which key each turn ran for.
#[derive(Default)]
struct KeyCountingAgent {
    runs: Mutex<HashMap<String, usize>>,
    turns: AtomicUsize,
}

#[async_trait::async_trait]
impl AgentExecutor for KeyCountingAgent {
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
        let turn = self.turns.fetch_add(1, Ordering::SeqCst);
        let key = key_of(&ctx.message)
            .ok()
            .flatten()
            .unwrap_or("<none>")
            .to_owned();
        *self
            .runs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key)
            .or_default() += 1;
        events.working().await?;
        // A pause, so some retries arrive while their first attempt is still running.
        tokio::time::sleep(Duration::from_millis((turn % 7) as u64 * 3)).await;
        let text = ctx.message.text();
        events
            .artifact(Artifact::new("echo", vec![Part::text(text.clone())]))
            .await?;
        events.complete(Some(events.agent_message(text))).await
    }
}

/// Counts ERROR events the server logs.
#[derive(Clone, Default)]
struct ErrorCounter(Arc<AtomicUsize>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ErrorCounter {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        if *event.metadata().level() == tracing::Level::ERROR {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// One send's fate.
struct Sent {
    key: String,
    streamed: bool,
    outcome: Result<(TaskId, TaskState), String>,
}

fn client(url: &str, binding: Binding) -> A2aClient {
    let fresh = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .expect("an HTTP client");
    ClientBuilder::new(url)
        .with_binding(binding)
        .with_http_client(fresh)
        .with_peer_honouring_idempotency(true)
        .with_request_timeout(Duration::from_secs(20))
        .with_stream_idle_timeout(Duration::from_secs(20))
        .with_retry_policy(
            RetryPolicy::default()
                .with_max_attempts(20)
                .with_initial_backoff(Duration::from_millis(5))
                .with_max_backoff(Duration::from_millis(100))
                .with_deadline(Duration::from_secs(60)),
        )
        .build()
        .expect("a client")
}

async fn send_one(client: &A2aClient, index: usize) -> Sent {
    let key = generate_key();
    let mut message = Message::user_text(format!("chaos {index}"));
    set_key(&mut message, &key).expect("a valid key");
    let request = SendMessageRequest::new(message);
    let streamed = index % 2 == 1;
    let outcome = if streamed {
        match client.send_streaming_message(request).await {
            Err(error) => Err(error.to_string()),
            Ok(mut events) => {
                let mut last: Option<(TaskId, TaskState)> = None;
                let mut failure = None;
                while let Some(event) = events.next().await {
                    match event {
                        Ok(event) => {
                            let state = match &event {
                                StreamResponse::Task(task) => Some(task.status.state),
                                StreamResponse::StatusUpdate(update) => Some(update.status.state),
                                _ => None,
                            };
                            if let (Some(id), Some(state)) = (event.task_id(), state) {
                                last = Some((id.clone(), state));
                            }
                        }
                        Err(error) => failure = Some(error.to_string()),
                    }
                }
                match (failure, last) {
                    (Some(error), _) => Err(error),
                    (None, Some(last)) => Ok(last),
                    (None, None) => Err("a stream without a task".into()),
                }
            }
        }
    } else {
        match client.send_message(request).await {
            Ok(SendMessageResponse::Task(task)) => Ok((task.id, task.status.state)),
            Ok(SendMessageResponse::Message(_)) => Err("a message instead of a task".into()),
            Err(error) => Err(error.to_string()),
        }
    };
    Sent {
        key,
        streamed,
        outcome,
    }
}

struct Report {
    store: &'static str,
    elapsed: Duration,
    faults: FaultCounts,
    connections: usize,
    sent: Vec<Sent>,
    tasks_stored: usize,
    turns: usize,
    distinct_keys_run: usize,
    keys_run_twice: usize,
    server_errors: usize,
    mismatched_tasks: usize,
}

async fn run(
    store_name: &'static str,
    store: Arc<dyn TaskStore>,
    seed: u64,
    errors: &ErrorCounter,
) -> Report {
    let agent = Arc::new(KeyCountingAgent::default());
    let handler = RequestHandler::builder(agent.clone())
        .with_store(store.clone())
        .build();
    let server = serve(handler).await;
    let proxy = FaultProxy::start(server.addr)
        .await
        .expect("a proxy")
        .with_chaos(Chaos::new(FAULT_RATE, seed));
    let errors_before = errors.0.load(Ordering::SeqCst);
    let started = Instant::now();
    let url = proxy.url();
    let clients = (0..CLIENTS).map(|c| {
        let binding = [Binding::JsonRpc, Binding::HttpJson, Binding::Grpc][c % 3];
        let client = client(&url, binding);
        tokio::spawn(async move {
            let mut sent = Vec::new();
            for i in (c..SENDS).step_by(CLIENTS) {
                sent.push(send_one(&client, i).await);
            }
            sent
        })
    });
    let mut sent = Vec::with_capacity(SENDS);
    for result in futures::future::join_all(clients).await {
        sent.extend(result.expect("a client task"));
    }
    let elapsed = started.elapsed();
    // Let turns whose first attempt was cut finish before counting.
    tokio::time::sleep(Duration::from_millis(200)).await;

    let tasks_stored = store
        .list(
            "",
            &TaskQuery {
                page_size: 1,
                ..TaskQuery::default()
            },
        )
        .await
        .expect("the store lists")
        .total_size;
    let mut mismatched_tasks = 0;
    for send in &sent {
        if let Ok((id, _)) = &send.outcome {
            let task = store.get("", id).await.expect("the store reads");
            let key = task
                .as_ref()
                .and_then(|t| t.history.first())
                .and_then(|m| key_of(m).ok().flatten().map(str::to_owned));
            if key.as_deref() != Some(send.key.as_str()) {
                mismatched_tasks += 1;
            }
        }
    }
    let runs = agent.runs.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Report {
        store: store_name,
        elapsed,
        faults: proxy.counts(),
        connections: proxy.connections(),
        tasks_stored,
        turns: agent.turns.load(Ordering::SeqCst),
        distinct_keys_run: runs.len(),
        keys_run_twice: runs.values().filter(|n| **n > 1).count(),
        server_errors: errors.0.load(Ordering::SeqCst) - errors_before,
        mismatched_tasks,
        sent,
    }
}

impl Report {
    /// What went wrong, if anything.
    fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        let failed: Vec<&Sent> = self.sent.iter().filter(|s| s.outcome.is_err()).collect();
        if !failed.is_empty() {
            problems.push(format!(
                "{} sends failed, such as: {}",
                failed.len(),
                failed[0].outcome.as_ref().err().map_or("", String::as_str)
            ));
        }
        let not_done = self
            .sent
            .iter()
            .filter(|s| matches!(s.outcome, Ok((_, state)) if state != TaskState::Completed))
            .count();
        if not_done > 0 {
            problems.push(format!("{not_done} sends ended with a task not completed"));
        }
        let ids: HashSet<&TaskId> = self
            .sent
            .iter()
            .filter_map(|s| s.outcome.as_ref().ok().map(|o| &o.0))
            .collect();
        let succeeded = self.sent.iter().filter(|s| s.outcome.is_ok()).count();
        if ids.len() != succeeded {
            problems.push(format!(
                "{succeeded} sends named only {} distinct tasks",
                ids.len()
            ));
        }
        if self.tasks_stored != SENDS {
            problems.push(format!(
                "{} tasks stored for {SENDS} sends",
                self.tasks_stored
            ));
        }
        if self.turns != self.distinct_keys_run || self.distinct_keys_run != SENDS {
            problems.push(format!(
                "{} agent turns for {} distinct keys ({SENDS} sent)",
                self.turns, self.distinct_keys_run
            ));
        }
        if self.keys_run_twice > 0 {
            problems.push(format!("{} keys ran more than once", self.keys_run_twice));
        }
        if self.mismatched_tasks > 0 {
            problems.push(format!(
                "{} sends got a task created for another key",
                self.mismatched_tasks
            ));
        }
        if self.server_errors > 0 {
            problems.push(format!("the server logged {} errors", self.server_errors));
        }
        if self.faults.faulted() * 5 < self.connections {
            problems.push(format!(
                "only {} of {} connections were broken: the chaos did not happen",
                self.faults.faulted(),
                self.connections
            ));
        }
        problems
    }

    fn print(&self) {
        let streamed = self.sent.iter().filter(|s| s.streamed).count();
        let f = &self.faults;
        println!(
            "chaos [{}] {} sends ({} unary, {streamed} streaming) from {CLIENTS} clients in {:.1} s: \
             {} connections, {} broken (refused {}, cut after the request {}, mid-answer {}, mid-stream {}); \
             {} tasks stored, {} agent turns for {} distinct keys, {} keys run twice, {} server errors",
            self.store,
            self.sent.len(),
            self.sent.len() - streamed,
            self.elapsed.as_secs_f64(),
            self.connections,
            f.faulted(),
            f.refused,
            f.cut_before_response,
            f.cut_mid_response,
            f.cut_mid_stream,
            self.tasks_stored,
            self.turns,
            self.distinct_keys_run,
            self.keys_run_twice,
            self.server_errors,
        );
    }
}

/// The PostgreSQL the tests use, or `None` when `A2A_TEST_POSTGRES_URL=skip`.
fn postgres_url() -> Option<String> {
    match std::env::var("A2A_TEST_POSTGRES_URL") {
        Ok(url) if url == "skip" => None,
        Ok(url) => Some(url),
        Err(_) => Some("postgres://postgres@127.0.0.1:5432/test".to_owned()),
    }
}

async fn postgres_store(url: &str) -> (Arc<dyn TaskStore>, sqlx::PgPool, String) {
    use sqlx::Executor as _;
    let admin = sqlx::PgPool::connect(url)
        .await
        .expect("PostgreSQL is reachable (set A2A_TEST_POSTGRES_URL=skip to skip)");
    let schema = format!("a2a_chaos_{}", uuid::Uuid::new_v4().simple());
    admin
        .execute(format!("CREATE SCHEMA {schema}").as_str())
        .await
        .expect("a schema");
    let separator = if url.contains('?') { '&' } else { '?' };
    let scoped = format!("{url}{separator}options=-c%20search_path%3D{schema}");
    let store = PostgresTaskStore::open(&scoped)
        .await
        .expect("the store opens");
    (Arc::new(store), admin, schema)
}

fn main() -> ExitCode {
    let errors = ErrorCounter::default();
    let subscriber = tracing_subscriber::registry().with(errors.clone()).with(
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_filter(tracing_subscriber::filter::LevelFilter::WARN),
    );
    tracing::subscriber::set_global_default(subscriber).expect("a subscriber");
    let seed = std::env::var("A2A_CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            u64::from_le_bytes(generate_key().as_bytes()[..8].try_into().unwrap_or([7; 8]))
        });
    println!("chaos seed {seed} (set A2A_CHAOS_SEED={seed} to repeat this run)");
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let failures = runtime.block_on(async {
        let mut failures = Vec::new();
        let mut check = |report: Report| {
            report.print();
            for problem in report.problems() {
                failures.push(format!("[{}] {problem}", report.store));
            }
        };
        check(run("memory", Arc::new(InMemoryTaskStore::new()), seed, &errors).await);
        let dir = tempfile::tempdir().expect("a temp dir");
        let url = format!("sqlite://{}", dir.path().join("chaos.db").display());
        let sqlite = SqliteTaskStore::open(&url).await.expect("the store opens");
        check(run("sqlite", Arc::new(sqlite), seed.wrapping_add(1), &errors).await);
        match postgres_url() {
            None => println!("chaos [postgres] skipped: A2A_TEST_POSTGRES_URL=skip"),
            Some(url) => {
                use sqlx::Executor as _;
                let (store, admin, schema) = postgres_store(&url).await;
                check(run("postgres", store, seed.wrapping_add(2), &errors).await);
                let _ = admin
                    .execute(format!("DROP SCHEMA {schema} CASCADE").as_str())
                    .await;
            }
        }
        failures
    });
    if failures.is_empty() {
        println!("chaos: every send ended with exactly one task; every key ran once");
        ExitCode::SUCCESS
    } else {
        for failure in &failures {
            eprintln!("chaos FAILED {failure}");
        }
        ExitCode::FAILURE
    }
}
