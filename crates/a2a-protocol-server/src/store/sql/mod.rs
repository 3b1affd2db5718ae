//! The SQL stores (SQLite and PostgreSQL): one schema, one set of statements, two drivers.
//!
//! Statements use `$n` placeholders, which both databases accept, and are generated for each
//! driver by [`sql_core!`]. The claim is one `INSERT ... ON CONFLICT ... RETURNING` statement:
//! the primary key makes racing claims, from any connection or process, resolve to exactly one
//! winner, and a claim racing a release sees either the holder or a free key, never neither.

#[cfg(feature = "postgres")]
pub(crate) mod postgres;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;

use std::time::Duration;

use a2a_protocol_types::{Task, Timestamp};

use super::{KeyScope, StoreError};

/// Connection settings shared by the SQL stores.
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
    /// Pool size. Default 8.
    pub max_connections: u32,
    /// How long to wait for a free connection before answering "busy". Default 5 s.
    pub acquire_timeout: Duration,
    /// SQLite only: how long a writer waits for the file lock. Default 5 s.
    pub busy_timeout: Duration,
}

impl Default for SqlStoreOptions {
    fn default() -> Self {
        Self {
            max_connections: 8,
            acquire_timeout: Duration::from_secs(5),
            busy_timeout: Duration::from_secs(5),
        }
    }
}

impl SqlStoreOptions {
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

pub(crate) fn status_millis(task: &Task) -> i64 {
    task.status
        .timestamp
        .map_or_else(now_millis, |t| t.unix_millis())
}

pub(crate) fn encode(task: &Task) -> Result<String, StoreError> {
    serde_json::to_string(task)
        .map_err(|e| StoreError::Corrupt(format!("task does not serialize: {e}")))
}

pub(crate) fn decode(body: &str) -> Result<Task, StoreError> {
    serde_json::from_str(body)
        .map_err(|e| StoreError::Corrupt(format!("stored task does not parse: {e}")))
}

pub(crate) fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// A bound value of a dynamically built statement.
#[derive(Clone)]
pub(crate) enum Bind {
    Text(String),
    Int(i64),
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

/// Generates the statements of a SQL store for one sqlx driver.
macro_rules! sql_core {
    ($db:ty, $pool:ty, $classify:path, one_writer: $one_writer:expr) => {
        use a2a_protocol_types::{Task, TaskId};
        use sqlx::Row as _;

        use crate::store::retention::{PurgeReport, RetentionPolicy};
        use crate::store::sql::{
            Bind, caller_column, holder_outcome, decode, encode, millis, now_millis, status_millis,
        };
        use crate::store::{
            ClaimOutcome, KeyClaim, PageCursor, StoreError, TaskPage, TaskQuery,
        };

        static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

        /// The statements, over one pool; `tenant_aware` decides whether tasks are
        /// partitioned by tenant (keys always are).
        pub(crate) struct SqlCore {
            pub(crate) pool: $pool,
            pub(crate) tenant_aware: bool,
            /// Taken for each write when the database admits one writer at a time.
            writer: Option<tokio::sync::Mutex<()>>,
        }

        impl SqlCore {
            pub(crate) async fn new(pool: $pool, tenant_aware: bool) -> Result<Self, StoreError> {
                MIGRATOR
                    .run(&pool)
                    .await
                    .map_err(|e| StoreError::Backend(Box::new(e)))?;
                let writer = $one_writer.then(|| tokio::sync::Mutex::new(()));
                Ok(Self { pool, tenant_aware, writer })
            }

            /// Waits for this process's turn to write, where the database takes one writer
            /// at a time (SQLite). Writers that collide in the database instead wait in its
            /// busy handler, which sleeps up to 100 ms between tries: queuing here keeps a
            /// write's wait to the writes ahead of it. Other processes sharing the file still
            /// meet the busy handler, bounded by `busy_timeout`.
            async fn write_turn(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
                match &self.writer {
                    Some(writer) => Some(writer.lock().await),
                    None => None,
                }
            }

            fn task_tenant<'a>(&self, tenant: &'a str) -> &'a str {
                if self.tenant_aware { tenant } else { "" }
            }

            pub(crate) async fn get(&self, tenant: &str, id: &TaskId) -> Result<Option<Task>, StoreError> {
                let row = sqlx::query("SELECT body FROM a2a_tasks WHERE tenant = $1 AND id = $2")
                    .bind(self.task_tenant(tenant))
                    .bind(id.as_str())
                    .fetch_optional(&self.pool)
                    .await
                    .map_err($classify)?;
                row.map(|row| decode(&row.try_get::<String, _>(0).map_err($classify)?))
                    .transpose()
            }

            pub(crate) async fn save(&self, tenant: &str, task: &Task) -> Result<(), StoreError> {
                let _turn = self.write_turn().await;
                sqlx::query(
                    "INSERT INTO a2a_tasks \
                       (tenant, id, context_id, state, status_millis, updated_millis, terminal, body) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                     ON CONFLICT (tenant, id) DO UPDATE SET \
                       context_id = excluded.context_id, state = excluded.state, \
                       status_millis = excluded.status_millis, updated_millis = excluded.updated_millis, \
                       terminal = excluded.terminal, body = excluded.body",
                )
                .bind(self.task_tenant(tenant))
                .bind(task.id.as_str())
                .bind(task.context_id.as_str())
                .bind(task.status.state.as_str())
                .bind(status_millis(task))
                .bind(now_millis())
                .bind(task.status.state.is_terminal())
                .bind(encode(task)?)
                .execute(&self.pool)
                .await
                .map_err($classify)?;
                Ok(())
            }

            pub(crate) async fn list(&self, tenant: &str, query: &TaskQuery) -> Result<TaskPage, StoreError> {
                let mut filters = String::from("tenant = $1");
                let mut binds = vec![Bind::Text(self.task_tenant(tenant).to_owned())];
                if let Some(context) = &query.context_id {
                    binds.push(Bind::Text(context.to_string()));
                    filters.push_str(&format!(" AND context_id = ${}", binds.len()));
                }
                if let Some(state) = query.status {
                    binds.push(Bind::Text(state.as_str().to_owned()));
                    filters.push_str(&format!(" AND state = ${}", binds.len()));
                }
                if let Some(after) = query.status_timestamp_after {
                    binds.push(Bind::Int(after.unix_millis()));
                    filters.push_str(&format!(" AND status_millis > ${}", binds.len()));
                }
                let count_sql = format!("SELECT COUNT(*) FROM a2a_tasks WHERE {filters}");
                let mut page_filters = filters.clone();
                let mut page_binds = binds.clone();
                if let Some(cursor) = &query.cursor {
                    page_binds.push(Bind::Int(cursor.status_millis));
                    page_binds.push(Bind::Text(cursor.task_id.clone()));
                    page_filters.push_str(&format!(
                        " AND (status_millis < ${a} OR (status_millis = ${a} AND id < ${b}))",
                        a = page_binds.len() - 1,
                        b = page_binds.len()
                    ));
                }
                let limit = i64::try_from(query.page_size).unwrap_or(i64::MAX).saturating_add(1);
                page_binds.push(Bind::Int(limit));
                let page_sql = format!(
                    "SELECT body FROM a2a_tasks WHERE {page_filters} \
                     ORDER BY status_millis DESC, id DESC LIMIT ${}",
                    page_binds.len()
                );

                let bound = |sql, binds: Vec<Bind>| {
                    binds.into_iter().fold(sqlx::query(sql), |query, bind| match bind {
                        Bind::Text(s) => query.bind(s),
                        Bind::Int(i) => query.bind(i),
                    })
                };
                let total: i64 = bound(&count_sql, binds)
                    .fetch_one(&self.pool)
                    .await
                    .map_err($classify)?
                    .try_get(0)
                    .map_err($classify)?;

                let rows = bound(&page_sql, page_binds)
                    .fetch_all(&self.pool).await.map_err($classify)?;
                let mut tasks = rows
                    .iter()
                    .map(|row| decode(&row.try_get::<String, _>(0).map_err($classify)?))
                    .collect::<Result<Vec<Task>, StoreError>>()?;
                let next = if tasks.len() > query.page_size {
                    tasks.truncate(query.page_size);
                    tasks.last().map(|last| PageCursor {
                        status_millis: status_millis(last),
                        task_id: last.id.to_string(),
                    })
                } else {
                    None
                };
                Ok(TaskPage {
                    tasks,
                    next,
                    total_size: usize::try_from(total).unwrap_or(0),
                })
            }

            pub(crate) async fn claim(&self, claim: &KeyClaim) -> Result<ClaimOutcome, StoreError> {
                let caller = caller_column(&claim.scope);
                // Retries are the common case for a held key: answer them with a read.
                let held = sqlx::query(
                    "SELECT message_id, task_id FROM a2a_idempotency_keys \
                     WHERE tenant = $1 AND caller = $2 AND idempotency_key = $3",
                )
                .bind(&claim.scope.tenant)
                .bind(&caller)
                .bind(&claim.key)
                .fetch_optional(&self.pool)
                .await
                .map_err($classify)?;
                if let Some(row) = held {
                    let message_id: String = row.try_get(0).map_err($classify)?;
                    let task_id: String = row.try_get(1).map_err($classify)?;
                    return Ok(holder_outcome(claim, &message_id, task_id));
                }
                // One statement: it inserts the key, or touches the existing row without
                // changing it; either way it returns the holder. Reading our own token back
                // means we inserted.
                let token = uuid::Uuid::new_v4().to_string();
                let turn = self.write_turn().await;
                let holder = sqlx::query(
                    "INSERT INTO a2a_idempotency_keys \
                       (tenant, caller, idempotency_key, message_id, task_id, claim_token, created_millis) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7) \
                     ON CONFLICT (tenant, caller, idempotency_key) \
                       DO UPDATE SET idempotency_key = excluded.idempotency_key \
                     RETURNING message_id, task_id, claim_token",
                )
                .bind(&claim.scope.tenant)
                .bind(&caller)
                .bind(&claim.key)
                .bind(claim.message_id.as_str())
                .bind(claim.task_id.as_str())
                .bind(&token)
                .bind(now_millis())
                .fetch_one(&self.pool)
                .await
                .map_err($classify)?;
                drop(turn);
                let message_id: String = holder.try_get(0).map_err($classify)?;
                let task_id: String = holder.try_get(1).map_err($classify)?;
                let holder_token: String = holder.try_get(2).map_err($classify)?;
                if holder_token == token {
                    return Ok(ClaimOutcome::Claimed);
                }
                Ok(holder_outcome(claim, &message_id, task_id))
            }

            pub(crate) async fn release(&self, claim: &KeyClaim) -> Result<(), StoreError> {
                let _turn = self.write_turn().await;
                sqlx::query(
                    "DELETE FROM a2a_idempotency_keys \
                     WHERE tenant = $1 AND caller = $2 AND idempotency_key = $3 AND task_id = $4",
                )
                .bind(&claim.scope.tenant)
                .bind(caller_column(&claim.scope))
                .bind(&claim.key)
                .bind(claim.task_id.as_str())
                .execute(&self.pool)
                .await
                .map_err($classify)?;
                Ok(())
            }

            pub(crate) async fn purge(&self, policy: &RetentionPolicy) -> Result<PurgeReport, StoreError> {
                let now = now_millis();
                let batch = i64::from(policy.batch_size);
                let mut report = PurgeReport::default();
                let mut finished = true;

                let task_cutoff = now.saturating_sub(millis(policy.terminal_max_age));
                let mut drained = false;
                for _ in 0..policy.max_batches {
                    // A turn per batch, so sends wait for one batch at most.
                    let _turn = self.write_turn().await;
                    let deleted = sqlx::query(
                        "DELETE FROM a2a_tasks WHERE (tenant, id) IN ( \
                           SELECT tenant, id FROM a2a_tasks \
                           WHERE terminal = $1 AND updated_millis < $2 LIMIT $3)",
                    )
                    .bind(true)
                    .bind(task_cutoff)
                    .bind(batch)
                    .execute(&self.pool)
                    .await
                    .map_err($classify)?
                    .rows_affected();
                    report.tasks_deleted += deleted;
                    if deleted < u64::from(policy.batch_size) {
                        drained = true;
                        break;
                    }
                }
                finished &= drained;

                // A key goes only once its task is gone: never with it, never before it.
                let task_of_key = if self.tenant_aware {
                    "t.tenant = k.tenant AND t.id = k.task_id"
                } else {
                    "t.tenant = '' AND t.id = k.task_id"
                };
                let key_sql = format!(
                    "DELETE FROM a2a_idempotency_keys WHERE (tenant, caller, idempotency_key) IN ( \
                       SELECT k.tenant, k.caller, k.idempotency_key FROM a2a_idempotency_keys k \
                       WHERE k.created_millis < $1 \
                         AND NOT EXISTS (SELECT 1 FROM a2a_tasks t WHERE {task_of_key}) \
                       LIMIT $2)"
                );
                let key_cutoff = now.saturating_sub(millis(policy.key_age()));
                let mut drained = false;
                for _ in 0..policy.max_batches {
                    let _turn = self.write_turn().await;
                    let deleted = sqlx::query(&key_sql)
                        .bind(key_cutoff)
                        .bind(batch)
                        .execute(&self.pool)
                        .await
                        .map_err($classify)?
                        .rows_affected();
                    report.keys_deleted += deleted;
                    if deleted < u64::from(policy.batch_size) {
                        drained = true;
                        break;
                    }
                }
                report.finished = finished && drained;
                Ok(report)
            }
        }
    };
}

pub(crate) use sql_core;

/// Defines a store type over one driver's [`SqlCore`](sql_core): its constructors, and its
/// [`TaskStore`](crate::store::TaskStore) and [`Retention`](crate::store::Retention) impls.
/// The invoking module provides `statements::SqlCore` and `connect(url, options)`.
macro_rules! sql_store {
    ($(#[$doc:meta])* $name:ident, tenant_aware: $tenant_aware:expr, pool: $pool:ty, url: $example:literal, doctest: $attr:literal, setup: $setup:literal) => {
        $(#[$doc])*
        ///
        #[doc = concat!("```", $attr)]
        #[doc = concat!("use a2a_protocol_server::store::{", stringify!($name), ", TaskStore};")]
        ///
        /// # #[tokio::main(flavor = "current_thread")]
        /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
        #[doc = $setup]
        #[doc = concat!("let store = ", stringify!($name), "::open(&url).await?;")]
        /// assert!(store.supports_idempotency());
        /// # Ok(())
        /// # }
        /// ```
        pub struct $name {
            core: statements::SqlCore,
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name)).finish_non_exhaustive()
            }
        }

        impl $name {
            #[doc = concat!("Opens the database at `url` (such as `", $example, "`) and applies migrations.")]
            ///
            #[doc = concat!("```", $attr)]
            #[doc = concat!("use a2a_protocol_server::store::", stringify!($name), ";")]
            ///
            /// # #[tokio::main(flavor = "current_thread")]
            /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
            #[doc = $setup]
            #[doc = concat!("let store = ", stringify!($name), "::open(&url).await?;")]
            /// # Ok(())
            /// # }
            /// ```
            pub async fn open(url: &str) -> Result<Self, crate::store::StoreError> {
                Self::open_with(url, &crate::store::SqlStoreOptions::default()).await
            }

            /// Like [`Self::open`], with connection settings.
            ///
            #[doc = concat!("```", $attr)]
            #[doc = concat!("use a2a_protocol_server::store::", stringify!($name), ";")]
            ///
            /// # #[tokio::main(flavor = "current_thread")]
            /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
            #[doc = $setup]
            /// let options = a2a_protocol_server::store::SqlStoreOptions::default().with_max_connections(4);
            #[doc = concat!("let store = ", stringify!($name), "::open_with(&url, &options).await?;")]
            /// # Ok(())
            /// # }
            /// ```
            pub async fn open_with(
                url: &str,
                options: &crate::store::SqlStoreOptions,
            ) -> Result<Self, crate::store::StoreError> {
                Self::from_pool(connect(url, options).await?).await
            }

            /// Uses an existing pool and applies migrations.
            ///
            #[doc = concat!("```", $attr)]
            #[doc = concat!("use a2a_protocol_server::store::", stringify!($name), ";")]
            ///
            /// # #[tokio::main(flavor = "current_thread")]
            /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
            #[doc = $setup]
            #[doc = concat!("let first = ", stringify!($name), "::open(&url).await?;")]
            #[doc = concat!("let shared = ", stringify!($name), "::from_pool(first.pool().clone()).await?;")]
            /// # Ok(())
            /// # }
            /// ```
            pub async fn from_pool(pool: $pool) -> Result<Self, crate::store::StoreError> {
                Ok(Self {
                    core: statements::SqlCore::new(pool, $tenant_aware).await?,
                })
            }

            /// The pool.
            ///
            #[doc = concat!("```", $attr)]
            #[doc = concat!("use a2a_protocol_server::store::", stringify!($name), ";")]
            ///
            /// # #[tokio::main(flavor = "current_thread")]
            /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
            #[doc = $setup]
            #[doc = concat!("let store = ", stringify!($name), "::open(&url).await?;")]
            /// assert!(!store.pool().is_closed());
            /// # Ok(())
            /// # }
            /// ```
            pub fn pool(&self) -> &$pool {
                &self.core.pool
            }
        }

        #[async_trait::async_trait]
        impl crate::store::TaskStore for $name {
            async fn get(
                &self,
                tenant: &str,
                id: &a2a_protocol_types::TaskId,
            ) -> Result<Option<a2a_protocol_types::Task>, crate::store::StoreError> {
                self.core.get(tenant, id).await
            }

            async fn save(
                &self,
                tenant: &str,
                task: &a2a_protocol_types::Task,
            ) -> Result<(), crate::store::StoreError> {
                self.core.save(tenant, task).await
            }

            async fn list(
                &self,
                tenant: &str,
                query: &crate::store::TaskQuery,
            ) -> Result<crate::store::TaskPage, crate::store::StoreError> {
                self.core.list(tenant, query).await
            }

            fn supports_idempotency(&self) -> bool {
                true
            }

            async fn claim_idempotency_key(
                &self,
                claim: &crate::store::KeyClaim,
            ) -> Result<crate::store::ClaimOutcome, crate::store::StoreError> {
                self.core.claim(claim).await
            }

            async fn release_idempotency_key(
                &self,
                claim: &crate::store::KeyClaim,
            ) -> Result<(), crate::store::StoreError> {
                self.core.release(claim).await
            }
        }

        #[async_trait::async_trait]
        impl crate::store::Retention for $name {
            async fn purge_expired(
                &self,
                policy: &crate::store::RetentionPolicy,
            ) -> Result<crate::store::PurgeReport, crate::store::StoreError> {
                self.core.purge(policy).await
            }
        }
    };
}

pub(crate) use sql_store;
