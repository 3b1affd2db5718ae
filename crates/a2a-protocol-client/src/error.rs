//! [`ClientError`]: every way a call can fail, told apart by what it means for a retry.

use std::time::Duration;

use a2a_protocol_types::{A2aError, ErrorKind};

/// Where in a call a transport failure happened.
///
/// ```
/// use a2a_protocol_client::{ClientError, FailureClass, Phase};
///
/// let before = ClientError::Timeout { phase: Phase::Connect };
/// let after = ClientError::Timeout { phase: Phase::Request };
/// assert_eq!((before.class(), after.class()), (FailureClass::NotSent, FailureClass::Ambiguous));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Connecting: no request byte reached the server.
    Connect,
    /// Sending the request or waiting for its answer: the server may have acted on it.
    Request,
    /// Reading an event stream after it started.
    Stream,
}

/// What a failure means for a retry (the table in `docs/client-retries.md`).
///
/// ```
/// use a2a_protocol_client::{ClientError, FailureClass};
///
/// assert_eq!(ClientError::StreamCut.class(), FailureClass::Ambiguous);
/// let gateway = ClientError::Http { status: 502, body: String::new(), retry_after: None };
/// assert_eq!(gateway.class(), FailureClass::Ambiguous, "a proxy may have forwarded it");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureClass {
    /// The request never reached the server: any call may be retried.
    NotSent,
    /// The server refused it without acting (429, 503, RetryInfo): any call may be retried,
    /// after the advised delay.
    Refused(Option<Duration>),
    /// The request may or may not have been acted on: only calls that cannot do harm twice may
    /// be retried.
    Ambiguous,
    /// A definite answer: retrying would get the same one.
    Final,
}

/// A failed call.
///
/// ```
/// use a2a_protocol_client::ClientError;
/// use a2a_protocol_types::{A2aError, ErrorKind};
///
/// let error = ClientError::Agent(A2aError::task_not_found("t-1"));
/// assert_eq!(error.kind(), Some(ErrorKind::TaskNotFound));
/// assert!(error.to_string().starts_with("the agent answered TASK_NOT_FOUND"));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The agent answered with an A2A error.
    #[error("the agent answered {0}")]
    Agent(A2aError),
    /// The transport failed.
    #[error("{phase:?} failed: {message}")]
    Transport {
        /// Where it failed.
        phase: Phase,
        /// What happened.
        message: String,
    },
    /// A deadline passed.
    #[error("timed out during {phase:?}")]
    Timeout {
        /// Where it timed out.
        phase: Phase,
    },
    /// The agent answered with an HTTP status and no A2A error body.
    #[error("the agent answered HTTP {status}: {body}")]
    Http {
        /// The status.
        status: u16,
        /// The body (at most 512 characters of it).
        body: String,
        /// The `Retry-After` header, if any.
        retry_after: Option<Duration>,
    },
    /// The answer could not be read.
    #[error("the agent's answer could not be read: {0}")]
    Decode(String),
    /// A stream ended before the task settled.
    #[error("the event stream ended before the task settled")]
    StreamCut,
    /// The client is misconfigured.
    #[error("invalid client configuration: {0}")]
    Config(String),
    /// No credential could be had for the request (say, the token source failed), so it was
    /// not sent.
    #[error("no credential for the request: {0}")]
    Credentials(String),
}

impl ClientError {
    /// What the failure means for a retry.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_client::{ClientError, FailureClass};
    /// use a2a_protocol_types::A2aError;
    ///
    /// let busy = ClientError::Agent(A2aError::resource_exhausted("full", Duration::from_secs(2)));
    /// assert_eq!(busy.class(), FailureClass::Refused(Some(Duration::from_secs(2))));
    /// let answer = ClientError::Agent(A2aError::invalid_params("no parts"));
    /// assert_eq!(answer.class(), FailureClass::Final);
    /// ```
    pub fn class(&self) -> FailureClass {
        match self {
            ClientError::Agent(error) if error.kind == ErrorKind::ResourceExhausted => {
                FailureClass::Refused(error.retry_after())
            }
            ClientError::Agent(_) => FailureClass::Final,
            ClientError::Transport {
                phase: Phase::Connect,
                ..
            }
            | ClientError::Timeout {
                phase: Phase::Connect,
            }
            | ClientError::Credentials(_) => FailureClass::NotSent,
            ClientError::Transport { .. }
            | ClientError::Timeout { .. }
            | ClientError::StreamCut => FailureClass::Ambiguous,
            ClientError::Http {
                status,
                retry_after,
                ..
            } => match status {
                429 | 503 => FailureClass::Refused(*retry_after),
                502 | 504 => FailureClass::Ambiguous,
                _ => FailureClass::Final,
            },
            ClientError::Decode(_) | ClientError::Config(_) => FailureClass::Final,
        }
    }

    /// The A2A error type, when the agent answered with one.
    ///
    /// ```
    /// use a2a_protocol_client::ClientError;
    ///
    /// assert_eq!(ClientError::StreamCut.kind(), None, "not an answer from the agent");
    /// ```
    pub fn kind(&self) -> Option<ErrorKind> {
        match self {
            ClientError::Agent(error) => Some(error.kind),
            _ => None,
        }
    }

    pub(crate) fn from_reqwest(error: reqwest::Error, phase: Phase) -> Self {
        let phase = if error.is_connect() {
            Phase::Connect
        } else {
            phase
        };
        if error.is_timeout() {
            return ClientError::Timeout { phase };
        }
        let mut message = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        ClientError::Transport { phase, message }
    }
}
