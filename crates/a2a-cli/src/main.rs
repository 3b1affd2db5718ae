//! The `a2a` command: serve a demo agent, talk to any A2A agent, and see why idempotency keys
//! matter (`a2a demo`).

mod demo;
mod exit;
mod listen;
mod logging;
mod metrics;
mod otel;
mod output;
mod send;
mod serve;
mod stores;
mod talk;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use exit::{EXIT_CODES, Failure};
use output::{Output, say};

// A server allocates a few hundred small objects per request; mimalloc serves them from
// thread-local pages, which glibc's malloc does with more locking and consolidation.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "a2a",
    version,
    about = "Serve and talk to A2A v1.0 agents, with sends that are safe to retry",
    after_help = EXIT_CODES
)]
struct Cli {
    /// Print results as JSON (the A2A objects themselves; one per line for streams).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve a demo agent: JSON-RPC (POST /) and HTTP+JSON on one port.
    Serve(Box<serve::ServeArgs>),
    /// Send a message, with a fresh idempotency key when the agent honours keys.
    Send(send::SendArgs),
    /// Receive push notifications on a local webhook and print each once (by delivery id).
    Listen(listen::ListenArgs),
    /// Show a task.
    Get(talk::TaskArgs),
    /// List tasks, newest first, a page at a time.
    Tasks(talk::ListArgs),
    /// Cancel a task.
    Cancel(talk::TaskArgs),
    /// Show an agent's card: its interfaces, capabilities, extensions and skills.
    Card(talk::Target),
    /// Run one retention sweep on a SQL store, as `a2a serve` does in the background.
    Purge(stores::PurgeArgs),
    /// List push notifications a SQL store's outbox gave up on (dead letters), with why.
    DeadLetters(stores::DeadLettersArgs),
    /// Print a fresh idempotency key: 32 bytes from the OS CSPRNG, as hex.
    Key,
    /// Show, in one process, why a retried send needs a key: a send cut off after the request
    /// arrives is re-sent without a key and with one, and the tasks each created are counted.
    Demo,
}

async fn run(command: Command, output: Output) -> Result<(), Failure> {
    match command {
        Command::Serve(args) => serve::serve(*args).await,
        Command::Send(args) => send::send(args, output).await,
        Command::Listen(args) => listen::listen(args, output).await,
        Command::DeadLetters(args) => stores::dead_letters(args, output).await,
        Command::Get(args) => talk::get(args, output).await,
        Command::Tasks(args) => talk::tasks(args, output).await,
        Command::Cancel(args) => talk::cancel(args, output).await,
        Command::Card(target) => talk::card(target, output).await,
        Command::Purge(args) => stores::purge(args, output).await,
        Command::Key => {
            say(&a2a_protocol_types::idempotency::generate_key());
            Ok(())
        }
        Command::Demo => demo::demo(output).await,
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Servers log what they do at info; the other commands print their results and only
    // log trouble. RUST_LOG overrides both.
    let default_level = if matches!(cli.command, Command::Serve(_)) {
        "info"
    } else {
        "warn"
    };
    let tracer = match &cli.command {
        Command::Serve(args) => match args.otlp_endpoint.as_deref().map(otel::provider) {
            Some(Ok(provider)) => Some(provider),
            Some(Err(failure)) => return failure.report(),
            None => None,
        },
        _ => None,
    };
    logging::init(default_level, tracer.as_ref());
    let output = Output { json: cli.json };
    let result = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime.block_on(run(cli.command, output)),
        Err(e) => Err(Failure::internal(format!(
            "cannot start the async runtime: {e}"
        ))),
    };
    // Spans still batched go to the collector before the process ends.
    if let Some(Err(error)) = tracer.map(|provider| provider.shutdown()) {
        tracing::warn!(%error, "could not export the last spans");
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}
