//! Test harness: real servers on 127.0.0.1:0, spoken to over the network on each binding:
//! JSON-RPC and HTTP+JSON over HTTP/1.1, gRPC over HTTP/2 to the same port.
#![allow(dead_code)]

pub mod grpc;
pub mod stores;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use a2a_protocol_server::store::{InMemoryTaskStore, TaskStore};
use a2a_protocol_server::{
    A2aServer, AgentExecutor, EventSink, HandlerConfig, RequestContext, RequestHandler,
    ServerConfig,
};
use a2a_protocol_types::A2aError;
use a2a_wire_check::Recorder;
use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// A running server; stops when dropped, and then fails the test if any JSON body it wrote
/// is not strict A2A v1.0.1 (see [`strict`]).
pub struct TestServer {
    pub base: String,
    pub wire: Recorder,
    stop: Option<oneshot::Sender<()>>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if !std::thread::panicking() {
            self.wire.assert_clean();
        }
    }
}

/// `server` with every JSON body it writes (answers, errors, stream events) checked against
/// the A2A v1.0.1 proto's messages into `wire`.
pub fn strict(server: A2aServer, wire: &Recorder) -> A2aServer {
    server.layer(axum::middleware::from_fn_with_state(
        wire.clone(),
        a2a_wire_check::record,
    ))
}

/// [`strict`] for a bare router.
pub fn strict_router(router: axum::Router, wire: &Recorder) -> axum::Router {
    router.layer(axum::middleware::from_fn_with_state(
        wire.clone(),
        a2a_wire_check::record,
    ))
}

pub async fn serve_with(handler: RequestHandler, config: ServerConfig) -> TestServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let (stop, stopped) = oneshot::channel::<()>();
    let wire = Recorder::new();
    let server = strict(A2aServer::new(handler).with_config(config), &wire);
    tokio::spawn(async move {
        let _ = server
            .serve(listener, async {
                let _ = stopped.await;
            })
            .await;
    });
    TestServer {
        base,
        wire,
        stop: Some(stop),
    }
}

pub async fn serve(executor: impl AgentExecutor) -> TestServer {
    serve_handler(RequestHandler::builder(executor).build()).await
}

pub async fn serve_handler(handler: RequestHandler) -> TestServer {
    serve_with(handler, ServerConfig::default()).await
}

pub fn handler_with_store(
    executor: impl AgentExecutor,
    store: Arc<dyn TaskStore>,
) -> RequestHandler {
    RequestHandler::builder(executor)
        .with_store(store)
        .with_config(HandlerConfig::default().with_replay_wait(Duration::from_millis(300)))
        .build()
}

pub fn memory_store() -> Arc<dyn TaskStore> {
    Arc::new(InMemoryTaskStore::new())
}

/// An agent that counts its turns, can be held mid-turn, and then completes (or asks for input
/// when the message text is "ask").
#[derive(Clone, Default)]
pub struct CountingAgent {
    pub runs: Arc<AtomicUsize>,
    pub delay: Duration,
}

impl CountingAgent {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn slow(delay: Duration) -> Self {
        Self {
            delay,
            ..Self::default()
        }
    }

    pub fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl AgentExecutor for CountingAgent {
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        events.working().await?;
        if !self.delay.is_zero() {
            tokio::select! {
                () = tokio::time::sleep(self.delay) => {}
                () = ctx.cancellation.cancelled() => return Ok(()),
            }
        }
        let text = ctx.message.text();
        if text == "ask" {
            return events.require_input("what else?").await;
        }
        events
            .complete(Some(events.agent_message(format!("done: {text}"))))
            .await
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    JsonRpc,
    Rest,
    Grpc,
}

/// Every binding: what an operation does must not depend on how it was asked.
pub const BINDINGS: [Binding; 3] = [Binding::JsonRpc, Binding::Rest, Binding::Grpc];

/// The two over HTTP/1.1, for what only they can say: raw bodies, query strings, HTTP status.
pub const HTTP_BINDINGS: [Binding; 2] = [Binding::JsonRpc, Binding::Rest];

/// An A2A error as any binding reports it: HTTP status (0 on gRPC), JSON-RPC code (JSON-RPC
/// only), gRPC status code (gRPC only), `ErrorInfo.reason`, message, and the whole body (the
/// details, on gRPC).
#[derive(Debug, Clone)]
pub struct WireError {
    pub status: u16,
    pub code: Option<i64>,
    pub grpc: Option<tonic::Code>,
    pub reason: String,
    pub message: String,
    pub retry_after: Option<String>,
    pub body: Value,
}

/// Asserts the status an error came with: `http` on the HTTP bindings, `grpc` on gRPC.
pub fn assert_status(error: &WireError, binding: Binding, http: u16, grpc: tonic::Code) {
    match binding {
        Binding::Grpc => assert_eq!(error.grpc, Some(grpc), "{binding:?}: {error:?}"),
        Binding::JsonRpc | Binding::Rest => {
            assert_eq!(error.status, http, "{binding:?}: {}", error.body);
        }
    }
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

fn wire_error(status: u16, retry_after: Option<String>, body: Value) -> WireError {
    let (code, error) = if body.get("jsonrpc").is_some() {
        (body["error"]["code"].as_i64(), body["error"].clone())
    } else {
        (None, body["error"].clone())
    };
    let details = if code.is_some() {
        &error["data"]
    } else {
        &error["details"]
    };
    let reason = details
        .as_array()
        .and_then(|d| {
            d.iter()
                .find(|x| x["@type"] == "type.googleapis.com/google.rpc.ErrorInfo")
        })
        .and_then(|x| x["reason"].as_str())
        .unwrap_or("")
        .to_owned();
    WireError {
        status,
        code,
        grpc: None,
        reason,
        message: error["message"].as_str().unwrap_or("").to_owned(),
        retry_after,
        body,
    }
}

/// Which REST path and JSON-RPC method an operation uses.
pub struct Call<'a> {
    pub method: &'a str,
    pub params: Value,
}

fn rest_request(client: &reqwest::Client, base: &str, call: &Call<'_>) -> reqwest::RequestBuilder {
    let p = &call.params;
    let tenant = p["tenant"]
        .as_str()
        .filter(|t| !t.is_empty())
        .map(|t| format!("/{t}"))
        .unwrap_or_default();
    let id = p["id"].as_str().unwrap_or("");
    let mut query: Vec<(String, String)> = Vec::new();
    let add_query = |query: &mut Vec<(String, String)>, keys: &[&str]| {
        for key in keys {
            match &p[*key] {
                Value::Null => {}
                Value::String(s) => query.push(((*key).into(), s.clone())),
                other => query.push(((*key).into(), other.to_string())),
            }
        }
    };
    let builder = match call.method {
        "SendMessage" => client.post(format!("{base}{tenant}/message:send")).json(p),
        "SendStreamingMessage" => client
            .post(format!("{base}{tenant}/message:stream"))
            .json(p),
        "GetTask" => {
            add_query(&mut query, &["historyLength"]);
            client.get(format!("{base}{tenant}/tasks/{id}"))
        }
        "ListTasks" => {
            add_query(
                &mut query,
                &[
                    "contextId",
                    "status",
                    "pageSize",
                    "pageToken",
                    "historyLength",
                    "includeArtifacts",
                    "statusTimestampAfter",
                ],
            );
            client.get(format!("{base}{tenant}/tasks"))
        }
        "CancelTask" => client
            .post(format!("{base}{tenant}/tasks/{id}:cancel"))
            .json(&json!({})),
        "SubscribeToTask" => client.get(format!("{base}{tenant}/tasks/{id}:subscribe")),
        "GetExtendedAgentCard" => client.get(format!("{base}{tenant}/extendedAgentCard")),
        "CreateTaskPushNotificationConfig" => client
            .post(format!(
                "{base}{tenant}/tasks/{}/pushNotificationConfigs",
                p["taskId"].as_str().unwrap_or("")
            ))
            .json(p),
        "GetTaskPushNotificationConfig" => client.get(format!(
            "{base}{tenant}/tasks/{}/pushNotificationConfigs/{id}",
            p["taskId"].as_str().unwrap_or("")
        )),
        "ListTaskPushNotificationConfigs" => {
            add_query(&mut query, &["pageSize", "pageToken"]);
            client.get(format!(
                "{base}{tenant}/tasks/{}/pushNotificationConfigs",
                p["taskId"].as_str().unwrap_or("")
            ))
        }
        "DeleteTaskPushNotificationConfig" => client.delete(format!(
            "{base}{tenant}/tasks/{}/pushNotificationConfigs/{id}",
            p["taskId"].as_str().unwrap_or("")
        )),
        other => panic!("no REST mapping for {other} in the harness"),
    };
    builder.query(&query)
}

/// Calls a unary operation; `Ok(result)` or the error as sent.
pub async fn call(
    binding: Binding,
    base: &str,
    method: &str,
    params: Value,
) -> Result<Value, WireError> {
    call_with(binding, base, method, params, &[]).await
}

pub async fn call_with(
    binding: Binding,
    base: &str,
    method: &str,
    params: Value,
    headers: &[(&str, &str)],
) -> Result<Value, WireError> {
    if binding == Binding::Grpc {
        return grpc::call(base, method, params, headers).await;
    }
    call_shaped(binding, base, method, params, |mut request| {
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request
    })
    .await
}

/// Calls a unary operation with the request shaped by `shape` (headers, query parameters)
/// before it is sent.
pub async fn call_shaped(
    binding: Binding,
    base: &str,
    method: &str,
    params: Value,
    shape: impl FnOnce(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
) -> Result<Value, WireError> {
    let client = client();
    let request = match binding {
        Binding::JsonRpc => client
            .post(format!("{base}/"))
            .json(&json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})),
        Binding::Rest => rest_request(&client, base, &Call { method, params }),
        Binding::Grpc => panic!("a request shaped by HTTP is for the HTTP bindings"),
    };
    let request = shape(request.header("A2A-Version", "1.0"));
    let response = request.send().await.expect("request sent");
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let text = response.text().await.expect("body");
    let body: Value =
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("JSON body, got {status}: {text}"));
    match binding {
        Binding::Grpc => unreachable!("answered above"),
        Binding::JsonRpc => {
            if body.get("error").is_some() {
                Err(wire_error(status, retry_after, body))
            } else {
                assert_eq!(status, 200, "{body}");
                assert_eq!(body["id"], 7);
                Ok(body["result"].clone())
            }
        }
        Binding::Rest => {
            if (200..300).contains(&status) {
                Ok(body)
            } else {
                Err(wire_error(status, retry_after, body))
            }
        }
    }
}

/// Sends a streaming operation's request; the response, whatever it is.
async fn send_streaming(
    binding: Binding,
    base: &str,
    method: &str,
    params: Value,
) -> reqwest::Response {
    send_streaming_shaped(binding, base, method, params, |r| r).await
}

/// [`send_streaming`], with the request shaped by `shape` before it is sent.
pub async fn send_streaming_shaped(
    binding: Binding,
    base: &str,
    method: &str,
    params: Value,
    shape: impl FnOnce(reqwest::RequestBuilder) -> reqwest::RequestBuilder,
) -> reqwest::Response {
    let client = client();
    let request = match binding {
        Binding::JsonRpc => client
            .post(format!("{base}/"))
            .json(&json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params})),
        Binding::Rest => rest_request(&client, base, &Call { method, params }),
        Binding::Grpc => panic!("a request shaped by HTTP is for the HTTP bindings"),
    };
    shape(request.header("A2A-Version", "1.0"))
        .send()
        .await
        .expect("request sent")
}

/// Calls a streaming operation and collects every event (the stream must end by itself).
pub async fn stream(
    binding: Binding,
    base: &str,
    method: &str,
    params: Value,
) -> Result<Vec<Value>, WireError> {
    if binding == Binding::Grpc {
        let mut events = grpc::open(base, method, params).await?;
        let mut all = Vec::new();
        while let Some(event) = events.next().await {
            all.push(event?);
        }
        return Ok(all);
    }
    let response = send_streaming(binding, base, method, params).await;
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let is_sse = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let text = response.text().await.expect("body");
    if !is_sse {
        let body: Value = serde_json::from_str(&text)
            .unwrap_or_else(|_| panic!("JSON body, got {status}: {text}"));
        return Err(wire_error(status, retry_after, body));
    }
    let mut events = Vec::new();
    for block in text.split("\n\n") {
        let data: Vec<&str> = block
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim_start)
            .collect();
        if data.is_empty() {
            continue;
        }
        let value: Value = serde_json::from_str(&data.join("\n")).expect("event JSON");
        let event = match binding {
            Binding::JsonRpc => {
                assert_eq!(value["id"], 9, "{value}");
                value["result"].clone()
            }
            Binding::Rest | Binding::Grpc => value,
        };
        events.push(event);
    }
    Ok(events)
}

/// A SendMessageRequest body for a user text message.
pub fn send_params(message_id: &str, text: &str) -> Value {
    json!({"message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}})
}

/// The same with an idempotency key.
pub fn keyed_params(message_id: &str, text: &str, key: &str) -> Value {
    json!({"message": {
        "messageId": message_id,
        "role": "ROLE_USER",
        "parts": [{"text": text}],
        "extensions": ["https://a2a-rust.com/extensions/idempotency/v1"],
        "metadata": {"a2a-rust.com/idempotency-key": key}
    }})
}

pub fn task_of(result: &Value) -> &Value {
    &result["task"]
}

/// The task id a stream's events are about.
pub fn stream_task_id(events: &[Value]) -> String {
    events
        .iter()
        .find_map(|e| {
            e["task"]["id"]
                .as_str()
                .or(e["statusUpdate"]["taskId"].as_str())
        })
        .expect("a task id in the stream")
        .to_owned()
}

pub fn last_state(events: &[Value]) -> String {
    events
        .iter()
        .rev()
        .find_map(|e| {
            e["statusUpdate"]["status"]["state"]
                .as_str()
                .or(e["task"]["status"]["state"].as_str())
        })
        .unwrap_or("")
        .to_owned()
}

pub fn key() -> String {
    a2a_protocol_types::idempotency::generate_key()
}

/// A stream read one event at a time, so a test can act between events.
pub enum EventReader {
    Sse {
        response: reqwest::Response,
        buffer: String,
        binding: Binding,
    },
    Grpc(grpc::Events),
}

impl EventReader {
    /// The next event, or `None` once the server ended the stream.
    pub async fn next(&mut self) -> Option<Value> {
        let (response, buffer, binding) = match self {
            EventReader::Grpc(events) => {
                return events
                    .next()
                    .await
                    .map(|event| event.unwrap_or_else(|e| panic!("the stream failed: {e:?}")));
            }
            EventReader::Sse {
                response,
                buffer,
                binding,
            } => (response, buffer, *binding),
        };
        loop {
            if let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                let data: Vec<&str> = block
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                if data.is_empty() {
                    continue;
                }
                let value: Value = serde_json::from_str(&data.join("\n")).expect("event JSON");
                return Some(match binding {
                    Binding::JsonRpc => value["result"].clone(),
                    Binding::Rest | Binding::Grpc => value,
                });
            }
            let chunk = response.chunk().await.expect("stream readable")?;
            buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}

/// Opens a streaming operation; fails the test unless the server answers with a stream.
pub async fn open_stream(binding: Binding, base: &str, method: &str, params: Value) -> EventReader {
    if binding == Binding::Grpc {
        return match grpc::open(base, method, params).await {
            Ok(events) => EventReader::Grpc(events),
            Err(error) => panic!("a stream, got {error:?}"),
        };
    }
    let response = send_streaming(binding, base, method, params).await;
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    assert!(
        content_type.starts_with("text/event-stream"),
        "a stream, got {} {content_type}",
        response.status()
    );
    EventReader::Sse {
        response,
        buffer: String::new(),
        binding,
    }
}
