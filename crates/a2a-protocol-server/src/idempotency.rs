//! Exactly-once sends: the idempotency state machine, in one place.
//!
//! Every binding, unary and streaming, admits a send through this module; stores implement
//! only the storage half: a key taken in the same write that records its message
//! ([`TaskStore::write`]), or, for a store that cannot write atomically
//! ([`NonAtomicWrites`](crate::store::NonAtomicWrites)), claimed
//! ([`TaskStore::claim_idempotency_key`]) before its task is saved and released
//! ([`TaskStore::release_idempotency_key`]) if the save fails. Nothing else decides an outcome.
//!
//! | situation | result | JSON-RPC | HTTP+JSON |
//! |---|---|---|---|
//! | no key | ordinary send | | |
//! | key malformed | refuse, nothing runs | -32602 InvalidParams, the `KeyError` text | 400 |
//! | store cannot honour keys | refuse, nothing runs | -32004 UnsupportedOperation | 400 |
//! | new key | claim, create the task, run the agent once | normal result | normal result |
//! | same key, same message id (a retry) | run nothing; answer with the first attempt's task, in its current state | normal result | normal result |
//! | same key, different message id | refuse: key reused across two sends; the holder's message id is not disclosed | -32602 InvalidParams | 400 |
//! | key held but its task was swept | TaskNotFound, never a second run | -32001 | 404 |
//! | index full / store overloaded | refuse, nothing runs, retryable | -32603 + `RESOURCE_EXHAUSTED` + RetryInfo, HTTP 503 + `Retry-After` | 503 + `Retry-After` |
//!
//! A replay answers as the original request would (`answer_replay`, `stream_replay` below): a
//! blocking retry waits like the original, a streaming retry yields the task snapshot then
//! follows the task. The bundled stores take a
//! key and write its task (or its follow-up message) in one atomic step, so a key is never
//! held without what it stands for, and a held key whose task is missing means retention
//! removed the task. With a store that takes the key first, a retry that arrives between the
//! two waits (bounded) and then gets a retryable answer, never a second run. A keyed follow-up
//! (`taskId` set) is checked here before the terminal-task rule, so its retry replays instead
//! of failing. A task that ran and failed keeps its key, so a retry replays the failure.

use std::sync::Arc;
use std::time::Duration;

use a2a_protocol_types::idempotency::IdempotencyKey;
use a2a_protocol_types::{A2aError, Message, StreamResponse, Task, TaskId};
use futures::{StreamExt, stream};
use tokio::time::Instant;

use crate::handler::{CallContext, EndsAt, EventStream, RequestHandler, SendAnswer, until};
use crate::runtime::direct_reply;
use crate::store::TaskStoreExt;
use crate::store::{ClaimOutcome, KeyClaim, KeyScope, STORE_RETRY_AFTER, TaskStore};

pub(crate) struct Idempotency {
    store: Arc<dyn TaskStore>,
    replay_wait: Duration,
}

/// Counts a keyed send by what its key decided.
macro_rules! count {
    ($outcome:literal) => {
        crate::telemetry::cached!(
            metrics::Counter,
            metrics::counter!("a2a_idempotent_sends_total", "outcome" => $outcome)
        )
        .increment(1)
    };
}

impl Idempotency {
    pub(crate) fn new(store: Arc<dyn TaskStore>, replay_wait: Duration) -> Self {
        Self { store, replay_wait }
    }

    /// The claim a send of `message` makes for `task_id`, to be taken in the same write that
    /// records the message (`None` without a key). Refuses a malformed key, and any key when
    /// the store cannot honour one.
    pub(crate) fn claim_for(
        &self,
        scope: KeyScope,
        charged_to: Option<String>,
        message: &Message,
        task_id: &TaskId,
    ) -> Result<Option<KeyClaim>, A2aError> {
        let key = match IdempotencyKey::of(message) {
            Ok(None) => return Ok(None),
            Ok(Some(key)) => key,
            Err(error) => {
                count!("refused");
                return Err(A2aError::invalid_params(error.to_string())
                    .with_field_violation("message.metadata", error.to_string()));
            }
        };
        if !self.store.supports_idempotency() {
            count!("refused");
            return Err(A2aError::unsupported_operation(
                "this agent's task store cannot honour idempotency keys, so a keyed send could \
                 run twice; it was refused and nothing ran. Send without the key, or use a store \
                 that supports idempotency",
            ));
        }
        Ok(Some(KeyClaim {
            scope,
            key,
            message_id: message.id.clone(),
            task_id: task_id.clone(),
            charged_to,
        }))
    }

    /// Who holds the claim's key already, without taking it.
    pub(crate) async fn holder(&self, claim: &KeyClaim) -> Result<Option<ClaimOutcome>, A2aError> {
        self.store
            .find_idempotency_key(claim)
            .await
            .inspect_err(|_| count!("refused"))
            .map_err(A2aError::from)
    }

    /// The write that was to take the claim took it.
    pub(crate) fn claimed(&self) {
        count!("claimed");
    }

    /// What a send whose write found its key held answers: the first attempt's task (see
    /// [`Self::replay`]).
    pub(crate) async fn replay_held(
        &self,
        claim: Option<&KeyClaim>,
        held: ClaimOutcome,
    ) -> Result<Box<Task>, A2aError> {
        let claim = claim.ok_or_else(|| A2aError::internal("a key held without a claim"))?;
        self.replay(claim, held).await
    }

    /// What a held key answers: the first attempt's task for a retry of the same message, a
    /// refusal for another message. A retry never runs anything.
    pub(crate) async fn replay(
        &self,
        claim: &KeyClaim,
        held: ClaimOutcome,
    ) -> Result<Box<Task>, A2aError> {
        let held_for = match held {
            ClaimOutcome::Replay(held_for) => held_for,
            ClaimOutcome::Conflict | ClaimOutcome::Claimed => {
                count!("conflicting");
                return Err(A2aError::invalid_params(
                    "this idempotency key was already used by a different message; a retry \
                     must resend the identical message (same messageId). Generate a new key \
                     for every distinct send",
                )
                .with_field_violation(
                    "message.metadata",
                    "idempotency key reused across two different messages",
                ));
            }
        };
        let tenant = &claim.scope.tenant;
        let deadline = Instant::now() + self.replay_wait;
        let mut pause = Duration::from_millis(5);
        loop {
            if let Some(task) = self.store.get(tenant, &held_for).await? {
                count!("replayed");
                return Ok(Box::new(task));
            }
            if self.store.capabilities().atomic_writes {
                // The key and its task were written together: the task is gone because
                // retention removed it. Never a second run.
                count!("replayed");
                return Err(A2aError::task_not_found(held_for.as_str()));
            }
            // A store that takes the key before it writes the task: the first attempt may be
            // between the two. It is not known to have failed, so the answer is "not yet".
            if Instant::now() >= deadline {
                count!("refused");
                return Err(A2aError::resource_exhausted(
                    "the first send with this idempotency key is still being recorded; nothing \
                     ran again. Retry the identical message shortly",
                    STORE_RETRY_AFTER,
                ));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(200));
        }
    }
}

impl RequestHandler {
    /// Answers a unary retry the way its first attempt was answered: the direct reply; the
    /// task at once when the original asked for it at once or the task has settled; else
    /// the task once it settles (or as it stands at the deadline).
    pub(crate) async fn answer_replay(
        &self,
        tenant: &str,
        task: Task,
        immediate: bool,
        history: Option<usize>,
        deadline: Option<Instant>,
    ) -> Result<SendAnswer, A2aError> {
        if let Some(reply) = direct_reply(&task) {
            return Ok(SendAnswer::Message(reply.clone()));
        }
        let task = if immediate || task.status.state.is_settled() {
            task
        } else {
            let id = task.id.clone();
            let events = self.follow(tenant, task, None, EndsAt::Settled).await;
            let last = until(deadline, events.fold(None, |_, e| async { Some(e) })).await;
            if let Some(Some(StreamResponse::Message(message))) = last {
                return Ok(SendAnswer::Message(message));
            }
            // The caller's own key led here, so the task is the caller's.
            self.load(tenant, &id, &CallContext::default()).await?
        };
        Ok(SendAnswer::task(Arc::new(task), history))
    }

    /// Answers a streaming retry the way its first attempt was answered: the direct reply
    /// alone, or the task as it stands and then its events until it settles.
    pub(crate) async fn stream_replay(
        &self,
        tenant: &str,
        task: Task,
        history: Option<usize>,
    ) -> EventStream {
        match direct_reply(&task) {
            Some(reply) => stream::iter([StreamResponse::Message(reply.clone())]).boxed(),
            None => self.follow(tenant, task, history, EndsAt::Settled).await,
        }
    }
}
