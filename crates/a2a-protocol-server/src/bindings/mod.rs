//! HTTP bindings: one module per binding, each turning HTTP into handler calls and handler
//! errors into that binding's error body in exactly one place.

mod call;
mod card;
mod common;
mod envelope;
mod gate;
#[cfg(feature = "grpc")]
mod grpc;
mod jsonrpc;
mod objects;
mod rest;
mod sse;
mod unread_body;

use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};
use tokio_util::sync::CancellationToken;

use crate::config::ServerConfig;
use crate::handler::RequestHandler;

/// What every binding's handlers share.
#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) handler: RequestHandler,
    pub(crate) config: Arc<ServerConfig>,
    pub(crate) shutdown: CancellationToken,
    pub(crate) metrics: Arc<crate::telemetry::RequestMetrics>,
    /// Whether request spans join the caller's trace in the OpenTelemetry context: whether an
    /// OpenTelemetry layer was installed when the router was made.
    #[cfg(feature = "otel")]
    pub(crate) joins_otel: bool,
    pub(crate) started: std::time::SystemTime,
    pub(crate) gate: gate::Gate,
}

pub(crate) fn router(
    handler: RequestHandler,
    config: Arc<ServerConfig>,
    shutdown: CancellationToken,
) -> Router {
    let key_headers = api_key_headers(handler.agent_card());
    let state = AppState {
        gate: gate::Gate::new(
            config.authentication.as_ref(),
            handler.agent_card(),
            config.verifies_client_certificates(),
        ),
        handler,
        config: Arc::clone(&config),
        shutdown,
        metrics: Arc::default(),
        #[cfg(feature = "otel")]
        joins_otel: crate::telemetry::exports_spans(),
        started: std::time::SystemTime::now(),
    };
    let mut router = Router::new().route(
        a2a_protocol_types::agent_card::AGENT_CARD_PATH,
        get(card::agent_card).fallback(rest::get_only),
    );
    if let Some(path) = &config.jsonrpc_path {
        router = router.route(path, post(jsonrpc::handle).fallback(rest::post_only));
    }
    #[cfg(feature = "grpc")]
    if config.grpc {
        router = router.route_service(grpc::SERVICE_PATH, grpc::service(state.clone()));
    }
    if config.rest_prefix.is_some() {
        router = router.fallback(rest::handle);
    } else {
        router = router.fallback(rest::not_found);
    }
    // The gate inside: a refusal leaves the body unread, so it closes the connection too. No
    // gate at all without authentication, so requests pay nothing for it.
    if !matches!(state.gate, gate::Gate::Open) {
        router = router.layer(axum::middleware::from_fn_with_state(
            state.clone(),
            gate::gate,
        ));
    }
    let router = router
        .layer(axum::middleware::from_fn(unread_body::close_if_unread))
        .with_state(state);
    match cors(&config.cors_origins, &key_headers) {
        Some(cors) => router.layer(cors),
        None => router,
    }
}

/// The headers the card's API key schemes travel in, which a browser must be allowed to send.
fn api_key_headers(card: &a2a_protocol_types::AgentCard) -> Vec<http::HeaderName> {
    card.security_schemes
        .values()
        .filter_map(|scheme| match scheme {
            a2a_protocol_types::security::SecurityScheme::ApiKey(key)
                if key.location == "header" =>
            {
                http::HeaderName::from_bytes(key.name.as_bytes()).ok()
            }
            _ => None,
        })
        .collect()
}

/// CORS for the configured origins; `None` (no CORS headers at all) when there are none.
fn cors(
    origins: &[String],
    extra_headers: &[http::HeaderName],
) -> Option<tower_http::cors::CorsLayer> {
    use http::{HeaderName, HeaderValue, Method};
    let origins: Vec<HeaderValue> = origins
        .iter()
        .filter_map(|origin| match HeaderValue::from_str(origin) {
            Ok(value) => Some(value),
            Err(_) => {
                tracing::warn!(origin = %origin.escape_debug(), "ignoring a CORS origin that is not a header value");
                None
            }
        })
        .collect();
    if origins.is_empty() {
        return None;
    }
    let header = HeaderName::from_static;
    Some(
        tower_http::cors::CorsLayer::new()
            .allow_origin(origins)
            .allow_methods([Method::GET, Method::POST, Method::DELETE])
            .allow_headers(
                [
                    http::header::CONTENT_TYPE,
                    http::header::AUTHORIZATION,
                    http::header::ACCEPT,
                    header("a2a-version"),
                    header("a2a-extensions"),
                    header("last-event-id"),
                ]
                .into_iter()
                .chain(extra_headers.iter().cloned())
                .collect::<Vec<_>>(),
            )
            .expose_headers([
                header("a2a-extensions"),
                http::header::RETRY_AFTER,
                http::header::WWW_AUTHENTICATE,
            ]),
    )
}
