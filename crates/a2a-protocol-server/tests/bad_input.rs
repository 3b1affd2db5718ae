//! Bad input never panics and always gets the spec's error, on both bindings.

mod common;

use a2a_protocol_server::{A2aServer, RequestHandler, ServerConfig};
use axum::body::Body;
use common::*;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use proptest::prelude::*;
use serde_json::{Value, json};
use tower::ServiceExt;

async fn raw(
    base: &str,
    path: &str,
    content_type: &str,
    body: impl Into<reqwest::Body>,
) -> (u16, Value) {
    let response = client()
        .post(format!("{base}{path}"))
        .header("A2A-Version", "1.0")
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .expect("sent");
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    (
        status,
        serde_json::from_str(&text)
            .unwrap_or_else(|_| panic!("JSON error body, got {status}: {text}")),
    )
}

#[tokio::test]
async fn malformed_json_is_a_parse_error() {
    let server = serve(CountingAgent::new()).await;
    let (status, body) = raw(
        &server.base,
        "/",
        "application/json",
        "{\"jsonrpc\": \"2.0\", ",
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["error"]["code"], -32700);
    assert_eq!(body["id"], Value::Null);
    let (status, body) = raw(
        &server.base,
        "/message:send",
        "application/json",
        "{not json",
    )
    .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["details"][0]["reason"], "PARSE_ERROR");
}

#[tokio::test]
async fn requests_that_are_not_json_rpc_are_invalid_requests() {
    let server = serve(CountingAgent::new()).await;
    for (body, id) in [
        (
            json!([{"jsonrpc": "2.0", "id": 1, "method": "GetTask"}]),
            Value::Null,
        ),
        (
            json!({"jsonrpc": "1.0", "id": 4, "method": "GetTask"}),
            json!(4),
        ),
        (json!({"id": 5, "method": "GetTask"}), json!(5)),
        (json!({"jsonrpc": "2.0", "method": "GetTask"}), Value::Null),
        (json!({"jsonrpc": "2.0", "id": 6, "method": 12}), json!(6)),
        (json!("hello"), Value::Null),
    ] {
        let (status, response) = raw(&server.base, "/", "application/json", body.to_string()).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(response["error"]["code"], -32600, "{body}: {response}");
        assert_eq!(response["id"], id, "{body}");
    }
}

#[tokio::test]
async fn wrong_parameter_types_are_invalid_params() {
    let server = serve(CountingAgent::new()).await;
    for params in [
        json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": "not a list"}}),
        json!({"message": {"messageId": "m", "role": "ROLE_ROBOT", "parts": [{"text": "x"}]}}),
        json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}}),
        json!({"message": {"role": "ROLE_USER", "parts": [{"text": "x"}]}}),
        json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x", "url": "y"}]}}),
        json!({"nothing": true}),
        json!(42),
    ] {
        // Wrong types cannot be said in proto; gRPC's own invalid messages are in grpc.rs.
        for binding in HTTP_BINDINGS {
            if binding == Binding::Rest && !params.is_object() {
                continue;
            }
            let error = call(binding, &server.base, "SendMessage", params.clone())
                .await
                .expect_err("invalid");
            assert_eq!(
                error.reason, "INVALID_PARAMS",
                "{binding:?} {params}: {}",
                error.body
            );
            match binding {
                Binding::JsonRpc => assert_eq!(error.code, Some(-32602)),
                Binding::Rest => assert_eq!(error.status, 400),
                Binding::Grpc => assert_eq!(error.grpc, Some(tonic::Code::InvalidArgument)),
            }
        }
    }
    let error = call(Binding::JsonRpc, &server.base, "GetTask", json!({"id": 12}))
        .await
        .expect_err("invalid");
    assert_eq!(error.code, Some(-32602));
    let response = client()
        .get(format!("{}/tasks/x?historyLength=lots", server.base))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 400);
    let response = client()
        .get(format!("{}/tasks?status=TASK_STATE_RUNNING", server.base))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.expect("json");
    assert!(
        body["error"]["message"]
            .as_str()
            .expect("message")
            .contains("TASK_STATE_WORKING")
    );
}

#[tokio::test]
async fn unknown_methods_and_paths_are_not_found() {
    let server = serve(CountingAgent::new()).await;
    let error = call(Binding::JsonRpc, &server.base, "tasks/get", json!({}))
        .await
        .expect_err("unknown");
    assert_eq!(error.code, Some(-32601));
    let response = client()
        .get(format!("{}/no/such/path/here", server.base))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 404);
    let body: Value = response.json().await.expect("json");
    assert_eq!(body["error"]["code"], 404);
    let response = client()
        .delete(format!("{}/message:send", server.base))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 405);
}

/// Found by the `rest_request` fuzz target: a GET of the JSON-RPC endpoint (or a POST of the
/// card) was answered 405 with an empty body instead of the binding's JSON error.
#[tokio::test]
async fn a_wrong_method_on_the_json_rpc_endpoint_or_the_card_is_a_json_405() {
    let server = serve(CountingAgent::new()).await;
    for (method, path) in [
        (http::Method::GET, "/"),
        (http::Method::DELETE, "/"),
        (http::Method::POST, "/.well-known/agent-card.json"),
    ] {
        let response = client()
            .request(method.clone(), format!("{}{path}", server.base))
            .header("A2A-Version", "1.0")
            .send()
            .await
            .expect("sent");
        assert_eq!(response.status(), 405, "{method} {path}");
        assert!(response.headers().contains_key("allow"), "{method} {path}");
        let body: Value = response
            .json()
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: a JSON error body, got {e}"));
        assert_eq!(body["error"]["code"], 405, "{method} {path}: {body}");
    }
}

#[tokio::test]
async fn an_oversized_body_is_refused_with_413() {
    let handler = RequestHandler::builder(CountingAgent::new()).build();
    let server = serve_with(handler, ServerConfig::default().with_max_body_bytes(1024)).await;
    let big = json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x".repeat(4096)}]}});
    let (status, body) = raw(
        &server.base,
        "/message:send",
        "application/json",
        big.to_string(),
    )
    .await;
    assert_eq!(status, 413);
    assert_eq!(body["error"]["details"][0]["reason"], "INVALID_REQUEST");
    let rpc = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": big});
    let (status, body) = raw(&server.base, "/", "application/json", rpc.to_string()).await;
    assert_eq!(status, 413);
    assert_eq!(body["error"]["code"], -32600);
}

#[tokio::test]
async fn a_body_that_is_not_json_is_refused_by_content_type() {
    let server = serve(CountingAgent::new()).await;
    let (status, body) = raw(&server.base, "/message:send", "text/plain", "hello").await;
    assert_eq!(status, 400);
    assert_eq!(
        body["error"]["details"][0]["reason"],
        "CONTENT_TYPE_NOT_SUPPORTED"
    );
    let (_, body) = raw(&server.base, "/", "text/plain", "hello").await;
    assert_eq!(body["error"]["code"], -32005);
}

#[tokio::test]
async fn parts_of_a_media_type_the_agent_does_not_accept_are_refused() {
    let server = serve(CountingAgent::new()).await;
    let mut params = send_params("m-1", "hi");
    params["message"]["parts"] = json!([{"raw": "aGk=", "mediaType": "application/x-unsupported"}]);
    for binding in BINDINGS {
        let error = call(binding, &server.base, "SendMessage", params.clone())
            .await
            .expect_err("refused");
        assert_eq!(error.reason, "CONTENT_TYPE_NOT_SUPPORTED");
        if binding == Binding::JsonRpc {
            assert_eq!(error.code, Some(-32005));
        }
    }
    params["message"]["parts"] = json!([{"text": "hi", "mediaType": "text/plain"}]);
    call(Binding::Rest, &server.base, "SendMessage", params)
        .await
        .expect("accepted");
}

fn router() -> axum::Router {
    A2aServer::new(RequestHandler::builder(CountingAgent::new()).build()).router()
}

/// Sends one request to the router in process and checks the answer is a well-formed error or
/// result: never a 5xx, always the binding's body shape.
async fn probe(
    router: axum::Router,
    method: &str,
    path: &str,
    body: Vec<u8>,
) -> Result<(), TestCaseError> {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("A2A-Version", "1.0")
        .header("content-type", "application/json")
        .body(Body::from(body))
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let wire = a2a_wire_check::Recorder::new();
    let response = strict_router(router, &wire)
        .oneshot(request)
        .await
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let status = response.status();
    let is_stream = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    prop_assert!(!status.is_server_error(), "{method} {path}: {status}");
    if is_stream || status == StatusCode::NO_CONTENT || status == StatusCode::NOT_MODIFIED {
        return Ok(());
    }
    let bytes = response
        .into_body()
        .collect()
        .await
        .map_err(|e| TestCaseError::fail(e.to_string()))?
        .to_bytes();
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| TestCaseError::fail(format!("{e}: {bytes:?}")))?;
    if path == "/" && method == "POST" {
        prop_assert_eq!(&value["jsonrpc"], "2.0");
        prop_assert!(
            value.get("result").is_some() != value.get("error").is_some(),
            "{}",
            value
        );
    } else if !status.is_success() {
        prop_assert_eq!(
            value["error"]["code"].as_u64(),
            Some(u64::from(status.as_u16())),
            "{}",
            value
        );
        prop_assert!(value["error"]["details"].is_array(), "{}", value);
    }
    prop_assert!(wire.violations().is_empty(), "{:#?}", wire.violations());
    Ok(())
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::String),
        prop_oneof![
            Just("ROLE_USER"),
            Just("TASK_STATE_WORKING"),
            Just("message"),
            Just("parts"),
            Just("text"),
            Just("a2a-rust.com/idempotency-key"),
            Just("8f14e45fceea167a5a36dedd4bea2543"),
        ]
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        let key = prop_oneof![
            Just("message".to_owned()),
            Just("messageId".to_owned()),
            Just("role".to_owned()),
            Just("parts".to_owned()),
            Just("text".to_owned()),
            Just("id".to_owned()),
            Just("metadata".to_owned()),
            Just("configuration".to_owned()),
            Just("taskId".to_owned()),
            Just("historyLength".to_owned()),
            Just("pageSize".to_owned()),
            Just("raw".to_owned()),
            "[a-zA-Z]{1,8}",
        ];
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map(key, inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn method_name() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(a2a_protocol_types::jsonrpc::methods::ALL.to_vec())
            .prop_map(str::to_owned),
        "\\PC{0,16}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn json_rpc_decoding_never_fails_badly(method in method_name(), params in json_value(), id in json_value()) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        // Streams of a fresh task end on their own; unary sends complete at once.
        runtime.block_on(probe(router(), "POST", "/", body.to_string().into_bytes()))?;
    }

    #[test]
    fn arbitrary_bytes_never_fail_badly(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(probe(router(), "POST", "/", bytes.clone()))?;
        runtime.block_on(probe(router(), "POST", "/message:send", bytes))?;
    }

    #[test]
    fn rest_decoding_never_fails_badly(
        body in json_value(),
        path in prop_oneof![
            Just("/message:send".to_owned()), Just("/tasks/x:cancel".to_owned()), Just("/t/message:send".to_owned()),
            "/[a-z:%]{0,12}/[a-zA-Z0-9:%._-]{0,16}",
        ],
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(probe(router(), "POST", &path, body.to_string().into_bytes()))?;
    }

    #[test]
    fn rest_queries_never_fail_badly(query in "[a-zA-Z=&%0-9_:.-]{0,40}") {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(probe(router(), "GET", &format!("/tasks?{query}"), Vec::new()))?;
        runtime.block_on(probe(router(), "GET", &format!("/tasks/abc?{query}"), Vec::new()))?;
    }
}
