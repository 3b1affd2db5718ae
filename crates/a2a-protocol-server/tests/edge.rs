//! What reaches the server from outside is checked at the edge: requests a browser could forge,
//! repeated JSON members, identifiers no store can keep, a card that echoes the Host header.
//! Every case holds on every store and both bindings.

mod common;

use std::sync::Arc;

use a2a_protocol_server::{A2aServer, MAX_IDENTIFIER_BYTES, RequestHandler, ServerConfig};
use axum::body::Body;
use base64::Engine as _;
use common::stores::all_stores;
use common::*;
use http::Request;
use http_body_util::BodyExt;
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use proptest::prelude::*;
use serde_json::{Value, json};
use tower::ServiceExt;

/// A POST with the given `Content-Type` (none when `None`); status and JSON body.
async fn post(
    base: &str,
    path_and_query: &str,
    content_type: Option<&str>,
    body: &str,
) -> (u16, Value) {
    let mut request = client()
        .post(format!("{base}{path_and_query}"))
        .body(body.to_owned());
    if let Some(content_type) = content_type {
        request = request.header("content-type", content_type);
    }
    if !path_and_query.contains("A2A-Version") {
        request = request.header("A2A-Version", "1.0");
    }
    let response = request.send().await.expect("sent");
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    let body = serde_json::from_str(&text).unwrap_or_else(|_| panic!("JSON, got {status}: {text}"));
    (status, body)
}

fn send_body(text: &str) -> String {
    send_params(&uuid::Uuid::new_v4().to_string(), text).to_string()
}

fn rpc_send_body(text: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": send_params(&uuid::Uuid::new_v4().to_string(), text)})
        .to_string()
}

#[tokio::test]
async fn a_post_a_browser_could_send_without_asking_is_refused() {
    let agent = CountingAgent::new();
    let server = serve(agent.clone()).await;
    // A page may POST without a preflight when the type is missing or a form type, and may put
    // the version in the query: none of it may start work.
    for content_type in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
    ] {
        let (status, body) = post(
            &server.base,
            "/?A2A-Version=1.0",
            content_type,
            &rpc_send_body("forged"),
        )
        .await;
        assert_eq!(status, 200, "{content_type:?}");
        assert_eq!(body["error"]["code"], -32005, "{content_type:?}: {body}");
        let (status, body) = post(
            &server.base,
            "/message:send?A2A-Version=1.0",
            content_type,
            &send_body("forged"),
        )
        .await;
        assert_eq!(status, 400, "{content_type:?}: {body}");
        assert_eq!(
            body["error"]["details"][0]["reason"], "CONTENT_TYPE_NOT_SUPPORTED",
            "{content_type:?}: {body}"
        );
        let (status, _) = post(
            &server.base,
            "/tasks/some-task:cancel?A2A-Version=1.0",
            content_type,
            "",
        )
        .await;
        assert_eq!(status, 400, "{content_type:?}: a cancel is a change too");
    }
    assert_eq!(agent.runs(), 0, "nothing forged ran");
    // The same sends with a JSON type run.
    for content_type in ["application/json", "application/a2a+json; charset=utf-8"] {
        let (status, body) = post(
            &server.base,
            "/message:send",
            Some(content_type),
            &send_body("real"),
        )
        .await;
        assert_eq!(status, 200, "{content_type}: {body}");
    }
    assert_eq!(agent.runs(), 2);
}

#[tokio::test]
async fn a_member_named_twice_is_refused_on_both_bindings() {
    let agent = CountingAgent::new();
    let server = serve(agent.clone()).await;
    let message = r#"{"messageId":"m-dup","role":"ROLE_USER","parts":[{"text":"hi"}],"metadata":{"k":1,"k":2}}"#;
    // In the request object: not a request.
    let (_, body) = post(
        &server.base,
        "/",
        Some("application/json"),
        r#"{"jsonrpc":"2.0","id":3,"method":"GetTask","method":"SendMessage","params":{}}"#,
    )
    .await;
    assert_eq!(body["error"]["code"], -32600, "{body}");
    assert_eq!(body["id"], 3, "{body}");
    // Deep in the params, where a free-form object would keep one value silently.
    let (_, body) = post(
        &server.base,
        "/",
        Some("application/json"),
        &format!(
            r#"{{"jsonrpc":"2.0","id":4,"method":"SendMessage","params":{{"message":{message}}}}}"#
        ),
    )
    .await;
    assert_eq!(body["error"]["code"], -32602, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("\"k\""),
        "{body}"
    );
    for body in [
        format!(r#"{{"message":{message}}}"#),
        r#"{"message":{"messageId":"a","role":"ROLE_USER","parts":[{"text":"hi"}]},"message":{"messageId":"b","role":"ROLE_USER","parts":[{"text":"hi"}]}}"#.to_owned(),
    ] {
        let (status, answer) =
            post(&server.base, "/message:send", Some("application/json"), &body).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert_eq!(answer["error"]["details"][0]["reason"], "INVALID_PARAMS");
    }
    // A query parameter named twice is as ambiguous.
    let response = client()
        .get(format!("{}/tasks?pageSize=1&pageSize=50", server.base))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 400);
    assert_eq!(agent.runs(), 0, "nothing ambiguous ran");
}

/// Requests carrying an identifier no store can keep as given, each with the field it names.
fn bad_identifier_calls() -> Vec<(&'static str, Value)> {
    let long = "x".repeat(3000);
    let just_over = "y".repeat(MAX_IDENTIFIER_BYTES + 1);
    let mut send_to_task = send_params("m-task", "hi");
    send_to_task["message"]["taskId"] = json!("t\u{0}1");
    let mut long_context = send_params("m-ctx", "hi");
    long_context["message"]["contextId"] = json!(long);
    let mut bell_message = send_params("m\u{7}", "hi");
    bell_message["message"]["messageId"] = json!("m\u{7}id");
    let mut long_tenant = send_params("m-tenant", "hi");
    long_tenant["tenant"] = json!(long);
    let mut nul_tenant = send_params("m-tenant2", "hi");
    nul_tenant["tenant"] = json!("acme\u{0}");
    let cursor = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("5:a\u{0}b");
    vec![
        ("GetTask", json!({"id": "a\u{0}b"})),
        ("GetTask", json!({"id": just_over})),
        ("CancelTask", json!({"id": "a\u{0}b"})),
        ("SubscribeToTask", json!({"id": "\u{1b}[31m"})),
        ("SendMessage", send_to_task),
        ("SendMessage", long_context),
        ("SendMessage", bell_message),
        ("SendMessage", long_tenant),
        ("SendMessage", nul_tenant),
        ("ListTasks", json!({"contextId": "c\u{0}"})),
        ("ListTasks", json!({"pageToken": cursor})),
    ]
}

#[tokio::test]
async fn identifiers_no_store_can_keep_are_refused_on_every_store() {
    for under_test in all_stores().await {
        let handler = handler_with_store(CountingAgent::new(), Arc::clone(&under_test.store));
        let server = serve_handler(handler).await;
        for binding in BINDINGS {
            for (method, params) in bad_identifier_calls() {
                let error = call(binding, &server.base, method, params.clone())
                    .await
                    .expect_err("refused");
                assert_eq!(
                    error.reason, "INVALID_PARAMS",
                    "{} {binding:?} {method} {params}: {}",
                    under_test.name, error.body
                );
                match binding {
                    Binding::JsonRpc => assert_eq!(error.code, Some(-32602)),
                    Binding::Rest => assert_eq!(error.status, 400),
                    Binding::Grpc => assert_eq!(error.grpc, Some(tonic::Code::InvalidArgument)),
                }
            }
            // The longest allowed identifier is kept and read back.
            let context = "c".repeat(MAX_IDENTIFIER_BYTES);
            let mut params = send_params(&uuid::Uuid::new_v4().to_string(), "hi");
            params["message"]["contextId"] = json!(context);
            let result = call(binding, &server.base, "SendMessage", params)
                .await
                .unwrap_or_else(|e| panic!("{}: {}", under_test.name, e.body));
            assert_eq!(task_of(&result)["contextId"], json!(context));
        }
        drop(server);
        under_test.cleanup().await;
    }
}

#[tokio::test]
async fn the_card_names_the_public_url_or_varies_by_host() {
    let card = |base: String, host: &'static str| async move {
        client()
            .get(format!("{base}/.well-known/agent-card.json"))
            .header("host", host)
            .send()
            .await
            .expect("sent")
    };
    let derived = serve(CountingAgent::new()).await;
    let response = card(derived.base.clone(), "evil.example").await;
    assert_eq!(
        response.headers()["vary"],
        "host",
        "a cache keeps one card per Host"
    );
    let configured = serve_with(
        RequestHandler::builder(CountingAgent::new()).build(),
        ServerConfig::default().with_public_url("https://agents.example.com"),
    )
    .await;
    let response = card(configured.base.clone(), "evil.example").await;
    assert!(response.headers().get("vary").is_none());
    let body: Value = response.json().await.expect("card");
    let urls: Vec<&str> = body["supportedInterfaces"]
        .as_array()
        .expect("interfaces")
        .iter()
        .filter_map(|i| i["url"].as_str())
        .collect();
    assert!(!urls.is_empty());
    assert!(
        urls.iter()
            .all(|u| u.starts_with("https://agents.example.com")),
        "{urls:?}"
    );
}

/// Any text, control characters and NUL included, or text around the identifier limit.
fn any_identifier() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9-]{0,12}",
        proptest::collection::vec(any::<char>(), 0..16).prop_map(String::from_iter),
        (MAX_IDENTIFIER_BYTES - 2..MAX_IDENTIFIER_BYTES + 3).prop_map(|n| "z".repeat(n)),
        "[a-z]{0,4}[\\x00-\\x1f\\x7f][a-z]{0,4}",
        (2_500usize..3_500).prop_map(|n| "w".repeat(n)),
        Just("tasks".to_owned()),
    ]
}

/// One request built from random identifiers, for either binding.
fn random_request(
    rest: bool,
    operation: u8,
    tenant: &str,
    id: &str,
    context: &str,
) -> Request<Body> {
    let mut message = json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": "hi"}]});
    if operation == 1 {
        message["taskId"] = json!(id);
        message["contextId"] = json!(context);
    }
    let (method, params) = match operation {
        0 | 1 => ("SendMessage", json!({"tenant": tenant, "message": message})),
        2 => ("GetTask", json!({"tenant": tenant, "id": id})),
        3 => ("CancelTask", json!({"tenant": tenant, "id": id})),
        _ => ("ListTasks", json!({"tenant": tenant, "contextId": context})),
    };
    let builder = Request::builder()
        .header("A2A-Version", "1.0")
        .header("content-type", "application/json");
    if !rest {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        return builder
            .method("POST")
            .uri("/")
            .body(Body::from(body.to_string()))
            .expect("request");
    }
    let segment = |s: &str| utf8_percent_encode(s, NON_ALPHANUMERIC).to_string();
    let root = if tenant.is_empty() {
        String::new()
    } else {
        format!("/{}", segment(tenant))
    };
    let (verb, path, body) = match method {
        "SendMessage" => ("POST", format!("{root}/message:send"), params.to_string()),
        "GetTask" => (
            "GET",
            format!("{root}/tasks/{}", segment(id)),
            String::new(),
        ),
        "CancelTask" => (
            "POST",
            format!("{root}/tasks/{}:cancel", segment(id)),
            "{}".to_owned(),
        ),
        _ => (
            "GET",
            format!("{root}/tasks?contextId={}", segment(context)),
            String::new(),
        ),
    };
    builder
        .method(verb)
        .uri(path)
        .body(Body::from(body))
        .expect("request")
}

/// Sends one request in process: never a 5xx or an internal error, always a JSON body of the
/// binding's shape.
async fn never_a_server_error(
    router: axum::Router,
    request: Request<Body>,
    name: &str,
) -> Result<(), TestCaseError> {
    let what = format!("{name}: {} {}", request.method(), request.uri());
    let response = router
        .oneshot(request)
        .await
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let status = response.status();
    prop_assert!(!status.is_server_error(), "{}: {}", what, status);
    let bytes = response
        .into_body()
        .collect()
        .await
        .map_err(|e| TestCaseError::fail(e.to_string()))?
        .to_bytes();
    if !bytes.is_empty() {
        let value: Value = serde_json::from_slice(&bytes)
            .map_err(|e| TestCaseError::fail(format!("{what}: {e}")))?;
        // JSON-RPC answers an internal error with HTTP 200: its code says it.
        prop_assert!(
            value["error"]["code"] != -32603,
            "{}: an internal error: {}",
            what,
            value
        );
        prop_assert!(
            value.get("result").is_some()
                || value.get("error").is_some()
                || value.get("task").is_some()
                || value.get("id").is_some()
                || value.get("tasks").is_some(),
            "{}: {}",
            what,
            value
        );
    }
    Ok(())
}

#[test]
fn random_identifiers_never_produce_a_server_error_on_any_store() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let stores = runtime.block_on(all_stores());
    let wire = a2a_wire_check::Recorder::new();
    let routers: Vec<(&'static str, axum::Router)> = stores
        .iter()
        .map(|s| {
            let handler = handler_with_store(CountingAgent::new(), Arc::clone(&s.store));
            (
                s.name,
                strict_router(A2aServer::new(handler).router(), &wire),
            )
        })
        .collect();
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(48));
    let strategy = (
        any::<bool>(),
        0u8..5,
        any_identifier(),
        any_identifier(),
        any_identifier(),
    );
    let outcome = runner.run(&strategy, |(rest, operation, tenant, id, context)| {
        runtime.block_on(async {
            for (name, router) in &routers {
                let request = random_request(rest, operation, &tenant, &id, &context);
                never_a_server_error(router.clone(), request, name).await?;
            }
            Ok(())
        })
    });
    runtime.block_on(async {
        for store in stores {
            store.cleanup().await;
        }
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
    wire.assert_clean();
}

#[tokio::test]
async fn a_flood_of_tenant_names_is_bounded_and_locks_no_new_tenant_out() {
    use a2a_protocol_server::store::{InMemoryStoreConfig, InMemoryTaskStore};
    let store = Arc::new(InMemoryTaskStore::with_config(
        InMemoryStoreConfig::default()
            .with_tenant_aware(true)
            .with_max_tenants(50),
    ));
    let server = serve_handler(handler_with_store(CountingAgent::new(), store.clone())).await;
    let (mut accepted, mut refused) = (0, 0);
    for i in 0..500 {
        let mut params = send_params(&format!("m-{i}"), "hi");
        params["tenant"] = json!(format!("tenant-{i}"));
        match call(Binding::Rest, &server.base, "SendMessage", params).await {
            Ok(_) => accepted += 1,
            Err(error) => {
                assert_eq!(error.status, 503, "{}", error.body);
                refused += 1;
            }
        }
    }
    println!(
        "tenant flood: 500 new tenant names; {accepted} accepted, {refused} refused with 503; {} tenants held",
        store.tenant_count()
    );
    // Each flood tenant holds only a finished task, which would go to make room anyway: it
    // gives way to the next, so the flood fills nothing and locks nobody out.
    assert_eq!(accepted, 500);
    assert!(store.tenant_count() <= 50);
    let mut params = send_params("m-new", "hi");
    params["tenant"] = json!("a-real-tenant");
    call(Binding::Rest, &server.base, "SendMessage", params)
        .await
        .expect("a new tenant is served after the flood");
}

#[tokio::test]
async fn tenants_holding_live_keys_are_kept_and_a_new_one_is_told_when_room_comes() {
    use a2a_protocol_server::store::{InMemoryStoreConfig, InMemoryTaskStore};
    let store = Arc::new(InMemoryTaskStore::with_config(
        InMemoryStoreConfig::default()
            .with_tenant_aware(true)
            .with_max_tenants(3),
    ));
    let server = serve_handler(handler_with_store(CountingAgent::new(), store.clone())).await;
    for i in 0..3 {
        let mut params = keyed_params(&format!("m-{i}"), "hi", &key());
        params["tenant"] = json!(format!("keyed-{i}"));
        call(Binding::Rest, &server.base, "SendMessage", params)
            .await
            .expect("room for three");
    }
    // A key is kept for its whole time to live, so its tenant is too.
    let mut params = send_params("m-late", "hi");
    params["tenant"] = json!("late");
    let refused = call(Binding::Rest, &server.base, "SendMessage", params)
        .await
        .expect_err("no tenant may give way");
    assert_eq!(refused.status, 503, "{}", refused.body);
    let retry_after: u64 = refused
        .retry_after
        .as_deref()
        .and_then(|v| v.parse().ok())
        .expect("a Retry-After");
    assert!(
        retry_after > 23 * 3600,
        "room comes when the first key expires, in about a day, not in {retry_after} s"
    );
}

#[tokio::test]
async fn browsers_get_cors_only_for_the_origins_configured() {
    let preflight = |base: String, origin: &'static str| async move {
        client()
            .request(reqwest::Method::OPTIONS, format!("{base}/message:send"))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header(
                "access-control-request-headers",
                "content-type, a2a-version",
            )
            .send()
            .await
            .expect("sent")
    };
    // Off by default: no page anywhere is allowed.
    let closed = serve(CountingAgent::new()).await;
    let response = preflight(closed.base.clone(), "https://app.example.com").await;
    assert!(
        response
            .headers()
            .get("access-control-allow-origin")
            .is_none(),
        "{:?}",
        response.headers()
    );
    let open = serve_with(
        RequestHandler::builder(CountingAgent::new()).build(),
        ServerConfig::default().with_cors_origins(["https://app.example.com"]),
    )
    .await;
    let response = preflight(open.base.clone(), "https://app.example.com").await;
    assert_eq!(
        response.headers()["access-control-allow-origin"],
        "https://app.example.com"
    );
    let methods = response.headers()["access-control-allow-methods"]
        .to_str()
        .expect("text")
        .to_owned();
    assert!(methods.contains("POST"), "{methods}");
    let response = preflight(open.base.clone(), "https://evil.example").await;
    assert!(
        response
            .headers()
            .get("access-control-allow-origin")
            .is_none()
    );
    // The configured page's own requests carry the header too.
    let response = client()
        .post(format!("{}/message:send", open.base))
        .header("origin", "https://app.example.com")
        .header("A2A-Version", "1.0")
        .header("content-type", "application/json")
        .body(send_body("from the page"))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["access-control-allow-origin"],
        "https://app.example.com"
    );
}

#[tokio::test]
async fn an_agent_serving_named_tenants_refuses_others_before_storing_anything() {
    use a2a_protocol_server::HandlerConfig;
    use a2a_protocol_server::store::{InMemoryStoreConfig, InMemoryTaskStore};
    let store = Arc::new(InMemoryTaskStore::with_config(
        InMemoryStoreConfig::default().with_tenant_aware(true),
    ));
    let handler = RequestHandler::builder(CountingAgent::new())
        .with_store(store.clone())
        .with_config(HandlerConfig::default().with_served_tenants(["acme"]))
        .build();
    let server = serve_handler(handler).await;
    for binding in BINDINGS {
        let mut params = send_params(&format!("m-{binding:?}"), "hi");
        params["tenant"] = json!("made-up");
        let refused = call(binding, &server.base, "SendMessage", params)
            .await
            .expect_err("not a tenant served");
        assert_eq!(refused.reason, "INVALID_PARAMS", "{binding:?}");
        assert!(
            refused.message.contains("not a tenant this agent serves"),
            "{}",
            refused.message
        );
        let listed = call(
            binding,
            &server.base,
            "ListTasks",
            json!({"tenant": "made-up"}),
        )
        .await;
        assert!(listed.is_err(), "{binding:?}: every operation refuses it");
        let mut params = send_params(&format!("m-acme-{binding:?}"), "hi");
        params["tenant"] = json!("acme");
        call(binding, &server.base, "SendMessage", params)
            .await
            .expect("a tenant served");
        call(
            binding,
            &server.base,
            "SendMessage",
            send_params(&format!("m-none-{binding:?}"), "hi"),
        )
        .await
        .expect("no tenant at all is served");
    }
    assert_eq!(
        store.tenant_count(),
        2,
        "acme and the default namespace, nothing for made-up"
    );
}
