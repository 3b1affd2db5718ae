//! Why a store operation failed, and what a client is told.

use std::time::Duration;

use a2a_protocol_types::A2aError;

/// Why a store operation failed.
///
/// ```
/// use a2a_protocol_server::store::StoreError;
/// use a2a_protocol_types::{A2aError, ErrorKind};
///
/// let busy: A2aError = StoreError::Busy("the pool is exhausted".into()).into();
/// assert_eq!(busy.kind, ErrorKind::ResourceExhausted, "retryable: nothing ran");
/// let broken: A2aError = StoreError::Corrupt("bad row".into()).into();
/// assert_eq!(broken.kind, ErrorKind::Internal);
/// assert!(!broken.message.contains("bad row"), "internals stay in the server log");
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The store is busy or briefly unreachable; the same call may succeed later.
    #[error("task store is busy: {0}")]
    Busy(String),
    /// A bounded store is full of entries it may not evict; retry later.
    #[error("task store is at capacity: {0}")]
    CapacityExceeded(&'static str),
    /// A bounded store is full of entries it may not evict until `retry_after` has passed,
    /// when the first of them expires.
    #[error("task store is at capacity: {what}; room in {retry_after:?}")]
    FullUntil {
        /// What is full.
        what: &'static str,
        /// When room frees up, at the earliest.
        retry_after: Duration,
    },
    /// The store does not implement the operation.
    #[error("the task store does not support this operation")]
    Unsupported,
    /// Stored data could not be read back.
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// The store was created partitioned by tenant and opened as one namespace, or the other
    /// way round.
    #[error("the store was opened in the wrong mode: {0}")]
    ModeMismatch(String),
    /// Any other backend failure.
    #[error("task store failed: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// How long a client is told to wait after a retryable store refusal.
pub const STORE_RETRY_AFTER: Duration = Duration::from_secs(1);

impl From<StoreError> for A2aError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Busy(_) => A2aError::resource_exhausted(
                "the task store is busy; nothing ran, retry shortly",
                STORE_RETRY_AFTER,
            ),
            StoreError::CapacityExceeded(what) => A2aError::resource_exhausted(
                format!("the server is at capacity ({what}); nothing ran, retry later"),
                STORE_RETRY_AFTER,
            ),
            StoreError::FullUntil { what, retry_after } => A2aError::resource_exhausted(
                format!(
                    "the server is at capacity ({what}); nothing ran, retry in {} s",
                    retry_after.as_secs_f64().ceil().max(1.0)
                ),
                retry_after.max(STORE_RETRY_AFTER),
            ),
            StoreError::Unsupported => {
                A2aError::unsupported_operation("the task store does not support this operation")
            }
            other => {
                tracing::error!(error = %other, "task store failure");
                A2aError::internal("the task store failed; see the server log")
            }
        }
    }
}
