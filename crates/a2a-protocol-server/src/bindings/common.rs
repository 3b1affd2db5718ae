//! What both bindings do the same way: service parameters (`A2A-Version`, `A2A-Extensions`),
//! the caller, content types and body limits.

use a2a_protocol_types::extensions::{
    EXTENSIONS_HEADER, format_extensions_header, parse_extensions_header,
};
use a2a_protocol_types::trace::TraceContext;
use a2a_protocol_types::{A2aError, AgentCard, ErrorKind};
use axum::body::{Body, Bytes};
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderValue};
use http_body_util::{BodyExt, LengthLimitError, Limited};

use super::AppState;
use crate::handler::CallContext;

/// The versions this server speaks.
pub(crate) const SUPPORTED_VERSIONS: &[&str] = &["1.0"];
/// The header carrying the protocol version.
pub(crate) const VERSION_HEADER: &str = "A2A-Version";

/// Checks `A2A-Version` (header, or query parameter of the same name). A missing value means
/// 0.3 (spec §3.6.2), which this server does not speak unless configured to assume 1.0.
pub(crate) fn check_version(
    state: &AppState,
    headers: &HeaderMap,
    query: Option<&str>,
) -> Result<(), A2aError> {
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
        None => return Ok(()),
    };
    let major_minor = match requested.match_indices('.').nth(1) {
        Some((end, _)) => &requested[..end],
        None => requested,
    };
    if SUPPORTED_VERSIONS.contains(&major_minor) {
        Ok(())
    } else {
        Err(A2aError::version_not_supported(
            requested,
            SUPPORTED_VERSIONS,
        ))
    }
}

/// The caller, the client's address and the extensions the request activates. The caller is
/// the [`CallerIdentity`](crate::CallerIdentity) an authentication layer put in the request's
/// extensions, else what the configured resolver reads from the headers.
pub(crate) fn call_context(
    state: &AppState,
    headers: &HeaderMap,
    extensions: &http::Extensions,
) -> CallContext {
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
        .map(|info| info.0.ip());
    let trace = headers
        .get(a2a_protocol_types::trace::TRACEPARENT_HEADER)
        .and_then(|value| value.to_str().ok())
        .and_then(TraceContext::parse)
        .map_or_else(TraceContext::new_root, |incoming| incoming.child());
    CallContext::default()
        .with_trace(Some(trace))
        .with_caller(caller)
        .with_peer(peer)
        .with_extensions(requested_extensions(headers))
        .with_deadline(Some(
            tokio::time::Instant::now() + state.config.request_deadline,
        ))
}

/// The span a request runs in, the same on every binding: `a2a_request` at info, with its
/// binding, operation and trace id; when `state` joins OpenTelemetry traces, a child of the
/// caller's span in the OpenTelemetry context (which may make the request's trace context
/// the span's own).
pub(crate) fn request_span(
    state: &AppState,
    binding: &'static str,
    operation: &'static str,
    #[cfg_attr(not(feature = "otel"), allow(unused_variables))] headers: &HeaderMap,
    ctx: &mut CallContext,
) -> tracing::Span {
    #[cfg(feature = "otel")]
    if state.joins_otel {
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
        return span;
    }
    #[cfg(not(feature = "otel"))]
    let _ = state;
    // The trace id is known before the span opens, so it is formatted with the other fields
    // rather than recorded after (which costs a second pass over the span's fields).
    tracing::info_span!(
        "a2a_request",
        binding,
        operation,
        trace_id = ctx.trace.map(|trace| trace.trace_id()).as_deref(),
    )
}

/// How long after its deadline a request is cut off: the handler answers a blocking send at
/// the deadline itself, so this catches only what is stuck elsewhere (a store that does not
/// answer, say).
const PAST_DEADLINE: std::time::Duration = std::time::Duration::from_secs(1);

/// `dispatch`'s outcome, or an error once the request's deadline has passed: the request
/// may have taken effect, so the error is not one a client retries blindly.
///
/// A plain function, not an `async fn`: an `async fn` would keep `dispatch` twice in its state
/// (as its argument and inside the timeout), doubling the largest future of every request,
/// which is then copied each time it is boxed.
pub(crate) fn within_deadline<T>(
    deadline: Option<tokio::time::Instant>,
    dispatch: impl std::future::Future<Output = Result<T, A2aError>>,
) -> impl std::future::Future<Output = Result<T, A2aError>> {
    use futures::future::{Either, FutureExt};
    let Some(deadline) = deadline else {
        return Either::Left(dispatch);
    };
    Either::Right(
        tokio::time::timeout_at(deadline + PAST_DEADLINE, dispatch).map(|answer| {
            answer.unwrap_or_else(|_| {
                Err(A2aError::new(
                    ErrorKind::Internal,
                    "the request was not answered within the server's request deadline; it \
                     may have taken effect: read the task before repeating a change, and \
                     repeat a send only with its idempotency key",
                ))
            })
        }),
    )
}

fn requested_extensions(headers: &HeaderMap) -> Vec<String> {
    let joined: Vec<&str> = headers
        .get_all(EXTENSIONS_HEADER)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    parse_extensions_header(&joined.join(","))
}

/// The extensions a send request's `message` declares (`message.extensions`), read leniently.
pub(crate) fn declared_extensions(message: Option<&serde_json::Value>) -> Vec<String> {
    message
        .and_then(|m| m.get("extensions"))
        .and_then(|e| serde_json::from_value(e.clone()).ok())
        .unwrap_or_default()
}

/// The `A2A-Extensions` response header: the requested (or message-declared) extensions this
/// agent supports.
pub(crate) fn activated_extensions(
    card: &AgentCard,
    ctx: &CallContext,
    declared: &[String],
) -> Option<HeaderValue> {
    let activated: Vec<&str> = ctx
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

/// Refuses a POST whose body is not declared as JSON, a missing `Content-Type` included. A
/// browser sends a POST without a preflight only when its type is missing or one of three
/// form types, so requiring JSON keeps a web page from firing sends or cancels at an agent it
/// can reach (one on localhost, say) behind its user's back.
pub(crate) fn check_json_content_type(headers: &HeaderMap) -> Result<(), A2aError> {
    let media_type = request_media_type(headers);
    if matches!(media_type.as_deref(), Some(JSON | A2A_JSON)) {
        return Ok(());
    }
    let problem = match media_type {
        None => "a request with a body needs Content-Type: application/json (or \
                 application/a2a+json)"
            .to_owned(),
        Some(other) => format!(
            "Content-Type {:?} is not supported; send application/json or application/a2a+json",
            other.chars().take(64).collect::<String>()
        ),
    };
    Err(A2aError::new(ErrorKind::ContentTypeNotSupported, problem))
}

/// Refuses a body in which one JSON object names a member twice. A JSON reader would keep
/// one of the two values silently, and which one is up to the reader; both bindings refuse.
pub(crate) fn refuse_repeated_members(bytes: &[u8]) -> Result<(), (usize, A2aError)> {
    match super::objects::repeated_member(bytes) {
        None => Ok(()),
        Some((depth, name)) => {
            let name: String = name.chars().take(64).collect();
            let error = A2aError::invalid_params(format!(
                "the member {name:?} appears twice in one JSON object; send each member once"
            ))
            .with_field_violation(name, "repeated");
            Err((depth, error))
        }
    }
}

/// The A2A media type, which HTTP+JSON answers in unless the client asks for plain JSON.
pub(crate) const A2A_JSON: &str = "application/a2a+json";
/// Plain JSON.
pub(crate) const JSON: &str = "application/json";

/// The media type to answer in: the one the client's `Accept` names (`application/a2a+json`
/// first), else the one its request body used, else `default`. A client that sent and accepts
/// only `application/json` gets `application/json`.
pub(crate) fn response_media_type(headers: &HeaderMap, default: &'static str) -> &'static str {
    let mut accepts_json = false;
    for value in headers.get_all(http::header::ACCEPT) {
        for range in value.to_str().unwrap_or("").split(',') {
            let mut params = range.split(';');
            let media_type = params.next().unwrap_or("").trim();
            let refused = params.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .and_then(|q| q.trim().parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            if refused {
                continue;
            }
            if media_type.eq_ignore_ascii_case(A2A_JSON) {
                return A2A_JSON;
            }
            accepts_json |= media_type.eq_ignore_ascii_case(JSON);
        }
    }
    if accepts_json {
        return JSON;
    }
    match request_media_type(headers).as_deref() {
        Some(A2A_JSON) => A2A_JSON,
        Some(JSON) => JSON,
        _ => default,
    }
}

/// The request's `Content-Type` without parameters, in lower case.
fn request_media_type(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(CONTENT_TYPE)?.to_str().ok()?;
    Some(value.split(';').next()?.trim().to_ascii_lowercase())
}

/// Why a body could not be read.
pub(crate) enum BodyError {
    TooLarge(usize),
    TimedOut(std::time::Duration),
    Unreadable,
}

impl BodyError {
    pub(crate) fn into_error(self) -> A2aError {
        match self {
            BodyError::TooLarge(limit) => A2aError::new(
                ErrorKind::InvalidRequest,
                format!("the request body is larger than this server's limit of {limit} bytes"),
            ),
            BodyError::TimedOut(deadline) => A2aError::new(
                ErrorKind::InvalidRequest,
                format!(
                    "the request body did not arrive within {} s; send it at once",
                    deadline.as_secs_f64()
                ),
            ),
            BodyError::Unreadable => A2aError::new(
                ErrorKind::InvalidRequest,
                "the request body could not be read",
            ),
        }
    }

    pub(crate) fn status(&self) -> http::StatusCode {
        match self {
            BodyError::TooLarge(_) => http::StatusCode::PAYLOAD_TOO_LARGE,
            BodyError::TimedOut(_) => http::StatusCode::REQUEST_TIMEOUT,
            BodyError::Unreadable => http::StatusCode::BAD_REQUEST,
        }
    }
}

/// Reads the body: at most [`ServerConfig::max_body_bytes`](crate::ServerConfig::max_body_bytes),
/// within [`ServerConfig::body_timeout`](crate::ServerConfig::body_timeout).
pub(crate) async fn read_body(body: Body, state: &AppState) -> Result<Bytes, BodyError> {
    let limit = state.config.max_body_bytes;
    let deadline = state.config.body_timeout;
    match tokio::time::timeout(deadline, Limited::new(body, limit).collect()).await {
        Err(_) => Err(BodyError::TimedOut(deadline)),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(error)) if error.downcast_ref::<LengthLimitError>().is_some() => {
            Err(BodyError::TooLarge(limit))
        }
        Ok(Err(_)) => Err(BodyError::Unreadable),
    }
}

/// A `Retry-After` header value for a retryable error.
pub(crate) fn retry_after(error: &A2aError) -> Option<HeaderValue> {
    if !error.kind.is_retryable() {
        return None;
    }
    let seconds = error
        .retry_after()
        .map_or(1, |d| d.as_secs_f64().ceil().max(1.0) as u64);
    HeaderValue::from_str(&seconds.to_string()).ok()
}
