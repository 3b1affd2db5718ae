//! The agent's side of the framework: [`AgentExecutor`] does the work, given a
//! [`RequestContext`], and reports through an [`EventSink`].

use a2a_protocol_types::{A2aError, ContextId, Message, Task, TaskId};
use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

pub use crate::runtime::EventSink;

/// Who is calling, as established by the server's authentication (not by anything the client
/// merely claims in the body).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CallerIdentity(pub String);

/// Everything an executor knows about one turn of a task.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RequestContext {
    /// The message that started this turn.
    pub message: Message,
    /// The task this turn works on (new, or the one the message follows up).
    pub task_id: TaskId,
    /// The task's context.
    pub context_id: ContextId,
    /// The request's tenant; empty for none.
    pub tenant: String,
    /// The authenticated caller, if the server knows one.
    pub caller: Option<CallerIdentity>,
    /// Extension URIs the client activated (the `A2A-Extensions` header).
    pub extensions: Vec<String>,
    /// The stored task, for a follow-up; `None` for a new task.
    pub task: Option<Task>,
    /// Whether the client is streaming this turn.
    pub streaming: bool,
    /// Fires when the task is canceled (or its budget's time runs out); long work should stop
    /// soon after.
    pub cancellation: CancellationToken,
    /// The budget granted to this turn (the budget extension), if any. Its time is enforced by
    /// the framework; report metered spending with [`EventSink::spend`].
    pub budget: Option<a2a_protocol_types::budget::BudgetGrant>,
}

impl RequestContext {
    /// Whether the client activated the extension `uri`.
    pub fn activated(&self, uri: &str) -> bool {
        self.extensions.iter().any(|e| e == uri)
    }
}

/// What an executor knows when asked to cancel a task.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CancelContext {
    /// The task, as stored when the cancel arrived.
    pub task: Task,
    /// The request's tenant; empty for none.
    pub tenant: String,
    /// The authenticated caller, if the server knows one.
    pub caller: Option<CallerIdentity>,
}

/// An agent: does the work of each turn and reports it as events.
///
/// `execute` runs on its own tokio task, so a client that disconnects does not stop it. It
/// should settle the task (complete, fail, reject, ask for input, or reply with a message);
/// a turn that returns without settling leaves the task failed, and an `Err` or a panic fails
/// it with the error's message.
#[async_trait]
pub trait AgentExecutor: Send + Sync + 'static {
    /// Does one turn of work.
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError>;

    /// Stops a task. The default marks it canceled; the running turn's
    /// [`RequestContext::cancellation`] has already fired.
    async fn cancel(&self, ctx: CancelContext, events: EventSink) -> Result<(), A2aError> {
        let _ = ctx;
        events.cancel().await
    }
}
