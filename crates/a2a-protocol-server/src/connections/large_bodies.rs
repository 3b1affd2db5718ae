//! Request bodies beyond their first 256 KiB draw on one budget for the whole server, held
//! until the answer is written: reading, decoding and answering a request costs several times
//! its size, so without it many large requests at once (64 at the 4 MiB limit) took the
//! server past a gigabyte. A request that finds the budget spent waits a little, then is
//! refused as busy before it runs; small requests never touch it.

use std::future::Future as _;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::body::Bytes;
use http_body::{Body as _, Frame, SizeHint};
use hyper::body::Incoming;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::PollSemaphore;

/// What of a body is read without drawing on the budget.
pub(super) const FREE: usize = 256 * 1024;

/// How long a request waits for the budget before it is refused.
const WAIT: Duration = Duration::from_secs(5);

/// How long a refused client is told to wait.
pub(crate) const RETRY_AFTER: Duration = Duration::from_secs(5);

/// The budget, in KiB.
#[derive(Debug, Clone)]
pub(super) struct Budget {
    kib: Arc<Semaphore>,
    /// The most one request draws: the budget, so a request alone always gets through.
    most: usize,
    /// What a body of unknown length is assumed to bring: the body limit.
    max_body: usize,
}

impl Budget {
    /// A budget of `bytes`, at least `max_body` (a request at the body limit fits alone).
    pub(super) fn new(bytes: usize, max_body: usize) -> Self {
        let most = bytes
            .max(max_body)
            .div_ceil(1024)
            .min(Semaphore::MAX_PERMITS);
        Self {
            kib: Arc::new(Semaphore::new(most)),
            most,
            max_body,
        }
    }
}

/// What one request drew, given back when its answer is written (or dropped).
#[derive(Debug, Clone, Default)]
pub(super) struct Drawn(Arc<Mutex<Vec<OwnedSemaphorePermit>>>);

impl Drawn {
    fn add(&self, permit: OwnedSemaphorePermit) {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(permit);
    }

    /// Gives back what was drawn.
    pub(super) fn release(&self) {
        let drawn = std::mem::take(
            &mut *self
                .0
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
        drop(drawn);
    }
}

/// The error a request body ends with when the budget stayed spent: the bindings answer it as
/// busy (`503`, gRPC `UNAVAILABLE`), nothing having run.
#[derive(Debug)]
pub(crate) struct Crowded {
    #[cfg(feature = "grpc")]
    status: tonic::Status,
}

impl Crowded {
    pub(crate) const MESSAGE: &str = "the server is at capacity (large request bodies in \
                                      progress); nothing ran, retry in 5 s";

    fn new() -> Self {
        Self {
            #[cfg(feature = "grpc")]
            status: tonic::Status::unavailable(Self::MESSAGE),
        }
    }

    /// Whether `error` is, or was caused by, a refusal for want of budget.
    pub(crate) fn caused(error: &(dyn std::error::Error + 'static)) -> bool {
        let mut cause = Some(error);
        while let Some(error) = cause {
            if error.is::<Crowded>() {
                return true;
            }
            cause = error.source();
        }
        false
    }
}

impl std::fmt::Display for Crowded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(Self::MESSAGE)
    }
}

impl std::error::Error for Crowded {
    /// tonic looks down the chain for a status to answer with.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        #[cfg(feature = "grpc")]
        return Some(&self.status);
        #[cfg(not(feature = "grpc"))]
        None
    }
}

/// A request body drawing on the budget for what it brings past [`FREE`]: once past it, for
/// the whole of it at once (its `Content-Length`, else the body limit), so a request waits
/// once at most.
pub(super) struct Metered {
    body: Incoming,
    /// The body's length when it was declared.
    declared: Option<usize>,
    received: usize,
    /// KiB drawn so far.
    drawn_kib: usize,
    budget: Budget,
    semaphore: PollSemaphore,
    drawn: Drawn,
    /// A frame held back until its share of the budget is drawn, and until when to try.
    waiting: Option<(Frame<Bytes>, Pin<Box<tokio::time::Sleep>>)>,
    /// Refused: the rest of the body is read and dropped (up to the body limit) before the
    /// refusal is told, since many HTTP/1.1 clients read no answer until they have sent
    /// their whole body.
    discarding: bool,
}

impl Metered {
    pub(super) fn new(body: Incoming, budget: &Budget, drawn: Drawn) -> Self {
        let declared = body
            .size_hint()
            .exact()
            .and_then(|length| usize::try_from(length).ok());
        Self {
            body,
            declared,
            received: 0,
            drawn_kib: 0,
            budget: budget.clone(),
            semaphore: PollSemaphore::new(Arc::clone(&budget.kib)),
            drawn,
            waiting: None,
            discarding: false,
        }
    }

    /// Reads the rest of a refused body and drops it, then tells the refusal.
    fn discard(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::BoxError>>> {
        while self.received <= self.budget.max_body {
            match ready!(Pin::new(&mut self.body).poll_frame(cx)) {
                Some(Ok(frame)) => {
                    let length = frame.data_ref().map_or(0, Bytes::len);
                    self.received = self.received.saturating_add(length);
                }
                Some(Err(_)) | None => break,
            }
        }
        Poll::Ready(Some(Err(Box::new(Crowded::new()))))
    }

    /// KiB still to draw: none until the body passes [`FREE`], then for all of it that is
    /// past (more only if it brings more than it declared).
    fn owed_kib(&self) -> usize {
        if self.received <= FREE {
            return 0;
        }
        let expected = self
            .declared
            .unwrap_or(self.budget.max_body)
            .max(self.received);
        expected
            .saturating_sub(FREE)
            .div_ceil(1024)
            .min(self.budget.most)
            .saturating_sub(self.drawn_kib)
    }
}

impl http_body::Body for Metered {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        loop {
            if this.discarding {
                return this.discard(cx);
            }
            if let Some((frame, mut deadline)) = this.waiting.take() {
                let owed = this.owed_kib();
                let owed_u32 = u32::try_from(owed).unwrap_or(u32::MAX);
                match this.semaphore.poll_acquire_many(cx, owed_u32) {
                    Poll::Ready(Some(permit)) => {
                        this.drawn.add(permit);
                        this.drawn_kib += owed;
                        return Poll::Ready(Some(Ok(frame)));
                    }
                    Poll::Ready(None) => {}
                    Poll::Pending => {
                        if deadline.as_mut().poll(cx).is_pending() {
                            this.waiting = Some((frame, deadline));
                            return Poll::Pending;
                        }
                    }
                }
                this.discarding = true;
                continue;
            }
            let frame = match ready!(Pin::new(&mut this.body).poll_frame(cx)) {
                Some(Ok(frame)) => frame,
                Some(Err(error)) => return Poll::Ready(Some(Err(Box::new(error)))),
                None => return Poll::Ready(None),
            };
            if let Some(data) = frame.data_ref() {
                this.received = this.received.saturating_add(data.len());
                if this.owed_kib() > 0 {
                    this.waiting = Some((frame, Box::pin(tokio::time::sleep(WAIT))));
                    continue;
                }
            }
            return Poll::Ready(Some(Ok(frame)));
        }
    }

    fn is_end_stream(&self) -> bool {
        self.waiting.is_none() && self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        let held = self
            .waiting
            .as_ref()
            .and_then(|(frame, _)| frame.data_ref())
            .map_or(0, Bytes::len);
        super::size_hint_plus(self.body.size_hint(), held)
    }
}
