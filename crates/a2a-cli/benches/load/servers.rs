//! The servers under load, each a process pinned to core 0: `a2a serve` on each store, the
//! floor, and the Python `a2a-sdk` echo server.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The core servers run on; the load generator runs on the other.
pub const SERVER_CORE: &str = "0";
pub const GENERATOR_CORE: &str = "1";

/// What is being measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `a2a serve` with this store URL scheme: `memory`, `sqlite` or `postgres`.
    Ours(&'static str),
    /// The same, served by the baseline build named by `A2A_BENCH_BASELINE` (an earlier
    /// release), so a change is measured against what it replaces in one run.
    Baseline(&'static str),
    /// `a2a serve` on memory with its metrics recorded (`--metrics-addr`) and its request
    /// and turn spans enabled (`RUST_LOG=info`).
    Observed,
    /// `a2a serve` on memory with neither: no metrics recorder, `RUST_LOG=warn`.
    Dark,
    /// The bare axum route.
    Floor,
    /// The Python SDK's echo agent.
    Python,
}

impl Kind {
    /// The task store the server keeps, when it is ours.
    pub fn store(&self) -> Option<&'static str> {
        match self {
            Kind::Ours(store) | Kind::Baseline(store) => Some(store),
            Kind::Observed | Kind::Dark => Some("memory"),
            Kind::Floor | Kind::Python => None,
        }
    }

    pub fn label(&self) -> String {
        match self {
            Kind::Ours(store) => format!("a2a-rust ({store})"),
            Kind::Baseline(store) => format!("baseline ({store})"),
            Kind::Observed => "a2a-rust (memory, metrics + info spans)".into(),
            Kind::Dark => "a2a-rust (memory, no metrics, warn)".into(),
            Kind::Floor => "floor (bare axum + serde)".into(),
            Kind::Python => "Python a2a-sdk (in-memory)".into(),
        }
    }
}

/// A running server process, killed when dropped.
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
    _scratch: Option<tempfile::TempDir>,
}

impl Server {
    /// Peak resident memory so far, in KiB (`VmHWM`).
    pub fn peak_rss_kib(&self) -> u64 {
        status_field(self.child.id(), "VmHWM:")
    }

    /// CPU time the server has used so far (user and system), from `/proc/PID/stat`.
    pub fn cpu_time(&self) -> std::time::Duration {
        ticks_to_duration(process_ticks(self.child.id()).unwrap_or(0))
    }

    /// Resident memory now, in KiB (`VmRSS`).
    pub fn rss_kib(&self) -> u64 {
        status_field(self.child.id(), "VmRSS:")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn status_field(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix(field)?
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse()
                    .ok()
            })
        })
        .unwrap_or(0)
}

fn pinned(program: &Path) -> Command {
    let mut command = Command::new("taskset");
    command.args(["-c", SERVER_CORE]).arg(program);
    command
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The key quotas this build's servers run with: one client may hold the whole index.
const OURS_QUOTAS: &[&str] = &[
    "--max-keys-per-caller",
    "10000000",
    "--max-unauthenticated-keys",
    "10000000",
];

/// Starts `kind`. `postgres` is the database URL for the PostgreSQL store.
pub fn start(kind: &Kind, postgres: &str) -> Server {
    match kind {
        // One generator sends everything from one address, unauthenticated; the key quotas
        // are for many clients.
        Kind::Ours(store) => start_ours(store, postgres, OURS_QUOTAS),
        Kind::Observed => {
            let metrics = format!("127.0.0.1:{}", free_port());
            let args = [OURS_QUOTAS, &["--metrics-addr", &metrics]].concat();
            start_a2a(&this_a2a(), "memory", postgres, &args, "info")
        }
        Kind::Dark => start_a2a(&this_a2a(), "memory", postgres, OURS_QUOTAS, "warn"),
        Kind::Baseline(store) => {
            let baseline = std::env::var_os("A2A_BENCH_BASELINE")
                .map(PathBuf::from)
                .expect("A2A_BENCH_BASELINE names the baseline a2a binary");
            // A build from before the unauthenticated key share has no flag for it.
            let quotas = if serves_with(&baseline, "--max-unauthenticated-keys") {
                OURS_QUOTAS
            } else {
                &OURS_QUOTAS[..2]
            };
            start_a2a(&baseline, store, postgres, quotas, "info")
        }
        Kind::Floor => {
            let exe = std::env::current_exe().expect("the bench binary");
            let port = free_port();
            let child = pinned(&exe)
                .args(["--floor-server", &port.to_string()])
                .stdout(Stdio::null())
                .spawn()
                .expect("the floor server starts");
            ready(child, port, None)
        }
        Kind::Python => {
            let interop = workspace().join("interop");
            let port = free_port();
            let child = pinned(&interop.join(".venv/bin/python"))
                .arg(interop.join("python/server.py"))
                .arg(port.to_string())
                .stdout(Stdio::null())
                .spawn()
                .expect("the Python server starts (run interop/setup.sh)");
            ready(child, port, None)
        }
    }
}

/// Whether `a2a serve` of the build at `a2a` takes `flag`.
fn serves_with(a2a: &std::path::Path, flag: &str) -> bool {
    std::process::Command::new(a2a)
        .args(["serve", "--help"])
        .output()
        .is_ok_and(|help| String::from_utf8_lossy(&help.stdout).contains(flag))
}

/// `a2a serve` of this build on `store`, with `extra` arguments.
pub fn start_ours(store: &str, postgres: &str, extra: &[&str]) -> Server {
    start_a2a(&this_a2a(), store, postgres, extra, "info")
}

/// This build's `a2a`, or the one `A2A_BENCH_A2A` points at (say, one built with frame
/// pointers, to profile).
fn this_a2a() -> PathBuf {
    std::env::var_os("A2A_BENCH_A2A")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_a2a")), PathBuf::from)
}

/// `a2a serve` on `store`, logging at `log` (what `a2a serve` does by default: `info`).
fn start_a2a(a2a: &Path, store: &str, postgres: &str, extra: &[&str], log: &str) -> Server {
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let url = match store {
        "memory" => "memory:".to_owned(),
        "sqlite" => format!("sqlite://{}", scratch.path().join("bench.db").display()),
        "postgres" => postgres.to_owned(),
        other => panic!("unknown store {other}"),
    };
    let mut child = pinned(a2a)
        .args(["serve", "--addr", "127.0.0.1:0", "--store", &url])
        .args(extra)
        .env("RUST_LOG", log)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("a2a serve starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let addr = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| {
            line.strip_prefix("Agent card: http://")?
                .strip_suffix("/.well-known/agent-card.json")?
                .parse()
                .ok()
        })
        .expect("a2a serve printed its address");
    std::thread::spawn(move || lines.for_each(drop));
    Server {
        child,
        addr,
        _scratch: Some(scratch),
    }
}

/// Waits until something accepts connections on `port`.
fn ready(child: Child, port: u16, scratch: Option<tempfile::TempDir>) -> Server {
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let started = Instant::now();
    while std::net::TcpStream::connect(addr).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the server on {addr} did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Server {
        child,
        addr,
        _scratch: scratch,
    }
}

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// User and system CPU ticks of a process, from `/proc/PID/stat`.
fn process_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let user: u64 = fields.get(11)?.parse().ok()?;
    let system: u64 = fields.get(12)?.parse().ok()?;
    Some(user + system)
}

/// Linux reports clock ticks of 1/100 s (USER_HZ) on every platform it runs on.
fn ticks_to_duration(ticks: u64) -> Duration {
    Duration::from_millis(ticks * 10)
}

/// CPU ticks of every PostgreSQL process on this machine (its backends, WAL writer and the
/// rest), by process: the database's share of a measurement is the growth between two of
/// these, with a process that appeared in between counted from zero.
pub struct DatabaseCpu(std::collections::HashMap<u32, u64>);

impl DatabaseCpu {
    pub fn now() -> Self {
        let mut ticks = std::collections::HashMap::new();
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let is_postgres = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|comm| comm.trim_end() == "postgres");
            if let Some(used) = is_postgres.then(|| process_ticks(pid)).flatten() {
                ticks.insert(pid, used);
            }
        }
        Self(ticks)
    }

    /// The CPU the database used since `earlier`.
    pub fn since(&self, earlier: &DatabaseCpu) -> Duration {
        let grown = self
            .0
            .iter()
            .map(|(pid, now)| now.saturating_sub(earlier.0.get(pid).copied().unwrap_or(0)))
            .sum();
        ticks_to_duration(grown)
    }
}
