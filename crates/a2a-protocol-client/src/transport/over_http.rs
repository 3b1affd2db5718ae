//! The two HTTP bindings (JSON-RPC and HTTP+JSON) as one [`Transport`]: one attempt of a
//! unary call, or the opening of an event stream, over `reqwest`.

use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use a2a_protocol_types::StreamResponse;
use futures::{Stream, StreamExt};

use super::{
    Answer, Binding, Transport, TransportRequest, answer_of, jsonrpc, next_within, rest,
    retry_after,
};
use crate::client::EventStream;
use crate::error::{ClientError, Phase};
use crate::sse::SseParser;

/// How long calls may take: one attempt of a unary call in all, and a stream between events.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    pub(crate) request: Option<Duration>,
    pub(crate) stream_idle: Option<Duration>,
}

/// One of the two bindings over plain HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HttpBinding {
    JsonRpc,
    HttpJson,
}

impl HttpBinding {
    /// The HTTP binding `binding` is, if it is one.
    pub(crate) fn of(binding: Binding) -> Option<Self> {
        match binding {
            Binding::JsonRpc => Some(HttpBinding::JsonRpc),
            Binding::HttpJson => Some(HttpBinding::HttpJson),
            Binding::Grpc => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            HttpBinding::JsonRpc => Binding::JsonRpc.name(),
            HttpBinding::HttpJson => Binding::HttpJson.name(),
        }
    }
}

/// An agent reached over HTTP, on one of the two HTTP bindings.
pub(crate) struct HttpTransport {
    binding: HttpBinding,
    url: String,
    http: reqwest::Client,
    credentials: Option<crate::auth::Placed>,
    timeouts: Timeouts,
    next_id: AtomicI64,
}

impl HttpTransport {
    pub(crate) fn new(
        binding: HttpBinding,
        url: String,
        http: reqwest::Client,
        credentials: Option<crate::auth::Placed>,
        timeouts: Timeouts,
    ) -> Self {
        Self {
            binding,
            url: url.trim_end_matches('/').to_owned(),
            http,
            credentials,
            timeouts,
            next_id: AtomicI64::new(1),
        }
    }

    async fn request(
        &self,
        request: &TransportRequest<'_>,
    ) -> Result<reqwest::RequestBuilder, ClientError> {
        let builder = match self.binding {
            HttpBinding::JsonRpc => {
                let id = self.next_id.fetch_add(1, Ordering::Relaxed);
                self.http
                    .post(&self.url)
                    .header(http::header::CONTENT_TYPE, "application/json")
                    .body(jsonrpc::body(id, request.call)?)
            }
            HttpBinding::HttpJson => rest::request(&self.http, &self.url, request.call)?,
        };
        let builder = builder.headers(request.headers.clone());
        match &self.credentials {
            Some(credentials) => credentials.apply(builder).await,
            None => Ok(builder),
        }
    }

    /// The answer to a unary call, read as its operation's response.
    fn decode(
        &self,
        request: &TransportRequest<'_>,
        status: u16,
        retry_after: Option<Duration>,
        body: &[u8],
    ) -> Result<Answer, ClientError> {
        let operation = request.operation();
        match self.binding {
            HttpBinding::JsonRpc => answer_of(
                operation,
                jsonrpc::Answered {
                    status,
                    retry_after,
                    body,
                },
            ),
            HttpBinding::HttpJson => answer_of(
                operation,
                rest::Answered {
                    status,
                    retry_after,
                    body,
                },
            ),
        }
    }

    /// What a stream's call answered instead of a stream: the agent's error, most often.
    fn refusal(&self, status: u16, retry_after: Option<Duration>, body: &[u8]) -> ClientError {
        use super::JsonAnswer;
        let answered = match self.binding {
            HttpBinding::JsonRpc => jsonrpc::Answered {
                status,
                retry_after,
                body,
            }
            .read::<serde::de::IgnoredAny>()
            .err(),
            HttpBinding::HttpJson if (200..300).contains(&status) => None,
            HttpBinding::HttpJson => Some(rest::error_of(status, retry_after, body)),
        };
        answered.unwrap_or_else(|| {
            ClientError::Decode("expected an event stream, got a JSON answer".into())
        })
    }
}

#[async_trait::async_trait]
impl Transport for HttpTransport {
    fn binding(&self) -> &str {
        self.binding.name()
    }

    fn url(&self) -> &str {
        &self.url
    }

    async fn unary(&self, request: TransportRequest<'_>) -> Result<Answer, ClientError> {
        let mut builder = self.request(&request).await?;
        if let Some(timeout) = self.timeouts.request {
            builder = builder.timeout(timeout);
        }
        let response = builder
            .send()
            .await
            .map_err(|e| ClientError::from_reqwest(e, Phase::Request))?;
        let status = response.status().as_u16();
        let retry_after = retry_after(response.headers());
        let body = response
            .bytes()
            .await
            .map_err(|e| ClientError::from_reqwest(e, Phase::Request))?;
        self.decode(&request, status, retry_after, &body)
    }

    async fn open_stream(&self, request: TransportRequest<'_>) -> Result<EventStream, ClientError> {
        let response = self
            .request(&request)
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
            return Err(self.refusal(status, retry_after, &body));
        }
        Ok(events(
            response.bytes_stream(),
            self.binding,
            self.timeouts.stream_idle,
        ))
    }
}

/// Parses an SSE byte stream into events, decoding each per the binding.
fn events(
    bytes: impl Stream<Item = reqwest::Result<bytes::Bytes>> + Send + 'static,
    binding: HttpBinding,
    idle: Option<Duration>,
) -> EventStream {
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
                    HttpBinding::JsonRpc => jsonrpc::decode_event(&data),
                    HttpBinding::HttpJson => serde_json::from_str::<StreamResponse>(&data)
                        .map_err(|e| ClientError::Decode(format!("stream event: {e}"))),
                };
                return Some((event, state));
            }
            if state.done {
                return None;
            }
            let next = match next_within(&mut state.bytes, idle).await {
                Ok(next) => next,
                Err(timeout) => {
                    state.done = true;
                    return Some((Err(timeout), state));
                }
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
