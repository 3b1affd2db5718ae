//! Real peers: the official Python (`a2a-sdk`, PyPI) and JavaScript (`@a2a-js/sdk`, npm)
//! clients, at pinned versions, drive our server over JSON-RPC, HTTP+JSON and gRPC.
//! `interop/setup.sh` installs them on first use.

use std::process::Command;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use a2a_integration_tests::support::{Running, ensure_peers, interop_dir, interop_skipped, serve};
use a2a_protocol_server::agents::EchoAgent;
use a2a_protocol_server::{AgentExecutor, EventSink, RequestContext, RequestHandler};
use a2a_protocol_types::A2aError;
use async_trait::async_trait;
use serde_json::Value;

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
