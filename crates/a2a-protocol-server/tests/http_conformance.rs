//! Details of the wire that conformant peers rely on: subscriptions through interrupted
//! states, proto field names, objects where the spec requires them, connection reuse, `Allow`,
//! reserved tenant names and response media types. Each over real HTTP.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn state_of(event: &Value) -> Option<&str> {
    event["statusUpdate"]["status"]["state"]
        .as_str()
        .or(event["task"]["status"]["state"].as_str())
}

#[tokio::test]
async fn a_subscription_stays_open_through_input_required_until_the_task_is_terminal() {
    let agent = CountingAgent::new();
    let server = serve(agent.clone()).await;
    for binding in BINDINGS {
        let asked = call(
            binding,
            &server.base,
            "SendMessage",
            send_params(&key(), "ask"),
        )
        .await
        .expect("sent");
        let task = task_of(&asked);
        assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
        let id = task["id"].as_str().expect("id").to_owned();
        let mut events =
            open_stream(binding, &server.base, "SubscribeToTask", json!({"id": id})).await;
        let first = events.next().await.expect("the task as it stands");
        assert_eq!(state_of(&first), Some("TASK_STATE_INPUT_REQUIRED"));
        // The follow-up starts a new turn, which completes the task.
        let follow_up = json!({"message": {
            "messageId": key(), "role": "ROLE_USER", "parts": [{"text": "thanks"}], "taskId": id
        }});
        call(binding, &server.base, "SendMessage", follow_up)
            .await
            .expect("follow-up accepted");
        let mut states = Vec::new();
        while let Some(event) = tokio::time::timeout(Duration::from_secs(20), events.next())
            .await
            .expect("the subscription ends once the task is terminal")
        {
            states.extend(state_of(&event).map(str::to_owned));
        }
        assert_eq!(
            states.last().map(String::as_str),
            Some("TASK_STATE_COMPLETED"),
            "{binding:?}: {states:?}"
        );
    }
}

#[tokio::test]
async fn proto_field_names_in_json_are_read_like_json_names() {
    let server = serve(CountingAgent::slow(Duration::from_millis(300))).await;
    // JSON-RPC, every multi-word field in its proto spelling.
    let answer = call(
        Binding::JsonRpc,
        &server.base,
        "SendMessage",
        json!({
            "message": {
                "message_id": "m-proto-1", "role": "ROLE_USER", "parts": [{"text": "hi"}],
                "context_id": "ctx-proto"
            },
            "configuration": {"return_immediately": true, "history_length": 0}
        }),
    )
    .await
    .expect("message_id is a message id");
    let task = task_of(&answer);
    assert_eq!(task["contextId"], "ctx-proto", "context_id was read");
    assert_ne!(
        task["status"]["state"], "TASK_STATE_COMPLETED",
        "return_immediately was read"
    );
    assert!(
        task.get("history").is_none(),
        "history_length 0 was read: {task}"
    );
    let id = task["id"].as_str().expect("id").to_owned();
    let got = call(
        Binding::JsonRpc,
        &server.base,
        "GetTask",
        json!({"id": id, "history_length": 0}),
    )
    .await
    .expect("read");
    assert!(got.get("history").is_none(), "{got}");
    // HTTP+JSON query parameters in their proto spelling.
    let response = client()
        .get(format!("{}/tasks/{id}?history_length=0", server.base))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 200);
    let got: Value = response.json().await.expect("json");
    assert!(got.get("history").is_none(), "{got}");
    let response = client()
        .get(format!(
            "{}/tasks?context_id=ctx-proto&page_size=1",
            server.base
        ))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .expect("sent");
    let page: Value = response.json().await.expect("json");
    assert_eq!(page["tasks"][0]["id"], id.as_str(), "{page}");
    assert_eq!(page["pageSize"], 1);
}

#[tokio::test]
async fn arrays_where_objects_are_required_are_refused_and_run_nothing() {
    let agent = CountingAgent::new();
    let server = serve(agent.clone()).await;
    let message = json!({"messageId": "m-arr", "role": "ROLE_USER", "parts": [{"text": "hi"}]});
    let request =
        json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}});
    let cases = [
        // The request as an array of its members, in order (to JSON-RPC, any array is a batch).
        (
            json!(["2.0", 1, "SendMessage", {"message": message}]),
            -32600,
            "batches are not supported",
        ),
        // A batch.
        (json!([request]), -32600, "batches are not supported"),
        // Positional params.
        (
            json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": ["", message]}),
            -32602,
            "positional",
        ),
        // Positional params before the method.
        (
            json!({"params": ["", message], "jsonrpc": "2.0", "id": 1, "method": "SendMessage"}),
            -32602,
            "positional",
        ),
    ];
    for (body, code, says) in cases {
        let response = client()
            .post(format!("{}/", server.base))
            .header("A2A-Version", "1.0")
            .json(&body)
            .send()
            .await
            .expect("sent");
        let answer: Value = response.json().await.expect("json");
        assert_eq!(answer["error"]["code"], code, "{body}: {answer}");
        let text = answer["error"]["message"].as_str().unwrap_or("");
        assert!(text.contains(says), "{body}: {answer}");
    }
    for path in ["/message:send", "/message:stream"] {
        let response = client()
            .post(format!("{}{path}", server.base))
            .header("A2A-Version", "1.0")
            .json(&json!(["", message]))
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), 400, "{path}");
    }
    assert_eq!(agent.runs(), 0, "nothing ran");
}

/// One request on a fresh connection, read up to the end of the answer's head and, when it has
/// a `Content-Length`, its body. Returns the head in lower case and whether the server then
/// closed the connection.
async fn exchange(addr: &str, request: &str) -> (String, tokio::net::TcpStream) {
    let mut socket = tokio::net::TcpStream::connect(addr).await.expect("connect");
    socket.write_all(request.as_bytes()).await.expect("write");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = socket.read(&mut byte).await.expect("read");
        assert_eq!(
            n,
            1,
            "the server answered: {}",
            String::from_utf8_lossy(&head)
        );
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().expect("a length"));
    let mut body = vec![0u8; length];
    socket.read_exact(&mut body).await.expect("body");
    (head, socket)
}

#[tokio::test]
async fn a_request_refused_before_its_body_is_read_says_connection_close() {
    let server = serve(CountingAgent::new()).await;
    let addr = server.base.trim_start_matches("http://").to_owned();
    let body = r#"{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#;
    let refused_from_headers = [
        ("POST /message:send", "text/plain", "1.0"),
        ("POST /message:send", "application/json", "9.9"),
        ("POST /", "text/plain", "1.0"),
        // JSON-RPC too checks the version before it reads a body.
        ("POST /", "application/json", "9.9"),
        ("POST /no/such/path", "application/json", "1.0"),
        ("PUT /message:send", "application/json", "1.0"),
    ];
    for (line, content_type, version) in refused_from_headers {
        let request = format!(
            "{line} HTTP/1.1\r\nHost: x\r\nA2A-Version: {version}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let (head, _) = exchange(&addr, &request).await;
        assert!(
            head.contains("\r\nconnection: close\r\n"),
            "{line} ({content_type}, {version}): {head}"
        );
    }
    // A request whose body was read keeps its connection, and the next request on it works.
    let request = format!(
        "POST /message:send HTTP/1.1\r\nHost: x\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let (head, mut socket) = exchange(&addr, &request).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(!head.contains("connection: close"), "{head}");
    socket
        .write_all(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("write");
    let mut again = [0u8; 12];
    socket
        .read_exact(&mut again)
        .await
        .expect("a second answer");
    assert_eq!(&again, b"HTTP/1.1 200");
}

#[tokio::test]
async fn a_wrong_method_on_an_http_json_path_lists_the_allowed_ones() {
    let server = serve(CountingAgent::new()).await;
    for (method, path, allow) in [
        (http::Method::GET, "/message:send", "POST"),
        (http::Method::DELETE, "/tasks", "GET"),
        (http::Method::DELETE, "/tasks/t-1", "GET"),
        (http::Method::GET, "/tasks/t-1:cancel", "POST"),
        (http::Method::DELETE, "/tasks/t-1:subscribe", "GET, POST"),
        (http::Method::PUT, "/acme/tasks", "GET"),
        (
            http::Method::PUT,
            "/tasks/t-1/pushNotificationConfigs/c-1",
            "GET, DELETE",
        ),
    ] {
        let response = client()
            .request(method.clone(), format!("{}{path}", server.base))
            .header("A2A-Version", "1.0")
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), 405, "{method} {path}");
        assert_eq!(
            response
                .headers()
                .get("allow")
                .and_then(|v| v.to_str().ok()),
            Some(allow),
            "{method} {path}"
        );
    }
}

#[tokio::test]
async fn the_tenant_name_tasks_is_reserved_on_every_binding() {
    let agent = CountingAgent::new();
    let server = serve(agent.clone()).await;
    // As a path tenant, where `/tasks/...` would otherwise mean two things.
    for (method, path) in [
        (http::Method::POST, "/tasks/message:send"),
        (http::Method::GET, "/tasks/tasks/t-1"),
    ] {
        let response = client()
            .request(method.clone(), format!("{}{path}", server.base))
            .header("A2A-Version", "1.0")
            .json(&send_params("m-t", "hi"))
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), 400, "{method} {path}");
        let body: Value = response.json().await.expect("json");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains("reserved"),
            "{method} {path}: {body}"
        );
    }
    // `GET /tasks/tasks` reads the task named `tasks`; there is none.
    let response = client()
        .get(format!("{}/tasks/tasks", server.base))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 404);
    // In a body, on JSON-RPC.
    let mut params = send_params("m-t2", "hi");
    params["tenant"] = json!("tasks");
    let error = call(Binding::JsonRpc, &server.base, "SendMessage", params)
        .await
        .expect_err("reserved");
    assert_eq!(error.code, Some(-32602));
    assert!(error.message.contains("reserved"), "{}", error.message);
    let error = call(
        Binding::JsonRpc,
        &server.base,
        "ListTasks",
        json!({"tenant": "tasks"}),
    )
    .await
    .expect_err("reserved");
    assert_eq!(error.code, Some(-32602));
    assert_eq!(agent.runs(), 0);
}

#[tokio::test]
async fn http_json_answers_in_the_media_type_the_client_uses() {
    let server = serve(CountingAgent::new()).await;
    let send = |content_type: &'static str, accept: Option<&'static str>| {
        let mut request = client()
            .post(format!("{}/message:send", server.base))
            .header("A2A-Version", "1.0")
            .header("content-type", content_type)
            .body(send_params(&key(), "hi").to_string());
        if let Some(accept) = accept {
            request = request.header("accept", accept);
        }
        request.send()
    };
    for (content_type, accept, expected) in [
        (
            "application/json",
            Some("application/json"),
            "application/json",
        ),
        ("application/json", None, "application/json"),
        ("application/json", Some("*/*"), "application/json"),
        ("application/a2a+json", None, "application/a2a+json"),
        (
            "application/json",
            Some("application/a2a+json, application/json;q=0.5"),
            "application/a2a+json",
        ),
        (
            "application/a2a+json",
            Some("application/json"),
            "application/json",
        ),
    ] {
        let response = send(content_type, accept).await.expect("sent");
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers()["content-type"],
            expected,
            "sent {content_type}, accepts {accept:?}"
        );
    }
    // Errors too.
    let response = client()
        .get(format!("{}/tasks/no-such-task", server.base))
        .header("A2A-Version", "1.0")
        .header("accept", "application/json")
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 404);
    assert_eq!(response.headers()["content-type"], "application/json");
    // Without a body or a preference, the A2A media type.
    let response = client()
        .get(format!("{}/tasks", server.base))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .expect("sent");
    assert_eq!(response.headers()["content-type"], "application/a2a+json");
}
