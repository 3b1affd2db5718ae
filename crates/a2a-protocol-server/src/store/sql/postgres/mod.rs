//! PostgreSQL stores: several server processes behind a load balancer may share one database;
//! the claim stays atomic across them.

use std::sync::{Arc, Weak};
use std::time::Duration;

use sqlx::Connection as _;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgListener, PgPool, PgPoolOptions};
use tokio::sync::broadcast;

use super::coordinate::{CHANNEL, NoticeHub, decode_notice};

mod create_and_update;
mod group;
mod lane_connections;
mod one_statement;
#[cfg(test)]
mod plan_tests;

use super::{SqlStoreOptions, sql_store};
use crate::store::{Notice, StoreError};

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

/// Sends a notice when the transaction commits, to every process listening on the channel of
/// the store's schema.
async fn announce(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    payload: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_notify($1 || current_schema(), $2)")
        .bind(CHANNEL)
        .bind(payload)
        .execute(&mut **tx)
        .await
        .map(|_| ())
}

/// Notices from other processes; the first subscriber starts the listening connection.
fn notices(core: &statements::SqlCore) -> Option<broadcast::Receiver<Notice>> {
    let (receiver, first) = core.notices.subscribe();
    if first {
        let pool = core.pool.clone();
        let hub = Arc::downgrade(&core.notices);
        tokio::spawn(listen(pool, hub));
    }
    Some(receiver)
}

/// Followers look at the store this often even with notices, in case one was lost (a
/// listening connection that broke and came back misses what was sent meanwhile).
const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// Listens on the channel of the store's schema for as long as the store lives, reconnecting
/// after a failure.
async fn listen(pool: PgPool, hub: Weak<NoticeHub>) {
    loop {
        let listener = async {
            let mut listener = PgListener::connect_with(&pool).await?;
            let schema: String = sqlx::query_scalar("SELECT current_schema()")
                .fetch_one(&mut listener)
                .await?;
            listener.listen(&format!("{CHANNEL}{schema}")).await?;
            Ok::<_, sqlx::Error>(listener)
        };
        let mut listener = match listener.await {
            Ok(listener) => listener,
            Err(error) => {
                tracing::warn!(%error, "cannot listen for store notices; retrying in 1 s");
                tokio::time::sleep(Duration::from_secs(1)).await;
                if hub.strong_count() == 0 {
                    return;
                }
                continue;
            }
        };
        loop {
            // Checked between notices, so a dropped store's listener ends within a second.
            match tokio::time::timeout(Duration::from_secs(1), listener.try_recv()).await {
                Err(_) => {}
                Ok(Ok(Some(notification))) => {
                    if let (Some(hub), Some(notice)) =
                        (hub.upgrade(), decode_notice(notification.payload()))
                    {
                        hub.publish(notice);
                    }
                }
                Ok(Ok(None)) => {} // The connection was lost and will be re-established.
                Ok(Err(error)) => {
                    tracing::warn!(%error, "listening for store notices failed");
                    break;
                }
            }
            if hub.strong_count() == 0 {
                return;
            }
        }
    }
}

/// The store's group writer (see [`group`]), with an eighth of the pool's connections as
/// lanes (one for the default pool of eight): fewer lanes make bigger groups, which is where
/// the database saves, and one lane's statements never wait for each other's commits; more
/// let more statements run at once on a database with more cores and disks. The other
/// connections stay for reads and transactions.
async fn open_group(
    core: &statements::SqlCore,
) -> Result<Option<Arc<group::GroupWriter>>, StoreError> {
    let connections = usize::try_from(core.pool.options().get_max_connections()).unwrap_or(1);
    Ok(Some(group::GroupWriter::new(
        core.pool.clone(),
        connections / 8,
    )))
}

mod statements {
    crate::store::sql::sql_core!(
        sqlx::Postgres,
        sqlx::PgPool,
        super::classify,
        migrations: "./migrations/postgres",
        one_writer: false,
        pushes: true,
        announce: super::announce,
        one_statement: super::one_statement::write,
        group: Option<std::sync::Arc<super::group::GroupWriter>>,
        open_group: super::open_group
    );
    crate::store::sql::sql_coordination!(sqlx::Postgres, super::classify, announce: super::announce);
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

sql_store!(
    /// Tasks and idempotency keys in PostgreSQL. Tasks share one namespace whatever the
    /// request's tenant unless the store is opened tenant-aware
    /// ([`SqlStoreOptions::with_tenant_aware`](crate::store::SqlStoreOptions::with_tenant_aware));
    /// keys are scoped by tenant and caller. Nothing is deleted until
    /// [`Retention::purge_expired`](crate::store::Retention::purge_expired) runs. Several
    /// server processes may share one database; the claim stays atomic across them.
    ///
    /// A pool of your own (`from_pool`) should set on its connections what `open` does:
    /// `lock_timeout` (the busy timeout) and `enable_seqscan=off`, so that plans PostgreSQL
    /// keeps from while the tables were empty still find rows by index (see `docs/stores.md`).
    PostgresTaskStore,
    pool: PgPool,
    url: "postgres://user@host/db",
    doctest: "no_run",
    setup: "let url = \"postgres://a2a@db.internal/agents\";"
);

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
