//! [`ServerConfig`]: how the server listens and speaks, and [`CallerResolver`]: who calls, read
//! from a request's headers.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::auth::Authenticator;
use crate::identity::CallerIdentity;

/// Establishes who is calling from a request's headers (for example by checking a bearer
/// token). Its answer scopes idempotency keys and is passed to the executor.
///
/// ```
/// use a2a_protocol_server::{CallerIdentity, ServerConfig};
///
/// // Whoever presents a bearer token is identified by it (a real server would verify it).
/// let config = ServerConfig::default().with_caller_resolver(|headers: &http::HeaderMap| {
///     let token = headers.get("authorization")?.to_str().ok()?.strip_prefix("Bearer ")?;
///     Some(CallerIdentity(token.to_owned()))
/// });
/// assert!(config.caller.is_some());
/// ```
pub type CallerResolver = Arc<dyn Fn(&http::HeaderMap) -> Option<CallerIdentity> + Send + Sync>;

/// How the server listens and speaks.
///
/// ```
/// use std::time::Duration;
///
/// use a2a_protocol_server::ServerConfig;
///
/// let config = ServerConfig::default()
///     .with_public_url("https://agents.example.com")
///     .with_max_body_bytes(1024 * 1024)
///     .with_keep_alive(Duration::from_secs(10));
/// assert_eq!(config.jsonrpc_path.as_deref(), Some("/"));
/// assert!(config.require_version_header);
/// ```
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
    /// On shutdown, how long turns running in this process get to finish before they are
    /// stopped and settled (see [`RequestHandler::shutdown`](crate::RequestHandler::shutdown)). Default 30 s.
    pub shutdown_drain: Duration,
    /// Who is calling; default: nobody is authenticated.
    pub caller: Option<CallerResolver>,
    /// The most connections served at once; more wait until one closes. Keep it below the
    /// process's file-descriptor limit (`ulimit -n`), which the store needs a few of as well.
    /// Default 512. When every slot is taken, the idle connection open longest (no request
    /// open on it, whatever PINGs it answers) is closed to make room.
    pub max_connections: usize,
    /// The most of those connections one network (a /24 of IPv4, a /64 of IPv6) holds; at
    /// its share, a network's own idle connection is closed to make room, and with none idle
    /// a new connection from it is closed at once. Addresses in
    /// [`ServerConfig::trusted_proxies`] have no share. Default `None`: a quarter of
    /// `max_connections` (128 of 512).
    pub max_connections_per_network: Option<usize>,
    /// The most streams (`SendStreamingMessage`, `SubscribeToTask`) open at once over
    /// HTTP/1.1, where each holds its connection for as long as it lasts; past it a stream is
    /// refused before anything runs (`503`, retry later or stream over HTTP/2, where streams
    /// share connections). Default `None`: half of `max_connections` (256 of 512), so calls
    /// that end always have the other half.
    pub max_http1_streams: Option<usize>,
    /// How many bytes of answers one connection may have waiting to be written (its peer not
    /// reading them, or reading slowly); past it, the connection's next requests wait,
    /// without running, until it reads, and are dropped if it resets them or goes. So an
    /// HTTP/2 peer asking for one large task on hundreds of streams while its window stays
    /// at zero costs about this much memory, not hundreds of answers. Default 8 MiB (two
    /// answers at the default body limit).
    pub max_unwritten_answer_bytes: usize,
    /// How many bytes of request bodies beyond each one's first 256 KiB all connections
    /// together may have in progress (read, decoded, being answered) at once: a request costs
    /// several times its size until its answer is written, so many large ones at once could
    /// exhaust memory. A request finding it spent waits up to 5 s, then is refused as busy
    /// (`503`, gRPC `UNAVAILABLE`) before it runs. Never less than
    /// [`ServerConfig::max_body_bytes`]. Default 32 MiB (eight requests at the default body
    /// limit; 64 such requests at once then peak near 330 MiB, where unbounded they passed
    /// 1.3 GiB).
    pub max_large_body_bytes: usize,
    /// How long a client has to send a request's headers, counted from when the connection
    /// opens or its previous response ends: so it is also how long a connection may sit idle
    /// between requests. Default 30 s.
    pub header_timeout: Duration,
    /// The same, for a connection accepted while half of
    /// [`ServerConfig::max_connections`] are in use, so that idle or trickling connections
    /// flooding the server are shed quickly. Default 2 s.
    pub crowded_header_timeout: Duration,
    /// How long a client has to deliver a request's whole body once its headers are in.
    /// Default 30 s.
    pub body_timeout: Duration,
    /// Web origins (`https://app.example.com`) whose pages may call the agent from a browser.
    /// Default none: no CORS headers are sent, so browsers refuse cross-origin reads and
    /// preflighted requests.
    pub cors_origins: Vec<String>,
    /// Reverse proxies in front of the server whose `X-Forwarded-For` is believed: a request
    /// arriving from one of these counts as coming from the address the proxy says it
    /// forwarded (the right-most one that is not itself a trusted proxy). That address is
    /// what idempotency key quotas count clients by. Default empty: the header is ignored,
    /// since any client could write it.
    pub trusted_proxies: Vec<crate::push::AddressRange>,
    /// Checks every request against the security requirements the agent card declares
    /// (see [`crate::auth`]). Default none: requests are not authenticated, unless a layer in
    /// front puts a [`CallerIdentity`] in them.
    pub authentication: Option<Arc<Authenticator>>,
    /// The longest a request is served before it is answered. A blocking `SendMessage` still
    /// waiting then answers with its task as it stands (the turn goes on; follow it with
    /// `GetTask` or `SubscribeToTask`); any other request not answered by then gets an error
    /// (HTTP 504) saying it may have taken effect. Streams, once open, are not cut. Default
    /// 10 minutes.
    pub request_deadline: Duration,
    /// Serve HTTPS with this certificate, and ask clients for theirs when it says so
    /// (feature `tls`). Default none: plain HTTP, for a TLS-terminating proxy in front.
    #[cfg(feature = "tls")]
    pub tls: Option<crate::tls::TlsConfig>,
    /// Serve the gRPC binding (`lf.a2a.v1.A2AService`) on the same port, over HTTP/2, and
    /// list it in the card (feature `grpc`). Default `true`.
    #[cfg(feature = "grpc")]
    pub grpc: bool,
}

impl fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut f = f.debug_struct("ServerConfig");
        f.field("jsonrpc_path", &self.jsonrpc_path)
            .field("rest_prefix", &self.rest_prefix)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("public_url", &self.public_url)
            .field("require_version_header", &self.require_version_header)
            .field("card_max_age", &self.card_max_age)
            .field("keep_alive", &self.keep_alive)
            .field("shutdown_drain", &self.shutdown_drain)
            .field("caller", &self.caller.as_ref().map(|_| "<resolver>"))
            .field("max_connections", &self.max_connections)
            .field("header_timeout", &self.header_timeout)
            .field("crowded_header_timeout", &self.crowded_header_timeout)
            .field("body_timeout", &self.body_timeout)
            .field("cors_origins", &self.cors_origins)
            .field("trusted_proxies", &self.trusted_proxies)
            .field(
                "max_connections_per_network",
                &self.max_connections_per_network,
            )
            .field("max_http1_streams", &self.max_http1_streams)
            .field(
                "max_unwritten_answer_bytes",
                &self.max_unwritten_answer_bytes,
            )
            .field("authentication", &self.authentication)
            .field("request_deadline", &self.request_deadline);
        #[cfg(feature = "tls")]
        f.field("tls", &self.tls);
        #[cfg(feature = "grpc")]
        f.field("grpc", &self.grpc);
        f.finish()
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
            shutdown_drain: Duration::from_secs(30),
            caller: None,
            max_connections: 512,
            max_connections_per_network: None,
            max_http1_streams: None,
            max_unwritten_answer_bytes: 8 * 1024 * 1024,
            max_large_body_bytes: 32 * 1024 * 1024,
            header_timeout: Duration::from_secs(30),
            crowded_header_timeout: Duration::from_secs(2),
            body_timeout: Duration::from_secs(30),
            cors_origins: Vec::new(),
            trusted_proxies: Vec::new(),
            authentication: None,
            request_deadline: Duration::from_secs(600),
            #[cfg(feature = "tls")]
            tls: None,
            #[cfg(feature = "grpc")]
            grpc: true,
        }
    }
}

impl ServerConfig {
    /// Sets [`ServerConfig::jsonrpc_path`].
    ///
    /// ```
    /// use a2a_protocol_server::ServerConfig;
    ///
    /// let rest_only = ServerConfig::default().with_jsonrpc_path(None);
    /// assert!(rest_only.jsonrpc_path.is_none());
    /// let moved = ServerConfig::default().with_jsonrpc_path(Some("/rpc"));
    /// assert_eq!(moved.jsonrpc_path.as_deref(), Some("/rpc"));
    /// ```
    pub fn with_jsonrpc_path(mut self, path: Option<&str>) -> Self {
        self.jsonrpc_path = path.map(str::to_owned);
        self
    }

    /// Sets [`ServerConfig::rest_prefix`].
    ///
    /// ```
    /// use a2a_protocol_server::ServerConfig;
    ///
    /// let config = ServerConfig::default().with_rest_prefix(Some("/v1"));
    /// assert_eq!(config.rest_prefix.as_deref(), Some("/v1"));
    /// ```
    pub fn with_rest_prefix(mut self, prefix: Option<&str>) -> Self {
        self.rest_prefix = prefix.map(|p| p.trim_end_matches('/').to_owned());
        self
    }

    /// Sets [`ServerConfig::max_body_bytes`].
    ///
    /// ```
    /// use a2a_protocol_server::ServerConfig;
    ///
    /// assert_eq!(ServerConfig::default().with_max_body_bytes(65_536).max_body_bytes, 65_536);
    /// ```
    pub fn with_max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Sets [`ServerConfig::public_url`].
    ///
    /// ```
    /// use a2a_protocol_server::ServerConfig;
    ///
    /// let config = ServerConfig::default().with_public_url("https://agents.example.com");
    /// assert_eq!(config.public_url.as_deref(), Some("https://agents.example.com"));
    /// ```
    pub fn with_public_url(mut self, url: impl Into<String>) -> Self {
        self.public_url = Some(url.into().trim_end_matches('/').to_owned());
        self
    }

    /// Sets [`ServerConfig::require_version_header`].
    ///
    /// ```
    /// use a2a_protocol_server::ServerConfig;
    ///
    /// let lenient = ServerConfig::default().with_require_version_header(false);
    /// assert!(!lenient.require_version_header);
    /// ```
    pub fn with_require_version_header(mut self, require: bool) -> Self {
        self.require_version_header = require;
        self
    }

    /// Sets [`ServerConfig::card_max_age`].
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::ServerConfig;
    ///
    /// let config = ServerConfig::default().with_card_max_age(Duration::from_secs(60));
    /// assert_eq!(config.card_max_age.as_secs(), 60);
    /// ```
    pub fn with_card_max_age(mut self, max_age: Duration) -> Self {
        self.card_max_age = max_age;
        self
    }

    /// Sets [`ServerConfig::keep_alive`].
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::ServerConfig;
    ///
    /// assert_eq!(ServerConfig::default().with_keep_alive(Duration::from_secs(5)).keep_alive.as_secs(), 5);
    /// ```
    pub fn with_keep_alive(mut self, interval: Duration) -> Self {
        self.keep_alive = interval;
        self
    }

    /// Sets [`ServerConfig::shutdown_drain`].
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::ServerConfig;
    ///
    /// let config = ServerConfig::default().with_shutdown_drain(Duration::from_secs(5));
    /// assert_eq!(config.shutdown_drain, Duration::from_secs(5));
    /// ```
    pub fn with_shutdown_drain(mut self, drain: Duration) -> Self {
        self.shutdown_drain = drain;
        self
    }

    /// Sets [`ServerConfig::caller`].
    ///
    /// ```
    /// use a2a_protocol_server::{CallerIdentity, ServerConfig};
    ///
    /// let config = ServerConfig::default()
    ///     .with_caller_resolver(|_: &http::HeaderMap| Some(CallerIdentity("everyone".into())));
    /// assert!(config.caller.is_some());
    /// ```
    pub fn with_caller_resolver(
        mut self,
        resolver: impl Fn(&http::HeaderMap) -> Option<CallerIdentity> + Send + Sync + 'static,
    ) -> Self {
        self.caller = Some(Arc::new(resolver));
        self
    }

    /// Sets [`ServerConfig::max_connections`] (at least 1).
    ///
    /// ```
    /// use a2a_protocol_server::ServerConfig;
    ///
    /// assert_eq!(ServerConfig::default().with_max_connections(64).max_connections, 64);
    /// ```
    pub fn with_max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections.max(1);
        self
    }

    /// Sets [`ServerConfig::max_connections_per_network`] (at least 1).
    ///
    /// ```
    /// use a2a_protocol_server::ServerConfig;
    ///
    /// let config = ServerConfig::default().with_max_connections_per_network(32);
    /// assert_eq!(config.max_connections_per_network, Some(32));
    /// ```
    pub fn with_max_connections_per_network(mut self, connections: usize) -> Self {
        self.max_connections_per_network = Some(connections.max(1));
        self
    }

    /// Sets [`ServerConfig::max_http1_streams`].
    ///
    /// ```
    /// use a2a_protocol_server::ServerConfig;
    ///
    /// assert_eq!(ServerConfig::default().with_max_http1_streams(100).max_http1_streams, Some(100));
    /// ```
    pub fn with_max_http1_streams(mut self, streams: usize) -> Self {
        self.max_http1_streams = Some(streams);
        self
    }

    /// Sets [`ServerConfig::max_unwritten_answer_bytes`].
    ///
    /// ```
    /// use a2a_protocol_server::ServerConfig;
    ///
    /// let config = ServerConfig::default().with_max_unwritten_answer_bytes(1 << 20);
    /// assert_eq!(config.max_unwritten_answer_bytes, 1 << 20);
    /// ```
    pub fn with_max_unwritten_answer_bytes(mut self, bytes: usize) -> Self {
        self.max_unwritten_answer_bytes = bytes;
        self
    }

    /// Sets [`ServerConfig::max_large_body_bytes`].
    ///
    /// ```
    /// use a2a_protocol_server::ServerConfig;
    ///
    /// let config = ServerConfig::default().with_max_large_body_bytes(256 << 20);
    /// assert_eq!(config.max_large_body_bytes, 256 << 20);
    /// ```
    pub fn with_max_large_body_bytes(mut self, bytes: usize) -> Self {
        self.max_large_body_bytes = bytes;
        self
    }

    /// The connections one network may hold.
    pub(crate) fn connections_per_network(&self) -> usize {
        self.max_connections_per_network
            .unwrap_or(self.max_connections / 4)
            .max(1)
    }

    /// The streams HTTP/1.1 connections may hold.
    pub(crate) fn http1_streams(&self) -> usize {
        self.max_http1_streams.unwrap_or(self.max_connections / 2)
    }

    /// Sets [`ServerConfig::header_timeout`] and, for a crowded server,
    /// [`ServerConfig::crowded_header_timeout`] (never longer than the first).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::ServerConfig;
    ///
    /// let config = ServerConfig::default()
    ///     .with_header_timeouts(Duration::from_secs(10), Duration::from_secs(1));
    /// assert_eq!(config.header_timeout, Duration::from_secs(10));
    /// assert_eq!(config.crowded_header_timeout, Duration::from_secs(1));
    /// ```
    pub fn with_header_timeouts(mut self, normal: Duration, crowded: Duration) -> Self {
        self.header_timeout = normal;
        self.crowded_header_timeout = crowded.min(normal);
        self
    }

    /// Sets [`ServerConfig::body_timeout`].
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::ServerConfig;
    ///
    /// let config = ServerConfig::default().with_body_timeout(Duration::from_secs(5));
    /// assert_eq!(config.body_timeout, Duration::from_secs(5));
    /// ```
    pub fn with_body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = timeout;
        self
    }

    /// Sets [`ServerConfig::trusted_proxies`].
    ///
    /// ```
    /// use a2a_protocol_server::ServerConfig;
    ///
    /// let config = ServerConfig::default().with_trusted_proxies(vec!["10.0.0.0/8".parse().unwrap()]);
    /// assert_eq!(config.trusted_proxies.len(), 1);
    /// ```
    pub fn with_trusted_proxies(mut self, proxies: Vec<crate::push::AddressRange>) -> Self {
        self.trusted_proxies = proxies;
        self
    }

    /// Sets [`ServerConfig::cors_origins`]: pages from these origins may call the agent.
    ///
    /// ```
    /// use a2a_protocol_server::ServerConfig;
    ///
    /// let config = ServerConfig::default().with_cors_origins(["https://app.example.com"]);
    /// assert_eq!(config.cors_origins, ["https://app.example.com"]);
    /// ```
    pub fn with_cors_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.cors_origins = origins
            .into_iter()
            .map(|o| o.into().trim_end_matches('/').to_owned())
            .collect();
        self
    }

    /// Sets [`ServerConfig::authentication`]: every request but the public agent card's must
    /// then meet one of the card's security requirements, and a caller sees only the tasks it
    /// created. [`A2aServer::serve`](crate::A2aServer::serve) refuses to start when the card and the verifiers do not
    /// fit ([`Authenticator::check`]).
    ///
    /// ```
    /// use a2a_protocol_server::ServerConfig;
    /// use a2a_protocol_server::auth::{Authenticator, StaticCredentials};
    ///
    /// let keys = StaticCredentials::new().with_credential("k-5d0c41a7e2", "alice");
    /// let config = ServerConfig::default()
    ///     .with_authentication(Authenticator::new().with_verifier("apiKey", keys));
    /// assert!(config.authentication.is_some());
    /// ```
    pub fn with_authentication(mut self, authenticator: Authenticator) -> Self {
        self.authentication = Some(Arc::new(authenticator));
        self
    }

    /// Sets [`ServerConfig::grpc`].
    ///
    /// ```
    /// use a2a_protocol_server::ServerConfig;
    ///
    /// assert!(!ServerConfig::default().with_grpc(false).grpc);
    /// ```
    #[cfg(feature = "grpc")]
    pub fn with_grpc(mut self, grpc: bool) -> Self {
        self.grpc = grpc;
        self
    }

    /// Sets [`ServerConfig::request_deadline`].
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::ServerConfig;
    ///
    /// let config = ServerConfig::default().with_request_deadline(Duration::from_secs(120));
    /// assert_eq!(config.request_deadline, Duration::from_secs(120));
    /// ```
    pub fn with_request_deadline(mut self, deadline: Duration) -> Self {
        self.request_deadline = deadline;
        self
    }

    /// Sets [`ServerConfig::tls`]: the server speaks HTTPS, and its card's URLs say `https`.
    ///
    /// ```no_run
    /// use a2a_protocol_server::ServerConfig;
    /// use a2a_protocol_server::tls::TlsConfig;
    ///
    /// # fn run() -> Result<(), a2a_protocol_server::tls::TlsError> {
    /// let config = ServerConfig::default()
    ///     .with_tls(TlsConfig::from_pem_files("cert.pem", "key.pem")?);
    /// assert!(config.tls.is_some());
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "tls")]
    pub fn with_tls(mut self, tls: crate::tls::TlsConfig) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Whether clients are asked for certificates, so mutual TLS can authenticate them.
    pub(crate) fn verifies_client_certificates(&self) -> bool {
        #[cfg(feature = "tls")]
        {
            self.tls
                .as_ref()
                .is_some_and(crate::tls::TlsConfig::verifies_clients)
        }
        #[cfg(not(feature = "tls"))]
        {
            false
        }
    }

    /// The URL scheme clients reach this server by.
    pub(crate) fn url_scheme(&self) -> &'static str {
        #[cfg(feature = "tls")]
        if self.tls.is_some() {
            return "https";
        }
        "http"
    }
}
