//! A future run inside a tracing span, like [`tracing::Instrument`], but cheaper on the path
//! every request takes: `Instrumented` enters its span once more when it is dropped, to drop
//! the future inside it, even when the future has already finished and holds nothing. Here
//! a finished future is dropped during its last poll, while the span is entered anyway, so a
//! request's span and its turn's span are each entered once per poll and never after.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

pin_project_lite::pin_project! {
    /// `future` polled inside `span`; see the module doc.
    pub(crate) struct InSpan<F> {
        #[pin]
        future: Option<F>,
        span: tracing::Span,
    }

    impl<F> PinnedDrop for InSpan<F> {
        fn drop(this: Pin<&mut Self>) {
            let mut this = this.project();
            // Unfinished (its caller went away, say): dropped inside the span, as
            // `Instrumented` would, so what it logs on the way out is attributed.
            if this.future.is_some() {
                let _entered = this.span.enter();
                this.future.set(None);
            }
        }
    }
}

/// `future`, run inside `span`.
pub(crate) fn in_span<F: Future>(future: F, span: tracing::Span) -> InSpan<F> {
    InSpan {
        future: Some(future),
        span,
    }
}

impl<F: Future> Future for InSpan<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let mut this = self.project();
        let _entered = this.span.enter();
        // Polled again after it finished: never ready again, as a fused future.
        let Some(future) = this.future.as_mut().as_pin_mut() else {
            return Poll::Pending;
        };
        let output = std::task::ready!(future.poll(cx));
        this.future.set(None);
        Poll::Ready(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use tracing::Subscriber;
    use tracing::span::{Attributes, Id, Record};

    /// Counts how often each span is entered, and what was current when a value was dropped.
    #[derive(Clone, Default)]
    struct Recorder {
        entered: Arc<Mutex<u32>>,
        current: Arc<Mutex<Option<u64>>>,
    }

    impl Subscriber for Recorder {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, _: &tracing::Event<'_>) {}
        fn enter(&self, span: &Id) {
            *self.entered.lock().unwrap() += 1;
            *self.current.lock().unwrap() = Some(span.into_u64());
        }
        fn exit(&self, _: &Id) {
            *self.current.lock().unwrap() = None;
        }
    }

    /// Notes whether a span was current when it is dropped.
    struct NotesDrop(Recorder, Arc<Mutex<Option<bool>>>);

    impl Drop for NotesDrop {
        fn drop(&mut self) {
            *self.1.lock().unwrap() = Some(self.0.current.lock().unwrap().is_some());
        }
    }

    #[test]
    fn a_finished_future_is_not_entered_again_and_an_unfinished_one_drops_inside_its_span() {
        let recorder = Recorder::default();
        tracing::subscriber::with_default(recorder.clone(), || {
            let waker = futures::task::noop_waker();
            let mut cx = Context::from_waker(&waker);

            // Finishes on its second poll: entered twice, and not again when dropped.
            let dropped_in_span = Arc::new(Mutex::new(None));
            let held = NotesDrop(recorder.clone(), Arc::clone(&dropped_in_span));
            let mut polls = 0;
            let mut finishing = Box::pin(in_span(
                std::future::poll_fn(move |_| {
                    let _ = &held;
                    polls += 1;
                    if polls == 2 {
                        Poll::Ready(7)
                    } else {
                        Poll::Pending
                    }
                }),
                tracing::info_span!("finishing"),
            ));
            assert_eq!(finishing.as_mut().poll(&mut cx), Poll::Pending);
            assert_eq!(finishing.as_mut().poll(&mut cx), Poll::Ready(7));
            // The finished future's state went during its last poll, inside the span.
            assert_eq!(*dropped_in_span.lock().unwrap(), Some(true));
            assert_eq!(finishing.as_mut().poll(&mut cx), Poll::Pending);
            drop(finishing);
            assert_eq!(*recorder.entered.lock().unwrap(), 3);

            // Dropped before it finished: dropped inside its span.
            let dropped_in_span = Arc::new(Mutex::new(None));
            let held = NotesDrop(recorder.clone(), Arc::clone(&dropped_in_span));
            let mut unfinished = Box::pin(in_span(
                std::future::poll_fn(move |_| {
                    let _ = &held;
                    Poll::<()>::Pending
                }),
                tracing::info_span!("unfinished"),
            ));
            assert_eq!(unfinished.as_mut().poll(&mut cx), Poll::Pending);
            drop(unfinished);
            assert_eq!(*dropped_in_span.lock().unwrap(), Some(true));
            assert_eq!(*recorder.entered.lock().unwrap(), 5);
        });
    }
}
