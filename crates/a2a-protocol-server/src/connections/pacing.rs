//! A batch of answers on one HTTP/2 connection leaves in two groups, not all after the last.
//!
//! hyper runs each HTTP/2 stream as a task of its own, and only the connection's task
//! writes. When many calls arrive in one read (a gRPC client multiplexing its callers on one
//! connection), the connection's task, woken by the first answer, is queued behind every
//! other stream of that read: the first answer waits for the last, all leave in one write,
//! the client answers them all at once, and the server idles while the next batch is on its
//! way. Here, once half the connection's outstanding calls have answered unwritten (at least
//! [`MIN_GROUP`]), a stream about to run steps back once, behind the connection's task, and
//! the connection, having written, queues itself behind the streams that stepped back: the
//! answers of a batch leave in two groups, and the client works on one while the server works
//! on the other. Writing each answer alone would cost a write per call, and a fixed group
//! size would make the streams of a large batch step back once per group; a stream steps
//! back at most once in its life, so a connection that cannot write (a peer not reading)
//! never makes its streams spin.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The fewest answers worth a write of their own before the rest of their batch. Smaller
/// groups cost more writes than the overlap wins: in the load benchmark (one connection, 16
/// calls in flight) groups of 4 made no gain, and halving every batch down to 4 lost keyed
/// throughput; see docs/grpc.md.
const MIN_GROUP: usize = 8;

/// What one connection's streams and its writer know of each other.
#[derive(Debug, Default)]
pub(super) struct Pacing {
    /// Streams answered since the connection last wrote.
    unwritten: AtomicUsize,
    /// Streams started and not yet answered (or dropped).
    running: AtomicUsize,
    /// Whether a stream stepped back since the last write.
    stepped_back: AtomicBool,
}

impl Pacing {
    fn started(&self) {
        self.running.fetch_add(1, Ordering::Relaxed);
    }

    fn answered(&self) {
        self.unwritten.fetch_add(1, Ordering::Relaxed);
        self.ended();
    }

    fn ended(&self) {
        self.running.fetch_sub(1, Ordering::Relaxed);
    }

    /// Notes a write; true if streams stepped back for it, so the connection should queue
    /// itself behind them.
    fn wrote(&self) -> bool {
        self.unwritten.store(0, Ordering::Relaxed);
        self.stepped_back.swap(false, Ordering::Relaxed)
    }

    /// Whether a stream that has not stepped back yet should now: when as many answers wait
    /// unwritten as streams still run (and at least [`MIN_GROUP`]).
    fn step_back(&self) -> bool {
        let unwritten = self.unwritten.load(Ordering::Relaxed);
        let running = self.running.load(Ordering::Relaxed);
        if unwritten < MIN_GROUP || unwritten < running {
            return false;
        }
        self.stepped_back.store(true, Ordering::Relaxed);
        true
    }
}

/// Spawns a connection's streams on tokio, each paced by the connection's [`Pacing`].
#[derive(Clone, Debug)]
pub(super) struct StreamExecutor {
    pacing: Arc<Pacing>,
}

impl StreamExecutor {
    pub(super) fn new(pacing: Arc<Pacing>) -> Self {
        Self { pacing }
    }
}

impl<F> hyper::rt::Executor<F> for StreamExecutor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, future: F) {
        self.pacing.started();
        tokio::spawn(Paced {
            future,
            running: Running {
                pacing: Arc::clone(&self.pacing),
                answered: false,
            },
            stepped_back: false,
        });
    }
}

pin_project_lite::pin_project! {
    /// One stream: steps back while answers wait, and counts its own answer when done.
    struct Paced<F> {
        #[pin]
        future: F,
        running: Running,
        stepped_back: bool,
    }
}

/// A stream counted as running until it answers or is dropped unanswered.
struct Running {
    pacing: Arc<Pacing>,
    answered: bool,
}

impl Running {
    /// Counts the stream's answer, once.
    fn answer(&mut self) {
        if !self.answered {
            self.answered = true;
            self.pacing.answered();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.answered {
            self.pacing.ended();
        }
    }
}

impl<F: Future> Future for Paced<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        if !*this.stepped_back && this.running.pacing.step_back() {
            *this.stepped_back = true;
            // Woken at once: tokio queues a task that wakes itself behind those already
            // queued, the connection's among them.
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let output = ready!(this.future.poll(cx));
        this.running.answer();
        Poll::Ready(output)
    }
}

pin_project_lite::pin_project! {
    /// The connection's socket, telling its [`Pacing`] when it writes.
    pub(super) struct Written<I> {
        #[pin]
        io: I,
        pacing: Arc<Pacing>,
    }
}

impl<I> Written<I> {
    pub(super) fn new(io: I, pacing: Arc<Pacing>) -> Self {
        Self { io, pacing }
    }
}

impl<I: AsyncRead> AsyncRead for Written<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.project().io.poll_read(cx, buf)
    }
}

impl<I: AsyncWrite> AsyncWrite for Written<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        let written = ready!(this.io.poll_write(cx, buf));
        after_write(this.pacing, cx);
        Poll::Ready(written)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.project();
        let written = ready!(this.io.poll_write_vectored(cx, bufs));
        after_write(this.pacing, cx);
        Poll::Ready(written)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().io.poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.project().io.poll_shutdown(cx)
    }
}

/// Notes a write; if streams stepped back for it, wakes the connection's task, which is
/// running, so that tokio queues it again behind them: its next write then carries their
/// answers together, not one each.
fn after_write(pacing: &Pacing, cx: &Context<'_>) {
    if pacing.wrote() {
        cx.waker().wake_by_ref();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::rt::Executor as _;

    /// How many answers waited each time a model connection ran, on a runtime like the
    /// server's on one core, when `calls` streams arrive at once and each answers after a
    /// turn of an agent's, as a send does (it hands its turn to an agent task and waits).
    fn waiting_per_write(calls: usize, paced: bool) -> Vec<usize> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let pacing = Arc::new(Pacing::default());
            let executor = StreamExecutor::new(Arc::clone(&pacing));
            let done = Arc::new(AtomicUsize::new(0));
            let mut writes = Vec::new();
            let mut started = false;
            // The connection's task: its first turn reads the batch and starts a stream for
            // each call (from the worker, as hyper does); every turn writes what was answered.
            let connection = std::future::poll_fn(move |cx| {
                if !started {
                    started = true;
                    for _ in 0..calls {
                        let (waker, done) = (cx.waker().clone(), Arc::clone(&done));
                        let stream = async move {
                            let (answer, answered) = tokio::sync::oneshot::channel();
                            tokio::spawn(async move { answer.send(()) });
                            answered.await.expect("the agent answers");
                            done.fetch_add(1, Ordering::Relaxed);
                            waker.wake();
                        };
                        if paced {
                            executor.execute(stream);
                        } else {
                            tokio::spawn(stream);
                        }
                    }
                }
                let waiting = done.swap(0, Ordering::Relaxed);
                if waiting > 0 {
                    writes.push(waiting);
                    if pacing.wrote() {
                        cx.waker().wake_by_ref();
                    }
                }
                if writes.iter().sum::<usize>() == calls {
                    Poll::Ready(std::mem::take(&mut writes))
                } else {
                    Poll::Pending
                }
            });
            tokio::spawn(connection).await.expect("the connection ends")
        })
    }

    #[test]
    fn a_batch_of_answers_leaves_in_two_halves() {
        for calls in [16, 64] {
            // Without pacing, the model shows the batching it guards against.
            assert_eq!(waiting_per_write(calls, false), vec![calls]);
            // With it, the batch leaves in two halves: not in one, nor a write per answer.
            assert_eq!(waiting_per_write(calls, true), vec![calls / 2, calls / 2]);
        }
        // A batch too small to split leaves in one write.
        assert_eq!(waiting_per_write(MIN_GROUP, true), vec![MIN_GROUP]);
    }

    #[test]
    fn streams_step_back_once_half_the_outstanding_calls_wait_unwritten() {
        let pacing = Pacing::default();
        let calls = 2 * MIN_GROUP;
        let answer = |answers| (0..answers).for_each(|_| pacing.answered());
        (0..calls).for_each(|_| pacing.started());
        answer(MIN_GROUP - 1);
        assert!(!pacing.step_back(), "fewer than half answered");
        answer(1);
        assert!(pacing.step_back(), "half answered");
        assert!(
            pacing.wrote(),
            "the connection queues itself behind the streams"
        );
        assert!(!pacing.step_back(), "nothing waits after the write");
        assert!(!pacing.wrote(), "no stream stepped back since");
        answer(MIN_GROUP - 1);
        assert!(!pacing.step_back(), "too few to split");
    }
}
