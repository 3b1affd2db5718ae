//! `SubscribeToTask`: a task's events until it is terminal, across its turns.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use a2a_protocol_types::{A2aError, StreamResponse, SubscribeToTaskRequest, Task};
use futures::{StreamExt, stream};

use super::{CallContext, EventStream, Inner, RequestHandler, validate};
use crate::runtime::{at_terminal, changes, follow_live_until};

/// How often a subscriber between turns looks at the store, at first and at most. A turn that
/// starts in this process wakes it at once; the store shows turns run by other processes.
const FIRST_POLL: Duration = Duration::from_millis(50);
const MAX_POLL: Duration = Duration::from_secs(1);

impl RequestHandler {
    /// `SubscribeToTask`: the task as it stands, then its events until it is terminal. A task
    /// waiting for input is followed on through the turns its follow-up messages start.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use futures::StreamExt;
    ///
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::{CallContext, RequestHandler};
    /// use a2a_protocol_types::{
    ///     Message, SendMessageConfiguration, SendMessageRequest, SendMessageResponse, StreamResponse,
    ///     SubscribeToTaskRequest,
    /// };
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_types::A2aError> {
    /// let handler = RequestHandler::builder(EchoAgent::slow(Duration::from_millis(50))).build();
    /// let ctx = CallContext::default();
    /// let mut request = SendMessageRequest::new(Message::user_text("hi"));
    /// request.configuration = Some(SendMessageConfiguration { return_immediately: true, ..Default::default() });
    /// let SendMessageResponse::Task(task) = handler.send_message(request, &ctx).await? else {
    ///     panic!("a task");
    /// };
    /// let events = handler
    ///     .subscribe_to_task(SubscribeToTaskRequest { id: task.id, ..Default::default() }, &ctx)
    ///     .await?;
    /// let events: Vec<StreamResponse> = events.collect().await;
    /// assert!(matches!(events[0], StreamResponse::Task(_)), "the task as it stands comes first");
    /// let StreamResponse::StatusUpdate(last) = events.last().unwrap() else { panic!("a status") };
    /// assert!(last.status.state.is_terminal());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn subscribe_to_task(
        &self,
        request: SubscribeToTaskRequest,
        _ctx: &CallContext,
    ) -> Result<EventStream, A2aError> {
        validate::tenant(&request.tenant)?;
        let task = self.load(&request.tenant, &request.id).await?;
        if task.status.state.is_terminal() {
            return Err(A2aError::unsupported_operation(format!(
                "task {} is {} and has no more updates; read it with GetTask",
                task.id, task.status.state
            )));
        }
        Ok(follow_to_end(Arc::clone(&self.inner), request.tenant, task).await)
    }
}

enum Phase {
    /// Following a turn running in this process.
    Live(EventStream),
    /// Between turns, or following a turn run by another process through the store.
    Idle(Duration),
    Done,
}

struct Subscription {
    inner: Arc<Inner>,
    tenant: String,
    /// The task as the subscriber last saw it.
    last: Task,
    pending: VecDeque<StreamResponse>,
    phase: Phase,
}

/// The task as it stands, then its events until it is terminal.
async fn follow_to_end(inner: Arc<Inner>, tenant: String, stored: Task) -> EventStream {
    let mut subscription = Subscription {
        inner,
        tenant,
        last: stored,
        pending: VecDeque::new(),
        phase: Phase::Idle(FIRST_POLL),
    };
    let first = match subscription
        .inner
        .registry
        .get(&subscription.tenant, &subscription.last.id)
    {
        Some(live) => {
            let (snapshot, events) = live.subscribe().await;
            subscription.last = snapshot;
            subscription.phase = Phase::Live(follow_live_until(live, events, at_terminal));
            StreamResponse::Task(subscription.last.clone())
        }
        None => StreamResponse::Task(subscription.last.clone()),
    };
    if at_terminal(&first) {
        subscription.phase = Phase::Done;
    }
    subscription.pending.push_back(first);
    stream::unfold(subscription, |mut sub| async move {
        let event = sub.next().await?;
        Some((event, sub))
    })
    .boxed()
}

impl Subscription {
    async fn next(&mut self) -> Option<StreamResponse> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Some(event);
            }
            match &mut self.phase {
                Phase::Done => return None,
                Phase::Live(events) => match events.next().await {
                    Some(event) => {
                        self.observe(&event);
                        if at_terminal(&event) {
                            self.phase = Phase::Done;
                        }
                        return Some(event);
                    }
                    None => self.turn_ended().await,
                },
                Phase::Idle(delay) => {
                    let delay = *delay;
                    self.wait_between_turns(delay).await;
                }
            }
        }
    }

    /// Keeps `last` current with what was forwarded.
    fn observe(&mut self, event: &StreamResponse) {
        match event {
            StreamResponse::Task(task) => self.last = task.clone(),
            StreamResponse::StatusUpdate(update) => self.last.status = update.status.clone(),
            StreamResponse::ArtifactUpdate(_) | StreamResponse::Message(_) => {}
        }
    }

    /// The live turn ended without finishing the task: it waits for input, or it failed to
    /// save its last event. What the store holds says which.
    async fn turn_ended(&mut self) {
        self.phase = Phase::Idle(FIRST_POLL);
        match self.inner.store.get(&self.tenant, &self.last.id).await {
            Ok(Some(current)) => self.catch_up(current),
            Ok(None) => self.phase = Phase::Done,
            Err(error) => {
                tracing::warn!(task_id = %self.last.id, %error, "reading a task for its subscriber failed");
            }
        }
    }

    /// Waits for a turn in this process or a change in the store, whichever comes first.
    async fn wait_between_turns(&mut self, delay: Duration) {
        let inner = Arc::clone(&self.inner);
        let became_live = inner.registry.next_live();
        tokio::pin!(became_live);
        became_live.as_mut().enable();
        if let Some(live) = inner.registry.get(&self.tenant, &self.last.id) {
            let (snapshot, events) = live.subscribe().await;
            self.catch_up(snapshot);
            if !matches!(self.phase, Phase::Done) {
                self.phase = Phase::Live(follow_live_until(live, events, at_terminal));
            }
            return;
        }
        tokio::select! {
            () = became_live => return,
            () = tokio::time::sleep(delay) => {}
        }
        self.phase = Phase::Idle((delay * 2).min(MAX_POLL));
        match self.inner.store.get(&self.tenant, &self.last.id).await {
            Ok(Some(current)) => {
                if current != self.last {
                    self.phase = Phase::Idle(FIRST_POLL);
                }
                self.catch_up(current);
            }
            Ok(None) => self.phase = Phase::Done,
            Err(error) => {
                tracing::warn!(task_id = %self.last.id, %error, "polling a task for its subscriber failed");
            }
        }
    }

    /// Queues the events that bring the subscriber from `last` to `current`, and ends the
    /// subscription once the task is terminal.
    fn catch_up(&mut self, current: Task) {
        let terminal = current.status.state.is_terminal();
        self.pending.extend(changes(&self.last, &current));
        self.last = current;
        if terminal {
            self.phase = Phase::Done;
        }
    }
}
