//! Accepting connections within limits: at most [`ServerConfig::max_connections`] at once,
//! and of those at most a share per network; a deadline for every request's headers that
//! also closes a connection left idle (HTTP/2 ones too: PINGs are not work), and a shorter
//! one for connections accepted while half the slots are taken; when every slot is taken,
//! idle connections make room first. So a flood of idle or trickling sockets is shed in
//! seconds instead of starving everyone else, and streams over HTTP/1.1, which hold their
//! connection, take only part of the slots.

mod activity;
pub(crate) mod large_bodies;
#[cfg(feature = "grpc")]
mod pacing;
mod stream_slots;
mod table;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use axum::response::IntoResponse as _;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

use crate::config::ServerConfig;
pub(crate) use stream_slots::StreamSlots;
use table::{Seat, Table};

/// How long the accept loop pauses after an error such as running out of file descriptors,
/// so it does not spin while the condition lasts.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// While every slot is taken and none is idle, how often the accept loop looks again for a
/// connection gone idle to make room.
const FULL_RECHECK: Duration = Duration::from_millis(100);

/// Serves `router` on `listener` until `stop` is cancelled, then waits for the connections
/// still open to finish (the caller bounds that wait).
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    config: &ServerConfig,
    stop: CancellationToken,
) -> std::io::Result<()> {
    let capacity = config.max_connections.max(1);
    let slots = Arc::new(Semaphore::new(capacity));
    let crowded_at = capacity / 2;
    let table = Table::new(
        config.connections_per_network(),
        config.trusted_proxies.clone(),
    );
    let shares = Shares {
        streams: StreamSlots::new(config.http1_streams()),
        unwritten_answers: config.max_unwritten_answer_bytes,
        large_bodies: large_bodies::Budget::new(config.max_large_body_bytes, config.max_body_bytes),
    };
    #[cfg(feature = "tls")]
    let tls = config.tls.as_ref().map(crate::tls::TlsConfig::acceptor);
    loop {
        let (tcp, peer) = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::debug!(%error, "could not accept a connection");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
        };
        let Some(seat) = table.admit(peer.ip()) else {
            tracing::debug!(%peer, "refused a connection: its network holds its share, all busy");
            continue;
        };
        let Some(permit) = slot(&slots, &table, &stop).await else {
            break;
        };
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY");
        }
        let in_use = capacity.saturating_sub(slots.available_permits());
        let limits = Limits {
            header_timeout: if in_use >= crowded_at {
                config.crowded_header_timeout
            } else {
                config.header_timeout
            },
            grace: config.crowded_header_timeout,
        };
        let stop = stop.clone();
        #[cfg(feature = "tls")]
        if let Some(tls) = &tls {
            let (acceptor, router, shares) = (tls.clone(), router.clone(), shares.clone());
            tokio::spawn(async move {
                // The handshake counts against the same deadline as the headers.
                let handshake = tokio::time::timeout(limits.header_timeout, acceptor.accept(tcp));
                let stream = tokio::select! {
                    () = seat.activity.evicted() => return,
                    handshake = handshake => match handshake {
                        Ok(Ok(stream)) => stream,
                        Ok(Err(error)) => {
                            tracing::debug!(%error, %peer, "TLS handshake failed");
                            return;
                        }
                        Err(_) => return,
                    },
                };
                let certificate = stream
                    .get_ref()
                    .1
                    .peer_certificates()
                    .and_then(|chain| chain.first())
                    .and_then(|der| crate::tls::ClientCertificate::parse(der));
                let service = service(router, peer, certificate, &seat, shares);
                run(stream, service, seat, limits, stop).await;
                drop(permit);
            });
            continue;
        }
        let service = service(router.clone(), peer, None, &seat, shares.clone());
        tokio::spawn(async move {
            run(tcp, service, seat, limits, stop).await;
            drop(permit);
        });
    }
    drop(listener);
    // Every connection holds a slot until it ends: all slots back means all ended.
    let _ = slots.acquire_many_owned(capacity_u32(capacity)).await;
    Ok(())
}

/// A connection slot: a free one, else one an idle connection makes by closing (the one open
/// longest); `None` once the server stops.
async fn slot(
    slots: &Arc<Semaphore>,
    table: &Table,
    stop: &CancellationToken,
) -> Option<OwnedSemaphorePermit> {
    loop {
        if let Ok(permit) = Arc::clone(slots).try_acquire_owned() {
            return Some(permit);
        }
        table.evict_idle();
        tokio::select! {
            () = stop.cancelled() => return None,
            permit = Arc::clone(slots).acquire_owned() => return permit.ok(),
            () = tokio::time::sleep(FULL_RECHECK) => {}
        }
    }
}

/// `hint` with `bytes` more: a body's hint, with what a wrapper holds back from it.
fn size_hint_plus(hint: http_body::SizeHint, bytes: usize) -> http_body::SizeHint {
    let bytes = bytes as u64;
    let mut plus = http_body::SizeHint::new();
    if let Some(upper) = hint.upper() {
        plus.set_upper(upper + bytes);
    }
    plus.set_lower(hint.lower() + bytes);
    plus
}

fn capacity_u32(capacity: usize) -> u32 {
    u32::try_from(capacity).unwrap_or(u32::MAX)
}

/// What all connections share: the slots of streams over HTTP/1.1, the budget for large
/// request bodies, and each connection's budget of unwritten answers.
#[derive(Debug, Clone)]
struct Shares {
    streams: StreamSlots,
    unwritten_answers: usize,
    large_bodies: large_bodies::Budget,
}

/// One connection's deadlines.
#[derive(Debug, Clone, Copy)]
struct Limits {
    /// For a request's headers, and for the connection to sit idle.
    header_timeout: Duration,
    /// For a connection asked to close (idle, or making room) to finish, once it has
    /// nothing open.
    grace: Duration,
}

/// How connections are spoken: HTTP/1.1, and with the `grpc` feature HTTP/2 as well (gRPC
/// needs it; a client that starts with the HTTP/2 preface gets HTTP/2, any other HTTP/1.1).
#[cfg(not(feature = "grpc"))]
type Http = hyper::server::conn::http1::Builder;
#[cfg(feature = "grpc")]
type Http = hyper_util::server::conn::auto::Builder<pacing::StreamExecutor>;

/// The connection settings: `header_timeout` bounds every HTTP/1.1 request's headers, and so
/// an idle connection too.
#[cfg(not(feature = "grpc"))]
fn http(header_timeout: Duration) -> Http {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .keep_alive(true);
    http
}

#[cfg(feature = "grpc")]
fn http(header_timeout: Duration, pacing: Arc<pacing::Pacing>) -> Http {
    let mut http =
        hyper_util::server::conn::auto::Builder::new(pacing::StreamExecutor::new(pacing));
    http.http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .keep_alive(true);
    // An HTTP/2 connection is kept while it answers pings; one that stops is closed. Answering
    // pings does not keep an idle one open: see `run`.
    http.http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(Duration::from_secs(30)))
        .keep_alive_timeout(header_timeout)
        .max_concurrent_streams(256);
    http
}

/// Why a connection is being closed.
enum Closing {
    /// The server is shutting down: what is open may finish, within the server's drain.
    Shutdown,
    /// Idle too long, or making room: it closes within its grace once nothing is open.
    Idle,
}

/// Serves one connection until it ends; until shutdown lets it finish what it is doing; or
/// until it has had no open request for its header timeout, or is asked to make room, and
/// then closes it (HTTP/2: GOAWAY), cut off if it stays idle its grace without closing.
async fn run<I, S>(io: I, service: S, seat: Seat, limits: Limits, stop: CancellationToken)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: hyper::service::Service<
            http::Request<Incoming>,
            Response = axum::response::Response,
            Error = Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    #[cfg(feature = "grpc")]
    let pacing = Arc::<pacing::Pacing>::default();
    #[cfg(feature = "grpc")]
    let (http, io) = (
        http(limits.header_timeout, Arc::clone(&pacing)),
        pacing::Written::new(preface::Deadline::new(io, limits.header_timeout), pacing),
    );
    #[cfg(not(feature = "grpc"))]
    let http = http(limits.header_timeout);
    let connection = http.serve_connection(TokioIo::new(io), service);
    tokio::pin!(connection);
    let activity = &seat.activity;
    let closing = tokio::select! {
        ended = connection.as_mut() => {
            activity.end();
            if let Err(error) = ended {
                tracing::debug!(%error, "connection ended with an error");
            }
            return;
        }
        () = stop.cancelled() => Closing::Shutdown,
        () = activity.evicted() => Closing::Idle,
        () = activity.idle_for(limits.header_timeout) => Closing::Idle,
    };
    connection.as_mut().graceful_shutdown();
    let ended = match closing {
        Closing::Shutdown => Some(connection.await),
        // A request that slipped in before the close is let finish; a connection that stays
        // idle and does not close is cut off.
        Closing::Idle => tokio::select! {
            ended = connection.as_mut() => Some(ended),
            () = activity.idle_for(limits.grace) => None,
        },
    };
    activity.end();
    if let Some(Err(error)) = ended {
        tracing::debug!(%error, "connection ended with an error");
    }
}

/// Without TLS, there is never a client certificate.
#[cfg(not(feature = "tls"))]
#[derive(Clone)]
enum ClientCertificate {}
#[cfg(feature = "tls")]
use crate::tls::ClientCertificate;

/// The router as hyper calls it, each request carrying the peer's address (axum's
/// [`ConnectInfo`], which per-address limits read), the client certificate the TLS handshake
/// verified, if any, and over HTTP/1.1 the stream slots; each request counted open on its
/// connection until its answer is written, and run only while the connection's unwritten
/// answers are within their budget, its body drawing on the server's budget for large ones.
fn service(
    router: Router,
    peer: SocketAddr,
    certificate: Option<ClientCertificate>,
    seat: &Seat,
    shares: Shares,
) -> impl hyper::service::Service<
    http::Request<Incoming>,
    Response = axum::response::Response,
    Error = Infallible,
    Future = impl Send + 'static,
> + Clone
+ Send
+ 'static {
    let activity = Arc::clone(&seat.activity);
    hyper::service::service_fn(move |mut request: http::Request<Incoming>| {
        let open = activity.open();
        let activity = Arc::clone(&activity);
        let extensions = request.extensions_mut();
        extensions.insert(ConnectInfo(peer));
        if let Some(certificate) = &certificate {
            extensions.insert(certificate.clone());
        }
        if request.version() < http::Version::HTTP_2 {
            request.extensions_mut().insert(shares.streams.clone());
        }
        let (router, unwritten_answers) = (router.clone(), shares.unwritten_answers);
        let drawn = large_bodies::Drawn::default();
        let request = request.map(|body| {
            axum::body::Body::new(large_bodies::Metered::new(
                body,
                &shares.large_bodies,
                drawn.clone(),
            ))
        });
        async move {
            // A peer not reading what it was answered gets nothing more done for it until
            // it reads; dropped here if it resets the stream or goes.
            if !activity.room_for_answers(unwritten_answers).await {
                return Ok(http::StatusCode::SERVICE_UNAVAILABLE.into_response());
            }
            let answered = router.oneshot(request).await;
            answered.map(|response| {
                // A stream's budget goes back when it starts: what it keeps is the task's.
                if http_body::Body::size_hint(response.body())
                    .exact()
                    .is_none()
                {
                    drawn.release();
                }
                response.map(|body| activity::Counted::body(body, open, drawn))
            })
        }
    })
}

/// With HTTP/2 served too, a connection's protocol is told by its first bytes (the HTTP/2
/// preface, or anything else for HTTP/1.1), before either protocol's own deadlines start: so
/// those bytes get the header deadline here, or an idle or trickling socket would hold its
/// slot for ever.
#[cfg(feature = "grpc")]
mod preface {
    use std::future::Future;
    use std::io;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use std::time::Duration;

    use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

    /// The length of the HTTP/2 client preface, which is what telling the protocols apart
    /// reads at most.
    const PREFACE_LEN: usize = 24;

    pub(super) struct Deadline<I> {
        io: I,
        /// Bytes still to come under the deadline.
        left: usize,
        deadline: Pin<Box<tokio::time::Sleep>>,
        /// Whether the connection opened with the HTTP/2 preface.
        http2: bool,
    }

    impl<I> Deadline<I> {
        pub(super) fn new(io: I, limit: Duration) -> Self {
            Self {
                io,
                left: PREFACE_LEN,
                deadline: Box::pin(tokio::time::sleep(limit)),
                http2: false,
            }
        }
    }

    impl<I: AsyncRead + Unpin> AsyncRead for Deadline<I> {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let this = self.get_mut();
            if this.left == 0 {
                return Pin::new(&mut this.io).poll_read(cx, buf);
            }
            let before = buf.filled().len();
            match Pin::new(&mut this.io).poll_read(cx, buf) {
                Poll::Ready(result) => {
                    let read = buf.filled().len() - before;
                    if this.left == PREFACE_LEN && read > 0 {
                        let first = &buf.filled()[before..];
                        let mark = &b"PRI "[..first.len().min(4)];
                        this.http2 = first.starts_with(mark);
                    }
                    // End of stream (nothing read) ends the deadline too.
                    this.left = if read == 0 {
                        0
                    } else {
                        this.left.saturating_sub(read)
                    };
                    Poll::Ready(result)
                }
                Poll::Pending => match this.deadline.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the connection did not start a request in time",
                    ))),
                    Poll::Pending => Poll::Pending,
                },
            }
        }
    }

    impl<I: AsyncWrite + Unpin> AsyncWrite for Deadline<I> {
        fn poll_write(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
        }

        fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.get_mut().io).poll_flush(cx)
        }

        fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
        }

        fn poll_write_vectored(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            bufs: &[io::IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
        }

        /// Not on HTTP/2: there `h2` writes a DATA frame over 256 bytes from its own buffer
        /// and flushes before queuing another frame, so a gRPC answer (headers and message,
        /// then trailers) takes two writes; told the socket is not vectored, it copies frames
        /// up to 1 KiB into one buffer, and a typical answer goes out in one write. HTTP/1.1
        /// keeps vectored writes.
        fn is_write_vectored(&self) -> bool {
            !self.http2 && self.io.is_write_vectored()
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        /// What a connection opening with `first` reports about vectored writes.
        async fn vectored_after(first: &[u8]) -> bool {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let mut client = tokio::net::TcpStream::connect(listener.local_addr().expect("addr"))
                .await
                .expect("connect");
            let (server, _) = listener.accept().await.expect("accept");
            client.write_all(first).await.expect("write");
            let mut io = Deadline::new(server, Duration::from_secs(5));
            assert!(io.is_write_vectored(), "a socket writes vectored");
            let mut buffer = [0u8; 64];
            let read = io.read(&mut buffer).await.expect("read");
            assert!(read > 0);
            io.is_write_vectored()
        }

        #[tokio::test]
        async fn http2_connections_write_one_buffer_and_http1_ones_stay_vectored() {
            assert!(!vectored_after(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await);
            assert!(vectored_after(b"POST / HTTP/1.1\r\nHost: a\r\n\r\n").await);
        }
    }
}
