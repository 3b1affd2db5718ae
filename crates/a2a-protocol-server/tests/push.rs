//! Push notifications over HTTP, on every binding: config CRUD and paging, delivery of every
//! event in order with the config's token and `Authorization`, retries under one delivery id,
//! a hung webhook that holds up nothing else, and webhooks on internal addresses refused.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_protocol_server::push::PushSettings;
use a2a_protocol_server::{AgentExecutor, EventSink, RequestContext, RequestHandler};
use a2a_protocol_types::{A2aError, Artifact, Part};
use async_trait::async_trait;
use axum::http::{HeaderMap, StatusCode, Uri};
use common::{BINDINGS, Binding, CountingAgent, HTTP_BINDINGS, call, send_params, serve_handler};
use serde_json::{Value, json};

/// Works, makes an artifact, completes: three events after the task is created.
struct ThreeStepAgent;

#[async_trait]
impl AgentExecutor for ThreeStepAgent {
    async fn execute(&self, _ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
        events.working().await?;
        events
            .artifact(Artifact::new("a-1", vec![Part::text("result")]))
            .await?;
        events.complete(None).await
    }
}

/// What a webhook received.
#[derive(Debug, Clone)]
struct Received {
    path: String,
    delivery_id: String,
    generation: u64,
    token: Option<String>,
    authorization: Option<String>,
    content_type: Option<String>,
    body: Value,
}

/// A webhook on 127.0.0.1: `/hang` never answers, `/flaky` fails each notification's first
/// three attempts with 503, anything else answers 200. Every request is recorded.
#[derive(Clone, Default)]
struct Webhook {
    received: Arc<Mutex<Vec<Received>>>,
    attempts: Arc<Mutex<HashMap<String, u32>>>,
    /// Every body received, checked against the A2A v1.0.1 proto.
    wire: a2a_wire_check::Recorder,
}

impl Webhook {
    async fn start() -> (String, Self) {
        let hook = Self::default();
        let state = hook.clone();
        let app =
            axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap, body: String| {
                let state = state.clone();
                async move { state.receive(uri, headers, body).await }
            });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (base, hook)
    }

    async fn receive(&self, uri: Uri, headers: HeaderMap, body: String) -> StatusCode {
        self.wire.check_push(body.as_bytes());
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let received = Received {
            path: uri.path().to_owned(),
            delivery_id: header("a2a-delivery-id").unwrap_or_default(),
            generation: header("a2a-task-generation")
                .and_then(|g| g.parse().ok())
                .unwrap_or_default(),
            token: header("x-a2a-notification-token"),
            authorization: header("authorization"),
            content_type: header("content-type"),
            body: serde_json::from_str(&body).unwrap_or(Value::Null),
        };
        let path = received.path.clone();
        let delivery_id = received.delivery_id.clone();
        self.received.lock().expect("lock").push(received);
        match path.as_str() {
            "/hang" => std::future::pending().await,
            "/flaky" => {
                let mut attempts = self.attempts.lock().expect("lock");
                let attempt = attempts.entry(delivery_id).or_default();
                *attempt += 1;
                if *attempt <= 3 {
                    StatusCode::SERVICE_UNAVAILABLE
                } else {
                    StatusCode::OK
                }
            }
            _ => StatusCode::OK,
        }
    }

    fn received(&self, path: &str) -> Vec<Received> {
        self.wire.assert_clean();
        self.received
            .lock()
            .expect("lock")
            .iter()
            .filter(|r| r.path == path)
            .cloned()
            .collect()
    }

    /// Waits (boundedly) until `path` has received `count` requests; what it received.
    async fn wait_for(&self, path: &str, count: usize) -> Vec<Received> {
        for _ in 0..600 {
            let received = self.received(path);
            if received.len() >= count {
                return received;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let received = self.received(path);
        panic!(
            "{path} received {} requests, not {count}: {received:#?}",
            received.len()
        );
    }
}

/// Fast retries, and the test's webhook on 127.0.0.1 allowed.
fn settings() -> PushSettings {
    PushSettings::default()
        .with_allowed(vec!["127.0.0.1".parse().expect("a range")])
        .with_first_retry(Duration::from_millis(50))
        .with_max_retry(Duration::from_millis(200))
        .with_request_timeout(Duration::from_secs(2))
        .with_poll_interval(Duration::from_millis(20))
}

fn push_handler(agent: impl AgentExecutor, settings: PushSettings) -> RequestHandler {
    RequestHandler::builder(agent).with_push(settings).build()
}

fn with_push(mut params: Value, url: &str, credentials: &str) -> Value {
    params["configuration"] = json!({"taskPushNotificationConfig": {
        "url": url,
        "token": "tok-1",
        "authentication": {"scheme": "Bearer", "credentials": credentials},
    }});
    params
}

async fn send(binding: Binding, base: &str, params: Value) -> Value {
    let result = call(binding, base, "SendMessage", params)
        .await
        .expect("sent");
    result["task"].clone()
}

#[tokio::test]
async fn configs_are_created_read_listed_in_pages_and_deleted_on_every_binding() {
    let server = serve_handler(push_handler(CountingAgent::new(), settings())).await;
    let card: Value = common::client()
        .get(format!("{}/.well-known/agent-card.json", server.base))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    assert_eq!(card["capabilities"]["pushNotifications"], true);

    for binding in BINDINGS {
        let task = send(binding, &server.base, send_params("m-1", "hi")).await;
        let task_id = task["id"].as_str().expect("id").to_owned();
        let credentials = "a-long-bearer-credential-1234";
        let mut ids = Vec::new();
        for n in 0..3 {
            let created = call(
                binding,
                &server.base,
                "CreateTaskPushNotificationConfig",
                json!({
                    "taskId": task_id,
                    "id": format!("cfg-{n}"),
                    "url": format!("http://127.0.0.1:9/hook/{n}"),
                    "token": "tok",
                    "authentication": {"scheme": "Bearer", "credentials": credentials},
                }),
            )
            .await
            .unwrap_or_else(|e| panic!("{binding:?}: {e:?}"));
            assert_eq!(created["taskId"], task_id.as_str(), "{binding:?}");
            assert_eq!(
                created["authentication"]["credentials"], "****1234",
                "{binding:?}: credentials are never answered in full"
            );
            ids.push(created["id"].as_str().expect("id").to_owned());
        }
        let generated = call(
            binding,
            &server.base,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task_id, "url": "http://127.0.0.1:9/other"}),
        )
        .await
        .expect("created");
        let generated_id = generated["id"]
            .as_str()
            .expect("an id was given")
            .to_owned();
        assert!(!generated_id.is_empty(), "{binding:?}");

        let got = call(
            binding,
            &server.base,
            "GetTaskPushNotificationConfig",
            json!({"taskId": task_id, "id": "cfg-1"}),
        )
        .await
        .expect("got");
        assert_eq!(got["url"], "http://127.0.0.1:9/hook/1", "{binding:?}");
        assert_eq!(got["token"], "tok", "{binding:?}");
        assert_eq!(
            got["authentication"]["credentials"], "****1234",
            "{binding:?}"
        );

        // Pages of two: cfg-0, cfg-1 | cfg-2, the generated one (uuids sort after "cfg-").
        let mut listed = Vec::new();
        let mut token = String::new();
        let mut pages = 0;
        loop {
            let mut params = json!({"taskId": task_id, "pageSize": 2});
            if !token.is_empty() {
                params["pageToken"] = json!(token);
            }
            let page = call(
                binding,
                &server.base,
                "ListTaskPushNotificationConfigs",
                params,
            )
            .await
            .expect("listed");
            pages += 1;
            for config in page["configs"].as_array().expect("configs") {
                listed.push(config["id"].as_str().expect("id").to_owned());
                if config["id"] != generated_id.as_str() {
                    assert_eq!(config["authentication"]["credentials"], "****1234");
                }
            }
            token = page["nextPageToken"].as_str().unwrap_or("").to_owned();
            if token.is_empty() || pages > 5 {
                break;
            }
        }
        let mut expected = ids.clone();
        expected.push(generated_id.clone());
        expected.sort();
        assert_eq!(listed, expected, "{binding:?}: every config once, in order");

        for _ in 0..2 {
            call(
                binding,
                &server.base,
                "DeleteTaskPushNotificationConfig",
                json!({"taskId": task_id, "id": "cfg-1"}),
            )
            .await
            .unwrap_or_else(|e| panic!("{binding:?}: deleting is idempotent: {e:?}"));
        }
        let gone = call(
            binding,
            &server.base,
            "GetTaskPushNotificationConfig",
            json!({"taskId": task_id, "id": "cfg-1"}),
        )
        .await
        .expect_err("deleted");
        assert_eq!(gone.reason, "TASK_NOT_FOUND", "{binding:?}");

        let no_task = call(
            binding,
            &server.base,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": "no-such-task", "url": "http://127.0.0.1:9/x"}),
        )
        .await
        .expect_err("no task");
        assert_eq!(no_task.reason, "TASK_NOT_FOUND", "{binding:?}");

        let bad_token = call(
            binding,
            &server.base,
            "ListTaskPushNotificationConfigs",
            json!({"taskId": task_id, "pageToken": "%%%"}),
        )
        .await
        .expect_err("not a token");
        assert_eq!(bad_token.reason, "INVALID_PARAMS", "{binding:?}");
    }
}

#[tokio::test]
async fn configs_past_the_cap_are_refused_clearly() {
    let server = serve_handler(push_handler(
        CountingAgent::new(),
        settings().with_max_configs_per_task(2),
    ))
    .await;
    let task = send(Binding::JsonRpc, &server.base, send_params("m-1", "hi")).await;
    for n in 0..2 {
        call(
            Binding::JsonRpc,
            &server.base,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task["id"], "id": format!("c{n}"), "url": "http://127.0.0.1:9/"}),
        )
        .await
        .expect("room for two");
    }
    let error = call(
        Binding::JsonRpc,
        &server.base,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task["id"], "id": "c2", "url": "http://127.0.0.1:9/"}),
    )
    .await
    .expect_err("a third is one too many");
    assert_eq!(error.reason, "INVALID_PARAMS");
    assert!(
        error.message.contains("the most it may have"),
        "{}",
        error.message
    );
    call(
        Binding::JsonRpc,
        &server.base,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task["id"], "id": "c1", "url": "http://127.0.0.1:9/new"}),
    )
    .await
    .expect("replacing one at the cap is fine");
}

#[tokio::test]
async fn every_event_reaches_the_webhook_in_order_with_its_credentials() {
    let (hook_base, hook) = Webhook::start().await;
    let server = serve_handler(push_handler(ThreeStepAgent, settings())).await;
    for (n, binding) in HTTP_BINDINGS.into_iter().enumerate() {
        let path = format!("/ok/{n}");
        let params = with_push(
            send_params(&format!("m-{n}"), "go"),
            &format!("{hook_base}{path}"),
            "secret-credential",
        );
        let task = send(binding, &server.base, params).await;
        let task_id = task["id"].as_str().expect("id").to_owned();
        let received = hook.wait_for(&path, 3).await;
        let kinds: Vec<String> = received
            .iter()
            .map(|r| {
                let body = &r.body;
                if let Some(state) = body["statusUpdate"]["status"]["state"].as_str() {
                    format!("status {state}")
                } else if body["artifactUpdate"].is_object() {
                    "artifact".to_owned()
                } else {
                    format!("other {body}")
                }
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "status TASK_STATE_WORKING",
                "artifact",
                "status TASK_STATE_COMPLETED"
            ],
            "{binding:?}: every update, in order"
        );
        let generations: Vec<u64> = received.iter().map(|r| r.generation).collect();
        assert!(
            generations.windows(2).all(|w| w[0] < w[1]),
            "{binding:?}: generations rise: {generations:?}"
        );
        for r in &received {
            assert_eq!(r.token.as_deref(), Some("tok-1"), "{binding:?}");
            assert_eq!(
                r.authorization.as_deref(),
                Some("Bearer secret-credential"),
                "{binding:?}"
            );
            assert_eq!(r.content_type.as_deref(), Some("application/a2a+json"));
            let about = r.body["statusUpdate"]["taskId"]
                .as_str()
                .or(r.body["artifactUpdate"]["taskId"].as_str());
            assert_eq!(about, Some(task_id.as_str()), "{binding:?}");
            assert!(r.delivery_id.starts_with(&task_id), "{}", r.delivery_id);
        }
        let mut ids: Vec<&str> = received.iter().map(|r| r.delivery_id.as_str()).collect();
        ids.dedup();
        assert_eq!(ids.len(), 3, "{binding:?}: one id per notification");
    }
}

#[tokio::test]
async fn a_failing_webhook_gets_the_same_delivery_id_until_it_succeeds() {
    let (hook_base, hook) = Webhook::start().await;
    let server = serve_handler(push_handler(ThreeStepAgent, settings())).await;
    let params = with_push(send_params("m-1", "go"), &format!("{hook_base}/flaky"), "c");
    send(Binding::Rest, &server.base, params).await;
    // Three notifications, each failed three times and then acknowledged.
    let received = hook.wait_for("/flaky", 12).await;
    let mut attempts: Vec<(String, usize)> = Vec::new();
    for r in &received {
        match attempts.last_mut() {
            Some((id, count)) if *id == r.delivery_id => *count += 1,
            _ => attempts.push((r.delivery_id.clone(), 1)),
        }
    }
    println!("attempts per delivery id: {attempts:?}");
    assert_eq!(
        attempts.iter().map(|(_, n)| *n).collect::<Vec<_>>(),
        [4, 4, 4],
        "each notification retried under its own id until acknowledged, in order"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        hook.received("/flaky").len(),
        12,
        "nothing after the acknowledgements"
    );
}

#[tokio::test]
async fn a_hung_webhook_delays_neither_the_task_nor_other_tasks_notifications() {
    let (hook_base, hook) = Webhook::start().await;
    let server = serve_handler(push_handler(ThreeStepAgent, settings())).await;
    let hung = with_push(send_params("m-1", "go"), &format!("{hook_base}/hang"), "c");
    let task = send(Binding::JsonRpc, &server.base, hung).await;
    assert_eq!(
        task["status"]["state"], "TASK_STATE_COMPLETED",
        "the send answered with the settled task although its webhook hangs"
    );
    hook.wait_for("/hang", 1).await;
    let fine = with_push(send_params("m-2", "go"), &format!("{hook_base}/fine"), "c");
    send(Binding::JsonRpc, &server.base, fine).await;
    let received = hook.wait_for("/fine", 3).await;
    assert_eq!(received.len(), 3);
    let hung_ids: std::collections::HashSet<String> = hook
        .received("/hang")
        .into_iter()
        .map(|r| r.delivery_id)
        .collect();
    assert_eq!(
        hung_ids.len(),
        1,
        "the hung task's later notifications wait behind its first: {hung_ids:?}"
    );
}

#[tokio::test]
async fn webhooks_on_internal_addresses_are_refused_unless_allowed() {
    let agent = CountingAgent::new();
    let runs = agent.clone();
    let server = serve_handler(push_handler(agent, PushSettings::default())).await;
    let task = send(Binding::Rest, &server.base, send_params("m-1", "hi")).await;
    for binding in BINDINGS {
        for url in [
            "http://127.0.0.1:9/hook",
            "http://localhost:9/hook", // a name that resolves to 127.0.0.1
            "http://[::1]:9/hook",
            "http://10.0.0.1/hook",
            "http://192.168.1.1/hook",
            "http://169.254.169.254/latest/meta-data",
            "http://[::ffff:127.0.0.1]/hook",
            "ftp://127.0.0.1/hook",
            "http://user:pw@127.0.0.1/hook",
            "not a url",
        ] {
            let error = call(
                binding,
                &server.base,
                "CreateTaskPushNotificationConfig",
                json!({"taskId": task["id"], "url": url}),
            )
            .await
            .expect_err(url);
            assert_eq!(
                error.reason, "INVALID_PARAMS",
                "{binding:?} {url}: {error:?}"
            );
            assert!(
                error.message.starts_with("url:"),
                "{binding:?} {url}: {}",
                error.message
            );
        }
    }
    let before = runs.runs();
    let refused = call(
        Binding::JsonRpc,
        &server.base,
        "SendMessage",
        with_push(send_params("m-2", "hi"), "http://localhost:9/hook", "c"),
    )
    .await
    .expect_err("refused");
    assert_eq!(refused.reason, "INVALID_PARAMS");
    assert!(
        refused
            .message
            .contains("configuration.taskPushNotificationConfig.url"),
        "{}",
        refused.message
    );
    assert_eq!(runs.runs(), before, "a refused send runs nothing");
}
