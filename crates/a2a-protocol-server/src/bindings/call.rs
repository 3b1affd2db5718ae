//! The one request pipeline every binding runs, in one order:
//!
//! 1. the route (each binding's own: a path, the JSON-RPC endpoint, a gRPC method);
//! 2. [`Head::read`]: the protocol version, refused before any body is read, then the call
//!    context (caller, client address, trace, deadline, activated extensions);
//! 3. the binding reads and decodes the body (content type, size and time limits, repeated
//!    members), the binding's own business;
//! 4. [`Head::observe`] then [`Observed::run`]: the operation, in the request's span, counted
//!    in the request metrics, within the request's deadline;
//! 5. the binding writes the answer, with the `A2A-Extensions` it activated
//!    ([`Head::activated_extensions`]).
//!
//! A binding adapts wire shapes and nothing else: every rule of a request's head is here.

use a2a_protocol_types::extensions::EXTENSIONS_HEADER;
use a2a_protocol_types::extensions::{format_extensions_header, parse_extensions_header};
use a2a_protocol_types::trace::TraceContext;
use a2a_protocol_types::{A2aError, ErrorKind};
use futures::FutureExt;
use http::{HeaderMap, HeaderValue};

use super::AppState;
use crate::handler::CallContext;
use crate::in_span::in_span;
use crate::telemetry::RequestTimer;

/// The versions this server speaks.
pub(crate) const SUPPORTED_VERSIONS: &[&str] = &["1.0"];
/// The header carrying the protocol version.
pub(crate) const VERSION_HEADER: &str = "A2A-Version";

/// The protocol version a request resolved to; it decides how the request is read and its
/// answer written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Version {
    /// A2A v1.0 (and its patch releases).
    V1_0,
}

/// What a request's head says, read once for every binding.
pub(crate) struct Head {
    /// The version the request is read and answered in.
    #[allow(dead_code)] // Read by the wire dialects to come; the check itself is in `read`.
    pub(crate) version: Version,
    /// Who calls, from where, in which trace, until when, with which extensions.
    pub(crate) ctx: CallContext,
}

impl Head {
    /// Reads the head of a request: `A2A-Version` (header, else the query parameter of the
    /// same name) first, refused when this server does not speak it, then the call context.
    /// The caller is the [`CallerIdentity`](crate::CallerIdentity) an authentication layer
    /// put in the request's extensions, else what the configured resolver reads from the
    /// headers.
    pub(crate) fn read(
        state: &AppState,
        headers: &HeaderMap,
        query: Option<&str>,
        extensions: &http::Extensions,
    ) -> Result<Self, A2aError> {
        let version = version(state, headers, query)?;
        let caller = extensions
            .get::<crate::CallerIdentity>()
            .cloned()
            .or_else(|| {
                state
                    .config
                    .caller
                    .as_ref()
                    .and_then(|resolve| resolve(headers))
            });
        let peer = extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|info| client_address(info.0.ip(), headers, &state.config.trusted_proxies));
        let trace = headers
            .get(a2a_protocol_types::trace::TRACEPARENT_HEADER)
            .and_then(|value| value.to_str().ok())
            .and_then(TraceContext::parse)
            .map_or_else(TraceContext::new_root, |incoming| incoming.child());
        let ctx = CallContext::default()
            .with_trace(Some(trace))
            .with_caller(caller)
            .with_peer(peer)
            .with_extensions(requested_extensions(headers))
            .with_stream_slots(extensions.get::<crate::connections::StreamSlots>().cloned())
            .with_deadline(Some(
                tokio::time::Instant::now() + state.config.request_deadline,
            ));
        Ok(Self { version, ctx })
    }

    /// Opens the request's span (`a2a_request` at info, with its binding, operation and trace
    /// id; when the server joins OpenTelemetry traces, a child of the caller's span, which
    /// may make that span's trace the request's own) and starts its timer.
    pub(crate) fn observe(
        &mut self,
        state: &AppState,
        binding: &'static str,
        operation: &'static str,
        headers: &HeaderMap,
    ) -> Observed {
        let ctx = &mut self.ctx;
        let span = joined_span(state, binding, operation, headers, ctx).unwrap_or_else(|| {
            // The trace id is known before the span opens, so it is formatted with the other
            // fields rather than recorded after (a second pass over the span's fields).
            tracing::info_span!(
                "a2a_request",
                binding,
                operation,
                trace_id = ctx.trace.map(|trace| trace.trace_id()).as_deref(),
            )
        });
        Observed {
            span,
            timer: RequestTimer::start(binding, operation),
            deadline: ctx.deadline,
            metrics: std::sync::Arc::clone(&state.metrics),
        }
    }

    /// The `A2A-Extensions` answer header: the extensions the request activated (by header,
    /// or declared by its message in `declared`) that this agent supports.
    pub(crate) fn activated_extensions(
        &self,
        state: &AppState,
        declared: &[String],
    ) -> Option<HeaderValue> {
        let card = state.handler.agent_card();
        let activated: Vec<&str> = self
            .ctx
            .extensions
            .iter()
            .chain(declared)
            .map(String::as_str)
            .filter(|uri| card.supports_extension(uri))
            .fold(Vec::new(), |mut acc, uri| {
                if !acc.contains(&uri) {
                    acc.push(uri);
                }
                acc
            });
        if activated.is_empty() {
            return None;
        }
        HeaderValue::from_str(&format_extensions_header(&activated)).ok()
    }
}

/// The request's span as a child of the caller's in the OpenTelemetry context, when the server
/// joins OpenTelemetry traces; that may make the caller's trace the request's own.
#[cfg(feature = "otel")]
fn joined_span(
    state: &AppState,
    binding: &'static str,
    operation: &'static str,
    headers: &HeaderMap,
    ctx: &mut CallContext,
) -> Option<tracing::Span> {
    if !state.joins_otel {
        return None;
    }
    let span = tracing::info_span!(
        "a2a_request",
        binding,
        operation,
        trace_id = tracing::field::Empty,
    );
    crate::telemetry::join_otel_trace(&span, headers, &mut ctx.trace);
    if let Some(trace) = ctx.trace.filter(|_| !span.is_disabled()) {
        span.record("trace_id", trace.trace_id().as_str());
    }
    Some(span)
}

/// Without the `otel` feature, no request joins an OpenTelemetry trace.
#[cfg(not(feature = "otel"))]
fn joined_span(
    _state: &AppState,
    _binding: &'static str,
    _operation: &'static str,
    _headers: &HeaderMap,
    _ctx: &mut CallContext,
) -> Option<tracing::Span> {
    None
}

/// An operation's span, timer and deadline.
pub(crate) struct Observed {
    span: tracing::Span,
    timer: RequestTimer,
    deadline: Option<tokio::time::Instant>,
    metrics: std::sync::Arc<crate::telemetry::RequestMetrics>,
}

/// How long after its deadline a request is cut off: the handler answers a blocking send at
/// the deadline itself, so this catches only what is stuck elsewhere (a store that does not
/// answer, say).
const PAST_DEADLINE: std::time::Duration = std::time::Duration::from_secs(1);

impl Observed {
    /// `work` in the span, recorded in the metrics with its outcome, and answered with an
    /// error once the deadline has passed: the request may have taken effect, so that error is
    /// not one a client retries blindly.
    ///
    /// A plain function, not an `async fn`: an `async fn` would keep `work` twice in its state
    /// (as its argument and inside the timeout), doubling the largest future of every
    /// request, which is then copied each time it is boxed.
    pub(crate) fn run<T>(
        self,
        work: impl Future<Output = Result<T, A2aError>>,
    ) -> impl Future<Output = Result<T, A2aError>> {
        use futures::future::Either;
        let Observed {
            span,
            timer,
            deadline,
            metrics,
        } = self;
        let bounded = match deadline {
            None => Either::Left(work),
            Some(deadline) => Either::Right(
                tokio::time::timeout_at(deadline + PAST_DEADLINE, work)
                    .map(|answer| answer.unwrap_or_else(|_| Err(past_deadline()))),
            ),
        };
        in_span(bounded, span).map(move |outcome| {
            timer.finish(&metrics, outcome.as_ref().err());
            outcome
        })
    }
}

fn past_deadline() -> A2aError {
    A2aError::new(
        ErrorKind::Internal,
        "the request was not answered within the server's request deadline; it may have taken \
         effect: read the task before repeating a change, and repeat a send only with its \
         idempotency key",
    )
}

/// The version a request asks for. A missing value means 0.3 (spec §3.6.2), which this
/// server does not speak unless configured to assume 1.0.
fn version(
    state: &AppState,
    headers: &HeaderMap,
    query: Option<&str>,
) -> Result<Version, A2aError> {
    let header = headers
        .get(VERSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty());
    // The query is read only when the header is missing: the header wins.
    let queried = header.is_none().then_some(query).flatten().and_then(|q| {
        serde_urlencoded::from_str::<Vec<(String, String)>>(q)
            .ok()?
            .into_iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(VERSION_HEADER))
            .map(|(_, v)| v)
            .filter(|v| !v.is_empty())
    });
    let requested = match header.or(queried.as_deref()) {
        Some(v) => v,
        None if state.config.require_version_header => "0.3",
        None => return Ok(Version::V1_0),
    };
    let major_minor = match requested.match_indices('.').nth(1) {
        Some((end, _)) => &requested[..end],
        None => requested,
    };
    match major_minor {
        "1.0" => Ok(Version::V1_0),
        _ => Err(A2aError::version_not_supported(
            requested,
            SUPPORTED_VERSIONS,
        )),
    }
}

/// The client's address: the connection's peer, or, when the peer is a trusted proxy, the
/// right-most address of `X-Forwarded-For` that is not a trusted proxy itself (each proxy
/// appends the address it was reached from; the ones to the left are the client's word).
fn client_address(
    peer: std::net::IpAddr,
    headers: &HeaderMap,
    trusted: &[crate::push::AddressRange],
) -> std::net::IpAddr {
    let is_trusted = |address: std::net::IpAddr| trusted.iter().any(|r| r.contains(address));
    if !is_trusted(peer) {
        return peer;
    }
    let forwarded: Vec<std::net::IpAddr> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|hop| hop.trim().parse().ok())
        .collect();
    forwarded
        .into_iter()
        .rev()
        .find(|hop| !is_trusted(*hop))
        .unwrap_or(peer)
}

fn requested_extensions(headers: &HeaderMap) -> Vec<String> {
    let joined: Vec<&str> = headers
        .get_all(EXTENSIONS_HEADER)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    parse_extensions_header(&joined.join(","))
}
