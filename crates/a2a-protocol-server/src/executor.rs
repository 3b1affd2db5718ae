//! The agent's side of the framework: [`AgentExecutor`] does the work, given a
//! [`RequestContext`], and reports through an [`EventSink`].

use a2a_protocol_types::{A2aError, ContextId, Message, Task, TaskId};
use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

pub use crate::identity::CallerIdentity;
pub use crate::runtime::EventSink;

/// Everything an executor knows about one turn of a task.
///
/// ```
/// use a2a_protocol_server::{AgentExecutor, EventSink, RequestContext};
/// use a2a_protocol_types::A2aError;
///
/// struct Greeter;
///
/// #[async_trait::async_trait]
/// impl AgentExecutor for Greeter {
///     async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
///         let who = ctx.caller.map_or_else(|| "stranger".to_owned(), |c| c.0);
///         let reply = format!("hello, {who}: you said {:?} in tenant {:?}", ctx.message.text(), ctx.tenant);
///         events.complete(Some(events.agent_message(reply))).await
///     }
/// }
/// ```
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
    /// This turn runs again: the server process that ran it first was lost before the task
    /// settled, and the agent declared its turns safe to run again ([`Recovery::RunAgain`]).
    /// `task` holds what the first run recorded.
    pub rerun: bool,
    /// Where this turn sits in a distributed trace (from the request's `traceparent`). The
    /// turn runs with it as [`a2a_protocol_types::trace::current`], so the A2A client sends
    /// it on, as a child, with every call the agent makes (a delegation joins the trace).
    pub trace: Option<a2a_protocol_types::trace::TraceContext>,
}

impl RequestContext {
    /// Whether the client activated the extension `uri`.
    ///
    /// ```
    /// use a2a_protocol_server::{AgentExecutor, EventSink, RequestContext};
    /// use a2a_protocol_types::A2aError;
    ///
    /// struct Careful;
    ///
    /// #[async_trait::async_trait]
    /// impl AgentExecutor for Careful {
    ///     async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
    ///         if !ctx.activated("https://example.com/extensions/audit/v1") {
    ///             return events.reject("activate the audit extension to use this agent").await;
    ///         }
    ///         events.complete(None).await
    ///     }
    /// }
    /// ```
    pub fn activated(&self, uri: &str) -> bool {
        self.extensions.iter().any(|e| e == uri)
    }
}

/// What an executor knows when asked to cancel a task.
///
/// ```
/// use a2a_protocol_server::{AgentExecutor, CancelContext, EventSink, RequestContext};
/// use a2a_protocol_types::A2aError;
///
/// struct Worker;
///
/// #[async_trait::async_trait]
/// impl AgentExecutor for Worker {
///     async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
///         events.working().await?;
///         ctx.cancellation.cancelled().await; // Works until canceled.
///         Ok(())
///     }
///
///     async fn cancel(&self, ctx: CancelContext, events: EventSink) -> Result<(), A2aError> {
///         tracing::info!(task_id = %ctx.task.id, "stopping");
///         events.cancel().await
///     }
/// }
/// ```
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
///
/// ```
/// use a2a_protocol_server::{AgentExecutor, CallContext, EventSink, RequestContext, RequestHandler};
/// use a2a_protocol_types::{A2aError, Artifact, Message, Part, SendMessageRequest, SendMessageResponse};
///
/// struct Shouter;
///
/// #[async_trait::async_trait]
/// impl AgentExecutor for Shouter {
///     async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
///         events.working().await?;
///         let loud = ctx.message.text().to_uppercase();
///         events.artifact(Artifact::new("loud", vec![Part::text(loud)])).await?;
///         events.complete(None).await
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), A2aError> {
/// let handler = RequestHandler::builder(Shouter).build();
/// let request = SendMessageRequest::new(Message::user_text("hello"));
/// let SendMessageResponse::Task(task) = handler.send_message(request, &CallContext::default()).await?
/// else {
///     panic!("a task");
/// };
/// assert_eq!(task.artifacts[0].parts[0].as_text(), Some("HELLO"));
/// # Ok(())
/// # }
/// ```
#[async_trait]
pub trait AgentExecutor: Send + Sync + 'static {
    /// Does one turn of work.
    ///
    /// ```
    /// use a2a_protocol_server::{AgentExecutor, EventSink, RequestContext};
    /// use a2a_protocol_types::A2aError;
    ///
    /// struct Asker;
    ///
    /// #[async_trait::async_trait]
    /// impl AgentExecutor for Asker {
    ///     async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
    ///         match ctx.task {
    ///             // A follow-up to the task: the answer to our question.
    ///             Some(_) => events.complete(Some(events.agent_message(ctx.message.text()))).await,
    ///             None => events.require_input("What should I call you?").await,
    ///         }
    ///     }
    /// }
    /// ```
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError>;

    /// Stops a task. The default marks it canceled; the running turn's
    /// [`RequestContext::cancellation`] has already fired.
    ///
    /// ```
    /// use a2a_protocol_server::{AgentExecutor, CancelContext, EventSink, RequestContext};
    /// use a2a_protocol_types::A2aError;
    ///
    /// struct Uncancelable;
    ///
    /// #[async_trait::async_trait]
    /// impl AgentExecutor for Uncancelable {
    ///     async fn execute(&self, _ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
    ///         events.complete(None).await
    ///     }
    ///
    ///     async fn cancel(&self, ctx: CancelContext, _events: EventSink) -> Result<(), A2aError> {
    ///         Err(A2aError::task_not_cancelable(ctx.task.id.as_str(), ctx.task.status.state))
    ///     }
    /// }
    /// ```
    async fn cancel(&self, ctx: CancelContext, events: EventSink) -> Result<(), A2aError> {
        let _ = ctx;
        events.cancel().await
    }

    /// What becomes of a turn whose server process was lost (killed, or shut down before the
    /// turn ended): [`Recovery::Fail`] (the default) fails the task, saying so;
    /// [`Recovery::RunAgain`] runs the turn again, once per lost process, in another process
    /// sharing the store or in this one when it restarts. Declare `RunAgain` only for an agent
    /// whose turn does no harm when run twice, since the first run may have done part of its
    /// work.
    ///
    /// ```
    /// use a2a_protocol_server::executor::Recovery;
    /// use a2a_protocol_server::{AgentExecutor, EventSink, RequestContext};
    /// use a2a_protocol_types::A2aError;
    ///
    /// /// Looks things up and changes nothing: running a turn twice is harmless.
    /// struct Lookup;
    ///
    /// #[async_trait::async_trait]
    /// impl AgentExecutor for Lookup {
    ///     async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
    ///         events.complete(Some(events.agent_message(format!("found: {}", ctx.message.text())))).await
    ///     }
    ///
    ///     fn recovery(&self) -> Recovery {
    ///         Recovery::RunAgain
    ///     }
    /// }
    /// assert_eq!(Lookup.recovery(), Recovery::RunAgain);
    /// ```
    fn recovery(&self) -> Recovery {
        Recovery::Fail
    }
}

/// What becomes of a turn whose server process was lost; see [`AgentExecutor::recovery`].
///
/// ```
/// use a2a_protocol_server::executor::Recovery;
///
/// assert_eq!(Recovery::default(), Recovery::Fail);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Recovery {
    /// The task fails, with a status message saying its server process was lost.
    #[default]
    Fail,
    /// The turn runs again from the message that started it.
    RunAgain,
}

/// A shared executor is an executor: `Arc<dyn AgentExecutor>` chosen at run time, or one agent
/// served by several handlers.
#[async_trait]
impl<A: AgentExecutor + ?Sized> AgentExecutor for std::sync::Arc<A> {
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
        (**self).execute(ctx, events).await
    }

    async fn cancel(&self, ctx: CancelContext, events: EventSink) -> Result<(), A2aError> {
        (**self).cancel(ctx, events).await
    }

    fn recovery(&self) -> Recovery {
        (**self).recovery()
    }
}

/// A boxed executor is an executor.
#[async_trait]
impl<A: AgentExecutor + ?Sized> AgentExecutor for Box<A> {
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
        (**self).execute(ctx, events).await
    }

    async fn cancel(&self, ctx: CancelContext, events: EventSink) -> Result<(), A2aError> {
        (**self).cancel(ctx, events).await
    }

    fn recovery(&self) -> Recovery {
        (**self).recovery()
    }
}
