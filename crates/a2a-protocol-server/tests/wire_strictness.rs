//! Every kind of JSON body the server writes, on every store and both HTTP bindings, read as a
//! strict A2A v1.0.1 reader reads it: answers of all eleven operations, stream events, push
//! notification bodies, the card, and error bodies. Every other test server is checked the
//! same way (the harness's `strict`); this test makes sure each kind of body is among them.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_protocol_server::push::PushSettings;
use a2a_protocol_server::{AgentExecutor, EventSink, RequestContext, RequestHandler};
use a2a_protocol_types::{A2aError, Artifact, Part};
use a2a_wire_check::Recorder;
use async_trait::async_trait;
use common::stores::all_stores;
use common::*;
use serde_json::{Value, json};

/// Works, makes an artifact, then completes; "slow" first waits a little, so a client can
/// subscribe and cancel; "ask" ends asking for input.
struct Worker;

#[async_trait]
impl AgentExecutor for Worker {
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
        events.working().await?;
        let text = ctx.message.text();
        if text == "slow" {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(500)) => {}
                () = ctx.cancellation.cancelled() => return Ok(()),
            }
        }
        events
            .artifact(Artifact::new(
                "a-1",
                vec![Part::text(format!("did {text}"))],
            ))
            .await?;
        if text == "ask" {
            return events.require_input("what else?").await;
        }
        events.complete(None).await
    }
}

/// A webhook that checks every body it gets; its URL, the record and how many it got.
async fn webhook() -> (String, Recorder, Arc<Mutex<usize>>) {
    let wire = Recorder::new();
    let received = Arc::new(Mutex::new(0));
    let app = axum::Router::new().fallback({
        let (wire, received) = (wire.clone(), Arc::clone(&received));
        move |body: String| {
            wire.check_push(body.as_bytes());
            *received.lock().expect("lock") += 1;
            async { http::StatusCode::OK }
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, wire, received)
}

fn id_of(task: &Value) -> String {
    task["id"].as_str().expect("a task id").to_owned()
}

/// Every operation on `binding`, answered and refused.
async fn every_operation(binding: Binding, base: &str, hook: &str) {
    let tag = format!("{binding:?}");
    let mut params = send_params(&format!("m-ask-{tag}"), "ask");
    params["configuration"] = json!({"taskPushNotificationConfig": {"url": hook, "token": "t"}});
    let asked = call(binding, base, "SendMessage", params)
        .await
        .expect("sent");
    let asked_id = id_of(&asked["task"]);

    let streamed = stream(
        binding,
        base,
        "SendStreamingMessage",
        keyed_params(&format!("m-stream-{tag}"), "stream", &key()),
    )
    .await
    .expect("streamed");
    assert!(streamed.len() >= 3, "{streamed:?}");

    // Subscribe while the task runs, then cancel it.
    let slow = call(
        binding,
        base,
        "SendMessage",
        json!({"message": {"messageId": format!("m-slow-{tag}"), "role": "ROLE_USER",
               "parts": [{"text": "slow"}]}, "configuration": {"returnImmediately": true}}),
    )
    .await
    .expect("sent");
    let slow_id = id_of(&slow["task"]);
    let mut subscribed =
        open_stream(binding, base, "SubscribeToTask", json!({"id": slow_id})).await;
    subscribed.next().await.expect("the task first");
    call(binding, base, "CancelTask", json!({"id": slow_id}))
        .await
        .expect("canceled");
    while subscribed.next().await.is_some() {}

    call(
        binding,
        base,
        "GetTask",
        json!({"id": asked_id, "historyLength": 5}),
    )
    .await
    .expect("read");
    call(
        binding,
        base,
        "ListTasks",
        json!({"pageSize": 2, "includeArtifacts": true}),
    )
    .await
    .expect("listed");

    let created = call(
        binding,
        base,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": asked_id, "id": "cfg-extra", "url": hook,
               "authentication": {"scheme": "Bearer", "credentials": "a-long-credential-1234"}}),
    )
    .await
    .expect("created");
    let config = json!({"taskId": asked_id, "id": created["id"]});
    call(
        binding,
        base,
        "GetTaskPushNotificationConfig",
        config.clone(),
    )
    .await
    .expect("read");
    call(
        binding,
        base,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": asked_id}),
    )
    .await
    .expect("listed");
    call(binding, base, "DeleteTaskPushNotificationConfig", config)
        .await
        .expect("deleted");

    // Refusals, each in its binding's error body with its details.
    for (method, params) in [
        ("GetTask", json!({"id": "no-such-task"})),
        ("CancelTask", json!({"id": id_of(&streamed[0]["task"])})),
        (
            "SubscribeToTask",
            json!({"id": id_of(&streamed[0]["task"])}),
        ),
        ("GetExtendedAgentCard", json!({})),
        (
            "SendMessage",
            json!({"message": {"messageId": "", "role": "ROLE_USER", "parts": []}}),
        ),
        (
            "SendMessage",
            keyed_params(&format!("m-other-{tag}"), "x", "short"),
        ),
        ("ListTasks", json!({"pageSize": -1})),
    ] {
        let refused = if method == "SubscribeToTask" {
            stream(binding, base, method, params)
                .await
                .map(|_| Value::Null)
        } else {
            call(binding, base, method, params).await
        };
        assert!(refused.is_err(), "{tag} {method}: {refused:?}");
    }
    let unknown_version = match binding {
        Binding::JsonRpc => client().post(format!("{base}/")).json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": asked_id}}),
        ),
        _ => client().get(format!("{base}/tasks/{asked_id}")),
    };
    let answer = unknown_version
        .header("A2A-Version", "9.9")
        .send()
        .await
        .expect("answered");
    let body: Value = answer.json().await.expect("an error body");
    assert!(body["error"].is_object(), "{tag}: {body}");
}

#[tokio::test]
async fn every_body_the_server_writes_is_strict_a2a_v1_0_1_on_every_store() {
    for s in all_stores().await {
        let (hook, pushed, received) = webhook().await;
        let handler = RequestHandler::builder(Worker)
            .with_store(Arc::clone(&s.store))
            .with_push(
                PushSettings::default()
                    .with_allowed(vec!["127.0.0.1".parse().expect("a range")])
                    .with_first_retry(Duration::from_millis(50))
                    .with_poll_interval(Duration::from_millis(20)),
            )
            .build();
        let server = serve_handler(handler).await;
        let card = client()
            .get(format!("{}/.well-known/agent-card.json", server.base))
            .send()
            .await
            .expect("card");
        assert!(card.status().is_success());
        for binding in HTTP_BINDINGS {
            every_operation(binding, &server.base, &hook).await;
        }
        // The JSON-RPC envelope's own refusals: an unknown method, a batch, no JSON at all.
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{}}"#,
            "[]",
            "{not json",
        ] {
            client()
                .post(format!("{}/", server.base))
                .header("content-type", "application/json")
                .header("A2A-Version", "1.0")
                .body(body)
                .send()
                .await
                .expect("answered");
        }
        // Each "ask" task makes three notifications (working, artifact, input required).
        for _ in 0..600 {
            if *received.lock().expect("lock") >= 6 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let deliveries = *received.lock().expect("lock");
        println!(
            "{}: {} bodies and events checked, {deliveries} push bodies",
            s.name,
            server.wire.checked()
        );
        assert!(deliveries >= 6, "{}: {deliveries} push bodies", s.name);
        assert!(server.wire.checked() >= 40, "{}", server.wire.checked());
        server.wire.assert_clean();
        pushed.assert_clean();
        drop(server);
        s.cleanup().await;
    }
}
