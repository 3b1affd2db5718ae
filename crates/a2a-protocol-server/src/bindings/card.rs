//! The public agent card at `/.well-known/agent-card.json`, with caching headers (spec §8.6).

use std::hash::{Hash, Hasher};

use a2a_protocol_types::AgentCard;
use a2a_protocol_types::agent_card::{AgentInterface, BINDING_HTTP_JSON, BINDING_JSONRPC};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, HOST, IF_NONE_MATCH, LAST_MODIFIED, VARY};
use http::{HeaderMap, HeaderValue, StatusCode};

use super::AppState;

/// The card as this server publishes it, with its interfaces filled in when the card names
/// none.
pub(crate) fn published_card(state: &AppState, headers: &HeaderMap) -> AgentCard {
    let mut card = state.handler.agent_card().clone();
    if card.supported_interfaces.is_empty() {
        let base = state.config.public_url.clone().unwrap_or_else(|| {
            let host = headers
                .get(HOST)
                .and_then(|h| h.to_str().ok())
                .filter(|h| {
                    h.chars()
                        .all(|c| c.is_ascii_alphanumeric() || ".:-[]".contains(c))
                })
                .unwrap_or("localhost");
            format!("{}://{host}", state.config.url_scheme())
        });
        if let Some(path) = &state.config.jsonrpc_path {
            let path = if path == "/" { "" } else { path.as_str() };
            card.supported_interfaces.push(AgentInterface::new(
                format!("{base}{path}"),
                BINDING_JSONRPC,
            ));
        }
        if let Some(prefix) = &state.config.rest_prefix {
            card.supported_interfaces.push(AgentInterface::new(
                format!("{base}{prefix}"),
                BINDING_HTTP_JSON,
            ));
        }
        #[cfg(feature = "grpc")]
        if state.config.grpc {
            card.supported_interfaces.push(AgentInterface::new(
                base.clone(),
                a2a_protocol_types::agent_card::BINDING_GRPC,
            ));
        }
    }
    card
}

pub(crate) async fn agent_card(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let card = published_card(&state, &headers);
    let body = match serde_json::to_vec(&card) {
        Ok(body) => body,
        Err(error) => {
            tracing::error!(%error, "could not serialize the agent card");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    body.hash(&mut hasher);
    let etag = format!("\"{:016x}\"", hasher.finish());
    let mut response_headers = HeaderMap::new();
    if let Ok(value) = HeaderValue::from_str(&etag) {
        response_headers.insert(ETAG, value);
    }
    if let Ok(value) = HeaderValue::from_str(&format!(
        "public, max-age={}",
        state.config.card_max_age.as_secs()
    )) {
        response_headers.insert(CACHE_CONTROL, value);
    }
    if let Ok(value) = HeaderValue::from_str(&httpdate(state.started)) {
        response_headers.insert(LAST_MODIFIED, value);
    }
    // URLs read from the request's Host differ per Host: a cache must keep one card per Host,
    // or one client's Host header would be served to everyone.
    if state.config.public_url.is_none()
        && state.handler.agent_card().supported_interfaces.is_empty()
    {
        response_headers.insert(VARY, HeaderValue::from_static("host"));
    }
    let matches = headers
        .get(IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .any(|tag| tag.trim() == etag || tag.trim() == "*")
        });
    if matches {
        return (StatusCode::NOT_MODIFIED, response_headers).into_response();
    }
    response_headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    (StatusCode::OK, response_headers, body).into_response()
}

/// An HTTP date (RFC 9110 IMF-fixdate).
fn httpdate(time: std::time::SystemTime) -> String {
    let time: chrono::DateTime<chrono::Utc> = time.into();
    time.format("%a, %d %b %Y %H:%M:%S GMT").to_string()
}
