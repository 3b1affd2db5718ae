//! The benchmark's report: a markdown page with every figure and the targets, and an SVG chart
//! of throughput at concurrency 16.

use std::fmt::Write as _;

use crate::follow_ups::FollowUpCost;
use crate::generator::Binding;
use crate::push::PushCost;
use crate::servers::Kind;
use crate::{MemoryRuns, Sample};

/// The mean over rounds of one configuration.
#[derive(Clone, Copy, Default)]
struct Cell {
    rps: f64,
    rps_min: f64,
    rps_max: f64,
    p50_us: f64,
    p99_us: f64,
    cpu_us: f64,
    /// The database's CPU per send, where it was measured.
    db_cpu_us: Option<f64>,
    peak_rss_kib: u64,
    errors: u64,
    rounds: usize,
}

fn cell(
    samples: &[Sample],
    kind: &Kind,
    binding: Binding,
    keyed: bool,
    concurrency: usize,
) -> Option<Cell> {
    let runs: Vec<&Sample> = samples
        .iter()
        .filter(|s| {
            &s.kind == kind
                && s.binding == binding
                && s.keyed == keyed
                && s.concurrency == concurrency
        })
        .collect();
    if runs.is_empty() {
        return None;
    }
    let n = runs.len() as f64;
    let rps: Vec<f64> = runs.iter().map(|s| s.measured.rps()).collect();
    Some(Cell {
        rps: median(&rps),
        rps_min: rps.iter().copied().fold(f64::INFINITY, f64::min),
        rps_max: rps.iter().copied().fold(0.0, f64::max),
        p50_us: runs.iter().map(|s| s.measured.p50_us as f64).sum::<f64>() / n,
        p99_us: runs.iter().map(|s| s.measured.p99_us as f64).sum::<f64>() / n,
        cpu_us: runs.iter().map(|s| s.cpu_us_per_send).sum::<f64>() / n,
        db_cpu_us: runs
            .iter()
            .map(|s| s.db_cpu_us_per_send)
            .sum::<Option<f64>>()
            .map(|sum| sum / n),
        peak_rss_kib: runs.iter().map(|s| s.peak_rss_kib).max().unwrap_or(0),
        errors: runs.iter().map(|s| s.measured.errors).sum(),
        rounds: runs.len(),
    })
}

/// The middle value (the mean of the middle two for an even count): one disturbed round
/// cannot move it far.
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len().is_multiple_of(2) {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    } else {
        sorted[mid]
    }
}

fn rps_of(
    samples: &[Sample],
    kind: &Kind,
    binding: Binding,
    keyed: bool,
    concurrency: usize,
) -> f64 {
    cell(samples, kind, binding, keyed, concurrency).map_or(0.0, |c| c.rps)
}

struct Target {
    what: String,
    goal: String,
    measured: String,
    met: bool,
}

/// The ratio of two configurations' throughput, as the median of their ratios within each
/// round: the two are measured minutes apart at most, so the shared machine's drift over the
/// whole run cancels out of each pair.
fn paired_ratio(samples: &[Sample], a: (&Kind, bool), b: (&Kind, bool)) -> f64 {
    paired_binding_ratio(
        samples,
        (a.0, Binding::JsonRpc, a.1),
        (b.0, Binding::JsonRpc, b.1),
    )
}

/// [`paired_ratio`] of configurations that may differ in binding too.
fn paired_binding_ratio(
    samples: &[Sample],
    a: (&Kind, Binding, bool),
    b: (&Kind, Binding, bool),
) -> f64 {
    let rps = |(kind, binding, keyed): (&Kind, Binding, bool), round: usize| {
        samples
            .iter()
            .find(|s| {
                &s.kind == kind
                    && s.keyed == keyed
                    && s.binding == binding
                    && s.concurrency == 16
                    && s.round == round
            })
            .map(|s| s.measured.rps())
    };
    let rounds = samples.iter().map(|s| s.round).max().map_or(0, |r| r + 1);
    let ratios: Vec<f64> = (0..rounds)
        .filter_map(|round| match (rps(a, round), rps(b, round)) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b),
            _ => None,
        })
        .collect();
    if ratios.is_empty() {
        0.0
    } else {
        median(&ratios)
    }
}

fn targets(samples: &[Sample], memory: &MemoryRuns, follow_ups: &[FollowUpCost]) -> Vec<Target> {
    let ours = Kind::Ours("memory");
    let unkeyed = rps_of(samples, &ours, Binding::JsonRpc, false, 16);
    let keyed = rps_of(samples, &ours, Binding::JsonRpc, true, 16);
    let floor = rps_of(samples, &Kind::Floor, Binding::JsonRpc, false, 16);
    let python = rps_of(samples, &Kind::Python, Binding::JsonRpc, false, 16);
    let of_floor = paired_ratio(samples, (&ours, false), (&Kind::Floor, false));
    let keyed_share = paired_ratio(samples, (&ours, true), (&ours, false));
    let of_python = paired_ratio(samples, (&ours, false), (&Kind::Python, false));
    let observed = rps_of(samples, &Kind::Observed, Binding::JsonRpc, true, 16);
    let dark = rps_of(samples, &Kind::Dark, Binding::JsonRpc, true, 16);
    let observed_share = paired_ratio(samples, (&Kind::Observed, true), (&Kind::Dark, true));
    // gRPC as gRPC clients call (every call in flight on one connection) is what the target
    // takes; one connection per call in flight, as HTTP/1.1 needs, is shown beside it.
    let grpc_vs_jsonrpc = |keyed: bool| {
        let share = |grpc: Binding| {
            paired_binding_ratio(
                samples,
                (&ours, grpc, keyed),
                (&ours, Binding::JsonRpc, keyed),
            )
        };
        let (shared, per_connection) = (share(Binding::GrpcShared), share(Binding::Grpc));
        let grpc = rps_of(samples, &ours, Binding::GrpcShared, keyed, 16);
        let jsonrpc = rps_of(samples, &ours, Binding::JsonRpc, keyed, 16);
        Target {
            what: format!(
                "gRPC (one connection, 16 calls in flight) vs JSON-RPC (16 connections) ({}, \
                 in-memory, c16)",
                if keyed { "keyed" } else { "unkeyed" }
            ),
            goal: "≥ 100 %".into(),
            measured: format!(
                "{:.0} % (medians {grpc:.0} vs {jsonrpc:.0} req/s); gRPC on 16 connections, one \
                 call each: {:.0} %",
                100.0 * shared,
                100.0 * per_connection
            ),
            met: shared >= 1.0,
        }
    };
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    let growth = ratio(
        memory.rss_after_1m_kib as f64,
        memory.rss_after_100k_kib as f64,
    ) - 1.0;
    let key_cost_mib = memory
        .after_100k_keys_kib
        .saturating_sub(memory.unkeyed_baseline_kib) as f64
        / 1024.0;
    vec![
        Target {
            what: "unkeyed echo SendMessage (JSON-RPC, in-memory, c16) vs the floor".into(),
            goal: "≥ 40 %".into(),
            measured: format!(
                "{:.0} % (medians {unkeyed:.0} vs {floor:.0} req/s)",
                100.0 * of_floor
            ),
            met: of_floor >= 0.40,
        },
        Target {
            what: "keyed vs unkeyed (JSON-RPC, in-memory, c16)".into(),
            goal: "≥ 90 %".into(),
            measured: format!(
                "{:.0} % (medians {keyed:.0} vs {unkeyed:.0} req/s)",
                100.0 * keyed_share
            ),
            met: keyed_share >= 0.90,
        },
        Target {
            what: "metrics and info spans on vs off (keyed, JSON-RPC, in-memory, c16)".into(),
            goal: "≥ 95 %".into(),
            measured: format!(
                "{:.0} % (medians {observed:.0} vs {dark:.0} req/s)",
                100.0 * observed_share
            ),
            met: observed_share >= 0.95,
        },
        grpc_vs_jsonrpc(false),
        grpc_vs_jsonrpc(true),
        Target {
            what: "a2a-rust vs the Python a2a-sdk (JSON-RPC, in-memory, c16)".into(),
            goal: "≥ 50 ×".into(),
            measured: format!("{of_python:.0} × (medians {unkeyed:.0} vs {python:.0} req/s)"),
            met: of_python >= 50.0,
        },
        Target {
            what: format!(
                "RSS after {} vs after {} sends (default limits)",
                thousands(memory.sends_large),
                thousands(memory.sends_small)
            ),
            goal: "within 10 %".into(),
            measured: format!(
                "{:+.1} % ({} → {} MiB)",
                100.0 * growth,
                mib(memory.rss_after_100k_kib),
                mib(memory.rss_after_1m_kib)
            ),
            met: growth.abs() <= 0.10,
        },
        Target {
            what: format!("memory held by {} idempotency keys", thousands(memory.keys)),
            goal: "≤ 32 MiB".into(),
            measured: format!(
                "{key_cost_mib:.1} MiB ({} → {} MiB)",
                mib(memory.unkeyed_baseline_kib),
                mib(memory.after_100k_keys_kib)
            ),
            met: key_cost_mib <= 32.0,
        },
    ]
    .into_iter()
    .chain(durable_targets(samples))
    .chain(follow_ups.iter().map(|cost| Target {
        what: format!(
            "a follow-up on a task {} turns long vs on a fresh one ({})",
            thousands(cost.turns as u64),
            cost.store
        ),
        goal: "within 2 ×".into(),
        measured: format!(
            "{:.2} × (medians {:.0} vs {:.0} µs)",
            cost.ratio(),
            cost.long_us,
            cost.fresh_us
        ),
        met: cost.ratio() <= 2.0,
    }))
    .collect()
}

/// Keyed sends on the durable stores at concurrency 16, against fixed floors measured on this
/// two-core machine; and, when a baseline build ran, the in-memory store against it.
fn durable_targets(samples: &[Sample]) -> Vec<Target> {
    let memory_kept = samples
        .iter()
        .any(|s| s.kind == Kind::Baseline("memory"))
        .then(|| {
            let share = paired_ratio(
                samples,
                (&Kind::Ours("memory"), true),
                (&Kind::Baseline("memory"), true),
            );
            Target {
                what: "keyed SendMessage in memory vs the baseline build (JSON-RPC, c16)".into(),
                goal: "≥ 95 % (no drop beyond this machine's noise)".into(),
                measured: format!("{:.0} %", 100.0 * share),
                met: share >= 0.95,
            }
        });
    memory_kept
        .into_iter()
        .chain(durable_floors(samples))
        .collect()
}

fn durable_floors(samples: &[Sample]) -> Vec<Target> {
    [("sqlite", 3_000.0), ("postgres", 5_000.0)]
        .into_iter()
        .filter_map(|(store, floor)| {
            let c = cell(samples, &Kind::Ours(store), Binding::JsonRpc, true, 16)?;
            let db = c
                .db_cpu_us
                .map(|db| format!(", database {db:.0} µs"))
                .unwrap_or_default();
            Some(Target {
                what: format!("keyed SendMessage on {store} (JSON-RPC, c16)"),
                goal: format!("≥ {} req/s", thousands(floor as u64)),
                measured: format!(
                    "{:.0} req/s (server {:.0} µs CPU per send{db})",
                    c.rps, c.cpu_us
                ),
                met: c.rps >= floor,
            })
        })
        .collect()
}

/// Keyed JSON-RPC sends on each store at concurrency 16 and 64, with what each costs.
fn durable_section(md: &mut String, samples: &[Sample]) {
    let mut kinds = vec![
        Kind::Ours("memory"),
        Kind::Ours("sqlite"),
        Kind::Ours("postgres"),
    ];
    kinds.extend(
        ["memory", "sqlite", "postgres"]
            .into_iter()
            .map(Kind::Baseline)
            .filter(|kind| samples.iter().any(|s| &s.kind == kind)),
    );
    md.push_str(
        "\n## Keyed sends by store (JSON-RPC)\n\n\
         Every acknowledged send is durable on SQLite (`synchronous=FULL`, one fsync per group \
         commit) and PostgreSQL (`synchronous_commit=on`). CPU per send is the server's; the \
         database's is every PostgreSQL process's, over the same measurement.\n\n\
         | store | c = 16 req/s | c = 64 req/s | server CPU / send (c16) | database CPU / send (c16) | p50 / p99 at c16 (µs) |\n\
         |---|---|---|---|---|---|\n",
    );
    for kind in kinds {
        let Some(c16) = cell(samples, &kind, Binding::JsonRpc, true, 16) else {
            continue;
        };
        let c64 = cell(samples, &kind, Binding::JsonRpc, true, 64).map_or(0.0, |c| c.rps);
        let db = c16
            .db_cpu_us
            .map_or_else(|| "–".to_owned(), |db| format!("{db:.0} µs"));
        let _ = writeln!(
            md,
            "| {} | {:.0} | {c64:.0} | {:.0} µs | {db} | {:.0} / {:.0} |",
            kind.label(),
            c16.rps,
            c16.cpu_us,
            c16.p50_us,
            c16.p99_us
        );
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// The rows measured: every kind but a baseline that was not run.
fn measured_rows(samples: &[Sample]) -> Vec<(Kind, Binding, bool)> {
    rows()
        .into_iter()
        .filter(|(kind, _, _)| {
            !matches!(kind, Kind::Baseline(_)) || samples.iter().any(|s| &s.kind == kind)
        })
        .collect()
}

fn rows() -> Vec<(Kind, Binding, bool)> {
    let mut rows = vec![(Kind::Floor, Binding::JsonRpc, false)];
    for kind in [Kind::Observed, Kind::Dark] {
        for keyed in [false, true] {
            rows.push((kind.clone(), Binding::JsonRpc, keyed));
        }
    }
    for store in ["memory", "sqlite", "postgres"] {
        let bindings: &[Binding] = if store == "memory" {
            &[
                Binding::JsonRpc,
                Binding::HttpJson,
                Binding::Grpc,
                Binding::GrpcShared,
            ]
        } else {
            &[Binding::JsonRpc, Binding::HttpJson]
        };
        for &binding in bindings {
            for keyed in [false, true] {
                rows.push((Kind::Ours(store), binding, keyed));
            }
        }
    }
    for binding in [Binding::JsonRpc, Binding::HttpJson] {
        rows.push((Kind::Python, binding, false));
    }
    for store in ["memory", "sqlite", "postgres"] {
        rows.push((Kind::Baseline(store), Binding::JsonRpc, true));
    }
    rows
}

/// The markdown report.
pub fn markdown(
    samples: &[Sample],
    memory: &MemoryRuns,
    follow_ups: &[FollowUpCost],
    pushes: &[PushCost],
    rounds: usize,
    seconds: f64,
    machine: &str,
) -> String {
    let mut md = String::from("# Load benchmark: SendMessage to an echo agent\n\n");
    let _ = writeln!(
        md,
        "Reproduce with `cargo bench -p a2a-cli --bench load` (needs PostgreSQL, `python3` and \
         `taskset`). Machine: {machine}. {rounds} rounds, the servers interleaved; each \
         configuration gets a fresh server process, a warm-up, then at most {seconds} s or \
         {max} sends. Throughput is the median over rounds (min–max in brackets); latency and CPU \
         are means. A target comparing two configurations takes the median of their ratios \
         within each round, so the shared machine's drift during the run cancels out.\n",
        max = thousands(crate::MAX_MEASURED),
    );
    md.push_str("## Targets\n\n| target | goal | measured | |\n|---|---|---|---|\n");
    for target in targets(samples, memory, follow_ups) {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            target.what,
            target.goal,
            target.measured,
            if target.met { "met" } else { "**missed**" }
        );
    }
    md.push_str(
        "\n![Throughput at concurrency 16](load.svg)\n\n## Throughput (requests per second)\n\n",
    );
    md.push_str(
        "| server | binding | key | c = 1 | c = 16 | c = 64 |\n|---|---|---|---|---|---|\n",
    );
    for (kind, binding, keyed) in measured_rows(samples) {
        let mut line = format!(
            "| {} | {} | {} |",
            kind.label(),
            binding.name(),
            if keyed { "keyed" } else { "none" }
        );
        for concurrency in crate::CONCURRENCY {
            match cell(samples, &kind, binding, keyed, concurrency) {
                Some(c) if c.rounds > 1 => {
                    let _ = write!(line, " {:.0} [{:.0}–{:.0}] |", c.rps, c.rps_min, c.rps_max);
                }
                Some(c) => {
                    let _ = write!(line, " {:.0} |", c.rps);
                }
                None => line.push_str(" |"),
            }
        }
        md.push_str(&line);
        md.push('\n');
    }
    durable_section(&mut md, samples);
    md.push_str("\n## Latency (p50 / p99, µs), server CPU per send at c = 16 (µs), peak server RSS (MiB)\n\n");
    md.push_str("| server | binding | key | c = 1 | c = 16 | c = 64 | CPU / send | peak RSS | errors |\n|---|---|---|---|---|---|---|---|---|\n");
    for (kind, binding, keyed) in measured_rows(samples) {
        let mut line = format!(
            "| {} | {} | {} |",
            kind.label(),
            binding.name(),
            if keyed { "keyed" } else { "none" }
        );
        let (mut rss, mut errors) = (0, 0);
        let cpu = cell(samples, &kind, binding, keyed, 16).map_or(0.0, |c| c.cpu_us);
        for concurrency in crate::CONCURRENCY {
            match cell(samples, &kind, binding, keyed, concurrency) {
                Some(c) => {
                    let _ = write!(line, " {:.0} / {:.0} |", c.p50_us, c.p99_us);
                    rss = rss.max(c.peak_rss_kib);
                    errors += c.errors;
                }
                None => line.push_str(" |"),
            }
        }
        let _ = writeln!(line, " {cpu:.0} | {} | {errors} |", mib(rss));
        md.push_str(&line);
    }
    let _ = writeln!(
        md,
        "\n## Memory (in-memory store, default limits)\n\n\
         - RSS after {} unkeyed sends: {} MiB; after {}: {} MiB.\n\
         - RSS with the task store full ({} unkeyed sends): {} MiB; after {} keyed sends more: {} MiB.\n",
        thousands(memory.sends_small),
        mib(memory.rss_after_100k_kib),
        thousands(memory.sends_large),
        mib(memory.rss_after_1m_kib),
        thousands(memory.keys),
        mib(memory.unkeyed_baseline_kib),
        thousands(memory.keys),
        mib(memory.after_100k_keys_kib),
    );
    if samples.iter().any(|s| matches!(s.kind, Kind::Baseline(_))) {
        md.push_str(
            "## Before and after: keyed SendMessage on each store (JSON-RPC, c = 16)\n\n\
             The baseline is the previous release's `a2a`, measured in the same rounds.\n\n\
             | store | before (req/s) | after (req/s) | after / before | CPU per send before / after (µs) |\n\
             |---|---|---|---|---|\n",
        );
        for store in ["memory", "sqlite", "postgres"] {
            if !samples.iter().any(|s| s.kind == Kind::Baseline(store)) {
                continue;
            }
            let before = rps_of(samples, &Kind::Baseline(store), Binding::JsonRpc, true, 16);
            let after = rps_of(samples, &Kind::Ours(store), Binding::JsonRpc, true, 16);
            let share = paired_ratio(
                samples,
                (&Kind::Ours(store), true),
                (&Kind::Baseline(store), true),
            );
            let cpu = |kind: &Kind| {
                cell(samples, kind, Binding::JsonRpc, true, 16).map_or(0.0, |c| c.cpu_us)
            };
            let _ = writeln!(
                md,
                "| {store} | {before:.0} | {after:.0} | {:.0} % | {:.0} / {:.0} |",
                100.0 * share,
                cpu(&Kind::Baseline(store)),
                cpu(&Kind::Ours(store)),
            );
        }
        md.push('\n');
    }
    if !follow_ups.is_empty() {
        md.push_str(
            "## Follow-ups on a long task\n\n\
             One task asks for input on every turn and is followed up again and again, each answer \
             without history. Median latency of the first and of the last 50 follow-ups:\n\n\
             | store | turns | first 50 (µs) | last 50 (µs) | last / first |\n|---|---|---|---|---|\n",
        );
        for cost in follow_ups {
            let _ = writeln!(
                md,
                "| {} | {} | {:.0} | {:.0} | {:.2} × |",
                cost.store,
                thousands(cost.turns as u64),
                cost.fresh_us,
                cost.long_us,
                cost.ratio()
            );
        }
        md.push('\n');
    }
    if !pushes.is_empty() {
        md.push_str(
            "## Push notifications\n\n\
             Keyed JSON-RPC sends at c = 16 on one server, each run at most the stated seconds or \
             the sends below: without a push config, with one on every send (to a receiver on \
             127.0.0.1 that answers 200 at once), and without again; the plain figure is the mean \
             of the two runs around the pushed one. Delivery counts every notification the \
             receiver got, from the first pushed send until none came for two seconds.\n\n\
             | store | plain (req/s) | with push (req/s) | with / plain | pushed sends | notifications | per send | delivered per second |\n\
             |---|---|---|---|---|---|---|---|\n",
        );
        for cost in pushes {
            let _ = writeln!(
                md,
                "| {} | {:.0} | {:.0} | {:.0} % | {} | {} | {:.2} | {:.0} |",
                cost.store,
                cost.plain_rps,
                cost.pushed_rps,
                100.0 * cost.share(),
                thousands(cost.sends),
                thousands(cost.delivered),
                cost.delivered as f64 / cost.sends.max(1) as f64,
                cost.delivered_per_s,
            );
        }
        md.push('\n');
    }
    md.push_str(
        "## How it is measured\n\n\
         - The generator is closed-loop: `c` keep-alive connections, each sending the next request \
           when the previous answer is in. A send counts only when it answers 200 with a completed \
           task; anything else is an error.\n\
         - gRPC is driven two ways, the request encoded once with its ids patched in place: as \
           gRPC clients call, `c` calls in flight on one HTTP/2 connection (\"gRPC (1 conn.)\", \
           its frames written and read by hand, so the generator stays cheaper than the server), \
           and the way the HTTP/1.1 bindings must be called, `c` connections with one call at a \
           time on each (\"gRPC\"). A call counts when it ends with a completed task (and, on \
           separate connections, status OK). gRPC runs on the in-memory store only: on the \
           others the store's cost hides the binding's.\n\
         - Every send carries a fresh message id; a keyed send also a fresh idempotency key, so \
           no send is a replay.\n\
         - The floor is one axum route that reads the JSON-RPC body into the typed request with \
           serde and answers with a fixed completed task: no store, no agent. It bounds what any \
           server on the same HTTP stack reaches.\n\
         - The Python server is `interop/python/server.py` (`a2a-sdk` from PyPI, pinned in \
           `interop/python/requirements.txt`) under uvicorn, with its in-memory task store; it has \
           no key handling, so it is measured unkeyed.\n\
         - Servers are separate processes pinned with `taskset` to core 0, the generator to core 1.\n",
    );
    md
}

/// A horizontal bar chart of requests per second at concurrency 16.
pub fn chart(samples: &[Sample]) -> String {
    let bars: Vec<(String, f64, &str)> = measured_rows(samples)
        .into_iter()
        .map(|(kind, binding, keyed)| {
            let label = format!(
                "{} · {}{}",
                kind.label(),
                binding.name(),
                if keyed { " · keyed" } else { "" }
            );
            let colour = match (&kind, keyed) {
                (Kind::Floor, _) | (Kind::Baseline(_), _) => "#9e9e9e",
                (Kind::Python, _) => "#e0a030",
                (_, false) => "#3f7fbf",
                (_, true) => "#2f9f6f",
            };
            (label, rps_of(samples, &kind, binding, keyed, 16), colour)
        })
        .collect();
    let max = bars.iter().map(|b| b.1).fold(1.0, f64::max);
    let (left, width, row, top) = (330.0, 420.0, 24.0, 50.0);
    let height = top + row * bars.len() as f64 + 30.0;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"860\" height=\"{height}\" \
         font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"10\" y=\"24\" font-size=\"15\" font-weight=\"bold\">SendMessage to an echo agent, \
         concurrency 16: requests per second (one server core)</text>\n"
    );
    for (i, (label, value, colour)) in bars.iter().enumerate() {
        let y = top + row * i as f64;
        let w = (value / max * width).max(1.0);
        let _ = writeln!(
            svg,
            "<text x=\"{x}\" y=\"{ty}\" text-anchor=\"end\">{label}</text>\
             <rect x=\"{left}\" y=\"{y}\" width=\"{w:.1}\" height=\"{h}\" fill=\"{colour}\"/>\
             <text x=\"{vx:.1}\" y=\"{ty}\">{value:.0}</text>",
            x = left - 8.0,
            ty = y + 14.0,
            h = row - 6.0,
            vx = left + w + 6.0,
        );
    }
    svg.push_str("</svg>\n");
    svg
}
