//! `a2a serve`: a demo agent on the embedded SQLite default, PostgreSQL, or memory.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use a2a_protocol_server::agents::{ConformanceAgent, EchoAgent};
use a2a_protocol_server::auth::{Authenticator, StaticCredentials};
use a2a_protocol_server::{A2aServer, AgentExecutor, HandlerConfig, RequestHandler, ServerConfig};
use clap::ValueEnum;

use crate::exit::Failure;
use crate::output::say;
use crate::stores::{self, DEFAULT_STORE, Keep};

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum Agent {
    /// Answers every message with its own text, at once.
    Echo,
    /// Works for `--work` before answering, so there is time to watch, cancel or cut it.
    SlowEcho,
    /// Behaves as the A2A TCK scenarios describe.
    Conformance,
}

#[derive(clap::Args)]
pub(crate) struct ServeArgs {
    /// Which agent to serve.
    #[arg(long, value_enum, default_value = "echo")]
    agent: Agent,
    /// The address to listen on (port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// How long the slow-echo agent works, such as `10s`.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    work: Duration,
    /// Where tasks and idempotency keys live: `sqlite://FILE`, `postgres://USER@HOST/DB`, or
    /// `memory:`.
    #[arg(long, default_value = DEFAULT_STORE)]
    store: String,
    /// Keep each tenant's tasks and keys apart (`/{tenant}/...` paths, the `tenant` field).
    #[arg(long)]
    tenant_aware: bool,
    /// Serve only this tenant (repeat for more): a request naming another is refused before
    /// anything is stored for it. Requests without a tenant are always served.
    #[arg(long = "tenant", value_name = "NAME")]
    tenants: Vec<String>,
    /// SQL stores: how often the background retention sweep runs, such as `1h` (`0s`: never).
    #[arg(long, default_value = "1h", value_parser = humantime::parse_duration)]
    sweep_every: Duration,
    #[command(flatten)]
    keep: Keep,
    /// The URL clients reach the server at, for its card [default: each request's Host].
    #[arg(long)]
    public_url: Option<String>,
    /// Read requests without an A2A-Version header as 1.0 (the spec reads them as 0.3).
    #[arg(long)]
    assume_current_version: bool,
    /// With a store several servers share: how long a server may go unheard before the tasks
    /// it was running are settled by another (or by itself, restarted).
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    recovery_time: Duration,
    /// Support the lease extension, granting leases of at most this long: a task started with a
    /// lease is canceled when no client renews it in time.
    #[arg(long, value_parser = humantime::parse_duration)]
    max_lease: Option<Duration>,
    /// On Ctrl-C or SIGTERM: how long running tasks get to finish before they are stopped and
    /// marked failed.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    drain: Duration,
    /// The most connections served at once; keep it below the file limit (`ulimit -n`).
    #[arg(long, default_value_t = 512)]
    max_connections: usize,
    /// The most connections one network (a /24 of IPv4, a /64 of IPv6) holds; --trust-proxy
    /// addresses have no share [default: a quarter of --max-connections].
    #[arg(long)]
    max_connections_per_network: Option<usize>,
    /// The most streams open at once over HTTP/1.1, where each holds a connection; more are
    /// refused (503) [default: half of --max-connections].
    #[arg(long)]
    max_http1_streams: Option<usize>,
    /// How many MiB of request bodies beyond each one's first 256 KiB may be in progress at
    /// once, all connections together; a request finding them spent waits up to 5 s, then is
    /// refused (503) before it runs [default: 32].
    #[arg(long, value_name = "MIB")]
    max_large_body_mib: Option<usize>,
    /// The longest a request is served: a blocking send still waiting then answers with its
    /// task as it stands (the task goes on), anything else with an error. Streams are not cut.
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    request_deadline: Duration,
    /// A web origin (`https://app.example.com`) whose pages may call the agent from a browser;
    /// repeat for more [default: none, no CORS].
    #[arg(long = "cors-origin")]
    cors_origins: Vec<String>,
    /// A reverse proxy (address or CIDR block) whose `X-Forwarded-For` is believed: requests
    /// from it count as coming from the client it names, for idempotency key quotas. Repeat
    /// for more [default: none, the header is ignored].
    #[arg(long = "trust-proxy", value_name = "ADDRESS[/PREFIX]")]
    trusted_proxies: Vec<a2a_protocol_server::push::AddressRange>,
    /// Require an API key in the `X-API-Key` header: the key is the value of environment
    /// variable NAME, and whoever presents it is the caller NAME, who sees only the tasks it
    /// created. Repeat for more callers [default: no authentication].
    #[arg(long = "api-key-env", value_name = "NAME")]
    api_key_envs: Vec<String>,
    /// Serve HTTPS with this certificate chain (PEM, the server's certificate first).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<std::path::PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
    /// With --tls-cert: accept client certificates issued by this CA (PEM) as credentials
    /// (mutual TLS); the caller is the certificate's common name. With --api-key-env too,
    /// either kind of credential will do.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    client_ca: Option<std::path::PathBuf>,
    /// Serve the server's metrics (requests, latencies, turns, streams, store operations) in
    /// the Prometheus text format at `http://ADDR/metrics` [default: not recorded].
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<SocketAddr>,
    /// Export request and agent-turn spans to this OpenTelemetry collector over OTLP/HTTP,
    /// such as `http://127.0.0.1:4318`; a caller's `traceparent` puts them in its trace.
    #[arg(long, value_name = "URL")]
    pub(crate) otlp_endpoint: Option<String>,
    /// Let push notification webhooks reach this address or CIDR block although it is not
    /// public, such as `127.0.0.1` to receive with `a2a listen` on this machine; repeat for
    /// more [default: public addresses only].
    #[arg(long = "allow-push-to", value_name = "ADDRESS[/PREFIX]")]
    allow_push_to: Vec<a2a_protocol_server::push::AddressRange>,
    /// Answer every push notification operation with PushNotificationNotSupported, and say so
    /// on the card [default: push notifications are delivered].
    #[arg(long, conflicts_with = "allow_push_to")]
    no_push: bool,
    /// How long one webhook POST may take; a notification claimed by a server that died is
    /// taken up by another (or by it, restarted) after about twice this.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    push_timeout: Duration,
    /// Attempts at one push notification before it is kept as a dead letter
    /// (`a2a dead-letters`); retries wait 1 s, 2 s, 4 s ... up to 5 min, with jitter.
    #[arg(long, default_value_t = 8)]
    push_attempts: u32,
}

/// The card's mutual TLS scheme, and its verifier added to `auth`, for `--client-ca`.
fn client_certificates(
    card: &mut a2a_protocol_server::types::AgentCard,
    auth: Option<Authenticator>,
) -> Authenticator {
    use a2a_protocol_server::auth::ClientCertificates;
    use a2a_protocol_server::types::security::{
        MutualTlsSecurityScheme, SecurityRequirement, SecurityScheme,
    };
    card.security_schemes.insert(
        "mtls".into(),
        SecurityScheme::MutualTls(MutualTlsSecurityScheme {
            description: Some("A client certificate the agent's operator's CA issued.".into()),
        }),
    );
    card.security_requirements.push(SecurityRequirement {
        schemes: [("mtls".to_owned(), Default::default())].into(),
    });
    auth.unwrap_or_default()
        .with_verifier("mtls", ClientCertificates)
}

/// The TLS configuration of `--tls-cert`, `--tls-key` and `--client-ca`.
fn tls(args: &ServeArgs) -> Result<Option<a2a_protocol_server::tls::TlsConfig>, Failure> {
    let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) else {
        return Ok(None);
    };
    let usage = |e: a2a_protocol_server::tls::TlsError| Failure::usage(e.to_string());
    let mut tls = a2a_protocol_server::tls::TlsConfig::from_pem_files(cert, key).map_err(usage)?;
    if let Some(ca) = &args.client_ca {
        let pem = std::fs::read(ca)
            .map_err(|e| Failure::usage(format!("cannot read {}: {e}", ca.display())))?;
        tls = tls.with_client_ca_pem(&pem).map_err(usage)?;
    }
    Ok(Some(tls))
}

/// The header the demo agent reads API keys from.
const API_KEY_HEADER: &str = "X-API-Key";
/// Keys shorter than this are refused: they could be guessed.
const MIN_API_KEY_BYTES: usize = 16;

/// The API key scheme on the card and its verifier, from `--api-key-env`.
fn api_keys(
    names: &[String],
    card: &mut a2a_protocol_server::types::AgentCard,
) -> Result<Option<Authenticator>, Failure> {
    use a2a_protocol_server::types::security::{
        ApiKeySecurityScheme, SecurityRequirement, SecurityScheme,
    };
    if names.is_empty() {
        return Ok(None);
    }
    let mut keys = StaticCredentials::new();
    for name in names {
        let key = crate::talk::secret_from_env(name, "API key")?;
        if key.len() < MIN_API_KEY_BYTES {
            return Err(Failure::usage(format!(
                "the API key in {name} is shorter than {MIN_API_KEY_BYTES} characters; use a \
                 random one, such as the output of `openssl rand -hex 32`"
            )));
        }
        keys = keys.with_credential(key, name.clone());
    }
    card.security_schemes.insert(
        "apiKey".into(),
        SecurityScheme::ApiKey(ApiKeySecurityScheme {
            description: Some("An API key the agent's operator issued.".into()),
            location: "header".into(),
            name: API_KEY_HEADER.into(),
        }),
    );
    card.security_requirements = vec![SecurityRequirement {
        schemes: [("apiKey".to_owned(), Default::default())].into(),
    }];
    Ok(Some(Authenticator::new().with_verifier("apiKey", keys)))
}

pub(crate) async fn serve(args: ServeArgs) -> Result<(), Failure> {
    let (executor, card): (Arc<dyn AgentExecutor>, _) = match args.agent {
        Agent::Echo => (Arc::new(EchoAgent::new()), EchoAgent::card()),
        Agent::SlowEcho => (Arc::new(EchoAgent::slow(args.work)), EchoAgent::card()),
        Agent::Conformance => (Arc::new(ConformanceAgent::new()), ConformanceAgent::card()),
    };
    let mut card = card;
    let mut authentication = api_keys(&args.api_key_envs, &mut card)?;
    let tls = tls(&args)?;
    if args.client_ca.is_some() {
        authentication = Some(client_certificates(&mut card, authentication));
    }
    if let Some(addr) = args.metrics_addr {
        crate::metrics::serve_prometheus(addr)?;
    }
    let opened = stores::open(&args.store, args.tenant_aware, &args.keep).await?;
    let mut handler = RequestHandler::builder(executor)
        .with_agent_card(card)
        .with_store(opened.store)
        .with_config({
            let config = HandlerConfig::default().with_recovery_time(args.recovery_time);
            if args.tenants.is_empty() {
                config
            } else {
                config.with_served_tenants(args.tenants.iter().cloned())
            }
        });
    if let Some(max) = args.max_lease {
        handler = handler.with_leases(max);
    }
    if !args.no_push {
        handler = handler.with_push(
            a2a_protocol_server::push::PushSettings::default()
                .with_allowed(args.allow_push_to.clone())
                .with_request_timeout(args.push_timeout)
                .with_max_attempts(args.push_attempts),
        );
    }
    let handler = handler.build();
    let mut config = ServerConfig::default()
        .with_require_version_header(!args.assume_current_version)
        .with_shutdown_drain(args.drain)
        .with_max_connections(args.max_connections)
        .with_request_deadline(args.request_deadline)
        .with_cors_origins(args.cors_origins)
        .with_trusted_proxies(args.trusted_proxies);
    if let Some(share) = args.max_connections_per_network {
        config = config.with_max_connections_per_network(share);
    }
    if let Some(streams) = args.max_http1_streams {
        config = config.with_max_http1_streams(streams);
    }
    if let Some(mib) = args.max_large_body_mib {
        config = config.with_max_large_body_bytes(mib.saturating_mul(1024 * 1024));
    }
    let authenticated = authentication.is_some();
    if let Some(authentication) = authentication {
        config = config.with_authentication(authentication);
    }
    let scheme = if tls.is_some() { "https" } else { "http" };
    if let Some(tls) = tls {
        config = config.with_tls(tls);
    }
    if let Some(url) = args.public_url {
        config = config.with_public_url(url);
    }
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .map_err(|e| Failure::usage(format!("cannot listen on {}: {e}", args.addr)))?;
    let local = listener
        .local_addr()
        .map_err(|e| Failure::internal(format!("cannot read the listening address: {e}")))?;
    let base = format!("{scheme}://{local}");
    let try_line = match (args.api_key_envs.first(), &args.client_ca) {
        (Some(name), _) if authenticated => format!(
            "Auth:       an API key in the {API_KEY_HEADER} header (callers: {}){}\n\
             Try:        a2a send --api-key-env {name} {base} \"hello\"   (Ctrl-C stops the server)",
            args.api_key_envs.join(", "),
            if args.client_ca.is_some() {
                ", or a client certificate"
            } else {
                ""
            },
        ),
        (None, Some(_)) => format!(
            "Auth:       a client certificate from the --client-ca CA (the caller is its common name)\n\
             Try:        a2a send --ca-cert CA.pem --client-cert CERT.pem --client-key KEY.pem {base} \"hello\""
        ),
        _ => format!("Try:        a2a send {base} \"hello\"   (Ctrl-C stops the server)"),
    };
    let metrics_line = args
        .metrics_addr
        .map(|addr| format!("Metrics:    http://{addr}/metrics\n"))
        .unwrap_or_default();
    say(&format!(
        "Store:      {}{}\nAgent card: {base}/.well-known/agent-card.json\n\
         JSON-RPC:   POST {base}/   HTTP+JSON: {base}/message:send\n\
         gRPC:       lf.a2a.v1.A2AService on the same port (HTTP/2)\n{metrics_line}{try_line}",
        stores::redacted(&args.store),
        if args.tenant_aware {
            " (tenant-aware)"
        } else {
            ""
        },
    ));
    let mut server = A2aServer::new(handler).with_config(config);
    if let (Some(retention), false) = (opened.retention, args.sweep_every.is_zero()) {
        server = server.with_retention_sweeper(retention, args.sweep_every, args.keep.policy());
    }
    tracing::info!(addr = %local, store = %stores::redacted(&args.store), "serving");
    server
        .serve(listener, shutdown_signal())
        .await
        .map_err(|e| Failure::internal(format!("the server failed: {e}")))?;
    tracing::info!("stopped: running tasks finished or settled, open streams ended");
    Ok(())
}

/// Ctrl-C, or SIGTERM from a process manager.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    tracing::info!("shutting down");
}
