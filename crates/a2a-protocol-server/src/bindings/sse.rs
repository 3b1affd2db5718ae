//! Server-Sent Events for both bindings: one `data:` line of JSON per event, its `id` the
//! task's generation once the event was recorded (so a client that reconnects knows what it
//! missed), keep-alive comments, and an end when the server shuts down.

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
    // Counted open until the response body, and so this stream, is dropped.
    let open = crate::telemetry::GaugeHeld::open_stream();
    let stream = events
        .take_until(async move { shutdown.cancelled().await })
        .map(move |event| {
            let _open = &open;
            let generation = event.generation();
            let data = serde_json::to_string(&wrap(event)).unwrap_or_else(|error| {
                tracing::error!(%error, "could not serialize a stream event");
                String::from("{}")
            });
            let mut sse = Event::default().data(data);
            if generation > 0 {
                sse = sse.id(generation.to_string());
            }
            Ok::<_, Infallible>(sse)
        });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(state.config.keep_alive))
        .into_response()
}
