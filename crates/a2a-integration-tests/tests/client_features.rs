//! Client settings and error reporting against our server: headers, auth hook, extensions,
//! stream idle timeout, errors before the first event, `Retry-After`, refused connections.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_integration_tests::support::{CountingAgent, serve, serve_on};
use a2a_protocol_client::{Binding, ClientBuilder, ClientError, FailureClass, Phase, RetryPolicy};
use a2a_protocol_server::store::{InMemoryStoreConfig, InMemoryTaskStore};
use a2a_protocol_server::{A2aServer, CallerIdentity, RequestHandler, ServerConfig};
use a2a_protocol_types::idempotency::{IDEMPOTENCY_EXTENSION_URI, generate_key, set_key};
use a2a_protocol_types::{
    ErrorKind, ListTasksRequest, Message, SendMessageRequest, SubscribeToTaskRequest,
};
use futures::StreamExt;

const BINDINGS: [Binding; 3] = [Binding::JsonRpc, Binding::HttpJson, Binding::Grpc];

/// A server that keeps the headers of every request it gets; its URL and those headers.
async fn serve_recording_headers() -> (String, Arc<Mutex<Vec<http::HeaderMap>>>) {
    let seen: Arc<Mutex<Vec<http::HeaderMap>>> = Arc::default();
    let recorder = Arc::clone(&seen);
    let resolver = move |headers: &http::HeaderMap| {
        recorder
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(headers.clone());
        None::<CallerIdentity>
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let server = A2aServer::new(RequestHandler::builder(CountingAgent::default()).build())
        .with_config(ServerConfig::default().with_caller_resolver(resolver));
    tokio::spawn(server.serve(listener, std::future::pending()));
    (url, seen)
}

#[tokio::test]
async fn every_request_carries_the_version_extensions_headers_and_auth() {
    let (url, seen) = serve_recording_headers().await;
    for binding in BINDINGS {
        let client = ClientBuilder::new(&url)
            .with_binding(binding)
            .with_header("x-team", "payments")
            .with_request_hook(|headers: &mut http::HeaderMap| {
                headers.insert(
                    http::header::AUTHORIZATION,
                    http::HeaderValue::from_static("Bearer t0ken"),
                );
            })
            .with_extensions(vec![IDEMPOTENCY_EXTENSION_URI.into()])
            .build()
            .expect("client");
        client
            .list_tasks(ListTasksRequest::default())
            .await
            .expect("listed");
        let headers = seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .expect("a request");
        assert_eq!(headers["a2a-version"], "1.0");
        assert_eq!(headers["x-team"], "payments");
        assert_eq!(headers["authorization"], "Bearer t0ken");
        assert_eq!(headers["a2a-extensions"], IDEMPOTENCY_EXTENSION_URI);
    }
}

#[tokio::test]
async fn bad_settings_are_reported_at_build() {
    for builder in [
        ClientBuilder::new("not a url"),
        ClientBuilder::new("ftp://example.com"),
        ClientBuilder::new("http://example.com").with_header("bad header", "x"),
    ] {
        assert!(matches!(builder.build(), Err(ClientError::Config(_))));
    }
    let card = a2a_protocol_types::AgentCard::new("no interfaces", "none", "1");
    let error = ClientBuilder::from_card(&card)
        .build()
        .expect_err("nothing to call");
    assert!(
        error.to_string().contains("offers no A2A 1.0 interface"),
        "{error}"
    );
}

#[tokio::test]
async fn an_error_before_the_first_event_is_the_agents_error() {
    let server = serve(RequestHandler::builder(CountingAgent::default()).build()).await;
    for binding in BINDINGS {
        let client = ClientBuilder::new(server.url())
            .with_binding(binding)
            .build()
            .expect("client");
        let mut message = Message::user_text("hi");
        message.metadata = Some(
            [(
                "a2a-rust.com/idempotency-key".to_owned(),
                serde_json::json!("too-short"),
            )]
            .into_iter()
            .collect(),
        );
        let error = match client
            .send_streaming_message(SendMessageRequest::new(message))
            .await
        {
            Err(error) => error,
            Ok(_) => panic!("refused before the stream"),
        };
        assert_eq!(
            error.kind(),
            Some(ErrorKind::InvalidParams),
            "{binding:?}: {error}"
        );
        let error = match client
            .subscribe_to_task(SubscribeToTaskRequest {
                id: "no-such-task".into(),
                ..SubscribeToTaskRequest::default()
            })
            .await
        {
            Err(error) => error,
            Ok(_) => panic!("refused before the stream"),
        };
        assert_eq!(error.kind(), Some(ErrorKind::TaskNotFound), "{binding:?}");
        assert_eq!(error.class(), FailureClass::Final);
    }
}

#[tokio::test]
async fn a_silent_stream_times_out_as_a_stream_failure() {
    let server =
        serve(RequestHandler::builder(CountingAgent::with_delay(Duration::from_secs(30))).build())
            .await;
    for binding in BINDINGS {
        let client = ClientBuilder::new(server.url())
            .with_binding(binding)
            .with_stream_idle_timeout(Duration::from_millis(300))
            .build()
            .expect("client");
        let mut stream = client
            .send_streaming_message(SendMessageRequest::new(Message::user_text("hi")))
            .await
            .expect("opened");
        let mut failure = None;
        while let Some(event) = stream.next().await {
            if let Err(error) = event {
                failure = Some(error);
                break;
            }
        }
        let failure = failure.expect("the stream went silent");
        assert!(
            matches!(
                failure,
                ClientError::Timeout {
                    phase: Phase::Stream
                }
            ),
            "{failure}"
        );
        assert_eq!(failure.class(), FailureClass::Ambiguous);
    }
}

#[tokio::test]
async fn a_capacity_refusal_is_retried_after_the_advised_delay_or_reported_when_that_is_too_far() {
    // The server advises a retry when its one key slot frees: in about two seconds with keys
    // kept that long (the client waits and the retry gets in), in a day by default (past the
    // client's deadline: reported at once).
    for (key_ttl, retried) in [
        (Duration::from_secs(2), true),
        (Duration::from_secs(86_400), false),
    ] {
        for binding in BINDINGS {
            let store = Arc::new(InMemoryTaskStore::with_config(
                InMemoryStoreConfig::default()
                    .with_max_idempotency_keys(1)
                    .with_idempotency_key_ttl(key_ttl),
            ));
            let server = serve(
                RequestHandler::builder(CountingAgent::default())
                    .with_store(store)
                    .build(),
            )
            .await;
            // Attempts counted as the client makes them: each passes the request hook once.
            let attempts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let counter = Arc::clone(&attempts);
            let client = ClientBuilder::new(server.url())
                .with_binding(binding)
                .with_retry_policy(RetryPolicy::default().with_max_attempts(2))
                .with_request_hook(move |_: &mut http::HeaderMap| {
                    counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                })
                .build()
                .expect("client");
            let mut first = Message::user_text("takes the only slot");
            set_key(&mut first, &generate_key()).expect("valid");
            client
                .send_message(SendMessageRequest::new(first))
                .await
                .expect("sent");
            let before = attempts.load(std::sync::atomic::Ordering::SeqCst);
            let mut second = Message::user_text("no room yet");
            set_key(&mut second, &generate_key()).expect("valid");
            let outcome = client.send_message(SendMessageRequest::new(second)).await;
            let attempts = attempts.load(std::sync::atomic::Ordering::SeqCst) - before;
            if retried {
                outcome.unwrap_or_else(|e| panic!("{binding:?}: retried once room freed: {e}"));
                assert_eq!(attempts, 2, "{binding:?}: tried, then retried once");
                continue;
            }
            let error = outcome.expect_err("at capacity for a day");
            assert_eq!(
                error.kind(),
                Some(ErrorKind::ResourceExhausted),
                "{binding:?}: {error}"
            );
            match error.class() {
                FailureClass::Refused(Some(advised)) => {
                    assert!(advised > Duration::from_secs(3600), "{advised:?}");
                }
                other => panic!("{binding:?}: {other:?}"),
            }
            assert_eq!(attempts, 1, "{binding:?}: a day's wait is not waited for");
        }
    }
}

#[tokio::test]
async fn a_refused_connection_is_retried_for_reads_sends_and_streams() {
    type Call = fn(
        a2a_protocol_client::A2aClient,
    ) -> futures::future::BoxFuture<'static, Result<(), ClientError>>;
    let calls: [(&str, Call); 3] = [
        ("ListTasks", |c| {
            Box::pin(async move { c.list_tasks(ListTasksRequest::default()).await.map(drop) })
        }),
        ("SendMessage", |c| {
            Box::pin(async move {
                c.send_message(SendMessageRequest::new(Message::user_text("hi")))
                    .await
                    .map(drop)
            })
        }),
        ("SendStreamingMessage", |c| {
            Box::pin(async move {
                let stream = c
                    .send_streaming_message(SendMessageRequest::new(Message::user_text("hi")))
                    .await?;
                let events: Vec<_> = stream.collect().await;
                events.into_iter().collect::<Result<Vec<_>, _>>().map(drop)
            })
        }),
    ];
    for binding in BINDINGS {
        for (name, call) in calls {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let client = ClientBuilder::new(format!("http://127.0.0.1:{port}"))
                .with_binding(binding)
                .with_retry_policy(
                    RetryPolicy::default()
                        .with_max_attempts(100)
                        .with_initial_backoff(Duration::from_millis(20))
                        .with_max_backoff(Duration::from_millis(50)),
                )
                .build()
                .expect("client");
            let late = tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(200)).await;
                let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
                    .await
                    .expect("bind late");
                serve_on(
                    listener,
                    RequestHandler::builder(CountingAgent::default()).build(),
                )
            });
            call(client)
                .await
                .unwrap_or_else(|e| panic!("{binding:?} {name}: {e}"));
            drop(late.await.expect("started"));
        }
    }
}

#[tokio::test]
async fn an_http_json_post_carries_exactly_one_content_type() {
    let (url, seen) = serve_recording_headers().await;
    let client = ClientBuilder::new(&url)
        .with_binding(Binding::HttpJson)
        .build()
        .expect("client");
    client
        .send_message(SendMessageRequest::new(Message::user_text("hi")))
        .await
        .expect("sent");
    let headers = seen
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .pop()
        .expect("a request");
    let types: Vec<&str> = headers
        .get_all(http::header::CONTENT_TYPE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    assert_eq!(types, ["application/a2a+json"]);
}

/// A hook that waits before each attempt: it signs the first request and refuses the second.
struct CountingSigner {
    calls: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl a2a_protocol_client::RequestHook for CountingSigner {
    async fn before_request(
        &self,
        headers: &mut http::HeaderMap,
    ) -> Result<(), a2a_protocol_client::ClientError> {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        let call = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if call > 0 {
            return Err(a2a_protocol_client::ClientError::Credentials(
                "the signing service is down".into(),
            ));
        }
        headers.insert("x-signature", http::HeaderValue::from_static("signed-0"));
        Ok(())
    }
}

#[tokio::test]
async fn an_async_request_hook_signs_requests_and_a_refusal_sends_nothing() {
    let (url, seen) = serve_recording_headers().await;
    let client = ClientBuilder::new(&url)
        .with_request_hook(CountingSigner {
            calls: std::sync::atomic::AtomicUsize::new(0),
        })
        .build()
        .expect("client");
    client
        .list_tasks(ListTasksRequest::default())
        .await
        .expect("the signed request is answered");
    let refused = client
        .list_tasks(ListTasksRequest::default())
        .await
        .expect_err("the hook refused");
    assert!(
        matches!(refused, a2a_protocol_client::ClientError::Credentials(_)),
        "{refused:?}"
    );
    let seen = seen.lock().unwrap_or_else(|e| e.into_inner());
    assert_eq!(seen.len(), 1, "the refused request was never sent");
    assert_eq!(seen[0]["x-signature"], "signed-0");
}

/// A transport that refuses to connect on its first attempt, then answers with a task, and
/// keeps what each attempt carried.
#[derive(Default)]
struct FlakyTransport {
    attempts: Mutex<Vec<(a2a_protocol_client::Call, http::HeaderMap)>>,
}

#[async_trait::async_trait]
impl a2a_protocol_client::Transport for FlakyTransport {
    fn binding(&self) -> &str {
        "TEST"
    }

    fn url(&self) -> &str {
        "test:flaky"
    }

    async fn unary(
        &self,
        request: a2a_protocol_client::TransportRequest<'_>,
    ) -> Result<a2a_protocol_client::Answer, ClientError> {
        let first = {
            let mut attempts = self.attempts.lock().unwrap_or_else(|e| e.into_inner());
            attempts.push((request.call.clone(), request.headers.clone()));
            attempts.len() == 1
        };
        if first {
            return Err(ClientError::Transport {
                phase: Phase::Connect,
                message: "refused".into(),
            });
        }
        let task = a2a_protocol_types::Task::new(
            "t-1",
            "c-1",
            a2a_protocol_types::TaskStatus::new(a2a_protocol_types::TaskState::Completed),
        );
        Ok(a2a_protocol_client::Answer::Sent(
            a2a_protocol_types::SendMessageResponse::Task(task),
        ))
    }

    async fn open_stream(
        &self,
        _request: a2a_protocol_client::TransportRequest<'_>,
    ) -> Result<a2a_protocol_client::EventStream, ClientError> {
        Err(ClientError::Transport {
            phase: Phase::Connect,
            message: "no streams".into(),
        })
    }
}

#[tokio::test]
async fn a_custom_transport_gets_the_tenant_and_headers_and_is_retried() {
    let transport = Arc::new(FlakyTransport::default());
    let client = ClientBuilder::new("ignored")
        .with_transport(Arc::clone(&transport))
        .with_tenant("acme")
        .with_header("x-team", "payments")
        .with_request_hook(|headers: &mut http::HeaderMap| {
            headers.insert("x-signed", http::HeaderValue::from_static("yes"));
        })
        .with_retry_policy(RetryPolicy::default().with_initial_backoff(Duration::from_millis(1)))
        .build()
        .expect("client");
    assert_eq!(client.url(), "test:flaky");
    let renewing = client.activating(&[IDEMPOTENCY_EXTENSION_URI]);
    let answer = renewing
        .send_message(SendMessageRequest::new(Message::user_text("hi")))
        .await
        .expect("the second attempt answers");
    assert!(
        matches!(answer, a2a_protocol_types::SendMessageResponse::Task(t) if t.id.as_str() == "t-1")
    );
    let attempts = transport.attempts.lock().unwrap_or_else(|e| e.into_inner());
    assert_eq!(attempts.len(), 2, "a not-sent failure is retried");
    for (call, headers) in attempts.iter() {
        let a2a_protocol_client::Call::SendMessage(sent) = call else {
            panic!("a send, got {call:?}");
        };
        assert_eq!(sent.tenant, "acme");
        assert_eq!(sent.message.text(), "hi");
        assert_eq!(headers["a2a-version"], "1.0");
        assert_eq!(headers["x-team"], "payments");
        assert_eq!(headers["x-signed"], "yes");
        assert_eq!(headers["a2a-extensions"], IDEMPOTENCY_EXTENSION_URI);
    }
}

/// A server of a later version: every task and event it writes carries the v1.1 draft's
/// `generation` (as ProtoJSON writes an int64, a string) when `with_generation`, else none.
async fn serve_later_version(with_generation: bool) -> String {
    use axum::response::IntoResponse;
    let generation = move |n: u64| with_generation.then(|| n.to_string());
    let handle = move |body: String| async move {
        let request: serde_json::Value = serde_json::from_str(&body).expect("JSON-RPC");
        let id = request["id"].clone();
        let task = |state: &str, n: u64| {
            let mut task =
                serde_json::json!({"id": "t-1", "contextId": "c-1", "status": {"state": state}});
            if let Some(g) = generation(n) {
                task["generation"] = g.into();
            }
            task
        };
        match request["method"].as_str() {
            Some("GetTask") => axum::Json(serde_json::json!({
                "jsonrpc": "2.0", "id": id, "result": task("TASK_STATE_COMPLETED", 3)
            }))
            .into_response(),
            _ => {
                let mut update = serde_json::json!({"statusUpdate": {
                    "taskId": "t-1", "contextId": "c-1", "status": {"state": "TASK_STATE_COMPLETED"}}});
                if let Some(g) = generation(2) {
                    update["statusUpdate"]["generation"] = g.into();
                }
                let events = [
                    serde_json::json!({"task": task("TASK_STATE_WORKING", 1)}),
                    update,
                ]
                .map(|event| {
                    let line = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": event});
                    format!("data: {line}\n\n")
                })
                .concat();
                ([(http::header::CONTENT_TYPE, "text/event-stream")], events).into_response()
            }
        }
    };
    let app = axum::Router::new().route("/", axum::routing::post(handle));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

#[tokio::test]
async fn a_later_servers_generation_is_read_and_never_required() {
    for (with_generation, expected) in [(true, [3, 1, 2]), (false, [0, 0, 0])] {
        let url = serve_later_version(with_generation).await;
        let client = ClientBuilder::new(&url)
            .with_binding(Binding::JsonRpc)
            .build()
            .expect("client");
        let task = client
            .get_task(a2a_protocol_types::GetTaskRequest {
                id: "t-1".into(),
                ..Default::default()
            })
            .await
            .expect("read with or without a generation");
        let events: Vec<_> = client
            .send_streaming_message(SendMessageRequest::new(Message::user_text("hi")))
            .await
            .expect("a stream")
            .map(|event| event.expect("an event").generation())
            .collect()
            .await;
        assert_eq!(
            [task.generation, events[0], events[1]],
            expected,
            "with generation: {with_generation}"
        );
    }
}
