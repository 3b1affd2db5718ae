//! The gRPC binding, spoken to by a gRPC client generated from the spec's proto over a real
//! HTTP/2 connection to the same port the HTTP bindings use.

mod common;

use a2a_protocol_grpc::pb;
use a2a_protocol_grpc::status::from_status;
use a2a_protocol_types::idempotency::{generate_key, set_key};
use a2a_protocol_types::{ErrorKind, Message, SendMessageRequest, Task, TaskState};
use common::grpc::client as grpc;
use common::*;
use futures::StreamExt;

/// A request with the version metadata every A2A 1.0 call carries.
fn request<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("a2a-version", "1.0".parse().expect("ascii"));
    request
}

fn send(message: Message) -> pb::SendMessageRequest {
    SendMessageRequest::new(message).into()
}

fn task_of(response: pb::SendMessageResponse) -> Task {
    match response.payload {
        Some(pb::send_message_response::Payload::Task(task)) => task.try_into().expect("a task"),
        other => panic!("expected a task, got {other:?}"),
    }
}

#[tokio::test]
async fn a_send_is_answered_and_its_task_read_listed_and_not_canceled_once_done() {
    let server = serve(CountingAgent::new()).await;
    let mut client = grpc(&server.base).await;
    let task = task_of(
        client
            .send_message(request(send(Message::user_text("hello"))))
            .await
            .expect("answered")
            .into_inner(),
    );
    assert_eq!(task.status.state, TaskState::Completed);
    let read: Task = client
        .get_task(request(pb::GetTaskRequest {
            id: task.id.to_string(),
            ..Default::default()
        }))
        .await
        .expect("found")
        .into_inner()
        .try_into()
        .expect("a task");
    assert_eq!(read.id, task.id);
    assert_eq!(
        read.history.first().map(Message::text).as_deref(),
        Some("hello")
    );
    let page = client
        .list_tasks(request(pb::ListTasksRequest::default()))
        .await
        .expect("listed")
        .into_inner();
    assert_eq!(page.tasks.len(), 1);
    let refused = client
        .cancel_task(request(pb::CancelTaskRequest {
            id: task.id.to_string(),
            ..Default::default()
        }))
        .await
        .expect_err("a completed task cannot be canceled");
    assert_eq!(refused.code(), tonic::Code::FailedPrecondition);
    assert_eq!(from_status(&refused).kind, ErrorKind::TaskNotCancelable);
}

#[tokio::test]
async fn errors_carry_the_spec_code_and_an_a2a_error_info() {
    let server = serve(CountingAgent::new()).await;
    let mut client = grpc(&server.base).await;
    let status = client
        .get_task(request(pb::GetTaskRequest {
            id: "no-such-task".into(),
            ..Default::default()
        }))
        .await
        .expect_err("no such task");
    assert_eq!(status.code(), tonic::Code::NotFound);
    let error = from_status(&status);
    assert_eq!(error.kind, ErrorKind::TaskNotFound);
    let info = error.error_info().expect("an ErrorInfo");
    assert_eq!(
        (info.reason.as_str(), info.domain.as_str()),
        ("TASK_NOT_FOUND", "a2a-protocol.org")
    );

    let unversioned = client
        .get_task(tonic::Request::new(pb::GetTaskRequest {
            id: "t".into(),
            ..Default::default()
        }))
        .await
        .expect_err("no a2a-version metadata means 0.3");
    assert_eq!(
        from_status(&unversioned).kind,
        ErrorKind::VersionNotSupported
    );

    let invalid = client
        .send_message(request(pb::SendMessageRequest::default()))
        .await
        .expect_err("a send needs a message");
    assert_eq!(invalid.code(), tonic::Code::InvalidArgument);
}

#[tokio::test]
async fn a_message_the_proto_can_say_but_a2a_forbids_is_invalid_argument_and_runs_nothing() {
    let agent = CountingAgent::new();
    let server = serve(agent.clone()).await;
    let mut client = grpc(&server.base).await;
    let valid = pb::Message::from(Message::user_text("hi"));
    let cases = [
        (
            "no parts",
            pb::Message {
                parts: vec![],
                ..valid.clone()
            },
        ),
        (
            "no message id",
            pb::Message {
                message_id: String::new(),
                ..valid.clone()
            },
        ),
        (
            "no role",
            pb::Message {
                role: pb::Role::Unspecified as i32,
                ..valid.clone()
            },
        ),
        (
            "a part with no content",
            pb::Message {
                parts: vec![pb::Part::default()],
                ..valid.clone()
            },
        ),
    ];
    for (what, message) in cases {
        let status = client
            .send_message(request(pb::SendMessageRequest {
                message: Some(message),
                ..Default::default()
            }))
            .await
            .expect_err(what);
        assert_eq!(
            status.code(),
            tonic::Code::InvalidArgument,
            "{what}: {status:?}"
        );
        assert_eq!(
            from_status(&status).kind,
            ErrorKind::InvalidParams,
            "{what}"
        );
    }
    assert_eq!(agent.runs(), 0, "nothing invalid reached the agent");
}

#[tokio::test]
async fn a_keyed_send_retried_over_grpc_replays_even_when_first_sent_over_json_rpc() {
    let agent = CountingAgent::new();
    let server = serve(agent.clone()).await;
    let mut client = grpc(&server.base).await;
    let key = generate_key();
    let keyed = |id: &str| {
        let mut message = Message::user_text("once");
        message.id = id.into();
        set_key(&mut message, &key).expect("a valid key");
        message
    };
    let first = task_of(
        client
            .send_message(request(send(keyed("m-1"))))
            .await
            .expect("answered")
            .into_inner(),
    );
    let retry = task_of(
        client
            .send_message(request(send(keyed("m-1"))))
            .await
            .expect("replayed")
            .into_inner(),
    );
    assert_eq!(
        first.id, retry.id,
        "the retry replays the first send's task"
    );
    assert_eq!(agent.runs(), 1);

    let json_key = common::key();
    let over_json_rpc = call(
        Binding::JsonRpc,
        &server.base,
        "SendMessage",
        keyed_params("m-2", "once", &json_key),
    )
    .await
    .expect("sent over JSON-RPC");
    let mut message = Message::user_text("once");
    message.id = "m-2".into();
    set_key(&mut message, &json_key).expect("a valid key");
    let over_grpc = task_of(
        client
            .send_message(request(send(message)))
            .await
            .expect("replayed over gRPC")
            .into_inner(),
    );
    assert_eq!(over_grpc.id.as_str(), task_of_json(&over_json_rpc));
    assert_eq!(agent.runs(), 2, "one run per key, whatever the binding");
}

fn task_of_json(result: &serde_json::Value) -> &str {
    common::task_of(result)["id"].as_str().expect("a task id")
}

#[tokio::test]
async fn a_streamed_send_delivers_every_event_and_ends_when_the_task_settles() {
    let server = serve(CountingAgent::new()).await;
    let mut client = grpc(&server.base).await;
    let mut events = client
        .send_streaming_message(request(send(Message::user_text("stream me"))))
        .await
        .expect("a stream")
        .into_inner();
    let mut states = Vec::new();
    while let Some(event) = events.next().await {
        let event = a2a_protocol_types::StreamResponse::try_from(event.expect("an event"))
            .expect("a valid event");
        match event {
            a2a_protocol_types::StreamResponse::Task(task) => states.push(task.status.state),
            a2a_protocol_types::StreamResponse::StatusUpdate(update) => {
                states.push(update.status.state);
            }
            _ => {}
        }
    }
    assert_eq!(states.last(), Some(&TaskState::Completed), "{states:?}");

    let status = client
        .subscribe_to_task(request(pb::SubscribeToTaskRequest {
            id: "no-such-task".into(),
            ..Default::default()
        }))
        .await
        .expect_err("nothing to follow");
    assert_eq!(status.code(), tonic::Code::NotFound);
}

#[tokio::test]
async fn the_card_lists_the_grpc_interface_and_http_1_clients_still_work() {
    let server = serve(CountingAgent::new()).await;
    let card: serde_json::Value = client()
        .get(format!("{}/.well-known/agent-card.json", server.base))
        .send()
        .await
        .expect("card")
        .json()
        .await
        .expect("JSON");
    let bindings: Vec<&str> = card["supportedInterfaces"]
        .as_array()
        .expect("interfaces")
        .iter()
        .filter_map(|i| i["protocolBinding"].as_str())
        .collect();
    assert_eq!(bindings, ["JSONRPC", "HTTP+JSON", "GRPC"]);
    // And the same port still answers HTTP/1.1.
    call(
        Binding::Rest,
        &server.base,
        "ListTasks",
        serde_json::json!({}),
    )
    .await
    .expect("HTTP/1.1 is served beside HTTP/2");
}

/// The `grpc-status` and `grpc-message` of a unary call on `method` whose request is `frame`
/// as it stands (its 5-byte prefix included), sent over raw HTTP/2 frames, with the request's
/// extra `headers`.
async fn raw_call(
    base: &str,
    method: &str,
    frame: Vec<u8>,
    headers: &[(&str, &str)],
) -> (String, String) {
    let addr = base.trim_start_matches("http://");
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut client, connection) = h2::client::handshake(tcp).await.expect("an h2 handshake");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut request = http::Request::post(format!("http://{addr}/lf.a2a.v1.A2AService/{method}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .header("a2a-version", "1.0");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let (response, mut body) = client
        .send_request(request.body(()).expect("a request"), false)
        .expect("sent");
    body.send_data(bytes::Bytes::from(frame), true)
        .expect("the frame sent");
    let response = response.await.expect("an answer");
    let (parts, mut answer) = response.into_parts();
    // A status answered at once comes in the headers (trailers-only), else in the trailers.
    let status_of = |headers: &http::HeaderMap| {
        headers
            .get("grpc-status")
            .map(|v| v.to_str().unwrap_or("").to_owned())
    };
    let message_of = |headers: &http::HeaderMap| {
        headers
            .get("grpc-message")
            .map(|v| v.to_str().unwrap_or("").to_owned())
            .unwrap_or_default()
    };
    if let Some(status) = status_of(&parts.headers) {
        return (status, message_of(&parts.headers));
    }
    while let Some(chunk) = answer.data().await {
        chunk.expect("answer data");
    }
    let trailers = answer
        .trailers()
        .await
        .expect("trailers")
        .expect("a status in the trailers");
    (
        status_of(&trailers).unwrap_or_default(),
        message_of(&trailers),
    )
}

/// A gRPC message frame: the compressed flag, the length, the bytes.
fn frame(compressed: bool, bytes: &[u8]) -> Vec<u8> {
    let mut frame = vec![u8::from(compressed)];
    frame.extend_from_slice(&u32::try_from(bytes.len()).expect("small").to_be_bytes());
    frame.extend_from_slice(bytes);
    frame
}

#[tokio::test]
async fn malformed_grpc_requests_are_invalid_argument_and_run_nothing() {
    let agent = CountingAgent::new();
    let server = serve(agent.clone()).await;
    let cases: [(&str, &str, Vec<u8>); 4] = [
        // A length-delimited field 1 (message) whose length runs past the end.
        (
            "not protobuf",
            "SendMessage",
            frame(false, &[0x0a, 0xff, 0x01, 0x02]),
        ),
        // Field 1 (message) sent as a varint: the wrong wire type for a message.
        (
            "a field of the wrong wire type",
            "SendMessage",
            frame(false, &[0x08, 0x01]),
        ),
        (
            "a stream's request not protobuf",
            "SendStreamingMessage",
            frame(false, &[0x0a, 0xff]),
        ),
        // The compressed flag set, with no grpc-encoding to say how.
        (
            "compressed without an encoding",
            "SendMessage",
            frame(true, &[0x0a, 0x00]),
        ),
    ];
    for (what, method, bytes) in cases {
        let (status, message) = raw_call(&server.base, method, bytes, &[]).await;
        assert_eq!(
            status, "3",
            "{what}: INVALID_ARGUMENT, got {status} {message:?}"
        );
    }
    // Answers the server made itself keep their codes: an empty send is refused by the
    // handler, with its details.
    let (status, _) = raw_call(&server.base, "SendMessage", frame(false, &[]), &[]).await;
    assert_eq!(status, "3", "an empty request");
    let (status, _) = raw_call(
        &server.base,
        "GetTask",
        frame(false, &[0x12, 0x01, b'x']),
        &[],
    )
    .await;
    assert_eq!(status, "5", "a task that does not exist is NOT_FOUND");
    assert_eq!(agent.runs(), 0);
}
