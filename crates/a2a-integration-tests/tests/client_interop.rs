//! Our client against the official Python (`a2a-sdk`) and JavaScript (`@a2a-js/sdk`) servers,
//! at pinned versions, over JSON-RPC and HTTP+JSON, and over gRPC where the peer serves it.
//! `interop/setup.sh` installs them. Our client also manages push-notification configs on
//! their servers and attaches one to a send, which the peer delivers to a webhook here.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use a2a_integration_tests::support::{ensure_peers, interop_dir, interop_skipped};
use a2a_integration_tests::webhook::Webhook;
use a2a_protocol_client::{A2aClient, Binding, ClientBuilder, FailureClass, RetryPolicy};
use a2a_protocol_types::idempotency::{generate_key, set_key};
use a2a_protocol_types::push::TaskPushNotificationConfig;
use a2a_protocol_types::{
    CancelTaskRequest, DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTasksRequest, Message, SendMessageConfiguration, SendMessageRequest, SendMessageResponse,
    StreamResponse, SubscribeToTaskRequest, Task, TaskState,
};
use a2a_test_kit::fault_proxy::{Fault, FaultProxy};
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
    let mut peer = Peer { child, port };
    let card = format!("http://127.0.0.1:{port}/.well-known/agent-card.json");
    // Up to a minute: an interpreter importing its SDK (and gRPC) on a machine busy with the
    // rest of the suite can take well over ten seconds. One that exits fails at once.
    for _ in 0..1_200 {
        if reqwest::get(&card)
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            return peer;
        }
        if let Ok(Some(status)) = peer.child.try_wait() {
            panic!("the peer server {script} exited before serving: {status}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the peer server {script} did not come up within a minute");
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

/// Push configs created, read, listed and deleted on the peer; then a send carrying a push
/// config, which the peer's own sender delivers to the webhook at `{hook_base}/{slug}/pushed`.
async fn manage_push(client: &A2aClient, peer: &str, hook: &Webhook, hook_base: &str, slug: &str) {
    let hook_url = format!("{hook_base}/{slug}");
    let task = task_of(
        client
            .send_message(SendMessageRequest::new(Message::user_text("configs")))
            .await
            .unwrap_or_else(|e| panic!("{peer}: send: {e}")),
    );
    for n in 0..2 {
        let mut config = TaskPushNotificationConfig::new(format!("{hook_url}/unused/{n}"))
            .with_token(format!("token-{n}"));
        config.task_id = task.id.clone();
        config.id = format!("ours-{n}");
        let created = client
            .create_task_push_notification_config(config)
            .await
            .unwrap_or_else(|e| panic!("{peer}: create: {e}"));
        assert_eq!(created.id, format!("ours-{n}"), "{peer}");
        assert_eq!(created.task_id, task.id, "{peer}");
    }
    let got = client
        .get_task_push_notification_config(GetTaskPushNotificationConfigRequest {
            task_id: task.id.clone(),
            id: "ours-1".into(),
            ..GetTaskPushNotificationConfigRequest::default()
        })
        .await
        .unwrap_or_else(|e| panic!("{peer}: get: {e}"));
    assert_eq!(got.url, format!("{hook_url}/unused/1"), "{peer}");
    assert_eq!(got.token.as_deref(), Some("token-1"), "{peer}");
    let list = || async {
        let mut ids: Vec<String> = client
            .list_task_push_notification_configs(ListTaskPushNotificationConfigsRequest {
                task_id: task.id.clone(),
                ..ListTaskPushNotificationConfigsRequest::default()
            })
            .await
            .unwrap_or_else(|e| panic!("{peer}: list: {e}"))
            .configs
            .into_iter()
            .map(|c| c.id)
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(list().await, ["ours-0", "ours-1"], "{peer}");
    client
        .delete_task_push_notification_config(DeleteTaskPushNotificationConfigRequest {
            task_id: task.id.clone(),
            id: "ours-0".into(),
            ..DeleteTaskPushNotificationConfigRequest::default()
        })
        .await
        .unwrap_or_else(|e| panic!("{peer}: delete: {e}"));
    assert_eq!(list().await, ["ours-1"], "{peer}");

    let mut pushed = SendMessageRequest::new(Message::user_text("pushed"));
    pushed.configuration = Some(SendMessageConfiguration {
        task_push_notification_config: Some(
            TaskPushNotificationConfig::new(format!("{hook_url}/pushed")).with_token("ours"),
        ),
        ..SendMessageConfiguration::default()
    });
    let task = task_of(
        client
            .send_message(pushed)
            .await
            .unwrap_or_else(|e| panic!("{peer}: send with a push config: {e}")),
    );
    let about_task = |body: &serde_json::Value| {
        ["task", "statusUpdate", "artifactUpdate"]
            .iter()
            .any(|kind| {
                let event = &body[*kind];
                event["id"] == task.id.as_str() || event["taskId"] == task.id.as_str()
            })
    };
    hook.wait_until(&format!("/{slug}/pushed"), |received| {
        received.iter().any(|n| about_task(&n.body))
    })
    .await;
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
    let (hook_url, hook) = Webhook::start().await;
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
        let slug = format!("{binding:?}").to_lowercase();
        manage_push(
            &client,
            &format!("{peer} over {binding:?}"),
            &hook,
            &hook_url,
            &slug,
        )
        .await;
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
