//! [`EventSink`]: how an executor reports progress, the agent's API. Every event is checked
//! against the task's lifecycle, then handed to the turn writer (`turn_writer.rs`), which
//! persists it and then broadcasts it to the task's streams, in that order.

use std::sync::Arc;

use a2a_protocol_types::{
    A2aError, Artifact, ContextId, Message, MessageRole, Part, Task, TaskId, TaskState, TaskStatus,
};

use super::budget::BudgetState;
use super::lifecycle;
use super::live::LiveTask;
use super::turn_writer::TurnWriter;
use crate::store::TaskStore;

/// Where an executor publishes a task's status changes, artifacts and direct replies.
///
/// A call that settles the task (completes, fails, rejects, cancels it, or asks for input)
/// returns once that event and every one before it are stored and broadcast. Other events
/// are accepted at once and stored right after, together with any that follow before the
/// store is free, so a fast turn costs one write rather than one per event; streams see an
/// event only once it is stored. A call returns an error when its event breaks the task's
/// lifecycle (say, an update after the task finished), when the store failed, or when events
/// accepted earlier could not be stored. Cheap to clone.
///
/// ```
/// use a2a_protocol_types::{Artifact, Part};
/// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
/// events.working().await?;
/// events.artifact(Artifact::new("a-1", vec![Part::text(ctx.message.text())])).await?;
/// events.complete(None).await
/// # }).unwrap();
/// # assert_eq!(task.status.state, a2a_protocol_types::TaskState::Completed);
/// # assert_eq!(task.artifacts[0].parts[0].as_text(), Some("hi"));
/// ```
#[derive(Clone)]
pub struct EventSink {
    writer: TurnWriter,
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSink")
            .field("task_id", &self.writer.live.task_id)
            .finish_non_exhaustive()
    }
}

impl EventSink {
    pub(crate) fn new(
        live: Arc<LiveTask>,
        store: Arc<dyn TaskStore>,
        context_id: ContextId,
        owner: Option<Arc<str>>,
    ) -> Self {
        Self {
            writer: TurnWriter::new(live, store, context_id, owner),
        }
    }

    pub(crate) fn with_budget(mut self, budget: Option<Arc<BudgetState>>) -> Self {
        self.writer.budget = budget;
        self
    }

    /// The task this sink reports on.
    ///
    /// ```
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// assert_eq!(events.task_id(), &ctx.task_id);
    /// events.complete(None).await
    /// # }).unwrap();
    /// # assert_eq!(task.status.state, a2a_protocol_types::TaskState::Completed);
    /// ```
    pub fn task_id(&self) -> &TaskId {
        &self.writer.live.task_id
    }

    /// The task's context.
    ///
    /// ```
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// assert_eq!(events.context_id(), &ctx.context_id);
    /// events.complete(None).await
    /// # }).unwrap();
    /// # assert!(!task.context_id.is_empty());
    /// ```
    pub fn context_id(&self) -> &ContextId {
        &self.writer.context_id
    }

    /// An agent message with one text part, addressed to this task.
    ///
    /// ```
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// let message = events.agent_message("done");
    /// assert_eq!(message.task_id.as_ref(), Some(events.task_id()));
    /// events.complete(Some(message)).await
    /// # }).unwrap();
    /// # assert_eq!(task.status.message.unwrap().text(), "done");
    /// ```
    pub fn agent_message(&self, text: impl Into<String>) -> Message {
        self.agent_message_with_parts(vec![Part::text(text)])
    }

    /// An agent message with the given parts, addressed to this task.
    ///
    /// ```
    /// use a2a_protocol_types::Part;
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// let message = events.agent_message_with_parts(vec![Part::text("see"), Part::url("https://x.example/r")]);
    /// events.complete(Some(message)).await
    /// # }).unwrap();
    /// # assert_eq!(task.status.message.unwrap().parts.len(), 2);
    /// ```
    pub fn agent_message_with_parts(&self, parts: Vec<Part>) -> Message {
        Message::new(MessageRole::Agent, parts)
            .with_context_id(self.writer.context_id.clone())
            .with_task_id(self.writer.live.task_id.clone())
    }

    /// The task as it stands.
    ///
    /// ```
    /// use a2a_protocol_types::TaskState;
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// events.working().await?;
    /// assert_eq!(events.task().await.status.state, TaskState::Working);
    /// events.complete(None).await
    /// # }).unwrap();
    /// # assert_eq!(task.status.state, TaskState::Completed);
    /// ```
    pub async fn task(&self) -> Task {
        self.writer.live.snapshot().await
    }

    /// Records `amount` spent on `meter` against the turn's budget (a no-op without one).
    /// Spending past a granted meter fails the task as budget-exhausted and returns the error
    /// the executor should stop with.
    ///
    /// ```
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// events.spend("tokens", 40).await?; // a no-op without a budget
    /// events.complete(None).await
    /// # }).unwrap();
    /// # assert_eq!(task.status.state, a2a_protocol_types::TaskState::Completed);
    /// ```
    pub async fn spend(&self, meter: &str, amount: u64) -> Result<(), A2aError> {
        let Some(budget) = &self.writer.budget else {
            return Ok(());
        };
        match budget.spend(meter, amount) {
            None => Ok(()),
            Some(meter) => Err(self.exhaust(&meter).await),
        }
    }

    /// The budget report as it stands, when the turn has a budget.
    ///
    /// ```
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// assert!(events.budget().is_none(), "this turn was granted no budget");
    /// events.complete(None).await
    /// # }).unwrap();
    /// # assert_eq!(task.status.state, a2a_protocol_types::TaskState::Completed);
    /// ```
    pub fn budget(&self) -> Option<a2a_protocol_types::budget::BudgetReport> {
        self.writer.budget.as_ref().map(|b| b.report())
    }

    /// Fails the task because `what` ("time" or a meter) ran out; returns the error to stop with.
    pub(crate) async fn exhaust(&self, what: &str) -> A2aError {
        if let Some(budget) = &self.writer.budget {
            budget.exhaust(what);
        }
        let reason = if what == "time" {
            "budget exhausted: the granted time ran out before the work was done".to_owned()
        } else {
            format!("budget exhausted: the granted {what:?} ran out before the work was done")
        };
        if let Err(error) = self.fail(reason.clone()).await {
            tracing::debug!(%error, "the task settled before its budget ran out");
        }
        A2aError::new(a2a_protocol_types::ErrorKind::Internal, reason)
    }

    /// Moves the task to `state`, optionally with a message for the client.
    ///
    /// ```
    /// use a2a_protocol_types::TaskState;
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// events.status(TaskState::Working, None).await?;
    /// events.status(TaskState::Completed, Some(events.agent_message("ok"))).await
    /// # }).unwrap();
    /// # assert_eq!(task.status.state, TaskState::Completed);
    /// ```
    pub async fn status(&self, state: TaskState, message: Option<Message>) -> Result<(), A2aError> {
        let mut status = TaskStatus::new(state);
        status.message = message;
        self.writer
            .publish(|task| lifecycle::apply_status(task, status.clone()))
            .await
    }

    /// Marks the task working.
    ///
    /// ```
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// events.working().await?;
    /// events.complete(None).await
    /// # }).unwrap();
    /// # assert_eq!(task.status.state, a2a_protocol_types::TaskState::Completed);
    /// ```
    pub async fn working(&self) -> Result<(), A2aError> {
        self.status(TaskState::Working, None).await
    }

    /// Completes the task, optionally with a final message.
    ///
    /// ```
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// events.complete(Some(events.agent_message("all done"))).await?;
    /// assert!(events.working().await.is_err(), "nothing follows the end");
    /// Ok(())
    /// # }).unwrap();
    /// # assert_eq!(task.status.state, a2a_protocol_types::TaskState::Completed);
    /// ```
    pub async fn complete(&self, message: Option<Message>) -> Result<(), A2aError> {
        self.status(TaskState::Completed, message).await
    }

    /// Fails the task, telling the client why.
    ///
    /// ```
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// events.fail("the upstream service is down").await
    /// # }).unwrap();
    /// # assert_eq!(task.status.state, a2a_protocol_types::TaskState::Failed);
    /// # assert_eq!(task.status.message.unwrap().text(), "the upstream service is down");
    /// ```
    pub async fn fail(&self, reason: impl Into<String>) -> Result<(), A2aError> {
        let message = self.agent_message(reason);
        self.status(TaskState::Failed, Some(message)).await
    }

    /// Rejects the task, telling the client why.
    ///
    /// ```
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// events.reject("I only translate").await
    /// # }).unwrap();
    /// # assert_eq!(task.status.state, a2a_protocol_types::TaskState::Rejected);
    /// ```
    pub async fn reject(&self, reason: impl Into<String>) -> Result<(), A2aError> {
        let message = self.agent_message(reason);
        self.status(TaskState::Rejected, Some(message)).await
    }

    /// Asks the client for more input; the task waits for a follow-up message.
    ///
    /// ```
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// events.require_input("Which language?").await
    /// # }).unwrap();
    /// # assert_eq!(task.status.state, a2a_protocol_types::TaskState::InputRequired);
    /// ```
    pub async fn require_input(&self, question: impl Into<String>) -> Result<(), A2aError> {
        let message = self.agent_message(question);
        self.status(TaskState::InputRequired, Some(message)).await
    }

    /// Marks the task canceled.
    ///
    /// ```
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// events.working().await?;
    /// events.cancel().await
    /// # }).unwrap();
    /// # assert_eq!(task.status.state, a2a_protocol_types::TaskState::Canceled);
    /// ```
    pub async fn cancel(&self) -> Result<(), A2aError> {
        self.status(TaskState::Canceled, None).await
    }

    /// Adds an artifact, or replaces the one with the same id.
    ///
    /// ```
    /// use a2a_protocol_types::{Artifact, Part};
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// events.artifact(Artifact::new("r", vec![Part::text("draft")])).await?;
    /// events.artifact(Artifact::new("r", vec![Part::text("final")])).await?;
    /// events.complete(None).await
    /// # }).unwrap();
    /// # assert_eq!(task.artifacts.len(), 1, "the same id replaces");
    /// # assert_eq!(task.artifacts[0].parts[0].as_text(), Some("final"));
    /// ```
    pub async fn artifact(&self, artifact: Artifact) -> Result<(), A2aError> {
        self.writer
            .publish(|task| lifecycle::apply_artifact(task, artifact.clone(), false, true))
            .await
    }

    /// Appends a chunk to the artifact with the same id (creating it on the first chunk);
    /// `last_chunk` marks the final one.
    ///
    /// ```
    /// use a2a_protocol_types::{Artifact, Part};
    /// # let task = a2a_protocol_server::doctest::turn(|ctx, events| async move {
    /// events.artifact_chunk(Artifact::new("r", vec![Part::text("one ")]), false).await?;
    /// events.artifact_chunk(Artifact::new("r", vec![Part::text("two")]), true).await?;
    /// events.complete(None).await
    /// # }).unwrap();
    /// # assert_eq!(task.artifacts[0].parts.len(), 2, "chunks append");
    /// ```
    pub async fn artifact_chunk(&self, chunk: Artifact, last_chunk: bool) -> Result<(), A2aError> {
        self.writer
            .publish(|task| lifecycle::apply_artifact(task, chunk.clone(), true, last_chunk))
            .await
    }

    /// Answers with a direct message instead of a task. Only before any other event.
    ///
    /// ```
    /// use a2a_protocol_server::{AgentExecutor, EventSink, RequestContext};
    /// use a2a_protocol_types::A2aError;
    /// # use a2a_protocol_server::{CallContext, RequestHandler};
    /// use a2a_protocol_types::Message;
    /// # use a2a_protocol_types::{SendMessageRequest, SendMessageResponse};
    ///
    /// struct Agent;
    ///
    /// #[async_trait::async_trait]
    /// impl AgentExecutor for Agent {
    ///     async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
    ///         events.reply(Message::agent_text("42")).await
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # let handler = RequestHandler::builder(Agent).build();
    /// # let answer = handler.send_message(SendMessageRequest::new(Message::user_text("hi")), &CallContext::default()).await.unwrap();
    /// # let SendMessageResponse::Message(reply) = answer else { panic!("a reply") };
    /// # assert_eq!(reply.text(), "42");
    /// # }
    /// ```
    pub async fn reply(&self, message: Message) -> Result<(), A2aError> {
        self.writer
            .publish(|task| lifecycle::apply_reply(task, message.clone()))
            .await
    }

    /// Whether the store failed to record an event of this turn: what the agent did after its
    /// last recorded event is lost.
    pub(crate) fn lost_to_the_store(&self) -> bool {
        self.writer.lost_to_the_store()
    }

    /// Fails the task unless it already settled; used when a turn ends badly.
    pub(crate) async fn settle_as_failed(&self, reason: &str) {
        if self.writer.live.is_settled().await {
            return;
        }
        // A failed deferred write is reported to the first call, which then writes nothing:
        // the second writes the failure.
        let failed = match self.fail(reason).await {
            Err(_) if !self.writer.live.is_settled().await => self.fail(reason).await,
            other => other,
        };
        if let Err(error) = failed {
            // Settled meanwhile by another hand (a cancel, a shutdown, a recovery): fine.
            if self.writer.live.is_settled().await {
                tracing::debug!(task_id = %self.writer.live.task_id, %error, "the task settled before it could be marked failed");
            } else {
                tracing::warn!(task_id = %self.writer.live.task_id, %error, "could not mark the task failed");
            }
        }
    }
}
