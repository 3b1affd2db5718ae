//! The two HTTP bindings, behind one interface: one attempt of a unary call, or the opening of
//! an event stream. Retries live above this layer.

mod jsonrpc;
mod rest;

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use a2a_protocol_types::{A2aError, StreamResponse};
use futures::{Stream, StreamExt};
use http::{HeaderMap, HeaderValue};
use serde_json::Value;

use crate::error::{ClientError, Phase};
use crate::operation::Operation;
use crate::sse::SseParser;

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

/// Which binding a client speaks.
///
/// ```
/// use a2a_protocol_client::{Binding, ClientBuilder};
///
/// let client = ClientBuilder::new("http://127.0.0.1:8080").with_binding(Binding::HttpJson).build();
/// assert!(client.is_ok());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    /// JSON-RPC 2.0 (`JSONRPC`).
    JsonRpc,
    /// HTTP+JSON (`HTTP+JSON`).
    HttpJson,
}

impl Binding {
    /// The card's `protocolBinding` name.
    ///
    /// ```
    /// use a2a_protocol_client::Binding;
    ///
    /// assert_eq!((Binding::JsonRpc.name(), Binding::HttpJson.name()), ("JSONRPC", "HTTP+JSON"));
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Binding::JsonRpc => a2a_protocol_types::agent_card::BINDING_JSONRPC,
            Binding::HttpJson => a2a_protocol_types::agent_card::BINDING_HTTP_JSON,
        }
    }
}

/// Raw events of one stream attempt.
pub(crate) type RawEvents = Pin<Box<dyn Stream<Item = Result<StreamResponse, ClientError>> + Send>>;

/// How long calls may take: one attempt of a unary call in all, and a stream between events.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    pub(crate) request: Option<Duration>,
    pub(crate) stream_idle: Option<Duration>,
}

pub(crate) struct Transport {
    pub(crate) binding: Binding,
    pub(crate) url: String,
    pub(crate) http: reqwest::Client,
    pub(crate) headers: HeaderMap,
    pub(crate) hook: Option<Arc<dyn RequestHook>>,
    pub(crate) credentials: Option<crate::auth::Placed>,
    pub(crate) timeouts: Timeouts,
    next_id: AtomicI64,
}

impl Transport {
    pub(crate) fn new(
        binding: Binding,
        url: String,
        http: reqwest::Client,
        headers: HeaderMap,
        hook: Option<Arc<dyn RequestHook>>,
        credentials: Option<crate::auth::Placed>,
        timeouts: Timeouts,
    ) -> Self {
        Self {
            binding,
            url: url.trim_end_matches('/').to_owned(),
            http,
            headers,
            hook,
            credentials,
            timeouts,
            next_id: AtomicI64::new(1),
        }
    }

    /// The same endpoint, activating `uris` too on every request.
    pub(crate) fn activating(&self, uris: &[&str]) -> Transport {
        let mut headers = self.headers.clone();
        let mut all: Vec<String> = headers
            .get(EXTENSIONS)
            .and_then(|v| v.to_str().ok())
            .map(a2a_protocol_types::extensions::parse_extensions_header)
            .unwrap_or_default();
        for uri in uris {
            if !all.iter().any(|u| u == uri) {
                all.push((*uri).to_owned());
            }
        }
        if let Ok(value) = HeaderValue::from_str(
            &a2a_protocol_types::extensions::format_extensions_header(&all),
        ) {
            headers.insert(EXTENSIONS, value);
        }
        Transport::new(
            self.binding,
            self.url.clone(),
            self.http.clone(),
            headers,
            self.hook.clone(),
            self.credentials.clone(),
            self.timeouts,
        )
    }

    async fn headers(&self) -> Result<HeaderMap, ClientError> {
        let mut headers = self.headers.clone();
        if let Some(hook) = &self.hook {
            hook.before_request(&mut headers).await?;
        }
        // Inside an agent's turn (or any `trace::with_current` scope) the call joins the
        // caller's trace, as a child of its current span.
        let header = a2a_protocol_types::trace::TRACEPARENT_HEADER;
        if let Some(trace) =
            a2a_protocol_types::trace::current().filter(|_| !headers.contains_key(header))
            && let Ok(value) = HeaderValue::from_str(&trace.child().to_string())
        {
            headers.insert(header, value);
        }
        Ok(headers)
    }

    async fn request(
        &self,
        operation: Operation,
        params: &Value,
    ) -> Result<reqwest::RequestBuilder, ClientError> {
        let builder = match self.binding {
            Binding::JsonRpc => {
                let id = self.next_id.fetch_add(1, Ordering::Relaxed);
                jsonrpc::request(&self.http, &self.url, id, operation, params)
            }
            Binding::HttpJson => rest::request(&self.http, &self.url, operation, params)?,
        };
        let builder = builder.headers(self.headers().await?);
        match &self.credentials {
            Some(credentials) => credentials.apply(builder).await,
            None => Ok(builder),
        }
    }

    /// One attempt of a unary call.
    pub(crate) async fn unary(
        &self,
        operation: Operation,
        params: &Value,
    ) -> Result<Value, ClientError> {
        let mut request = self.request(operation, params).await?;
        if let Some(timeout) = self.timeouts.request {
            request = request.timeout(timeout);
        }
        let response = request
            .send()
            .await
            .map_err(|e| ClientError::from_reqwest(e, Phase::Request))?;
        let status = response.status().as_u16();
        let retry_after = retry_after(response.headers());
        let body = response
            .bytes()
            .await
            .map_err(|e| ClientError::from_reqwest(e, Phase::Request))?;
        match self.binding {
            Binding::JsonRpc => jsonrpc::decode(status, retry_after, &body),
            Binding::HttpJson => rest::decode(status, retry_after, &body),
        }
    }

    /// Opens an event stream: the events, once the server has accepted the call.
    pub(crate) async fn open_stream(
        &self,
        operation: Operation,
        params: &Value,
    ) -> Result<RawEvents, ClientError> {
        let response = self
            .request(operation, params)
            .await?
            .header(http::header::ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| ClientError::from_reqwest(e, Phase::Request))?;
        let status = response.status().as_u16();
        let is_sse = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if !is_sse || !(200..300).contains(&status) {
            // An error answered as plain JSON before the first event.
            let retry_after = retry_after(response.headers());
            let body = response
                .bytes()
                .await
                .map_err(|e| ClientError::from_reqwest(e, Phase::Request))?;
            let decoded = match self.binding {
                Binding::JsonRpc => jsonrpc::decode(status, retry_after, &body),
                Binding::HttpJson => rest::decode(status, retry_after, &body),
            };
            return Err(decoded.err().unwrap_or_else(|| {
                ClientError::Decode("expected an event stream, got a JSON answer".into())
            }));
        }
        let binding = self.binding;
        let idle = self.timeouts.stream_idle;
        let bytes = response.bytes_stream();
        Ok(events(bytes, binding, idle))
    }
}

/// Parses an SSE byte stream into events, decoding each per the binding.
fn events(
    bytes: impl Stream<Item = reqwest::Result<bytes::Bytes>> + Send + 'static,
    binding: Binding,
    idle: Option<Duration>,
) -> RawEvents {
    struct State<S> {
        bytes: Pin<Box<S>>,
        parser: SseParser,
        ready: std::collections::VecDeque<String>,
        done: bool,
    }
    let state = State {
        bytes: Box::pin(bytes),
        parser: SseParser::new(),
        ready: Default::default(),
        done: false,
    };
    futures::stream::unfold(state, move |mut state| async move {
        loop {
            if let Some(data) = state.ready.pop_front() {
                let event = match binding {
                    Binding::JsonRpc => jsonrpc::decode_event(&data),
                    Binding::HttpJson => serde_json::from_str::<StreamResponse>(&data)
                        .map_err(|e| ClientError::Decode(format!("stream event: {e}"))),
                };
                return Some((event, state));
            }
            if state.done {
                return None;
            }
            let next = match idle {
                Some(limit) => match tokio::time::timeout(limit, state.bytes.next()).await {
                    Ok(next) => next,
                    Err(_) => {
                        state.done = true;
                        return Some((
                            Err(ClientError::Timeout {
                                phase: Phase::Stream,
                            }),
                            state,
                        ));
                    }
                },
                None => state.bytes.next().await,
            };
            match next {
                Some(Ok(chunk)) => state
                    .ready
                    .extend(state.parser.feed(&chunk).into_iter().map(|e| e.data)),
                Some(Err(error)) => {
                    state.done = true;
                    return Some((Err(ClientError::from_reqwest(error, Phase::Stream)), state));
                }
                None => state.done = true,
            }
        }
    })
    .boxed()
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

const EXTENSIONS: http::HeaderName = http::HeaderName::from_static("a2a-extensions");

pub(crate) const VERSION: HeaderValue =
    HeaderValue::from_static(a2a_protocol_types::agent_card::PROTOCOL_VERSION);
