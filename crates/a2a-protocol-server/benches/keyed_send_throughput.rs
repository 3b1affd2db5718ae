//! Keyed send throughput of the request handler on each store: new keyed sends to the echo
//! agent (claim, task creation, three status and artifact writes), 32 at a time, then the same
//! sends again as retries (claim, read).
//!
//! Run: `cargo bench -p a2a-protocol-server --bench keyed_send_throughput`
//! PostgreSQL: `A2A_TEST_POSTGRES_URL` (default postgres://postgres@127.0.0.1:5432/test).

use std::str::FromStr;
use std::sync::Arc;
use std::time::Instant;

use a2a_protocol_server::agents::EchoAgent;
use a2a_protocol_server::store::{
    InMemoryTaskStore, PostgresTaskStore, SqliteTaskStore, TaskStore,
};
use a2a_protocol_server::{CallContext, RequestHandler};
use a2a_protocol_types::idempotency::{generate_key, set_key};
use a2a_protocol_types::{Message, SendMessageRequest};
use futures::StreamExt;
use sqlx::Executor;

const SENDS: usize = 2_000;
const CONCURRENCY: usize = 32;

async fn run(name: &str, store: Arc<dyn TaskStore>) {
    let handler = RequestHandler::builder(EchoAgent::new())
        .with_store(store)
        .build();
    let requests: Vec<SendMessageRequest> = (0..SENDS)
        .map(|i| {
            let mut message = Message::user_text(format!("hello {i}"));
            set_key(&mut message, &generate_key()).expect("valid key");
            SendMessageRequest::new(message)
        })
        .collect();
    for phase in ["new keyed sends", "retries (replays)"] {
        let started = Instant::now();
        futures::stream::iter(requests.iter().cloned())
            .map(|request| {
                let handler = handler.clone();
                async move {
                    handler
                        .send_message(request, &CallContext::default())
                        .await
                        .expect("sent")
                }
            })
            .buffer_unordered(CONCURRENCY)
            .for_each(|_| async {})
            .await;
        let seconds = started.elapsed().as_secs_f64();
        println!(
            "{name:>10} {phase:<18} {SENDS} in {seconds:.2} s = {:>7.0} sends/s",
            SENDS as f64 / seconds
        );
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    run("in-memory", Arc::new(InMemoryTaskStore::new())).await;

    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("bench.db").display());
    run(
        "sqlite",
        Arc::new(SqliteTaskStore::open(&url).await.expect("sqlite")),
    )
    .await;

    let url = std::env::var("A2A_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    if url == "skip" {
        return;
    }
    let admin = sqlx::PgPool::connect(&url)
        .await
        .expect("PostgreSQL is reachable");
    let schema = format!("a2a_bench_{}", uuid::Uuid::new_v4().simple());
    admin
        .execute(format!("CREATE SCHEMA {schema}").as_str())
        .await
        .expect("schema");
    let options = sqlx::postgres::PgConnectOptions::from_str(&url)
        .expect("URL")
        .options([("search_path", schema.as_str())]);
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(16)
        .connect_with(options)
        .await
        .expect("connect");
    run(
        "postgres",
        Arc::new(PostgresTaskStore::from_pool(pool).await.expect("postgres")),
    )
    .await;
    admin
        .execute(format!("DROP SCHEMA {schema} CASCADE").as_str())
        .await
        .expect("drop");
}
