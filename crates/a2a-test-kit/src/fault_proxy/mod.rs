//! A TCP proxy on 127.0.0.1 that breaks connections on purpose, so a client meets the
//! ambiguous failure for real: the request reached the server, the answer never came back.
//!
//! `a2a demo` puts one in front of its agent; the chaos and retry tests put one in front of
//! theirs. Each accepted connection takes the next planned [`Fault`]; when none is planned it
//! passes, or, with [`FaultProxy::with_chaos`], draws one at random. On an HTTP/2 connection
//! (gRPC), which carries many calls, each call takes the next fault instead, and a fault that
//! fires cuts the connection and so every call on it.
//!
//! ```
//! use a2a_test_kit::fault_proxy::{Fault, FaultProxy};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let proxy = FaultProxy::start(upstream.local_addr()?).await?;
//! proxy.plan(&[Fault::CutBeforeResponse]);
//! assert!(proxy.url().starts_with("http://127.0.0.1:"));
//! # Ok(())
//! # }
//! ```

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

mod events;
mod http2;

use events::{Byte, EventEnds};
use http2::Http2Cut;

/// What the proxy does to one connection.
///
/// ```
/// use a2a_test_kit::fault_proxy::{Fault, FaultProxy};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// # let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let proxy = FaultProxy::start(upstream.local_addr()?).await?;
/// // The first connection passes, the second is cut once its request is through, the third is
/// // cut after the first event of its stream.
/// proxy.plan(&[Fault::Pass, Fault::CutBeforeResponse, Fault::CutAfterEvents(1)]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Forward everything both ways.
    Pass,
    /// Close the connection as soon as it is accepted, before a byte is read: the request
    /// never reaches the server.
    Refuse,
    /// Forward the request; when the server starts answering, drop the client's connection
    /// without forwarding a byte of the answer.
    CutBeforeResponse,
    /// Forward the first `n` bytes of the answer, then drop the client's connection.
    CutAfterBytes(usize),
    /// Forward the answer up to and including the `n`-th SSE event (the `n`-th blank line
    /// of the stream, whatever its line ends or transfer coding), or on HTTP/2 the frame that
    /// completes the `n`-th gRPC message, then drop the client's connection.
    CutAfterEvents(usize),
}

/// Random faults for connections that have none planned.
///
/// ```
/// use a2a_test_kit::fault_proxy::{Chaos, FaultProxy};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// # let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let proxy = FaultProxy::start(upstream.local_addr()?).await?.with_chaos(Chaos::new(0.3, 42));
/// assert_eq!(proxy.counts().faulted(), 0, "no connection yet");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Chaos {
    /// The share of connections that fail, from 0 to 1.
    pub fault_rate: f64,
    /// Seeds the draw, so a failing run can be repeated.
    pub seed: u64,
}

impl Chaos {
    /// Fails `fault_rate` of connections, drawn from `seed`.
    ///
    /// ```
    /// use a2a_test_kit::fault_proxy::Chaos;
    ///
    /// let chaos = Chaos::new(0.25, 7);
    /// assert_eq!((chaos.fault_rate, chaos.seed), (0.25, 7));
    /// ```
    pub fn new(fault_rate: f64, seed: u64) -> Self {
        Self { fault_rate, seed }
    }
}

/// What connections met, as it happened: a planned cut that falls past the end of its answer
/// counts as passed, and a stream cut planned for a plain answer cuts it where its body starts.
/// On HTTP/2 the counts are of calls: each answered call, or the one a cut was planned for.
///
/// ```
/// use a2a_test_kit::fault_proxy::FaultCounts;
///
/// let counts = FaultCounts::default();
/// assert_eq!((counts.passed, counts.faulted()), (0, 0));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FaultCounts {
    /// Forwarded untouched.
    pub passed: usize,
    /// Closed on accept.
    pub refused: usize,
    /// Cut once the request had gone through, before the answer.
    pub cut_before_response: usize,
    /// Cut part-way through the answer.
    pub cut_mid_response: usize,
    /// Cut part-way through an event stream.
    pub cut_mid_stream: usize,
}

impl FaultCounts {
    /// Connections that were broken.
    ///
    /// ```
    /// use a2a_test_kit::fault_proxy::{Fault, FaultProxy};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// # let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let proxy = FaultProxy::start(upstream.local_addr()?).await?;
    /// proxy.plan(&[Fault::Refuse]);
    /// let _ = tokio::net::TcpStream::connect(proxy.addr()).await?;
    /// while proxy.counts().faulted() == 0 {
    ///     tokio::task::yield_now().await;
    /// }
    /// assert_eq!(proxy.counts().refused, 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn faulted(&self) -> usize {
        self.refused + self.cut_before_response + self.cut_mid_response + self.cut_mid_stream
    }

    fn record(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Passed => self.passed += 1,
            Outcome::Refused => self.refused += 1,
            Outcome::CutBeforeResponse => self.cut_before_response += 1,
            Outcome::CutMidResponse => self.cut_mid_response += 1,
            Outcome::CutMidStream => self.cut_mid_stream += 1,
        }
    }
}

/// Decides each connection's fault.
struct Planner {
    plan: VecDeque<Fault>,
    chaos: Option<(f64, SplitMix64)>,
    counts: FaultCounts,
}

impl Planner {
    fn next(&mut self) -> Fault {
        self.plan.pop_front().unwrap_or_else(|| {
            let Some((rate, rng)) = &mut self.chaos else {
                return Fault::Pass;
            };
            if rng.fraction() >= *rate {
                return Fault::Pass;
            }
            match rng.below(4) {
                0 => Fault::Refuse,
                1 => Fault::CutBeforeResponse,
                // Somewhere in the status line, the headers or the body.
                2 => Fault::CutAfterBytes(1 + rng.below(400) as usize),
                _ => Fault::CutAfterEvents(1 + rng.below(2) as usize),
            }
        })
    }
}

/// A running proxy; it stops when dropped.
///
/// ```
/// use a2a_test_kit::fault_proxy::{Fault, FaultProxy};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let proxy = FaultProxy::start(upstream.local_addr()?).await?;
/// proxy.plan(&[Fault::CutBeforeResponse]);
/// // Point a client at `proxy.url()` instead of the server.
/// assert_ne!(proxy.addr(), upstream.local_addr()?);
/// # Ok(())
/// # }
/// ```
pub struct FaultProxy {
    addr: SocketAddr,
    planner: Arc<Mutex<Planner>>,
    connections: Arc<AtomicUsize>,
    accept_loop: tokio::task::JoinHandle<()>,
}

impl FaultProxy {
    /// Starts a proxy in front of `upstream` that passes every connection until told otherwise.
    ///
    /// ```
    /// use a2a_test_kit::fault_proxy::FaultProxy;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let proxy = FaultProxy::start(upstream.local_addr()?).await?;
    /// assert_eq!(proxy.connections(), 0);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn start(upstream: SocketAddr) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let planner = Arc::new(Mutex::new(Planner {
            plan: VecDeque::new(),
            chaos: None,
            counts: FaultCounts::default(),
        }));
        let connections = Arc::new(AtomicUsize::new(0));
        let (planner_for_loop, count) = (Arc::clone(&planner), Arc::clone(&connections));
        let accept_loop = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let fault = lock(&planner_for_loop).next();
                let planner = Arc::clone(&planner_for_loop);
                tokio::spawn(async move {
                    let outcomes = relay(client, upstream, fault, &planner).await;
                    let mut planner = lock(&planner);
                    for outcome in outcomes {
                        planner.counts.record(outcome);
                    }
                });
            }
        });
        Ok(Self {
            addr,
            planner,
            connections,
            accept_loop,
        })
    }

    /// From now on, connections with no planned fault draw one as `chaos` says.
    ///
    /// ```
    /// use a2a_test_kit::fault_proxy::{Chaos, Fault, FaultProxy};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// # let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let proxy = FaultProxy::start(upstream.local_addr()?).await?.with_chaos(Chaos::new(0.3, 1));
    /// proxy.plan(&[Fault::Pass]); // A planned fault still comes first.
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_chaos(self, chaos: Chaos) -> Self {
        lock(&self.planner).chaos = Some((chaos.fault_rate, SplitMix64(chaos.seed)));
        self
    }

    /// Plans faults for the next connections, in order.
    ///
    /// ```
    /// use a2a_test_kit::fault_proxy::{Fault, FaultProxy};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// # let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let proxy = FaultProxy::start(upstream.local_addr()?).await?;
    /// proxy.plan(&[Fault::CutAfterBytes(10)]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn plan(&self, faults: &[Fault]) {
        lock(&self.planner).plan.extend(faults.iter().copied());
    }

    /// The proxy's base URL.
    ///
    /// ```
    /// use a2a_test_kit::fault_proxy::FaultProxy;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// # let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let proxy = FaultProxy::start(upstream.local_addr()?).await?;
    /// assert_eq!(proxy.url(), format!("http://{}", proxy.addr()));
    /// # Ok(())
    /// # }
    /// ```
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Where it listens.
    ///
    /// ```
    /// use a2a_test_kit::fault_proxy::FaultProxy;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// # let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let proxy = FaultProxy::start(upstream.local_addr()?).await?;
    /// assert!(proxy.addr().ip().is_loopback());
    /// # Ok(())
    /// # }
    /// ```
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many connections it has accepted.
    ///
    /// ```
    /// use a2a_test_kit::fault_proxy::FaultProxy;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// # let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let proxy = FaultProxy::start(upstream.local_addr()?).await?;
    /// let _client = tokio::net::TcpStream::connect(proxy.addr()).await?;
    /// while proxy.connections() == 0 {
    ///     tokio::task::yield_now().await;
    /// }
    /// assert_eq!(proxy.connections(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// What the connections so far met (those still open are not counted yet).
    ///
    /// ```
    /// use a2a_test_kit::fault_proxy::FaultProxy;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// # let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let proxy = FaultProxy::start(upstream.local_addr()?).await?;
    /// let counts = proxy.counts();
    /// assert_eq!(counts.passed + counts.faulted(), proxy.connections());
    /// # Ok(())
    /// # }
    /// ```
    pub fn counts(&self) -> FaultCounts {
        lock(&self.planner).counts
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.accept_loop.abort();
    }
}

fn lock(planner: &Mutex<Planner>) -> std::sync::MutexGuard<'_, Planner> {
    planner.lock().unwrap_or_else(|e| e.into_inner())
}

/// Relays one connection under `fault`; returns what its answer (or, on HTTP/2, each of its
/// calls) met.
async fn relay(
    client: TcpStream,
    upstream: SocketAddr,
    fault: Fault,
    planner: &Mutex<Planner>,
) -> Vec<Outcome> {
    if fault == Fault::Refuse {
        return vec![Outcome::Refused];
    }
    let Ok(server) = TcpStream::connect(upstream).await else {
        return vec![Outcome::Refused];
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    // The client's first bytes tell HTTP/2 (its preface) from HTTP/1.1.
    let mut opening = Vec::new();
    let mut buffer = vec![0u8; 16 * 1024];
    while opening.len() < 4 {
        match client_read.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => opening.extend_from_slice(&buffer[..n]),
        }
    }
    let http2 =
        opening.starts_with(&http2::PREFACE_START[..opening.len().min(4)]) && !opening.is_empty();
    if server_write.write_all(&opening).await.is_err() {
        return vec![Outcome::Passed];
    }
    let requests = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut client_read, &mut server_write).await;
    });
    let mut cut = if http2 {
        Answer::Http2(Http2Cut::new(fault))
    } else {
        Answer::Http1(Cut::new(fault))
    };
    let mut broken = None;
    let mut forwarded = Vec::new();
    loop {
        let n = match server_read.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let (bytes, outcome) = match &mut cut {
            Answer::Http1(cut) => {
                let (forward, outcome) = cut.admit(&buffer[..n]);
                (&buffer[..forward], outcome)
            }
            Answer::Http2(cut) => {
                forwarded.clear();
                let outcome = cut.admit(&buffer[..n], &mut forwarded, &mut || lock(planner).next());
                (&forwarded[..], outcome)
            }
        };
        if client_write.write_all(bytes).await.is_err() {
            break;
        }
        if outcome.is_some() {
            broken = outcome;
            break;
        }
    }
    let _ = client_write.flush().await;
    requests.abort();
    match cut {
        Answer::Http1(_) => vec![broken.unwrap_or(Outcome::Passed)],
        Answer::Http2(cut) => std::iter::repeat_n(Outcome::Passed, cut.passed)
            .chain(broken)
            .collect(),
    }
}

/// How a connection's answers are read.
enum Answer {
    Http1(Cut),
    Http2(Http2Cut),
}

/// What a connection actually met (a planned cut past the end of the answer passes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Passed,
    Refused,
    CutBeforeResponse,
    CutMidResponse,
    CutMidStream,
}

/// Tracks how much of the answer a fault lets through.
struct Cut {
    fault: Fault,
    bytes_seen: usize,
    events_seen: usize,
    events: EventEnds,
}

impl Cut {
    fn new(fault: Fault) -> Self {
        Self {
            fault,
            bytes_seen: 0,
            events_seen: 0,
            events: EventEnds::new(),
        }
    }

    /// How many bytes of `chunk` to forward, and the break made after them, if any.
    fn admit(&mut self, chunk: &[u8]) -> (usize, Option<Outcome>) {
        match self.fault {
            Fault::Pass | Fault::Refuse => (chunk.len(), None),
            Fault::CutBeforeResponse => (0, Some(Outcome::CutBeforeResponse)),
            Fault::CutAfterBytes(limit) => {
                let left = limit.saturating_sub(self.bytes_seen);
                self.bytes_seen += chunk.len();
                if chunk.len() >= left {
                    (left, Some(Outcome::CutMidResponse))
                } else {
                    (chunk.len(), None)
                }
            }
            Fault::CutAfterEvents(limit) => {
                for (i, &byte) in chunk.iter().enumerate() {
                    match self.events.push(byte) {
                        Byte::Other => {}
                        // Not a stream: cut where its body would start.
                        Byte::NotAStream => return (i + 1, Some(Outcome::CutMidResponse)),
                        end @ (Byte::EventEnd | Byte::EventEndedBefore) => {
                            self.events_seen += 1;
                            if self.events_seen == limit {
                                let forward = if end == Byte::EventEnd { i + 1 } else { i };
                                return (forward, Some(Outcome::CutMidStream));
                            }
                        }
                    }
                }
                (chunk.len(), None)
            }
        }
    }
}

/// A small seeded generator: the draw must repeat for a seed, and need not be unpredictable.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn fraction(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_byte_limit_spanning_chunks_forwards_exactly_that_many_bytes() {
        let mut cut = Cut::new(Fault::CutAfterBytes(10));
        assert_eq!(cut.admit(b"HTTP/1"), (6, None));
        assert_eq!(
            cut.admit(b".1 200 OK\r\n"),
            (4, Some(Outcome::CutMidResponse))
        );
    }

    #[test]
    fn an_event_limit_counts_blank_lines_after_the_headers_only() {
        let mut cut = Cut::new(Fault::CutAfterEvents(2));
        let answer =
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\ndata: 1\n\ndata: 2\n\ndata: 3\n\n";
        let second_event_end = answer.len() - b"data: 3\n\n".len();
        // Fed a byte at a time, so no event boundary depends on a chunk boundary.
        let mut forwarded = 0;
        for byte in answer.chunks(1) {
            let (n, broken) = cut.admit(byte);
            forwarded += n;
            if let Some(broken) = broken {
                assert_eq!(broken, Outcome::CutMidStream);
                break;
            }
        }
        assert_eq!(forwarded, second_event_end);
    }

    #[test]
    fn a_stream_cut_planned_for_a_plain_answer_cuts_where_its_body_starts() {
        let mut cut = Cut::new(Fault::CutAfterEvents(1));
        let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}";
        assert_eq!(
            cut.admit(answer),
            (answer.len() - 2, Some(Outcome::CutMidResponse))
        );
    }

    #[test]
    fn chaos_fails_about_the_share_it_is_given_and_repeats_for_a_seed() {
        let draw = |seed| {
            let mut planner = Planner {
                plan: VecDeque::new(),
                chaos: Some((0.3, SplitMix64(seed))),
                counts: FaultCounts::default(),
            };
            (0..10_000).map(|_| planner.next()).collect::<Vec<Fault>>()
        };
        let faults = draw(7);
        assert_eq!(faults, draw(7));
        let broken = faults.iter().filter(|f| **f != Fault::Pass).count();
        assert!((2_700..3_300).contains(&broken), "{broken}");
        for kind in [Fault::Refuse, Fault::CutBeforeResponse] {
            assert!(faults.contains(&kind), "{kind:?} is drawn");
        }
        assert!(faults.iter().any(|f| matches!(f, Fault::CutAfterBytes(_))));
        assert!(faults.iter().any(|f| matches!(f, Fault::CutAfterEvents(_))));
    }
}
