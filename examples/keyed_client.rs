//! A client that cannot run a task twice: each send carries an idempotency key, failures are
//! retried by policy, and resending after an unknown outcome returns the first task.
//!
//! `cargo run -p a2a-examples --example keyed_client` starts an echo agent on a free port
//! and talks to it. `-- URL` talks to an agent of yours instead (such as `a2a serve`).

use std::time::Duration;

use a2a_protocol_client::{ClientBuilder, RetryPolicy};
use a2a_protocol_server::agents::EchoAgent;
use a2a_protocol_server::{A2aServer, RequestHandler};
use a2a_protocol_types::idempotency::{generate_key, set_key};
use a2a_protocol_types::{Message, SendMessageRequest, SendMessageResponse, Task};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (base, stop) = match std::env::args().nth(1) {
        Some(url) => (url, None),
        None => {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
            let base = format!("http://{}", listener.local_addr()?);
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let server = A2aServer::new(
                RequestHandler::builder(EchoAgent::new())
                    .with_agent_card(EchoAgent::card())
                    .build(),
            );
            let serving = tokio::spawn(server.serve(listener, async {
                let _ = stopped.await;
            }));
            (base, Some((stop, serving)))
        }
    };

    // Read the card first: it says whether the agent honours keys, and a keyed send is
    // retried after an ambiguous failure only then.
    let client = ClientBuilder::discover(&base)
        .await?
        .with_retry_policy(
            RetryPolicy::default()
                .with_max_attempts(4)
                .with_initial_backoff(Duration::from_millis(100))
                .with_deadline(Duration::from_secs(20)),
        )
        .build()?;
    println!(
        "{base} honours idempotency keys: {}",
        client.honours_idempotency()
    );

    // One key per logical operation, stored with the operation before the first attempt.
    let key = generate_key();
    let mut message = Message::user_text("charge order 1042");
    set_key(&mut message, &key)?;

    let first = task_of(
        client
            .send_message(SendMessageRequest::new(message.clone()))
            .await?,
    );
    println!("sent: task {} ({:?})", first.id, first.status.state);

    // Suppose the process lost the answer (a timeout, a crash before recording it): resend
    // the same message, same key and same message id. The agent does not run again.
    let again = task_of(
        client
            .send_message(SendMessageRequest::new(message))
            .await?,
    );
    println!("resent: task {} ({:?})", again.id, again.status.state);
    assert_eq!(
        first.id, again.id,
        "a resend returns the first attempt's task"
    );

    // A new operation gets a new key and a new message.
    let mut next = Message::user_text("charge order 1043");
    set_key(&mut next, &generate_key())?;
    let other = task_of(client.send_message(SendMessageRequest::new(next)).await?);
    println!("another operation: task {}", other.id);
    assert_ne!(first.id, other.id);

    if let Some((stop, serving)) = stop {
        stop.send(()).ok();
        serving.await??;
    }
    Ok(())
}

fn task_of(response: SendMessageResponse) -> Task {
    match response {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(message) => panic!("a task, got a reply: {}", message.text()),
    }
}
