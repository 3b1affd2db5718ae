//! Real peers: the official Python (`a2a-sdk`, PyPI) and JavaScript (`@a2a-js/sdk`, npm)
//! clients, at pinned versions, drive our server over JSON-RPC, HTTP+JSON and gRPC.
//! `interop/setup.sh` installs them on first use. They also manage push-notification configs
//! on our server and attach one to a send, which our server delivers to a webhook here.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use a2a_integration_tests::support::{Running, ensure_peers, interop_dir, interop_skipped, serve};
use a2a_integration_tests::webhook::{Notification, Webhook};
use a2a_protocol_server::agents::EchoAgent;
use a2a_protocol_server::push::PushSettings;
use a2a_protocol_server::{AgentExecutor, EventSink, RequestContext, RequestHandler};
use a2a_protocol_types::A2aError;
use async_trait::async_trait;
use serde_json::{Value, json};

/// Echoes, except that "cancel me" waits until canceled; counts its turns.
#[derive(Clone, Default)]
struct PeerAgent {
    turns: Arc<AtomicUsize>,
}

impl PeerAgent {
    fn runs(&self) -> usize {
        self.turns.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl AgentExecutor for PeerAgent {
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
        self.turns.fetch_add(1, Ordering::SeqCst);
        if ctx.message.text() == "cancel me" {
            events.working().await?;
            ctx.cancellation.cancelled().await;
            return Ok(());
        }
        EchoAgent::new().execute(ctx, events).await
    }
}

async fn run_peer(program: &str, args: &[String]) -> Value {
    ensure_peers();
    let program = program.to_owned();
    let args = args.to_vec();
    let output = tokio::task::spawn_blocking(move || Command::new(&program).args(&args).output())
        .await
        .expect("joined")
        .expect("the peer client starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "peer client failed: {}\n{}",
        stdout,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.trim().lines().last().unwrap_or(""))
        .unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

async fn server(agent: PeerAgent) -> Running {
    serve(
        RequestHandler::builder(agent)
            .with_agent_card(EchoAgent::card())
            .build(),
    )
    .await
}

#[tokio::test]
async fn the_python_sdk_client_talks_to_our_server() {
    if interop_skipped() {
        return;
    }
    for binding in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        let agent = PeerAgent::default();
        let server = server(agent.clone()).await;
        let python = interop_dir().join(".venv/bin/python").display().to_string();
        let script = interop_dir().join("python/client.py").display().to_string();
        let out = run_peer(&python, &[script, server.url(), binding.into()]).await;

        let task = &out["unary"]
            .as_array()
            .expect("events")
            .last()
            .expect("a result")["task"];
        assert_eq!(
            task["status"]["state"], "TASK_STATE_COMPLETED",
            "{binding}: {out}"
        );
        assert_eq!(task["artifacts"][0]["parts"][0]["text"], "hello unary");
        assert_eq!(out["get"]["id"], task["id"]);
        assert!(
            out["listed"].as_array().expect("ids").contains(&task["id"]),
            "{binding}: {out}"
        );

        let kinds: Vec<&str> = out["stream"]
            .as_array()
            .expect("events")
            .iter()
            .map(|e| {
                e.as_object()
                    .and_then(|o| o.keys().next())
                    .map_or("", String::as_str)
            })
            .collect();
        assert_eq!(
            kinds,
            ["task", "statusUpdate", "artifactUpdate", "statusUpdate"],
            "{binding}"
        );

        assert_eq!(
            out["keyed"][0], out["keyed"][1],
            "{binding}: a keyed send sent twice is one task"
        );
        assert_eq!(out["canceled"], "TASK_STATE_CANCELED", "{binding}: {out}");
        let subscribed = out["subscribed"].as_array().expect("events");
        assert!(
            subscribed.first().is_some_and(|e| e.get("task").is_some()),
            "{binding}: a subscription starts with the task: {out}"
        );
        assert_eq!(
            subscribed
                .last()
                .map(|e| &e["statusUpdate"]["status"]["state"]),
            Some(&Value::from("TASK_STATE_CANCELED")),
            "{binding}: and ends with its cancellation: {out}"
        );
        assert_eq!(
            agent.runs(),
            4,
            "{binding}: unary, keyed once, streamed, canceled"
        );
    }
}

#[tokio::test]
async fn the_javascript_sdk_client_talks_to_our_server() {
    if interop_skipped() {
        return;
    }
    for binding in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        let agent = PeerAgent::default();
        let server = server(agent.clone()).await;
        let script = interop_dir().join("js/client.mjs").display().to_string();
        let out = run_peer("node", &[script, server.url(), binding.into()]).await;

        const COMPLETED: i64 = 3;
        const CANCELED: i64 = 5;
        assert_eq!(out["unary"]["state"], COMPLETED, "{binding}: {out}");
        assert_eq!(out["unary"]["artifactText"], "hello unary");
        assert_eq!(out["get"]["id"], out["unary"]["id"]);
        assert!(
            out["listed"]
                .as_array()
                .expect("ids")
                .contains(&out["unary"]["id"])
        );
        let kinds: Vec<&str> = out["stream"]
            .as_array()
            .expect("events")
            .iter()
            .map(|e| e["kind"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(
            kinds,
            ["task", "statusUpdate", "artifactUpdate", "statusUpdate"],
            "{binding}"
        );
        assert_eq!(
            out["keyed"][0], out["keyed"][1],
            "{binding}: a keyed send sent twice is one task"
        );
        assert_eq!(out["canceled"], CANCELED, "{binding}: {out}");
        let subscribed: Vec<(&Value, &Value)> = out["subscribed"]
            .as_array()
            .expect("events")
            .iter()
            .map(|e| (&e["kind"], &e["state"]))
            .collect();
        assert_eq!(
            subscribed.first().map(|e| e.0),
            Some(&Value::from("task")),
            "{binding}: a subscription starts with the task: {out}"
        );
        assert_eq!(
            subscribed.last().map(|e| e.1),
            Some(&Value::from(CANCELED)),
            "{binding}: and ends with its cancellation: {out}"
        );
        assert_eq!(
            agent.runs(),
            4,
            "{binding}: unary, keyed once, streamed, canceled"
        );
    }
}

/// Our server with push on, the test's webhook on 127.0.0.1 allowed, retries and polling fast.
async fn push_server() -> Running {
    let settings = PushSettings::default()
        .with_allowed(vec!["127.0.0.1".parse().expect("a range")])
        .with_first_retry(Duration::from_millis(50))
        .with_poll_interval(Duration::from_millis(20));
    serve(
        RequestHandler::builder(EchoAgent::new())
            .with_agent_card(EchoAgent::card())
            .with_push(settings)
            .build(),
    )
    .await
}

/// Whether `notification` is the final status update of task `task`.
fn completes(notification: &Notification, task: &Value) -> bool {
    let update = &notification.body["statusUpdate"];
    &update["taskId"] == task && update["status"]["state"] == "TASK_STATE_COMPLETED"
}

/// The peer's `push_client` script, run with `program` over every binding against our server:
/// configs created (ids `{peer}-0..2`), read, listed in pages of two and deleted; then a send
/// with a push config to the webhook's `/{path}`, whose every event arrives with the config's
/// token and credentials.
async fn peer_manages_push(program: &str, script: &str, peer: &str, path: &str) {
    for binding in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        let (hook_url, hook) = Webhook::start().await;
        let server = push_server().await;
        let script = interop_dir().join(script).display().to_string();
        let out = run_peer(program, &[script, server.url(), binding.into(), hook_url]).await;

        let ids: Vec<String> = (0..3).map(|n| format!("{peer}-{n}")).collect();
        assert_eq!(out["created"], json!(ids), "{binding}: {out}");
        let got = &out["got"];
        assert_eq!(got["id"], ids[1], "{binding}: {out}");
        assert_eq!(got["token"], "token-1", "{binding}: {out}");
        assert!(
            got["url"]
                .as_str()
                .is_some_and(|u| u.ends_with("/unused/1")),
            "{binding}: {out}"
        );
        assert_ne!(
            got["authentication"]["credentials"],
            Value::from(format!("{peer}-secret")),
            "{binding}: credentials are never read back in full: {out}"
        );
        let pages = out["pages"].as_array().expect("pages");
        // @a2a-js/sdk 1.3.0's HTTP+JSON client sends no paging parameters: it gets one page.
        let pages_asked = !(peer == "js" && binding == "HTTP+JSON");
        if pages_asked {
            assert!(
                pages.len() >= 2
                    && pages
                        .iter()
                        .all(|p| p.as_array().is_some_and(|p| p.len() <= 2)),
                "{binding}: three configs in pages of two: {out}"
            );
        }
        let mut listed: Vec<&str> = pages
            .iter()
            .flat_map(|p| p.as_array().expect("ids"))
            .map(|id| id.as_str().expect("an id"))
            .collect();
        listed.sort_unstable();
        assert_eq!(listed, ids, "{binding}: every config listed once: {out}");
        assert_eq!(out["left"], json!(ids[1..]), "{binding}: {out}");

        let task = &out["pushedTask"];
        let path = format!("/{path}");
        let received = hook
            .wait_until(&path, |r| r.iter().any(|n| completes(n, task)))
            .await;
        let token = format!("{peer}-token");
        let authorization = format!("Bearer {peer}-secret");
        for notification in &received {
            assert_eq!(
                notification.header("x-a2a-notification-token"),
                Some(token.as_str()),
                "{binding}: {notification:?}"
            );
            assert_eq!(
                notification.header("authorization"),
                Some(authorization.as_str()),
                "{binding}: {notification:?}"
            );
        }
        assert!(
            received.last().is_some_and(|n| completes(n, task)),
            "{binding}: the completion is the last notification: {received:#?}"
        );
    }
}

#[tokio::test]
async fn the_python_sdk_client_manages_push_configs_on_our_server() {
    if interop_skipped() {
        return;
    }
    let python = interop_dir().join(".venv/bin/python").display().to_string();
    peer_manages_push(&python, "python/push_client.py", "py", "python").await;
}

#[tokio::test]
async fn the_javascript_sdk_client_manages_push_configs_on_our_server() {
    if interop_skipped() {
        return;
    }
    peer_manages_push("node", "js/push_client.mjs", "js", "javascript").await;
}
