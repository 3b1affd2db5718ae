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
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use futures::ready;
use http_body::{Body as _, Frame, SizeHint};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The most of an answer handed to the connection at once: the rest stays in the answer, so
/// it counts as unwritten until the peer's window lets it go.
const CHUNK: usize = 64 * 1024;

/// One connection's open requests, its answers' unwritten bytes, and whether the server asked
/// it to make room.
#[derive(Debug)]
pub(super) struct Activity {
    open: watch::Sender<usize>,
    unwritten: watch::Sender<usize>,
    evicted: CancellationToken,
    ended: CancellationToken,
}

impl Activity {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Self {
            open: watch::Sender::new(0),
            unwritten: watch::Sender::new(0),
            evicted: CancellationToken::new(),
            ended: CancellationToken::new(),
        })
    }

    /// Resolves once the connection's answers not yet written are within `budget` bytes (at
    /// once, nearly always): true, or false if the connection ended meanwhile.
    pub(super) async fn room_for_answers(&self, budget: usize) -> bool {
        if *self.unwritten.borrow() <= budget {
            return true;
        }
        let mut unwritten = self.unwritten.subscribe();
        // The sender lives as long as `self`, so this ends only when there is room.
        let _ = unwritten.wait_for(|bytes| *bytes <= budget).await;
        // Room comes too when the peer goes and its answers are dropped: a turn first lets
        // the connection notice (HTTP/2 drops a request whose stream was reset while it
        // waits), so nothing is made for a peer that is gone.
        tokio::task::yield_now().await;
        !self.ended.is_cancelled()
    }

    /// Notes that the connection ended.
    pub(super) fn end(&self) {
        self.ended.cancel();
    }

    /// Whether no request of the connection is open.
    pub(super) fn is_idle(&self) -> bool {
        *self.open.borrow() == 0
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
        self.open.send_modify(|open| *open += 1);
        Open(Arc::clone(self))
    }

    /// Resolves once no request has been open for `limit` in a row.
    pub(super) async fn idle_for(&self, limit: Duration) {
        let mut open = self.open.subscribe();
        loop {
            let idle = *open.borrow_and_update() == 0;
            if idle {
                tokio::select! {
                    () = tokio::time::sleep(limit) => return,
                    _ = open.changed() => {}
                }
            } else if open.changed().await.is_err() {
                return;
            }
        }
    }
}

/// An open request of a connection.
#[derive(Debug)]
pub(super) struct Open(Arc<Activity>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0
            .open
            .send_modify(|open| *open = open.saturating_sub(1));
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
            open.0.unwritten.send_modify(|bytes| *bytes += counted);
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
            self.open
                .0
                .unwritten
                .send_modify(|unwritten| *unwritten = unwritten.saturating_sub(bytes));
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
        assert_eq!(*activity.unwritten.borrow(), answer.len());
        let first = body.frame().await.expect("a frame").expect("data");
        let first = first.into_data().expect("data");
        assert_eq!(first.len(), CHUNK);
        assert_eq!(*activity.unwritten.borrow(), answer.len() - CHUNK);
        assert_eq!(
            body.size_hint().exact(),
            Some((answer.len() - CHUNK) as u64)
        );
        let mut all = first.to_vec();
        while let Some(frame) = body.frame().await {
            all.extend_from_slice(&frame.expect("data").into_data().expect("data"));
        }
        assert_eq!(all, answer.to_vec());
        assert_eq!(*activity.unwritten.borrow(), 0);
        drop(body);
        // Dropped half written, an answer gives its count back.
        let mut dropped = Counted::body(
            Body::from(answer.clone()),
            activity.open(),
            Default::default(),
        );
        let _ = dropped.frame().await;
        drop(dropped);
        assert_eq!(*activity.unwritten.borrow(), 0);
        assert!(activity.is_idle());
    }
}
