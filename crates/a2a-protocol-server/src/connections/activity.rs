//! What one connection is doing: how many of its requests are open (an answer still being
//! written counts, a stream until it ends), and how many bytes of its answers wait to be
//! written. A connection with no request open is idle whatever else it sends: HTTP/2 PINGs
//! and SETTINGS are not work, so a peer that only answers them is closed like any other idle
//! connection, and is the first to go when the server is full. A connection whose peer does
//! not read its answers (an HTTP/2 window left at zero) gets no more work done for it until it
//! does: its next requests wait before they run, so many streams of one large read cost one
//! budget of memory, not one answer each.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use futures::ready;
use http_body::{Body as _, Frame, SizeHint};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The most of an answer handed to the connection at once: the rest stays in the answer, so
/// it counts as unwritten until the peer's window lets it go.
const CHUNK: usize = 64 * 1024;

/// One connection's open requests, its answers' unwritten bytes, and whether the server asked
/// it to make room. Requests only touch counters: nothing here wakes the connection's task,
/// whose idle deadline is a timer that looks at the counters when it fires.
#[derive(Debug)]
pub(super) struct Activity {
    /// When the connection was accepted: `idle_since` counts from it.
    accepted: Instant,
    open: AtomicUsize,
    /// When the last open request ended, in microseconds since `accepted`.
    idle_since: AtomicU64,
    unwritten: AtomicUsize,
    /// Requests waiting for `unwritten` to come within budget, woken by `room`.
    waiting: AtomicUsize,
    room: Notify,
    evicted: CancellationToken,
    ended: CancellationToken,
}

impl Activity {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Self {
            accepted: Instant::now(),
            open: AtomicUsize::new(0),
            idle_since: AtomicU64::new(0),
            unwritten: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            room: Notify::new(),
            evicted: CancellationToken::new(),
            ended: CancellationToken::new(),
        })
    }

    /// Resolves once the connection's answers not yet written are within `budget` bytes (at
    /// once, nearly always): true, or false if the connection ended meanwhile.
    pub(super) async fn room_for_answers(&self, budget: usize) -> bool {
        if self.unwritten.load(Ordering::Acquire) <= budget {
            return true;
        }
        self.waiting.fetch_add(1, Ordering::AcqRel);
        let _waited = Waited(&self.waiting);
        loop {
            let room = self.room.notified();
            tokio::pin!(room);
            // Registered before the count is read again, so a change in between still wakes.
            room.as_mut().enable();
            if self.unwritten.load(Ordering::Acquire) <= budget {
                break;
            }
            room.await;
        }
        // Room comes too when the peer goes and its answers are dropped: a turn first lets
        // the connection notice (HTTP/2 drops a request whose stream was reset while it
        // waits), so nothing is made for a peer that is gone.
        tokio::task::yield_now().await;
        !self.ended.is_cancelled()
    }

    fn add_unwritten(&self, bytes: usize) {
        self.unwritten.fetch_add(bytes, Ordering::AcqRel);
    }

    fn sub_unwritten(&self, bytes: usize) {
        self.unwritten.fetch_sub(bytes, Ordering::AcqRel);
        if self.waiting.load(Ordering::Acquire) > 0 {
            self.room.notify_waiters();
        }
    }

    /// Notes that the connection ended.
    pub(super) fn end(&self) {
        self.ended.cancel();
    }

    /// Whether no request of the connection is open.
    pub(super) fn is_idle(&self) -> bool {
        self.open.load(Ordering::Acquire) == 0
    }

    /// Asks the connection to close (it finishes what it has open first).
    pub(super) fn evict(&self) {
        self.evicted.cancel();
    }

    pub(super) fn is_evicted(&self) -> bool {
        self.evicted.is_cancelled()
    }

    /// Resolves once the connection is asked to make room.
    pub(super) async fn evicted(&self) {
        self.evicted.cancelled().await;
    }

    /// A request opened; it stays open until what is returned is dropped.
    pub(super) fn open(self: &Arc<Self>) -> Open {
        self.open.fetch_add(1, Ordering::AcqRel);
        Open(Arc::clone(self))
    }

    /// Resolves once no request has been open for `limit` in a row. A timer that, when it
    /// fires, sleeps on until `limit` after the last request ended (or `limit` more while
    /// one is open).
    pub(super) async fn idle_for(&self, limit: Duration) {
        loop {
            let wait = if self.is_idle() {
                let since =
                    self.accepted + Duration::from_micros(self.idle_since.load(Ordering::Acquire));
                let until = since + limit;
                let now = Instant::now();
                if now >= until {
                    return;
                }
                until - now
            } else {
                limit
            };
            tokio::time::sleep(wait).await;
        }
    }
}

/// Counts a waiting request out again, however its wait ends.
struct Waited<'a>(&'a AtomicUsize);

impl Drop for Waited<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// An open request of a connection.
#[derive(Debug)]
pub(super) struct Open(Arc<Activity>);

impl Drop for Open {
    fn drop(&mut self) {
        let activity = &self.0;
        // Every close marks its time before it counts itself out, so a connection seen idle
        // never carries the time of an earlier idleness.
        let micros = u64::try_from(activity.accepted.elapsed().as_micros()).unwrap_or(u64::MAX);
        activity.idle_since.fetch_max(micros, Ordering::AcqRel);
        activity.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// An answer's body that keeps its request open until it is written or dropped, counts its
/// bytes as unwritten until they are handed to the connection, and hands them over at most
/// [`CHUNK`] at a time.
pub(super) struct Counted {
    body: Body,
    /// What is left of the last frame, past the chunk handed over.
    rest: Option<Bytes>,
    /// Bytes still counted in the connection's unwritten total.
    counted: usize,
    open: Open,
    /// What the request drew on the server's budget for large bodies, given back with it.
    drawn: super::large_bodies::Drawn,
}

impl Counted {
    pub(super) fn body(body: Body, open: Open, drawn: super::large_bodies::Drawn) -> Body {
        let counted = body
            .size_hint()
            .exact()
            .and_then(|size| usize::try_from(size).ok())
            .unwrap_or(0);
        if counted > 0 {
            open.0.add_unwritten(counted);
        }
        Body::new(Self {
            body,
            rest: None,
            counted,
            open,
            drawn,
        })
    }

    /// `data`, at most a chunk of it, the rest kept for the next poll.
    fn hand_over(&mut self, mut data: Bytes) -> Bytes {
        if data.len() > CHUNK {
            self.rest = Some(data.split_off(CHUNK));
        }
        self.written(data.len());
        data
    }

    fn written(&mut self, bytes: usize) {
        let bytes = bytes.min(self.counted);
        if bytes > 0 {
            self.counted -= bytes;
            self.open.0.sub_unwritten(bytes);
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.written(self.counted);
        self.drawn.release();
    }
}

impl http_body::Body for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        if let Some(rest) = this.rest.take() {
            return Poll::Ready(Some(Ok(Frame::data(this.hand_over(rest)))));
        }
        let polled = ready!(Pin::new(&mut this.body).poll_frame(cx));
        Poll::Ready(polled.map(|frame| {
            frame.map(|frame| match frame.into_data() {
                Ok(data) => Frame::data(this.hand_over(data)),
                Err(other) => other,
            })
        }))
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_none() && self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let rest = self.rest.as_ref().map_or(0, Bytes::len);
        super::size_hint_plus(self.body.size_hint(), rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn idle_counts_from_when_the_last_request_ends() {
        let activity = Activity::new();
        let open = activity.open();
        let idle = tokio::spawn({
            let activity = Arc::clone(&activity);
            async move { activity.idle_for(Duration::from_secs(30)).await }
        });
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(!idle.is_finished(), "a request is open");
        drop(open);
        tokio::time::sleep(Duration::from_secs(20)).await;
        let again = activity.open();
        drop(again);
        tokio::time::sleep(Duration::from_secs(20)).await;
        assert!(
            !idle.is_finished(),
            "the clock restarted when the last request ended"
        );
        tokio::time::sleep(Duration::from_secs(11)).await;
        assert!(idle.is_finished());
        assert!(activity.is_idle());
    }

    #[tokio::test]
    async fn an_answer_counts_as_unwritten_until_handed_over_a_chunk_at_a_time() {
        use http_body_util::BodyExt as _;
        let activity = Activity::new();
        let answer = Bytes::from(vec![7u8; 3 * CHUNK + 10]);
        let mut body = Counted::body(
            Body::from(answer.clone()),
            activity.open(),
            Default::default(),
        );
        assert_eq!(activity.unwritten.load(Ordering::Acquire), answer.len());
        let first = body.frame().await.expect("a frame").expect("data");
        let first = first.into_data().expect("data");
        assert_eq!(first.len(), CHUNK);
        assert_eq!(
            activity.unwritten.load(Ordering::Acquire),
            answer.len() - CHUNK
        );
        assert_eq!(
            body.size_hint().exact(),
            Some((answer.len() - CHUNK) as u64)
        );
        let mut all = first.to_vec();
        while let Some(frame) = body.frame().await {
            all.extend_from_slice(&frame.expect("data").into_data().expect("data"));
        }
        assert_eq!(all, answer.to_vec());
        assert_eq!(activity.unwritten.load(Ordering::Acquire), 0);
        drop(body);
        // Dropped half written, an answer gives its count back.
        let mut dropped = Counted::body(
            Body::from(answer.clone()),
            activity.open(),
            Default::default(),
        );
        let _ = dropped.frame().await;
        drop(dropped);
        assert_eq!(activity.unwritten.load(Ordering::Acquire), 0);
        assert!(activity.is_idle());
    }
}
