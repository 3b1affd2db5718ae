//! Crash test: keyed sends from concurrent clients with a retry policy while `a2a serve`
//! processes are killed with SIGKILL and restarted: three replicas on one PostgreSQL database,
//! then one server on a SQLite file; then while the database itself restarts under three
//! replicas (a PostgreSQL cluster of the test's own, so the machine's other tests go on). At
//! the end every key has exactly one task, every task is terminal within the recovery time, no
//! key ran twice, no acknowledged send is lost, every answer was true, and no task says that
//! nothing ran. Prints its counts.
//!
//! Settings: `A2A_CRASH_SENDS` (1 000 per store), `A2A_TEST_POSTGRES_URL` as the other tests.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use a2a_protocol_client::{A2aClient, ClientBuilder, RetryPolicy};
use a2a_protocol_types::idempotency::{generate_key, set_key};
use a2a_protocol_types::{
    ListTasksRequest, Message, SendMessageRequest, SendMessageResponse, TaskState,
};
use common::{Fleet, PrivateCluster, fresh_schema, postgres_url};
use sqlx::Executor;

const CLIENTS: usize = 16;
/// Recovery time of the servers: how long a killed server's turns may stay unfinished.
const RECOVERY: Duration = Duration::from_secs(2);
/// How long a send's agent works.
const WORK: &str = "200ms";

fn sends() -> usize {
    std::env::var("A2A_CRASH_SENDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000)
}

/// What one send saw.
#[derive(Debug, Clone)]
struct Sent {
    key: String,
    message: Message,
    /// The task and state the answer named, when one came.
    answer: Option<(String, TaskState)>,
    attempts: usize,
}

fn client(base: &str) -> A2aClient {
    ClientBuilder::new(base)
        .with_peer_honouring_idempotency(true)
        .with_retry_policy(
            RetryPolicy::new()
                .with_max_attempts(5)
                .with_initial_backoff(Duration::from_millis(100))
                .with_max_backoff(Duration::from_secs(1))
                .with_deadline(Duration::from_secs(10)),
        )
        .with_request_timeout(Duration::from_secs(30))
        .build()
        .expect("a client")
}

/// What every server of the fleet runs with.
const SERVER_ARGS: &[&str] = &[
    "--agent",
    "slow-echo",
    "--work",
    WORK,
    "--recovery-time",
    "2s",
    "--drain",
    "1s",
];

/// Sends one keyed message until some replica answers, resending the identical message (a
/// retry, as far as the servers can tell) to the next replica when one is down.
async fn send_until_answered(clients: &[A2aClient], first: usize, mut sent: Sent) -> Sent {
    for round in 0..60 {
        let client = &clients[(first + round) % clients.len()];
        sent.attempts += 1;
        match client
            .send_message(SendMessageRequest::new(sent.message.clone()))
            .await
        {
            Ok(SendMessageResponse::Task(task)) => {
                sent.answer = Some((task.id.to_string(), task.status.state));
                return sent;
            }
            Ok(SendMessageResponse::Message(_)) => panic!("the echo agent answers with a task"),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
    sent
}

/// What goes wrong while the sends run.
#[derive(Clone)]
enum Chaos {
    /// A server is killed with SIGKILL and restarted, one after another.
    KillServers,
    /// The database restarts (`pg_ctl restart -m fast`), the servers staying up.
    RestartDatabase(Arc<PrivateCluster>),
}

async fn run(name: &str, store: &str, replicas: usize, chaos: Chaos) {
    let total = sends();
    let started = Instant::now();
    let fleet = Fleet::start(store, replicas, SERVER_ARGS);
    let bases = fleet.bases();
    let done = Arc::new(AtomicBool::new(false));
    let restarts = Arc::new(AtomicUsize::new(0));
    let chaos_loop = {
        let (fleet, done, restarts, chaos) = (
            Arc::clone(&fleet),
            Arc::clone(&done),
            Arc::clone(&restarts),
            chaos.clone(),
        );
        std::thread::spawn(move || {
            let mut round = 0usize;
            while !done.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1_500 + (round % 3) as u64 * 700));
                if done.load(Ordering::SeqCst) {
                    break;
                }
                match &chaos {
                    Chaos::KillServers => {
                        fleet.crash(round % fleet.addrs.len(), Duration::from_millis(500));
                    }
                    Chaos::RestartDatabase(cluster) => {
                        cluster.restart();
                        restarts.fetch_add(1, Ordering::SeqCst);
                    }
                }
                round += 1;
            }
        })
    };
    let next = Arc::new(AtomicUsize::new(0));
    let results = Arc::new(Mutex::new(Vec::with_capacity(total)));
    let workers: Vec<_> = (0..CLIENTS)
        .map(|worker| {
            let (next, results) = (Arc::clone(&next), Arc::clone(&results));
            let clients: Vec<A2aClient> = bases.iter().map(|b| client(b)).collect();
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= total {
                        return;
                    }
                    let key = generate_key();
                    let mut message = Message::user_text(format!("send {i}"));
                    set_key(&mut message, &key).expect("a valid key");
                    let sent = Sent {
                        key,
                        message,
                        answer: None,
                        attempts: 0,
                    };
                    let sent = send_until_answered(&clients, worker, sent).await;
                    results.lock().unwrap_or_else(|e| e.into_inner()).push(sent);
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.expect("a client worker");
    }
    done.store(true, Ordering::SeqCst);
    chaos_loop.join().expect("the chaos loop");
    let sent: Vec<Sent> = std::mem::take(&mut *results.lock().unwrap_or_else(|e| e.into_inner()));
    let sending_took = started.elapsed();

    // Every replica is up again. Within the recovery time (and a sweep), nothing is left
    // unfinished.
    let reader = client(&bases[0]);
    let unfinished = |reader: &A2aClient| {
        let reader = reader.clone();
        async move {
            let mut count = 0;
            for state in [TaskState::Submitted, TaskState::Working] {
                let page = reader
                    .list_tasks(ListTasksRequest {
                        status: Some(state),
                        page_size: Some(1),
                        ..Default::default()
                    })
                    .await
                    .expect("listed");
                count += page.total_size;
            }
            count
        }
    };
    let settle_started = Instant::now();
    let mut left = unfinished(&reader).await;
    while left > 0 && settle_started.elapsed() < RECOVERY * 3 + Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(250)).await;
        left = unfinished(&reader).await;
    }
    let settled_after = settle_started.elapsed();

    // Every key replays its one task; the agent ran at most once for it.
    let mut states: BTreeMap<String, usize> = BTreeMap::new();
    let mut untrue = Vec::new();
    let mut task_of_key: HashMap<String, String> = HashMap::new();
    let mut ran_twice = 0;
    let mut says_nothing_ran = 0;
    let unanswered = sent.iter().filter(|s| s.answer.is_none()).count();
    for s in &sent {
        let replay = reader
            .send_message(SendMessageRequest::new(s.message.clone()))
            .await
            .expect("a replay");
        let SendMessageResponse::Task(task) = replay else {
            panic!("a task")
        };
        let users = task
            .history
            .iter()
            .filter(|m| m.role == a2a_protocol_types::MessageRole::User)
            .count();
        if users != 1 || task.artifacts.len() > 1 {
            ran_twice += 1;
        }
        *states.entry(task.status.state.to_string()).or_default() += 1;
        // The agent runs before anything can fail a task, so a task never says nothing ran.
        if task
            .status
            .message
            .as_ref()
            .is_some_and(|m| m.text().contains("nothing ran"))
        {
            says_nothing_ran += 1;
        }
        if let Some((answered_id, answered_state)) = &s.answer {
            let consistent = *answered_id == task.id.as_str()
                && (!answered_state.is_terminal() || *answered_state == task.status.state);
            if !consistent {
                untrue.push((
                    s.key.clone(),
                    answered_id.clone(),
                    *answered_state,
                    task.status.state,
                ));
            }
        }
        task_of_key.insert(s.key.clone(), task.id.to_string());
    }
    let total_tasks = reader
        .list_tasks(ListTasksRequest {
            page_size: Some(1),
            ..Default::default()
        })
        .await
        .expect("listed")
        .total_size;
    let distinct_tasks = task_of_key
        .values()
        .collect::<std::collections::HashSet<_>>()
        .len();
    let retried = sent.iter().filter(|s| s.attempts > 1).count();
    println!(
        "crash test ({name}, {replicas} replica(s)): {total} keyed sends from {CLIENTS} clients in \
         {:.1} s; {} SIGKILLs; {} database restarts; {retried} sends needed more than one \
         round; {unanswered} unanswered; {total_tasks} tasks for {} keys ({distinct_tasks} \
         distinct); final states {states:?}; unfinished left {left} ({:.1} s after the last \
         send); keys that ran twice {ran_twice}; untrue answers {}; tasks saying nothing ran \
         {says_nothing_ran}",
        sending_took.as_secs_f64(),
        fleet.kills.load(Ordering::SeqCst),
        restarts.load(Ordering::SeqCst),
        task_of_key.len(),
        settled_after.as_secs_f64(),
        untrue.len(),
    );
    assert_eq!(unanswered, 0, "{name}: every send got an answer in the end");
    assert_eq!(
        left, 0,
        "{name}: every task terminal within the recovery time"
    );
    assert_eq!(distinct_tasks, total, "{name}: every key has its own task");
    assert_eq!(
        total_tasks, total as i32,
        "{name}: exactly one task per key, none more"
    );
    assert_eq!(ran_twice, 0, "{name}: no key ran twice");
    assert!(untrue.is_empty(), "{name}: untrue answers: {untrue:?}");
    assert_eq!(says_nothing_ran, 0, "{name}: tasks saying nothing ran");
    match chaos {
        Chaos::KillServers => assert!(
            fleet.kills.load(Ordering::SeqCst) > 0,
            "{name}: the chaos loop killed servers"
        ),
        Chaos::RestartDatabase(_) => assert!(
            restarts.load(Ordering::SeqCst) > 0,
            "{name}: the chaos loop restarted the database"
        ),
    }
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
            run("postgres", &store, 3, Chaos::KillServers).await;
            admin
                .execute(format!("DROP SCHEMA {schema} CASCADE").as_str())
                .await
                .expect("drop schema");
            let cluster = Arc::new(PrivateCluster::start());
            let store = cluster.url();
            run(
                "postgres restarting",
                &store,
                3,
                Chaos::RestartDatabase(Arc::clone(&cluster)),
            )
            .await;
        } else {
            println!("crash test (postgres): skipped, A2A_TEST_POSTGRES_URL=skip");
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let store = format!("sqlite://{}", dir.path().join("crash.db").display());
        run("sqlite", &store, 1, Chaos::KillServers).await;
    });
}
