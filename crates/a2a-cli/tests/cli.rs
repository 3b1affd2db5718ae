//! Every `a2a` subcommand run as a user runs it: the binary, its output and its exit code,
//! against `a2a serve` in another process, including the ways it is used wrong.

mod common;

use std::process::Command as StdCommand;

use a2a_test_kit::fault_proxy::{Fault, FaultProxy};
use assert_cmd::Command;
use common::{Server, fresh_schema, postgres_url};
use predicates::prelude::*;
use serde_json::Value;

/// `a2a ARGS`, quiet logs.
fn a2a(args: &[&str]) -> assert_cmd::assert::Assert {
    Command::cargo_bin("a2a")
        .expect("the a2a binary")
        .args(args)
        .env("RUST_LOG", "warn")
        .assert()
}

fn stdout_of(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&assert.get_output().stdout).into_owned()
}

fn stderr_of(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&assert.get_output().stderr).into_owned()
}

fn json_of(assert: &assert_cmd::assert::Assert) -> Value {
    serde_json::from_slice(&assert.get_output().stdout).expect("JSON on stdout")
}

/// The value on the line of human output that starts with `label`.
fn field(output: &str, label: &str) -> String {
    output
        .lines()
        .find_map(|line| line.strip_prefix(label))
        .unwrap_or_else(|| panic!("no {label:?} line in:\n{output}"))
        .trim()
        .to_owned()
}

fn total_tasks(base: &str) -> u64 {
    json_of(&a2a(&["--json", "tasks", base]).success())["totalSize"]
        .as_u64()
        .expect("totalSize")
}

fn memory_server() -> Server {
    Server::start("memory:", &[])
}

/// A port nothing listens on.
fn dead_url() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    format!("http://127.0.0.1:{port}")
}

/// Runs the retry line `a2a send` printed, as a user pasting it would.
fn run_printed_command(line: &str) -> assert_cmd::assert::Assert {
    let words = shell_words(line.strip_prefix("a2a ").expect("an a2a command"));
    let args: Vec<&str> = words.iter().map(String::as_str).collect();
    a2a(&args)
}

/// Splits a line the way a POSIX shell splits words quoted with single quotes.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let (mut quoted, mut started) = (false, false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                quoted = !quoted;
                started = true;
            }
            '\\' if !quoted => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            ' ' if !quoted => {
                if started || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                started = false;
            }
            c => word.push(c),
        }
    }
    if started || !word.is_empty() {
        words.push(word);
    }
    words
}

// ---- serve ----

#[test]
fn serve_metrics_addr_serves_prometheus_metrics_of_the_requests_it_answered() {
    let metrics_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let metrics_addr = format!("127.0.0.1:{metrics_port}");
    let server = Server::start("memory:", &["--metrics-addr", &metrics_addr]);
    for text in ["one", "two", "three"] {
        a2a(&["send", &server.base, text]).success();
    }
    a2a(&["get", &server.base, "no-such-task"]).failure();
    let scraped = scrape(&metrics_addr);
    println!("{scraped}");
    let sample = |name_and_labels: &str| -> f64 {
        scraped
            .lines()
            .find_map(|line| line.strip_prefix(name_and_labels))
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name_and_labels} sample in:\n{scraped}"))
    };
    let sends =
        "a2a_server_requests_total{binding=\"jsonrpc\",operation=\"SendMessage\",outcome=\"ok\"}";
    assert_eq!(sample(sends), 3.0);
    let missing = "a2a_server_requests_total{binding=\"jsonrpc\",operation=\"GetTask\",outcome=\"TASK_NOT_FOUND\"}";
    assert_eq!(sample(missing), 1.0);
    assert_eq!(
        sample("a2a_idempotent_sends_total{outcome=\"claimed\"}"),
        3.0,
        "each send carried a fresh key"
    );
    let latency =
        "a2a_server_request_duration_seconds_count{binding=\"jsonrpc\",operation=\"SendMessage\"}";
    assert_eq!(sample(latency), 3.0);
    assert!(sample("a2a_store_operation_duration_seconds_count{operation=\"write\"}") >= 3.0);
    assert_eq!(sample("a2a_server_active_turns"), 0.0, "every turn ended");
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_otlp_endpoint_exports_request_spans_in_the_callers_trace() {
    // A stand-in for an OpenTelemetry collector: it keeps every OTLP/HTTP export it gets.
    let exports = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Vec<u8>>::new()));
    let kept = exports.clone();
    let collector = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            let kept = kept.clone();
            async move {
                kept.lock().expect("not poisoned").push(body.to_vec());
                ""
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, collector).await });

    let mut server = Server::start("memory:", &["--otlp-endpoint", &endpoint]);
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let answer = reqwest::Client::new()
        .post(&server.base)
        .header("A2A-Version", "1.0")
        .header("traceparent", format!("00-{trace_id}-00f067aa0ba902b7-01"))
        .json(&serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": {"messageId": "m-traced", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}
        }))
        .send()
        .await
        .expect("answered");
    assert!(answer.status().is_success());
    // A stop flushes the spans still batched.
    let stopped = StdCommand::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(stopped.success());
    assert!(server.child.wait().expect("the server exits").success());

    let exports = exports.lock().expect("not poisoned").clone();
    let wanted: Vec<u8> = (0..16)
        .map(|i| u8::from_str_radix(&trace_id[2 * i..2 * i + 2], 16).expect("hex"))
        .collect();
    let in_trace = exports
        .iter()
        .filter(|body| body.windows(16).any(|w| w == wanted.as_slice()))
        .count();
    println!(
        "{} exports, {in_trace} with the caller's trace id",
        exports.len()
    );
    assert!(
        in_trace > 0,
        "the request's spans joined the caller's trace"
    );
    let all: Vec<u8> = exports.concat();
    for span_name in ["a2a_request", "agent_turn"] {
        assert!(
            all.windows(span_name.len())
                .any(|w| w == span_name.as_bytes()),
            "a {span_name} span was exported"
        );
    }
    let probe = b"a2a_opentelemetry_probe";
    assert!(
        !all.windows(probe.len()).any(|w| w == probe),
        "the server's probe for an OpenTelemetry layer is not exported"
    );
}

/// The body of `GET /metrics` on `addr`, over a plain socket.
fn scrape(addr: &str) -> String {
    use std::io::{Read, Write};
    let mut socket = std::net::TcpStream::connect(addr).expect("the metrics listener");
    socket
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: metrics\r\nConnection: close\r\n\r\n")
        .expect("request written");
    let mut response = String::new();
    socket.read_to_string(&mut response).expect("response read");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    response
}

#[test]
fn serve_prints_where_it_listens_and_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = format!("sqlite://{}", dir.path().join("a2a.db").display());
    let mut server = Server::start(&store, &[]);
    let card = a2a(&["card", &server.base]).success();
    assert!(stdout_of(&card).contains("Echo agent"));
    let killed = StdCommand::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let status = server.child.wait().expect("the server exits");
    assert!(status.success(), "a SIGTERM is a clean stop: {status:?}");
}

#[test]
fn serve_defaults_to_a_sqlite_file_in_the_working_directory() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut child = StdCommand::new(env!("CARGO_BIN_EXE_a2a"))
        .args(["serve", "--addr", "127.0.0.1:0"])
        .current_dir(dir.path())
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("a2a starts");
    let mut banner = String::new();
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    std::io::BufRead::read_line(&mut stdout, &mut banner).expect("a line");
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(banner.trim(), "Store:      sqlite://a2a.db");
    assert!(
        dir.path().join("a2a.db").exists(),
        "the database file was created"
    );
}

#[test]
fn serve_refuses_a_store_it_does_not_know() {
    let refused = a2a(&["serve", "--addr", "127.0.0.1:0", "--store", "redis://x"])
        .code(2)
        .stderr(predicate::str::contains("unknown store"));
    assert!(stderr_of(&refused).contains("sqlite://FILE"));
}

#[test]
fn serve_reports_a_database_it_cannot_open() {
    a2a(&[
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--store",
        &format!(
            "postgres://nobody@{}/none",
            dead_url().trim_start_matches("http://")
        ),
    ])
    .code(6)
    .stderr(predicate::str::contains("cannot open the store"));
}

#[test]
fn a_password_in_a_store_url_is_never_printed() {
    let port = dead_url().rsplit(':').next().expect("a port").to_owned();
    for url in [
        format!("postgres://agent:s3cret-pw@127.0.0.1:{port}/none"),
        format!("postgres://agent@127.0.0.1:{port}/none?password=s3cret-pw&sslmode=disable"),
    ] {
        for args in [
            vec!["serve", "--addr", "127.0.0.1:0", "--store", &url],
            vec!["purge", "--store", &url],
        ] {
            let failed = a2a(&args).code(6);
            let said = format!("{}{}", stdout_of(&failed), stderr_of(&failed));
            assert!(!said.contains("s3cret-pw"), "{said}");
            assert!(said.contains("cannot open the store"), "{said}");
        }
    }
}

#[test]
fn serve_refuses_a_taken_address() {
    let server = memory_server();
    let addr = server.addr().to_string();
    a2a(&["serve", "--addr", &addr, "--store", "memory:"])
        .code(2)
        .stderr(predicate::str::contains("cannot listen"));
}

#[test]
fn serve_tenant_serves_only_the_tenants_named() {
    let server = Server::start("memory:", &["--tenant-aware", "--tenant", "acme"]);
    a2a(&["send", &server.base, "hi", "--tenant", "acme"]).success();
    a2a(&["send", &server.base, "hi", "--tenant", "made-up"])
        .failure()
        .stderr(predicate::str::contains("not a tenant this agent serves"));
}

#[test]
fn a_send_whose_task_ends_rejected_exits_4_saying_so() {
    let server = Server::start("memory:", &["--agent", "conformance"]);
    for extra in [&[][..], &["--stream"][..]] {
        let mut args = vec![
            "send",
            &server.base,
            "do it",
            "--message-id",
            "tck-reject-task-1",
        ];
        args.extend_from_slice(extra);
        a2a(&args)
            .code(4)
            .stdout(predicate::str::contains("rejected"))
            .stderr(predicate::str::contains("ended rejected: rejected"));
    }
    // A task that completes is success.
    a2a(&[
        "send",
        &server.base,
        "do it",
        "--message-id",
        "tck-complete-task-1",
    ])
    .success();
}

#[test]
fn serve_trust_proxy_takes_addresses_and_blocks_only() {
    a2a(&[
        "serve",
        "--store",
        "memory:",
        "--trust-proxy",
        "proxy.example",
    ])
    .code(2)
    .stderr(predicate::str::contains("--trust-proxy"));
    let server = Server::start(
        "memory:",
        &["--trust-proxy", "127.0.0.1", "--trust-proxy", "10.0.0.0/8"],
    );
    a2a(&["send", &server.base, "hi"]).success();
}

#[test]
fn a_tenant_aware_server_keeps_tenants_apart() {
    let server = Server::start("memory:", &["--tenant-aware"]);
    let sent = a2a(&["send", &server.base, "for a", "--tenant", "a"]).success();
    let retry = field(&stdout_of(&sent), "retry");
    assert!(
        retry.contains(" --tenant a"),
        "the retry goes to the same tenant: {retry}"
    );
    run_printed_command(&retry).success();
    let listed = json_of(&a2a(&["--json", "tasks", &server.base, "--tenant", "b"]).success());
    assert_eq!(listed["totalSize"], 0, "{listed}");
    let listed = json_of(&a2a(&["--json", "tasks", &server.base, "--tenant", "a"]).success());
    assert_eq!(listed["totalSize"], 1, "{listed}");
}

// ---- send ----

#[test]
fn send_prints_the_task_and_a_key_and_its_retry_line_returns_the_same_task() {
    let server = memory_server();
    let sent = a2a(&["send", &server.base, "it's a test"]).success();
    let out = stdout_of(&sent);
    assert_eq!(field(&out, "state"), "completed");
    assert_eq!(field(&out, "artifact"), "echo: it's a test");
    let key = field(&out, "key");
    assert_eq!(key.len(), 64, "a fresh key by default: {out}");
    let task = field(&out, "task");
    let again = run_printed_command(&field(&out, "retry")).success();
    assert_eq!(field(&stdout_of(&again), "task"), task, "the retry replays");
    assert_eq!(total_tasks(&server.base), 1);
}

#[test]
fn send_json_prints_the_a2a_response_and_the_key_on_stderr() {
    let server = memory_server();
    let key = stdout_of(&a2a(&["key"]).success()).trim().to_owned();
    let send = |binding: &str| {
        a2a(&[
            "--json",
            "send",
            &server.base,
            "hello",
            "--key",
            &key,
            "--message-id",
            "cli-msg-1",
            "--binding",
            binding,
        ])
        .success()
    };
    let first = send("jsonrpc");
    let (a, b, c) = (
        json_of(&first),
        json_of(&send("http-json")),
        json_of(&send("grpc")),
    );
    assert_eq!(a["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        (&a["task"]["id"], &a["task"]["id"]),
        (&b["task"]["id"], &c["task"]["id"]),
        "the same key replays on every binding"
    );
    let note: Value = serde_json::from_str(stderr_of(&first).trim()).expect("a JSON note");
    assert_eq!(note["idempotencyKey"], key.as_str());
    assert_eq!(note["messageId"], "cli-msg-1");
}

#[test]
fn send_without_a_key_runs_every_send() {
    let server = memory_server();
    for _ in 0..2 {
        let sent = a2a(&[
            "send",
            &server.base,
            "twice",
            "--no-key",
            "--message-id",
            "same-id-1",
        ])
        .success();
        assert!(!stdout_of(&sent).contains("key "), "{}", stdout_of(&sent));
    }
    assert_eq!(total_tasks(&server.base), 2);
}

#[test]
fn send_stream_shows_status_updates_and_artifacts_as_they_come() {
    let server = memory_server();
    let streamed = a2a(&["send", "--stream", &server.base, "stream me"]).success();
    let out = stdout_of(&streamed);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("task "), "{out}");
    assert!(lines.contains(&"status    working"), "{out}");
    assert!(lines.contains(&"artifact  echo: stream me"), "{out}");
    assert!(lines.contains(&"status    completed: stream me"), "{out}");
    assert!(
        out.contains("--stream"),
        "the retry line streams too: {out}"
    );
}

#[test]
fn send_stream_json_prints_one_stream_response_per_line() {
    let server = memory_server();
    let streamed = a2a(&["--json", "send", "--stream", &server.base, "lines"]).success();
    let events: Vec<Value> = stdout_of(&streamed)
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
        .collect();
    assert!(events[0].get("task").is_some(), "{events:?}");
    assert_eq!(
        events.last().expect("events")["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
}

#[test]
fn send_json_prints_strict_v1_0_objects_without_a_generation() {
    // `a2a serve` on its embedded SQLite default, whose events go through the store's rows.
    let dir = tempfile::tempdir().expect("dir");
    let store = format!("sqlite://{}", dir.path().join("a2a.db").display());
    let server = Server::start(&store, &[]);
    let schema = a2a_wire_check::Schema::v1_0();
    let sent = stdout_of(&a2a(&["--json", "send", &server.base, "strict"]).success());
    let streamed =
        stdout_of(&a2a(&["--json", "send", "--stream", &server.base, "strict"]).success());
    let unary: Value = serde_json::from_str(&sent).expect("one JSON object");
    let mut found = schema.check("lf.a2a.v1.SendMessageResponse", &unary, "$");
    let events: Vec<Value> = streamed
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
        .collect();
    assert!(events.len() >= 3, "{streamed}");
    for event in &events {
        found.extend(schema.check("lf.a2a.v1.StreamResponse", event, "$"));
    }
    assert!(found.is_empty(), "{found:#?}");
    assert!(!sent.contains("generation"), "{sent}");
    assert!(!streamed.contains("generation"), "{streamed}");
}

#[test]
fn send_no_wait_returns_a_task_still_at_work() {
    let server = Server::start("memory:", &["--agent", "slow-echo", "--work", "30s"]);
    let sent = a2a(&["send", &server.base, "later", "--no-wait"]).success();
    let state = field(&stdout_of(&sent), "state");
    assert!(state == "submitted" || state == "working", "{state}");
}

#[test]
fn send_refuses_a_malformed_key_without_echoing_it() {
    let server = memory_server();
    let refused = a2a(&["send", &server.base, "hi", "--key", "short\u{1b}[2J"])
        .code(2)
        .stderr(predicate::str::contains("not a valid key"));
    assert!(
        !stderr_of(&refused).contains('\u{1b}'),
        "the raw key is not printed"
    );
    a2a(&["send", &server.base, "hi", "--key", &"a".repeat(300)])
        .code(2)
        .stderr(predicate::str::contains("too long"));
    assert_eq!(total_tasks(&server.base), 0, "nothing was sent");
}

#[test]
fn send_refuses_a_key_and_no_key_together() {
    a2a(&[
        "send",
        "http://127.0.0.1:1",
        "hi",
        "--key",
        &"k".repeat(20),
        "--no-key",
    ])
    .code(2)
    .stderr(predicate::str::contains("cannot be used with"));
}

#[test]
fn send_to_an_unreachable_agent_says_nothing_was_sent() {
    a2a(&["send", &dead_url(), "hi"])
        .code(3)
        .stderr(predicate::str::contains("cannot reach"));
}

#[test]
fn a_reused_key_with_another_message_is_refused() {
    let server = memory_server();
    let key = "reused-key-0123456789";
    a2a(&[
        "send",
        &server.base,
        "one",
        "--key",
        key,
        "--message-id",
        "m-one",
    ])
    .success();
    a2a(&[
        "send",
        &server.base,
        "two",
        "--key",
        key,
        "--message-id",
        "m-two",
    ])
    .code(4)
    .stderr(predicate::str::contains("different message"));
    assert_eq!(total_tasks(&server.base), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_off_send_exits_5_with_a_retry_line_that_runs_nothing_twice() {
    let server = memory_server();
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    // The card is read on the first connection; the send's is cut once the request is in.
    proxy.plan(&[Fault::Pass, Fault::CutBeforeResponse]);
    let url = proxy.url();
    let cut = tokio::task::spawn_blocking(move || a2a(&["send", &url, "cut me"]).code(5))
        .await
        .expect("joined");
    let err = stderr_of(&cut);
    assert!(err.contains("may have acted"), "{err}");
    let retry_line = err
        .lines()
        .map(str::trim)
        .find(|line| line.starts_with("a2a send"))
        .unwrap_or_else(|| panic!("a retry line in {err}"))
        .to_owned();
    let base = server.base.clone();
    tokio::task::spawn_blocking(move || {
        run_printed_command(&retry_line).success();
        assert_eq!(
            total_tasks(&base),
            1,
            "the retry replayed the first attempt's task"
        );
    })
    .await
    .expect("joined");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_with_retries_survives_a_cut_and_runs_once() {
    let server = memory_server();
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    proxy.plan(&[Fault::Pass, Fault::CutBeforeResponse]);
    let url = proxy.url();
    let base = server.base.clone();
    tokio::task::spawn_blocking(move || {
        let sent = a2a(&["send", &url, "again", "--retries", "3"]).success();
        assert_eq!(field(&stdout_of(&sent), "state"), "completed");
        assert_eq!(total_tasks(&base), 1);
    })
    .await
    .expect("joined");
    assert!(proxy.connections() >= 3, "card, cut attempt, retry");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unkeyed_send_is_not_retried_after_a_cut_even_with_retries() {
    let server = memory_server();
    let proxy = FaultProxy::start(server.addr()).await.expect("proxy");
    proxy.plan(&[Fault::Pass, Fault::CutBeforeResponse]);
    let url = proxy.url();
    let cut = tokio::task::spawn_blocking(move || {
        a2a(&["send", &url, "once", "--no-key", "--retries", "3"]).code(5)
    })
    .await
    .expect("joined");
    assert!(
        stderr_of(&cut).contains("carried no key"),
        "{}",
        stderr_of(&cut)
    );
    assert_eq!(proxy.connections(), 2, "card and one send: no re-send");
}

// ---- get, tasks, cancel ----

#[test]
fn get_shows_a_task_and_reports_an_unknown_one() {
    let server = memory_server();
    let sent = a2a(&["--json", "send", &server.base, "find me"]).success();
    let id = json_of(&sent)["task"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let got = a2a(&["get", &server.base, &id]).success();
    assert_eq!(field(&stdout_of(&got), "task"), id);
    let got = a2a(&["--json", "get", &server.base, &id, "--history", "0"]).success();
    assert!(
        json_of(&got).get("history").is_none(),
        "--history 0 drops it"
    );
    a2a(&["get", &server.base, "no-such-task"])
        .code(4)
        .stderr(predicate::str::contains("TASK_NOT_FOUND"));
    a2a(&["get", &dead_url(), "t"]).code(3);
}

#[test]
fn tasks_filters_by_context_and_state_and_pages() {
    let server = memory_server();
    for text in ["one", "two", "three"] {
        a2a(&["send", &server.base, text, "--context", "ctx-paged"]).success();
    }
    a2a(&["send", &server.base, "elsewhere"]).success();
    let table = a2a(&["tasks", &server.base, "--context", "ctx-paged"]).success();
    assert!(
        stdout_of(&table).contains("3 of 3 tasks"),
        "{}",
        stdout_of(&table)
    );
    let first = json_of(
        &a2a(&[
            "--json",
            "tasks",
            &server.base,
            "--context",
            "ctx-paged",
            "--page-size",
            "2",
        ])
        .success(),
    );
    assert_eq!(first["tasks"].as_array().map(Vec::len), Some(2));
    let token = first["nextPageToken"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let human = a2a(&[
        "tasks",
        &server.base,
        "--context",
        "ctx-paged",
        "--page-size",
        "2",
    ])
    .success();
    assert!(stdout_of(&human).contains(&format!("--page-token {token}")));
    let second = json_of(
        &a2a(&[
            "--json",
            "tasks",
            &server.base,
            "--context",
            "ctx-paged",
            "--page-size",
            "2",
            "--page-token",
            &token,
        ])
        .success(),
    );
    assert_eq!(second["tasks"].as_array().map(Vec::len), Some(1));
    let done = json_of(&a2a(&["--json", "tasks", &server.base, "--status", "completed"]).success());
    assert_eq!(done["totalSize"], 4);
    let working =
        json_of(&a2a(&["--json", "tasks", &server.base, "--status", "working"]).success());
    assert_eq!(working["totalSize"], 0);
    a2a(&["tasks", &server.base, "--status", "finished"])
        .code(2)
        .stderr(predicate::str::contains("unknown state"));
    a2a(&["tasks", &server.base, "--page-token", "not-a-token"]).code(4);
}

#[test]
fn cancel_stops_a_working_task_and_reports_what_cannot_be_canceled() {
    let server = Server::start("memory:", &["--agent", "slow-echo", "--work", "30s"]);
    let sent = a2a(&["--json", "send", &server.base, "slow", "--no-wait"]).success();
    let id = json_of(&sent)["task"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let canceled = a2a(&["cancel", &server.base, &id]).success();
    assert_eq!(field(&stdout_of(&canceled), "state"), "canceled");
    a2a(&["cancel", &server.base, &id])
        .code(4)
        .stderr(predicate::str::contains("TASK_NOT_CANCELABLE"));
    a2a(&["cancel", &server.base, "no-such-task"])
        .code(4)
        .stderr(predicate::str::contains("TASK_NOT_FOUND"));
}

#[test]
fn every_task_command_works_over_grpc() {
    let server = memory_server();
    let over_grpc = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--binding", "grpc"]);
        a2a(&all)
    };
    let sent = over_grpc(&["--json", "send", &server.base, "over grpc"]).success();
    let id = json_of(&sent)["task"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let retry = field(
        &stdout_of(&over_grpc(&["send", &server.base, "keyed"]).success()),
        "retry",
    );
    assert!(retry.contains(" --binding grpc"), "{retry}");
    let again = run_printed_command(&retry).success();
    assert_eq!(field(&stdout_of(&again), "state"), "completed");

    let streamed = over_grpc(&["send", "--stream", &server.base, "stream me"]).success();
    let out = stdout_of(&streamed);
    assert!(out.lines().any(|l| l == "status    working"), "{out}");
    assert!(
        out.lines().any(|l| l == "artifact  echo: stream me"),
        "{out}"
    );

    let got = over_grpc(&["get", &server.base, &id]).success();
    assert_eq!(field(&stdout_of(&got), "task"), id);
    over_grpc(&["get", &server.base, "no-such-task"])
        .code(4)
        .stderr(predicate::str::contains("TASK_NOT_FOUND"));
    let listed = json_of(&over_grpc(&["--json", "tasks", &server.base]).success());
    assert_eq!(
        listed["totalSize"], 3,
        "one send, one replayed, one streamed: {listed}"
    );

    let slow = Server::start("memory:", &["--agent", "slow-echo", "--work", "30s"]);
    let sent = over_grpc(&["--json", "send", &slow.base, "slow", "--no-wait"]).success();
    let id = json_of(&sent)["task"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let canceled = over_grpc(&["cancel", &slow.base, &id]).success();
    assert_eq!(field(&stdout_of(&canceled), "state"), "canceled");
    over_grpc(&["cancel", &slow.base, &id])
        .code(4)
        .stderr(predicate::str::contains("TASK_NOT_CANCELABLE"));
}

// ---- card ----

#[test]
fn card_shows_what_the_agent_offers() {
    let server = memory_server();
    let card = stdout_of(&a2a(&["card", &server.base]).success());
    assert!(card.contains("keys      honoured"), "{card}");
    assert!(card.contains("interface JSONRPC"), "{card}");
    let json = json_of(&a2a(&["--json", "card", &server.base]).success());
    assert_eq!(json["name"], "Echo agent");
    a2a(&["card", &dead_url()]).code(3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn card_of_something_that_is_not_an_agent_is_an_error_not_a_crash() {
    // An HTTP server that answers 404 to everything.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut buffer = [0u8; 4096];
            let _ = socket.read(&mut buffer).await;
            let _ = socket
                .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 9\r\n\r\nnot here.")
                .await;
        }
    });
    let answered = tokio::task::spawn_blocking(move || a2a(&["card", &url]).code(4))
        .await
        .expect("joined");
    assert!(
        stderr_of(&answered).contains("404"),
        "{}",
        stderr_of(&answered)
    );
}

// ---- push ----

#[test]
fn a_push_flow_reaches_a2a_listen_and_undeliverable_ones_are_listed_as_dead_letters() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = format!("sqlite://{}", dir.path().join("push.db").display());
    let listen_addr = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        probe.local_addr().expect("addr").to_string()
    };
    let mut listener = std::process::Command::new(env!("CARGO_BIN_EXE_a2a"))
        .args(["listen", "--addr", &listen_addr])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("a2a listen");
    let (lines_tx, lines) = std::sync::mpsc::channel::<String>();
    let stdout = listener.stdout.take().expect("piped");
    std::thread::spawn(move || {
        use std::io::BufRead as _;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = lines_tx.send(line);
        }
    });
    let closed = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
        probe.local_addr().expect("addr").to_string()
    };
    {
        let server = Server::start(
            &store,
            &["--allow-push-to", "127.0.0.1", "--push-attempts", "1"],
        );
        let card = a2a(&["card", &server.base]).success();
        assert_eq!(field(&stdout_of(&card), "push"), "yes");
        let hook = format!("http://{listen_addr}/hook");
        a2a(&["send", &server.base, "watched", "--push-url", &hook]).success();
        let nowhere = format!("http://{closed}/hook");
        a2a(&["send", &server.base, "lost", "--push-url", &nowhere]).success();
        let refused = a2a(&["send", &server.base, "x", "--push-url", "http://10.0.0.1/"]).failure();
        assert!(
            stderr_of(&refused).contains("--allow-push-to"),
            "{}",
            stderr_of(&refused)
        );
        // Three notifications each: wait (boundedly) until the lost ones are given up.
        let mut dead = Value::Null;
        for _ in 0..100 {
            dead = json_of(&a2a(&["--json", "dead-letters", "--store", &store]).success());
            if dead.as_array().is_some_and(|d| d.len() == 3) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let dead = dead.as_array().expect("a list");
        assert_eq!(dead.len(), 3, "{dead:?}");
        assert!(dead.iter().all(|d| d["attempts"] == 1), "{dead:?}");
    }
    let printed: Vec<String> = (0..3)
        .map_while(|_| lines.recv_timeout(std::time::Duration::from_secs(30)).ok())
        .collect();
    let _ = listener.kill();
    let _ = listener.wait();
    assert_eq!(printed.len(), 3, "one line per notification: {printed:?}");
    assert!(
        printed[0].contains("working") && printed[2].contains("completed"),
        "{printed:?}"
    );
    assert!(
        lines.try_recv().is_err(),
        "nothing more, no duplicates: {printed:?}"
    );
}

// ---- purge, key, demo, usage ----

#[test]
fn purge_sweeps_a_sqlite_store_and_refuses_memory() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = format!("sqlite://{}", dir.path().join("purge.db").display());
    {
        let server = Server::start(&store, &[]);
        a2a(&["send", &server.base, "to be swept"]).success();
    }
    let kept = a2a(&["purge", "--store", &store]).success();
    assert!(
        stdout_of(&kept).contains("deleted 0 terminal tasks"),
        "{}",
        stdout_of(&kept)
    );
    let swept = a2a(&[
        "--json",
        "purge",
        "--store",
        &store,
        "--keep-terminal",
        "0s",
        "--keep-keys",
        "0s",
    ])
    .success();
    let report = json_of(&swept);
    assert_eq!(report["tasksDeleted"], 1, "{report}");
    assert_eq!(report["keysDeleted"], 1, "{report}");
    a2a(&["purge", "--store", "memory:"])
        .code(2)
        .stderr(predicate::str::contains("nothing to purge"));
    a2a(&["purge", "--store", &store, "--keep-terminal", "a while"])
        .code(2)
        .stderr(predicate::str::contains("--keep-terminal"));
}

#[tokio::test]
async fn purge_sweeps_a_postgres_store() {
    let Some(url) = postgres_url() else {
        return;
    };
    let (admin, schema, store) = fresh_schema(&url).await;
    let report = tokio::task::spawn_blocking(move || {
        let server = Server::start(&store, &[]);
        a2a(&["send", &server.base, "to be swept"]).success();
        drop(server);
        json_of(
            &a2a(&[
                "--json",
                "purge",
                "--store",
                &store,
                "--keep-terminal",
                "0s",
                "--keep-keys",
                "0s",
            ])
            .success(),
        )
    })
    .await
    .expect("joined");
    assert_eq!(report["tasksDeleted"], 1, "{report}");
    sqlx::Executor::execute(&admin, format!("DROP SCHEMA {schema} CASCADE").as_str())
        .await
        .expect("drop schema");
}

#[test]
fn key_prints_a_fresh_valid_key_each_time() {
    let first = stdout_of(&a2a(&["key"]).success()).trim().to_owned();
    let second = stdout_of(&a2a(&["key"]).success()).trim().to_owned();
    assert_eq!(first.len(), 64);
    assert!(first.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_ne!(first, second);
}

#[test]
fn demo_counts_two_tasks_without_a_key_and_one_with() {
    let human = stdout_of(&a2a(&["demo"]).success());
    let tasks = field(&human, "tasks created");
    assert_eq!(
        tasks.split_whitespace().collect::<Vec<_>>(),
        ["2", "1"],
        "{human}"
    );
    let runs = field(&human, "agent runs");
    assert_eq!(
        runs.split_whitespace().collect::<Vec<_>>(),
        ["2", "1"],
        "{human}"
    );
    let json = json_of(&a2a(&["--json", "demo"]).success());
    assert_eq!(json["unkeyed"]["tasks"], 2);
    assert_eq!(json["keyed"]["tasks"], 1);
    assert_eq!(json["keyed"]["agentRuns"], 1);
}

#[test]
fn every_command_reports_an_agent_or_store_it_cannot_reach() {
    let url = dead_url();
    for args in [
        vec!["send", &url, "hi"],
        vec!["send", &url, "hi", "--stream"],
        vec!["get", &url, "t-1"],
        vec!["tasks", &url],
        vec!["cancel", &url, "t-1"],
        vec!["card", &url],
    ] {
        a2a(&args)
            .code(3)
            .stderr(predicate::str::contains("cannot reach"));
    }
    let port = url.rsplit(':').next().expect("a port");
    a2a(&[
        "purge",
        "--store",
        &format!("postgres://postgres@127.0.0.1:{port}/none"),
    ])
    .code(6)
    .stderr(predicate::str::contains("cannot open the store"));
}

#[test]
fn unknown_commands_and_missing_arguments_are_usage_errors() {
    a2a(&["launch"]).code(2);
    a2a(&["send"])
        .code(2)
        .stderr(predicate::str::contains("<URL>"));
    a2a(&["get", "http://127.0.0.1:1"]).code(2);
    a2a(&["--help"])
        .success()
        .stdout(predicate::str::contains("Exit codes"));
}

// ---- peers that write enum values this build does not know ----

/// A JSON-RPC agent that stores messages as the JS SDK does when it meets a role it does not
/// know: `"role": "UNRECOGNIZED"`. Answers GetTask and ListTasks with one such task.
async fn peer_with_an_unknown_role() -> String {
    use axum::routing::{get, post};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let card = serde_json::json!({
        "name": "peer", "description": "writes UNRECOGNIZED", "version": "1",
        "supportedInterfaces": [{"url": base, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": []
    });
    let task = serde_json::json!({
        "id": "t-odd", "contextId": "c-odd",
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-12-03T13:11:18.000Z"},
        "history": [{"messageId": "m-1", "role": "UNRECOGNIZED", "parts": [{"text": "hi"}]}]
    });
    let app = axum::Router::new()
        .route(
            "/.well-known/agent-card.json",
            get(move || async move { axum::Json(card) }),
        )
        .route(
            "/",
            post(move |axum::Json(request): axum::Json<Value>| async move {
                let result = match request["method"].as_str() {
                    Some("ListTasks") => serde_json::json!({
                        "tasks": [task], "nextPageToken": "", "pageSize": 50, "totalSize": 1
                    }),
                    _ => task,
                };
                axum::Json(
                    serde_json::json!({"jsonrpc": "2.0", "id": request["id"], "result": result}),
                )
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_and_tasks_read_a_task_with_an_enum_value_they_do_not_know() {
    let base = peer_with_an_unknown_role().await;
    tokio::task::spawn_blocking(move || {
        let got = a2a(&["get", &base, "t-odd"]).success();
        assert_eq!(field(&stdout_of(&got), "state"), "completed");
        let listed = a2a(&["tasks", &base]).success();
        assert!(
            stdout_of(&listed).contains("t-odd"),
            "{}",
            stdout_of(&listed)
        );
    })
    .await
    .expect("joined");
}

// ---- authentication ----

/// `a2a ARGS` with `env` set, quiet logs.
fn a2a_with_env(args: &[&str], env: &[(&str, &str)]) -> assert_cmd::assert::Assert {
    Command::cargo_bin("a2a")
        .expect("the a2a binary")
        .args(args)
        .envs(env.iter().copied())
        .env("RUST_LOG", "warn")
        .assert()
}

#[test]
fn serve_with_api_keys_gives_each_caller_only_its_own_tasks() {
    let keys = [
        ("ALICE_KEY", "alice-7d1e0f93b2c84a65"),
        ("BOB_KEY", "bob-0a6c5e27f19d3b48"),
    ];
    let server = Server::start_with_env(
        "memory:",
        &["--api-key-env", "ALICE_KEY", "--api-key-env", "BOB_KEY"],
        &keys,
    );
    let base = server.base.as_str();
    // Without a key: refused, exit 4, with a hint.
    let refused = a2a(&["send", base, "hello", "--no-key"]).code(4);
    let said = stderr_of(&refused);
    assert!(
        said.contains("UNAUTHENTICATED") && said.contains("--api-key-env"),
        "{said}"
    );
    // A wrong key is refused the same way.
    let wrong = [("ALICE_KEY", "not-the-key-0000000000")];
    a2a_with_env(&["tasks", base, "--api-key-env", "ALICE_KEY"], &wrong).code(4);
    // Alice sends, and the retry line names her key's variable, never the key.
    let sent = a2a_with_env(
        &["send", base, "alice's errand", "--api-key-env", "ALICE_KEY"],
        &keys,
    )
    .success();
    let out = stdout_of(&sent);
    assert!(
        out.contains("--api-key-env ALICE_KEY") && !out.contains(keys[0].1),
        "{out}"
    );
    let task = out
        .lines()
        .find_map(|l| l.strip_prefix("task"))
        .map(|t| t.trim().to_owned())
        .expect("a task line");
    // Alice sees her task; Bob neither lists nor reads it.
    let alice = a2a_with_env(&["tasks", base, "--api-key-env", "ALICE_KEY"], &keys).success();
    assert!(stdout_of(&alice).contains(&task));
    let bob = a2a_with_env(&["tasks", base, "--api-key-env", "BOB_KEY"], &keys).success();
    assert!(!stdout_of(&bob).contains(&task), "{}", stdout_of(&bob));
    let bob_get = a2a_with_env(&["get", base, &task, "--api-key-env", "BOB_KEY"], &keys).code(4);
    assert!(
        stderr_of(&bob_get).contains("TASK_NOT_FOUND"),
        "{}",
        stderr_of(&bob_get)
    );
}

#[test]
fn serve_refuses_a_short_or_missing_api_key() {
    let short = a2a_with_env(
        &[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--store",
            "memory:",
            "--api-key-env",
            "SHORT_KEY",
        ],
        &[("SHORT_KEY", "abc")],
    )
    .code(2);
    assert!(
        stderr_of(&short).contains("openssl rand"),
        "{}",
        stderr_of(&short)
    );
    let missing = a2a(&[
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--store",
        "memory:",
        "--api-key-env",
        "A2A_TEST_UNSET_KEY",
    ])
    .code(2);
    assert!(
        stderr_of(&missing).contains("A2A_TEST_UNSET_KEY"),
        "{}",
        stderr_of(&missing)
    );
}

/// A CA that issues certificates into `dir`: the CA's PEM path, and `issue(cn, hosts)` giving
/// the (certificate, key) paths.
struct TestCa {
    issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
    dir: std::path::PathBuf,
}

impl TestCa {
    fn new(dir: &std::path::Path, name: &str) -> Self {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let key = rcgen::KeyPair::generate().expect("key");
        let issuer = rcgen::CertifiedIssuer::self_signed(params, key).expect("CA");
        std::fs::write(dir.join(format!("{name}.pem")), issuer.pem()).expect("written");
        Self {
            issuer,
            dir: dir.to_owned(),
        }
    }

    fn issue(&self, cn: &str, hosts: &[&str]) -> (String, String) {
        let mut params = rcgen::CertificateParams::new(
            hosts.iter().map(|h| (*h).to_owned()).collect::<Vec<_>>(),
        )
        .expect("params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &self.issuer).expect("signed");
        let (cert_path, key_path) = (
            self.dir.join(format!("{cn}.crt")),
            self.dir.join(format!("{cn}.key")),
        );
        std::fs::write(&cert_path, cert.pem()).expect("written");
        std::fs::write(&key_path, key.serialize_pem()).expect("written");
        (
            cert_path.display().to_string(),
            key_path.display().to_string(),
        )
    }
}

#[test]
fn serve_over_https_with_client_certificates() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server_ca = TestCa::new(dir.path(), "server-ca");
    let clients = TestCa::new(dir.path(), "clients-ca");
    let (cert, key) = server_ca.issue("agent", &["127.0.0.1", "localhost"]);
    let clients_ca = dir.path().join("clients-ca.pem").display().to_string();
    let trust = dir.path().join("server-ca.pem").display().to_string();
    let server = Server::start(
        "memory:",
        &[
            "--tls-cert",
            &cert,
            "--tls-key",
            &key,
            "--client-ca",
            &clients_ca,
        ],
    );
    assert!(server.base.starts_with("https://"), "{}", server.base);
    let base = server.base.as_str();
    let (alice_cert, alice_key) = clients.issue("alice", &[]);
    let (bob_cert, bob_key) = clients.issue("bob", &[]);
    // Trusting the server but presenting no certificate: not authenticated.
    let refused = a2a(&["tasks", base, "--ca-cert", &trust]).code(4);
    assert!(
        stderr_of(&refused).contains("UNAUTHENTICATED"),
        "{}",
        stderr_of(&refused)
    );
    // Not trusting the server's CA: the agent cannot be reached safely.
    a2a(&["tasks", base]).code(3);
    let sent = a2a(&[
        "send",
        base,
        "over mutual TLS",
        "--ca-cert",
        &trust,
        "--client-cert",
        &alice_cert,
        "--client-key",
        &alice_key,
    ])
    .success();
    let out = stdout_of(&sent);
    let task = out
        .lines()
        .find_map(|l| l.strip_prefix("task"))
        .map(|t| t.trim().to_owned())
        .expect("a task line");
    assert!(
        out.contains("--client-cert"),
        "the retry line keeps the certificate: {out}"
    );
    let alice = a2a(&[
        "tasks",
        base,
        "--ca-cert",
        &trust,
        "--client-cert",
        &alice_cert,
        "--client-key",
        &alice_key,
    ])
    .success();
    assert!(stdout_of(&alice).contains(&task));
    let bob = a2a(&[
        "tasks",
        base,
        "--ca-cert",
        &trust,
        "--client-cert",
        &bob_cert,
        "--client-key",
        &bob_key,
    ])
    .success();
    assert!(!stdout_of(&bob).contains(&task), "{}", stdout_of(&bob));
}

#[test]
fn serve_logs_plain_lines_off_a_terminal_with_the_message_first() {
    use std::io::BufRead;
    let mut child = StdCommand::new(env!("CARGO_BIN_EXE_a2a"))
        .args(["serve", "--addr", "127.0.0.1:0", "--store", "memory:"])
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("a2a serve starts");
    let stderr = child.stderr.take().expect("stderr");
    let serving = std::io::BufReader::new(stderr)
        .lines()
        .take(50)
        .map_while(Result::ok)
        .find(|line| line.contains("serving"));
    let _ = child.kill();
    let _ = child.wait();
    let line = serving.expect("a log line saying where it serves");
    assert!(line.contains(" serving addr=127.0.0.1:"), "{line}");
    assert!(
        !line.contains("message="),
        "the message is not a field: {line}"
    );
    assert!(
        !line.contains('\u{1b}'),
        "no colour codes off a terminal: {line}"
    );
}
