//! `a2a send`: one message, keyed when the agent honours keys, with the key printed so the
//! send can be retried by hand.

use a2a_protocol_client::A2aClient;
use a2a_protocol_types::idempotency::{generate_key, set_key, validate_key};
use a2a_protocol_types::push::TaskPushNotificationConfig;
use a2a_protocol_types::{
    Message, SendMessageConfiguration, SendMessageRequest, SendMessageResponse, StreamResponse,
    TaskState, TaskStatus,
};
use clap::ValueEnum;
use futures::StreamExt;
use serde_json::json;

use crate::exit::Failure;
use crate::output::{self, Output, say};
use crate::talk::Target;

#[derive(clap::Args)]
pub(crate) struct SendArgs {
    #[command(flatten)]
    target: Target,
    /// The text to send.
    text: String,
    /// Stream the task's status updates and artifacts as they happen.
    #[arg(long)]
    stream: bool,
    /// Use this idempotency key; resend with the same key and --message-id to retry safely
    /// [default: a fresh key when the agent's card says it honours keys].
    #[arg(long, conflicts_with = "no_key")]
    key: Option<String>,
    /// Send without an idempotency key, even to an agent that honours keys.
    #[arg(long)]
    no_key: bool,
    /// Use this message id [default: a fresh one].
    #[arg(long)]
    message_id: Option<String>,
    /// Continue this task (a follow-up message).
    #[arg(long)]
    task: Option<String>,
    /// Send within this context.
    #[arg(long)]
    context: Option<String>,
    /// Return once the agent has accepted the task, without waiting for it to settle.
    #[arg(long, conflicts_with = "stream")]
    no_wait: bool,
    /// Have the agent POST the task's updates to this webhook (see `a2a listen`).
    #[arg(long, value_name = "URL")]
    push_url: Option<String>,
    /// With --push-url: a token the agent sends back with each notification.
    #[arg(long, requires = "push_url")]
    push_token: Option<String>,
}

/// Which key, if any, the message carries.
fn choose_key(
    args: &SendArgs,
    client: &A2aClient,
    output: Output,
) -> Result<Option<String>, Failure> {
    match (&args.key, args.no_key) {
        (Some(key), _) => {
            // The error names the rule, never echoes the key: it may hold control characters.
            validate_key(key).map_err(|e| {
                Failure::usage(format!(
                    "--key is not a valid key: {e}. `a2a key` prints a fresh one."
                ))
            })?;
            if !client.honours_idempotency() {
                output.note(
                    "a2a: warning: the agent's card does not list the idempotency extension, so \
                     the key may be ignored and a retried send may run twice",
                    json!({"warning": "the agent does not advertise the idempotency extension"}),
                );
            }
            Ok(Some(key.clone()))
        }
        (None, true) => Ok(None),
        (None, false) => Ok(client.honours_idempotency().then(generate_key)),
    }
}

/// `a2a send URL TEXT --key K --message-id M`, quoted for a POSIX shell.
fn retry_command(args: &SendArgs, key: &str, message_id: &str) -> String {
    let quote = |s: &str| {
        if !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.:/@=".contains(&b))
        {
            s.to_owned()
        } else {
            format!("'{}'", s.replace('\'', r"'\''"))
        }
    };
    // A retry must reach the same tenant (a key is kept per tenant) the same way.
    let mut addressing = String::new();
    if let Some(binding) = args.target.binding.and_then(|b| b.to_possible_value()) {
        addressing.push_str(&format!(" --binding {}", binding.get_name()));
    }
    if let Some(tenant) = &args.target.tenant {
        addressing.push_str(&format!(" --tenant {}", quote(tenant)));
    }
    format!(
        "a2a send {} {} --key {key} --message-id {}{}{addressing}{}",
        quote(&args.target.url),
        quote(&args.text),
        quote(message_id),
        if args.stream { " --stream" } else { "" },
        args.target.credential_flags(),
    )
}

pub(crate) async fn send(args: SendArgs, output: Output) -> Result<(), Failure> {
    let client = args.target.client().await?;
    let key = choose_key(&args, &client, output)?;
    let mut message = Message::user_text(args.text.clone());
    if let Some(id) = &args.message_id {
        message.id = id.clone().into();
    }
    message.task_id = args.task.clone().map(Into::into);
    message.context_id = args.context.clone().map(Into::into);
    if let Some(key) = &key {
        set_key(&mut message, key).map_err(|e| Failure::usage(e.to_string()))?;
    }
    let message_id = message.id.to_string();
    let mut request = SendMessageRequest::new(message);
    if args.no_wait {
        request.configuration = Some(SendMessageConfiguration {
            return_immediately: true,
            ..SendMessageConfiguration::default()
        });
    }
    if let Some(url) = &args.push_url {
        let mut hook = TaskPushNotificationConfig::new(url.clone());
        if let Some(token) = &args.push_token {
            hook = hook.with_token(token.clone());
        }
        request = request.with_push_config(hook);
    }
    let url = args.target.url.clone();
    let cut_off = |e: &a2a_protocol_client::ClientError| {
        let failure = Failure::call(&url, e);
        match &key {
            Some(key) if failure.is_ambiguous() => failure.with_hint(&format!(
                "The send carried a key, so retrying cannot run it twice:\n  {}",
                retry_command(&args, key, &message_id)
            )),
            None if failure.is_ambiguous() => failure.with_hint(
                "It carried no key: resending may start a second task. Check with `a2a tasks` first.",
            ),
            _ => failure,
        }
    };
    let mut outcome = Outcome::default();
    if args.stream {
        let mut events = client
            .send_streaming_message(request)
            .await
            .map_err(|e| cut_off(&e))?;
        let mut first = true;
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| cut_off(&e))?;
            outcome.note_event(&event);
            if std::mem::take(&mut first)
                && !output.json
                && let Some(line) = output::stream_opening(&event)
            {
                say(&line);
            }
            output.event(&event)?;
        }
    } else {
        let response = client
            .send_message(request)
            .await
            .map_err(|e| cut_off(&e))?;
        if let SendMessageResponse::Task(task) = &response {
            outcome.note(&task.id, &task.status);
        }
        output.show(&response, output::send_response)?;
    }
    if let Some(key) = &key {
        if output.json {
            output.note("", json!({"idempotencyKey": key, "messageId": message_id}));
        } else {
            say(&format!(
                "key       {key}\nretry     {}",
                retry_command(&args, key, &message_id)
            ));
        }
    }
    outcome.result()
}

/// The state a send's task ended in, as far as its answer says.
#[derive(Default)]
struct Outcome {
    task: Option<(String, TaskStatus)>,
}

impl Outcome {
    fn note(&mut self, id: &impl ToString, status: &TaskStatus) {
        self.task = Some((id.to_string(), status.clone()));
    }

    fn note_event(&mut self, event: &StreamResponse) {
        match event {
            StreamResponse::Task(task) => self.note(&task.id, &task.status),
            StreamResponse::StatusUpdate(update) => self.note(&update.task_id, &update.status),
            _ => {}
        }
    }

    /// A failure when the task ended failed or rejected.
    fn result(self) -> Result<(), Failure> {
        match self.task {
            Some((id, status))
                if matches!(status.state, TaskState::Failed | TaskState::Rejected) =>
            {
                Err(Failure::task_ended(
                    &id,
                    &output::state_name(status.state),
                    status.message.as_ref().map(output::message_text),
                ))
            }
            _ => Ok(()),
        }
    }
}
