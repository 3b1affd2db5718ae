//! PostgreSQL stores: several server processes behind a load balancer may share one database;
//! the claim stays atomic across them.

use sqlx::Connection as _;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};

use super::{SqlStoreOptions, sql_store};
use crate::store::StoreError;

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

mod statements {
    crate::store::sql::sql_core!(sqlx::Postgres, sqlx::PgPool, super::classify, one_writer: false);
}

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
    PgPoolOptions::new()
        .max_connections(options.max_connections)
        .acquire_timeout(options.acquire_timeout)
        .connect_with(connect)
        .await
        .map_err(classify)
}

sql_store!(
    /// Tasks and idempotency keys in PostgreSQL. Tasks share one namespace whatever the
    /// request's tenant; keys are scoped by tenant and caller. Nothing is deleted until
    /// [`Retention::purge_expired`](crate::store::Retention::purge_expired) runs. Several
    /// server processes may share one database; the claim stays atomic across them.
    PostgresTaskStore,
    tenant_aware: false,
    pool: PgPool,
    url: "postgres://user@host/db",
    doctest: "no_run",
    setup: "let url = \"postgres://a2a@db.internal/agents\";"
);

sql_store!(
    /// Like [`PostgresTaskStore`], with each tenant's tasks kept apart.
    TenantAwarePostgresTaskStore,
    tenant_aware: true,
    pool: PgPool,
    url: "postgres://user@host/db",
    doctest: "no_run",
    setup: "let url = \"postgres://a2a@db.internal/agents\";"
);
