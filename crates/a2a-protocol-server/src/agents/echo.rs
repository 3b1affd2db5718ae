//! The echo agent: answers with the text it was sent.

use std::time::Duration;

use a2a_protocol_types::{A2aError, AgentCard, AgentSkill, Artifact, Part};
use async_trait::async_trait;

use crate::executor::{AgentExecutor, EventSink, RequestContext};

/// Echoes the text of each message: the task goes working, gains an artifact holding the text,
/// and completes with the text as its message. In slow mode it works for a while first, and
/// stops early if the task is canceled.
///
/// ```
/// use a2a_protocol_server::agents::EchoAgent;
/// use a2a_protocol_server::{CallContext, RequestHandler};
/// use a2a_protocol_types::{Message, SendMessageRequest, SendMessageResponse};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), a2a_protocol_types::A2aError> {
/// let handler = RequestHandler::builder(EchoAgent::new()).build();
/// let request = SendMessageRequest::new(Message::user_text("hello"));
/// let SendMessageResponse::Task(task) = handler.send_message(request, &CallContext::default()).await?
/// else {
///     panic!("a task");
/// };
/// assert_eq!(task.status.message.unwrap().text(), "hello");
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Default)]
pub struct EchoAgent {
    delay: Duration,
}

impl EchoAgent {
    /// An echo agent that answers at once.
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::RequestHandler;
    ///
    /// let handler = RequestHandler::builder(EchoAgent::new()).build();
    /// # let _ = handler;
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// An echo agent that works for `delay` before answering.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::{CallContext, RequestHandler};
    /// use a2a_protocol_types::{Message, SendMessageConfiguration, SendMessageRequest, SendMessageResponse, TaskState};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_types::A2aError> {
    /// let handler = RequestHandler::builder(EchoAgent::slow(Duration::from_secs(60))).build();
    /// let mut request = SendMessageRequest::new(Message::user_text("take your time"));
    /// request.configuration =
    ///     Some(SendMessageConfiguration { return_immediately: true, ..Default::default() });
    /// let SendMessageResponse::Task(task) = handler.send_message(request, &CallContext::default()).await?
    /// else {
    ///     panic!("a task");
    /// };
    /// assert!(!task.status.state.is_terminal(), "still at work");
    /// # Ok(())
    /// # }
    /// ```
    pub fn slow(delay: Duration) -> Self {
        Self { delay }
    }

    /// A card describing this agent.
    ///
    /// ```
    /// use a2a_protocol_server::agents::EchoAgent;
    ///
    /// assert_eq!(EchoAgent::card().skills[0].id, "echo");
    /// ```
    pub fn card() -> AgentCard {
        AgentCard::new(
            "Echo agent",
            "Answers every message with its own text.",
            env!("CARGO_PKG_VERSION"),
        )
        .with_skill(AgentSkill::new(
            "echo",
            "Echo",
            "Returns the text it is sent.",
            vec!["echo".into(), "test".into()],
        ))
    }
}

#[async_trait]
impl AgentExecutor for EchoAgent {
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
        events.working().await?;
        if !self.delay.is_zero() {
            tokio::select! {
                () = tokio::time::sleep(self.delay) => {}
                () = ctx.cancellation.cancelled() => return Ok(()),
            }
        }
        let text = ctx.message.text();
        events
            .artifact(Artifact::new("echo", vec![Part::text(text.clone())]).with_name("echo"))
            .await?;
        events.complete(Some(events.agent_message(text))).await
    }
}
