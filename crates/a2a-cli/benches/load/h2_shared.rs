//! gRPC calls as gRPC clients make them: many calls in flight on one HTTP/2 connection. The
//! frames are written and read by hand (as the HTTP/1.1 generator reads its answers), so one
//! core of generator outruns one core of server: a general HTTP/2 client spends more per call
//! than the server does, and would measure itself. The request's header block is constant
//! (literals that touch no HPACK table), so each call is two frames of pre-built bytes with
//! the stream id and message ids patched in.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const PING: u8 = 6;
const GOAWAY: u8 = 7;
const WINDOW_UPDATE: u8 = 8;
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
/// The largest flow-control window HTTP/2 allows.
const MAX_WINDOW: u32 = 0x7fff_ffff;
/// The window every peer starts with.
const INITIAL_WINDOW: i64 = 65_535;

/// What one shared connection measured: a latency (µs) per completed call, and errors.
pub struct Outcome {
    pub latencies: Vec<u32>,
    pub errors: u64,
}

/// Runs `in_flight` calls at a time on one connection until `deadline` or `limit` calls,
/// each call `request` (a length-prefixed gRPC message) with `patch` applied to it first.
pub async fn run(
    addr: SocketAddr,
    in_flight: usize,
    deadline: Instant,
    limit: Option<u64>,
    request: &mut [u8],
    patch: impl FnMut(&mut [u8]),
    completed: impl Fn(&[u8]) -> bool,
) -> Outcome {
    let mut calls = Calls {
        in_flight,
        deadline,
        limit,
        request,
        patch,
        completed,
        issued: 0,
        outcome: Outcome {
            latencies: Vec::with_capacity(256 * 1024),
            errors: 0,
        },
    };
    while Instant::now() < deadline && calls.more() {
        let mut connection = match Connection::open(addr).await {
            Ok(connection) => connection,
            Err(_) => {
                calls.outcome.errors += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        if connection.calls(&mut calls).await.is_err() {
            // Every call still open on the broken connection failed.
            calls.outcome.errors += 1 + connection.open.len() as u64;
        }
    }
    calls.outcome
}

/// What to call and how much, and what the calls have measured so far (across connections).
struct Calls<'a, P, C> {
    in_flight: usize,
    deadline: Instant,
    limit: Option<u64>,
    request: &'a mut [u8],
    patch: P,
    completed: C,
    issued: u64,
    outcome: Outcome,
}

impl<P: FnMut(&mut [u8]), C: Fn(&[u8]) -> bool> Calls<'_, P, C> {
    /// Whether the limit leaves calls to make.
    fn more(&self) -> bool {
        self.limit.is_none_or(|n| self.issued < n)
    }

    /// The next call's request, patched.
    fn next(&mut self) -> &[u8] {
        (self.patch)(self.request);
        self.issued += 1;
        self.request
    }

    /// Counts an answered call: its latency when it completed, an error when not.
    fn answered(&mut self, open: Open) {
        if (self.completed)(&open.message) {
            let micros = open.sent.elapsed().as_micros();
            self.outcome
                .latencies
                .push(micros.min(u128::from(u32::MAX)) as u32);
        } else {
            self.outcome.errors += 1;
        }
    }
}

/// A call in flight: when it was sent, and its answer's message so far.
struct Open {
    sent: Instant,
    message: Vec<u8>,
}

struct Connection {
    tcp: TcpStream,
    header_block: Vec<u8>,
    next_stream: u32,
    open: HashMap<u32, Open>,
    /// What the server's connection window still takes of our DATA.
    send_window: i64,
    /// DATA received since we last gave the server window back.
    received: u64,
    out: Vec<u8>,
    input: Vec<u8>,
    filled: usize,
}

impl Connection {
    async fn open(addr: SocketAddr) -> std::io::Result<Self> {
        let mut tcp = TcpStream::connect(addr).await?;
        tcp.set_nodelay(true)?;
        let mut out = PREFACE.to_vec();
        // SETTINGS: INITIAL_WINDOW_SIZE (4) as large as allowed, so answers never wait for
        // a stream's window; then the connection's window raised as far.
        frame_head(&mut out, 6, SETTINGS, 0, 0);
        out.extend_from_slice(&4u16.to_be_bytes());
        out.extend_from_slice(&MAX_WINDOW.to_be_bytes());
        window_update(&mut out, 0, MAX_WINDOW - INITIAL_WINDOW as u32);
        tcp.write_all(&out).await?;
        out.clear();
        Ok(Self {
            tcp,
            header_block: header_block(&addr),
            next_stream: 1,
            open: HashMap::new(),
            send_window: INITIAL_WINDOW,
            received: 0,
            out,
            input: vec![0; 256 * 1024],
            filled: 0,
        })
    }

    /// Keeps `in_flight` calls open until the deadline or the limit, then waits for the
    /// open ones to end.
    async fn calls<P: FnMut(&mut [u8]), C: Fn(&[u8]) -> bool>(
        &mut self,
        calls: &mut Calls<'_, P, C>,
    ) -> std::io::Result<()> {
        let drain_until = calls.deadline + Duration::from_secs(5);
        loop {
            let sending = Instant::now() < calls.deadline;
            // Stream ids run out after a billion calls: then the connection ends like a limit.
            let ids_left = |connection: &Self| connection.next_stream < MAX_WINDOW - 2;
            while sending
                && self.open.len() < calls.in_flight
                && calls.more()
                && ids_left(self)
                && self.send_window >= calls.request.len() as i64
            {
                self.call(calls.next());
            }
            if !self.out.is_empty() {
                self.tcp.write_all(&self.out).await?;
                self.out.clear();
            }
            let done = !sending || !calls.more() || !ids_left(self);
            if self.open.is_empty() && done {
                return Ok(());
            }
            if Instant::now() > drain_until {
                return Err(std::io::ErrorKind::TimedOut.into());
            }
            self.read(calls).await?;
        }
    }

    /// Queues one call: its HEADERS, then its message in one DATA frame that ends the stream.
    fn call(&mut self, request: &[u8]) {
        let stream = self.next_stream;
        self.next_stream += 2;
        frame_head(
            &mut self.out,
            self.header_block.len(),
            HEADERS,
            END_HEADERS,
            stream,
        );
        self.out.extend_from_slice(&self.header_block);
        frame_head(&mut self.out, request.len(), DATA, END_STREAM, stream);
        self.out.extend_from_slice(request);
        self.send_window -= request.len() as i64;
        self.open.insert(
            stream,
            Open {
                sent: Instant::now(),
                message: Vec::new(),
            },
        );
    }

    /// Reads what has come and handles every whole frame in it.
    async fn read<P: FnMut(&mut [u8]), C: Fn(&[u8]) -> bool>(
        &mut self,
        calls: &mut Calls<'_, P, C>,
    ) -> std::io::Result<()> {
        if self.filled == self.input.len() {
            self.input.resize(self.input.len() * 2, 0);
        }
        let n = self.tcp.read(&mut self.input[self.filled..]).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.filled += n;
        let mut at = 0;
        while self.filled - at >= 9 {
            let head = &self.input[at..at + 9];
            let length =
                usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
            let (kind, flags) = (head[3], head[4]);
            let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & MAX_WINDOW;
            if self.filled - at < 9 + length {
                break;
            }
            let payload = at + 9..at + 9 + length;
            at += 9 + length;
            match kind {
                DATA => {
                    self.received += length as u64;
                    if let Some(open) = self.open.get_mut(&stream) {
                        open.message.extend_from_slice(&self.input[payload]);
                    }
                }
                // Response headers, or the trailers that end the call (with END_STREAM).
                HEADERS if flags & END_STREAM != 0 => {
                    if let Some(open) = self.open.remove(&stream) {
                        calls.answered(open);
                    }
                }
                RST_STREAM if self.open.remove(&stream).is_some() => calls.outcome.errors += 1,
                SETTINGS if flags & ACK == 0 => frame_head(&mut self.out, 0, SETTINGS, ACK, 0),
                PING if flags & ACK == 0 => {
                    frame_head(&mut self.out, 8, PING, ACK, 0);
                    self.out.extend_from_slice(&self.input[payload]);
                }
                WINDOW_UPDATE if stream == 0 && length == 4 => {
                    let p = &self.input[payload];
                    let increment = u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & MAX_WINDOW;
                    self.send_window += i64::from(increment);
                }
                GOAWAY => return Err(std::io::ErrorKind::ConnectionAborted.into()),
                _ => {}
            }
        }
        self.input.copy_within(at..self.filled, 0);
        self.filled -= at;
        // Give the server back what it sent before its window runs low.
        if self.received > u64::from(MAX_WINDOW / 2) {
            window_update(&mut self.out, 0, self.received as u32);
            self.received = 0;
        }
        Ok(())
    }
}

fn frame_head(out: &mut Vec<u8>, length: usize, kind: u8, flags: u8, stream: u32) {
    out.extend_from_slice(&(length as u32).to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
}

fn window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    frame_head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&increment.to_be_bytes());
}

/// A unary `SendMessage` call's headers as HPACK literals that are never indexed, so the
/// same bytes are right on every stream: `:method POST` and `:scheme http` from the static
/// table, the rest literal.
fn header_block(addr: &SocketAddr) -> Vec<u8> {
    let mut block = vec![0x83, 0x86];
    // Literal without indexing, the name from the static table (4-bit prefix).
    let mut indexed_name = |index: u8, value: &str| {
        if index < 15 {
            block.push(index);
        } else {
            block.push(0x0f);
            block.push(index - 15);
        }
        string(&mut block, value);
    };
    indexed_name(4, "/lf.a2a.v1.A2AService/SendMessage");
    indexed_name(1, &addr.to_string());
    indexed_name(31, "application/grpc");
    for (name, value) in [("te", "trailers"), ("a2a-version", "1.0")] {
        block.push(0x00);
        string(&mut block, name);
        string(&mut block, value);
    }
    block
}

/// An HPACK string, not Huffman-coded (7-bit length prefix; these are all short).
fn string(out: &mut Vec<u8>, value: &str) {
    assert!(value.len() < 127, "a header this generator sends is short");
    out.push(value.len() as u8);
    out.extend_from_slice(value.as_bytes());
}
