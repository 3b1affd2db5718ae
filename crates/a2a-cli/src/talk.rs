//! The commands that read or change an agent's tasks, through the client crate.

use std::time::Duration;

use a2a_protocol_client::{A2aClient, Binding, ClientBuilder, RetryPolicy};
use a2a_protocol_types::{CancelTaskRequest, GetTaskRequest, ListTasksRequest, TaskState};
use clap::ValueEnum;

use crate::exit::Failure;
use crate::output::{self, Output};

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum BindingArg {
    /// JSON-RPC 2.0.
    Jsonrpc,
    /// HTTP+JSON.
    HttpJson,
    /// gRPC (`lf.a2a.v1.A2AService`).
    Grpc,
}

/// Which agent to talk to, and how.
#[derive(clap::Args)]
pub(crate) struct Target {
    /// The agent's base URL; its card is at /.well-known/agent-card.json.
    pub(crate) url: String,
    /// Prefer this binding among the card's interfaces.
    #[arg(long, value_enum)]
    pub(crate) binding: Option<BindingArg>,
    /// Re-send a failed call up to N times where that cannot run it twice: calls that never
    /// reached the agent or that it refused; after a cut connection only reads, cancels and
    /// keyed sends to an agent that honours keys. 0 re-sends nothing.
    #[arg(long, value_name = "N", default_value_t = 0)]
    retries: u32,
    /// The tenant to address (overrides the card's).
    #[arg(long)]
    pub(crate) tenant: Option<String>,
    /// Give up on a call (or a stream silent for) this long; a send cut off this way may have
    /// run, and is retried only when that is safe.
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
    timeout: Duration,
    /// Authenticate with the API key in environment variable NAME, sent where the agent's
    /// card says (its header, query parameter or cookie).
    #[arg(long, value_name = "NAME")]
    api_key_env: Option<String>,
    /// Authenticate with the bearer token in environment variable NAME (`Authorization:
    /// Bearer`), for agents whose card asks for HTTP bearer, OAuth 2.0 or OpenID Connect.
    #[arg(long, value_name = "NAME")]
    bearer_env: Option<String>,
    /// Trust the agent's HTTPS certificate when it chains to this CA (PEM), besides the
    /// system's roots.
    #[arg(long, value_name = "FILE")]
    ca_cert: Option<std::path::PathBuf>,
    /// Present this client certificate (PEM) for mutual TLS; needs --client-key.
    #[arg(long, value_name = "FILE", requires = "client_key")]
    client_cert: Option<std::path::PathBuf>,
    /// The private key of --client-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "client_cert")]
    client_key: Option<std::path::PathBuf>,
}

/// The value of environment variable `name`, which must be set and not empty.
pub(crate) fn secret_from_env(name: &str, what: &str) -> Result<String, Failure> {
    match std::env::var(name) {
        Ok(value) if !value.trim().is_empty() => Ok(value.trim().to_owned()),
        _ => Err(Failure::usage(format!(
            "environment variable {name} should hold the {what}, but it is not set or empty"
        ))),
    }
}

impl Target {
    /// The options naming where the credentials come from (never the credentials), to repeat
    /// in a command line.
    pub(crate) fn credential_flags(&self) -> String {
        let mut flags = String::new();
        if let Some(name) = &self.api_key_env {
            flags.push_str(&format!(" --api-key-env {name}"));
        }
        if let Some(name) = &self.bearer_env {
            flags.push_str(&format!(" --bearer-env {name}"));
        }
        let path = |flag: &str, path: &Option<std::path::PathBuf>| {
            path.as_ref()
                .map(|p| {
                    format!(
                        " {flag} '{}'",
                        p.display().to_string().replace('\'', r"'\''")
                    )
                })
                .unwrap_or_default()
        };
        flags.push_str(&path("--ca-cert", &self.ca_cert));
        flags.push_str(&path("--client-cert", &self.client_cert));
        flags.push_str(&path("--client-key", &self.client_key));
        flags
    }

    /// An HTTP client trusting --ca-cert and presenting --client-cert, when either is given.
    fn http_client(&self) -> Result<Option<reqwest::Client>, Failure> {
        if self.ca_cert.is_none() && self.client_cert.is_none() {
            return Ok(None);
        }
        let read = |path: &std::path::Path| {
            std::fs::read(path)
                .map_err(|e| Failure::usage(format!("cannot read {}: {e}", path.display())))
        };
        let mut http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .tcp_nodelay(true)
            .redirect(a2a_protocol_client::auth::same_origin_redirects());
        if let Some(path) = &self.ca_cert {
            let ca = reqwest::Certificate::from_pem(&read(path)?).map_err(|e| {
                Failure::usage(format!("{} is not a PEM certificate: {e}", path.display()))
            })?;
            http = http.add_root_certificate(ca);
        }
        if let (Some(cert), Some(key)) = (&self.client_cert, &self.client_key) {
            let mut pem = read(cert)?;
            pem.push(b'\n');
            pem.extend(read(key)?);
            let identity = reqwest::Identity::from_pem(&pem).map_err(|e| {
                Failure::usage(format!(
                    "{} and {} are not a PEM certificate and its key: {e}",
                    cert.display(),
                    key.display()
                ))
            })?;
            http = http.identity(identity);
        }
        http.build()
            .map(Some)
            .map_err(|e| Failure::usage(format!("the HTTP client could not be built: {e}")))
    }

    /// A client built from the agent's card.
    pub(crate) async fn client(&self) -> Result<A2aClient, Failure> {
        let http = self.http_client()?;
        let card = a2a_protocol_client::fetch_card(&self.url, http.as_ref())
            .await
            .map_err(|e| Failure::call(&self.url, &e))?;
        let mut builder = ClientBuilder::from_card(&card);
        if let Some(http) = http {
            builder = builder.with_http_client(http);
        }
        if self.retries > 0 {
            builder = builder.with_retry_policy(
                RetryPolicy::default()
                    .with_max_attempts(self.retries.saturating_add(1))
                    .with_max_backoff(Duration::from_secs(2)),
            );
        }
        if let Some(binding) = self.binding {
            builder = builder.with_preferred_bindings(vec![match binding {
                BindingArg::Jsonrpc => Binding::JsonRpc,
                BindingArg::HttpJson => Binding::HttpJson,
                BindingArg::Grpc => Binding::Grpc,
            }]);
        }
        if let Some(tenant) = &self.tenant {
            builder = builder.with_tenant(tenant);
        }
        let mut credentials = a2a_protocol_client::auth::Credentials::new();
        if let Some(name) = &self.api_key_env {
            credentials = credentials.with_api_key(secret_from_env(name, "API key")?);
        }
        if let Some(name) = &self.bearer_env {
            credentials = credentials.with_bearer_token(secret_from_env(name, "bearer token")?);
        }
        builder
            .with_credentials(credentials)
            .with_request_timeout(self.timeout)
            .with_stream_idle_timeout(self.timeout)
            .build()
            .map_err(|e| Failure::call(&self.url, &e))
    }
}

#[derive(clap::Args)]
pub(crate) struct TaskArgs {
    #[command(flatten)]
    target: Target,
    /// The task id.
    task: String,
    /// Show at most this many messages of the task's history.
    #[arg(long)]
    history: Option<i32>,
}

#[derive(clap::Args)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    target: Target,
    /// Only tasks in this context.
    #[arg(long)]
    context: Option<String>,
    /// Only tasks in this state: `working`, `completed`, `TASK_STATE_FAILED`, ...
    #[arg(long, value_parser = parse_state)]
    status: Option<TaskState>,
    /// At most this many tasks on the page (the agent caps it).
    #[arg(long)]
    page_size: Option<i32>,
    /// The page after the one that printed this token.
    #[arg(long)]
    page_token: Option<String>,
}

fn parse_state(text: &str) -> Result<TaskState, String> {
    let upper = text.trim().to_uppercase().replace('-', "_");
    let name = if upper.starts_with("TASK_STATE_") {
        upper
    } else {
        format!("TASK_STATE_{upper}")
    };
    TaskState::from_name(&name)
        .filter(|state| *state != TaskState::Unspecified)
        .ok_or_else(|| {
            format!(
                "unknown state {text:?}: use submitted, working, completed, failed, canceled, \
                 input-required, rejected or auth-required"
            )
        })
}

/// `a2a card`.
pub(crate) async fn card(target: Target, output: Output) -> Result<(), Failure> {
    let card = a2a_protocol_client::fetch_card(&target.url, None)
        .await
        .map_err(|e| Failure::call(&target.url, &e))?;
    output.show(&card, output::card_text)
}

/// `a2a get`.
pub(crate) async fn get(args: TaskArgs, output: Output) -> Result<(), Failure> {
    let client = args.target.client().await?;
    let request = GetTaskRequest {
        id: args.task.into(),
        history_length: args.history,
        ..GetTaskRequest::default()
    };
    let task = client
        .get_task(request)
        .await
        .map_err(|e| Failure::call(&args.target.url, &e))?;
    output.show(&task, output::task_text)
}

/// `a2a cancel`.
pub(crate) async fn cancel(args: TaskArgs, output: Output) -> Result<(), Failure> {
    let client = args.target.client().await?;
    let request = CancelTaskRequest {
        id: args.task.into(),
        ..CancelTaskRequest::default()
    };
    let task = client
        .cancel_task(request)
        .await
        .map_err(|e| Failure::call(&args.target.url, &e))?;
    output.show(&task, output::task_text)
}

/// `a2a tasks`.
pub(crate) async fn tasks(args: ListArgs, output: Output) -> Result<(), Failure> {
    let client = args.target.client().await?;
    let request = ListTasksRequest {
        context_id: args.context.map(Into::into),
        status: args.status,
        page_size: args.page_size,
        page_token: args.page_token,
        ..ListTasksRequest::default()
    };
    let page = client
        .list_tasks(request)
        .await
        .map_err(|e| Failure::call(&args.target.url, &e))?;
    output.show(&page, output::task_table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_are_read_in_either_spelling() {
        assert_eq!(parse_state("working"), Ok(TaskState::Working));
        assert_eq!(parse_state("input-required"), Ok(TaskState::InputRequired));
        assert_eq!(parse_state("TASK_STATE_FAILED"), Ok(TaskState::Failed));
        assert!(parse_state("unspecified").is_err());
        assert!(parse_state("done").is_err());
    }
}
