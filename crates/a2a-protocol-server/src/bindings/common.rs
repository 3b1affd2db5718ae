//! What both HTTP bindings do the same way with a body: content types, size and time limits,
//! repeated members, the media type of the answer, and `Retry-After`.

use a2a_protocol_types::{A2aError, ErrorKind};
use axum::body::{Body, Bytes};
use http::header::CONTENT_TYPE;
use http::{HeaderMap, HeaderValue};
use http_body_util::{BodyExt, LengthLimitError, Limited};

use super::AppState;

/// The extensions a send request's `message` declares (`message.extensions`), read leniently.
pub(crate) fn declared_extensions(message: Option<&serde_json::Value>) -> Vec<String> {
    message
        .and_then(|m| m.get("extensions"))
        .and_then(|e| serde_json::from_value(e.clone()).ok())
        .unwrap_or_default()
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
    /// The server's budget for large bodies stayed spent.
    Crowded,
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
            BodyError::Crowded => A2aError::resource_exhausted(
                crate::connections::large_bodies::Crowded::MESSAGE,
                crate::connections::large_bodies::RETRY_AFTER,
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
            BodyError::Crowded => http::StatusCode::SERVICE_UNAVAILABLE,
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
        Ok(Err(error)) if crate::connections::large_bodies::Crowded::caused(&*error) => {
            Err(BodyError::Crowded)
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
