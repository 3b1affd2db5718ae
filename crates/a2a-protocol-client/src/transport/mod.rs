//! How a client reaches an agent: the [`Transport`] trait, one attempt of a unary call or the
//! opening of an event stream, and its HTTP implementation for the JSON-RPC and HTTP+JSON
//! bindings. Retries, tenants and headers live above this layer. A call travels typed
//! ([`Call`], [`Answer`]): a JSON binding writes its request straight to the body's bytes and
//! reads the answer straight from them, gRPC converts each way once.

mod call;
#[cfg(feature = "grpc")]
mod grpc;
mod jsonrpc;
mod over_http;
mod rest;

use std::time::Duration;

use a2a_protocol_types::A2aError;
use http::{HeaderMap, HeaderValue};
use serde::de::DeserializeOwned;

use crate::client::EventStream;
use crate::error::ClientError;
use crate::operation::Operation;
pub(crate) use call::mismatched;
pub use call::{Answer, Call};
#[cfg(feature = "grpc")]
pub(crate) use grpc::GrpcTransport;
pub(crate) use over_http::{HttpBinding, HttpTransport, Timeouts};

/// Runs before every attempt of every request, and may wait (say, for a token service, or to
/// sign the request): it adds or changes headers, or refuses, and a refused request is not
/// sent (so it is safe to retry). A closure `Fn(&mut HeaderMap)` is a hook too.
///
/// ```
/// use a2a_protocol_client::{ClientBuilder, ClientError, RequestHook};
///
/// // A plain closure:
/// let client = ClientBuilder::new("http://127.0.0.1:8080")
///     .with_request_hook(|headers: &mut http::HeaderMap| {
///         headers.insert("x-team", http::HeaderValue::from_static("search"));
///     })
///     .build()?;
///
/// // A hook that waits for something:
/// struct Signer;
///
/// #[async_trait::async_trait]
/// impl RequestHook for Signer {
///     async fn before_request(&self, headers: &mut http::HeaderMap) -> Result<(), ClientError> {
///         let signature = tokio::task::yield_now().await; // A call to a signing service.
///         let _ = signature;
///         headers.insert("x-signature", http::HeaderValue::from_static("sig"));
///         Ok(())
///     }
/// }
/// let signed = ClientBuilder::new("http://127.0.0.1:8080").with_request_hook(Signer).build()?;
/// # let _ = (client, signed);
/// # Ok::<(), ClientError>(())
/// ```
#[async_trait::async_trait]
pub trait RequestHook: Send + Sync + 'static {
    /// Adjusts the headers of one attempt, or refuses it with an error (usually
    /// [`ClientError::Credentials`]); a refused attempt is not sent.
    async fn before_request(&self, headers: &mut HeaderMap) -> Result<(), ClientError>;
}

#[async_trait::async_trait]
impl<F> RequestHook for F
where
    F: Fn(&mut HeaderMap) + Send + Sync + 'static,
{
    async fn before_request(&self, headers: &mut HeaderMap) -> Result<(), ClientError> {
        self(headers);
        Ok(())
    }
}

/// A shared transport is a transport (so one can be kept to look at, say, in a test).
#[async_trait::async_trait]
impl<T: Transport + ?Sized> Transport for std::sync::Arc<T> {
    fn binding(&self) -> &str {
        (**self).binding()
    }

    fn url(&self) -> &str {
        (**self).url()
    }

    async fn unary(&self, request: TransportRequest<'_>) -> Result<Answer, ClientError> {
        (**self).unary(request).await
    }

    async fn open_stream(&self, request: TransportRequest<'_>) -> Result<EventStream, ClientError> {
        (**self).open_stream(request).await
    }
}

/// Which binding a client speaks.
///
/// ```
/// use a2a_protocol_client::{Binding, ClientBuilder};
///
/// let client = ClientBuilder::new("http://127.0.0.1:8080").with_binding(Binding::HttpJson).build();
/// assert!(client.is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Binding {
    /// JSON-RPC 2.0 (`JSONRPC`).
    JsonRpc,
    /// HTTP+JSON (`HTTP+JSON`).
    HttpJson,
    /// gRPC (`GRPC`), with the crate's `grpc` feature; without it, a client built for it
    /// fails with [`ClientError::Config`].
    Grpc,
}

impl Binding {
    /// The card's `protocolBinding` name.
    ///
    /// ```
    /// use a2a_protocol_client::Binding;
    ///
    /// assert_eq!((Binding::JsonRpc.name(), Binding::HttpJson.name()), ("JSONRPC", "HTTP+JSON"));
    /// assert_eq!(Binding::Grpc.name(), "GRPC");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Binding::JsonRpc => a2a_protocol_types::agent_card::BINDING_JSONRPC,
            Binding::HttpJson => a2a_protocol_types::agent_card::BINDING_HTTP_JSON,
            Binding::Grpc => a2a_protocol_types::agent_card::BINDING_GRPC,
        }
    }
}

/// One attempt of one call, as the client hands it to a [`Transport`].
///
/// The client has already filled in the tenant, and made the headers of this attempt: the
/// `A2A-Version` header, the activated extensions (`A2A-Extensions`), the builder's headers,
/// what the [`RequestHook`] added, and a `traceparent` inside a traced scope. A transport
/// sends them as its binding carries headers (gRPC: as metadata).
#[derive(Debug)]
#[non_exhaustive]
pub struct TransportRequest<'a> {
    /// The call, its request typed, `tenant` included.
    pub call: &'a Call,
    /// The headers of this attempt.
    pub headers: &'a HeaderMap,
}

impl TransportRequest<'_> {
    /// The operation called.
    pub fn operation(&self) -> Operation {
        self.call.operation()
    }
}

/// How a client reaches an agent: one attempt of a unary call, or the opening of an event
/// stream, on one binding. The client does everything else (tenants, headers, retries, resuming
/// cut streams), so a transport is only the wire.
///
/// A failure must say where it happened, because the retry policy depends on it: a request
/// that surely never reached the agent is [`Phase::Connect`](crate::Phase::Connect) (retried for any call), one that
/// may have is [`Phase::Request`](crate::Phase::Request), a stream that broke after it began is [`Phase::Stream`](crate::Phase::Stream), and
/// the agent's own error is [`ClientError::Agent`]. The client's built-in HTTP transports
/// implement it; give the client another with [`crate::ClientBuilder::with_transport`].
///
/// ```
/// use a2a_protocol_client::{
///     Answer, Call, ClientBuilder, ClientError, EventStream, Phase, Transport, TransportRequest,
/// };
/// use a2a_protocol_types::{Message, SendMessageRequest, SendMessageResponse};
///
/// /// An agent in the same process, reached without a network.
/// struct InProcess;
///
/// #[async_trait::async_trait]
/// impl Transport for InProcess {
///     fn binding(&self) -> &str {
///         "IN-PROCESS"
///     }
///
///     fn url(&self) -> &str {
///         "in-process:echo"
///     }
///
///     async fn unary(&self, request: TransportRequest<'_>) -> Result<Answer, ClientError> {
///         match request.call {
///             Call::SendMessage(send) => {
///                 Ok(Answer::Sent(SendMessageResponse::Message(send.message.clone())))
///             }
///             other => Err(ClientError::Transport {
///                 phase: Phase::Connect,
///                 message: format!("{} is not served here", other.operation().method()),
///             }),
///         }
///     }
///
///     async fn open_stream(&self, _request: TransportRequest<'_>) -> Result<EventStream, ClientError> {
///         Err(ClientError::Transport { phase: Phase::Connect, message: "no streams here".into() })
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let client = ClientBuilder::new("in-process:echo").with_transport(InProcess).build()?;
/// let answer = client.send_message(SendMessageRequest::new(Message::user_text("hi"))).await?;
/// assert!(matches!(answer, SendMessageResponse::Message(m) if m.text() == "hi"));
/// # Ok(())
/// # }
/// ```
#[async_trait::async_trait]
pub trait Transport: Send + Sync + 'static {
    /// The card's `protocolBinding` name of what this transport speaks (such as `JSONRPC`).
    fn binding(&self) -> &str;

    /// The endpoint it reaches.
    fn url(&self) -> &str;

    /// One attempt of a unary call: the operation's answer.
    async fn unary(&self, request: TransportRequest<'_>) -> Result<Answer, ClientError>;

    /// Opens an event stream: the events, once the agent has accepted the call. An error the
    /// agent answers before the first event is returned here, not as the first item.
    async fn open_stream(&self, request: TransportRequest<'_>) -> Result<EventStream, ClientError>;
}

/// Where a JSON binding reads an answer's value from, typed.
pub(crate) trait JsonAnswer {
    /// The value, read as `T`, or the error the agent answered instead.
    fn read<T: DeserializeOwned>(self) -> Result<T, ClientError>;
}

/// The answer to a unary `operation`, read from `body` as the operation's response type.
pub(crate) fn answer_of(
    operation: Operation,
    body: impl JsonAnswer,
) -> Result<Answer, ClientError> {
    Ok(match operation {
        Operation::SendMessage => Answer::Sent(body.read()?),
        Operation::GetTask | Operation::CancelTask => Answer::Task(body.read()?),
        Operation::ListTasks => Answer::Tasks(body.read()?),
        Operation::CreateTaskPushNotificationConfig | Operation::GetTaskPushNotificationConfig => {
            Answer::PushConfig(body.read()?)
        }
        Operation::ListTaskPushNotificationConfigs => Answer::PushConfigs(body.read()?),
        Operation::DeleteTaskPushNotificationConfig => {
            body.read::<serde::de::IgnoredAny>()?;
            Answer::Deleted
        }
        Operation::GetExtendedAgentCard => Answer::AgentCard(body.read()?),
        Operation::SendStreamingMessage | Operation::SubscribeToTask => {
            return Err(ClientError::Config(format!(
                "{} answers with a stream, not a unary answer",
                operation.method()
            )));
        }
    })
}

pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    headers
        .get(http::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}

/// Attaches a `Retry-After` the server sent in a header to an error that carries no
/// `RetryInfo` of its own.
pub(crate) fn with_header_retry(error: A2aError, retry_after: Option<Duration>) -> A2aError {
    match (error.retry_after(), retry_after) {
        (None, Some(delay)) => error.with_retry_after(delay),
        _ => error,
    }
}

pub(crate) fn truncate(body: &[u8]) -> String {
    String::from_utf8_lossy(body).chars().take(512).collect()
}

pub(crate) const EXTENSIONS: http::HeaderName = http::HeaderName::from_static("a2a-extensions");

pub(crate) const VERSION: HeaderValue =
    HeaderValue::from_static(a2a_protocol_types::agent_card::PROTOCOL_VERSION);

/// The next item of an event stream, waited for at most `idle`: a stream silent for longer
/// is a timeout of the stream, on every binding alike.
pub(crate) async fn next_within<S: futures::Stream + Unpin>(
    stream: &mut S,
    idle: Option<std::time::Duration>,
) -> Result<Option<S::Item>, ClientError> {
    use futures::StreamExt;
    match idle {
        Some(limit) => tokio::time::timeout(limit, stream.next())
            .await
            .map_err(|_| ClientError::Timeout {
                phase: crate::error::Phase::Stream,
            }),
        None => Ok(stream.next().await),
    }
}
