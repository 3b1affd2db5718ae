//! The load benchmark: `SendMessage` to the echo agent over JSON-RPC and HTTP+JSON (and gRPC
//! on the in-memory store), at
//! concurrency 1, 16 and 64, keyed and unkeyed, on the in-memory, SQLite and PostgreSQL stores;
//! beside it a floor (a bare axum route) and the Python `a2a-sdk` echo server. Servers run
//! pinned to core 0 and this generator to core 1; every configuration gets a fresh server,
//! a warm-up, and a measurement, and the servers are interleaved over several rounds.
//!
//! Then two memory runs on the in-memory store with its default limits: resident memory after
//! 100 000 and after 1 000 000 sends, and what 100 000 held idempotency keys cost; and what a
//! follow-up costs on a task 1 000 turns long, on SQLite and PostgreSQL.
//!
//! Then push notifications on each store: keyed sends with and without a push config, and
//! how fast the notifications reach a receiver on 127.0.0.1.
//!
//! `A2A_BENCH_ONLY=follow-ups` measures the follow-ups alone, `A2A_BENCH_ONLY=push` push alone.
//!
//! `A2A_BENCH_BASELINE` names an earlier build of `a2a`: its keyed JSON-RPC sends on each store
//! are measured in the same rounds, as the "before" of a change.
//!
//! `cargo bench -p a2a-cli --bench load` writes `benches/results/load.md` and `load.svg`.
//! Settings: `A2A_BENCH_ROUNDS` (5), `A2A_BENCH_SECONDS` (3), `A2A_BENCH_POSTGRES_URL`
//! (`postgres://postgres@127.0.0.1:5432/test`), `A2A_BENCH_QUICK=1` (one round, short runs,
//! small memory runs: a smoke test of the harness, not figures to report), `A2A_BENCH_ONLY`
//! (measure only the servers whose label contains one of its comma-separated parts, and skip
//! the memory runs),
//! `A2A_BENCH_A2A` (another build of `a2a` to serve, say one with frame pointers to profile),
//! `A2A_BENCH_BINDING` (measure only the bindings of these comma-separated names, as the tables
//! write them), `A2A_BENCH_SENDS` (`keyed` or `unkeyed`: only those) and `A2A_BENCH_CONCURRENCY`
//! (only these comma-separated concurrencies).

mod floor;
mod follow_ups;
mod generator;
mod h2_shared;
mod push;
mod report;
mod servers;

use std::time::Duration;

use generator::{Binding, Load, Measured};
use servers::Kind;

// The same allocator as `a2a serve`, so the floor (served by this binary) differs from our
// server only in what it does, not in how it allocates.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// One configuration's figures from one round.
#[derive(Clone, Debug)]
pub struct Sample {
    /// Which round of the run it was measured in, from 0.
    pub round: usize,
    pub kind: Kind,
    pub binding: Binding,
    pub keyed: bool,
    pub concurrency: usize,
    pub measured: Measured,
    pub peak_rss_kib: u64,
    /// Server CPU time per answered send, in microseconds.
    pub cpu_us_per_send: f64,
    /// PostgreSQL's CPU time per answered send, in microseconds, on that store.
    pub db_cpu_us_per_send: Option<f64>,
}

/// The memory runs' figures.
#[derive(Clone, Debug, Default)]
pub struct MemoryRuns {
    pub rss_after_100k_kib: u64,
    pub rss_after_1m_kib: u64,
    pub unkeyed_baseline_kib: u64,
    pub after_100k_keys_kib: u64,
    pub sends_small: u64,
    pub sends_large: u64,
    pub keys: u64,
}

const CONCURRENCY: [usize; 3] = [1, 16, 64];
const BINDINGS: [Binding; 4] = [
    Binding::JsonRpc,
    Binding::HttpJson,
    Binding::Grpc,
    Binding::GrpcShared,
];
/// Sends per measurement at most; with the warm-up's 5 000, a keyed run stays under the
/// in-memory store's default key cap (100 000).
const MAX_MEASURED: u64 = 90_000;

struct Settings {
    rounds: usize,
    seconds: f64,
    postgres: String,
    quick: bool,
}

fn settings() -> Settings {
    let quick = std::env::var("A2A_BENCH_QUICK").is_ok_and(|v| v == "1");
    let number = |name: &str, default: f64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    Settings {
        rounds: if quick {
            1
        } else {
            number("A2A_BENCH_ROUNDS", 5.0) as usize
        },
        seconds: if quick {
            0.5
        } else {
            number("A2A_BENCH_SECONDS", 3.0)
        },
        postgres: std::env::var("A2A_BENCH_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into()),
        quick,
    }
}

/// The configurations each server kind is measured in.
fn cells(kind: &Kind) -> Vec<(Binding, bool, usize)> {
    let mut cells = Vec::new();
    let only = std::env::var("A2A_BENCH_BINDING").unwrap_or_default();
    let sends = std::env::var("A2A_BENCH_SENDS").unwrap_or_default();
    let concurrencies = std::env::var("A2A_BENCH_CONCURRENCY").unwrap_or_default();
    for binding in BINDINGS {
        if !only.is_empty() && !only.split(',').any(|name| name.trim() == binding.name()) {
            continue;
        }
        if matches!(kind, Kind::Floor | Kind::Observed | Kind::Dark) && binding != Binding::JsonRpc
        {
            continue;
        }
        // gRPC differs from the others in the binding alone, which the in-memory store shows;
        // on the durable stores the store's cost hides it.
        if matches!(binding, Binding::Grpc | Binding::GrpcShared)
            && !matches!(kind, Kind::Ours("memory"))
        {
            continue;
        }
        for keyed in [false, true] {
            let ours = matches!(
                kind,
                Kind::Ours(_) | Kind::Baseline(_) | Kind::Observed | Kind::Dark
            );
            if keyed && !ours {
                continue;
            }
            if matches!(kind, Kind::Baseline(_)) && (!keyed || binding != Binding::JsonRpc) {
                continue;
            }
            if !sends.is_empty() && sends != if keyed { "keyed" } else { "unkeyed" } {
                continue;
            }
            for concurrency in CONCURRENCY {
                if !concurrencies.is_empty()
                    && !concurrencies
                        .split(',')
                        .any(|c| c.trim() == concurrency.to_string())
                {
                    continue;
                }
                cells.push((binding, keyed, concurrency));
            }
        }
    }
    cells
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--floor-server") {
        let port = args[at + 1].parse().expect("a port");
        floor::serve(port);
        return;
    }
    let settings = settings();
    let machine = machine_description();
    pin_to_generator_core();
    ensure_python_peer();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let only = std::env::var("A2A_BENCH_ONLY").unwrap_or_default();
    let baseline = std::env::var_os("A2A_BENCH_BASELINE").is_some();
    let kinds: Vec<Kind> = [
        Kind::Ours("memory"),
        Kind::Observed,
        Kind::Floor,
        Kind::Dark,
        Kind::Ours("sqlite"),
        Kind::Python,
        Kind::Ours("postgres"),
        Kind::Baseline("memory"),
        Kind::Baseline("sqlite"),
        Kind::Baseline("postgres"),
    ]
    .into_iter()
    .filter(|kind| baseline || !matches!(kind, Kind::Baseline(_)))
    .filter(|kind| only.split(',').any(|part| kind.label().contains(part)))
    .collect();
    let mut samples = Vec::new();
    let mut run_id = 1u64;
    for round in 0..settings.rounds {
        // Each round visits every server; the starting point rotates so no server always
        // runs first or last.
        for offset in 0..kinds.len() {
            let kind = &kinds[(offset + round) % kinds.len()];
            for (binding, keyed, concurrency) in cells(kind) {
                let postgres = runtime.block_on(fresh_schema(&settings.postgres, kind));
                let server = servers::start(kind, &postgres);
                let load = |duration, max| Load {
                    binding,
                    keyed,
                    concurrency,
                    duration,
                    max_requests: max,
                    push_url: None,
                };
                let warm = Duration::from_secs_f64((settings.seconds / 6.0).max(0.25));
                run_id += 1;
                runtime.block_on(generator::run(server.addr, load(warm, Some(5_000)), run_id));
                run_id += 1;
                let on_postgres = kind.store() == Some("postgres");
                let cpu_before = server.cpu_time();
                let db_before = on_postgres.then(servers::DatabaseCpu::now);
                let measured = runtime.block_on(generator::run(
                    server.addr,
                    load(
                        Duration::from_secs_f64(settings.seconds),
                        Some(MAX_MEASURED),
                    ),
                    run_id,
                ));
                let cpu = server.cpu_time().saturating_sub(cpu_before);
                let db_cpu = db_before.map(|before| servers::DatabaseCpu::now().since(&before));
                let per_send =
                    |cpu: Duration| cpu.as_secs_f64() * 1e6 / measured.requests.max(1) as f64;
                let sample = Sample {
                    round,
                    cpu_us_per_send: per_send(cpu),
                    db_cpu_us_per_send: db_cpu.map(per_send),
                    kind: kind.clone(),
                    binding,
                    keyed,
                    concurrency,
                    peak_rss_kib: server.peak_rss_kib(),
                    measured,
                };
                eprintln!(
                    "round {} {:<28} {:<9} {:<7} c={:<3} {:>9.0} req/s  p50 {:>6} µs  p99 {:>7} µs  cpu {:>6.1} µs/send  db cpu {:>6.1} µs/send  errors {}  peak RSS {} KiB",
                    round + 1,
                    sample.kind.label(),
                    binding.name(),
                    if keyed { "keyed" } else { "unkeyed" },
                    concurrency,
                    sample.measured.rps(),
                    sample.measured.p50_us,
                    sample.measured.p99_us,
                    sample.cpu_us_per_send,
                    sample.db_cpu_us_per_send.unwrap_or(0.0),
                    sample.measured.errors,
                    sample.peak_rss_kib,
                );
                samples.push(sample);
                drop(server);
            }
        }
    }
    let follow_ups_only = only.split(',').any(|part| part == "follow-ups");
    let push_only = only.split(',').any(|part| part == "push");
    if !only.is_empty() && !follow_ups_only && !push_only {
        return;
    }
    let turns = if settings.quick {
        40
    } else {
        follow_ups::TURNS
    };
    let mut follow_ups = Vec::new();
    let follow_up_stores: &[&'static str] = if push_only {
        &[]
    } else {
        &["sqlite", "postgres"]
    };
    for &store in follow_up_stores {
        let postgres = runtime.block_on(fresh_schema(&settings.postgres, &Kind::Ours(store)));
        let cost = runtime.block_on(follow_ups::measure(store, &postgres, turns));
        eprintln!("{cost:?}");
        follow_ups.push(cost);
    }
    if follow_ups_only {
        return;
    }
    // Bounded so the in-memory store's outbox (10 000 pending) never fills: the echo agent's
    // three events per send make three notifications.
    let max_pushed = if settings.quick { 300 } else { 3_000 };
    let mut pushes = Vec::new();
    for store in ["memory", "sqlite", "postgres"] {
        let postgres = runtime.block_on(fresh_schema(&settings.postgres, &Kind::Ours(store)));
        run_id += 10;
        let cost = runtime.block_on(push::measure(
            store,
            &postgres,
            settings.seconds,
            max_pushed,
            run_id,
        ));
        eprintln!("{cost:?}");
        pushes.push(cost);
    }
    if push_only {
        return;
    }
    let memory = runtime.block_on(memory_runs(&settings));
    eprintln!("{memory:?}");
    let dir = servers::workspace().join("benches/results");
    std::fs::create_dir_all(&dir).expect("benches/results");
    std::fs::write(
        dir.join("load.md"),
        report::markdown(
            &samples,
            &memory,
            &follow_ups,
            &pushes,
            settings.rounds,
            settings.seconds,
            &machine,
        ),
    )
    .expect("write load.md");
    std::fs::write(dir.join("load.svg"), report::chart(&samples)).expect("write load.svg");
    eprintln!("wrote {}", dir.display());
}

/// Resident memory of one in-memory server with default limits: after 100 000 and 1 000 000
/// unkeyed sends (finished tasks are capped at 10 000), then what 100 000 keyed sends add.
async fn memory_runs(settings: &Settings) -> MemoryRuns {
    let scale = if settings.quick { 100 } else { 1 };
    let (small, large, keys) = (100_000 / scale, 1_000_000 / scale, 100_000 / scale);
    let mut runs = MemoryRuns {
        sends_small: small,
        sends_large: large,
        keys,
        ..MemoryRuns::default()
    };
    let sends = |keyed, n| Load {
        binding: Binding::JsonRpc,
        keyed,
        concurrency: 16,
        duration: Duration::from_secs(3600),
        max_requests: Some(n),
        push_url: None,
    };
    let server = servers::start(&Kind::Ours("memory"), "");
    let settle = || tokio::time::sleep(Duration::from_millis(500));
    generator::run(server.addr, sends(false, small), 1_000).await;
    settle().await;
    runs.rss_after_100k_kib = server.rss_kib();
    generator::run(server.addr, sends(false, large - small), 1_001).await;
    settle().await;
    runs.rss_after_1m_kib = server.rss_kib();
    drop(server);

    let server = servers::start(&Kind::Ours("memory"), "");
    // Fill the task store to its cap first, so what follows measures the keys alone.
    generator::run(server.addr, sends(false, keys), 1_002).await;
    settle().await;
    runs.unkeyed_baseline_kib = server.rss_kib();
    let keyed = generator::run(server.addr, sends(true, keys), 1_003).await;
    assert_eq!(keyed.errors, 0, "every keyed send was taken");
    settle().await;
    runs.after_100k_keys_kib = server.rss_kib();
    runs
}

/// A fresh PostgreSQL schema for each PostgreSQL server, so no run sees another's rows, in a
/// database at rest: the previous runs' schemas are dropped and their writes checkpointed, so
/// a configuration does not pay for the one before it.
async fn fresh_schema(url: &str, kind: &Kind) -> String {
    if !matches!(kind, Kind::Ours("postgres") | Kind::Baseline("postgres")) {
        return String::new();
    }
    use sqlx::Executor as _;
    let admin = sqlx::PgPool::connect(url)
        .await
        .expect("PostgreSQL is reachable (set A2A_BENCH_POSTGRES_URL)");
    let old: Vec<String> = sqlx::query_scalar(
        "SELECT nspname::text FROM pg_namespace WHERE nspname LIKE 'a2a\\_bench\\_%'",
    )
    .fetch_all(&admin)
    .await
    .expect("the schemas");
    for schema in old {
        admin
            .execute(format!("DROP SCHEMA {schema} CASCADE").as_str())
            .await
            .expect("drop an old schema");
    }
    admin.execute("CHECKPOINT").await.expect("a checkpoint");
    let schema = format!("a2a_bench_{}", uuid::Uuid::new_v4().simple());
    admin
        .execute(format!("CREATE SCHEMA {schema}").as_str())
        .await
        .expect("create a schema");
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}options=-c%20search_path%3D{schema}")
}

/// Moves this process (and every thread it starts later) to the generator's core.
fn pin_to_generator_core() {
    let status = std::process::Command::new("taskset")
        .args(["-a", "-p", "-c", servers::GENERATOR_CORE])
        .arg(std::process::id().to_string())
        .stdout(std::process::Stdio::null())
        .status()
        .expect("taskset runs (util-linux)");
    assert!(status.success(), "could not pin the generator to core 1");
}

fn ensure_python_peer() {
    let status = std::process::Command::new("bash")
        .arg(servers::workspace().join("interop/setup.sh"))
        .status()
        .expect("bash runs interop/setup.sh");
    assert!(
        status.success(),
        "interop/setup.sh failed: the Python a2a-sdk is needed"
    );
}

fn machine_description() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines().find_map(|l| {
                l.strip_prefix("model name")
                    .map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned())
            })
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!(
        "{cpu}, {cores} cores (server on core {}, generator on core {})",
        servers::SERVER_CORE,
        servers::GENERATOR_CORE
    )
}
