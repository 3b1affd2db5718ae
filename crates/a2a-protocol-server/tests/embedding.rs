//! The agent mounted in an application's own axum server with its own layer: `embed` keeps
//! what `serve` runs beside the routes (streams ended at shutdown, the retention sweeper).

mod common;

use std::sync::Arc;
use std::time::Duration;

use a2a_protocol_server::store::{RetentionPolicy, SqliteTaskStore};
use a2a_protocol_server::{A2aServer, RequestHandler, ServerConfig, ServerHandle};
use common::*;
use serde_json::json;

/// Serves `server` the way an application would: its own router, its own `axum::serve`, and
/// an application layer that marks every response. What the agent writes is checked into
/// `wire`.
async fn mount(
    server: A2aServer,
    wire: &a2a_wire_check::Recorder,
) -> (String, ServerHandle, tokio::task::JoinHandle<()>) {
    let (a2a, handle) = strict(server, wire)
        .layer(axum::middleware::map_response(
            |mut response: axum::response::Response| async move {
                response
                    .headers_mut()
                    .insert("x-app-layer", http::HeaderValue::from_static("seen"));
                response
            },
        ))
        .embed()
        .await
        .expect("embedded");
    let app = axum::Router::new()
        .route("/healthz", axum::routing::get(|| async { "ok" }))
        .merge(a2a);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let serving = tokio::spawn(async move {
        axum::serve(listener, app).await.expect("served");
    });
    (base, handle, serving)
}

#[tokio::test]
async fn shutting_down_an_embedded_agent_ends_its_open_streams() {
    let agent = CountingAgent::slow(Duration::from_secs(600));
    let server = A2aServer::new(RequestHandler::builder(agent.clone()).build())
        .with_config(ServerConfig::default().with_shutdown_drain(Duration::from_millis(100)));
    let wire = a2a_wire_check::Recorder::new();
    let (base, handle, _serving) = mount(server, &wire).await;
    let card = client()
        .get(format!("{base}/.well-known/agent-card.json"))
        .send()
        .await
        .expect("card");
    assert_eq!(
        card.headers()["x-app-layer"],
        "seen",
        "the layer wraps the routes"
    );

    // Both streams stay open while the turns run; shutdown must end them.
    let mut open = Vec::new();
    for binding in BINDINGS {
        open.push(
            open_stream(
                binding,
                &base,
                "SendStreamingMessage",
                send_params(&format!("m-embed-late-{binding:?}"), "slow"),
            )
            .await,
        );
    }
    for events in &mut open {
        events.next().await.expect("first event");
    }
    handle.shutdown().await;
    for (events, binding) in open.iter_mut().zip(BINDINGS) {
        let mut rest = Vec::new();
        // Bounded: a stream that shutdown does not end would hang here, and the timeout fails.
        tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(event) = events.next().await {
                rest.push(event);
            }
        })
        .await
        .unwrap_or_else(|_| panic!("the {binding:?} stream ended at shutdown"));
        let last = rest.last().expect("what the task became");
        assert_eq!(
            last["statusUpdate"]["status"]["state"], "TASK_STATE_FAILED",
            "{binding:?}: {rest:?}"
        );
    }
    refuses_sends_and_keeps_the_app(&base).await;
    wire.assert_clean();
}

#[tokio::test]
async fn shutting_down_an_embedded_agent_ends_streams_watching_another_replicas_task() {
    // Two replicas on one store: the task runs on the other one, so only ending the stream
    // itself (not settling a turn of this replica) can end its subscriber's stream.
    let dir = tempfile::tempdir().expect("dir");
    let url = format!("sqlite://{}", dir.path().join("tasks.db").display());
    let store = Arc::new(SqliteTaskStore::open(&url).await.expect("store"));
    let slow = CountingAgent::slow(Duration::from_secs(600));
    let other = serve_handler(handler_with_store(slow.clone(), store.clone())).await;
    let server = A2aServer::new(handler_with_store(slow, store));
    let wire = a2a_wire_check::Recorder::new();
    let (base, handle, _serving) = mount(server, &wire).await;

    let mut running = open_stream(
        Binding::Rest,
        &other.base,
        "SendStreamingMessage",
        send_params("m-elsewhere", "slow"),
    )
    .await;
    let id = stream_task_id(&[running.next().await.expect("the task")]);
    let mut watching = Vec::new();
    for binding in BINDINGS {
        let mut events = open_stream(binding, &base, "SubscribeToTask", json!({ "id": id })).await;
        events.next().await.expect("the task as it is");
        // Still open a moment later: only shutdown will end it.
        assert!(
            tokio::time::timeout(Duration::from_millis(300), events.next())
                .await
                .is_err(),
            "{binding:?} subscription open"
        );
        watching.push(events);
    }
    handle.shutdown().await;
    for (events, binding) in watching.iter_mut().zip(BINDINGS) {
        tokio::time::timeout(Duration::from_secs(30), async {
            while events.next().await.is_some() {}
        })
        .await
        .unwrap_or_else(|_| panic!("the {binding:?} subscription ended at shutdown"));
    }
    refuses_sends_and_keeps_the_app(&base).await;
    wire.assert_clean();
}

/// After shutdown the agent refuses new sends, retryably, and the application still answers.
async fn refuses_sends_and_keeps_the_app(base: &str) {
    let refused = call(
        Binding::JsonRpc,
        base,
        "SendMessage",
        send_params("m-after", "hi"),
    )
    .await
    .expect_err("refused after shutdown");
    assert_eq!(refused.status, 503, "{refused:?}");
    let health = client()
        .get(format!("{base}/healthz"))
        .send()
        .await
        .expect("app");
    assert_eq!(health.text().await.expect("body"), "ok");
}

#[tokio::test]
async fn an_embedded_agent_runs_its_retention_sweeper() {
    let dir = tempfile::tempdir().expect("dir");
    let url = format!("sqlite://{}", dir.path().join("tasks.db").display());
    let store = Arc::new(SqliteTaskStore::open(&url).await.expect("store"));
    let handler = handler_with_store(CountingAgent::new(), store.clone());
    let server = A2aServer::new(handler).with_retention_sweeper(
        store,
        Duration::from_millis(50),
        RetentionPolicy::default().with_terminal_max_age(Duration::ZERO),
    );
    let wire = a2a_wire_check::Recorder::new();
    let (base, handle, _serving) = mount(server, &wire).await;
    let sent = call(
        Binding::Rest,
        &base,
        "SendMessage",
        send_params("m-swept", "hi"),
    )
    .await
    .expect("sent");
    let id = task_of(&sent)["id"].as_str().expect("id").to_owned();
    let mut polls = 0;
    let gone = loop {
        polls += 1;
        match call(Binding::Rest, &base, "GetTask", json!({ "id": id })).await {
            Err(error) if error.status == 404 => break true,
            _ if polls >= 400 => break false,
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    };
    println!("swept after {polls} polls");
    assert!(gone, "the sweeper deleted the settled task");
    handle.shutdown().await;
    wire.assert_clean();
}
