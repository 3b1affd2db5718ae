//! Exactly-once sends: the idempotency state machine, in one place.
//!
//! Every binding, unary and streaming, admits a send through this module; stores
//! implement only the storage half ([`TaskStore::claim_idempotency_key`] and
//! [`TaskStore::release_idempotency_key`]). Nothing else decides an outcome.
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
//! A replay answers as the original request would: a blocking retry waits like the original, a
//! streaming retry yields the task snapshot then follows the task. A retry that arrives between
//! the first attempt's claim and its task creation waits (bounded) for the task and never runs
//! again. A keyed follow-up (`taskId` set) is checked here before the terminal-task rule, so
//! its retry replays instead of failing. A key is released only when the send failed before
//! the agent started; a task that ran and failed keeps its key, so a retry replays the failure.

use std::sync::Arc;
use std::time::Duration;

use a2a_protocol_types::idempotency::key_of;
use a2a_protocol_types::{A2aError, Message, Task, TaskId};
use tokio::time::Instant;

use crate::store::{ClaimOutcome, KeyClaim, KeyScope, TaskStore};

/// How a send was admitted.
pub(crate) enum Admission {
    /// No key: an ordinary send.
    Unkeyed,
    /// The key was free and is now held for this send; release it if the send fails before
    /// the agent starts.
    Claimed(KeyClaim),
    /// A retry of an earlier send: answer with its task; run nothing.
    Replay(Box<Task>),
}

pub(crate) struct Idempotency {
    store: Arc<dyn TaskStore>,
    replay_wait: Duration,
}

fn count(outcome: &'static str) {
    metrics::counter!("a2a_idempotent_sends_total", "outcome" => outcome).increment(1);
}

impl Idempotency {
    pub(crate) fn new(store: Arc<dyn TaskStore>, replay_wait: Duration) -> Self {
        Self { store, replay_wait }
    }

    /// Decides what to do with a send of `message` that would create or continue `task_id`.
    pub(crate) async fn admit(
        &self,
        scope: KeyScope,
        message: &Message,
        task_id: &TaskId,
    ) -> Result<Admission, A2aError> {
        let key = match key_of(message) {
            Ok(None) => return Ok(Admission::Unkeyed),
            Ok(Some(key)) => key,
            Err(error) => {
                count("refused");
                return Err(A2aError::invalid_params(error.to_string())
                    .with_field_violation("message.metadata", error.to_string()));
            }
        };
        if !self.store.supports_idempotency() {
            count("refused");
            return Err(A2aError::unsupported_operation(
                "this agent's task store cannot honour idempotency keys, so a keyed send could \
                 run twice; it was refused and nothing ran. Send without the key, or use a store \
                 that supports idempotency",
            ));
        }
        let tenant = scope.tenant.clone();
        let claim = KeyClaim {
            scope,
            key: key.to_owned(),
            message_id: message.id.clone(),
            task_id: task_id.clone(),
        };
        let deadline = Instant::now() + self.replay_wait;
        let mut pause = Duration::from_millis(5);
        loop {
            let outcome = self
                .store
                .claim_idempotency_key(&claim)
                .await
                .inspect_err(|_| {
                    count("refused");
                })?;
            let held_for = match outcome {
                ClaimOutcome::Claimed => {
                    count("claimed");
                    return Ok(Admission::Claimed(claim));
                }
                ClaimOutcome::Conflict => {
                    count("conflicting");
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
                ClaimOutcome::Replay(held_for) => held_for,
            };
            if let Some(task) = self.store.get(&tenant, &held_for).await? {
                count("replayed");
                return Ok(Admission::Replay(Box::new(task)));
            }
            // The first attempt is between its claim and its task's creation, or it failed
            // before its agent started and is releasing the key, or its task was swept.
            if Instant::now() >= deadline {
                count("replayed");
                return Err(A2aError::task_not_found(held_for.as_str()));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(200));
        }
    }

    /// Frees a claimed key after a send that failed before its agent started.
    pub(crate) async fn release(&self, claim: &KeyClaim) {
        if let Err(error) = self.store.release_idempotency_key(claim).await {
            // The key stays held until it expires: a retry then replays or gets TaskNotFound,
            // which is safe; it can never run twice.
            tracing::warn!(%error, task_id = %claim.task_id, "could not release an idempotency key");
        }
    }
}
