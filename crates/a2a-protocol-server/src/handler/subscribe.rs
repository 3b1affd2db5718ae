//! `SubscribeToTask`: a task's events until it is terminal, across its turns.

use a2a_protocol_types::{A2aError, SubscribeToTaskRequest};

use super::follow::EndsAt;
use super::{CallContext, EventStream, RequestHandler, validate};

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
        ctx: &CallContext,
    ) -> Result<EventStream, A2aError> {
        self.check_tenant(&request.tenant)?;
        validate::task_id("id", &request.id)?;
        let task = self.load(&request.tenant, &request.id, ctx).await?;
        if task.status.state.is_terminal() {
            return Err(A2aError::unsupported_operation(format!(
                "task {} is {} and has no more updates; read it with GetTask",
                task.id, task.status.state
            )));
        }
        let slot = ctx.stream_slot()?;
        let events = self
            .follow(&request.tenant, task, None, EndsAt::Terminal)
            .await;
        Ok(super::holding(events, slot))
    }
}
