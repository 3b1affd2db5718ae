//! An agent that hands part of its work to another agent, once, for a bounded time: the
//! child task carries an idempotency key (a retried start cannot create a second child), a
//! lease (the child is canceled if this agent stops renewing it, say because it crashed) and
//! a budget (the child's turn may take at most this long).
//!
//! `cargo run -p a2a-examples --example delegating_agent` starts both agents on free ports,
//! asks the parent, and prints what the child did and spent.

use std::time::Duration;

use a2a_protocol_client::delegation::{Delegation, DelegationOutcome};
use a2a_protocol_client::{A2aClient, ClientBuilder};
use a2a_protocol_server::agents::EchoAgent;
use a2a_protocol_server::{A2aServer, AgentExecutor, EventSink, RequestContext, RequestHandler};
use a2a_protocol_types::budget::BudgetGrant;
use a2a_protocol_types::lease::Lease;
use a2a_protocol_types::{A2aError, Message, SendMessageRequest, SendMessageResponse};
use async_trait::async_trait;

/// Asks its child to do the work and answers with what the child said.
struct Parent {
    child: A2aClient,
}

#[async_trait]
impl AgentExecutor for Parent {
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
        events.working().await?;
        let failed = |e: a2a_protocol_client::ClientError| {
            A2aError::internal(format!("could not delegate: {e}"))
        };
        let mut child = Delegation::builder(Message::user_text(ctx.message.text()))
            .with_lease(Lease::new(Duration::from_secs(10)))
            .with_budget(BudgetGrant::with_time(Duration::from_secs(30)))
            .start(&self.child)
            .await
            .map_err(failed)?;
        // Waiting renews the lease; dropping `child` unsettled would cancel the child task.
        let answer = match child.wait().await.map_err(failed)? {
            DelegationOutcome::Completed(task) => format!(
                "the child said: {} (spent {:?})",
                task.status
                    .message
                    .as_ref()
                    .map(Message::text)
                    .unwrap_or_default(),
                child.spend().map(|report| report.spent_ms),
            ),
            other => {
                return events
                    .fail(format!("the child did not finish: {other:?}"))
                    .await;
            }
        };
        events.complete(Some(events.agent_message(answer))).await
    }
}

/// Serves `handler` on a free port; the sender stops it.
async fn serve(
    handler: RequestHandler,
) -> std::io::Result<(
    String,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<std::io::Result<()>>,
)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(A2aServer::new(handler).serve(listener, async {
        let _ = stopped.await;
    }));
    Ok((base, stop, serving))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The child honours leases of up to a minute (and keys, as every bundled store does).
    let child = RequestHandler::builder(EchoAgent::slow(Duration::from_millis(300)))
        .with_agent_card(EchoAgent::card())
        .with_leases(Duration::from_secs(60))
        .build();
    let (child_url, stop_child, child_serving) = serve(child).await?;
    // Discovered from its card: the client learns the child honours keys and leases.
    let child_client = ClientBuilder::discover(&child_url).await?.build()?;
    let (parent_url, stop_parent, parent_serving) = serve(
        RequestHandler::builder(Parent {
            child: child_client,
        })
        .build(),
    )
    .await?;

    let caller = ClientBuilder::new(parent_url).build()?;
    let SendMessageResponse::Task(task) = caller
        .send_message(SendMessageRequest::new(Message::user_text(
            "translate: bonjour",
        )))
        .await?
    else {
        panic!("a task");
    };
    let answer = task
        .status
        .message
        .as_ref()
        .map(Message::text)
        .unwrap_or_default();
    println!(
        "parent task {} is {:?}: {answer}",
        task.id, task.status.state
    );
    assert!(
        answer.starts_with("the child said: translate: bonjour"),
        "{answer}"
    );

    stop_parent.send(()).ok();
    parent_serving.await??;
    stop_child.send(()).ok();
    child_serving.await??;
    Ok(())
}
