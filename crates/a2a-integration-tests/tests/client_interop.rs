//! Our client against the official Python (`a2a-sdk`) and JavaScript (`@a2a-js/sdk`) servers,
//! at pinned versions, over JSON-RPC and HTTP+JSON, and over gRPC where the peer serves it.
//! `interop/setup.sh` installs them.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use a2a_cli::fault_proxy::{Fault, FaultProxy};
use a2a_integration_tests::support::{ensure_peers, interop_dir, interop_skipped};
use a2a_protocol_client::{A2aClient, Binding, ClientBuilder, FailureClass, RetryPolicy};
use a2a_protocol_types::idempotency::{generate_key, set_key};
use a2a_protocol_types::{
    CancelTaskRequest, GetTaskRequest, ListTasksRequest, Message, SendMessageConfiguration,
    SendMessageRequest, SendMessageResponse, StreamResponse, SubscribeToTaskRequest, Task,
    TaskState,
};
use futures::StreamExt;

/// A peer server process, killed when dropped.
struct Peer {
    child: Child,
    port: u16,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the peer's script with two free ports: HTTP, and gRPC for a peer that serves it.
async fn start_peer(program: &str, script: &str) -> Peer {
    ensure_peers();
    let free_port = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port()
    };
    let port = free_port();
    let child = Command::new(program)
        .arg(interop_dir().join(script))
        .arg(port.to_string())
        .arg(free_port().to_string())
        .stdout(Stdio::null())
        .spawn()
        .expect("the peer server starts");
    let peer = Peer { child, port };
    let card = format!("http://127.0.0.1:{port}/.well-known/agent-card.json");
    for _ in 0..200 {
        if reqwest::get(&card)
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            return peer;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the peer server {script} did not come up");
}

fn task_of(response: SendMessageResponse) -> Task {
    match response {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(message) => panic!("a task, got {message:?}"),
    }
}

async fn exercise(client: &A2aClient, peer: &str) {
    let task = task_of(
        client
            .send_message(SendMessageRequest::new(Message::user_text("hello")))
            .await
            .unwrap_or_else(|e| panic!("{peer}: send: {e}")),
    );
    assert_eq!(task.status.state, TaskState::Completed, "{peer}");
    assert_eq!(
        task.artifacts[0].parts[0].as_text(),
        Some("hello"),
        "{peer}"
    );

    let events: Vec<StreamResponse> = client
        .send_streaming_message(SendMessageRequest::new(Message::user_text("streamed")))
        .await
        .unwrap_or_else(|e| panic!("{peer}: stream: {e}"))
        .map(|e| e.unwrap_or_else(|e| panic!("{peer}: event: {e}")))
        .collect()
        .await;
    assert!(
        matches!(events.first(), Some(StreamResponse::Task(_))),
        "{peer}: {events:?}"
    );
    assert!(
        events.last().is_some_and(StreamResponse::is_final),
        "{peer}: {events:?}"
    );

    let fetched = client
        .get_task(GetTaskRequest {
            id: task.id.clone(),
            ..GetTaskRequest::default()
        })
        .await
        .unwrap_or_else(|e| panic!("{peer}: get: {e}"));
    assert_eq!(fetched.id, task.id);
    let listed = client
        .list_tasks(ListTasksRequest::default())
        .await
        .unwrap_or_else(|e| panic!("{peer}: list: {e}"));
    assert!(listed.tasks.iter().any(|t| t.id == task.id), "{peer}");

    let mut slow = SendMessageRequest::new(Message::user_text("cancel me"));
    slow.configuration = Some(SendMessageConfiguration {
        return_immediately: true,
        ..SendMessageConfiguration::default()
    });
    let running = task_of(
        client
            .send_message(slow)
            .await
            .unwrap_or_else(|e| panic!("{peer}: send: {e}")),
    );
    let mut subscribed = client
        .subscribe_to_task(SubscribeToTaskRequest {
            id: running.id.clone(),
            ..SubscribeToTaskRequest::default()
        })
        .await
        .unwrap_or_else(|e| panic!("{peer}: subscribe: {e}"));
    let first = subscribed.next().await;
    assert!(
        matches!(&first, Some(Ok(StreamResponse::Task(t))) if t.id == running.id),
        "{peer}: a subscription starts with the task: {first:?}"
    );
    let canceled = client
        .cancel_task(CancelTaskRequest {
            id: running.id.clone(),
            ..CancelTaskRequest::default()
        })
        .await
        .unwrap_or_else(|e| panic!("{peer}: cancel: {e}"));
    assert_eq!(canceled.status.state, TaskState::Canceled, "{peer}");
    let rest: Vec<StreamResponse> = subscribed
        .map(|e| e.unwrap_or_else(|e| panic!("{peer}: subscribed event: {e}")))
        .collect()
        .await;
    assert!(
        rest.last().is_some_and(StreamResponse::is_final),
        "{peer}: the subscription ends when the task is canceled: {rest:?}"
    );
}

/// Through a cutting proxy, a keyed send to a peer that does not advertise the extension is
/// not re-sent, whatever the retry policy.
async fn keyed_send_is_not_re_sent(card_url: &str, binding: Binding, peer: &str) {
    let upstream: std::net::SocketAddr = card_url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .and_then(|a| a.parse().ok())
        .expect("an address");
    let proxy = FaultProxy::start(upstream).await.expect("proxy");
    proxy.plan(&[Fault::CutBeforeResponse]);
    let mut card = a2a_protocol_client::fetch_card(card_url, None)
        .await
        .expect("card");
    for interface in &mut card.supported_interfaces {
        interface.url = interface
            .url
            .replace(&format!("http://{upstream}"), &proxy.url());
    }
    let client = ClientBuilder::from_card(&card)
        .with_preferred_bindings(vec![binding])
        .with_retry_policy(RetryPolicy::default().with_initial_backoff(Duration::from_millis(10)))
        .with_http_client(
            reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .build()
                .expect("http"),
        )
        .build()
        .expect("client");
    assert!(
        !client.honours_idempotency(),
        "{peer} advertises no idempotency extension"
    );
    let mut message = Message::user_text("hello");
    set_key(&mut message, &generate_key()).expect("valid");
    let error = client
        .send_message(SendMessageRequest::new(message))
        .await
        .expect_err("surfaced");
    assert_eq!(error.class(), FailureClass::Ambiguous, "{peer}: {error}");
    assert_eq!(proxy.connections(), 1, "{peer} {binding:?}: not re-sent");
}

async fn against(program: &str, script: &str, peer: &str, bindings: &[Binding]) {
    let server = start_peer(program, script).await;
    let base = format!("http://127.0.0.1:{}", server.port);
    for &binding in bindings {
        let client = ClientBuilder::discover(&base)
            .await
            .unwrap_or_else(|e| panic!("{peer}: card: {e}"))
            .with_preferred_bindings(vec![binding])
            .build()
            .expect("client");
        assert_eq!(
            client.binding(),
            binding.name(),
            "{peer} serves {binding:?}"
        );
        exercise(&client, &format!("{peer} over {binding:?}")).await;
        if binding != Binding::Grpc {
            keyed_send_is_not_re_sent(&base, binding, peer).await;
        }
    }
}

#[tokio::test]
async fn our_client_talks_to_the_python_sdk_server() {
    if interop_skipped() {
        return;
    }
    let python = interop_dir().join(".venv/bin/python").display().to_string();
    against(
        &python,
        "python/server.py",
        "a2a-sdk (Python)",
        &[Binding::JsonRpc, Binding::HttpJson, Binding::Grpc],
    )
    .await;
}

#[tokio::test]
async fn our_client_talks_to_the_javascript_sdk_server() {
    if interop_skipped() {
        return;
    }
    against(
        "node",
        "js/server.mjs",
        "@a2a-js/sdk (JavaScript)",
        &[Binding::JsonRpc, Binding::HttpJson, Binding::Grpc],
    )
    .await;
}
