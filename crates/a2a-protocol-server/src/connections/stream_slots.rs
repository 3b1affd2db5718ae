//! Streams over HTTP/1.1 hold their connection for as long as they last (an SSE subscription
//! can last hours), so together they get only part of the connection slots: the rest stay for
//! calls that end. Over HTTP/2 a stream is one of many on its connection and takes no slot.

use std::sync::Arc;
use std::time::Duration;

use a2a_protocol_types::A2aError;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long a client refused a stream is told to wait: streams end when their tasks do, which
/// the server cannot foresee.
const RETRY_AFTER: Duration = Duration::from_secs(5);

/// The slots streams over HTTP/1.1 may take; a request carries them in its extensions when it
/// came over HTTP/1.1.
#[derive(Debug, Clone)]
pub(crate) struct StreamSlots(Arc<Semaphore>);

impl StreamSlots {
    pub(crate) fn new(slots: usize) -> Self {
        Self(Arc::new(Semaphore::new(slots)))
    }

    /// A slot for one stream, held until it is dropped; refused, before anything runs, when
    /// every slot is taken.
    pub(crate) fn take(&self) -> Result<OwnedSemaphorePermit, A2aError> {
        Arc::clone(&self.0).try_acquire_owned().map_err(|_| {
            A2aError::resource_exhausted(
                "the server is at capacity (streams over HTTP/1.1, which hold a connection \
                 each); nothing ran; retry later, or stream over HTTP/2",
                RETRY_AFTER,
            )
        })
    }
}
