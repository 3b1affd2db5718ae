//! Shutting down without leaving work behind: new sends are refused, running turns get the
//! drain time to finish, and what still runs then is settled (failed, saying why) or, for an
//! agent whose turns may run again, handed to recovery in another process. Then whatever still
//! follows a task ends.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::RequestHandler;
use crate::executor::Recovery;
use crate::store::Offers;

/// The status message of a task still running when its server shut down.
const SHUT_DOWN: &str = "the server shut down before this task finished; it was not completed";

/// How long turns stopped at shutdown get to end before the handler stops waiting for them.
const STOP_GRACE: Duration = Duration::from_secs(2);

impl RequestHandler {
    /// Shuts the handler down: refuses new sends (retryably), waits up to `drain` for the
    /// turns running in this process to finish, then stops the rest. A stopped turn's task
    /// fails with a status message saying the server shut down, unless the agent declared
    /// [`Recovery::RunAgain`] and the store is shared, in which case another process runs the
    /// turn again. Streams and waits on tasks then end. [`A2aServer`](crate::A2aServer) calls
    /// this on its shutdown signal; call it yourself when you serve the handler's router.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::{CallContext, RequestHandler};
    /// use a2a_protocol_types::{ErrorKind, Message, SendMessageRequest};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let handler = RequestHandler::builder(EchoAgent::new()).build();
    /// handler.shutdown(Duration::from_secs(5)).await;
    /// let refused = handler
    ///     .send_message(SendMessageRequest::new(Message::user_text("hi")), &CallContext::default())
    ///     .await
    ///     .unwrap_err();
    /// assert_eq!(refused.kind, ErrorKind::ResourceExhausted, "retryable: nothing ran");
    /// # }
    /// ```
    pub async fn shutdown(&self, drain: Duration) {
        self.inner.services.draining.store(true, Ordering::Release);
        if tokio::time::timeout(drain, self.inner.registry.idle())
            .await
            .is_err()
        {
            self.stop_running_turns().await;
            let _ = tokio::time::timeout(STOP_GRACE, self.inner.registry.idle()).await;
        }
        self.inner.services.upkeep.stop();
        #[cfg(feature = "push")]
        if let Some(push) = &self.inner.services.push {
            push.stop();
        }
        if let Some(coordination) = self.inner.store.coordination() {
            // Turns given up to run again are orphaned at once, not after the recovery time.
            if let Err(error) = coordination.retire(&self.inner.services.owner).await {
                tracing::warn!(%error, "could not retire this process from the store");
            }
        }
        self.inner.services.stopped.cancel();
    }

    async fn stop_running_turns(&self) {
        let hand_over = self.inner.store.coordination().is_some()
            && self.inner.executor.recovery() == Recovery::RunAgain;
        for live in self.inner.registry.all() {
            if hand_over {
                live.abandoned.store(true, Ordering::Release);
                live.cancel.cancel();
                continue;
            }
            live.cancel.cancel();
            let task = live.shared().await;
            if task.status.state.is_terminal() {
                continue;
            }
            let sink = self.sink(&live, task.context_id.clone());
            if let Err(error) = sink.fail(SHUT_DOWN).await {
                tracing::debug!(task_id = %live.task_id, %error, "a turn stopped at shutdown had settled");
            }
        }
    }
}
