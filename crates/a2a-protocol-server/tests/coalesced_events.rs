//! A turn's events reach the store in as few writes as durability allows: events an agent
//! reports back to back share one write, a settling event is stored before its call returns,
//! an event followed by nothing is still stored, and a deferred write that fails is reported
//! to the agent's next call.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use a2a_protocol_server::agents::EchoAgent;
use a2a_protocol_server::store::{
    ClaimOutcome, InMemoryTaskStore, KeyClaim, Loaded, StoreError, TaskPage, TaskQuery, TaskStore,
    TaskStoreExt, TaskWrite, WriteOutcome,
};
use a2a_protocol_server::{AgentExecutor, CallContext, EventSink, RequestContext, RequestHandler};
use a2a_protocol_types::{
    A2aError, Message, SendMessageRequest, SendMessageResponse, Task, TaskId, TaskState,
};
use async_trait::async_trait;
use tokio::sync::Notify;

/// The in-memory store, recording how many events each write carries, and failing the next
/// write that carries events when told to.
#[derive(Default)]
struct RecordingStore {
    inner: InMemoryTaskStore,
    writes: Mutex<Vec<usize>>,
    fail_next_events: AtomicBool,
}

impl RecordingStore {
    fn events_per_write(&self) -> Vec<usize> {
        self.writes.lock().unwrap().clone()
    }
}

#[async_trait]
impl TaskStore for RecordingStore {
    async fn load(
        &self,
        tenant: &str,
        id: &TaskId,
        known: Option<u64>,
    ) -> Result<Loaded, StoreError> {
        self.inner.load(tenant, id, known).await
    }
    async fn list(&self, tenant: &str, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        self.inner.list(tenant, query).await
    }
    async fn write(&self, write: &TaskWrite<'_>) -> Result<WriteOutcome, StoreError> {
        if !write.events.is_empty() && self.fail_next_events.swap(false, Ordering::SeqCst) {
            return Err(StoreError::Busy("the disk is briefly away".into()));
        }
        let outcome = self.inner.write(write).await?;
        if outcome == WriteOutcome::Written {
            self.writes.lock().unwrap().push(write.events.len());
        }
        Ok(outcome)
    }
    fn supports_idempotency(&self) -> bool {
        true
    }
    async fn claim_idempotency_key(&self, claim: &KeyClaim) -> Result<ClaimOutcome, StoreError> {
        self.inner.claim_idempotency_key(claim).await
    }
    async fn release_idempotency_key(&self, claim: &KeyClaim) -> Result<(), StoreError> {
        self.inner.release_idempotency_key(claim).await
    }
    async fn find_idempotency_key(
        &self,
        claim: &KeyClaim,
    ) -> Result<Option<ClaimOutcome>, StoreError> {
        self.inner.find_idempotency_key(claim).await
    }
}

fn task_of(answer: SendMessageResponse) -> Task {
    match answer {
        SendMessageResponse::Task(task) => task,
        other => panic!("a task, not {other:?}"),
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_fast_turns_events_share_one_write() {
    let store = Arc::new(RecordingStore::default());
    let handler = RequestHandler::builder(EchoAgent::new())
        .with_store(store.clone())
        .build();
    let task = task_of(
        handler
            .send_message(
                SendMessageRequest::new(Message::user_text("hi")),
                &CallContext::default(),
            )
            .await
            .unwrap(),
    );
    assert_eq!(task.status.state, TaskState::Completed);
    // The creation, then working, the artifact and the completion in one write.
    assert_eq!(store.events_per_write(), vec![0, 3]);
    let stored = store.get("", &task.id).await.unwrap().unwrap();
    assert_eq!(stored.status.state, TaskState::Completed);
    assert_eq!(stored.artifacts.len(), 1);
    assert_eq!(stored.generation, task.generation);
}

/// Reports working, then waits to be let go before completing.
struct Stepping {
    go: Arc<Notify>,
    fail_store_first: Option<Arc<RecordingStore>>,
    outcome: Arc<Mutex<Option<Result<(), A2aError>>>>,
}

#[async_trait]
impl AgentExecutor for Stepping {
    async fn execute(&self, _ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
        if let Some(store) = &self.fail_store_first {
            store.fail_next_events.store(true, Ordering::SeqCst);
        }
        events.working().await?;
        self.go.notified().await;
        let next = events.artifact(a2a_protocol_types::Artifact::new(
            "a-1",
            vec![a2a_protocol_types::Part::text("x")],
        ));
        let next = next.await;
        *self.outcome.lock().unwrap() = Some(next.clone());
        next?;
        events.complete(None).await
    }
}

/// Starts `agent`'s turn on `store` and returns the task at once, leaving the turn running.
async fn start_stepping(agent: Stepping, store: &Arc<RecordingStore>) -> Task {
    let handler = RequestHandler::builder(agent)
        .with_store(store.clone())
        .build();
    let mut request = SendMessageRequest::new(Message::user_text("hi"));
    request.configuration = Some(a2a_protocol_types::SendMessageConfiguration {
        return_immediately: true,
        ..Default::default()
    });
    task_of(
        handler
            .send_message(request, &CallContext::default())
            .await
            .unwrap(),
    )
}

#[tokio::test(flavor = "current_thread")]
async fn an_event_followed_by_nothing_is_stored_without_waiting_for_the_next() {
    let store = Arc::new(RecordingStore::default());
    let go = Arc::new(Notify::new());
    let agent = Stepping {
        go: go.clone(),
        fail_store_first: None,
        outcome: Arc::default(),
    };
    let task = start_stepping(agent, &store).await;
    // The agent now waits after reporting working; that event is written all the same.
    for _ in 0..1000 {
        if store.events_per_write().len() == 2 {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(store.events_per_write(), vec![0, 1]);
    let stored = store.get("", &task.id).await.unwrap().unwrap();
    assert_eq!(stored.status.state, TaskState::Working);
    go.notify_one();
    for _ in 0..1000 {
        if store.get("", &task.id).await.unwrap().unwrap().status.state == TaskState::Completed {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(store.events_per_write(), vec![0, 1, 2]);
}

#[tokio::test(flavor = "current_thread")]
async fn a_deferred_write_that_fails_is_reported_to_the_next_call() {
    let store = Arc::new(RecordingStore::default());
    let go = Arc::new(Notify::new());
    let outcome = Arc::new(Mutex::new(None));
    let agent = Stepping {
        go: go.clone(),
        fail_store_first: Some(store.clone()),
        outcome: outcome.clone(),
    };
    let task = start_stepping(agent, &store).await;
    // Let the deferred write of "working" run (and fail), then let the agent go on.
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    go.notify_one();
    for _ in 0..1000 {
        if outcome.lock().unwrap().is_some()
            && store
                .get("", &task.id)
                .await
                .unwrap()
                .unwrap()
                .status
                .state
                .is_terminal()
        {
            break;
        }
        tokio::task::yield_now().await;
    }
    let reported = outcome.lock().unwrap().clone().expect("the agent went on");
    let error = reported.expect_err("the next call reports the lost events");
    assert!(
        error.message.contains("not recorded") && error.message.contains("busy"),
        "{}",
        error.message
    );
    // The turn ended with the error, and the task is failed in the store, not left working.
    let stored = store.get("", &task.id).await.unwrap().unwrap();
    assert_eq!(stored.status.state, TaskState::Failed);
    assert!(
        stored.artifacts.is_empty(),
        "the refused artifact was not applied"
    );
}
