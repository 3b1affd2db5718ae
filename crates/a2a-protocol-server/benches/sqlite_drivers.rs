//! The measurement behind the SQLite store's one driver: the same statements, from async
//! code, on sqlx's SQLite driver and on rusqlite (a connection taken from a small pool and
//! used on tokio's blocking threads). Reads: a task head by its key, sixteen at a time.
//! Writes: a transaction of a head update and four appended rows, one at a time.
//!
//! `cargo bench -p a2a-protocol-server --bench sqlite_drivers`

use std::str::FromStr;
use std::sync::{Arc, Mutex};

use criterion::{Criterion, criterion_group, criterion_main};
use sqlx::Row as _;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS heads (id TEXT PRIMARY KEY, revision INTEGER NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rows (id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (id, seq));";
const READ: &str = "SELECT revision, body FROM heads WHERE id = ?1";
const UPDATE: &str = "UPDATE heads SET revision = revision + 1, body = ?2 WHERE id = ?1";
const APPEND: &str = "INSERT INTO rows (id, seq, body) VALUES (?1, ?2, ?3)";
const TASKS: usize = 1_000;
const READERS: usize = 16;

fn body() -> String {
    "x".repeat(600)
}

fn rusqlite_connection(path: &std::path::Path) -> rusqlite::Connection {
    let connection = rusqlite::Connection::open(path).expect("open");
    connection
        .execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;")
        .expect("pragmas");
    connection
}

fn drivers(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("bench.db");
    let setup = rusqlite_connection(&path);
    setup.execute_batch(SCHEMA).expect("schema");
    for i in 0..TASKS {
        setup
            .execute(
                "INSERT INTO heads VALUES (?1, 1, ?2)",
                rusqlite::params![i.to_string(), body()],
            )
            .expect("seed");
    }
    let pool = runtime.block_on(async {
        let options = SqliteConnectOptions::from_str(&format!("sqlite://{}", path.display()))
            .expect("url")
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full);
        SqlitePoolOptions::new()
            .max_connections(8)
            .connect_with(options)
            .await
            .expect("pool")
    });
    let connections: Arc<Mutex<Vec<rusqlite::Connection>>> = Arc::new(Mutex::new(
        (0..8).map(|_| rusqlite_connection(&path)).collect(),
    ));

    let free = Arc::new(tokio::sync::Semaphore::new(8));
    let mut group = c.benchmark_group("sqlite_read_16_heads");
    group.bench_function("sqlx", |b| {
        b.iter(|| {
            runtime.block_on({
                let pool = pool.clone();
                async move {
                    let reads = (0..READERS).map(|i| {
                        let pool = pool.clone();
                        async move {
                            let row = sqlx::query(READ)
                                .bind((i * 37 % TASKS).to_string())
                                .fetch_one(&pool)
                                .await
                                .expect("read");
                            row.get::<i64, _>(0)
                        }
                    });
                    futures::future::join_all(reads).await
                }
            })
        })
    });
    group.bench_function("rusqlite", |b| {
        b.iter(|| {
            runtime.block_on({
                let connections = connections.clone();
                let free = free.clone();
                async move {
                    let reads = (0..READERS).map(|i| {
                        let connections = connections.clone();
                        let free = free.clone();
                        async move {
                            let _permit = free.acquire_owned().await.expect("open");
                            tokio::task::spawn_blocking(move || {
                                let connection =
                                    connections.lock().expect("pool").pop().expect("free");
                                let revision: i64 = connection
                                    .prepare_cached(READ)
                                    .expect("prepare")
                                    .query_row([(i * 37 % TASKS).to_string()], |row| row.get(0))
                                    .expect("read");
                                connections.lock().expect("pool").push(connection);
                                revision
                            })
                            .await
                            .expect("joined")
                        }
                    });
                    futures::future::join_all(reads).await
                }
            })
        })
    });
    group.finish();

    let mut group = c.benchmark_group("sqlite_write_transaction");
    group.sample_size(30);
    let mut seq = 0_i64;
    group.bench_function("sqlx", |b| {
        b.iter(|| {
            runtime.block_on({
                seq += 10;
                let pool = pool.clone();
                async move {
                    let mut tx = pool.begin().await.expect("begin");
                    sqlx::query(UPDATE)
                        .bind("7")
                        .bind(body())
                        .execute(&mut *tx)
                        .await
                        .expect("update");
                    for n in 0..4 {
                        sqlx::query(APPEND)
                            .bind("7")
                            .bind(seq + n)
                            .bind(body())
                            .execute(&mut *tx)
                            .await
                            .expect("append");
                    }
                    tx.commit().await.expect("commit");
                }
            })
        })
    });
    let writer = Arc::new(Mutex::new(rusqlite_connection(&path)));
    group.bench_function("rusqlite", |b| {
        b.iter(|| {
            runtime.block_on({
                seq += 10;
                let writer = writer.clone();
                async move {
                    tokio::task::spawn_blocking(move || {
                        let mut connection = writer.lock().expect("writer");
                        let tx = connection.transaction().expect("begin");
                        tx.prepare_cached(UPDATE)
                            .expect("prepare")
                            .execute(rusqlite::params!["7", body()])
                            .expect("update");
                        for n in 0..4 {
                            tx.prepare_cached(APPEND)
                                .expect("prepare")
                                .execute(rusqlite::params!["7", seq + n, body()])
                                .expect("append");
                        }
                        tx.commit().expect("commit");
                    })
                    .await
                    .expect("joined")
                }
            })
        })
    });
    group.finish();
}

criterion_group!(benches, drivers);
criterion_main!(benches);
