//! Idempotency keys as a store holds them: whose key it is, a claim of it, what a claim found.

use a2a_protocol_types::idempotency::IdempotencyKey;
use a2a_protocol_types::{MessageId, TaskId};

/// Whom an idempotency key belongs to: the tenant, and the authenticated caller when known.
///
/// ```
/// use a2a_protocol_server::store::KeyScope;
///
/// let scope = KeyScope { tenant: "acme".into(), caller: Some("alice".into()) };
/// assert_ne!(scope, KeyScope { tenant: "acme".into(), caller: None }, "another caller, another scope");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct KeyScope {
    /// The request's tenant; empty for none.
    pub tenant: String,
    /// The authenticated caller, when the server knows one.
    pub caller: Option<String>,
}

/// An attempt to take an idempotency key for a send.
///
/// ```
/// use a2a_protocol_server::store::{KeyClaim, KeyScope};
///
/// let claim = KeyClaim {
///     scope: KeyScope::default(),
///     key: "8f14e45fceea167a5a36dedd4bea2543".parse()?,
///     message_id: "m-1".into(),
///     task_id: "t-1".into(),
///     charged_to: None,
/// };
/// assert!(claim.scope.tenant.is_empty(), "no tenant");
/// # Ok::<(), a2a_protocol_types::idempotency::KeyError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyClaim {
    /// Whose key it is.
    pub scope: KeyScope,
    /// The key, valid by construction; its `Debug` shows only a prefix.
    pub key: IdempotencyKey,
    /// The id of the message being sent.
    pub message_id: MessageId,
    /// The id the task will have if this claim wins.
    pub task_id: TaskId,
    /// Whose quota of held keys this key counts against: `caller:NAME` for an authenticated
    /// caller, else `network:PREFIX` for a client known by its address (its /24 for IPv4,
    /// its /64 for IPv6, so one client's many addresses share one quota); `None` when neither
    /// is known, which counts as unauthenticated. It never changes what the key means (that
    /// is [`KeyClaim::scope`]), only who may hold how many (see
    /// [`InMemoryStoreConfig::max_idempotency_keys_per_holder`](crate::store::InMemoryStoreConfig::max_idempotency_keys_per_holder)).
    pub charged_to: Option<String>,
}

/// What a claim found.
///
/// ```
/// use a2a_protocol_server::store::{ClaimOutcome, InMemoryTaskStore, KeyClaim, KeyScope, TaskStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = InMemoryTaskStore::new();
/// let key: a2a_protocol_types::idempotency::IdempotencyKey = "8f14e45fceea167a5a36dedd4bea2543".parse()?;
/// let claim = |message: &str, task: &str| KeyClaim {
///     scope: KeyScope::default(),
///     key: key.clone(),
///     message_id: message.into(),
///     task_id: task.into(),
///     charged_to: None,
/// };
/// assert_eq!(store.claim_idempotency_key(&claim("m-1", "t-1")).await?, ClaimOutcome::Claimed);
/// assert_eq!(
///     store.claim_idempotency_key(&claim("m-1", "t-2")).await?,
///     ClaimOutcome::Replay("t-1".into()),
/// );
/// assert_eq!(store.claim_idempotency_key(&claim("m-2", "t-3")).await?, ClaimOutcome::Conflict);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// The key was free and is now held for this send.
    Claimed,
    /// The key is held by the same message: a retry. Answer with this task.
    Replay(TaskId),
    /// The key is held by a different message: the key was reused across two sends.
    Conflict,
}
