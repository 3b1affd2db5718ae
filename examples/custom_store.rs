//! A task store of your own, proved against the store contract.
//!
//! `cargo run -p a2a-examples --example custom_store` runs the exported conformance suite
//! (`store::conformance`, feature `testing`) on a store that keeps tasks and keys in one map
//! behind one lock, then serves a keyed send from it twice: the retry gets the first task and
//! the agent runs once. In a store crate of your own, the suite goes in a test.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use a2a_protocol_server::store::conformance::Conformance;
use a2a_protocol_server::store::{
    ClaimOutcome, KeyClaim, KeyScope, Loaded, PageCursor, StoreError, StoredTask, TaskPage,
    TaskQuery, TaskStore, TaskWrite, WriteOutcome,
};
use a2a_protocol_server::{AgentExecutor, CallContext, EventSink, RequestContext, RequestHandler};
use a2a_protocol_types::idempotency::{IdempotencyKey, generate_key, set_key};
use a2a_protocol_types::{
    A2aError, Message, MessageId, SendMessageRequest, SendMessageResponse, Task, TaskId,
};
use async_trait::async_trait;

/// Tasks and idempotency keys in one map behind one lock: every write, key claim included, is
/// one step under the lock, which is what makes it atomic.
#[derive(Default)]
struct MapStore {
    inner: Mutex<Maps>,
}

#[derive(Default)]
struct Maps {
    /// (tenant, task id) -> (task, revision).
    tasks: HashMap<(String, TaskId), (Task, u64)>,
    /// (scope, key) -> (message id, task id). Never removed with a task.
    keys: HashMap<(KeyScope, IdempotencyKey), (MessageId, TaskId)>,
}

impl Maps {
    fn held(&self, claim: &KeyClaim) -> Option<ClaimOutcome> {
        let (message, task) = self.keys.get(&(claim.scope.clone(), claim.key.clone()))?;
        Some(if *message == claim.message_id {
            ClaimOutcome::Replay(task.clone())
        } else {
            ClaimOutcome::Conflict
        })
    }
}

impl MapStore {
    fn maps(&self) -> std::sync::MutexGuard<'_, Maps> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl TaskStore for MapStore {
    async fn load(
        &self,
        tenant: &str,
        id: &TaskId,
        _known: Option<u64>,
    ) -> Result<Loaded, StoreError> {
        Ok(
            match self.maps().tasks.get(&(tenant.to_owned(), id.clone())) {
                Some((task, revision)) => Loaded::Changed(StoredTask::new(task.clone(), *revision)),
                None => Loaded::Missing,
            },
        )
    }

    async fn list(&self, tenant: &str, query: &TaskQuery) -> Result<TaskPage, StoreError> {
        let maps = self.maps();
        let mut tasks: Vec<&Task> = maps
            .tasks
            .iter()
            .filter(|((t, _), _)| t == tenant)
            .map(|(_, (task, _))| task)
            .filter(|task| {
                query
                    .context_id
                    .as_ref()
                    .is_none_or(|c| *c == task.context_id)
            })
            .filter(|task| query.status.is_none_or(|s| s == task.status.state))
            .filter(|task| {
                query
                    .status_timestamp_after
                    .is_none_or(|after| task.status.timestamp.is_some_and(|t| t > after))
            })
            .collect();
        // Newest status first; the id breaks ties, so pages never overlap.
        tasks.sort_by(|a, b| (b.status.timestamp, &b.id).cmp(&(a.status.timestamp, &a.id)));
        let total_size = tasks.len();
        let start = query.cursor.as_ref().map_or(0, |cursor| {
            tasks
                .iter()
                .position(|t| t.id.as_str() == cursor.task_id)
                .map_or(tasks.len(), |i| i + 1)
        });
        let page: Vec<Task> = tasks
            .iter()
            .skip(start)
            .take(query.page_size)
            .map(|t| (*t).clone())
            .collect();
        let next = (start + page.len() < total_size)
            .then(|| page.last())
            .flatten()
            .map(|last| PageCursor {
                status_millis: last.status.timestamp.map_or(0, |t| t.unix_millis()),
                task_id: last.id.to_string(),
            });
        Ok(TaskPage {
            tasks: page,
            next,
            total_size,
        })
    }

    async fn write(&self, write: &TaskWrite<'_>) -> Result<WriteOutcome, StoreError> {
        let mut maps = self.maps();
        let slot = (write.tenant.to_owned(), write.task.id.clone());
        let revision = maps.tasks.get(&slot).map(|(_, revision)| *revision);
        if revision != write.expected {
            return Ok(WriteOutcome::Stale);
        }
        if let Some(claim) = write.claim {
            if let Some(held) = maps.held(claim) {
                return Ok(WriteOutcome::KeyHeld(held));
            }
            maps.keys.insert(
                (claim.scope.clone(), claim.key.clone()),
                (claim.message_id.clone(), claim.task_id.clone()),
            );
        }
        maps.tasks
            .insert(slot, (Task::clone(write.task), revision.unwrap_or(0) + 1));
        Ok(WriteOutcome::Written)
    }

    fn supports_idempotency(&self) -> bool {
        true
    }

    async fn claim_idempotency_key(&self, claim: &KeyClaim) -> Result<ClaimOutcome, StoreError> {
        let mut maps = self.maps();
        if let Some(held) = maps.held(claim) {
            return Ok(held);
        }
        maps.keys.insert(
            (claim.scope.clone(), claim.key.clone()),
            (claim.message_id.clone(), claim.task_id.clone()),
        );
        Ok(ClaimOutcome::Claimed)
    }

    async fn release_idempotency_key(&self, claim: &KeyClaim) -> Result<(), StoreError> {
        let mut maps = self.maps();
        let slot = (claim.scope.clone(), claim.key.clone());
        if maps
            .keys
            .get(&slot)
            .is_some_and(|(_, task)| *task == claim.task_id)
        {
            maps.keys.remove(&slot);
        }
        Ok(())
    }

    async fn find_idempotency_key(
        &self,
        claim: &KeyClaim,
    ) -> Result<Option<ClaimOutcome>, StoreError> {
        Ok(self.maps().held(claim))
    }
}

/// Answers every message, counting its turns.
#[derive(Default)]
struct Echo(AtomicUsize);

#[async_trait]
impl AgentExecutor for Echo {
    async fn execute(&self, ctx: RequestContext, events: EventSink) -> Result<(), A2aError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        events
            .complete(Some(events.agent_message(ctx.message.text())))
            .await
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. The contract, checked. The maps are keyed by tenant, so tenants are kept apart, and
    //    that is checked too.
    let report = Conformance::new(Arc::new(MapStore::default()))
        .with_tenant_aware(true)
        .run()
        .await?;
    for check in &report.passed {
        println!("passed       {check}");
    }
    for check in &report.not_offered {
        println!("not offered  {check}");
    }

    // 2. The store at work: a keyed send, and its retry.
    let agent = Arc::new(Echo::default());
    let handler = RequestHandler::builder(Arc::clone(&agent))
        .with_store(MapStore::default())
        .build();
    let mut message = Message::user_text("hello from a store of my own");
    set_key(&mut message, &generate_key())?;
    let request = SendMessageRequest::new(message);
    let ctx = CallContext::default();
    let (SendMessageResponse::Task(first), SendMessageResponse::Task(retry)) = (
        handler.send_message(request.clone(), &ctx).await?,
        handler.send_message(request, &ctx).await?,
    ) else {
        return Err("the agent answers with a task".into());
    };
    assert_eq!(first.id, retry.id, "the retry gets the first task");
    assert_eq!(agent.0.load(Ordering::SeqCst), 1, "the agent ran once");
    println!(
        "task {} ({}), retried: the same task, one run",
        first.id, first.status.state
    );
    Ok(())
}
