//! The `a2a` command: serve a demo agent, talk to any A2A agent, and see why idempotency keys
//! matter (`a2a demo`).

mod demo;
mod exit;
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
    Serve(serve::ServeArgs),
    /// Send a message, with a fresh idempotency key when the agent honours keys.
    Send(send::SendArgs),
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
    /// Print a fresh idempotency key: 32 bytes from the OS CSPRNG, as hex.
    Key,
    /// Show, in one process, why a retried send needs a key: a send cut off after the request
    /// arrives is re-sent without a key and with one, and the tasks each created are counted.
    Demo,
}

async fn run(command: Command, output: Output) -> Result<(), Failure> {
    match command {
        Command::Serve(args) => serve::serve(args).await,
        Command::Send(args) => send::send(args, output).await,
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
    init_logging(default_level, tracer.as_ref());
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

/// Logs to stderr at `default_level` (RUST_LOG overrides it), and exports spans at info and
/// above through `tracer` when there is one (whatever the log level: quiet logs should not
/// mean a broken trace).
fn init_logging(default_level: &str, tracer: Option<&opentelemetry_sdk::trace::SdkTracerProvider>) {
    use opentelemetry::trace::TracerProvider;
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    let Some(provider) = tracer else {
        // One filter for the whole subscriber: cheaper on every span entered than a filter
        // per layer, which only the OpenTelemetry export below needs.
        tracing_subscriber::registry()
            .with(filter)
            .with(log_layer())
            .init();
        return;
    };
    let spans = tracing_opentelemetry::layer()
        .with_tracer(provider.tracer("a2a"))
        .with_filter(tracing_subscriber::filter::LevelFilter::INFO);
    tracing_subscriber::registry()
        .with(log_layer().with_filter(filter))
        .with(spans)
        .init();
}

/// Log lines on stderr, in colour on a terminal. Span fields are formatted when each span
/// opens (every request and turn), for the lines that may come inside it: without colours,
/// plain `name=value` costs a fraction of the default styled formatter.
fn log_layer<S>() -> Box<dyn tracing_subscriber::Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    use tracing_subscriber::Layer;
    use tracing_subscriber::field::MakeExt;

    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    if ansi {
        return logs.boxed();
    }
    logs.fmt_fields(
        tracing_subscriber::fmt::format::debug_fn(|writer, field, value| {
            if field.name() == "message" {
                write!(writer, "{value:?}")
            } else {
                write!(writer, "{field}={value:?}")
            }
        })
        .delimited(" "),
    )
    .boxed()
}
