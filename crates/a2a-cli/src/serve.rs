//! `a2a serve`: a demo agent on the embedded SQLite default, PostgreSQL, or memory.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use a2a_protocol_server::agents::{ConformanceAgent, EchoAgent};
use a2a_protocol_server::store::{
    InMemoryTaskStore, PostgresTaskStore, Retention, RetentionPolicy, SqliteTaskStore, StoreError,
    TaskStore, TenantAwareInMemoryTaskStore, TenantAwarePostgresTaskStore,
    TenantAwareSqliteTaskStore,
};
use a2a_protocol_server::{A2aServer, AgentExecutor, RequestHandler, ServerConfig};
use clap::ValueEnum;

use crate::say;

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum Agent {
    /// Echoes the text it is sent.
    Echo,
    /// Behaves as the A2A TCK scenarios describe.
    Conformance,
}

#[derive(clap::Args)]
pub(crate) struct ServeArgs {
    /// Which agent to serve.
    #[arg(long, value_enum, default_value = "echo")]
    pub(crate) agent: Agent,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub(crate) addr: SocketAddr,
    /// Echo agent: work this many seconds before answering.
    #[arg(long, default_value_t = 0)]
    slow: u64,
    /// The URL clients reach the server at (default: derived from each request's Host).
    #[arg(long)]
    public_url: Option<String>,
    /// Accept requests without an A2A-Version header as version 1.0 (the spec reads them as 0.3).
    #[arg(long)]
    assume_current_version: bool,
    /// Where tasks and idempotency keys live: `sqlite://FILE`, `postgres://...`, or `memory`.
    #[arg(long, default_value = "sqlite://a2a-tasks.db")]
    store: String,
    /// Keep each tenant's tasks apart.
    #[arg(long)]
    tenant_aware: bool,
    /// SQL stores: run a retention sweep this often, in seconds (0: never).
    #[arg(long, default_value_t = 3600)]
    sweep_every: u64,
    /// SQL stores: how long terminal tasks are kept, in seconds.
    #[arg(long, default_value_t = 7 * 24 * 3600)]
    keep_terminal: u64,
}

/// The store `--store` names, and its retention half when it has one.
pub(crate) async fn open_store(
    url: &str,
    tenant_aware: bool,
) -> Result<(Arc<dyn TaskStore>, Option<Arc<dyn Retention>>), String> {
    let failed = |e: StoreError| format!("cannot open the store {url}: {e}");
    if url == "memory" {
        let store: Arc<dyn TaskStore> = if tenant_aware {
            Arc::new(TenantAwareInMemoryTaskStore::new())
        } else {
            Arc::new(InMemoryTaskStore::new())
        };
        return Ok((store, None));
    }
    if url.starts_with("sqlite:") {
        return Ok(if tenant_aware {
            let store = Arc::new(
                TenantAwareSqliteTaskStore::open(url)
                    .await
                    .map_err(failed)?,
            );
            (store.clone(), Some(store))
        } else {
            let store = Arc::new(SqliteTaskStore::open(url).await.map_err(failed)?);
            (store.clone(), Some(store))
        });
    }
    if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        return Ok(if tenant_aware {
            let store = Arc::new(
                TenantAwarePostgresTaskStore::open(url)
                    .await
                    .map_err(failed)?,
            );
            (store.clone(), Some(store))
        } else {
            let store = Arc::new(PostgresTaskStore::open(url).await.map_err(failed)?);
            (store.clone(), Some(store))
        });
    }
    Err(format!(
        "unknown store {url:?}: use sqlite://FILE, postgres://..., or memory"
    ))
}

pub(crate) async fn serve(args: ServeArgs) -> Result<(), String> {
    let (executor, card): (std::sync::Arc<dyn AgentExecutor>, _) = match args.agent {
        Agent::Echo => (
            std::sync::Arc::new(EchoAgent::slow(Duration::from_secs(args.slow))),
            EchoAgent::card(),
        ),
        Agent::Conformance => (
            std::sync::Arc::new(ConformanceAgent::new()),
            ConformanceAgent::card(),
        ),
    };
    let (store, retention) = open_store(&args.store, args.tenant_aware).await?;
    let handler = RequestHandler::builder_arc(executor)
        .with_agent_card(card)
        .with_store(store)
        .build();
    let mut config =
        ServerConfig::default().with_require_version_header(!args.assume_current_version);
    if let Some(url) = args.public_url {
        config = config.with_public_url(url);
    }
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.addr))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("cannot read the listening address: {e}"))?;
    say(&format!(
        "Store:      {}\nAgent card: http://{local}/.well-known/agent-card.json\n\
         JSON-RPC:   POST http://{local}/   HTTP+JSON: http://{local}/message:send",
        args.store
    ));
    let mut server = A2aServer::new(handler).with_config(config);
    if let (Some(retention), true) = (retention, args.sweep_every > 0) {
        let policy = RetentionPolicy::default()
            .with_terminal_max_age(Duration::from_secs(args.keep_terminal));
        server =
            server.with_retention_sweeper(retention, Duration::from_secs(args.sweep_every), policy);
    }
    server
        .serve(listener, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|e| format!("server failed: {e}"))
}
