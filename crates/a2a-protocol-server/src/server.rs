//! [`A2aServer`]: the agent on HTTP, with both bindings on one port (or either alone), the
//! agent card, body limits, `TCP_NODELAY` and graceful shutdown.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::serve::ListenerExt;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::bindings;
use crate::executor::CallerIdentity;
use crate::handler::RequestHandler;
use crate::store::{Retention, RetentionPolicy, RetentionSweeper};

/// Establishes who is calling from a request's headers (for example by checking a bearer
/// token). Its answer scopes idempotency keys and is passed to the executor.
pub type CallerResolver = Arc<dyn Fn(&http::HeaderMap) -> Option<CallerIdentity> + Send + Sync>;

/// How the server listens and speaks.
#[derive(Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Where JSON-RPC requests are posted; `None` turns the binding off. Default `/`.
    pub jsonrpc_path: Option<String>,
    /// The path prefix of the HTTP+JSON binding; `None` turns it off. Default `""` (the root).
    pub rest_prefix: Option<String>,
    /// The largest request body accepted, in bytes. Default 4 MiB.
    pub max_body_bytes: usize,
    /// The URL clients reach the server at, used in the card's interfaces. Default: derived
    /// from each card request's `Host` header.
    pub public_url: Option<String>,
    /// Refuse requests without an `A2A-Version` header, which the spec reads as version 0.3.
    /// Default `true`.
    pub require_version_header: bool,
    /// `Cache-Control: max-age` of the agent card. Default 5 minutes.
    pub card_max_age: Duration,
    /// Interval of SSE keep-alive comments. Default 15 s.
    pub keep_alive: Duration,
    /// Who is calling; default: nobody is authenticated.
    pub caller: Option<CallerResolver>,
}

impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerConfig")
            .field("jsonrpc_path", &self.jsonrpc_path)
            .field("rest_prefix", &self.rest_prefix)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("public_url", &self.public_url)
            .field("require_version_header", &self.require_version_header)
            .field("card_max_age", &self.card_max_age)
            .field("keep_alive", &self.keep_alive)
            .field("caller", &self.caller.as_ref().map(|_| "<resolver>"))
            .finish()
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            jsonrpc_path: Some("/".into()),
            rest_prefix: Some(String::new()),
            max_body_bytes: 4 * 1024 * 1024,
            public_url: None,
            require_version_header: true,
            card_max_age: Duration::from_secs(300),
            keep_alive: Duration::from_secs(15),
            caller: None,
        }
    }
}

impl ServerConfig {
    /// Sets [`ServerConfig::jsonrpc_path`].
    pub fn with_jsonrpc_path(mut self, path: Option<&str>) -> Self {
        self.jsonrpc_path = path.map(str::to_owned);
        self
    }

    /// Sets [`ServerConfig::rest_prefix`].
    pub fn with_rest_prefix(mut self, prefix: Option<&str>) -> Self {
        self.rest_prefix = prefix.map(|p| p.trim_end_matches('/').to_owned());
        self
    }

    /// Sets [`ServerConfig::max_body_bytes`].
    pub fn with_max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Sets [`ServerConfig::public_url`].
    pub fn with_public_url(mut self, url: impl Into<String>) -> Self {
        self.public_url = Some(url.into().trim_end_matches('/').to_owned());
        self
    }

    /// Sets [`ServerConfig::require_version_header`].
    pub fn with_require_version_header(mut self, require: bool) -> Self {
        self.require_version_header = require;
        self
    }

    /// Sets [`ServerConfig::card_max_age`].
    pub fn with_card_max_age(mut self, max_age: Duration) -> Self {
        self.card_max_age = max_age;
        self
    }

    /// Sets [`ServerConfig::keep_alive`].
    pub fn with_keep_alive(mut self, interval: Duration) -> Self {
        self.keep_alive = interval;
        self
    }

    /// Sets [`ServerConfig::caller`].
    pub fn with_caller_resolver(mut self, resolver: CallerResolver) -> Self {
        self.caller = Some(resolver);
        self
    }
}

/// An A2A agent served over HTTP.
pub struct A2aServer {
    handler: RequestHandler,
    config: ServerConfig,
    shutdown: CancellationToken,
    sweeper: Option<(Arc<dyn Retention>, Duration, RetentionPolicy)>,
}

impl A2aServer {
    /// Serves `handler` with the default configuration.
    pub fn new(handler: RequestHandler) -> Self {
        Self {
            handler,
            config: ServerConfig::default(),
            shutdown: CancellationToken::new(),
            sweeper: None,
        }
    }

    /// Sweeps `store` with `policy` every `interval` while the server runs.
    pub fn with_retention_sweeper(
        mut self,
        store: Arc<dyn Retention>,
        interval: Duration,
        policy: RetentionPolicy,
    ) -> Self {
        self.sweeper = Some((store, interval, policy));
        self
    }

    /// Sets the configuration.
    pub fn with_config(mut self, config: ServerConfig) -> Self {
        self.config = config;
        self
    }

    /// The axum router, to mount in a larger application.
    pub fn router(&self) -> Router {
        bindings::router(
            self.handler.clone(),
            Arc::new(self.config.clone()),
            self.shutdown.clone(),
        )
    }

    /// Serves on `listener` until `shutdown` completes, then stops accepting, ends open
    /// streams, and waits for requests in flight.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let router = self.router();
        let streams = self.shutdown.clone();
        // Dropped, and so stopped, when serving ends.
        let _sweeper = self
            .sweeper
            .map(|(store, interval, policy)| RetentionSweeper::spawn(store, interval, policy));
        let listener = listener.tap_io(|tcp| {
            if let Err(error) = tcp.set_nodelay(true) {
                tracing::debug!(%error, "could not set TCP_NODELAY");
            }
        });
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                shutdown.await;
                streams.cancel();
            })
            .await
    }
}
