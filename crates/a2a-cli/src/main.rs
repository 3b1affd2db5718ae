//! The `a2a` command.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use a2a_protocol_server::agents::{ConformanceAgent, EchoAgent};
use a2a_protocol_server::{A2aServer, AgentExecutor, RequestHandler, ServerConfig};
use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(name = "a2a", version, about = "Serve and talk to A2A v1.0 agents")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve a demo agent on JSON-RPC (at /) and HTTP+JSON (at the root), one port.
    Serve(ServeArgs),
    /// Print a fresh idempotency key (32 bytes from the OS CSPRNG, as hex).
    Key,
}

#[derive(Clone, Copy, ValueEnum)]
enum Agent {
    /// Echoes the text it is sent.
    Echo,
    /// Behaves as the A2A TCK scenarios describe.
    Conformance,
}

#[derive(clap::Args)]
struct ServeArgs {
    /// Which agent to serve.
    #[arg(long, value_enum, default_value = "echo")]
    agent: Agent,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    addr: SocketAddr,
    /// Echo agent: work this many seconds before answering.
    #[arg(long, default_value_t = 0)]
    slow: u64,
    /// The URL clients reach the server at (default: derived from each request's Host).
    #[arg(long)]
    public_url: Option<String>,
    /// Accept requests without an A2A-Version header as version 1.0 (the spec reads them as 0.3).
    #[arg(long)]
    assume_current_version: bool,
}

async fn serve(args: ServeArgs) -> Result<(), String> {
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
    let handler = RequestHandler::builder_arc(executor)
        .with_agent_card(card)
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
    println!("Agent card: http://{local}/.well-known/agent-card.json");
    println!("JSON-RPC:   POST http://{local}/   HTTP+JSON: http://{local}/message:send");
    A2aServer::new(handler)
        .with_config(config)
        .serve(listener, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|e| format!("server failed: {e}"))
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Key => {
            println!("{}", a2a_protocol_types::idempotency::generate_key());
            Ok(())
        }
        Command::Serve(args) => match tokio::runtime::Runtime::new() {
            Ok(runtime) => runtime.block_on(serve(args)),
            Err(e) => Err(format!("cannot start the async runtime: {e}")),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("a2a: {message}");
            ExitCode::FAILURE
        }
    }
}
