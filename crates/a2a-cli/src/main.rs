//! The `a2a` command: serve a demo agent, and talk to any A2A agent.

mod serve;
mod talk;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "a2a", version, about = "Serve and talk to A2A v1.0 agents")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve a demo agent on JSON-RPC (at /) and HTTP+JSON (at the root), one port.
    Serve(serve::ServeArgs),
    /// Print an agent's card.
    Card(talk::Target),
    /// Send a message (with an idempotency key when the agent honours them) and print the answer.
    Send(talk::SendArgs),
    /// Print a task.
    Get(talk::TaskArgs),
    /// Cancel a task.
    Cancel(talk::TaskArgs),
    /// List tasks, newest first.
    Tasks(talk::ListArgs),
    /// Run a retention sweep on a SQL store and print what it deleted.
    Purge(talk::PurgeArgs),
    /// Print a fresh idempotency key (32 bytes from the OS CSPRNG, as hex).
    Key,
}

/// Prints a line to stdout; a closed stdout (say, a reader that went away) is not an error
/// worth stopping a server for.
pub(crate) fn say(text: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}").and_then(|()| out.flush());
}

async fn run(command: Command) -> Result<(), String> {
    match command {
        Command::Serve(args) => serve::serve(args).await,
        Command::Card(target) => talk::card(target).await,
        Command::Send(args) => talk::send(args).await,
        Command::Get(args) => talk::get(args).await,
        Command::Cancel(args) => talk::cancel(args).await,
        Command::Tasks(args) => talk::tasks(args).await,
        Command::Purge(args) => talk::purge(args).await,
        Command::Key => {
            say(&a2a_protocol_types::idempotency::generate_key());
            Ok(())
        }
    }
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
    let result = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime.block_on(run(cli.command)),
        Err(e) => Err(format!("cannot start the async runtime: {e}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("a2a: {message}");
            ExitCode::FAILURE
        }
    }
}
