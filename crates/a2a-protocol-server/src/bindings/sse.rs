//! Server-Sent Events for both bindings: one `data:` line of JSON per event, keep-alive
//! comments, and an end when the server shuts down.

use std::convert::Infallible;

use a2a_protocol_types::StreamResponse;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::Serialize;

use super::AppState;
use crate::handler::EventStream;

/// Streams `events`, each written by `wrap` (the bare event for HTTP+JSON, a JSON-RPC response
/// for JSON-RPC).
pub(crate) fn respond<T: Serialize>(
    state: &AppState,
    events: EventStream,
    wrap: impl Fn(StreamResponse) -> T + Send + 'static,
) -> Response {
    let shutdown = state.shutdown.clone();
    let stream = events
        .take_until(async move { shutdown.cancelled().await })
        .map(move |event| {
            let data = serde_json::to_string(&wrap(event)).unwrap_or_else(|error| {
                tracing::error!(%error, "could not serialize a stream event");
                String::from("{}")
            });
            Ok::<_, Infallible>(Event::default().data(data))
        });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(state.config.keep_alive))
        .into_response()
}
