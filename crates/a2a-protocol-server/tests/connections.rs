//! Connections within limits: a flood of idle sockets, a client trickling its headers or its
//! body, and a connection left idle do not keep the server from answering a fresh request.
//! Every wait is bounded; counts are printed at the end.

mod common;

use std::sync::Arc;
use std::time::Duration;

use a2a_protocol_server::{RequestHandler, ServerConfig};
use common::*;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long any one wait in these tests may last before the test fails: long enough for a
/// loaded machine, far shorter than the default limits under test would allow.
const PATIENCE: Duration = Duration::from_secs(20);

fn address(server: &TestServer) -> String {
    server.base.trim_start_matches("http://").to_owned()
}

/// Whether the server closed `stream` (read end or reset) within [`PATIENCE`]; what it sent
/// before closing is returned with the answer.
async fn closed_by_server(stream: &mut TcpStream) -> (bool, String) {
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    let outcome = tokio::time::timeout(PATIENCE, async {
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await;
    (outcome.is_ok(), String::from_utf8_lossy(&seen).into_owned())
}

async fn fresh_request_answered(server: &TestServer) -> bool {
    let client = reqwest::Client::builder()
        .timeout(PATIENCE)
        .build()
        .expect("client");
    let response = client
        .get(format!("{}/.well-known/agent-card.json", server.base))
        .send()
        .await;
    matches!(response, Ok(r) if r.status().is_success())
}

/// A server whose clients have `timeout` to send each request's headers, and a connection to it.
async fn connected_with_header_timeout(timeout: Duration) -> (TestServer, TcpStream) {
    let config = ServerConfig::default().with_header_timeouts(timeout, timeout);
    let server = serve_with(
        RequestHandler::builder(CountingAgent::new()).build(),
        config,
    )
    .await;
    let stream = TcpStream::connect(address(&server)).await.expect("connect");
    (server, stream)
}

#[tokio::test]
async fn a_flood_of_idle_sockets_does_not_lock_out_a_fresh_client() {
    let config = ServerConfig::default()
        .with_max_connections(16)
        .with_header_timeouts(Duration::from_secs(120), Duration::from_millis(500));
    let server = serve_with(
        RequestHandler::builder(CountingAgent::new()).build(),
        config,
    )
    .await;
    // Four times the limit, each connected and silent: without limits and a shorter deadline
    // for a crowded server, the first sixteen would hold every slot for two minutes.
    let mut flood = Vec::new();
    for _ in 0..64 {
        flood.push(TcpStream::connect(address(&server)).await.expect("connect"));
    }
    let answered = fresh_request_answered(&server).await;
    let mut shed = 0;
    for mut socket in flood {
        let mut byte = [0u8; 1];
        if let Ok(Ok(0)) =
            tokio::time::timeout(Duration::from_millis(10), socket.read(&mut byte)).await
        {
            shed += 1;
        }
    }
    println!(
        "idle flood: 64 sockets against a limit of 16; {shed} closed by the server so far; fresh request answered: {answered}"
    );
    assert!(answered, "a fresh client is answered while the flood lasts");
}

#[tokio::test]
async fn a_client_trickling_its_headers_is_cut_off() {
    let (server, mut stream) = connected_with_header_timeout(Duration::from_secs(1)).await;
    stream
        .write_all(b"POST / HTTP/1.1\r\nHost: x\r\n")
        .await
        .expect("write");
    // One header byte every 200 ms: never a complete head, never idle long enough for a read
    // timeout to notice.
    let trickle = async {
        for _ in 0..(PATIENCE.as_millis() / 200) {
            if stream.write_all(b"X").await.is_err() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        false
    };
    let cut_off = trickle.await;
    println!("header trickle: cut off by the server: {cut_off}");
    assert!(
        cut_off,
        "the server closes a connection whose headers never end"
    );
    assert!(fresh_request_answered(&server).await);
}

#[tokio::test]
async fn a_connection_left_idle_is_closed() {
    let (_server, mut stream) = connected_with_header_timeout(Duration::from_secs(1)).await;
    stream
        .write_all(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("write");
    // The answer comes, then nothing more is asked: the server closes the connection.
    let (closed, seen) = closed_by_server(&mut stream).await;
    assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
    assert!(
        closed,
        "an idle keep-alive connection is closed by the server"
    );
}

#[tokio::test]
async fn a_body_that_never_arrives_is_answered_408() {
    let config = ServerConfig::default().with_body_timeout(Duration::from_secs(1));
    let agent = CountingAgent::new();
    let server = serve_with(RequestHandler::builder(agent.clone()).build(), config).await;
    for path in ["/", "/message:send"] {
        let mut stream = TcpStream::connect(address(&server)).await.expect("connect");
        stream
            .write_all(
                format!(
                    "POST {path} HTTP/1.1\r\nHost: x\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"jsonrpc\""
                )
                .as_bytes(),
            )
            .await
            .expect("write");
        let (closed, seen) = closed_by_server(&mut stream).await;
        assert!(closed, "{path}: the server gives up on the body");
        assert!(seen.starts_with("HTTP/1.1 408"), "{path}: {seen}");
        assert!(seen.contains("\"error\""), "{path}: an error body: {seen}");
    }
    assert_eq!(agent.runs(), 0);
}

/// The in-memory store, except that listing never answers: a store stuck on a lock.
struct StuckListing(a2a_protocol_server::store::InMemoryTaskStore);

#[async_trait::async_trait]
impl a2a_protocol_server::store::TaskStore for StuckListing {
    async fn load(
        &self,
        tenant: &str,
        id: &a2a_protocol_types::TaskId,
        known: Option<u64>,
    ) -> Result<a2a_protocol_server::store::Loaded, a2a_protocol_server::store::StoreError> {
        self.0.load(tenant, id, known).await
    }

    async fn write(
        &self,
        write: &a2a_protocol_server::store::TaskWrite<'_>,
    ) -> Result<a2a_protocol_server::store::WriteOutcome, a2a_protocol_server::store::StoreError>
    {
        self.0.write(write).await
    }

    async fn list(
        &self,
        _tenant: &str,
        _query: &a2a_protocol_server::store::TaskQuery,
    ) -> Result<a2a_protocol_server::store::TaskPage, a2a_protocol_server::store::StoreError> {
        std::future::pending().await
    }
}

#[tokio::test]
async fn a_request_is_answered_by_its_deadline() {
    let deadline = Duration::from_secs(1);
    let slow = serve_with(
        RequestHandler::builder(CountingAgent::slow(Duration::from_secs(60))).build(),
        ServerConfig::default().with_request_deadline(deadline),
    )
    .await;
    for binding in BINDINGS {
        // A blocking send to an agent that works for a minute is answered with the task as it
        // stands, and its turn goes on.
        let key = key();
        let params = keyed_params(&uuid::Uuid::new_v4().to_string(), "long job", &key);
        let answered = tokio::time::timeout(
            PATIENCE,
            call(binding, &slow.base, "SendMessage", params.clone()),
        )
        .await
        .expect("answered by the deadline")
        .expect("a task");
        let task = task_of(&answered);
        assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "{binding:?}");
        // Its retry (a replay that would wait too) is bounded the same way.
        let replayed =
            tokio::time::timeout(PATIENCE, call(binding, &slow.base, "SendMessage", params))
                .await
                .expect("answered by the deadline")
                .expect("the same task");
        assert_eq!(task_of(&replayed)["id"], task["id"], "{binding:?}");
        let id = task["id"].as_str().expect("id");
        let still = call(binding, &slow.base, "GetTask", json!({"id": id}))
            .await
            .expect("read");
        assert_eq!(
            still["status"]["state"], "TASK_STATE_WORKING",
            "the turn goes on"
        );
    }
    // A request stuck in the store is cut off, with an error that says it may have acted.
    let stuck = serve_with(
        RequestHandler::builder(CountingAgent::new())
            .with_store(std::sync::Arc::new(StuckListing(
                a2a_protocol_server::store::InMemoryTaskStore::new(),
            )))
            .build(),
        ServerConfig::default().with_request_deadline(deadline),
    )
    .await;
    for binding in BINDINGS {
        let error =
            tokio::time::timeout(PATIENCE, call(binding, &stuck.base, "ListTasks", json!({})))
                .await
                .expect("answered past the deadline")
                .expect_err("cut off");
        assert_eq!(error.reason, "INTERNAL", "{binding:?}: {}", error.body);
        assert!(error.message.contains("deadline"), "{}", error.message);
    }
}

/// A TCP connection to `server` from local address `from` (any of 127.0.0.0/8 on Linux).
async fn connect_from(server: &TestServer, from: std::net::IpAddr) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket
        .bind(std::net::SocketAddr::new(from, 0))
        .expect("bind a local address");
    socket
        .connect(address(server).parse().expect("an address"))
        .await
        .expect("connect")
}

/// Loopback address `n` of its own /24 network: `127.0.n.1`.
fn network(n: u8) -> std::net::IpAddr {
    std::net::IpAddr::from([127, 0, n, 1])
}

/// An HTTP/2 connection that opens no stream but answers every PING and SETTINGS, as the
/// attacker's did: idle, however alive. The task ends when the server closes it (end of
/// stream, a reset, or a GOAWAY).
fn pinging_http2(mut stream: TcpStream) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
        let empty_settings = [0u8, 0, 0, 4, 0, 0, 0, 0, 0];
        if stream.write_all(preface).await.is_err()
            || stream.write_all(&empty_settings).await.is_err()
        {
            return;
        }
        let mut pending = Vec::new();
        let mut buffer = [0u8; 4096];
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => pending.extend_from_slice(&buffer[..n]),
            }
            while pending.len() >= 9 {
                let length = usize::from(pending[0]) << 16
                    | usize::from(pending[1]) << 8
                    | usize::from(pending[2]);
                if pending.len() < 9 + length {
                    break;
                }
                let (kind, flags) = (pending[3], pending[4]);
                let ack = flags & 1 == 1;
                let answer = match kind {
                    // SETTINGS: acknowledged.
                    4 if !ack => Some(vec![0u8, 0, 0, 4, 1, 0, 0, 0, 0]),
                    // PING: answered with its payload.
                    6 if !ack => {
                        let mut pong = vec![0u8, 0, 8, 6, 1, 0, 0, 0, 0];
                        pong.extend_from_slice(&pending[9..9 + length]);
                        Some(pong)
                    }
                    // GOAWAY: the server is closing it.
                    7 => return,
                    _ => None,
                };
                if let Some(answer) = answer
                    && stream.write_all(&answer).await.is_err()
                {
                    return;
                }
                pending.drain(..9 + length);
            }
        }
    })
}

#[tokio::test]
async fn an_http2_connection_that_only_answers_pings_is_closed_when_idle() {
    let (server, stream) = connected_with_header_timeout(Duration::from_secs(1)).await;
    let connection = pinging_http2(stream);
    let closed = tokio::time::timeout(PATIENCE, connection).await.is_ok();
    println!("an idle HTTP/2 connection answering PINGs: closed by the server: {closed}");
    assert!(
        closed,
        "an HTTP/2 connection with no open stream is idle, PINGs or not"
    );
    assert!(fresh_request_answered(&server).await);
}

#[tokio::test]
async fn idle_http2_connections_make_room_for_a_fresh_send() {
    // Long deadlines, so only making room can let the fresh client in.
    let config = ServerConfig::default()
        .with_max_connections(16)
        .with_header_timeouts(Duration::from_secs(300), Duration::from_secs(300));
    let agent = CountingAgent::new();
    let server = serve_with(RequestHandler::builder(agent.clone()).build(), config).await;
    // Forty idle connections from forty networks, each answering PINGs.
    let mut idle = Vec::new();
    for n in 1..=40 {
        idle.push(pinging_http2(connect_from(&server, network(n)).await));
    }
    let client = reqwest::Client::builder()
        .timeout(PATIENCE)
        .build()
        .expect("client");
    let sent = client
        .post(format!("{}/message:send", server.base))
        .header("A2A-Version", "1.0")
        .json(&send_params("m-fresh", "hi"))
        .send()
        .await;
    let answered = matches!(&sent, Ok(response) if response.status().is_success());
    let closed = idle.iter().filter(|c| c.is_finished()).count();
    println!(
        "40 idle HTTP/2 connections against 16 slots: fresh send answered: {answered}; \
         idle connections closed so far: {closed}"
    );
    assert!(answered, "a fresh send is answered: {sent:?}");
    assert_eq!(agent.runs(), 1);
}

#[tokio::test]
async fn one_network_holds_at_most_its_share_of_connections() {
    let config = ServerConfig::default()
        .with_max_connections(16)
        .with_max_connections_per_network(4)
        .with_header_timeouts(Duration::from_secs(300), Duration::from_secs(300));
    let agent = CountingAgent::slow(Duration::from_secs(300));
    let server = serve_with(RequestHandler::builder(agent.clone()).build(), config).await;
    // Four streams from four addresses of one /24: its share, all busy.
    let mut streams = Vec::new();
    for host in 1..=4 {
        let client = reqwest::Client::builder()
            .local_address(std::net::IpAddr::from([127, 0, 9, host]))
            .build()
            .expect("client");
        let response = client
            .post(format!("{}/message:stream", server.base))
            .header("A2A-Version", "1.0")
            .json(&send_params(&format!("m-{host}"), "hi"))
            .send()
            .await
            .expect("a stream");
        assert!(response.status().is_success());
        streams.push(response);
    }
    // A fifth from the same network is closed at once; another network is served.
    let mut fifth = connect_from(&server, std::net::IpAddr::from([127, 0, 9, 5])).await;
    let (closed, _) = closed_by_server(&mut fifth).await;
    let other = reqwest::Client::builder()
        .local_address(network(10))
        .timeout(PATIENCE)
        .build()
        .expect("client")
        .get(format!("{}/.well-known/agent-card.json", server.base))
        .send()
        .await;
    println!(
        "a network at its share of 4: fifth connection closed: {closed}; another network \
         answered: {}",
        other.is_ok()
    );
    assert!(
        closed,
        "past its share, a network's new connection is closed"
    );
    assert!(matches!(other, Ok(r) if r.status().is_success()));
    drop(streams);
}

#[tokio::test]
async fn streams_over_http1_take_at_most_half_the_slots() {
    let config = ServerConfig::default()
        .with_max_connections(8)
        .with_header_timeouts(Duration::from_secs(300), Duration::from_secs(300));
    let agent = CountingAgent::slow(Duration::from_secs(300));
    let server = serve_with(RequestHandler::builder(agent.clone()).build(), config).await;
    let (mut open, mut refused) = (Vec::new(), 0);
    for n in 1..=8 {
        let client = reqwest::Client::builder()
            .local_address(network(20 + n))
            .timeout(PATIENCE)
            .build()
            .expect("client");
        // Only the headers are awaited: the stream then stays open for as long as it is held.
        let response = client
            .post(format!("{}/message:stream", server.base))
            .header("A2A-Version", "1.0")
            .json(&send_params(&format!("m-{n}"), "hi"))
            .send()
            .await
            .expect("an answer");
        match response.status().as_u16() {
            200 => open.push(response),
            503 => {
                assert!(response.headers().contains_key("retry-after"));
                refused += 1;
            }
            other => panic!("a stream answered {other}"),
        }
    }
    let answered = fresh_request_answered(&server).await;
    println!(
        "8 streams over HTTP/1.1 against 8 slots: {} open, {refused} refused; a fresh request \
         answered: {answered}; agent runs: {}",
        open.len(),
        agent.runs()
    );
    assert_eq!((open.len(), refused), (4, 4), "half the slots for streams");
    assert_eq!(agent.runs(), 4, "a refused stream runs nothing");
    assert!(answered, "the other half serves calls that end");
}

#[tokio::test]
async fn a_peer_not_reading_its_answers_gets_no_more_made_for_it() {
    // The in-memory store, counting the tasks it is asked to load.
    let loads = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let store = Arc::new(common::stores::Hooked::new({
        let loads = Arc::clone(&loads);
        move |call| {
            if call == common::stores::StoreCall::Load {
                loads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            Ok(())
        }
    }));
    let server = serve_with(
        handler_with_store(CountingAgent::new(), store.clone()),
        ServerConfig::default(),
    )
    .await;
    // A task of about 10 MB of JSON: its first message of 3.5 MB, and the agent's answer
    // quoting it, in the history and the status.
    let big = "x".repeat(3_500_000);
    let created: serde_json::Value = reqwest::Client::new()
        .post(format!("{}/message:send", server.base))
        .header("A2A-Version", "1.0")
        .json(&send_params("m-big", &big))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("a task");
    let id = created["task"]["id"]
        .as_str()
        .expect("a task id")
        .to_owned();
    let before = loads.load(std::sync::atomic::Ordering::SeqCst);
    // Two hundred reads of it on one HTTP/2 connection whose streams' windows stay at zero.
    let tcp = TcpStream::connect(address(&server)).await.expect("connect");
    let (client, connection) = h2::client::Builder::new()
        .initial_window_size(0)
        .handshake::<_, bytes::Bytes>(tcp)
        .await
        .expect("an HTTP/2 handshake");
    let connection = tokio::spawn(connection);
    let mut client = client.ready().await.expect("ready");
    let mut reads = Vec::new();
    for _ in 0..200 {
        let request = http::Request::get(format!("{}/tasks/{id}", server.base))
            .header("a2a-version", "1.0")
            .body(())
            .expect("a request");
        let (response, _) = client.send_request(request, true).expect("a stream");
        reads.push(response);
        client = client.ready().await.expect("ready");
    }
    // Let the server make what it will: until the count has stood still a while.
    let made = || loads.load(std::sync::atomic::Ordering::SeqCst) - before;
    let (mut last, mut still) = (usize::MAX, 0);
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = made();
        still = if now == last { still + 1 } else { 0 };
        last = now;
        if still == 10 || now >= 200 {
            break;
        }
    }
    let made_while_there = made();
    // The peer goes; the server goes on, and makes nothing for the reads it left.
    drop(reads);
    drop(client);
    connection.abort();
    let answered = fresh_request_answered(&server).await;
    let after_gone = made() - made_while_there;
    println!(
        "200 reads of a 10 MB task on one HTTP/2 connection, windows at zero: \
         {made_while_there} answers made (8 MiB of unwritten answers allowed), {after_gone} \
         after the peer went; a fresh request then answered: {answered}"
    );
    assert!(
        made_while_there <= 4,
        "{made_while_there} answers made for a peer reading none"
    );
    assert_eq!(
        after_gone, 0,
        "nothing is made for reads whose peer is gone"
    );
    assert!(answered);
}

#[tokio::test]
async fn large_bodies_past_the_budget_are_refused_before_they_run() {
    // The smallest budget there is: one body at the limit (4 MiB).
    let config = ServerConfig::default().with_max_large_body_bytes(0);
    let agent = CountingAgent::slow(Duration::from_secs(300));
    let server = serve_with(handler_with_store(agent.clone(), memory_store()), config).await;
    let big = "x".repeat(3_900_000);
    // A large blocking send whose agent works on: it holds what it drew until answered.
    let held = tokio::spawn({
        let base = server.base.clone();
        let body = send_params("m-held", &big);
        async move {
            reqwest::Client::new()
                .post(format!("{base}/message:send"))
                .header("A2A-Version", "1.0")
                .json(&body)
                .send()
                .await
        }
    });
    for _ in 0..200 {
        if agent.runs() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(agent.runs(), 1, "the held send runs");
    let mut refusals = Vec::new();
    for binding in BINDINGS {
        let refused = call(
            binding,
            &server.base,
            "SendMessage",
            send_params("m-big", &big),
        )
        .await
        .expect_err("no room for a second large body");
        refusals.push(format!(
            "{binding:?}: {} {}",
            refused.status, refused.message
        ));
        match binding {
            Binding::Grpc => assert_eq!(refused.grpc, Some(tonic::Code::Unavailable)),
            _ => {
                assert_eq!(refused.status, 503, "{refused:?}");
                assert!(refused.retry_after.is_some(), "{refused:?}");
            }
        }
        assert!(refused.message.contains("nothing ran"), "{refused:?}");
    }
    // Small requests never touch the budget (this one answered as soon as its task exists).
    let mut small = send_params("m-small", "hi");
    small["configuration"] = serde_json::json!({"returnImmediately": true});
    call(Binding::JsonRpc, &server.base, "SendMessage", small)
        .await
        .expect("a small send");
    println!(
        "large bodies past the budget: {}; agent runs: {}",
        refusals.join("; "),
        agent.runs()
    );
    assert_eq!(agent.runs(), 2, "the refused sends ran nothing");
    held.abort();
}
