//! The commands that talk to an agent, through the client crate.

use std::time::Duration;

use a2a_protocol_client::{A2aClient, Binding, ClientBuilder, RetryPolicy};
use a2a_protocol_server::store::RetentionPolicy;
use a2a_protocol_types::idempotency::{generate_key, set_key};
use a2a_protocol_types::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, Message, SendMessageRequest, TaskState,
};
use clap::ValueEnum;
use futures::StreamExt;
use serde::Serialize;

use crate::say;

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum BindingArg {
    /// JSON-RPC 2.0.
    Jsonrpc,
    /// HTTP+JSON.
    HttpJson,
}

/// Which agent to talk to.
#[derive(clap::Args)]
pub(crate) struct Target {
    /// The agent's base URL (its card is at /.well-known/agent-card.json).
    url: String,
    /// Prefer this binding among the card's interfaces.
    #[arg(long, value_enum)]
    binding: Option<BindingArg>,
}

#[derive(clap::Args)]
pub(crate) struct SendArgs {
    #[command(flatten)]
    target: Target,
    /// The text to send.
    text: String,
    /// Stream the task's events instead of waiting for its end.
    #[arg(long)]
    stream: bool,
    /// Use this idempotency key (default: a fresh one when the agent honours keys).
    #[arg(long)]
    key: Option<String>,
    /// Use this message id (default: a fresh one). A retry resends the same key and id.
    #[arg(long)]
    message_id: Option<String>,
    /// Continue this task.
    #[arg(long)]
    task: Option<String>,
    /// Continue this context.
    #[arg(long)]
    context: Option<String>,
}

#[derive(clap::Args)]
pub(crate) struct TaskArgs {
    #[command(flatten)]
    target: Target,
    /// The task id.
    task: String,
}

#[derive(clap::Args)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    target: Target,
    /// Only tasks in this context.
    #[arg(long)]
    context: Option<String>,
    /// Only tasks in this state, such as TASK_STATE_WORKING.
    #[arg(long)]
    status: Option<String>,
    /// At most this many tasks.
    #[arg(long)]
    page_size: Option<i32>,
}

#[derive(clap::Args)]
pub(crate) struct PurgeArgs {
    /// The store: `sqlite://FILE` or `postgres://...`.
    #[arg(long, default_value = "sqlite://a2a-tasks.db")]
    store: String,
    /// Keep terminal tasks this many seconds.
    #[arg(long, default_value_t = 7 * 24 * 3600)]
    keep_terminal: u64,
    /// Keep idempotency keys at least this many seconds.
    #[arg(long, default_value_t = 24 * 3600)]
    keep_keys: u64,
}

fn print<T: Serialize>(value: &T) -> Result<(), String> {
    let text =
        serde_json::to_string_pretty(value).map_err(|e| format!("cannot print the answer: {e}"))?;
    say(&text);
    Ok(())
}

async fn client(target: &Target) -> Result<A2aClient, String> {
    let mut builder = ClientBuilder::discover(&target.url)
        .await
        .map_err(|e| format!("cannot read the card of {}: {e}", target.url))?
        .with_retry_policy(RetryPolicy::default());
    if let Some(binding) = target.binding {
        builder = builder.with_preferred_bindings(vec![match binding {
            BindingArg::Jsonrpc => Binding::JsonRpc,
            BindingArg::HttpJson => Binding::HttpJson,
        }]);
    }
    builder.build().map_err(|e| e.to_string())
}

pub(crate) async fn card(target: Target) -> Result<(), String> {
    let card = a2a_protocol_client::fetch_card(&target.url, None)
        .await
        .map_err(|e| e.to_string())?;
    print(&card)
}

pub(crate) async fn send(args: SendArgs) -> Result<(), String> {
    let client = client(&args.target).await?;
    let mut message = Message::user_text(args.text);
    if let Some(id) = args.message_id {
        message.id = id.into();
    }
    message.task_id = args.task.map(Into::into);
    message.context_id = args.context.map(Into::into);
    let key = match args.key {
        Some(key) => Some(key),
        None if client.honours_idempotency() => Some(generate_key()),
        None => None,
    };
    if let Some(key) = &key {
        set_key(&mut message, key).map_err(|e| e.to_string())?;
        eprintln!(
            "to retry safely, send again with: --key {key} --message-id {}",
            message.id
        );
    }
    let request = SendMessageRequest::new(message);
    if args.stream {
        let mut events = client
            .send_streaming_message(request)
            .await
            .map_err(|e| e.to_string())?;
        while let Some(event) = events.next().await {
            print(&event.map_err(|e| e.to_string())?)?;
        }
        return Ok(());
    }
    print(
        &client
            .send_message(request)
            .await
            .map_err(|e| e.to_string())?,
    )
}

pub(crate) async fn get(args: TaskArgs) -> Result<(), String> {
    let client = client(&args.target).await?;
    let request = GetTaskRequest {
        id: args.task.into(),
        ..GetTaskRequest::default()
    };
    print(&client.get_task(request).await.map_err(|e| e.to_string())?)
}

pub(crate) async fn cancel(args: TaskArgs) -> Result<(), String> {
    let client = client(&args.target).await?;
    let request = CancelTaskRequest {
        id: args.task.into(),
        ..CancelTaskRequest::default()
    };
    print(
        &client
            .cancel_task(request)
            .await
            .map_err(|e| e.to_string())?,
    )
}

pub(crate) async fn tasks(args: ListArgs) -> Result<(), String> {
    let client = client(&args.target).await?;
    let status = args
        .status
        .map(|s| s.parse::<TaskState>())
        .transpose()
        .map_err(|e| e.to_string())?;
    let request = ListTasksRequest {
        context_id: args.context.map(Into::into),
        status,
        page_size: args.page_size,
        ..ListTasksRequest::default()
    };
    print(
        &client
            .list_tasks(request)
            .await
            .map_err(|e| e.to_string())?,
    )
}

pub(crate) async fn purge(args: PurgeArgs) -> Result<(), String> {
    let (_, retention) = crate::serve::open_store(&args.store, false).await?;
    let retention = retention.ok_or("only SQL stores keep anything to purge")?;
    let policy = RetentionPolicy::default()
        .with_terminal_max_age(Duration::from_secs(args.keep_terminal))
        .with_idempotency_key_max_age(Duration::from_secs(args.keep_keys));
    let report = retention
        .purge_expired(&policy)
        .await
        .map_err(|e| e.to_string())?;
    say(&format!(
        "deleted {} terminal tasks and {} idempotency keys{}",
        report.tasks_deleted,
        report.keys_deleted,
        if report.finished {
            ""
        } else {
            "; more remain, run again"
        }
    ));
    Ok(())
}
