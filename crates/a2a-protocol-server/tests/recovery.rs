//! Turns handed over between server processes sharing a store: run again after a shutdown for
//! an agent that declares it safe, and followed from another process event by event.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use a2a_protocol_server::executor::Recovery;
use a2a_protocol_server::store::{SqliteTaskStore, TaskStore, TaskStoreExt};
use a2a_protocol_server::{
    AgentExecutor, CallContext, EventSink, HandlerConfig, RequestContext, RequestHandler,
    ServerConfig,
};
use a2a_protocol_types::{
    A2aError, Message, SendMessageConfiguration, SendMessageRequest, SendMessageResponse, TaskState,
};
use async_trait::async_trait;
use common::{client, serve_with};

/// Works until canceled on its first run; completes at once when run again.
#[derive(Clone, Default)]
struct Rerunnable {
    runs: Arc<AtomicUsize>,
    reruns: Arc<AtomicUsize>,
}

#[async_trait]
impl AgentExecutor for Rerunnable {
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        if ctx.rerun {
            self.reruns.fetch_add(1, Ordering::SeqCst);
            return events
                .complete(Some(events.agent_message("done at last")))
                .await;
        }
        events.working().await?;
        ctx.cancellation.cancelled().await;
        Ok(())
    }

    fn recovery(&self) -> Recovery {
        Recovery::RunAgain
    }
}

fn handler(agent: Rerunnable, store: Arc<dyn TaskStore>) -> RequestHandler {
    RequestHandler::builder(agent)
        .with_store(store)
        .with_config(HandlerConfig::default().with_recovery_time(Duration::from_millis(600)))
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_given_up_at_shutdown_runs_again_in_another_process_for_an_agent_that_allows_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("shared.db").display());
    let store: Arc<dyn TaskStore> = Arc::new(SqliteTaskStore::open(&url).await.expect("sqlite"));
    let agent = Rerunnable::default();
    let first = handler(agent.clone(), Arc::clone(&store));
    let mut request = SendMessageRequest::new(Message::user_text("long"));
    request.configuration = Some(SendMessageConfiguration {
        return_immediately: true,
        ..Default::default()
    });
    let SendMessageResponse::Task(task) = first
        .send_message(request, &CallContext::default())
        .await
        .expect("sent")
    else {
        panic!("a task")
    };
    first.shutdown(Duration::from_millis(100)).await;
    // Another process on the same store recovers the turn the first one gave up.
    let second = serve_with(
        handler(agent.clone(), Arc::clone(&store)),
        ServerConfig::default(),
    )
    .await;
    let mut state = TaskState::Working;
    for _ in 0..100 {
        state = store
            .get("", &task.id)
            .await
            .expect("ok")
            .expect("kept")
            .status
            .state;
        if state.is_terminal() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(state, TaskState::Completed);
    assert_eq!(
        agent.runs.load(Ordering::SeqCst),
        2,
        "once, then once again"
    );
    assert_eq!(
        agent.reruns.load(Ordering::SeqCst),
        1,
        "the second run knew it was one"
    );
    drop(second);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_in_another_process_gets_every_event_in_order_with_its_generation() {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}", dir.path().join("shared.db").display());
    let store: Arc<dyn TaskStore> = Arc::new(SqliteTaskStore::open(&url).await.expect("sqlite"));
    let runner = serve_with(
        RequestHandler::builder(common::CountingAgent::slow(Duration::from_millis(400)))
            .with_store(Arc::clone(&store))
            .build(),
        ServerConfig::default(),
    )
    .await;
    let follower = serve_with(
        RequestHandler::builder(common::CountingAgent::new())
            .with_store(Arc::clone(&store))
            .build(),
        ServerConfig::default(),
    )
    .await;
    let created: serde_json::Value = client()
        .post(format!("{}/message:send", runner.base))
        .header("A2A-Version", "1.0")
        .json(&serde_json::json!({
            "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
            "configuration": {"returnImmediately": true}
        }))
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("json");
    let id = created["task"]["id"].as_str().expect("id");
    let text = client()
        .get(format!("{}/tasks/{id}:subscribe", follower.base))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .expect("subscribed")
        .text()
        .await
        .expect("the stream ends with the task");
    let ids: Vec<u64> = text
        .lines()
        .filter_map(|line| line.strip_prefix("id:"))
        .map(|id| id.trim().parse().expect("a generation"))
        .collect();
    let states: Vec<&str> = text
        .lines()
        .filter(|line| line.contains("TASK_STATE_"))
        .filter_map(|line| line.split("\"state\":\"").nth(1))
        .filter_map(|rest| rest.split('"').next())
        .collect();
    assert!(
        ids.windows(2).all(|w| w[1] == w[0] + 1),
        "consecutive generations: {ids:?}"
    );
    assert_eq!(states.last(), Some(&"TASK_STATE_COMPLETED"), "{text}");
    let last_generation = store
        .get("", &id.into())
        .await
        .expect("ok")
        .expect("kept")
        .generation;
    assert_eq!(
        ids.last(),
        Some(&last_generation),
        "the last event is the task's last change"
    );
}
