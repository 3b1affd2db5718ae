//! What the examples in these docs run on: an agent made of one closure, given one message.
//! Hidden from the documentation; not part of the API.

use std::future::Future;

use a2a_protocol_types::{A2aError, Message, SendMessageRequest, SendMessageResponse, Task};
use async_trait::async_trait;

use crate::{AgentExecutor, CallContext, EventSink, RequestContext, RequestHandler};

/// An agent whose turn is a closure.
struct Turn<F>(F);

#[async_trait]
impl<F, Fut> AgentExecutor for Turn<F>
where
    F: Fn(RequestContext, EventSink) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), A2aError>> + Send + 'static,
{
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
        (self.0)(ctx, events).await
    }
}

/// Runs `turn` as an agent's turn on the message "hi", on a handler of its own over the
/// in-memory store, and returns the task it left.
///
/// # Errors
///
/// The send's error, or an internal one when the agent answered with a message instead.
pub fn turn<F, Fut>(turn: F) -> Result<Task, A2aError>
where
    F: Fn(RequestContext, EventSink) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), A2aError>> + Send + 'static,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| A2aError::internal(format!("no runtime for the example: {e}")))?;
    runtime.block_on(async {
        let handler = RequestHandler::builder(Turn(turn)).build();
        let request = SendMessageRequest::new(Message::user_text("hi"));
        match handler
            .send_message(request, &CallContext::default())
            .await?
        {
            SendMessageResponse::Task(task) => Ok(task),
            SendMessageResponse::Message(_) => Err(A2aError::internal(
                "the agent answered with a message, not a task",
            )),
        }
    })
}
