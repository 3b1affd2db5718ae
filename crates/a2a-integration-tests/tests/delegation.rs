//! Delegation end to end: a parent agent on one server delegates to a child agent on another.

use std::time::Duration;

use a2a_integration_tests::support::{CountingAgent, Running, serve};
use a2a_protocol_client::delegation::{Delegation, DelegationOutcome, ParentBudget};
use a2a_protocol_client::{A2aClient, ClientBuilder, RetryPolicy};
use a2a_protocol_server::{AgentExecutor, EventSink, RequestContext, RequestHandler};
use a2a_protocol_types::budget::BudgetGrant;
use a2a_protocol_types::lease::Lease;
use a2a_protocol_types::trace::{self, TraceContext};
use a2a_protocol_types::{
    A2aError, GetTaskRequest, ListTasksRequest, Message, Part, SendMessageConfiguration,
    SendMessageRequest, SendMessageResponse, Task, TaskState,
};
use a2a_test_kit::fault_proxy::{Fault, FaultProxy};
use async_trait::async_trait;

/// What the parent does with its child.
#[derive(Clone, Copy)]
enum Plan {
    /// Start, wait, and answer with the child's outcome.
    Wait,
    /// Start with a 2 s lease, then finish without renewing it.
    LeaseThenGoSilent,
    /// Start with a 2 s lease and wait, renewing it.
    LeaseAndWait,
    /// Grant the child 300 ms out of a 10 s budget and wait.
    Budget,
    /// Start, then hold the delegation until the parent is canceled.
    HoldUntilCanceled,
    /// Start with a 2 s lease and a 10 s budget (the builder) and wait, renewing the lease.
    LeaseAndBudget,
    /// Set a 2 s lease on the message by hand, start with a 10 s budget, and wait.
    HandLeaseThenBudget,
}

#[derive(Clone)]
struct ParentAgent {
    child: A2aClient,
    plan: Plan,
}

fn describe(outcome: &DelegationOutcome) -> &'static str {
    match outcome {
        DelegationOutcome::Completed(_) => "completed",
        DelegationOutcome::Failed(_) => "failed",
        DelegationOutcome::BudgetExhausted(_) => "budget-exhausted",
        DelegationOutcome::Canceled(_) => "canceled",
        DelegationOutcome::Rejected(_) => "rejected",
        DelegationOutcome::InputRequired(_) => "input-required",
        DelegationOutcome::AuthRequired(_) => "auth-required",
        DelegationOutcome::Replied(_) => "replied",
        _ => "other",
    }
}

#[async_trait]
impl AgentExecutor for ParentAgent {
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
        events.working().await?;
        let ask = Message::user_text(ctx.message.text());
        let failed = |e: a2a_protocol_client::ClientError| {
            A2aError::internal(format!("delegation failed: {e}"))
        };
        let lease = Lease::new(Duration::from_secs(2));
        let (outcome, spend, child_id) = match self.plan {
            Plan::Wait => {
                let mut child = Delegation::start(&self.child, ask).await.map_err(failed)?;
                let outcome = child.wait().await.map_err(failed)?;
                (outcome, None, child.task_id().cloned())
            }
            Plan::LeaseThenGoSilent => {
                let child = Delegation::start_leased(&self.child, ask, lease)
                    .await
                    .map_err(failed)?;
                let id = child.detach();
                let text = format!(
                    "left {} behind",
                    id.map(|i| i.to_string()).unwrap_or_default()
                );
                return events.complete(Some(events.agent_message(text))).await;
            }
            Plan::LeaseAndWait => {
                let mut child = Delegation::start_leased(&self.child, ask, lease)
                    .await
                    .map_err(failed)?;
                let outcome = child.wait().await.map_err(failed)?;
                (outcome, None, child.task_id().cloned())
            }
            Plan::Budget => {
                let mut mine = ParentBudget::new(&BudgetGrant::with_time(Duration::from_secs(10)));
                let grant = mine.carve(
                    &BudgetGrant::with_time(Duration::from_millis(300)),
                    Duration::from_secs(1),
                );
                let mut child = Delegation::start_budgeted(&self.child, ask, grant)
                    .await
                    .map_err(failed)?;
                let outcome = child.wait().await.map_err(failed)?;
                (outcome, child.spend(), child.task_id().cloned())
            }
            Plan::LeaseAndBudget => {
                let mut child = Delegation::builder(ask)
                    .with_lease(lease)
                    .with_budget(BudgetGrant::with_time(Duration::from_secs(10)))
                    .start(&self.child)
                    .await
                    .map_err(failed)?;
                let outcome = child.wait().await.map_err(failed)?;
                (outcome, child.spend(), child.task_id().cloned())
            }
            Plan::HandLeaseThenBudget => {
                let mut ask = ask;
                a2a_protocol_types::lease::set_lease(&mut ask, lease)
                    .map_err(|e| A2aError::internal(e.to_string()))?;
                let grant = BudgetGrant::with_time(Duration::from_secs(10));
                let mut child = Delegation::start_budgeted(&self.child, ask, grant)
                    .await
                    .map_err(failed)?;
                let outcome = child.wait().await.map_err(failed)?;
                (outcome, child.spend(), child.task_id().cloned())
            }
            Plan::HoldUntilCanceled => {
                let child = Delegation::start(&self.child, ask).await.map_err(failed)?;
                events
                    .artifact(a2a_protocol_types::Artifact::new(
                        "child",
                        vec![Part::text(
                            child.task_id().map(|i| i.to_string()).unwrap_or_default(),
                        )],
                    ))
                    .await?;
                ctx.cancellation.cancelled().await;
                drop(child);
                return Ok(());
            }
        };
        let report = serde_json::json!({
            "outcome": describe(&outcome),
            "child": child_id.map(|i| i.to_string()),
            "spend": spend,
        });
        events
            .artifact(a2a_protocol_types::Artifact::new(
                "report",
                vec![Part::data(report)],
            ))
            .await?;
        events.complete(None).await
    }
}

struct Setup {
    child_agent: CountingAgent,
    child: Running,
    parent: Running,
    proxy: Option<FaultProxy>,
}

async fn setup(plan: Plan, child_work: Duration, faults: &[Fault]) -> Setup {
    let child_agent = CountingAgent::with_delay(child_work);
    let child = serve(
        RequestHandler::builder(child_agent.clone())
            .with_leases(Duration::from_secs(60))
            .build(),
    )
    .await;
    let (child_url, proxy) = if faults.is_empty() {
        (child.url(), None)
    } else {
        let proxy = FaultProxy::start(child.addr).await.expect("proxy");
        (proxy.url(), Some(proxy))
    };
    // Discovered through the proxy, so the card's interfaces point at it.
    let child_client = ClientBuilder::discover(&child_url)
        .await
        .expect("the child's card")
        .with_retry_policy(RetryPolicy::default().with_initial_backoff(Duration::from_millis(20)))
        .with_http_client(
            reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .build()
                .expect("http"),
        )
        .build()
        .expect("child client");
    assert!(child_client.honours_idempotency());
    if let Some(proxy) = &proxy {
        proxy.plan(faults);
    }
    let parent = serve(
        RequestHandler::builder(ParentAgent {
            child: child_client,
            plan,
        })
        .build(),
    )
    .await;
    Setup {
        child_agent,
        child,
        parent,
        proxy,
    }
}

async fn ask_parent(setup: &Setup, immediate: bool) -> Task {
    let parent = ClientBuilder::new(setup.parent.url())
        .build()
        .expect("client");
    let mut request = SendMessageRequest::new(Message::user_text("do the thing"));
    request.configuration = Some(SendMessageConfiguration {
        return_immediately: immediate,
        ..SendMessageConfiguration::default()
    });
    match parent.send_message(request).await.expect("parent answered") {
        SendMessageResponse::Task(task) => task,
        SendMessageResponse::Message(m) => panic!("a task, got {m:?}"),
    }
}

fn report(task: &Task) -> serde_json::Value {
    let artifact = task
        .artifacts
        .iter()
        .find(|a| a.artifact_id == "report")
        .expect("a report");
    match &artifact.parts[0].content {
        a2a_protocol_types::PartContent::Data(value) => value.clone(),
        other => panic!("data, got {other:?}"),
    }
}

async fn child_tasks(setup: &Setup) -> Vec<Task> {
    ClientBuilder::new(setup.child.url())
        .build()
        .expect("client")
        .list_tasks(ListTasksRequest::default())
        .await
        .expect("listed")
        .tasks
}

async fn child_task(setup: &Setup, id: &str) -> Task {
    ClientBuilder::new(setup.child.url())
        .build()
        .expect("client")
        .get_task(GetTaskRequest {
            id: id.into(),
            ..GetTaskRequest::default()
        })
        .await
        .expect("the child task")
}

/// Polls the child until `done` says so (bounded).
async fn child_until(setup: &Setup, id: &str, done: impl Fn(&Task) -> bool) -> Task {
    for _ in 0..400 {
        let task = child_task(setup, id).await;
        if done(&task) {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    child_task(setup, id).await
}

#[tokio::test]
async fn a_parent_whose_start_fails_ambiguously_reaches_the_same_child() {
    let setup = setup(
        Plan::Wait,
        Duration::from_millis(100),
        &[Fault::CutBeforeResponse],
    )
    .await;
    let task = ask_parent(&setup, false).await;
    assert_eq!(task.status.state, TaskState::Completed, "{task:?}");
    assert_eq!(report(&task)["outcome"], "completed");
    assert!(
        setup.proxy.as_ref().expect("proxy").connections() >= 2,
        "the start was cut and retried"
    );
    assert_eq!(child_tasks(&setup).await.len(), 1, "one child task");
    assert_eq!(setup.child_agent.runs(), 1, "the child ran once");
}

#[tokio::test]
async fn a_parent_that_goes_silent_past_its_lease_has_its_child_canceled() {
    let setup = setup(Plan::LeaseThenGoSilent, Duration::from_secs(30), &[]).await;
    let task = ask_parent(&setup, false).await;
    let text = task
        .status
        .message
        .as_ref()
        .map(Message::text)
        .unwrap_or_default();
    let child_id = text
        .trim_start_matches("left ")
        .trim_end_matches(" behind")
        .to_owned();
    let child = child_until(&setup, &child_id, |t| t.status.state.is_terminal()).await;
    assert_eq!(child.status.state, TaskState::Canceled, "{child:?}");
}

#[tokio::test]
async fn a_parent_that_keeps_renewing_keeps_its_child() {
    // The child works more than twice as long as the lease.
    let setup = setup(Plan::LeaseAndWait, Duration::from_secs(5), &[]).await;
    let task = ask_parent(&setup, false).await;
    assert_eq!(report(&task)["outcome"], "completed", "{task:?}");
    let child_id = report(&task)["child"]
        .as_str()
        .expect("child id")
        .to_owned();
    assert_eq!(
        child_task(&setup, &child_id).await.status.state,
        TaskState::Completed
    );
}

#[tokio::test]
async fn a_lease_and_a_budget_together_keep_a_child_that_outlives_its_lease_ttl() {
    // The child works 3 s, past its 2 s lease: only renewal keeps it; the budget bounds it.
    for plan in [Plan::LeaseAndBudget, Plan::HandLeaseThenBudget] {
        let setup = setup(plan, Duration::from_secs(3), &[]).await;
        let task = ask_parent(&setup, false).await;
        let report = report(&task);
        println!("{report}");
        assert_eq!(report["outcome"], "completed", "{task:?}");
        assert!(
            report["spend"].is_object(),
            "the budget was reported: {report}"
        );
        assert_eq!(setup.child_agent.runs(), 1);
    }
}

#[tokio::test]
async fn a_child_granted_too_little_time_ends_budget_exhausted_and_the_parent_sees_the_spend() {
    let setup = setup(Plan::Budget, Duration::from_secs(30), &[]).await;
    let task = ask_parent(&setup, false).await;
    let report = report(&task);
    assert_eq!(report["outcome"], "budget-exhausted", "{report}");
    assert_eq!(report["spend"]["exhausted"], "time");
    assert!(
        report["spend"]["spentMs"].as_u64().expect("spent") >= 300,
        "{report}"
    );
    let child_id = report["child"].as_str().expect("child id").to_owned();
    let child = child_task(&setup, &child_id).await;
    assert_eq!(child.status.state, TaskState::Failed);
    let reason = child
        .status
        .message
        .as_ref()
        .map(Message::text)
        .unwrap_or_default();
    assert!(reason.contains("budget exhausted"), "{reason}");
}

#[tokio::test]
async fn dropping_a_delegation_cancels_its_unsettled_child() {
    let setup = setup(Plan::HoldUntilCanceled, Duration::from_secs(30), &[]).await;
    let parent_task = ask_parent(&setup, true).await;
    let parent = ClientBuilder::new(setup.parent.url())
        .build()
        .expect("client");
    let mut child_id = String::new();
    for _ in 0..400 {
        let seen = parent
            .get_task(GetTaskRequest {
                id: parent_task.id.clone(),
                ..GetTaskRequest::default()
            })
            .await
            .expect("parent task");
        if let Some(text) = seen.artifacts.first().and_then(|a| a.parts[0].as_text()) {
            child_id = text.to_owned();
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(!child_id.is_empty(), "the parent started a child");
    parent
        .cancel_task(a2a_protocol_types::CancelTaskRequest {
            id: parent_task.id.clone(),
            ..Default::default()
        })
        .await
        .expect("parent canceled");
    let child = child_until(&setup, &child_id, |t| t.status.state.is_terminal()).await;
    assert_eq!(child.status.state, TaskState::Canceled);
}

#[tokio::test]
async fn start_keeps_a_key_the_caller_set_and_adds_none_for_a_peer_not_known_to_honour_keys() {
    let child =
        serve(RequestHandler::builder(CountingAgent::with_delay(Duration::from_millis(1))).build())
            .await;
    let honouring = ClientBuilder::discover(&child.url())
        .await
        .expect("card")
        .build()
        .expect("client");
    let mut message = Message::user_text("hi");
    a2a_protocol_types::idempotency::set_key(&mut message, "caller-chosen-key-0001")
        .expect("valid");
    let kept = Delegation::start(&honouring, message)
        .await
        .expect("started");
    assert_eq!(kept.idempotency_key(), Some("caller-chosen-key-0001"));
    let fresh = Delegation::start(&honouring, Message::user_text("hi"))
        .await
        .expect("started");
    assert_eq!(fresh.idempotency_key().map(str::len), Some(64));
    let bare = ClientBuilder::new(child.url()).build().expect("client");
    let none = Delegation::start(&bare, Message::user_text("hi"))
        .await
        .expect("started");
    assert_eq!(none.idempotency_key(), None);
}

/// A child agent that remembers the trace context each of its turns ran in.
#[derive(Clone, Default)]
struct TraceRecordingAgent {
    seen: std::sync::Arc<std::sync::Mutex<Vec<Option<TraceContext>>>>,
}

#[async_trait]
impl AgentExecutor for TraceRecordingAgent {
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
        self.seen
            .lock()
            .expect("not poisoned")
            .push(ctx.trace.filter(|t| Some(*t) == trace::current()));
        events.complete(None).await
    }
}

#[tokio::test]
async fn a_traceparent_reaches_the_child_agent_through_delegation() {
    let child_agent = TraceRecordingAgent::default();
    let child = serve(RequestHandler::builder(child_agent.clone()).build()).await;
    let child_client = ClientBuilder::discover(&child.url())
        .await
        .expect("the child's card")
        .build()
        .expect("child client");
    let parent = serve(
        RequestHandler::builder(ParentAgent {
            child: child_client,
            plan: Plan::Wait,
        })
        .build(),
    )
    .await;
    let incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let caller = ClientBuilder::new(parent.url())
        .with_header(trace::TRACEPARENT_HEADER, incoming)
        .build()
        .expect("client");
    let answer = caller
        .send_message(SendMessageRequest::new(Message::user_text("do the thing")))
        .await
        .expect("parent answered");
    let SendMessageResponse::Task(task) = answer else {
        panic!("a task, got {answer:?}");
    };
    assert_eq!(report(&task)["outcome"], "completed", "{task:?}");
    let seen = child_agent.seen.lock().expect("not poisoned").clone();
    println!("the child's turns ran in {seen:?}");
    assert_eq!(seen.len(), 1, "one child turn");
    let at_child = seen[0].expect("the child's turn ran as the current trace context");
    let incoming = TraceContext::parse(incoming).expect("valid");
    assert_eq!(
        at_child.trace_id(),
        incoming.trace_id(),
        "one trace, end to end"
    );
    assert_ne!(
        at_child.span_id(),
        incoming.span_id(),
        "each hop is its own span"
    );
}
