//! The SQL stores (SQLite and PostgreSQL): one schema, each database's statements in its own
//! module ([`sqlite`] on rusqlite, [`postgres`] on sqlx). A task is a head row (the
//! task without its history, its revision, generation and turn), one row per history message
//! and one per recent event; every write is atomic (on PostgreSQL one statement, alone or as
//! its rows of a group statement, or one transaction; on SQLite a part of a group commit undone
//! alone), conditional on the revision its
//! writer read, and takes an idempotency key, writes the head, appends messages and records
//! its events together. The key's primary key makes racing claims, from any connection or
//! process, resolve to exactly one winner.

pub(crate) mod codec;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;

pub(crate) use codec::{
    EncodedTask, decode_event_at, decode_event_row, decode_head, decode_message,
    decode_push_config, encode_events, encode_push_config, event_rows,
};

use std::time::Duration;

use a2a_protocol_types::{Task, Timestamp};

use super::{KeyScope, StoreError};

/// Settings of the SQL stores: tenancy and connections.
///
/// ```
/// use std::time::Duration;
///
/// use a2a_protocol_server::store::SqlStoreOptions;
///
/// let options = SqlStoreOptions::default().with_max_connections(16);
/// assert_eq!((options.max_connections, options.acquire_timeout), (16, Duration::from_secs(5)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SqlStoreOptions {
    /// Whether each tenant's tasks are kept apart, so a task of tenant A is invisible to
    /// tenant B. Default `false`: tasks share one namespace whatever the request's tenant
    /// (keys are scoped by tenant either way). Fixed for a database's life: the first open
    /// records it, and opening the database the other way later is refused
    /// ([`StoreError::ModeMismatch`](crate::store::StoreError::ModeMismatch)).
    pub tenant_aware: bool,
    /// Pool size. Default 8.
    pub max_connections: u32,
    /// How long to wait for a free connection before answering "busy". Default 5 s.
    pub acquire_timeout: Duration,
    /// How long a write waits for another writer's lock before answering "busy", so a stalled
    /// write gives a racing retry a retryable answer rather than a long wait: SQLite's busy
    /// timeout (and its wait for this process's writer), PostgreSQL's `lock_timeout`.
    /// Default 5 s.
    pub busy_timeout: Duration,
}

impl Default for SqlStoreOptions {
    fn default() -> Self {
        Self {
            tenant_aware: false,
            max_connections: 8,
            acquire_timeout: Duration::from_secs(5),
            busy_timeout: Duration::from_secs(5),
        }
    }
}

impl SqlStoreOptions {
    /// Sets [`SqlStoreOptions::tenant_aware`].
    ///
    /// ```
    /// use a2a_protocol_server::store::SqlStoreOptions;
    ///
    /// assert!(SqlStoreOptions::default().with_tenant_aware(true).tenant_aware);
    /// ```
    pub fn with_tenant_aware(mut self, tenant_aware: bool) -> Self {
        self.tenant_aware = tenant_aware;
        self
    }

    /// Sets [`SqlStoreOptions::max_connections`] (at least 1).
    ///
    /// ```
    /// use a2a_protocol_server::store::SqlStoreOptions;
    ///
    /// assert_eq!(SqlStoreOptions::default().with_max_connections(0).max_connections, 1, "at least one");
    /// ```
    pub fn with_max_connections(mut self, max: u32) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// Sets [`SqlStoreOptions::acquire_timeout`].
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::store::SqlStoreOptions;
    ///
    /// let options = SqlStoreOptions::default().with_acquire_timeout(Duration::from_secs(1));
    /// assert_eq!(options.acquire_timeout, Duration::from_secs(1));
    /// ```
    pub fn with_acquire_timeout(mut self, timeout: Duration) -> Self {
        self.acquire_timeout = timeout;
        self
    }

    /// Sets [`SqlStoreOptions::busy_timeout`].
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use a2a_protocol_server::store::SqlStoreOptions;
    ///
    /// let options = SqlStoreOptions::default().with_busy_timeout(Duration::from_millis(500));
    /// assert_eq!(options.busy_timeout, Duration::from_millis(500));
    /// ```
    pub fn with_busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }
}

/// Whether a store opened `tenant_aware` matches the mode its database recorded when first
/// opened (`"true"` or `"false"`): a plain reader of a tenant-aware store would miss every
/// tenant's tasks but the empty one's.
pub(crate) fn opened_as_recorded(recorded: &str, tenant_aware: bool) -> Result<(), StoreError> {
    match (recorded == "true", tenant_aware) {
        (true, false) => Err(StoreError::ModeMismatch(
            "this store partitions tasks by tenant: open it tenant-aware \
             (a2a serve --tenant-aware, or SqlStoreOptions::with_tenant_aware)"
                .to_owned(),
        )),
        (false, true) => Err(StoreError::ModeMismatch(
            "this store keeps one namespace of tasks: open it without \
             --tenant-aware (or with a plain store type)"
                .to_owned(),
        )),
        _ => Ok(()),
    }
}

/// The caller column: length-prefixed, `-` for none, so no two scopes collide.
pub(crate) fn caller_column(scope: &KeyScope) -> String {
    match &scope.caller {
        Some(caller) => format!("{}:{caller}", caller.len()),
        None => "-".to_owned(),
    }
}

pub(crate) fn now_millis() -> i64 {
    Timestamp::now().unix_millis()
}

/// The condition ListTasks states and the PostgreSQL listing indexes are partial on: true of
/// every task (see [`status_millis`]), and named by no statement that finds a task by its id,
/// so those statements cannot be planned onto a listing index (PostgreSQL migration 0006).
pub(crate) const LISTED: &str = "status_millis >= -9223372036854775807";

/// The least status time stored, so that every task meets [`LISTED`].
const LEAST_STATUS_MILLIS: i64 = -i64::MAX;

pub(crate) fn status_millis(task: &Task) -> i64 {
    task.status
        .timestamp
        .map_or_else(now_millis, |t| t.unix_millis())
        .max(LEAST_STATUS_MILLIS)
}

pub(crate) fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// What a claim meets when another send holds its key: a replay of the same message, or a
/// conflict with a different one.
pub(crate) fn holder_outcome(
    claim: &super::KeyClaim,
    message_id: &str,
    task_id: String,
) -> super::ClaimOutcome {
    if message_id == claim.message_id.as_str() {
        super::ClaimOutcome::Replay(a2a_protocol_types::TaskId::new(task_id))
    } else {
        super::ClaimOutcome::Conflict
    }
}
