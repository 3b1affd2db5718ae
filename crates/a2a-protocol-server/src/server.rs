//! [`A2aServer`]: the agent on HTTP, with both bindings on one port (or either alone), the
//! agent card, body limits, `TCP_NODELAY` and graceful shutdown.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::response::IntoResponse;
use axum::routing::Route;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower::{Layer, Service};

use crate::bindings;
use crate::config::ServerConfig;
use crate::embedding::ServerHandle;
use crate::handler::RequestHandler;
use crate::store::{Retention, RetentionPolicy, RetentionSweeper};

/// After shutdown has settled every task and ended every stream, how long answers in flight
/// get to reach their clients before the server stops regardless.
const LINGER: Duration = Duration::from_secs(3);

/// An A2A agent served over HTTP.
///
/// ```
/// use a2a_protocol_server::agents::EchoAgent;
/// use a2a_protocol_server::{A2aServer, RequestHandler};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let url = format!("http://{}/.well-known/agent-card.json", listener.local_addr()?);
/// let handler = RequestHandler::builder(EchoAgent::new()).with_agent_card(EchoAgent::card()).build();
/// let server = A2aServer::new(handler);
/// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
/// let serving = tokio::spawn(server.serve(listener, async {
///     let _ = stopped.await;
/// }));
/// let card: serde_json::Value = reqwest::get(&url).await?.json().await?;
/// assert_eq!(card["name"], "Echo agent");
/// stop.send(()).ok();
/// serving.await??;
/// # Ok(())
/// # }
/// ```
pub struct A2aServer {
    handler: RequestHandler,
    config: ServerConfig,
    shutdown: CancellationToken,
    sweeper: Option<(Arc<dyn Retention>, Duration, RetentionPolicy)>,
    layers: Vec<RouterLayer>,
}

/// A tower layer kept until the router is built, so [`A2aServer::router`] can be called again.
type RouterLayer = Arc<dyn Fn(Router) -> Router + Send + Sync>;

impl A2aServer {
    /// Serves `handler` with the default configuration.
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::{A2aServer, RequestHandler};
    ///
    /// let server = A2aServer::new(RequestHandler::builder(EchoAgent::new()).build());
    /// # let _ = server;
    /// ```
    pub fn new(handler: RequestHandler) -> Self {
        Self {
            handler,
            config: ServerConfig::default(),
            shutdown: CancellationToken::new(),
            sweeper: None,
            layers: Vec::new(),
        }
    }

    /// Wraps every route in `layer` (a tower layer, such as an authentication layer that puts
    /// a [`CallerIdentity`](crate::CallerIdentity) in the request's extensions, or `tower_http`'s tracing). Layers
    /// run outside the server's own (authentication gate, CORS), the last one added
    /// outermost, and apply to [`serve`](Self::serve), [`embed`](Self::embed) and
    /// [`router`](Self::router) alike.
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::{A2aServer, CallerIdentity, RequestHandler};
    ///
    /// // Every request is made by "alice" (a real layer would check a credential).
    /// let server = A2aServer::new(RequestHandler::builder(EchoAgent::new()).build()).layer(
    ///     axum::middleware::map_request(|mut request: axum::extract::Request| async move {
    ///         request.extensions_mut().insert(CallerIdentity("alice".to_owned()));
    ///         request
    ///     }),
    /// );
    /// # let _ = server;
    /// ```
    #[must_use]
    pub fn layer<L>(mut self, layer: L) -> Self
    where
        L: Layer<Route> + Clone + Send + Sync + 'static,
        L::Service: Service<Request> + Clone + Send + Sync + 'static,
        <L::Service as Service<Request>>::Response: IntoResponse + 'static,
        <L::Service as Service<Request>>::Error: Into<std::convert::Infallible> + 'static,
        <L::Service as Service<Request>>::Future: Send + 'static,
    {
        self.layers
            .push(Arc::new(move |router: Router| router.layer(layer.clone())));
        self
    }

    /// Sweeps `store` with `policy` every `interval` while the server runs.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::store::{RetentionPolicy, SqliteTaskStore};
    /// use a2a_protocol_server::{A2aServer, RequestHandler};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = tempfile::tempdir()?;
    /// # let url = format!("sqlite://{}", dir.path().join("tasks.db").display());
    /// let store = Arc::new(SqliteTaskStore::open(&url).await?);
    /// let handler = RequestHandler::builder(EchoAgent::new()).with_store(store.clone()).build();
    /// let server = A2aServer::new(handler).with_retention_sweeper(
    ///     store,
    ///     Duration::from_secs(3600),
    ///     RetentionPolicy::default().with_terminal_max_age(Duration::from_secs(24 * 3600)),
    /// );
    /// # let _ = server;
    /// # Ok(())
    /// # }
    /// ```
    pub fn with_retention_sweeper(
        mut self,
        store: impl Retention,
        interval: Duration,
        policy: RetentionPolicy,
    ) -> Self {
        self.sweeper = Some((Arc::new(store), interval, policy));
        self
    }

    /// Sets the configuration.
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::{A2aServer, RequestHandler, ServerConfig};
    ///
    /// let server = A2aServer::new(RequestHandler::builder(EchoAgent::new()).build())
    ///     .with_config(ServerConfig::default().with_rest_prefix(None)); // JSON-RPC only
    /// # let _ = server;
    /// ```
    pub fn with_config(mut self, config: ServerConfig) -> Self {
        self.config = config;
        self
    }

    /// Starts everything [`serve`](Self::serve) runs beside the routes (recovery of turns a
    /// lost predecessor left, the retention sweeper) and returns the router to mount in a
    /// larger axum application, with the [`ServerHandle`] that shuts it down the way `serve`
    /// does: new sends refused, running turns drained and settled, open streams ended, the
    /// sweeper stopped. Connection limits and timeouts
    /// ([`ServerConfig::max_connections`], header and body timeouts, TLS) belong to the
    /// application's own HTTP server; everything else in [`ServerConfig`] applies.
    ///
    /// # Errors
    ///
    /// Refuses, as [`std::io::ErrorKind::InvalidInput`], an authentication configuration
    /// that cannot serve the card's security requirements.
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::{A2aServer, RequestHandler, ServerConfig};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (a2a, handle) = A2aServer::new(RequestHandler::builder(EchoAgent::new()).build())
    ///     .with_config(ServerConfig::default().with_public_url("http://127.0.0.1"))
    ///     .embed()
    ///     .await?;
    /// // Mount the agent beside the application's own routes.
    /// let app = axum::Router::new()
    ///     .route("/healthz", axum::routing::get(|| async { "ok" }))
    ///     .merge(a2a);
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// let base = format!("http://{}", listener.local_addr()?);
    /// let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    /// let serving = tokio::spawn(async move {
    ///     axum::serve(listener, app)
    ///         // The agent's streams end first, so the application's server can finish.
    ///         .with_graceful_shutdown(async move {
    ///             let _ = stopped.await;
    ///             handle.shutdown().await;
    ///         })
    ///         .await
    /// });
    /// assert_eq!(reqwest::get(format!("{base}/healthz")).await?.text().await?, "ok");
    /// assert!(reqwest::get(format!("{base}/.well-known/agent-card.json")).await?.status().is_success());
    /// stop.send(()).ok();
    /// serving.await??;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn embed(self) -> std::io::Result<(Router, ServerHandle)> {
        if let Some(auth) = &self.config.authentication {
            let client_certificates = self.config.verifies_client_certificates();
            auth.check_with(self.handler.agent_card(), client_certificates)
                .map_err(|problem| {
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        format!("authentication is misconfigured: {problem}"),
                    )
                })?;
        }
        let router = self.router();
        // A restarted server recovers what its lost predecessor left, sends or not.
        if let Err(error) = self.handler.start_upkeep().await {
            tracing::warn!(%error, "could not start keeping turns up in the store; retrying at the first send");
        }
        let sweeper = self
            .sweeper
            .map(|(store, interval, policy)| RetentionSweeper::spawn(store, interval, policy));
        let handle = ServerHandle::new(
            self.handler,
            self.shutdown,
            self.config.shutdown_drain,
            sweeper,
        );
        Ok((router, handle))
    }

    /// The routes alone, for tests and tools that drive them without a server (for example
    /// with `tower::ServiceExt::oneshot`). Nothing else starts: no recovery of a lost
    /// predecessor's turns, no retention sweeper, and no way to end open streams at
    /// shutdown. To mount the agent in an application, use [`embed`](Self::embed).
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::{A2aServer, RequestHandler};
    /// use tower::ServiceExt;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let routes = A2aServer::new(RequestHandler::builder(EchoAgent::new()).build()).router();
    /// let request = http::Request::get("/.well-known/agent-card.json").body(axum::body::Body::empty())?;
    /// assert!(routes.oneshot(request).await?.status().is_success());
    /// # Ok(())
    /// # }
    /// ```
    pub fn router(&self) -> Router {
        let routes = bindings::router(
            self.handler.clone(),
            Arc::new(self.config.clone()),
            self.shutdown.clone(),
        );
        self.layers
            .iter()
            .fold(routes, |router, layer| layer(router))
    }

    /// Serves on `listener` until `shutdown` completes, then shuts down without leaving work
    /// behind: it stops accepting connections and new sends, gives running turns
    /// [`ServerConfig::shutdown_drain`] to finish and settles the rest
    /// ([`RequestHandler::shutdown`]), ends open streams with what their tasks became, and
    /// returns once requests in flight are answered, or a few seconds later in any case, so
    /// a client that trickles bytes or holds a request open cannot keep it running.
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::{A2aServer, RequestHandler};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// A2aServer::new(RequestHandler::builder(EchoAgent::new()).build())
    ///     .serve(listener, async {
    ///         // A real server waits for Ctrl-C: `let _ = tokio::signal::ctrl_c().await;`
    ///     })
    ///     .await
    /// # }
    /// ```
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let config = self.config.clone();
        let (router, handle) = self.embed().await?;
        let stop_accepting = CancellationToken::new();
        let serving = crate::connections::serve(listener, router, &config, stop_accepting.clone());
        tokio::pin!(serving);
        tokio::select! {
            served = &mut serving => return served,
            () = shutdown => {}
        }
        stop_accepting.cancel();
        let settle = handle.shutdown();
        tokio::pin!(settle);
        tokio::select! {
            served = &mut serving => {
                settle.await;
                return served;
            }
            () = &mut settle => {}
        }
        match tokio::time::timeout(LINGER, serving).await {
            Ok(served) => served,
            Err(_) => {
                tracing::warn!("closing connections still open {LINGER:?} after shutdown");
                Ok(())
            }
        }
    }
}
