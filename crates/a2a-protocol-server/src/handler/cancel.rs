//! `CancelTask`, wherever the task's turn runs.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use a2a_protocol_types::{A2aError, CancelTaskRequest, Task, TaskState};
use tokio::time::Instant;

use super::{CallContext, RequestHandler, validate};
use crate::executor::{CallerIdentity, CancelContext};
use crate::runtime::LiveTask;
use crate::store::TaskRef;
use crate::store::{Offers, TaskStoreExt};

/// How often a cancel waiting for another process looks at the task.
const REMOTE_POLL: Duration = Duration::from_millis(50);

impl RequestHandler {
    /// `CancelTask`. The agent running the turn is asked to stop (through its cancellation
    /// token and [`AgentExecutor::cancel`](crate::AgentExecutor::cancel)) and the task ends
    /// `CANCELED`. With a store several processes share, a cancel reaching any of them reaches
    /// the agent wherever it runs: its process is asked through the store and stops it, and
    /// should it not answer within the cancel grace, the task is canceled over its head, so
    /// the agent's later events are refused.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::agents::EchoAgent;
    /// use a2a_protocol_server::{CallContext, RequestHandler};
    /// use a2a_protocol_types::{
    ///     CancelTaskRequest, Message, SendMessageConfiguration, SendMessageRequest, SendMessageResponse,
    ///     TaskState,
    /// };
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), a2a_protocol_types::A2aError> {
    /// let handler = RequestHandler::builder(EchoAgent::slow(Duration::from_secs(60))).build();
    /// let ctx = CallContext::default();
    /// let mut request = SendMessageRequest::new(Message::user_text("long job"));
    /// request.configuration = Some(SendMessageConfiguration { return_immediately: true, ..Default::default() });
    /// let SendMessageResponse::Task(task) = handler.send_message(request, &ctx).await? else {
    ///     panic!("a task");
    /// };
    /// let canceled = handler.cancel_task(CancelTaskRequest { id: task.id, ..Default::default() }, &ctx).await?;
    /// assert_eq!(canceled.status.state, TaskState::Canceled);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn cancel_task(
        &self,
        request: CancelTaskRequest,
        ctx: &CallContext,
    ) -> Result<Task, A2aError> {
        self.check_tenant(&request.tenant)?;
        validate::task_id("id", &request.id)?;
        let tenant = request.tenant;
        if let Some(live) = self.live(&tenant, &request.id, ctx)? {
            let task = live.shared().await;
            return self
                .cancel_here(&tenant, &task, 0, None, ctx.caller.clone())
                .await;
        }
        let stored = self.load_stored(&tenant, &request.id, ctx).await?;
        if stored.task.status.state.is_terminal() {
            return Err(A2aError::task_not_cancelable(
                stored.task.id.as_str(),
                stored.task.status.state,
            ));
        }
        let remote = self.inner.store.coordination().filter(|_| {
            stored.owner_alive
                && stored
                    .owner
                    .as_deref()
                    .is_some_and(|o| o != &*self.inner.services.owner)
        });
        if let Some(coordination) = remote {
            let task = TaskRef::new(&tenant, &request.id);
            coordination.request_cancel(&task).await?;
            if let Some(settled) = self.await_terminal(&tenant, &task).await? {
                return canceled(settled);
            }
            tracing::warn!(
                task_id = %task.id,
                "the process running the task did not cancel it in time; canceling it here"
            );
            let stored = self.load_stored(&tenant, &request.id, ctx).await?;
            return self
                .cancel_here(
                    &tenant,
                    &Arc::new(stored.task),
                    stored.revision,
                    stored.caller.as_deref(),
                    ctx.caller.clone(),
                )
                .await;
        }
        self.cancel_here(
            &tenant,
            &Arc::new(stored.task),
            stored.revision,
            stored.caller.as_deref(),
            ctx.caller.clone(),
        )
        .await
    }

    /// Cancels the task's turn in this process (starting a turn for the cancel when none
    /// runs): the agent's token fires, its cancel hook runs within the grace, and the task is
    /// marked canceled if it did not settle. `creator` is who created the task (kept with its
    /// live state when the cancel makes it live); `caller` is who asks.
    pub(crate) async fn cancel_here(
        &self,
        tenant: &str,
        task: &Arc<Task>,
        revision: u64,
        creator: Option<&str>,
        caller: Option<CallerIdentity>,
    ) -> Result<Task, A2aError> {
        let live = self
            .inner
            .registry
            .begin_turn(tenant, task, revision, creator);
        let result = self.cancel_live(&live, caller).await;
        self.inner.registry.end_turn(&live).await;
        let result = result?;
        canceled(result)
    }

    async fn cancel_live(
        &self,
        live: &Arc<LiveTask>,
        caller: Option<CallerIdentity>,
    ) -> Result<Task, A2aError> {
        live.canceling.store(true, Ordering::Release);
        live.cancel.cancel();
        let current = live.snapshot().await;
        if current.status.state.is_terminal() {
            return Ok(current);
        }
        let sink = self.sink(live, current.context_id.clone());
        let cancel_ctx = CancelContext {
            task: current,
            tenant: live.tenant.clone(),
            caller,
        };
        let asked = tokio::time::timeout(
            self.inner.config.cancel_grace,
            self.inner.executor.cancel(cancel_ctx, sink.clone()),
        )
        .await;
        if let Ok(Err(error)) = asked {
            tracing::warn!(task_id = %live.task_id, %error, "the executor's cancel failed");
        }
        if !sink.task().await.status.state.is_terminal()
            && let Err(error) = sink.cancel().await
        {
            tracing::warn!(task_id = %live.task_id, %error, "could not mark the task canceled");
        }
        Ok(live.snapshot().await)
    }

    /// Cancels, in the background, each turn of this process another process asked to cancel.
    pub(crate) async fn answer_cancel_requests(&self) {
        let Some(coordination) = self.inner.store.coordination() else {
            return;
        };
        let asked = match coordination
            .cancel_requests(&self.inner.services.owner)
            .await
        {
            Ok(asked) => asked,
            Err(error) => {
                tracing::warn!(%error, "could not read cancel requests");
                return;
            }
        };
        for task in asked {
            let Some(live) = self.inner.registry.get(&task.tenant, &task.id) else {
                continue;
            };
            if live.canceling.swap(true, Ordering::AcqRel) {
                continue;
            }
            let handler = self.clone();
            tokio::spawn(async move {
                let task = live.shared().await;
                if let Err(error) = handler
                    .cancel_here(&live.tenant, &task, 0, None, None)
                    .await
                {
                    tracing::debug!(%error, "a cancel asked for by another process did not end canceled");
                }
            });
        }
    }

    /// Waits, within the cancel grace, for a task run by another process to become terminal.
    async fn await_terminal(&self, tenant: &str, task: &TaskRef) -> Result<Option<Task>, A2aError> {
        let deadline = Instant::now() + self.inner.config.cancel_grace;
        loop {
            if let Some(stored) = self.inner.store.load_stored(tenant, &task.id).await?
                && stored.task.status.state.is_terminal()
            {
                return Ok(Some(stored.task));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            tokio::time::sleep(REMOTE_POLL).await;
        }
    }
}

/// A cancel's answer: the task when it ended canceled, else the refusal naming its state.
fn canceled(task: Task) -> Result<Task, A2aError> {
    if task.status.state == TaskState::Canceled {
        Ok(task)
    } else {
        Err(A2aError::task_not_cancelable(
            task.id.as_str(),
            task.status.state,
        ))
    }
}
