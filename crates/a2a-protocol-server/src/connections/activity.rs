//! What one connection is doing: how many of its requests are open (an answer still being
//! written counts, a stream until it ends). A connection with none open is idle whatever else
//! it sends: HTTP/2 PINGs and SETTINGS are not work, so a peer that only answers them is
//! closed like any other idle connection, and is the first to go when the server is full.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use http_body::{Frame, SizeHint};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// One connection's open requests, and whether the server asked it to make room.
#[derive(Debug)]
pub(super) struct Activity {
    open: watch::Sender<usize>,
    evicted: CancellationToken,
}

impl Activity {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(Self {
            open: watch::Sender::new(0),
            evicted: CancellationToken::new(),
        })
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

/// An answer's body that keeps its request open until it is written or dropped.
pub(super) struct Counted {
    body: Body,
    _open: Open,
}

impl Counted {
    pub(super) fn body(body: Body, open: Open) -> Body {
        Body::new(Self { body, _open: open })
    }
}

impl http_body::Body for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
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
}
