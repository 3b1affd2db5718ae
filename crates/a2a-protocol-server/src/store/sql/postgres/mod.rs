//! PostgreSQL stores, on sqlx: several server processes behind a load balancer may share one
//! database; the claim stays atomic across them. Task writes go through the group writer
//! ([`group`]): a write alone is a group of one, a statement of the shape of
//! [`one_statement`]; a follow-up that takes a key runs as a transaction ([`tasks`]).

use std::sync::Arc;
use std::time::Duration;

use sqlx::Connection as _;
use sqlx::Row as _;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};

mod coordinate;
mod create_and_update;
mod group;
mod lane_connections;
mod notices;
mod one_statement;
#[cfg(test)]
mod plan_tests;
mod push;
mod retention;
mod tasks;

use super::SqlStoreOptions;
use crate::store::StoreError;
use notices::NoticeHub;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// Tasks and idempotency keys in PostgreSQL. Tasks share one namespace whatever the request's
/// tenant unless the store is opened tenant-aware ([`SqlStoreOptions::with_tenant_aware`]);
/// keys are scoped by tenant and caller. Nothing is deleted until
/// [`Retention::purge_expired`](crate::store::Retention::purge_expired) runs. Several server
/// processes may share one database; the claim stays atomic across them.
///
/// A pool of your own ([`PostgresTaskStore::from_pool`]) should set on its connections what
/// `open` does: `lock_timeout` (the busy timeout) and `enable_seqscan=off`, so that plans
/// PostgreSQL keeps from while the tables were empty still find rows by index (see
/// `docs/stores.md`).
///
/// ```no_run
/// use a2a_protocol_server::store::{PostgresTaskStore, TaskStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let store = PostgresTaskStore::open("postgres://a2a@db.internal/agents").await?;
/// assert!(store.supports_idempotency());
/// # Ok(())
/// # }
/// ```
pub struct PostgresTaskStore {
    pool: PgPool,
    tenant_aware: bool,
    /// Where task writes are committed, in groups.
    group: Arc<group::GroupWriter>,
    /// Notices pushed by the database, once someone listens.
    notices: Arc<NoticeHub>,
}

impl std::fmt::Debug for PostgresTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresTaskStore")
            .field("tenant_aware", &self.tenant_aware)
            .finish_non_exhaustive()
    }
}

impl PostgresTaskStore {
    /// Opens the database at `url` (such as `postgres://user@host/db`) and applies
    /// migrations.
    ///
    /// ```no_run
    /// use a2a_protocol_server::store::PostgresTaskStore;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = PostgresTaskStore::open("postgres://a2a@db.internal/agents").await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        Self::open_with(url, &SqlStoreOptions::default()).await
    }

    /// Like [`Self::open`], with settings: tenancy and connections.
    ///
    /// ```no_run
    /// use a2a_protocol_server::store::{PostgresTaskStore, SqlStoreOptions};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let options = SqlStoreOptions::default()
    ///     .with_tenant_aware(true) // each tenant's tasks apart
    ///     .with_max_connections(16);
    /// let store = PostgresTaskStore::open_with("postgres://a2a@db.internal/agents", &options).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn open_with(url: &str, options: &SqlStoreOptions) -> Result<Self, StoreError> {
        Self::new(connect(url, options).await?, options.tenant_aware).await
    }

    /// Uses an existing pool and applies migrations.
    ///
    /// ```no_run
    /// use a2a_protocol_server::store::PostgresTaskStore;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let first = PostgresTaskStore::open("postgres://a2a@db.internal/agents").await?;
    /// let shared = PostgresTaskStore::from_pool(first.pool().clone()).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn from_pool(pool: PgPool) -> Result<Self, StoreError> {
        Self::from_pool_with(pool, &SqlStoreOptions::default()).await
    }

    /// Like [`Self::from_pool`], with settings (those of connections are the pool's own,
    /// and not read).
    ///
    /// ```no_run
    /// use a2a_protocol_server::store::{PostgresTaskStore, SqlStoreOptions};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let tenanted = SqlStoreOptions::default().with_tenant_aware(true);
    /// let first = PostgresTaskStore::open_with("postgres://a2a@db.internal/agents", &tenanted).await?;
    /// let shared = PostgresTaskStore::from_pool_with(first.pool().clone(), &tenanted).await?;
    /// assert!(shared.is_tenant_aware());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn from_pool_with(
        pool: PgPool,
        options: &SqlStoreOptions,
    ) -> Result<Self, StoreError> {
        Self::new(pool, options.tenant_aware).await
    }

    /// Whether each tenant's tasks are kept apart ([`SqlStoreOptions::tenant_aware`]).
    pub fn is_tenant_aware(&self) -> bool {
        self.tenant_aware
    }

    /// The pool.
    ///
    /// ```no_run
    /// use a2a_protocol_server::store::PostgresTaskStore;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let store = PostgresTaskStore::open("postgres://a2a@db.internal/agents").await?;
    /// assert!(!store.pool().is_closed());
    /// # Ok(())
    /// # }
    /// ```
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

impl PostgresTaskStore {
    /// The store over `pool`, migrated and checked to be opened as it was first opened.
    async fn new(pool: PgPool, tenant_aware: bool) -> Result<Self, StoreError> {
        MIGRATOR
            .run(&pool)
            .await
            .map_err(|e| StoreError::Backend(Box::new(e)))?;
        let store = Self {
            group: group::GroupWriter::new(pool.clone(), lanes(&pool)),
            pool,
            tenant_aware,
            notices: Arc::default(),
        };
        store.check_mode().await?;
        Ok(store)
    }

    /// Records whether the store partitions tasks by tenant the first time it is
    /// opened, and refuses to open it the other way later: a plain reader of a
    /// tenant-aware store would miss every tenant's tasks but the empty one's.
    async fn check_mode(&self) -> Result<(), StoreError> {
        let wanted = if self.tenant_aware { "true" } else { "false" };
        let read = || async {
            sqlx::query("SELECT value FROM a2a_store_settings WHERE name = 'tenant_aware'")
                .fetch_optional(&self.pool)
                .await
                .map_err(classify)?
                .map(|row| row.try_get::<String, _>(0).map_err(classify))
                .transpose()
        };
        let recorded = match read().await? {
            Some(recorded) => recorded,
            None => {
                // A store from before modes were recorded: tasks under a tenant
                // name mean it was served tenant-aware.
                let tenanted = sqlx::query("SELECT 1 FROM a2a_tasks WHERE tenant <> '' LIMIT 1")
                    .fetch_optional(&self.pool)
                    .await
                    .map_err(classify)?
                    .is_some();
                let mode = if tenanted { "true" } else { wanted };
                sqlx::query(
                    "INSERT INTO a2a_store_settings (name, value) VALUES ('tenant_aware', $1) \
                     ON CONFLICT (name) DO NOTHING",
                )
                .bind(mode)
                .execute(&self.pool)
                .await
                .map_err(classify)?;
                read().await?.unwrap_or_else(|| mode.to_owned())
            }
        };
        super::opened_as_recorded(&recorded, self.tenant_aware)
    }

    pub(crate) fn task_tenant<'a>(&self, tenant: &'a str) -> &'a str {
        if self.tenant_aware { tenant } else { "" }
    }
}

/// The group writer's lanes: an eighth of the pool's connections (one for the default pool
/// of eight). Fewer lanes make bigger groups, which is where the database saves, and one
/// lane's statements never wait for each other's commits; more let more statements run at
/// once on a database with more cores and disks. The other connections stay for reads and
/// transactions.
fn lanes(pool: &PgPool) -> usize {
    usize::try_from(pool.options().get_max_connections()).unwrap_or(1) / 8
}

/// Maps a PostgreSQL error: serialization failures, deadlocks, lock timeouts, connection
/// limits and lost connections (and pool or I/O trouble) are "try again".
fn classify(error: sqlx::Error) -> StoreError {
    let busy = match &error {
        sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) | sqlx::Error::PoolClosed => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|code| {
            matches!(
                code.as_ref(),
                "40001" | "40P01" | "55P03" | "53300" | "57P01" | "57P02" | "57P03"
            ) || code.starts_with("08")
        }),
        _ => false,
    };
    if busy {
        StoreError::Busy(error.to_string())
    } else {
        StoreError::Backend(Box::new(error))
    }
}

/// A pooled connection idle at least this long is pinged before it is used (see `connect`).
const PING_WHEN_IDLE: Duration = Duration::from_secs(1);

async fn connect(url: &str, options: &SqlStoreOptions) -> Result<PgPool, StoreError> {
    let connect: PgConnectOptions = url.parse().map_err(|e| StoreError::Backend(Box::new(e)))?;
    // One connection made directly says at once why the database cannot be reached (refused,
    // unknown host, bad password, no such database); a pool retries until its acquire timeout
    // and then reports only that it waited.
    let first = tokio::time::timeout(
        options.acquire_timeout,
        PgConnection::connect_with(&connect),
    )
    .await
    .map_err(|_| {
        StoreError::Backend(
            format!(
                "the database did not answer within {:?}; is it running and reachable?",
                options.acquire_timeout
            )
            .into(),
        )
    })?
    .map_err(|e| StoreError::Backend(Box::new(e)))?;
    let _ = first.close().await;
    // A write blocked by another's lock gives up after the busy timeout, so a stalled write
    // turns a racing retry into a retryable "busy" rather than a long wait.
    let connect = connect.options([
        (
            "lock_timeout",
            format!("{}ms", options.busy_timeout.as_millis()),
        ),
        // Every statement of the store finds its rows by an index. PostgreSQL keeps a
        // statement's plan after a few runs, and one made while a table is empty (new, or
        // emptied by retention) would scan the whole table on every run until the table is
        // next analyzed; with sequential scans off it finds rows by an index, as it will once
        // the table is large.
        ("enable_seqscan", "off".to_owned()),
    ]);
    PgPoolOptions::new()
        .max_connections(options.max_connections)
        .acquire_timeout(options.acquire_timeout)
        // sqlx pings every connection it takes from the pool: a round trip before each
        // statement, which on a busy server costs the database about as much as the
        // statement's own send and receive. A connection used within the last second is
        // known to be alive; only one idle for longer (the database may have restarted
        // meanwhile) is pinged first, and replaced if the ping fails.
        .test_before_acquire(false)
        .before_acquire(|connection, meta| {
            Box::pin(async move {
                if meta.idle_for >= PING_WHEN_IDLE {
                    connection.ping().await?;
                }
                Ok(true)
            })
        })
        .connect_with(connect)
        .await
        .map_err(classify)
}

/// For tests: the test database's URL, a pool on it and a new schema named from `prefix`, or
/// `None` when `A2A_TEST_POSTGRES_URL=skip`.
#[cfg(test)]
async fn test_schema(prefix: &str) -> Option<(String, PgPool, String)> {
    use sqlx::Executor as _;
    let url = match std::env::var("A2A_TEST_POSTGRES_URL") {
        Ok(url) if url == "skip" => return None,
        Ok(url) => url,
        Err(_) => "postgres://postgres@127.0.0.1:5432/test".to_owned(),
    };
    let schema = format!("{prefix}_{}", uuid::Uuid::new_v4().simple());
    let admin = PgPoolOptions::new()
        .max_connections(2)
        .connect(&url)
        .await
        .expect("PostgreSQL is reachable (or set A2A_TEST_POSTGRES_URL=skip)");
    admin
        .execute(format!("CREATE SCHEMA {schema}").as_str())
        .await
        .unwrap();
    Some((url, admin, schema))
}

/// For tests: drops a schema made by [`test_schema`].
#[cfg(test)]
async fn drop_schema(admin: PgPool, schema: String) {
    use sqlx::Executor as _;
    admin
        .execute(format!("DROP SCHEMA {schema} CASCADE").as_str())
        .await
        .unwrap();
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use a2a_protocol_types::{Message, Task, TaskState, TaskStatus};

    use crate::store::{PostgresTaskStore, TaskStore, TaskStoreExt, TaskWrite, WriteOutcome};

    /// Connections are not pinged before each statement, but one that sat idle long enough to
    /// have lost its server (here: terminated by the database) is pinged and replaced, so the
    /// write that takes it succeeds instead of failing on the dead connection.
    #[tokio::test]
    async fn a_connection_lost_while_idle_is_replaced_before_a_write() {
        let Some((url, admin, schema)) = super::test_schema("a2a_idle").await else {
            return;
        };
        let application = format!("a2a_idle_{}", uuid::Uuid::new_v4().simple());
        let separator = if url.contains('?') { '&' } else { '?' };
        let store = PostgresTaskStore::open(&format!(
            "{url}{separator}options=-c%20search_path%3D{schema}&application_name={application}"
        ))
        .await
        .unwrap();
        let mut task = Task::new("idle", "ctx", TaskStatus::new(TaskState::Working));
        task.history.push(Message::user_text("hi"));
        let created = store
            .write(&TaskWrite::create("", &Arc::new(task.clone())))
            .await
            .unwrap();
        assert_eq!(created, WriteOutcome::Written);

        let terminated: Vec<bool> = sqlx::query_scalar(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
        )
        .bind(&application)
        .fetch_all(&admin)
        .await
        .unwrap();
        assert!(
            !terminated.is_empty() && terminated.iter().all(|t| *t),
            "the store's connections were terminated: {terminated:?}"
        );
        // Idle past the point where a connection is pinged before use.
        tokio::time::sleep(super::PING_WHEN_IDLE + std::time::Duration::from_millis(200)).await;

        task.status = TaskStatus::new(TaskState::Completed);
        task.generation = 2;
        let updated = store
            .write(&TaskWrite::update("", &Arc::new(task), 1))
            .await
            .expect("a write after the database dropped idle connections succeeds");
        assert_eq!(updated, WriteOutcome::Written);
        let stored = store.get("", &"idle".into()).await.unwrap().unwrap();
        assert_eq!(stored.status.state, TaskState::Completed);

        drop(store);
        super::drop_schema(admin, schema).await;
    }
}
