//! Recovery of turns whose server process was lost (killed, or gone without a word): a process
//! sharing the store, or the same server restarted, finds them by their lapsed heartbeat and
//! settles each once. The task fails, saying why; or, for an agent that declared its turns safe
//! to run again, the turn runs again here; or, when a cancel was asked for, it ends canceled.

use std::sync::Arc;

use a2a_protocol_types::{
    Message, MessageRole, StreamResponse, Task, TaskState, TaskStatus, TaskStatusUpdateEvent,
};

use super::RequestHandler;
use crate::executor::{Recovery, RequestContext};
use crate::store::{Offers, TaskStoreExt};
use crate::store::{StoredTask, TaskRef, TaskWrite, WriteOutcome};

/// The first pause before a settlement the store did not take is tried again; it doubles up to
/// [`SETTLE_MOST_PAUSE`].
const SETTLE_FIRST_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);
/// The longest pause between two tries of a settlement.
const SETTLE_MOST_PAUSE: std::time::Duration = std::time::Duration::from_secs(5);

/// The status message of a task whose process was lost.
const LOST: &str = "the server process running this task was lost before the task finished; \
                    it was not completed";

impl RequestHandler {
    /// Settles the orphaned turns the store knows of.
    pub(crate) async fn recover_orphans(&self) {
        let Some(coordination) = self.inner.store.coordination() else {
            return;
        };
        let orphans = match coordination.orphaned_turns(100).await {
            Ok(orphans) => orphans,
            Err(error) => {
                tracing::warn!(%error, "could not look for orphaned turns");
                return;
            }
        };
        let mut settled = 0;
        for task in orphans {
            match self.recover(&task).await {
                Ok(true) => settled += 1,
                Ok(false) => {}
                Err(error) => {
                    tracing::warn!(task_id = %task.id, %error, "could not recover an orphaned turn");
                }
            }
        }
        if settled > 0 {
            tracing::warn!(settled, "recovered turns whose server process was lost");
        }
    }

    /// Recovers one orphaned turn; true when this process did.
    async fn recover(&self, task: &TaskRef) -> Result<bool, a2a_protocol_types::A2aError> {
        let Some(stored) = self.inner.store.load_stored(&task.tenant, &task.id).await? else {
            return Ok(false);
        };
        let lost = stored
            .owner
            .as_deref()
            .is_some_and(|o| o != &*self.inner.services.owner)
            && !stored.owner_alive;
        if !lost || stored.task.status.state.is_terminal() {
            return Ok(false);
        }
        self.settle(&task.tenant, stored, LOST).await
    }

    /// A turn of this process ended without its settlement landing (the store did not
    /// answer): tries again, backing off, until the task is settled, here or by another
    /// process, or the handler stops. The task ends failed with `reason`, canceled when a
    /// cancel was asked for, or its turn runs again for an agent whose turns are safe to
    /// repeat.
    pub(crate) fn settle_later(&self, task: TaskRef, reason: String) {
        let handler = self.clone();
        tokio::spawn(async move {
            let stopped = handler.inner.services.stopped.clone();
            let mut pause = SETTLE_FIRST_PAUSE;
            loop {
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    () = stopped.cancelled() => return,
                }
                match handler.settle_own(&task, &reason).await {
                    Ok(true) => return,
                    Ok(false) => pause = SETTLE_FIRST_PAUSE,
                    Err(error) => {
                        tracing::debug!(task_id = %task.id, %error, "the store still cannot settle a turn; trying again");
                        pause = (pause * 2).min(SETTLE_MOST_PAUSE);
                    }
                }
            }
        });
    }

    /// Settles a turn this process ran and lost track of; true once nothing is left to do.
    async fn settle_own(
        &self,
        task: &TaskRef,
        reason: &str,
    ) -> Result<bool, a2a_protocol_types::A2aError> {
        let Some(stored) = self.inner.store.load_stored(&task.tenant, &task.id).await? else {
            return Ok(true);
        };
        let ours = stored
            .owner
            .as_deref()
            .is_none_or(|o| o == &*self.inner.services.owner);
        let running_here = self.inner.registry.get(&task.tenant, &task.id).is_some();
        if stored.task.status.state.is_settled() || !ours || running_here {
            return Ok(true);
        }
        self.settle(&task.tenant, stored, reason).await
    }

    /// Settles a turn no one runs: runs it again for an agent whose turns are safe to repeat
    /// (no cancel asked for, reruns left), else ends it canceled or failed with `reason`.
    async fn settle(
        &self,
        tenant: &str,
        stored: StoredTask,
        reason: &str,
    ) -> Result<bool, a2a_protocol_types::A2aError> {
        let rerun = !stored.cancel_requested
            && self.inner.executor.recovery() == Recovery::RunAgain
            && stored.recoveries < self.inner.config.max_reruns;
        match rerun.then(|| last_user_message(&stored.task)).flatten() {
            Some(message) => self.run_again(tenant, stored, message).await,
            None => self.settle_lost(tenant, stored, reason).await,
        }
    }

    /// Ends the task canceled (a cancel was asked for) or failed, saying why (`reason`).
    async fn settle_lost(
        &self,
        tenant: &str,
        stored: StoredTask,
        reason: &str,
    ) -> Result<bool, a2a_protocol_types::A2aError> {
        let StoredTask {
            mut task,
            revision,
            cancel_requested,
            owner,
            ..
        } = stored;
        let status = if cancel_requested {
            TaskStatus::new(TaskState::Canceled)
        } else {
            let message = Message::new(
                MessageRole::Agent,
                vec![a2a_protocol_types::Part::text(reason)],
            )
            .with_context_id(task.context_id.clone())
            .with_task_id(task.id.clone());
            task.history.push(message.clone());
            TaskStatus::new(TaskState::Failed).with_message(message)
        };
        let new_messages = usize::from(!cancel_requested);
        task.status = status.clone();
        task.generation += 1;
        let event = status_event(&task, status);
        let task = Arc::new(task);
        let write = TaskWrite::update(tenant, &task, revision)
            .with_new_messages(new_messages)
            .with_event(&event);
        let written = self.inner.store.write(&write).await? == WriteOutcome::Written;
        if written {
            tracing::debug!(
                task_id = %task.id,
                lost_owner = owner.as_deref().unwrap_or(""),
                state = %task.status.state,
                "settled a turn whose server process was lost"
            );
        }
        Ok(written)
    }

    /// Takes the turn over and runs the agent again from the message that started it.
    async fn run_again(
        &self,
        tenant: &str,
        stored: StoredTask,
        message: Message,
    ) -> Result<bool, a2a_protocol_types::A2aError> {
        let StoredTask {
            task: before,
            revision,
            recoveries,
            caller,
            ..
        } = stored;
        let mut task = before.clone();
        let status = TaskStatus::new(TaskState::Working);
        task.status = status.clone();
        task.generation += 1;
        let event = status_event(&task, status);
        let task = Arc::new(task);
        let write = TaskWrite::update(tenant, &task, revision)
            .with_event(&event)
            .with_owner(self.owner())
            .with_recoveries(recoveries + 1);
        if self.inner.store.write(&write).await? != WriteOutcome::Written {
            return Ok(false); // Another process took it first.
        }
        tracing::info!(task_id = %task.id, "running again a turn whose server process was lost");
        let live = self
            .inner
            .registry
            .begin_turn(tenant, &task, revision + 1, caller.as_deref());
        let budget = a2a_protocol_types::budget::budget_of(&message)
            .ok()
            .flatten();
        let ctx = RequestContext {
            message,
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            tenant: tenant.to_owned(),
            caller: None,
            extensions: Vec::new(),
            task: Some(before),
            streaming: false,
            cancellation: live.cancel.child_token(),
            budget,
            rerun: true,
            trace: None,
        };
        self.spawn_turn(live, ctx);
        Ok(true)
    }
}

fn status_event(task: &Task, status: TaskStatus) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: task.id.clone(),
        context_id: task.context_id.clone(),
        status,
        metadata: None,
        generation: task.generation,
    })
}

/// The message that started the task's last turn.
fn last_user_message(task: &Task) -> Option<Message> {
    task.history
        .iter()
        .rev()
        .find(|m| m.role == MessageRole::User)
        .cloned()
}
