//! A closed-loop load generator: `concurrency` keep-alive connections, each sending the next
//! request as soon as the previous answer is in. Requests are pre-built bytes with the message
//! id (and key) patched in place, and HTTP/1.1 answers are read with just enough parsing to
//! find their end, so one core of generator can outrun one core of server. gRPC runs two ways:
//! as gRPC clients call, every call in flight on one HTTP/2 connection ([`Binding::GrpcShared`],
//! spoken by hand in `h2_shared`), and the same way as HTTP/1.1, one connection per caller with
//! one call at a time on it ([`Binding::Grpc`]), the bindings then compared at the same number
//! of connections as well as calls in flight.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Which binding the requests speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    JsonRpc,
    HttpJson,
    Grpc,
    /// gRPC as gRPC clients call: every caller's calls on one shared HTTP/2 connection.
    GrpcShared,
}

impl Binding {
    pub fn name(self) -> &'static str {
        match self {
            Binding::JsonRpc => "JSON-RPC",
            Binding::HttpJson => "HTTP+JSON",
            Binding::Grpc => "gRPC",
            Binding::GrpcShared => "gRPC (1 conn.)",
        }
    }
}

/// One load: what to send, how many at once, for how long.
#[derive(Clone, Copy, Debug)]
pub struct Load {
    pub binding: Binding,
    pub keyed: bool,
    pub concurrency: usize,
    pub duration: Duration,
    /// Stop after this many requests in all (None: run for `duration`).
    pub max_requests: Option<u64>,
    /// A webhook every send asks push notifications to (JSON-RPC only).
    pub push_url: Option<&'static str>,
}

/// What a load measured.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    pub requests: u64,
    pub errors: u64,
    pub elapsed: Duration,
    pub p50_us: u64,
    pub p99_us: u64,
}

impl Measured {
    pub fn rps(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }
}

const ID_LEN: usize = 32;
const ID_MARK: &str = "IIIIIIIIIIIIIIIIIIIIIIIIIIIIIIII";
const KEY_MARK: &str = "KKKKKKKKKKKKKKKKKKKKKKKKKKKKKKKK";

/// The request bytes, and where to patch the message id and key.
struct Template {
    bytes: Vec<u8>,
    id_at: usize,
    key_at: Option<usize>,
}

fn template(binding: Binding, keyed: bool, push_url: Option<&str>) -> Template {
    let metadata = if keyed {
        format!(r#","metadata":{{"a2a-rust.com/idempotency-key":"{KEY_MARK}"}}"#)
    } else {
        String::new()
    };
    let message = format!(
        r#"{{"messageId":"{ID_MARK}","role":"ROLE_USER","parts":[{{"text":"hello, agent"}}]{metadata}}}"#
    );
    let configuration = push_url.map_or_else(String::new, |url| {
        format!(
            r#","configuration":{{"taskPushNotificationConfig":{{"url":"{url}","token":"bench"}}}}"#
        )
    });
    let (path, body) = match binding {
        Binding::JsonRpc => (
            "/",
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{{"message":{message}{configuration}}}}}"#
            ),
        ),
        Binding::HttpJson => ("/message:send", format!(r#"{{"message":{message}}}"#)),
        Binding::Grpc | Binding::GrpcShared => return grpc_template(keyed),
    };
    let text = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         A2A-Version: 1.0\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let id_at = text.find(ID_MARK).expect("the id mark");
    let key_at = keyed.then(|| text.find(KEY_MARK).expect("the key mark"));
    Template {
        bytes: text.into_bytes(),
        id_at,
        key_at,
    }
}

/// A gRPC `SendMessage` request as its length-prefixed message: the same message as the
/// JSON bindings send, with the marks to patch found in the encoded bytes (proto strings are
/// stored as they are).
fn grpc_template(keyed: bool) -> Template {
    use a2a_protocol_types::{Message, SendMessageRequest};
    use prost::Message as _;
    let mut message = Message::user_text("hello, agent");
    message.id = ID_MARK.into();
    if keyed {
        a2a_protocol_types::idempotency::set_key(&mut message, KEY_MARK)
            .expect("the mark is a valid key");
    }
    let request: a2a_protocol_grpc::pb::SendMessageRequest =
        SendMessageRequest::new(message).into();
    let encoded = request.encode_to_vec();
    let mut bytes = Vec::with_capacity(5 + encoded.len());
    bytes.push(0);
    bytes.extend_from_slice(&(encoded.len() as u32).to_be_bytes());
    bytes.extend_from_slice(&encoded);
    let id_at = find(&bytes, ID_MARK.as_bytes()).expect("the id mark");
    let key_at = keyed.then(|| find(&bytes, KEY_MARK.as_bytes()).expect("the key mark"));
    Template {
        bytes,
        id_at,
        key_at,
    }
}

fn write_hex(out: &mut [u8], mut value: u128) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for byte in out.iter_mut().rev() {
        *byte = HEX[(value & 0xf) as usize];
        value >>= 4;
    }
}

/// Runs `load` against `addr` on the current runtime.
pub async fn run(addr: SocketAddr, load: Load, run_id: u64) -> Measured {
    let started = Instant::now();
    let deadline = started + load.duration;
    let per_connection = load
        .max_requests
        .map(|n| n.div_ceil(load.concurrency as u64));
    let mut tasks = Vec::with_capacity(load.concurrency);
    if load.binding == Binding::GrpcShared {
        // One connection carries every call in flight.
        let prefix = u128::from(run_id) << 64;
        tasks.push(tokio::spawn(shared_connection(
            addr, load, prefix, deadline,
        )));
    } else {
        for connection in 0..load.concurrency {
            let prefix = (u128::from(run_id) << 64) | ((connection as u128) << 40);
            tasks.push(tokio::spawn(connection_loop(
                addr,
                load,
                prefix,
                deadline,
                per_connection,
            )));
        }
    }
    let mut latencies = Vec::new();
    let mut errors = 0;
    for task in tasks {
        let (mut lat, errs) = task.await.unwrap_or_default();
        latencies.append(&mut lat);
        errors += errs;
    }
    let elapsed = started.elapsed();
    latencies.sort_unstable();
    let pick = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0) as u64
    };
    Measured {
        requests: latencies.len() as u64,
        errors,
        elapsed,
        p50_us: pick(0.50),
        p99_us: pick(0.99),
    }
}

/// One connection's loop; reconnects after an error. Returns latencies (µs) and error count.
async fn connection_loop(
    addr: SocketAddr,
    load: Load,
    prefix: u128,
    deadline: Instant,
    limit: Option<u64>,
) -> (Vec<u32>, u64) {
    let mut request = template(load.binding, load.keyed, load.push_url);
    let mut latencies = Vec::with_capacity(64 * 1024);
    let mut errors = 0u64;
    let mut sequence: u128 = 0;
    let mut connection = None;
    while Instant::now() < deadline && limit.is_none_or(|n| (latencies.len() as u64) < n) {
        let conn = match &mut connection {
            Some(conn) => conn,
            None => match Conn::open(addr, load.binding).await {
                Ok(conn) => connection.insert(conn),
                Err(_) => {
                    errors += 1;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        sequence += 1;
        patch(&mut request, prefix | sequence);
        let sent = Instant::now();
        match conn.exchange(&request.bytes).await {
            Ok(true) => latencies.push(sent.elapsed().as_micros().min(u32::MAX as u128) as u32),
            Ok(false) => errors += 1,
            Err(_) => {
                errors += 1;
                connection = None;
            }
        }
    }
    (latencies, errors)
}

/// A connection to the server, in the binding's protocol.
enum Conn {
    /// HTTP/1.1 keep-alive, and the buffer answers are read into.
    Http1(TcpStream, Vec<u8>),
    /// HTTP/2, and the rpc's URI.
    Grpc(H2Sender, http::Uri),
}

impl Conn {
    async fn open(addr: SocketAddr, binding: Binding) -> Result<Self, BoxError> {
        if binding == Binding::Grpc {
            let uri = format!("http://{addr}/lf.a2a.v1.A2AService/SendMessage").parse()?;
            return Ok(Conn::Grpc(h2_connect(addr).await?, uri));
        }
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Conn::Http1(stream, vec![0u8; 64 * 1024]))
    }

    /// One request and its answer: `Ok(true)` for a completed task, `Err` when the
    /// connection is unusable.
    async fn exchange(&mut self, request: &[u8]) -> Result<bool, BoxError> {
        match self {
            Conn::Http1(stream, buffer) => Ok(exchange(stream, request, buffer).await?),
            Conn::Grpc(sender, uri) => grpc_exchange(sender, uri, request).await,
        }
    }
}

/// `load`'s calls on one HTTP/2 connection, `load.concurrency` in flight at once.
async fn shared_connection(
    addr: SocketAddr,
    load: Load,
    prefix: u128,
    deadline: Instant,
) -> (Vec<u32>, u64) {
    let mut request = template(load.binding, load.keyed, None);
    let (id_at, key_at) = (request.id_at, request.key_at);
    let mut sequence: u128 = 0;
    let outcome = super::h2_shared::run(
        addr,
        load.concurrency,
        deadline,
        load.max_requests,
        &mut request.bytes,
        |bytes| {
            sequence += 1;
            patch_bytes(bytes, id_at, key_at, prefix | sequence);
        },
        grpc_completed,
    )
    .await;
    (outcome.latencies, outcome.errors)
}

/// Patches the next unique message id (and key) into `request`.
fn patch(request: &mut Template, unique: u128) {
    patch_bytes(&mut request.bytes, request.id_at, request.key_at, unique);
}

fn patch_bytes(bytes: &mut [u8], id_at: usize, key_at: Option<usize>, unique: u128) {
    write_hex(&mut bytes[id_at..id_at + ID_LEN], unique);
    if let Some(at) = key_at {
        write_hex(&mut bytes[at..at + ID_LEN], unique ^ (0xA5u128 << 120));
    }
}

/// Sends one request and reads its answer; `Ok(true)` for a 200 holding a completed task.
async fn exchange(
    conn: &mut TcpStream,
    request: &[u8],
    buffer: &mut Vec<u8>,
) -> std::io::Result<bool> {
    conn.write_all(request).await?;
    let mut filled = 0;
    let (head_end, body_len) = loop {
        if filled == buffer.len() {
            buffer.resize(buffer.len() * 2, 0);
        }
        let n = conn.read(&mut buffer[filled..]).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        filled += n;
        if let Some(end) = find(&buffer[..filled], b"\r\n\r\n") {
            let head = &buffer[..end];
            let length = content_length(head)
                .ok_or_else(|| std::io::Error::other("an answer without Content-Length"))?;
            break (end + 4, length);
        }
    };
    let total = head_end + body_len;
    if buffer.len() < total {
        buffer.resize(total, 0);
    }
    while filled < total {
        let n = conn.read(&mut buffer[filled..total]).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        filled += n;
    }
    let ok = buffer.starts_with(b"HTTP/1.1 200")
        && find(&buffer[head_end..total], b"TASK_STATE_COMPLETED").is_some();
    Ok(ok)
}

type H2Sender = h2::client::SendRequest<bytes::Bytes>;
type BoxError = Box<dyn std::error::Error + Send + Sync>;

async fn h2_connect(addr: SocketAddr) -> Result<H2Sender, BoxError> {
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    let (sender, connection) = h2::client::handshake(tcp).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

/// One unary `SendMessage` call; `Ok(true)` for status OK with a completed task.
async fn grpc_exchange(
    sender: &mut H2Sender,
    uri: &http::Uri,
    request: &[u8],
) -> Result<bool, BoxError> {
    let head = http::Request::post(uri.clone())
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("a2a-version", "1.0")
        .body(())?;
    std::future::poll_fn(|cx| sender.poll_ready(cx)).await?;
    let (answer, mut body) = sender.send_request(head, false)?;
    body.send_data(bytes::Bytes::copy_from_slice(request), true)?;
    let answer = answer.await?;
    let ok_head = answer.status() == http::StatusCode::OK;
    let mut answer = answer.into_body();
    let mut data = Vec::new();
    while let Some(chunk) = answer.data().await {
        let chunk = chunk?;
        let _ = answer.flow_control().release_capacity(chunk.len());
        data.extend_from_slice(&chunk);
    }
    let trailers = answer.trailers().await?;
    let status_ok = trailers
        .as_ref()
        .and_then(|t| t.get("grpc-status"))
        .is_some_and(|v| v == "0");
    Ok(ok_head && status_ok && grpc_completed(&data))
}

/// Whether a `SendMessage` answer (the length-prefixed message) is a completed task.
fn grpc_completed(data: &[u8]) -> bool {
    use prost::Message as _;
    data.len() > 5
        && a2a_protocol_grpc::pb::SendMessageResponse::decode(&data[5..]).is_ok_and(|r| {
            matches!(
                r.payload,
                Some(a2a_protocol_grpc::pb::send_message_response::Payload::Task(ref task))
                    if task.status.as_ref().is_some_and(|s| s.state == a2a_protocol_grpc::pb::TaskState::Completed as i32)
            )
        })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn content_length(head: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(head).ok()?;
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("content-length")
            .then(|| value.trim().parse().ok())
            .flatten()
    })
}
