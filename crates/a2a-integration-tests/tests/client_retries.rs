//! The client's retry policy against our server, through a proxy that cuts connections after
//! the request went through: a keyed send to an agent that honours keys is retried and runs
//! once; anything that could run twice is not re-sent. On every binding: over gRPC the proxy
//! breaks calls on the HTTP/2 connection they share, and a call after a cut reconnects, so
//! connections still count attempts.

use std::time::Duration;

use a2a_integration_tests::support::{CountingAgent, serve, serve_on};
use a2a_protocol_client::{
    A2aClient, Binding, ClientBuilder, ClientError, FailureClass, RetryPolicy,
};
use a2a_protocol_server::RequestHandler;
use a2a_protocol_types::idempotency::{generate_key, set_key};
use a2a_protocol_types::{
    GetTaskRequest, ListTasksRequest, Message, SendMessageRequest, SendMessageResponse,
    StreamResponse, TaskState,
};
use a2a_test_kit::fault_proxy::{Fault, FaultProxy};
use futures::StreamExt;

const BINDINGS: [Binding; 3] = [Binding::JsonRpc, Binding::HttpJson, Binding::Grpc];

fn fresh_connections() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .expect("client")
}

fn policy() -> RetryPolicy {
    RetryPolicy::default()
        .with_initial_backoff(Duration::from_millis(20))
        .with_max_backoff(Duration::from_millis(100))
}

fn keyed(text: &str) -> SendMessageRequest {
    let mut message = Message::user_text(text);
    set_key(&mut message, &generate_key()).expect("valid key");
    SendMessageRequest::new(message)
}

/// A client for `url` on `binding`, with or without a policy, asserting (or not) that the peer
/// honours keys.
fn client(url: &str, binding: Binding, retry: bool, honours: bool) -> A2aClient {
    let mut builder = ClientBuilder::new(url)
        .with_binding(binding)
        .with_http_client(fresh_connections())
        .with_peer_honouring_idempotency(honours);
    if retry {
        builder = builder.with_retry_policy(policy());
    }
    builder.build().expect("client")
}

async fn task_count(client: &A2aClient) -> i32 {
    client
        .list_tasks(ListTasksRequest::default())
        .await
        .expect("listed")
        .total_size
}

fn task_of(response: SendMessageResponse) -> a2a_protocol_types::Task {
    match response {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(message) => panic!("a task, got {message:?}"),
    }
}

#[tokio::test]
async fn a_keyed_send_cut_after_the_request_is_retried_and_runs_once() {
    for binding in BINDINGS {
        let agent = CountingAgent::with_delay(Duration::from_millis(50));
        let server = serve(RequestHandler::builder(agent.clone()).build()).await;
        let proxy = FaultProxy::start(server.addr).await.expect("proxy");
        proxy.plan(&[Fault::CutBeforeResponse]);
        let client = client(&proxy.url(), binding, true, true);
        let task = task_of(
            client
                .send_message(keyed("hello"))
                .await
                .expect("retried to success"),
        );
        assert_eq!(task.status.state, TaskState::Completed);
        assert_eq!(
            proxy.connections(),
            2,
            "{binding:?}: one cut attempt, one retry"
        );
        assert_eq!(agent.runs(), 1, "{binding:?}");
        assert_eq!(task_count(&client).await, 1);
    }
}

#[tokio::test]
async fn an_unkeyed_send_is_not_re_sent_after_an_ambiguous_failure() {
    for binding in BINDINGS {
        let agent = CountingAgent::with_delay(Duration::from_millis(10));
        let server = serve(RequestHandler::builder(agent.clone()).build()).await;
        let proxy = FaultProxy::start(server.addr).await.expect("proxy");
        proxy.plan(&[Fault::CutBeforeResponse]);
        let client = client(&proxy.url(), binding, true, true);
        let error = client
            .send_message(SendMessageRequest::new(Message::user_text("hello")))
            .await
            .expect_err("surfaced");
        assert_eq!(error.class(), FailureClass::Ambiguous, "{error}");
        assert_eq!(proxy.connections(), 1, "{binding:?}: not re-sent");
        assert_eq!(agent.runs(), 1, "the first attempt did run");
    }
}

#[tokio::test]
async fn a_keyed_send_to_a_peer_not_known_to_honour_keys_is_not_re_sent() {
    for binding in BINDINGS {
        let agent = CountingAgent::with_delay(Duration::from_millis(10));
        let server = serve(RequestHandler::builder(agent.clone()).build()).await;
        let proxy = FaultProxy::start(server.addr).await.expect("proxy");
        proxy.plan(&[Fault::CutBeforeResponse]);
        let client = client(&proxy.url(), binding, true, false);
        assert!(!client.honours_idempotency());
        let error = client
            .send_message(keyed("hello"))
            .await
            .expect_err("surfaced");
        assert_eq!(error.class(), FailureClass::Ambiguous);
        assert_eq!(proxy.connections(), 1, "{binding:?}: not re-sent");
    }
}

#[tokio::test]
async fn without_a_policy_nothing_is_re_sent() {
    let agent = CountingAgent::with_delay(Duration::from_millis(10));
    let server = serve(RequestHandler::builder(agent.clone()).build()).await;
    for binding in BINDINGS {
        let proxy = FaultProxy::start(server.addr).await.expect("proxy");
        proxy.plan(&[Fault::CutBeforeResponse, Fault::CutBeforeResponse]);
        let client = client(&proxy.url(), binding, false, true);
        client
            .send_message(keyed("hello"))
            .await
            .expect_err("surfaced");
        let error = client
            .get_task(GetTaskRequest {
                id: "any".into(),
                ..GetTaskRequest::default()
            })
            .await
            .expect_err("surfaced");
        assert_eq!(error.class(), FailureClass::Ambiguous);
        assert_eq!(proxy.connections(), 2, "{binding:?}: each call tried once");
    }
}

#[tokio::test]
async fn reads_are_retried_after_an_ambiguous_failure() {
    let agent = CountingAgent::with_delay(Duration::from_millis(1));
    let server = serve(RequestHandler::builder(agent.clone()).build()).await;
    for binding in BINDINGS {
        let proxy = FaultProxy::start(server.addr).await.expect("proxy");
        let client = client(&proxy.url(), binding, true, false);
        proxy.plan(&[Fault::CutBeforeResponse]);
        client
            .list_tasks(ListTasksRequest::default())
            .await
            .expect("retried");
        assert_eq!(proxy.connections(), 2);
    }
}

#[tokio::test]
async fn a_refused_connection_is_retried_for_every_call() {
    for binding in BINDINGS {
        // Reserve a port, then leave it closed until the client has been refused a few times.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let url = format!("http://127.0.0.1:{port}");
        let client = ClientBuilder::new(&url)
            .with_binding(binding)
            .with_retry_policy(
                policy()
                    .with_max_attempts(50)
                    .with_max_backoff(Duration::from_millis(50)),
            )
            .build()
            .expect("client");
        let agent = CountingAgent::with_delay(Duration::from_millis(1));
        let starter = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
                .await
                .expect("bind late");
            serve_on(listener, RequestHandler::builder(agent).build())
        });
        // An unkeyed send is safe to retry when nothing was sent.
        let task = task_of(
            client
                .send_message(SendMessageRequest::new(Message::user_text("hi")))
                .await
                .expect("retried until the server came up"),
        );
        let _server = starter.await.expect("started");
        client
            .get_task(GetTaskRequest {
                id: task.id.clone(),
                ..GetTaskRequest::default()
            })
            .await
            .expect("works");
    }
}

#[tokio::test]
async fn a_keyed_stream_cut_before_its_first_event_is_re_sent() {
    for binding in BINDINGS {
        let agent = CountingAgent::with_delay(Duration::from_millis(50));
        let server = serve(RequestHandler::builder(agent.clone()).build()).await;
        let proxy = FaultProxy::start(server.addr).await.expect("proxy");
        proxy.plan(&[Fault::CutBeforeResponse]);
        let client = client(&proxy.url(), binding, true, true);
        let events: Vec<StreamResponse> = client
            .send_streaming_message(keyed("hello"))
            .await
            .expect("opened")
            .map(|e| e.expect("an event"))
            .collect()
            .await;
        assert!(events.last().expect("events").is_final(), "{events:?}");
        assert_eq!(agent.runs(), 1, "{binding:?}");
        assert_eq!(task_count(&client).await, 1);
    }
}

#[tokio::test]
async fn a_stream_cut_after_the_task_is_known_resumes_with_subscribe() {
    for binding in BINDINGS {
        let agent = CountingAgent::with_delay(Duration::from_millis(300));
        let server = serve(RequestHandler::builder(agent.clone()).build()).await;
        let proxy = FaultProxy::start(server.addr).await.expect("proxy");
        // The task snapshot and the first status update get through, then the cut.
        proxy.plan(&[Fault::CutAfterEvents(2)]);
        let client = client(&proxy.url(), binding, true, true);
        let events: Vec<StreamResponse> = client
            .send_streaming_message(keyed("hello"))
            .await
            .expect("opened")
            .map(|e| e.expect("an event"))
            .collect()
            .await;
        let last = events.last().expect("events");
        assert!(
            last.is_final(),
            "{binding:?}: the resumed stream ends with the task: {events:?}"
        );
        assert_eq!(
            proxy.connections(),
            2,
            "{binding:?}: the stream and one SubscribeToTask"
        );
        assert_eq!(agent.runs(), 1);
        assert_eq!(task_count(&client).await, 1);
    }
}

#[tokio::test]
async fn an_unkeyed_stream_cut_before_its_first_event_is_not_re_sent() {
    for binding in BINDINGS {
        let agent = CountingAgent::with_delay(Duration::from_millis(10));
        let server = serve(RequestHandler::builder(agent.clone()).build()).await;
        let proxy = FaultProxy::start(server.addr).await.expect("proxy");
        proxy.plan(&[Fault::CutBeforeResponse]);
        let client = client(&proxy.url(), binding, true, true);
        let outcome = match client
            .send_streaming_message(SendMessageRequest::new(Message::user_text("hello")))
            .await
        {
            Err(error) => Err(error),
            Ok(mut stream) => match stream.next().await {
                Some(Err(error)) => Err(error),
                other => Ok(other),
            },
        };
        let error: ClientError = outcome.expect_err("surfaced");
        assert_eq!(error.class(), FailureClass::Ambiguous, "{error}");
        assert_eq!(proxy.connections(), 1, "{binding:?}");
    }
}

#[tokio::test]
async fn from_card_sets_honours_idempotency_from_the_card() {
    let server = serve(RequestHandler::builder(CountingAgent::default()).build()).await;
    let builder = ClientBuilder::discover(&server.url()).await.expect("card");
    let client = builder.build().expect("client");
    assert!(client.honours_idempotency(), "our card lists the extension");
    let card = client.agent_card().expect("a card").clone();
    let mut stripped = card.clone();
    stripped.capabilities.extensions = None;
    assert!(
        !ClientBuilder::from_card(&stripped)
            .build()
            .expect("client")
            .honours_idempotency()
    );
    assert!(
        ClientBuilder::new(server.url())
            .with_peer_honouring_idempotency(true)
            .build()
            .expect("client")
            .honours_idempotency(),
        "asserted for a bare endpoint"
    );
    assert!(
        !ClientBuilder::new(server.url())
            .build()
            .expect("client")
            .honours_idempotency()
    );
    for binding in BINDINGS {
        let client = ClientBuilder::from_card(&card)
            .with_preferred_bindings(vec![binding])
            .build()
            .expect("client");
        let task = task_of(client.send_message(keyed("hi")).await.expect("sent"));
        assert_eq!(task.status.state, TaskState::Completed);
    }
}

/// A server that takes every connection and its request, and never answers; counts them.
async fn silent_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&accepted);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buffer = [0u8; 4096];
                while matches!(socket.read(&mut buffer).await, Ok(n) if n > 0) {}
            });
        }
    });
    (url, accepted)
}

#[tokio::test]
async fn a_call_that_times_out_is_retried_only_where_it_cannot_run_twice() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    for binding in BINDINGS {
        let (url, accepted) = silent_server().await;
        // Attempts counted as the client makes them (over gRPC they share one connection).
        let attempts = Arc::new(AtomicUsize::new(0));
        let client = |honours| {
            let counter = Arc::clone(&attempts);
            ClientBuilder::new(&url)
                .with_binding(binding)
                .with_http_client(fresh_connections())
                .with_peer_honouring_idempotency(honours)
                .with_retry_policy(policy().with_max_attempts(3))
                .with_request_timeout(Duration::from_millis(300))
                .with_request_hook(move |_: &mut http::HeaderMap| {
                    counter.fetch_add(1, Ordering::SeqCst);
                })
                .build()
                .expect("client")
        };
        let error = client(true)
            .send_message(keyed("wait for me"))
            .await
            .expect_err("nobody answers");
        assert_eq!(
            error.class(),
            FailureClass::Ambiguous,
            "{binding:?}: {error}"
        );
        assert_eq!(
            attempts.swap(0, Ordering::SeqCst),
            3,
            "{binding:?}: a keyed send to an agent that honours keys is retried"
        );
        assert!(
            accepted.swap(0, Ordering::SeqCst) > 0,
            "{binding:?}: it reached the server"
        );
        let error = client(true)
            .send_message(SendMessageRequest::new(Message::user_text("unkeyed")))
            .await
            .expect_err("nobody answers");
        assert_eq!(
            error.class(),
            FailureClass::Ambiguous,
            "{binding:?}: {error}"
        );
        assert_eq!(
            attempts.swap(0, Ordering::SeqCst),
            1,
            "{binding:?}: an unkeyed send is not"
        );
    }
}
