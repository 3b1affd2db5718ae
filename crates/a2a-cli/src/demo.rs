//! `a2a demo`: the idempotency document's story, told by real parts in one process.
//!
//! Two identical agents sit behind proxies that cut the first connection once the request has
//! reached the agent, before the answer comes back. Against one, a send without a key fails
//! ambiguously and the caller re-sends it; against the other, a keyed send fails the same way
//! and the client's retry policy re-sends it. The demo counts what each agent ran.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use a2a_protocol_client::{A2aClient, ClientBuilder, RetryPolicy};
use a2a_protocol_server::agents::EchoAgent;
use a2a_protocol_server::store::InMemoryTaskStore;
use a2a_protocol_server::{A2aServer, AgentExecutor, EventSink, RequestContext, RequestHandler};
use a2a_protocol_types::idempotency::{generate_key, set_key};
use a2a_protocol_types::{A2aError, Message, SendMessageRequest};
use a2a_test_kit::fault_proxy::{Fault, FaultProxy};
use async_trait::async_trait;
use serde::Serialize;
use tokio::sync::oneshot;

use crate::exit::Failure;
use crate::output::Output;

/// The echo agent, counting its turns.
struct Counted {
    agent: EchoAgent,
    runs: Arc<AtomicUsize>,
}

#[async_trait]
impl AgentExecutor for Counted {
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        self.agent.execute(ctx, events).await
    }
}

/// One agent with its store, served behind a fault proxy until dropped.
struct Stage {
    store: Arc<InMemoryTaskStore>,
    runs: Arc<AtomicUsize>,
    proxy: FaultProxy,
    _stop: oneshot::Sender<()>,
}

impl Stage {
    async fn start() -> Result<Self, Failure> {
        let io = |e: std::io::Error| Failure::internal(format!("cannot start the demo: {e}"));
        let store = Arc::new(InMemoryTaskStore::new());
        let runs = Arc::new(AtomicUsize::new(0));
        let handler = RequestHandler::builder(Counted {
            agent: EchoAgent::new(),
            runs: Arc::clone(&runs),
        })
        .with_agent_card(EchoAgent::card())
        .with_store(store.clone())
        .build();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(io)?;
        let proxy = FaultProxy::start(listener.local_addr().map_err(io)?)
            .await
            .map_err(io)?;
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(A2aServer::new(handler).serve(listener, async {
            let _ = stopped.await;
        }));
        Ok(Self {
            store,
            runs,
            proxy,
            _stop: stop,
        })
    }

    /// A client from the agent's card (read through the proxy, untouched), opening a fresh
    /// connection per call so the planned cut meets the send.
    async fn client(&self, retry: bool) -> Result<A2aClient, Failure> {
        let url = self.proxy.url();
        let fresh = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()
            .map_err(|e| Failure::internal(format!("cannot build an HTTP client: {e}")))?;
        let mut builder = ClientBuilder::discover(&url)
            .await
            .map_err(|e| Failure::call(&url, &e))?
            .with_http_client(fresh);
        if retry {
            builder = builder.with_retry_policy(
                RetryPolicy::default().with_initial_backoff(Duration::from_millis(50)),
            );
        }
        builder.build().map_err(|e| Failure::call(&url, &e))
    }

    fn tally(&self, then: &'static str) -> Path {
        Path {
            first_attempt: if self.proxy.counts().cut_before_response > 0 {
                "cut off, outcome unknown"
            } else {
                "answered"
            },
            then,
            requests_sent: self.proxy.connections().saturating_sub(1),
            tasks: self.store.task_count(),
            agent_runs: self.runs.load(Ordering::SeqCst),
        }
    }
}

/// What one side of the demo saw.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Path {
    first_attempt: &'static str,
    then: &'static str,
    /// Send attempts that reached the proxy (the card fetch is not counted).
    requests_sent: usize,
    tasks: usize,
    agent_runs: usize,
}

#[derive(Serialize)]
struct Report {
    unkeyed: Path,
    keyed: Path,
}

/// A send without a key: the client (policy or not) refuses to re-send it after the cut, so
/// the caller, who cannot know whether it ran, sends it again.
async fn unkeyed() -> Result<Path, Failure> {
    let stage = Stage::start().await?;
    let client = stage.client(true).await?;
    let request = SendMessageRequest::new(Message::user_text("summarise the incident"));
    stage.proxy.plan(&[Fault::CutBeforeResponse]);
    let url = stage.proxy.url();
    if client.send_message(request.clone()).await.is_err() {
        client
            .send_message(request)
            .await
            .map_err(|e| Failure::call(&url, &e))?;
    }
    Ok(stage.tally("the caller re-sent it"))
}

/// The same send with a key: the retry policy re-sends it, and the agent answers the retry
/// with the task the first attempt created.
async fn keyed() -> Result<Path, Failure> {
    let stage = Stage::start().await?;
    let client = stage.client(true).await?;
    let mut message = Message::user_text("summarise the incident");
    set_key(&mut message, &generate_key()).map_err(|e| Failure::internal(e.to_string()))?;
    stage.proxy.plan(&[Fault::CutBeforeResponse]);
    let url = stage.proxy.url();
    client
        .send_message(SendMessageRequest::new(message))
        .await
        .map_err(|e| Failure::call(&url, &e))?;
    Ok(stage.tally("the retry policy re-sent it"))
}

fn render(report: &Report) -> String {
    let Report { unkeyed, keyed } = report;
    let row = |label: &str, a: String, b: String| format!("{label:<22}{a:<32}{b}\n");
    let mut text = String::from(
        "The same send, cut off after the request reached the agent and before the answer came \
         back.\n\n",
    );
    text += &row("", "without a key".into(), "with a key".into());
    text += &row(
        "first attempt",
        unkeyed.first_attempt.into(),
        keyed.first_attempt.into(),
    );
    text += &row("then", unkeyed.then.into(), keyed.then.into());
    text += &row(
        "requests sent",
        unkeyed.requests_sent.to_string(),
        keyed.requests_sent.to_string(),
    );
    text += &row(
        "tasks created",
        unkeyed.tasks.to_string(),
        keyed.tasks.to_string(),
    );
    text += &row(
        "agent runs",
        unkeyed.agent_runs.to_string(),
        keyed.agent_runs.to_string(),
    );
    text += "\nWithout a key the caller could not tell whether the first send had run, and the \
             re-send started a second task.\nWith a key the agent recognised the retry and answered \
             with the task the first attempt created.";
    text
}

pub(crate) async fn demo(output: Output) -> Result<(), Failure> {
    let report = Report {
        unkeyed: unkeyed().await?,
        keyed: keyed().await?,
    };
    output.show(&report, render)
}
