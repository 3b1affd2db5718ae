//! The eleven operations on both bindings, over real HTTP.

mod common;

use std::time::Duration;

use a2a_protocol_server::agents::ConformanceAgent;
use a2a_protocol_server::store::{InMemoryStoreConfig, InMemoryTaskStore};
use a2a_protocol_server::{RequestHandler, ServerConfig};
use a2a_protocol_types::AgentCard;
use common::*;
use serde_json::{Value, json};

async fn send(binding: Binding, base: &str, params: Value) -> Value {
    task_of(
        &call(binding, base, "SendMessage", params)
            .await
            .expect("sent"),
    )
    .clone()
}

/// A new task and its new context are named with UUIDs v7: ids made in later milliseconds
/// sort later, so a durable store's indexes grow at one end (random ids spread every insert
/// over the whole index).
#[tokio::test]
async fn new_tasks_and_contexts_get_time_ordered_ids() {
    let server = serve(CountingAgent::new()).await;
    let mut earlier: Option<(String, String)> = None;
    for i in 0..3 {
        let task = send(
            Binding::JsonRpc,
            &server.base,
            send_params(&format!("m-{i}"), "hi"),
        )
        .await;
        let id = task["id"].as_str().expect("id").to_owned();
        let context = task["contextId"].as_str().expect("contextId").to_owned();
        for name in [&id, &context] {
            let parsed = uuid::Uuid::parse_str(name).expect("a UUID");
            assert_eq!(parsed.get_version_num(), 7, "{name}");
        }
        if let Some((earlier_id, earlier_context)) = &earlier {
            assert!(earlier_id < &id, "{earlier_id} then {id}");
            assert!(
                earlier_context < &context,
                "{earlier_context} then {context}"
            );
        }
        earlier = Some((id, context));
        // The next ids are made in a later millisecond.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::test]
async fn get_task_returns_the_task_with_the_requested_history() {
    for binding in BINDINGS {
        let server = serve(CountingAgent::new()).await;
        let task = send(binding, &server.base, send_params("m-1", "hi")).await;
        let id = task["id"].as_str().expect("id");
        let full = call(binding, &server.base, "GetTask", json!({"id": id}))
            .await
            .expect("ok");
        assert_eq!(full["history"].as_array().expect("history").len(), 2);
        let one = call(
            binding,
            &server.base,
            "GetTask",
            json!({"id": id, "historyLength": 1}),
        )
        .await
        .expect("ok");
        assert_eq!(one["history"].as_array().expect("history").len(), 1);
        assert_eq!(
            one["history"][0]["role"], "ROLE_AGENT",
            "the most recent message"
        );
        let none = call(
            binding,
            &server.base,
            "GetTask",
            json!({"id": id, "historyLength": 0}),
        )
        .await
        .expect("ok");
        assert!(none.get("history").is_none(), "{none}");
        let error = call(
            binding,
            &server.base,
            "GetTask",
            json!({"id": "no-such-task"}),
        )
        .await
        .expect_err("missing");
        assert_eq!(error.reason, "TASK_NOT_FOUND");
        match binding {
            Binding::JsonRpc => assert_eq!(error.code, Some(-32001)),
            Binding::Rest => assert_eq!(error.status, 404),
            Binding::Grpc => assert_eq!(error.grpc, Some(tonic::Code::NotFound)),
        }
        let error = call(
            binding,
            &server.base,
            "GetTask",
            json!({"id": id, "historyLength": -1}),
        )
        .await
        .expect_err("invalid");
        assert_eq!(error.reason, "INVALID_PARAMS");
    }
}

#[tokio::test]
async fn list_tasks_filters_and_pages_newest_first() {
    for binding in BINDINGS {
        let server = serve(CountingAgent::new()).await;
        let mut params = send_params("m-0", "ask");
        params["message"]["contextId"] = json!("ctx-a");
        send(binding, &server.base, params).await;
        for i in 1..5 {
            let mut params = send_params(&format!("m-{i}"), "hi");
            params["message"]["contextId"] = json!(if i % 2 == 0 { "ctx-a" } else { "ctx-b" });
            send(binding, &server.base, params).await;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let all = call(binding, &server.base, "ListTasks", json!({}))
            .await
            .expect("ok");
        assert_eq!(all["totalSize"], 5);
        assert_eq!(all["nextPageToken"], "");
        let tasks = all["tasks"].as_array().expect("tasks");
        let stamps: Vec<&str> = tasks
            .iter()
            .map(|t| t["status"]["timestamp"].as_str().expect("ts"))
            .collect();
        let mut sorted = stamps.clone();
        sorted.sort_by(|a, b| b.cmp(a));
        assert_eq!(stamps, sorted, "newest status first");
        assert!(tasks.iter().all(|t| t.get("artifacts").is_none()));

        let ctx_a = call(
            binding,
            &server.base,
            "ListTasks",
            json!({"contextId": "ctx-a"}),
        )
        .await
        .expect("ok");
        assert_eq!(ctx_a["totalSize"], 3);
        let waiting = call(
            binding,
            &server.base,
            "ListTasks",
            json!({"status": "TASK_STATE_INPUT_REQUIRED"}),
        )
        .await
        .expect("ok");
        assert_eq!(waiting["totalSize"], 1);

        let mut seen = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut params = json!({"pageSize": 2});
            if let Some(token) = &token {
                params["pageToken"] = json!(token);
            }
            let page = call(binding, &server.base, "ListTasks", params)
                .await
                .expect("ok");
            assert_eq!(page["pageSize"], 2);
            for task in page["tasks"].as_array().expect("tasks") {
                seen.push(task["id"].as_str().expect("id").to_owned());
            }
            match page["nextPageToken"].as_str().expect("always present") {
                "" => break,
                next => token = Some(next.to_owned()),
            }
        }
        let expected: Vec<String> = tasks
            .iter()
            .map(|t| t["id"].as_str().expect("id").to_owned())
            .collect();
        assert_eq!(seen, expected, "pages cover every task once, in order");

        let bad = call(binding, &server.base, "ListTasks", json!({"pageSize": 150}))
            .await
            .expect_err("invalid");
        assert_eq!(bad.reason, "INVALID_PARAMS");
        let bad = call(
            binding,
            &server.base,
            "ListTasks",
            json!({"pageToken": "garbage!"}),
        )
        .await
        .expect_err("invalid");
        assert_eq!(bad.reason, "INVALID_PARAMS");
        let with_artifacts = call(
            binding,
            &server.base,
            "ListTasks",
            json!({"includeArtifacts": true, "contextId": "ctx-b"}),
        )
        .await
        .expect("ok");
        assert_eq!(with_artifacts["totalSize"], 2);
    }
}

#[tokio::test]
async fn cancel_stops_a_running_task_and_refuses_a_finished_one() {
    for binding in BINDINGS {
        let server = serve(CountingAgent::slow(Duration::from_secs(30))).await;
        let mut params = send_params("m-1", "hi");
        params["configuration"] = json!({"returnImmediately": true});
        let task = send(binding, &server.base, params).await;
        assert!(
            !["TASK_STATE_COMPLETED", "TASK_STATE_FAILED"]
                .contains(&task["status"]["state"].as_str().unwrap_or(""))
        );
        let id = task["id"].as_str().expect("id");
        let canceled = call(binding, &server.base, "CancelTask", json!({"id": id}))
            .await
            .expect("ok");
        assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
        let again = call(binding, &server.base, "CancelTask", json!({"id": id}))
            .await
            .expect_err("terminal");
        assert_eq!(again.reason, "TASK_NOT_CANCELABLE");
        match binding {
            Binding::JsonRpc => assert_eq!(again.code, Some(-32002)),
            Binding::Rest => assert_eq!(again.status, 400),
            Binding::Grpc => assert_eq!(again.grpc, Some(tonic::Code::FailedPrecondition)),
        }
        let missing = call(binding, &server.base, "CancelTask", json!({"id": "nope"}))
            .await
            .expect_err("missing");
        assert_eq!(missing.reason, "TASK_NOT_FOUND");
    }
}

#[tokio::test]
async fn subscribe_streams_the_task_then_its_updates() {
    for binding in BINDINGS {
        let server = serve(CountingAgent::slow(Duration::from_millis(300))).await;
        let mut params = send_params("m-1", "hi");
        params["configuration"] = json!({"returnImmediately": true});
        let task = send(binding, &server.base, params).await;
        let id = task["id"].as_str().expect("id");
        let events = stream(binding, &server.base, "SubscribeToTask", json!({"id": id}))
            .await
            .expect("stream");
        assert_eq!(
            events[0]["task"]["id"], id,
            "the task comes first: {events:?}"
        );
        assert_eq!(last_state(&events), "TASK_STATE_COMPLETED");
        let error = stream(binding, &server.base, "SubscribeToTask", json!({"id": id}))
            .await
            .expect_err("terminal");
        assert_eq!(error.reason, "UNSUPPORTED_OPERATION");
        let error = stream(
            binding,
            &server.base,
            "SubscribeToTask",
            json!({"id": "nope"}),
        )
        .await
        .expect_err("missing");
        assert_eq!(error.reason, "TASK_NOT_FOUND");
    }
}

#[tokio::test]
async fn subscribe_also_answers_post_on_rest() {
    let server = serve(CountingAgent::slow(Duration::from_millis(200))).await;
    let mut params = send_params("m-1", "hi");
    params["configuration"] = json!({"returnImmediately": true});
    let task = send(Binding::Rest, &server.base, params).await;
    let response = client()
        .post(format!(
            "{}/tasks/{}:subscribe",
            server.base,
            task["id"].as_str().expect("id")
        ))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 200);
    let body = response.text().await.expect("body");
    assert!(body.contains("TASK_STATE_COMPLETED"), "{body}");
}

#[tokio::test]
async fn multi_turn_continues_a_task_in_its_context() {
    for binding in BINDINGS {
        let agent = CountingAgent::new();
        let server = serve(agent.clone()).await;
        let task = send(binding, &server.base, send_params("m-1", "ask")).await;
        assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
        let mut follow_up = send_params("m-2", "more");
        follow_up["message"]["taskId"] = task["id"].clone();
        let done = send(binding, &server.base, follow_up).await;
        assert_eq!(done["id"], task["id"]);
        assert_eq!(
            done["contextId"], task["contextId"],
            "context inferred from the task"
        );
        assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED");
        assert_eq!(done["history"].as_array().expect("history").len(), 4);

        let asked = send(binding, &server.base, send_params("m-3", "ask")).await;
        let mut mismatched = send_params("m-4", "more");
        mismatched["message"]["taskId"] = asked["id"].clone();
        mismatched["message"]["contextId"] = json!("another-context");
        let error = call(binding, &server.base, "SendMessage", mismatched)
            .await
            .expect_err("mismatch");
        assert_eq!(error.reason, "INVALID_PARAMS");
        let mut unknown = send_params("m-5", "more");
        unknown["message"]["taskId"] = json!("no-such-task");
        let error = call(binding, &server.base, "SendMessage", unknown)
            .await
            .expect_err("unknown");
        assert_eq!(error.reason, "TASK_NOT_FOUND");

        let mut same_context = send_params("m-6", "hi");
        same_context["message"]["contextId"] = task["contextId"].clone();
        let sibling = send(binding, &server.base, same_context).await;
        assert_eq!(sibling["contextId"], task["contextId"]);
        assert_ne!(sibling["id"], task["id"]);
    }
}

#[tokio::test]
async fn a_direct_reply_is_a_message_not_a_task() {
    for binding in BINDINGS {
        let server = serve(ConformanceAgent::new()).await;
        let result = call(
            binding,
            &server.base,
            "SendMessage",
            send_params("tck-message-response-1", "hi"),
        )
        .await
        .expect("ok");
        assert_eq!(
            result["message"]["parts"][0]["text"], "Direct message response",
            "{result}"
        );
        assert!(result.get("task").is_none());
        let events = stream(
            binding,
            &server.base,
            "SendStreamingMessage",
            send_params("tck-message-response-2", "hi"),
        )
        .await
        .expect("stream");
        assert_eq!(events.len(), 1, "exactly one message: {events:?}");
        assert_eq!(events[0]["message"]["role"], "ROLE_AGENT");
    }
}

#[tokio::test]
async fn return_immediately_answers_before_the_task_settles() {
    for binding in BINDINGS {
        let server = serve(CountingAgent::slow(Duration::from_millis(500))).await;
        let mut params = send_params("m-1", "hi");
        params["configuration"] = json!({"returnImmediately": true});
        let task = send(binding, &server.base, params).await;
        let state = task["status"]["state"].as_str().expect("state");
        assert!(
            ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"].contains(&state),
            "{state}"
        );
        let blocking = send(binding, &server.base, send_params("m-2", "hi")).await;
        assert_eq!(blocking["status"]["state"], "TASK_STATE_COMPLETED");
    }
}

#[tokio::test]
async fn the_extended_card_is_served_only_when_configured() {
    let plain = serve(CountingAgent::new()).await;
    // The extended card is for authenticated callers (spec §13.3): here, whoever a layer in
    // front names in a header.
    let trusted_proxy =
        ServerConfig::default().with_caller_resolver(|headers: &http::HeaderMap| {
            let user = headers.get("x-user")?.to_str().ok()?;
            Some(a2a_protocol_server::CallerIdentity(user.to_owned()))
        });
    let extended = serve_with(
        RequestHandler::builder(CountingAgent::new())
            .with_extended_agent_card(AgentCard::new("Secret agent", "More skills", "1.0"))
            .build(),
        trusted_proxy,
    )
    .await;
    for binding in BINDINGS {
        let error = call(binding, &plain.base, "GetExtendedAgentCard", json!({}))
            .await
            .expect_err("absent");
        assert_eq!(error.reason, "UNSUPPORTED_OPERATION");
        let anonymous = call(binding, &extended.base, "GetExtendedAgentCard", json!({}))
            .await
            .expect_err("only for authenticated callers");
        assert_eq!(anonymous.reason, "UNAUTHENTICATED", "{binding:?}");
        assert_status(&anonymous, binding, 401, tonic::Code::Unauthenticated);
        let card = call_with(
            binding,
            &extended.base,
            "GetExtendedAgentCard",
            json!({}),
            &[("x-user", "alice")],
        )
        .await
        .expect("ok");
        assert_eq!(card["name"], "Secret agent");
        assert_eq!(card["capabilities"]["extendedAgentCard"], true);
    }
    let public: Value = client()
        .get(format!("{}/.well-known/agent-card.json", extended.base))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    assert_eq!(public["capabilities"]["extendedAgentCard"], true);
}

#[tokio::test]
async fn push_notification_operations_are_refused_as_unsupported() {
    let server = serve(CountingAgent::new()).await;
    let task = send(Binding::Rest, &server.base, send_params("m-1", "hi")).await;
    for binding in BINDINGS {
        let error = call(
            binding,
            &server.base,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task["id"], "url": "https://example.com/hook"}),
        )
        .await
        .expect_err("unsupported");
        assert_eq!(error.reason, "PUSH_NOTIFICATION_NOT_SUPPORTED");
        match binding {
            Binding::JsonRpc => assert_eq!(error.code, Some(-32003)),
            Binding::Rest => assert_eq!(error.status, 400),
            Binding::Grpc => assert_eq!(error.grpc, Some(tonic::Code::FailedPrecondition)),
        }
    }
    for method in [
        "GetTaskPushNotificationConfig",
        "DeleteTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
    ] {
        let error = call(
            Binding::JsonRpc,
            &server.base,
            method,
            json!({"taskId": task["id"], "id": "c"}),
        )
        .await
        .expect_err("unsupported");
        assert_eq!(error.code, Some(-32003), "{method}");
    }
    let card: Value = client()
        .get(format!("{}/.well-known/agent-card.json", server.base))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    assert_eq!(card["capabilities"]["pushNotifications"], false);
}

#[tokio::test]
async fn the_agent_card_is_cacheable_and_lists_every_binding() {
    let server = serve(CountingAgent::new()).await;
    let url = format!("{}/.well-known/agent-card.json", server.base);
    let response = client().get(&url).send().await.expect("sent");
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    assert!(
        headers["cache-control"]
            .to_str()
            .expect("ascii")
            .contains("max-age=")
    );
    assert!(headers.contains_key("last-modified"));
    let etag = headers["etag"].to_str().expect("ascii").to_owned();
    let card: Value = response.json().await.expect("json");
    let bindings: Vec<&str> = card["supportedInterfaces"]
        .as_array()
        .expect("interfaces")
        .iter()
        .map(|i| i["protocolBinding"].as_str().expect("binding"))
        .collect();
    assert_eq!(bindings, ["JSONRPC", "HTTP+JSON", "GRPC"]);
    assert_eq!(card["capabilities"]["streaming"], true);
    let cached = client()
        .get(&url)
        .header("If-None-Match", &etag)
        .send()
        .await
        .expect("sent");
    assert_eq!(cached.status(), 304);
}

#[tokio::test]
async fn either_binding_can_be_served_alone() {
    let rest_only = serve_with(
        RequestHandler::builder(CountingAgent::new()).build(),
        ServerConfig::default().with_jsonrpc_path(None),
    )
    .await;
    call(
        Binding::Rest,
        &rest_only.base,
        "SendMessage",
        send_params("m-1", "hi"),
    )
    .await
    .expect("REST works");
    let response = client()
        .post(format!("{}/", rest_only.base))
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 404);

    let rpc_only = serve_with(
        RequestHandler::builder(CountingAgent::new()).build(),
        ServerConfig::default()
            .with_rest_prefix(None)
            .with_jsonrpc_path(Some("/rpc")),
    )
    .await;
    let response = client()
        .post(format!("{}/rpc", rpc_only.base))
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": send_params("m-1", "hi")}))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 200);
    let response = client()
        .post(format!("{}/message:send", rpc_only.base))
        .header("A2A-Version", "1.0")
        .json(&send_params("m-2", "hi"))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 404);
}

#[tokio::test]
async fn tenants_are_isolated_on_a_tenant_aware_store() {
    let handler = RequestHandler::builder(CountingAgent::new())
        .with_store(InMemoryTaskStore::with_config(
            InMemoryStoreConfig::default().with_tenant_aware(true),
        ))
        .build();
    let server = serve_handler(handler).await;
    for binding in BINDINGS {
        let mut params = send_params("m-1", "hi");
        params["tenant"] = json!("acme");
        let task = send(binding, &server.base, params).await;
        let id = task["id"].as_str().expect("id");
        call(
            binding,
            &server.base,
            "GetTask",
            json!({"id": id, "tenant": "acme"}),
        )
        .await
        .expect("same tenant");
        let error = call(
            binding,
            &server.base,
            "GetTask",
            json!({"id": id, "tenant": "globex"}),
        )
        .await
        .expect_err("other tenant");
        assert_eq!(error.reason, "TASK_NOT_FOUND");
        let error = call(binding, &server.base, "GetTask", json!({"id": id}))
            .await
            .expect_err("no tenant");
        assert_eq!(error.reason, "TASK_NOT_FOUND");
        let listed = call(
            binding,
            &server.base,
            "ListTasks",
            json!({"tenant": "globex"}),
        )
        .await
        .expect("ok");
        assert_eq!(listed["totalSize"], 0);
    }
}

#[tokio::test]
async fn extensions_are_reported_back_when_activated() {
    let server = serve(CountingAgent::new()).await;
    let response = client()
        .post(format!("{}/message:send", server.base))
        .header("A2A-Version", "1.0")
        .header(
            "A2A-Extensions",
            "https://a2a-rust.com/extensions/idempotency/v1, https://example.com/unknown/v1",
        )
        .json(&keyed_params("m-1", "hi", &key()))
        .send()
        .await
        .expect("sent");
    assert_eq!(
        response.headers()["a2a-extensions"],
        "https://a2a-rust.com/extensions/idempotency/v1"
    );
    let response = client()
        .post(format!("{}/message:send", server.base))
        .header("A2A-Version", "1.0")
        .json(&send_params("m-2", "hi"))
        .send()
        .await
        .expect("sent");
    assert!(response.headers().get("a2a-extensions").is_none());
}

#[tokio::test]
async fn the_protocol_version_is_checked() {
    let server = serve(CountingAgent::new()).await;
    for (version, ok) in [
        (None, false),
        (Some("1.0"), true),
        (Some("1.0.1"), true),
        (Some("0.3"), false),
        (Some("2.0"), false),
    ] {
        let mut request = client()
            .post(format!("{}/", server.base))
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}));
        if let Some(version) = version {
            request = request.header("A2A-Version", version);
        }
        let body: Value = request
            .send()
            .await
            .expect("sent")
            .json()
            .await
            .expect("json");
        if ok {
            assert!(body.get("result").is_some(), "{version:?}: {body}");
        } else {
            assert_eq!(body["error"]["code"], -32009, "{version:?}: {body}");
        }
        let mut request = client().get(format!("{}/tasks", server.base));
        if let Some(version) = version {
            request = request.header("A2A-Version", version);
        }
        let response = request.send().await.expect("sent");
        assert_eq!(response.status() == 200, ok, "{version:?}");
    }
    let response = client()
        .get(format!("{}/tasks?A2A-Version=1.0", server.base))
        .send()
        .await
        .expect("sent");
    assert_eq!(
        response.status(),
        200,
        "the version may come as a query parameter"
    );
    let lenient = serve_with(
        RequestHandler::builder(CountingAgent::new()).build(),
        ServerConfig::default().with_require_version_header(false),
    )
    .await;
    let response = client()
        .get(format!("{}/tasks", lenient.base))
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn shutdown_settles_running_tasks_and_ends_their_streams_and_the_server() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let wire = a2a_wire_check::Recorder::new();
    let server = strict(
        a2a_protocol_server::A2aServer::new(
            RequestHandler::builder(CountingAgent::slow(Duration::from_secs(60))).build(),
        )
        .with_config(ServerConfig::default().with_shutdown_drain(Duration::from_millis(200))),
        &wire,
    );
    let serving = tokio::spawn(server.serve(listener, async {
        let _ = stopped.await;
    }));
    let open_stream = tokio::spawn({
        let base = base.clone();
        async move {
            stream(
                Binding::Rest,
                &base,
                "SendStreamingMessage",
                send_params("m-1", "hi"),
            )
            .await
        }
    });
    // Wait until the streamed task is working, so the stream is open.
    loop {
        let listed = call(
            Binding::Rest,
            &base,
            "ListTasks",
            json!({"status": "TASK_STATE_WORKING"}),
        )
        .await
        .expect("ok");
        if listed["totalSize"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.send(()).expect("server running");
    let events = open_stream.await.expect("joined").expect("stream");
    assert_eq!(
        last_state(&events),
        "TASK_STATE_FAILED",
        "past the drain time the task was settled, and its stream ended with it"
    );
    serving.await.expect("joined").expect("served cleanly");
    wire.assert_clean();
}
