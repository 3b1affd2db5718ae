//! A store that stops answering while an agent's turn runs (a database restarting, say): the
//! turn's events cannot be recorded, nor its failure. Once the store answers again the task
//! is settled, by this process, saying what happened (never that nothing ran), or run again for
//! an agent that declared its turns safe to repeat. Nothing is left working.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use a2a_protocol_server::executor::Recovery;
use a2a_protocol_server::store::{StoreError, TaskStoreExt};
use a2a_protocol_server::{
    AgentExecutor, CallContext, EventSink, HandlerConfig, RequestContext, RequestHandler,
};
use a2a_protocol_types::{
    A2aError, Message, SendMessageConfiguration, SendMessageRequest, SendMessageResponse, TaskId,
    TaskState,
};
use async_trait::async_trait;
use common::stores::Hooked;
use tokio::sync::Notify;

/// Works, waits to be let go, then completes; counts its turns. The test takes the store down
/// while it waits.
struct Waiting {
    runs: AtomicUsize,
    go: Notify,
    recovery: Recovery,
}

#[async_trait]
impl AgentExecutor for Waiting {
    async fn execute(&self, _ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
        let run = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
        events.working().await?;
        if run == 1 {
            self.go.notified().await;
        }
        events.complete(Some(events.agent_message("done"))).await
    }

    fn recovery(&self) -> Recovery {
        self.recovery
    }
}

/// Sends, takes the store down while the turn runs, lets the turn end, brings the store back,
/// and returns the task as the store then holds it (once it settles, within 20 s) and the
/// agent's runs.
async fn a_turn_across_an_outage(recovery: Recovery) -> (a2a_protocol_types::Task, usize) {
    // The in-memory store, except that while `down` every call fails as busy.
    let down = Arc::new(AtomicBool::new(false));
    let store = Arc::new(Hooked::new({
        let down = Arc::clone(&down);
        move |_| {
            if down.load(Ordering::SeqCst) {
                return Err(StoreError::Busy(
                    "terminating connection due to administrator command".into(),
                ));
            }
            Ok(())
        }
    }));
    let agent = Arc::new(Waiting {
        runs: AtomicUsize::new(0),
        go: Notify::new(),
        recovery,
    });
    let handler = RequestHandler::builder(Arc::clone(&agent))
        .with_store(Arc::clone(&store))
        .with_config(HandlerConfig::default())
        .build();
    let mut request = SendMessageRequest::new(Message::user_text("work"));
    request.configuration = Some(SendMessageConfiguration {
        return_immediately: true,
        ..Default::default()
    });
    let SendMessageResponse::Task(task) = handler
        .send_message(request, &CallContext::default())
        .await
        .expect("sent")
    else {
        panic!("a task");
    };
    let working = |store: Arc<Hooked>, id: TaskId| async move {
        for _ in 0..400 {
            let now = store
                .inner
                .get("", &id)
                .await
                .expect("read")
                .expect("stored");
            if now.status.state == TaskState::Working {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the task never started working");
    };
    working(Arc::clone(&store), task.id.clone()).await;
    down.store(true, Ordering::SeqCst);
    agent.go.notify_one();
    // The turn ends while the store is down: neither its completion nor its failure lands.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let during = store
        .inner
        .get("", &task.id)
        .await
        .expect("read")
        .expect("stored");
    assert_eq!(
        during.status.state,
        TaskState::Working,
        "nothing could be written"
    );
    down.store(false, Ordering::SeqCst);
    for _ in 0..400 {
        let after = store
            .inner
            .get("", &task.id)
            .await
            .expect("read")
            .expect("stored");
        if after.status.state.is_terminal() {
            return (after, agent.runs.load(Ordering::SeqCst));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the task was left working after the store came back");
}

#[tokio::test]
async fn a_turn_whose_events_the_store_lost_is_failed_saying_so_once_it_is_back() {
    let (task, runs) = a_turn_across_an_outage(Recovery::Fail).await;
    assert_eq!(task.status.state, TaskState::Failed);
    let said = task
        .status
        .message
        .as_ref()
        .map(Message::text)
        .unwrap_or_default();
    assert!(
        !said.contains("nothing ran"),
        "the agent ran: the failure must not say otherwise: {said}"
    );
    assert!(said.contains("task store"), "{said}");
    println!("the failure says: {said}");
    assert_eq!(runs, 1);
}

#[tokio::test]
async fn a_turn_safe_to_repeat_runs_again_once_the_store_is_back() {
    let (task, runs) = a_turn_across_an_outage(Recovery::RunAgain).await;
    assert_eq!(task.status.state, TaskState::Completed, "{:?}", task.status);
    assert_eq!(runs, 2, "run again once, after the store came back");
}
