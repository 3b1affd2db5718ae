//! `a2a serve` as a child process, and the PostgreSQL the tests share.

#![allow(dead_code)] // Each test binary uses its own part of this.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use sqlx::Executor;

/// A server process, killed (SIGKILL) when dropped.
pub struct Server {
    pub child: Child,
    pub base: String,
}

impl Server {
    /// Runs `a2a serve` on a free port with `store` and `extra` arguments, and waits for it to
    /// print where it listens.
    pub fn start(store: &str, extra: &[&str]) -> Self {
        Self::start_at("127.0.0.1:0", store, extra)
    }

    /// Like [`Server::start`], on `addr` (a restarted server keeps its address).
    pub fn start_at(addr: &str, store: &str, extra: &[&str]) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_a2a"));
        command.args(["serve", "--addr", addr, "--store", store]);
        Self::spawn(command, extra)
    }

    /// Like [`Server::start`], with `env` added to the server's environment.
    pub fn start_with_env(store: &str, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_a2a"));
        command
            .args(["serve", "--addr", "127.0.0.1:0", "--store", store])
            .envs(env.iter().copied());
        Self::spawn(command, extra)
    }

    /// Like [`Server::start`], in a process that may open at most `files` file descriptors.
    pub fn start_with_file_limit(store: &str, extra: &[&str], files: u32) -> Self {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(format!("ulimit -n {files} && exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_a2a"))
            .args(["serve", "--addr", "127.0.0.1:0", "--store", store]);
        Self::spawn(command, extra)
    }

    fn spawn(mut command: Command, extra: &[&str]) -> Self {
        let mut child = command
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("a2a starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let mut base = None;
        for line in lines.by_ref() {
            let line = line.expect("a line");
            if let Some(card) = line.strip_prefix("Agent card: ") {
                base = Some(
                    card.trim_end_matches("/.well-known/agent-card.json")
                        .to_owned(),
                );
                break;
            }
        }
        // Keep reading, so the server never writes into a closed pipe.
        std::thread::spawn(move || lines.for_each(drop));
        let base = base.expect("the server printed its card URL");
        Self { child, base }
    }

    /// The port it listens on.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.base
            .trim_start_matches("http://")
            .parse()
            .expect("an address")
    }

    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM and waits for the process to exit; true when it exited cleanly.
    pub fn terminate(mut self) -> bool {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        self.child.wait().is_ok_and(|status| status.success())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The PostgreSQL the tests use, or `None` when `A2A_TEST_POSTGRES_URL=skip`.
pub fn postgres_url() -> Option<String> {
    match std::env::var("A2A_TEST_POSTGRES_URL") {
        Ok(url) if url == "skip" => None,
        Ok(url) => Some(url),
        Err(_) => Some("postgres://postgres@127.0.0.1:5432/test".to_owned()),
    }
}

/// A fresh schema on `url`, and a URL whose connections use it.
pub async fn fresh_schema(url: &str) -> (sqlx::PgPool, String, String) {
    let admin = sqlx::PgPool::connect(url)
        .await
        .expect("PostgreSQL is reachable");
    let schema = format!("a2a_cli_test_{}", uuid::Uuid::new_v4().simple());
    admin
        .execute(format!("CREATE SCHEMA {schema}").as_str())
        .await
        .expect("schema");
    let separator = if url.contains('?') { '&' } else { '?' };
    let store = format!("{url}{separator}options=-c%20search_path%3D{schema}");
    (admin, schema, store)
}

/// A free port on 127.0.0.1, for a server that must come back on the same address.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Servers on one store, each on its own fixed address, killed (SIGKILL) and restarted by a
/// chaos loop.
pub struct Fleet {
    pub store: String,
    pub addrs: Vec<String>,
    args: Vec<String>,
    servers: std::sync::Mutex<Vec<Option<Server>>>,
    pub kills: std::sync::atomic::AtomicUsize,
}

impl Fleet {
    /// `replicas` servers on `store`, each run with `args`.
    pub fn start(store: &str, replicas: usize, args: &[&str]) -> std::sync::Arc<Self> {
        let addrs: Vec<String> = (0..replicas)
            .map(|_| format!("127.0.0.1:{}", free_port()))
            .collect();
        let servers = addrs
            .iter()
            .map(|addr| Some(Server::start_at(addr, store, args)))
            .collect();
        std::sync::Arc::new(Self {
            store: store.to_owned(),
            addrs,
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            servers: std::sync::Mutex::new(servers),
            kills: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    pub fn bases(&self) -> Vec<String> {
        self.addrs.iter().map(|a| format!("http://{a}")).collect()
    }

    /// SIGKILLs server `i`, waits `pause`, and starts it again on the same address.
    pub fn crash(&self, i: usize, pause: std::time::Duration) {
        let killed = self.servers.lock().unwrap_or_else(|e| e.into_inner())[i].take();
        if let Some(server) = killed {
            server.kill();
            self.kills.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        std::thread::sleep(pause);
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        let restarted = Server::start_at(&self.addrs[i], &self.store, &args);
        self.servers.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(restarted);
    }
}

/// A PostgreSQL cluster of the test's own, in a temporary directory, on a free port: a test
/// may restart it without disturbing the tests that share the machine's server. Stopped when
/// dropped.
pub struct PrivateCluster {
    dir: tempfile::TempDir,
    bin: std::path::PathBuf,
    pub port: u16,
}

impl PrivateCluster {
    /// Makes and starts one, as the `postgres` system user (PostgreSQL refuses to run as
    /// root). Panics, saying what is missing, when the machine cannot.
    pub fn start() -> Self {
        let bin = std::fs::read_dir("/usr/lib/postgresql")
            .expect("PostgreSQL's binaries under /usr/lib/postgresql")
            .filter_map(Result::ok)
            .map(|version| version.path().join("bin"))
            .find(|bin| bin.join("initdb").exists())
            .expect("initdb under /usr/lib/postgresql/*/bin");
        let dir = tempfile::tempdir().expect("a temp dir");
        let data = dir.path().join("data");
        Self::as_postgres(
            "chown",
            &["postgres", &dir.path().display().to_string()],
            true,
        );
        let initdb = bin.join("initdb").display().to_string();
        Self::as_postgres(
            &initdb,
            &[
                "-D",
                &data.display().to_string(),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
            ],
            false,
        );
        let cluster = Self {
            dir,
            bin,
            port: free_port(),
        };
        cluster.pg_ctl(&["start"]);
        cluster
    }

    /// Runs `program` with `args` as the `postgres` user (or as this one, `as_root`).
    fn as_postgres(program: &str, args: &[&str], as_root: bool) {
        let status = if as_root {
            Command::new(program).args(args).status()
        } else {
            Command::new("runuser")
                .args(["-u", "postgres", "--", program])
                .args(args)
                .stdout(Stdio::null())
                .status()
        }
        .unwrap_or_else(|e| panic!("{program} could not run: {e}"));
        assert!(status.success(), "{program} {args:?} failed: {status}");
    }

    fn pg_ctl(&self, action: &[&str]) {
        let data = self.dir.path().join("data").display().to_string();
        let log = self.dir.path().join("log").display().to_string();
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        let pg_ctl = self.bin.join("pg_ctl").display().to_string();
        let mut args = vec!["-D", &data, "-l", &log, "-o", &options, "-w", "-t", "60"];
        args.extend_from_slice(action);
        Self::as_postgres(&pg_ctl, &args, false);
    }

    /// Restarts the server the way an operator's `restart -m fast` does: sessions are ended
    /// and in-flight transactions rolled back.
    pub fn restart(&self) {
        self.pg_ctl(&["restart", "-m", "fast"]);
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        self.pg_ctl(&["stop", "-m", "immediate"]);
    }
}
